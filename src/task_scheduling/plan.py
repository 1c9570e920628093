"""Kernel plans: tasks, resources and the dependency graph as data (re-exports).

:func:`build_plan` assembles a :class:`ts_ir.KernelPlan` with no GPU library, so a kernel can be
inspected, serialized and drawn anywhere.
"""

from ts_ir.plan import KernelPlan, ResourceSpec, TaskSpec
from ts_ir.render import render_mermaid, render_plan_table, render_schedule
from ts_ir.serialize import from_json, to_json
from ts_trace.errors import PlanError
from ts_trace.plan_builder import TaskDeclaration, build_plan

__all__ = [
    "KernelPlan",
    "PlanError",
    "ResourceSpec",
    "TaskDeclaration",
    "TaskSpec",
    "build_plan",
    "from_json",
    "render_mermaid",
    "render_plan_table",
    "render_schedule",
    "to_json",
]
