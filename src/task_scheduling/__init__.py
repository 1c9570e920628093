"""TS: warp-specialized GPU kernels from resources, schedules and tasks.

The top level exports what most schedules need; the submodules mirror the documented module
layout (``enums``, ``resources``, ``schedule_builder``, ``pipeline``, ``plan``). This package only
re-exports: the code lives in the ``ts_*`` layer packages.
"""

from task_scheduling import enums as enums
from task_scheduling import pipeline
from task_scheduling import plan as plan
from task_scheduling import resources as resources
from task_scheduling import schedule_builder as schedule_builder
from task_scheduling.__about__ import __version__ as __version__
from task_scheduling.enums import Every, IterationPredicate, OpaqueCondition, WorkAttr
from task_scheduling.resources import consumer_work, producer_work
from task_scheduling.schedule_builder import (
    domain_loop,
    schedule,
    when_false,
    when_true,
    work_tile_loop,
)

__all__ = [
    "Every",
    "IterationPredicate",
    "OpaqueCondition",
    "WorkAttr",
    "consumer_work",
    "domain_loop",
    "pipeline",
    "producer_work",
    "schedule",
    "when_false",
    "when_true",
    "work_tile_loop",
]
