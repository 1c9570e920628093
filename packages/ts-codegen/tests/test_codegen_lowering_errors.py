"""Lowering errors of persistent schedules, raised before any CuTe DSL code is emitted."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import pytest

pytest.importorskip("cutlass")

from ts_codegen import LoweringError, TaskLowering
from ts_trace import (
    MemoryResource,
    ResourceProxy,
    TaskDeclaration,
    TaskLocalVariable,
    build_plan,
    consumer_work,
    schedule,
    work_tile_loop,
)

# The smoke subset (the oldest Python runs only it): one kernel of each kind.
pytestmark = pytest.mark.smoke


@dataclasses.dataclass(kw_only=True)
class Tiles(MemoryResource):
    """A work queue that is not a ts_runtime.WorkQueue: it has no tile source."""

    is_work_queue: ClassVar[bool] = True
    tile: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.tile = TaskLocalVariable(dtype="Int32", default=0)

    @consumer_work(returns=tile)
    def current(self, stage_info: Any) -> Any:
        return stage_info.work_tile


@schedule
def walk(wq: ResourceProxy) -> None:
    with work_tile_loop(wq):
        wq.current()


def test_work_queue_without_tile_source_names_the_task_and_queue() -> None:
    wq = Tiles(name="tiles")
    plan = build_plan([TaskDeclaration([wq], [], 0, 1, walk(wq), name="walker")], {wq: []})
    (task,) = plan.tasks
    lowering = TaskLowering(task, {"tiles": wq}, {r.name: r for r in plan.resources}, {})
    expected = r"TS-C001: task `walker`.*work_tile_loop\(tiles\)"
    with pytest.raises(LoweringError, match=expected) as e:
        lowering.run()
    assert "no tile source" in str(e.value) and "ts_runtime.WorkQueue" in str(e.value)
    assert "test_codegen_lowering_errors.py" in str(e.value)  # the user's line
