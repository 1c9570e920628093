"""ts-trace: declare resources and trace schedules into ts-ir, with no GPU library.

Decorate resource methods with :func:`producer_work` / :func:`consumer_work`, write one
:func:`schedule` function per task, and assemble a :class:`ts_ir.KernelPlan` with
:func:`build_plan`. Mistakes raise :class:`ScheduleError` and friends, naming the schedule, the
resource and the line.
"""

from ts_trace.__about__ import __version__
from ts_trace.errors import (
    TRACE_ERROR_CATALOG,
    PlanError,
    ResourceDeclarationError,
    ScheduleError,
    TraceError,
)
from ts_trace.groups import PipelineGroup
from ts_trace.plan_builder import TaskDeclaration, build_plan, pipeline_spec_of, resource_spec_of
from ts_trace.resources import RESERVED_WORK_NAMES, MemoryResource, WorkMethod, resource_name
from ts_trace.schedule_builder import (
    DataFlowToken,
    DomainLoopProxy,
    ResourceProxy,
    WorkTileLoopProxy,
    domain_loop,
    schedule,
    skip_predicate,
    when_false,
    when_true,
    work_tile_loop,
)
from ts_trace.stage_info import StageInfo
from ts_trace.task_local import TaskLocalVariable, bind_task_local_variables
from ts_trace.work import WorkInfo, consumer_work, get_work_info, producer_work

__all__ = [
    "RESERVED_WORK_NAMES",
    "TRACE_ERROR_CATALOG",
    "DataFlowToken",
    "DomainLoopProxy",
    "MemoryResource",
    "PipelineGroup",
    "PlanError",
    "ResourceDeclarationError",
    "ResourceProxy",
    "ScheduleError",
    "StageInfo",
    "TaskDeclaration",
    "TaskLocalVariable",
    "TraceError",
    "WorkInfo",
    "WorkMethod",
    "WorkTileLoopProxy",
    "__version__",
    "bind_task_local_variables",
    "build_plan",
    "consumer_work",
    "domain_loop",
    "get_work_info",
    "pipeline_spec_of",
    "producer_work",
    "resource_name",
    "resource_spec_of",
    "schedule",
    "skip_predicate",
    "when_false",
    "when_true",
    "work_tile_loop",
]
