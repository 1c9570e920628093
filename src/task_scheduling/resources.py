"""Resources, work decorators and task-local variables (re-exported from :mod:`ts_trace`)."""

from ts_ir.enums import WorkAttr
from ts_trace.resources import MemoryResource
from ts_trace.stage_info import StageInfo
from ts_trace.task_local import TaskLocalVariable
from ts_trace.work import consumer_work, producer_work

__all__ = [
    "MemoryResource",
    "StageInfo",
    "TaskLocalVariable",
    "WorkAttr",
    "consumer_work",
    "producer_work",
]
