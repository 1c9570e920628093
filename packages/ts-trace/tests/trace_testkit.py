"""Resources shared by the ts-trace tests (plain Python work methods, no CuTe DSL)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from ts_ir import CooperativeGroupSpec, PipelineSpec, PipelineType, WorkAttr
from ts_trace import MemoryResource, TaskLocalVariable, consumer_work, producer_work


@dataclasses.dataclass(kw_only=True)
class Src(MemoryResource):
    """Global input: one consumer work with one output, one with two."""

    item: TaskLocalVariable = TaskLocalVariable.uninitialized()
    flag: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.item = TaskLocalVariable(dtype="Int32", default=0)
        self.flag = TaskLocalVariable(dtype="Boolean", default=False)

    @consumer_work(returns=item)
    def load(self, stage_info: Any) -> Any:
        return stage_info

    @consumer_work(returns=(item, flag))
    def load_with_flag(self, stage_info: Any) -> Any:
        return stage_info, True

    @consumer_work
    def peek(self, stage_info: Any) -> None:
        return None


@dataclasses.dataclass(kw_only=True)
class Buf(MemoryResource):
    """A pipelined buffer."""

    @producer_work
    def store(self, stage_info: Any, *, item: Any, scale: int = 1) -> None:
        del stage_info, item, scale

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    def prefetch(self, stage_info: Any) -> None:
        del stage_info

    @consumer_work
    def read(self, stage_info: Any) -> None:
        del stage_info


@dataclasses.dataclass(kw_only=True)
class Queue(MemoryResource):
    """A work queue."""

    is_work_queue: ClassVar[bool] = True
    tile: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.tile = TaskLocalVariable(dtype="WorkTileInfo", default=None)

    def is_empty(self, work_tile: Any) -> bool:
        return work_tile is None

    @consumer_work(returns=tile)
    def next_tile(self, stage_info: Any) -> Any:
        return stage_info


class Domains:
    """Stand-in for a Task subclass with a per-tile domain getter."""

    def get_domain(self, work_tile_coord: Any) -> Any:
        return work_tile_coord


def pipeline(stages: int = 2) -> PipelineSpec:
    """A small AsyncAsync pipeline description."""
    group = CooperativeGroupSpec("thread", 128)
    return PipelineSpec(PipelineType.AsyncAsync, stages, 0, group, group)
