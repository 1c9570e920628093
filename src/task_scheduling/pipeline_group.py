"""Pipeline groups: ``PipelineGroup`` and ``PipelineGroupMode`` (re-exports).

Not imported by ``task_scheduling/__init__`` (as in the reference): ``import
task_scheduling.pipeline_group``. See :mod:`ts_trace.groups` for the schedule spelling
(``group.member.op()``, the collapsed ``group.release()`` / ``group.commit()``) and
:doc:`/groups` for what is checked and what is lowered.
"""

from __future__ import annotations

from ts_ir.enums import PipelineGroupMode
from ts_trace.groups import PipelineGroup

__all__ = ["PipelineGroup", "PipelineGroupMode"]
