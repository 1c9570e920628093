"""Enumerations and block guards (re-exported from :mod:`ts_ir`)."""

from ts_ir.enums import (
    PipelineGroupMode,
    PipelineType,
    ScheduleStage,
    SignalingThreads,
    TileSchedulerType,
    WorkAttr,
)
from ts_ir.guards import (
    FIRST_ITER,
    LAST_ITER,
    SKIPPABLE,
    BlockGuard,
    Every,
    IterationPredicate,
    OpaqueCondition,
    guard_fires,
    is_iteration_predicate,
    is_loop_guard,
    is_skippable_guard,
)

__all__ = [
    "FIRST_ITER",
    "LAST_ITER",
    "SKIPPABLE",
    "BlockGuard",
    "Every",
    "IterationPredicate",
    "OpaqueCondition",
    "PipelineGroupMode",
    "PipelineType",
    "ScheduleStage",
    "SignalingThreads",
    "TileSchedulerType",
    "WorkAttr",
    "guard_fires",
    "is_iteration_predicate",
    "is_loop_guard",
    "is_skippable_guard",
]
