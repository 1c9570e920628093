"""``@schedule`` and the schedule constructs (re-exported from :mod:`ts_trace`).

The traced result is a :class:`ts_ir.Schedule` tree.
"""

from ts_ir.schedule import (
    ConditionalBlock,
    DomainLoop,
    Node,
    Route,
    Schedule,
    Step,
    WorkTileLoop,
)
from ts_trace.errors import ScheduleError
from ts_trace.schedule_builder import (
    DataFlowToken,
    DomainLoopProxy,
    ResourceProxy,
    WorkTileLoopProxy,
    domain_loop,
    schedule,
    when_false,
    when_true,
    work_tile_loop,
)

__all__ = [
    "ConditionalBlock",
    "DataFlowToken",
    "DomainLoop",
    "DomainLoopProxy",
    "Node",
    "ResourceProxy",
    "Route",
    "Schedule",
    "ScheduleError",
    "Step",
    "WorkTileLoop",
    "WorkTileLoopProxy",
    "domain_loop",
    "schedule",
    "when_false",
    "when_true",
    "work_tile_loop",
]
