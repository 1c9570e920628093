# mypy: ignore-errors
# (Written as a reference user writes DSL code: cutlass.Constexpr fields, proxy pipeline ops
# on resources, DSL values typed by the tracer. The harness that runs them is type-checked.)
"""Two load warps fill two SMEM rings; one warp waits on both and stores their sum.

Covers: two pipelined resources of one class (each with its own ``SmemAllocation``), two
producer tasks and a consumer task that brackets both rings in one iteration, a producer work
with two routed positional inputs (``out.put_sum(a, b)``).
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
def sum_kernel(x: cute.Tensor, y: cute.Tensor, out: cute.Tensor) -> None:
    xs, ys = Src(name="x", tensor=x), Src(name="y", tensor=y)
    ra = Ring(name="ring_a", pipeline_config=ring_cfg())
    rb = Ring(name="ring_b", pipeline_config=ring_cfg())
    dst = Dst(name="out", tensor=out)
    smem = SmemAllocator()
    smem.add_resource(ra)
    smem.add_resource(rb)
    smem.compute_layout()

    def fill_task(src: Src, ring: Ring, warp: int) -> Task:
        @schedule
        def fill(s: Src, r: Ring) -> None:
            r.init_fill()
            with domain_loop(TILES):
                v = s.get()
                r.acquire()
                r.write(v)
                r.commit()

        return Task(
            name=f"fill_{ring.name}",
            src_resources=[src],
            dst_resources=[ring],
            warp_idx=warp,
            num_warps=1,
            schedule=fill(src, ring),
        )

    @schedule
    def add(a_ring: Ring, b_ring: Ring, d: Dst) -> None:
        a_ring.init_drain()
        b_ring.init_drain()
        with domain_loop(TILES):
            a_ring.wait()
            a = a_ring.read()
            a_ring.release()
            b_ring.wait()
            b = b_ring.read()
            b_ring.release()
            d.put_sum(a, b)

    adder = Task(
        name="add",
        src_resources=[ra, rb],
        dst_resources=[dst],
        warp_idx=2,
        num_warps=1,
        schedule=add(ra, rb, dst),
    )
    manager = TaskManager(
        tasks=[fill_task(xs, ra, 0), fill_task(ys, rb, 1), adder],
        resource_dependency_graph={ra: [xs], rb: [ys], dst: [ra, rb]},
        smem_allocator=smem,
    )
    manager.setup_resources_and_tasks()
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    manager.run()


@cute.jit
def host(x: cute.Tensor, y: cute.Tensor, out: cute.Tensor) -> None:
    sum_kernel(x, y, out).launch(grid=(1, 1, 1), block=(3 * WG, 1, 1))


def EXPECT(x: Any, y: Any) -> Any:
    return x + y


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
