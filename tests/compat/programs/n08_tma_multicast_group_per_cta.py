# mypy: ignore-errors
# (Written as a reference user writes DSL code: cutlass.Constexpr fields, proxy pipeline ops
# on resources, DSL values typed by the tracer. The harness that runs them is type-checked.)
"""Wrong: a multicast ``TmaAsync`` ring whose consumer group counts the warps of one CTA only.

On a cluster of two CTAs that multicast each stage into both, ``PipelineTmaAsync`` arrives on
a stage's empty barrier once per consumer warp of *each* CTA that filled it: 4 warps x 2 CTAs =
8 arrivals per phase. A group of 4 completes the phase after any 4 of them (the peer's, say),
so a producer refills a stage that this CTA's consumers still read (a race). The reference
refuses it too (its arrival check expects 8, or 128 threads); TS with a group-size error whose
fix names both.
"""

from dataclasses import dataclass, field
from typing import Any

import cutlass
import cutlass.cute as cute
import cutlass.experimental.cuda as cuda
import cutlass.pipeline as pipeline
from cutlass.cute.runtime import make_fake_compact_tensor
from cutlass.experimental import primitives as prims

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

CLUSTER = 2  # CTAs per cluster; both read the same column block
BOX_R, BOX_C = 4, 128  # one stage: BOX_R rows of BOX_C fp16 columns
HALF_R = BOX_R // CLUSTER  # the rows each CTA loads (and multicasts) per stage
STAGES = 3
M, N = 64, 512
STORE_WARPS = 4
EXPECT_ERROR = ("TS-R003", "CooperativeGroup(Agent.Thread, 8)", "multicast")


@dataclass(kw_only=True)
class RowCursor(MemoryResource):
    row: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.row = TaskLocalVariable(dtype=cutlass.Int32, default=cutlass.Int32(0))

    @consumer_work(returns=row)
    @cute.jit
    def next_row(self, stage_info: StageInfo) -> cutlass.Int32:
        return stage_info.loop_offset * BOX_R


