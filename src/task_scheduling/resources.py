"""Resources, work decorators, task-local variables and ``PipelineConfig`` (re-exports).

``PipelineConfig``, ``TileSchedulerConfig``, ``WorkQueue`` and the PDL barriers
(``PdlWaitBarrier``, ``PdlLaunchBarrier``, ``PDL_BARRIER_TYPES``) come from the runtime layer
(ts-runtime) and are imported when first used, so that the rest of this module, which is all a
schedule needs, works with only ts-ir, ts-trace and ts-verify installed. So do the names the
reference's ``resources`` module offers besides its own (a program may import them from here):
the enums ``PipelineType``, ``SignalingThreads``, ``TileSchedulerType``, ``ScheduleStage``,
``WorkTileInfo`` (the type of ``stage_info.work_tile``: ``tile_idx``, ``is_valid_tile``,
``update_from``), ``ResourceContext``, ``SmemAllocation`` and ``TmemAllocation``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ts_ir.enums import (
    PipelineType,
    ScheduleStage,
    SignalingThreads,
    TileSchedulerType,
    WorkAttr,
)
from ts_trace.groups import PipelineGroup
from ts_trace.resources import MemoryResource
from ts_trace.stage_info import StageInfo
from ts_trace.task_local import TaskLocalVariable
from ts_trace.work import consumer_work, producer_work

if TYPE_CHECKING:
    from ts_runtime.pdl import PdlLaunchBarrier, PdlWaitBarrier
    from ts_runtime.pipeline_config import PipelineConfig
    from ts_runtime.work_queue import TileSchedulerConfig, WorkQueue

__all__ = [
    "MemoryResource",
    "PdlLaunchBarrier",
    "PdlWaitBarrier",
    "PipelineConfig",
    "PipelineGroup",
    "PipelineType",
    "ScheduleStage",
    "SignalingThreads",
    "StageInfo",
    "TaskLocalVariable",
    "TileSchedulerConfig",
    "TileSchedulerType",
    "WorkAttr",
    "WorkQueue",
    "consumer_work",
    "producer_work",
]

# The runtime names and the ts-runtime module each comes from.
# PDL_BARRIER_TYPES (a tuple of classes) is importable by name but not in __all__: everything
# listed there is a class or function of a layer.
_RUNTIME = {
    "PDL_BARRIER_TYPES": "ts_runtime.pdl",
    "PdlLaunchBarrier": "ts_runtime.pdl",
    "PdlWaitBarrier": "ts_runtime.pdl",
    "PipelineConfig": "ts_runtime.pipeline_config",
    "TileSchedulerConfig": "ts_runtime.work_queue",
    "WorkQueue": "ts_runtime.work_queue",
    # Names the reference's `resources` module also offers (a program may import them from
    # here): the work tile type of `stage_info.work_tile` and the allocation records.
    "WorkTileInfo": "ts_codegen",
    "ResourceContext": "ts_runtime.memory",
    "SmemAllocation": "ts_runtime.memory",
    "TmemAllocation": "ts_runtime.tmem",
}
# Where a layer spells the name differently.
_LAYER_NAME = {"WorkTileInfo": "WorkTile"}


def __getattr__(name: str) -> Any:
    """Import a runtime name on first use; say what to install when ts-runtime is missing."""
    module = _RUNTIME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(module), _LAYER_NAME.get(name, name))
    except ModuleNotFoundError as err:
        raise ImportError(
            f"task_scheduling.resources.{name} comes from the runtime layer, which is not "
            f"installed ({err}): `pip install ts-runtime`; schedules, plans and the verifier "
            "need only ts-ir, ts-trace and ts-verify",
            name=__name__,
        ) from None
    globals()[name] = value  # later lookups find it directly
    return value
