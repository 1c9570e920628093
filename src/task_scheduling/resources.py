"""Resources, work decorators, task-local variables and ``PipelineConfig`` (re-exports)."""

from ts_ir.enums import WorkAttr
from ts_runtime.pipeline_config import PipelineConfig
from ts_runtime.work_queue import TileSchedulerConfig, WorkQueue
from ts_trace.resources import MemoryResource
from ts_trace.stage_info import StageInfo
from ts_trace.task_local import TaskLocalVariable
from ts_trace.work import consumer_work, producer_work

__all__ = [
    "MemoryResource",
    "PipelineConfig",
    "StageInfo",
    "TaskLocalVariable",
    "TileSchedulerConfig",
    "WorkAttr",
    "WorkQueue",
    "consumer_work",
    "producer_work",
]
