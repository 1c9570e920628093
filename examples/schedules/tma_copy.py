"""2D TMA copy through a 4-stage SMEM pipeline: a load warp and a store warpgroup.

The load task fills SMEM stages with TMA (completing on the stage's full barrier with a
transaction-byte count); the store task waits for a stage, writes it to global memory and
releases it. The load warp gives registers up, the store warpgroup takes them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from task_scheduling import consumer_work, domain_loop, producer_work, schedule
from task_scheduling.pipeline import CooperativeGroupSpec, PipelineSpec, PipelineType
from task_scheduling.plan import KernelPlan, TaskDeclaration, build_plan
from task_scheduling.resources import MemoryResource, TaskLocalVariable
from task_scheduling.schedule_builder import ResourceProxy
from task_scheduling.smem import SmemAllocationSpec

TILE_M, TILE_N, STAGES = 128, 64, 4
TILE_BYTES = TILE_M * TILE_N * 2


@dataclasses.dataclass(kw_only=True)
class GlobalIn(MemoryResource):
    """The source tensor, read tile by tile through its TMA descriptor."""

    coord: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.coord = TaskLocalVariable(dtype="Int32", default=0)

    @consumer_work(returns=coord)
    def tile_coord(self, stage_info: Any) -> Any:
        return stage_info.loop_offset


@dataclasses.dataclass(kw_only=True)
class StageBuffer(MemoryResource):
    """The SMEM ring of tiles between the TMA load and the store."""

    view: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.view = TaskLocalVariable(dtype="SmemTile", default=None)

    def get_smem_requirements(self) -> list[Any]:
        return [SmemAllocationSpec("tiles", STAGES * TILE_BYTES, 1024, "Float16", STAGES)]

    @producer_work
    def tma_load(self, stage_info: Any, *, coord: Any) -> None:
        """Issue the TMA load of tile ``coord`` into the acquired stage."""

    @consumer_work(returns=view)
    def read(self, stage_info: Any) -> Any:
        return stage_info.stage_idx


@dataclasses.dataclass(kw_only=True)
class GlobalOut(MemoryResource):
    """The destination tensor."""

    @producer_work
    def store(self, stage_info: Any, *, view: Any) -> None:
        """Write the SMEM tile to global memory."""


@schedule
def load_schedule(src: ResourceProxy, smem: ResourceProxy) -> None:
    """Fill one stage per tile."""
    with domain_loop(64):
        coord = src.tile_coord()
        smem.acquire()
        smem.tma_load(coord=coord)
        smem.commit()


@schedule
def store_schedule(smem: ResourceProxy, dst: ResourceProxy) -> None:
    """Drain one stage per tile."""
    with domain_loop(64):
        smem.wait()
        view = smem.read()
        dst.store(view=view)
        smem.release()


def kernel() -> KernelPlan:
    """The TMA copy as a kernel plan."""
    pipeline = PipelineSpec(
        PipelineType.TmaAsync,
        stages=STAGES,
        bytes_per_stage=TILE_BYTES,
        producer_group=CooperativeGroupSpec("thread", 1),
        consumer_group=CooperativeGroupSpec("thread", 128),
    )
    src, dst = GlobalIn(name="gmem_in"), GlobalOut(name="gmem_out")
    smem = StageBuffer(name="smem", pipeline_config=pipeline)
    tasks = [
        TaskDeclaration([src], [smem], 0, 4, load_schedule(src, smem), 40, name="tma_load"),
        TaskDeclaration([smem], [dst], 4, 4, store_schedule(smem, dst), 232, name="store"),
    ]
    return build_plan(tasks, {smem: [src], dst: [smem]}, name="tma_copy")
