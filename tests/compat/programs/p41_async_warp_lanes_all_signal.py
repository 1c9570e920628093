# mypy: ignore-errors
# (Written as a reference user writes DSL code: cutlass.Constexpr fields, proxy pipeline ops
# on resources, DSL values typed by the tracer. The harness that runs them is type-checked.)
"""Warp lanes beside a second ring that every warp of the task fills and signals.

Covers: p34's warp lanes (``interleave_stride=2``, two-warp tasks in plain
``domain_loop(TILES)``) where the store task, instead of writing global memory, relays its
values through a second SMEM ring ``out`` (one stride) to a two-warp sink. Every store warp
takes every stage of ``out`` (warp ``w`` writes half ``w`` of it), so each warp signals it:
``producer_signaling_threads=SignalingThreads.All`` with the producer group counting both warps
(64 threads), and a stage completes when both halves are written. With ``TaskWarpLeader`` there
the program races and can deadlock (TS-V214; docs/migrating.rst, "Deliberately stricter").
"""

from dataclasses import dataclass, field
from typing import Any

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.runtime import make_fake_compact_tensor

from task_scheduling.enums import SignalingThreads
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
LANES = 2
TILES = 16  # per lane
OUT_STAGES = 2
N = LANES * TILES * WG
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
        lane = (tx // WG) % LANES
        return self.tensor[(stage_info.loop_offset * LANES + lane) * WG + tx % WG]


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
class Out(MemoryResource):
    view: Any = field(init=False, default=None)
    alloc: cutlass.Constexpr[Any] = field(init=False, default=None)
    item: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.item = TaskLocalVariable(dtype=cutlass.Float32, default=cutlass.Float32(0))
        self.alloc = SmemAllocation("out", dtype=cutlass.Float32, count=OUT_STAGES * LANES * WG)
        null = cutlass.inttoptr(0, mem_space=3, dtype=cutlass.Float32)
        self.view = cutlass.Array(
            null, dtype=cutlass.Float32, shape=(OUT_STAGES * LANES * WG,), addrspace=3
        )

    def get_smem_requirements(self) -> list[SmemAllocation]:
        return [self.alloc]

    @cute.jit
    def _bind(self, stage_info: StageInfo) -> None:
        base = stage_info.context.smem_base.data_ptr() + self.alloc.offset
        self.view = cutlass.Array(
            base, dtype=cutlass.Float32, shape=(OUT_STAGES * LANES * WG,), addrspace=3
        )

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
        self.view[stage_info.stage_idx * LANES * WG + tx % (LANES * WG)] = value

    @consumer_work(returns=item)
    @cute.jit
    def read(self, stage_info: StageInfo) -> cutlass.Float32:
        tx, _, _ = cute.arch.thread_idx()
        return self.view[stage_info.stage_idx * LANES * WG + tx % (LANES * WG)]


@dataclass(kw_only=True)
class Dst(MemoryResource):
    tensor: cute.Tensor

    @producer_work
    @cute.jit
    def put(
        self, stage_info: StageInfo, value: cutlass.Float32, *, scale: cutlass.Constexpr[int]
    ) -> None:
        tx, _, _ = cute.arch.thread_idx()
        lane = (tx // WG) % LANES
        tile = stage_info.loop_offset * LANES + lane
        self.tensor[tile * WG + tx % WG] = value * cutlass.Float32(scale)


@cute.kernel
def ring_kernel(src: cute.Tensor, dst: cute.Tensor) -> None:
    cfg = PipelineConfig.create_async_async_pipeline_cfg(
        num_stages=STAGES,
        # Each stage is signalled by the one warp whose lane it is: 32 threads.
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
        cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
        interleave_stride=LANES,
    )
    src_res = Src(name="src", tensor=src)
    ring = Ring(name="ring", pipeline_config=cfg)
    dst_res = Dst(name="dst", tensor=dst)
    out_cfg = PipelineConfig.create_async_async_pipeline_cfg(
        num_stages=OUT_STAGES,
        # Both store warps write each stage and both signal it: 64 threads per side.
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, LANES * WG),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, LANES * WG),
        cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
        producer_signaling_threads=SignalingThreads.All,
    )
    out = Out(name="out", pipeline_config=out_cfg)
    smem = SmemAllocator()
    smem.add_resource(ring)
    smem.add_resource(out)
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
    def drain(r: Ring, o: Out) -> None:
        r.init_drain()
        o.init_fill()
        with domain_loop(TILES):
            r.wait()
            y = r.read()
            r.release()
            o.acquire()
            o.write(y)
            o.commit()

    @schedule
    def sink(o: Out, d: Dst) -> None:
        o.init_drain()
        with domain_loop(TILES):
            o.wait()
            z = o.read()
            o.release()
            d.put(z, scale=2)

    load = Task(
        name="load",
        src_resources=[src_res],
        dst_resources=[ring],
        warp_idx=0,
        num_warps=LANES,
        schedule=fill(src_res, ring),
    )
    store = Task(
        name="store",
        src_resources=[ring],
        dst_resources=[out],
        warp_idx=LANES,
        num_warps=LANES,
        schedule=drain(ring, out),
    )
    sinker = Task(
        name="sink",
        src_resources=[out],
        dst_resources=[dst_res],
        warp_idx=2 * LANES,
        num_warps=LANES,
        schedule=sink(out, dst_res),
    )
    manager = TaskManager(
        tasks=[load, store, sinker],
        resource_dependency_graph={ring: [src_res], out: [ring], dst_res: [out]},
        smem_allocator=smem,
    )
    manager.setup_resources_and_tasks()
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    manager.run()


@cute.jit
def host(src: cute.Tensor, dst: cute.Tensor) -> None:
    ring_kernel(src, dst).launch(grid=(1, 1, 1), block=(6 * WG, 1, 1))


def compile_fake(arch: str) -> Any:
    src = make_fake_compact_tensor(cutlass.Float32, (N,))
    dst = make_fake_compact_tensor(cutlass.Float32, (N,))
    return cute.compile(host, src, dst, options=f"--gpu-arch={arch} --keep-ptx")


def run_gpu() -> None:
    import torch
    from cutlass.cute.runtime import from_dlpack

    src_t = torch.randn(N, device="cuda")
    dst_t = torch.zeros_like(src_t)
    src, dst = from_dlpack(src_t), from_dlpack(dst_t)
    cute.compile(host, src, dst)(src, dst)
    torch.cuda.synchronize()
    torch.testing.assert_close(dst_t, src_t * 2)
    print("PASS")
