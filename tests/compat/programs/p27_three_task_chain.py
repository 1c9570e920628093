# mypy: ignore-errors
# (Written as a reference user writes DSL code: cutlass.Constexpr fields, proxy pipeline ops
# on resources, DSL values typed by the tracer. The harness that runs them is type-checked.)
"""Three-stage chain: load warp -> ring 1 -> doubling warp -> ring 2 -> store warp.

Covers: a task that is the consumer of one pipelined resource and the producer of another (a
routed value from ``r1.read()`` into ``r2.write(...)`` inside one iteration), three tasks,
two rings with their own SMEM, a chain dependency graph.
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
from task_scheduling.schedule_builder import domain_loop, schedule
from task_scheduling.task import Task
from task_scheduling.task_manager import TaskManager

WG = 32  # threads of one warp: one element per thread and stage
STAGES = 2
TILES = 16
N = TILES * WG
EXPECT_PTX = ("mbarrier.init", "mbarrier.try_wait", "st.shared", "ld.shared")


@dataclass(kw_only=True)
class Src(MemoryResource):
    tensor: cute.Tensor
    value: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.value = TaskLocalVariable(dtype=cutlass.Float32, default=cutlass.Float32(0))

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
        self.alloc = SmemAllocation(f"{self.name}_data", dtype=cutlass.Float32, count=STAGES * WG)
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

    @producer_work
    @cute.jit
    def put_sum(self, stage_info: StageInfo, a: cutlass.Float32, b: cutlass.Float32) -> None:
        tx, _, _ = cute.arch.thread_idx()
        self.tensor[stage_info.loop_offset * WG + tx % WG] = a + b


def ring_cfg() -> PipelineConfig:
    return PipelineConfig.create_async_async_pipeline_cfg(
        num_stages=STAGES,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, WG),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, WG),
        cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
    )


@cute.kernel
def chain_kernel(x: cute.Tensor, unused: cute.Tensor, out: cute.Tensor) -> None:
    xs = Src(name="x", tensor=x)
    r1 = Ring(name="ring1", pipeline_config=ring_cfg())
    r2 = Ring(name="ring2", pipeline_config=ring_cfg())
    dst = Dst(name="out", tensor=out)
    smem = SmemAllocator()
    smem.add_resource(r1)
    smem.add_resource(r2)
    smem.compute_layout()

    @schedule
    def fill(s: Src, r: Ring) -> None:
        r.init_fill()
        with domain_loop(TILES):
            v = s.get()
            r.acquire()
            r.write(v)
            r.commit()

    @schedule
    def relay(a: Ring, b: Ring) -> None:
        a.init_drain()
        b.init_fill()
        with domain_loop(TILES):
            a.wait()
            v = a.read()
            a.release()
            b.acquire()
            b.write(value=v)
            b.commit()

    @schedule
    def drain(r: Ring, d: Dst) -> None:
        r.init_drain()
        with domain_loop(TILES):
            r.wait()
            v = r.read()
            r.release()
            d.put(v, scale=2)

    tasks = [
        Task(
            name="load",
            src_resources=[xs],
            dst_resources=[r1],
            warp_idx=0,
            num_warps=1,
            schedule=fill(xs, r1),
        ),
        Task(
            name="relay",
            src_resources=[r1],
            dst_resources=[r2],
            warp_idx=1,
            num_warps=1,
            schedule=relay(r1, r2),
        ),
        Task(
            name="store",
            src_resources=[r2],
            dst_resources=[dst],
            warp_idx=2,
            num_warps=1,
            schedule=drain(r2, dst),
        ),
    ]
    manager = TaskManager(
        tasks=tasks,
        resource_dependency_graph={r1: [xs], r2: [r1], dst: [r2]},
        smem_allocator=smem,
    )
    manager.setup_resources_and_tasks()
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    manager.run()


@cute.jit
def host(x: cute.Tensor, unused: cute.Tensor, out: cute.Tensor) -> None:
    chain_kernel(x, unused, out).launch(grid=(1, 1, 1), block=(3 * WG, 1, 1))


def EXPECT(x: Any, y: Any) -> Any:
    return 2 * x


def compile_fake(arch: str) -> Any:
    t = [make_fake_compact_tensor(cutlass.Float32, (N,)) for _ in range(3)]
    return cute.compile(host, *t, options=f"--gpu-arch={arch} --keep-ptx")


def run_gpu() -> None:
    import torch
    from cutlass.cute.runtime import from_dlpack

    x_t, y_t = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    out_t = torch.zeros_like(x_t)
    args = (from_dlpack(x_t), from_dlpack(y_t), from_dlpack(out_t))
    cute.compile(host, *args)(*args)
    torch.cuda.synchronize()
    torch.testing.assert_close(out_t, EXPECT(x_t, y_t))
    print("PASS")
