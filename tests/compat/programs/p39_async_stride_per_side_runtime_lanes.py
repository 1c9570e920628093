# mypy: ignore-errors
# (Written as a reference user writes DSL code: cutlass.Constexpr fields, proxy pipeline ops
# on resources, DSL values typed by the tracer. The harness that runs them is type-checked.)
"""p35 with a run-time tile count: lane loops and an in-order reader over one run-time end.

Covers: ``create_async_async_pipeline_cfg(interleave_stride=(2, 2, 1, 1))`` with ``tiles`` a
kernel argument: two single-warp load tasks in ``domain_loop(lane, tiles, 2)`` and a single-warp
store task reading every stage in order in ``domain_loop(tiles)``. ts-verify proves it for every
``tiles``: the reader's iterations on lane ``l`` are ``every(2, start=l)`` of its loop, which
runs as often as ``domain_loop(l, tiles, 2)`` (ts_verify.counting.loop_base). The reference
compiles it too.
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
STAGES = 4
TILES = 16  # the largest run-time `tiles` (the buffers' size)
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
def ring_kernel(src: cute.Tensor, dst: cute.Tensor, tiles: cutlass.Int32) -> None:
    cfg = PipelineConfig.create_async_async_pipeline_cfg(
        num_stages=STAGES,
        # Each stage is signalled by one single-warp task per side: 32 threads.
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
        cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
        interleave_stride=(2, 2, 1, 1),
    )
    src_res = Src(name="src", tensor=src)
    ring = Ring(name="ring", pipeline_config=cfg)
    dst_res = Dst(name="dst", tensor=dst)
    smem = SmemAllocator()
    smem.add_resource(ring)
    smem.compute_layout()

    def fill_lane(lane: int) -> Any:
        @schedule
        def fill(s: Src, r: Ring) -> None:
            r.init_fill()
            with domain_loop(lane, tiles, 2):
                x = s.get()
                r.acquire()
                r.write(x)
                r.commit()

        return fill(src_res, ring)

    @schedule
    def drain(r: Ring, d: Dst) -> None:
        r.init_drain()
        with domain_loop(tiles):
            r.wait()
            y = r.read()
            r.release()
            d.put(y, scale=2)

    loads = [
        Task(
            name=f"load{lane}",
            src_resources=[src_res],
            dst_resources=[ring],
            warp_idx=lane,
            num_warps=1,
            schedule=fill_lane(lane),
        )
        for lane in range(2)
    ]
    store = Task(
        name="store",
        src_resources=[ring],
        dst_resources=[dst_res],
        warp_idx=2,
        num_warps=1,
        schedule=drain(ring, dst_res),
    )
    manager = TaskManager(
        tasks=[*loads, store],
        resource_dependency_graph={ring: [src_res], dst_res: [ring]},
        smem_allocator=smem,
    )
    manager.setup_resources_and_tasks()
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    manager.run()


@cute.jit
def host(src: cute.Tensor, dst: cute.Tensor, tiles: cutlass.Int32) -> None:
    ring_kernel(src, dst, tiles).launch(grid=(1, 1, 1), block=(3 * WG, 1, 1))


def compile_fake(arch: str) -> Any:
    src = make_fake_compact_tensor(cutlass.Float32, (N,))
    dst = make_fake_compact_tensor(cutlass.Float32, (N,))
    return cute.compile(
        host, src, dst, cutlass.Int32(TILES), options=f"--gpu-arch={arch} --keep-ptx"
    )


def run_gpu() -> None:
    import torch
    from cutlass.cute.runtime import from_dlpack

    src_t = torch.randn(N, device="cuda")
    dst_t = torch.zeros_like(src_t)
    src, dst = from_dlpack(src_t), from_dlpack(dst_t)
    compiled = cute.compile(host, src, dst, cutlass.Int32(TILES))
    for tiles in (TILES, 7, 1, 0):  # one compiled kernel, odd and even trip counts
        dst_t.zero_()
        compiled(src, dst, cutlass.Int32(tiles))
        torch.cuda.synchronize()
        torch.testing.assert_close(dst_t[: tiles * WG], src_t[: tiles * WG] * 2)
        assert not dst_t[tiles * WG :].any()
    print("PASS")