@dataclass(kw_only=True)
class Ring(MemoryResource):
    desc: Any
    view: Any = field(init=False, default=None)
    alloc: cutlass.Constexpr[Any] = field(init=False, default=None)
    col: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.col = TaskLocalVariable(dtype=cutlass.Float16, default=cutlass.Float16(0))
        self.alloc = SmemAllocation("boxes", dtype=cutlass.Float16, count=STAGES * BOX_R * BOX_C)
        null = cutlass.inttoptr(0, mem_space=3, dtype=cutlass.Float16)
        self.view = cutlass.Array(
            null, dtype=cutlass.Float16, shape=(STAGES * BOX_R * BOX_C,), addrspace=3
        )

    def get_smem_requirements(self) -> list[SmemAllocation]:
        return [self.alloc]

    @cute.jit
    def _bind(self, stage_info: StageInfo) -> None:
        base = stage_info.context.smem_base.data_ptr() + self.alloc.offset
        self.view = cutlass.Array(
            base, dtype=cutlass.Float16, shape=(STAGES * BOX_R * BOX_C,), addrspace=3
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
    def load(self, stage_info: StageInfo, row: cutlass.Int32) -> None:
        # This CTA's half of the stage, written into the same stage of both CTAs; the TMA
        # completes its bytes on the full barrier at the same offset in each of them.
        bx, _, _ = cute.arch.block_idx()
        rank = cute.arch.block_idx_in_cluster()
        if prims.elect_sync():
            prims.cp_async_bulk_tensor_shared_cluster_global(
                self.view.subview(stage_info.stage_idx * BOX_R * BOX_C + rank * HALF_R * BOX_C),
                self.desc,
                [(bx // CLUSTER) * BOX_C, row + rank * HALF_R],  # innermost coordinate first
                stage_info.barrier,
                [],
                multicast_mask=cutlass.Int16((1 << CLUSTER) - 1),
            )

    @consumer_work(returns=col)
    @cute.jit
    def column_sum(self, stage_info: StageInfo) -> cutlass.Float16:
        # Each thread owns one column; the stage holds BOX_R rows of it: store their sum.
        tx, _, _ = cute.arch.thread_idx()
        base = stage_info.stage_idx * BOX_R * BOX_C + tx
        acc = cutlass.Float32(0)
        for r in cutlass.range_constexpr(BOX_R):
            acc += self.view[base + r * BOX_C].to(cutlass.Float32)
        return acc.to(cutlass.Float16)


@dataclass(kw_only=True)
class Out(MemoryResource):
    tensor: cute.Tensor

    @producer_work
    @cute.jit
    def put(self, stage_info: StageInfo, value: cutlass.Float16) -> None:
        tx, _, _ = cute.arch.thread_idx()
        bx, _, _ = cute.arch.block_idx()
        self.tensor[stage_info.loop_offset, bx * BOX_C + tx] = value


@cute.kernel
def sums_kernel(desc: cutlass.GridConstant[cuda.TensorMap], out: cute.Tensor) -> None:
    if prims.elect_sync():
        prims.prefetch_tensormap(desc.get_ptr())
    cfg = PipelineConfig.create_tma_async_pipeline_cfg(
        num_stages=STAGES,
        num_bytes=BOX_R * BOX_C * 2,  # the whole stage lands in each CTA
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        # Wrong: one CTA's warps; the peer's consumer warps arrive here too.
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, STORE_WARPS),
        cta_layout_vmnk=(1, CLUSTER, 1, 1),
    )
    cursor = RowCursor(name="cursor")
    ring = Ring(name="ring", desc=desc.get_ptr(), pipeline_config=cfg)
    out_res = Out(name="out", tensor=out)
    smem = SmemAllocator()
    smem.add_resource(ring)
    smem.compute_layout()

    @schedule
    def fill(c: RowCursor, r: Ring) -> None:
        r.init_fill()
        with domain_loop(M // BOX_R):
            row = c.next_row()
            r.acquire()
            r.load(row=row)
            r.commit()

    @schedule
    def drain(r: Ring, o: Out) -> None:
        r.init_drain()
        with domain_loop(M // BOX_R):
            r.wait()
            v = r.column_sum()
            r.release()
            o.put(v)

    @schedule
    def idle() -> None:
        with domain_loop(M // BOX_R):
            pass

    store = Task(
        name="store",
        src_resources=[ring],
        dst_resources=[out_res],
        warp_idx=0,
        num_warps=STORE_WARPS,
        schedule=drain(ring, out_res),
    )
    load = Task(
        name="load",
        src_resources=[cursor],
        dst_resources=[ring],
        warp_idx=4,
        num_warps=1,
        schedule=fill(cursor, ring),
    )
    pad = Task(
        name="pad",
        src_resources=[],
        dst_resources=[],
        warp_idx=5,
        num_warps=3,
        schedule=idle(),
    )
    manager = TaskManager(
        tasks=[store, load, pad],
        resource_dependency_graph={ring: [cursor], out_res: [ring]},
        smem_allocator=smem,
    )
    manager.setup_resources_and_tasks()
    # The peer multicasts into this CTA's stages and arrives on its barriers: make their
    # initialisation visible to the whole cluster before either CTA starts.
    cute.arch.mbarrier_init_fence()
    cute.arch.cluster_arrive_relaxed()
    cute.arch.cluster_wait()
    manager.run()
    # Neither CTA exits while its peer may still arrive on (or multicast into) its SMEM.
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()


@cute.jit
def host(a: cute.Tensor, out: cute.Tensor) -> None:
    desc = cuda.create_tensor_map_tiled_from_view(
        a, box_dims=(HALF_R, BOX_C), swizzle=cuda.TensorMapSwizzle.none
    )
    sums_kernel(desc, out).launch(
        grid=(CLUSTER * (N // BOX_C), 1, 1), block=(256, 1, 1), cluster=(CLUSTER, 1, 1)
    )


def compile_fake(arch: str) -> Any:
    a = make_fake_compact_tensor(cutlass.Float16, (M, N), stride_order=(1, 0))
    out = make_fake_compact_tensor(cutlass.Float16, (M // BOX_R, CLUSTER * N), stride_order=(1, 0))
    return cute.compile(host, a, out, options=f"--gpu-arch={arch} --keep-ptx")
