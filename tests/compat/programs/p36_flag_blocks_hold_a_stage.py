# mypy: ignore-errors
# (Written as a reference user writes DSL code: cutlass.Constexpr fields, proxy pipeline ops
# on resources, DSL values typed by the tracer. The harness that runs them is type-checked.)
"""A ring used under a runtime flag, the consumer's stage held from one block to the next.

Covers: two ``when_true(on)`` blocks of one loop body on the same runtime flag, the first
waiting for a stage, the second reading and releasing it (the blocks run together or not
at all: the flag has one value per iteration); a ``when_false(on)`` block takes the stage in
one block. The output is twice the input when ``src[0] > 0``, three times otherwise.
"""

from dataclasses import dataclass, field
from typing import Any

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.runtime import make_fake_compact_tensor

from task_scheduling.memory import SmemAllocation, SmemAllocator
from task_scheduling.resources import (
    MemoryResource,
    PipelineConfig,
    StageInfo,
    TaskLocalVariable,
    WorkAttr,
    consumer_work,
    producer_work,
)
from task_scheduling.schedule_builder import domain_loop, schedule, when_false, when_true
from task_scheduling.task import Task
from task_scheduling.task_manager import TaskManager

WG = 128  # threads of one warpgroup: one element per thread and stage
STAGES = 4
TILES = 16
N = TILES * WG
EXPECT_PTX = ("mbarrier.init", "mbarrier.try_wait", "st.shared", "ld.shared")


@dataclass(kw_only=True)
class Src(MemoryResource):
    tensor: cute.Tensor
    value: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()
    on: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.value = TaskLocalVariable(dtype=cutlass.Float32, default=cutlass.Float32(0))
        self.on = TaskLocalVariable(dtype=cutlass.Boolean, default=cutlass.Boolean(False))

    @consumer_work(returns=on)
    @cute.jit
    def enabled(self, stage_info: StageInfo) -> cutlass.Boolean:
        return self.tensor[0] > cutlass.Float32(0)

    @consumer_work(returns=value)
    @cute.jit
    def get(self, stage_info: StageInfo) -> cutlass.Float32:
        tx, _, _ = cute.arch.thread_idx()
        return self.tensor[stage_info.loop_offset * WG + tx % WG]


@dataclass(kw_only=True)
class Ring(MemoryResource):
    view: Any = field(init=False, default=None)
    alloc: cutlass.Constexpr[Any] = field(init=False, default=None)
    item: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.item = TaskLocalVariable(dtype=cutlass.Float32, default=cutlass.Float32(0))
        self.alloc = SmemAllocation("ring", dtype=cutlass.Float32, count=STAGES * WG)
        # A typed placeholder: the real view is set by the init work once SMEM exists.
        null = cutlass.inttoptr(0, mem_space=3, dtype=cutlass.Float32)
        self.view = cutlass.Array(null, dtype=cutlass.Float32, shape=(STAGES * WG,), addrspace=3)

    def get_smem_requirements(self) -> list[SmemAllocation]:
        return [self.alloc]

    @cute.jit
    def _bind(self, stage_info: StageInfo) -> None:
        base = stage_info.context.smem_base.data_ptr() + self.alloc.offset
        self.view = cutlass.Array(base, dtype=cutlass.Float32, shape=(STAGES * WG,), addrspace=3)

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    @cute.jit
    def init_fill(self, stage_info: StageInfo) -> None:
        self._bind(stage_info)

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    @cute.jit
    def init_drain(self, stage_info: StageInfo) -> None:
        self._bind(stage_info)

    @producer_work
    @cute.jit
    def write(self, stage_info: StageInfo, value: cutlass.Float32) -> None:
        tx, _, _ = cute.arch.thread_idx()
        self.view[stage_info.stage_idx * WG + tx % WG] = value

    @consumer_work(returns=item)
    @cute.jit
    def read(self, stage_info: StageInfo) -> cutlass.Float32:
        tx, _, _ = cute.arch.thread_idx()
        return self.view[stage_info.stage_idx * WG + tx % WG]


@dataclass(kw_only=True)
class Dst(MemoryResource):
    tensor: cute.Tensor

    @producer_work
    @cute.jit
    def put(
        self, stage_info: StageInfo, value: cutlass.Float32, *, scale: cutlass.Constexpr[int]
    ) -> None:
        tx, _, _ = cute.arch.thread_idx()
        self.tensor[stage_info.loop_offset * WG + tx % WG] = value * cutlass.Float32(scale)


@cute.kernel
def ring_kernel(src: cute.Tensor, dst: cute.Tensor) -> None:
    cfg = PipelineConfig.create_async_async_pipeline_cfg(
        num_stages=STAGES,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, WG),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, WG),
        cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
    )
    src_res = Src(name="src", tensor=src)
    ring = Ring(name="ring", pipeline_config=cfg)
    dst_res = Dst(name="dst", tensor=dst)
    smem = SmemAllocator()
    smem.add_resource(ring)
    smem.compute_layout()

    @schedule
    def fill(s: Src, r: Ring) -> None:
        r.init_fill()
        with domain_loop(TILES):
            x = s.get()
            r.acquire()
            r.write(x)
            r.commit()

    @schedule
    def drain(s: Src, r: Ring, d: Dst) -> None:
        r.init_drain()
        with domain_loop(TILES):
            on = s.enabled()
            with when_true(on):
                r.wait()
            with when_true(on):
                y = r.read()
                r.release()
                d.put(y, scale=2)
            with when_false(on):
                r.wait()
                z = r.read()
                r.release()
                d.put(z, scale=3)

    load = Task(
        name="load",
        src_resources=[src_res],
        dst_resources=[ring],
        warp_idx=0,
        num_warps=4,
        schedule=fill(src_res, ring),
    )
    store = Task(
        name="store",
        src_resources=[src_res, ring],
        dst_resources=[dst_res],
        warp_idx=4,
        num_warps=4,
        schedule=drain(src_res, ring, dst_res),
    )
    manager = TaskManager(
        tasks=[load, store],
        resource_dependency_graph={ring: [src_res], dst_res: [ring, src_res]},
        smem_allocator=smem,
    )
    manager.setup_resources_and_tasks()
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    manager.run()


@cute.jit
def host(src: cute.Tensor, dst: cute.Tensor) -> None:
    ring_kernel(src, dst).launch(grid=(1, 1, 1), block=(2 * WG, 1, 1))


def compile_fake(arch: str) -> Any:
    src = make_fake_compact_tensor(cutlass.Float32, (N,))
    dst = make_fake_compact_tensor(cutlass.Float32, (N,))
    return cute.compile(host, src, dst, options=f"--gpu-arch={arch} --keep-ptx")


def run_gpu() -> None:
    import torch
    from cutlass.cute.runtime import from_dlpack

    src_t = torch.randn(N, device="cuda")
    compiled = None
    for sign in (1.0, -1.0):  # the flag set, then clear
        src_t[0] = sign
        dst_t = torch.zeros_like(src_t)
        src, dst = from_dlpack(src_t), from_dlpack(dst_t)
        compiled = compiled or cute.compile(host, src, dst)
        compiled(src, dst)
        torch.cuda.synchronize()
        torch.testing.assert_close(dst_t, src_t * (2 if sign > 0 else 3))
    print("PASS")
