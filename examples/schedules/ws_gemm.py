"""Warp-specialized persistent GEMM: TMA load, WGMMA and epilogue tasks over a work queue.

* ``load`` (1 warpgroup, few registers): per work tile, per K block, TMA-loads A and B tiles into
  a 4-stage SMEM ring.
* ``mma`` (1 warpgroup, many registers): waits for each stage, issues WGMMA into the register
  accumulator, releases the stage; hands the finished accumulator to the epilogue.
* ``epilogue`` (1 warpgroup): converts the accumulator and TMA-stores the C tile.

The K loop length is computed per work tile by ``GemmTask.k_blocks`` (a dynamic domain).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from task_scheduling import (
    WorkAttr,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    work_tile_loop,
)
from task_scheduling.pipeline import CooperativeGroupSpec, PipelineSpec, PipelineType
from task_scheduling.plan import KernelPlan, TaskDeclaration, build_plan
from task_scheduling.resources import MemoryResource, TaskLocalVariable
from task_scheduling.schedule_builder import ResourceProxy
from task_scheduling.smem import SmemAllocationSpec

BM, BN, BK, STAGES = 128, 256, 64, 4
AB_BYTES = (BM + BN) * BK * 2


class GemmTask:
    """Per-tile quantities the runtime evaluates for every work tile."""

    k_total: int = 8192

    def k_blocks(self, work_tile_coord: Any) -> int:
        """Number of K blocks of the tile (the dynamic domain of the K loop)."""
        return (self.k_total + BK - 1) // BK


@dataclasses.dataclass(kw_only=True)
class TileQueue(MemoryResource):
    """The persistent work queue: one (m, n) output tile per iteration."""

    is_work_queue: ClassVar[bool] = True
    tile: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.tile = TaskLocalVariable(dtype="WorkTileInfo", default=None)

    @consumer_work(returns=tile)
    def next_tile(self, stage_info: Any) -> Any:
        return stage_info.work_tile


@dataclasses.dataclass(kw_only=True)
class Operands(MemoryResource):
    """A and B in global memory, addressed through TMA descriptors."""

    k_coord: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.k_coord = TaskLocalVariable(dtype="Int32", default=0)

    @consumer_work(returns=k_coord)
    def block_coord(self, stage_info: Any) -> Any:
        return stage_info.loop_offset


@dataclasses.dataclass(kw_only=True)
class OperandStages(MemoryResource):
    """The SMEM ring of A/B tiles between TMA and WGMMA."""

    def get_smem_requirements(self) -> list[Any]:
        return [
            SmemAllocationSpec("a_tiles", STAGES * BM * BK * 2, 1024, "BFloat16"),
            SmemAllocationSpec("b_tiles", STAGES * BN * BK * 2, 1024, "BFloat16"),
        ]

    @producer_work
    def tma_load(self, stage_info: Any, *, k_coord: Any, tile: Any) -> None:
        """TMA-load the A and B tiles of ``(tile, k_coord)`` into the acquired stage."""

    @consumer_work(work_attrs=WorkAttr.NONE)
    def operands(self, stage_info: Any) -> None:
        """Make the stage's WGMMA descriptors."""


@dataclasses.dataclass(kw_only=True)
class Accumulator(MemoryResource):
    """The fp32 accumulator in registers, handed from the MMA to the epilogue."""

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    def zero(self, stage_info: Any) -> None:
        """Clear the accumulator at the start of a tile."""

    @producer_work
    def mma(self, stage_info: Any) -> None:
        """Issue WGMMA on the waited stage into the accumulator."""

    @consumer_work
    def fragment(self, stage_info: Any) -> None:
        """Read the accumulator for the epilogue."""


@dataclasses.dataclass(kw_only=True)
class Output(MemoryResource):
    """C in global memory, written by TMA store."""

    @producer_work
    def tma_store(self, stage_info: Any, *, tile: Any) -> None:
        """Convert, stage through SMEM and TMA-store the tile."""


@schedule
def load_schedule(wq: ResourceProxy, ab: ResourceProxy, smem: ResourceProxy) -> None:
    """Per tile, per K block: fill one A/B stage."""
    with work_tile_loop(wq):
        tile = wq.next_tile()
        with domain_loop(GemmTask.k_blocks):
            k = ab.block_coord()
            smem.acquire()
            smem.tma_load(k_coord=k, tile=tile)
            smem.commit()


@schedule
def mma_schedule(wq: ResourceProxy, smem: ResourceProxy, acc: ResourceProxy) -> None:
    """Per tile: accumulate over K, then hand the accumulator over."""
    with work_tile_loop(wq):
        wq.next_tile()
        acc.acquire()
        acc.zero()
        with domain_loop(GemmTask.k_blocks):
            smem.wait()
            smem.operands()
            acc.mma()
            smem.release()
        acc.commit()


@schedule
def epilogue_schedule(wq: ResourceProxy, acc: ResourceProxy, out: ResourceProxy) -> None:
    """Per tile: wait for the accumulator and store it."""
    with work_tile_loop(wq):
        tile = wq.next_tile()
        acc.wait()
        acc.fragment()
        out.tma_store(tile=tile)
        acc.release()


def kernel() -> KernelPlan:
    """The warp-specialized persistent GEMM as a kernel plan."""
    wq = TileQueue(name="work_queue")
    ab, out = Operands(name="ab_gmem"), Output(name="c_gmem")
    smem = OperandStages(
        name="ab_smem",
        pipeline_config=PipelineSpec(
            PipelineType.TmaAsync,
            STAGES,
            AB_BYTES,
            CooperativeGroupSpec("thread", 1),
            CooperativeGroupSpec("thread", 128),
        ),
    )
    acc = Accumulator(
        name="accumulator",
        pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync,
            1,
            0,
            CooperativeGroupSpec("thread", 128),
            CooperativeGroupSpec("thread", 128),
        ),
    )
    tasks = [
        TaskDeclaration([wq, ab], [smem], 0, 4, load_schedule(wq, ab, smem), 40, name="load"),
        TaskDeclaration([wq, smem], [acc], 4, 4, mma_schedule(wq, smem, acc), 232, name="mma"),
        TaskDeclaration(
            [wq, acc], [out], 8, 4, epilogue_schedule(wq, acc, out), 232, name="epilogue"
        ),
    ]
    graph: dict[MemoryResource, list[MemoryResource]] = {
        smem: [ab, wq],
        acc: [smem],
        out: [acc, wq],
    }
    return build_plan(tasks, graph, name="ws_gemm")
