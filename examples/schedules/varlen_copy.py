"""Variable-length segment copy: a persistent loop with skipped tiles and dynamic domains.

Every work tile is one segment; its length comes from a per-segment length tensor, so the
domain loop's end is computed per tile (``SegmentTask.segment_blocks``), and may be zero. Tiles
past the last segment are skipped: the ``skippable()`` region does not run for them while the
queue bookkeeping still does. A per-tile flag produced by a work call guards a final flush.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from task_scheduling import (
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    when_true,
    work_tile_loop,
)
from task_scheduling.pipeline import CooperativeGroupSpec, PipelineSpec, PipelineType
from task_scheduling.plan import KernelPlan, TaskDeclaration, build_plan
from task_scheduling.resources import MemoryResource, TaskLocalVariable
from task_scheduling.schedule_builder import ResourceProxy


class SegmentTask:
    """Per-tile domain of the copy loop."""

    def segment_blocks(self, work_tile_coord: Any) -> Any:
        """Blocks in the tile's segment (0 for an empty segment)."""
        return work_tile_coord


@dataclasses.dataclass(kw_only=True)
class SegmentQueue(MemoryResource):
    """Hands out one segment per work tile."""

    is_work_queue: ClassVar[bool] = True
    tile: TaskLocalVariable = TaskLocalVariable.uninitialized()
    is_tail: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.tile = TaskLocalVariable(dtype="WorkTileInfo", default=None)
        self.is_tail = TaskLocalVariable(dtype="Boolean", default=False)

    def beyond_last_segment(self, work_tile: Any) -> bool:
        """Skip predicate: the tile has no segment."""
        return bool(work_tile is None)

    @consumer_work(returns=(tile, is_tail))
    def next_segment(self, stage_info: Any) -> Any:
        return stage_info.work_tile, False


@dataclasses.dataclass(kw_only=True)
class SegmentIn(MemoryResource):
    """The packed input segments."""

    block: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.block = TaskLocalVariable(dtype="Int32", default=0)

    @consumer_work(returns=block)
    def block_index(self, stage_info: Any) -> Any:
        return stage_info.loop_offset


@dataclasses.dataclass(kw_only=True)
class Staging(MemoryResource):
    """A 2-stage SMEM ring between loader and writer."""

    @producer_work
    def load(self, stage_info: Any, *, block: Any) -> None:
        """Copy one block of the segment into the stage."""

    @consumer_work
    def read(self, stage_info: Any) -> None:
        """Read the stage."""


@dataclasses.dataclass(kw_only=True)
class SegmentOut(MemoryResource):
    """The packed output segments."""

    @producer_work
    def write(self, stage_info: Any) -> None:
        """Write the block."""

    @producer_work
    def flush(self, stage_info: Any) -> None:
        """Make the tail segment's writes visible."""


@schedule
def loader(wq: ResourceProxy, src: ResourceProxy, stage: ResourceProxy) -> None:
    """Per segment: copy its blocks into the ring."""
    with work_tile_loop(wq, skip_if=SegmentQueue.beyond_last_segment) as tiles:
        wq.next_segment()
        with tiles.skippable(), domain_loop(SegmentTask.segment_blocks):
            block = src.block_index()
            stage.acquire()
            stage.load(block=block)
            stage.commit()


@schedule
def writer(wq: ResourceProxy, stage: ResourceProxy, dst: ResourceProxy) -> None:
    """Per segment: drain its blocks, then flush the tail segment."""
    with work_tile_loop(wq, skip_if=SegmentQueue.beyond_last_segment) as tiles:
        _, is_tail = wq.next_segment()
        with tiles.skippable():
            with domain_loop(SegmentTask.segment_blocks):
                stage.wait()
                stage.read()
                dst.write()
                stage.release()
            with when_true(is_tail):
                dst.flush()


def kernel() -> KernelPlan:
    """The varlen copy as a kernel plan."""
    wq, src, dst = SegmentQueue(name="segments"), SegmentIn(name="src"), SegmentOut(name="dst")
    stage = Staging(
        name="staging",
        pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync,
            2,
            0,
            CooperativeGroupSpec("thread", 128),
            CooperativeGroupSpec("thread", 128),
        ),
    )
    tasks = [
        TaskDeclaration([wq, src], [stage], 0, 4, loader(wq, src, stage), name="loader"),
        TaskDeclaration([wq, stage], [dst], 4, 4, writer(wq, stage, dst), name="writer"),
    ]
    return build_plan(tasks, {stage: [src, wq], dst: [stage]}, name="varlen_copy")
