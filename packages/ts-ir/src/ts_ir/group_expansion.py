"""Writing a plan's group steps out per member (see :mod:`ts_ir.groups` for the meaning)."""

from __future__ import annotations

import dataclasses

from ts_ir.groups import PipelineGroupSpec
from ts_ir.plan import KernelPlan
from ts_ir.schedule import Node, Step

__all__ = ["expand_groups"]


class _Expander:
    """Writes group steps out per member, renumbering every step in program order."""

    def __init__(self, groups: dict[str, PipelineGroupSpec]) -> None:
        self.groups = groups
        self.next_id = 0
        self.first: dict[int, int] = {}  # old step id -> its (first) new id

    def body(self, body: tuple[Node, ...]) -> tuple[Node, ...]:
        out: list[Node] = []
        for node in body:
            if not isinstance(node, Step):
                out.append(dataclasses.replace(node, body=self.body(node.body)))
                continue
            group = self.groups.get(node.resource)
            self.first[node.id] = self.next_id
            # A route names an earlier step, already renumbered.
            routes = tuple(
                dataclasses.replace(r, source_step=self.first[r.source_step]) for r in node.inputs
            )
            for member in group.members if group is not None else (node.resource,):
                out.append(
                    dataclasses.replace(node, id=self.next_id, resource=member, inputs=routes)
                )
                self.next_id += 1
        return tuple(out)


def expand_groups(plan: KernelPlan) -> KernelPlan:
    """``plan`` with every step on a group replaced by that step on each member, in order.

    Step ids are renumbered in program order (they stay unique and increasing); routes keep
    pointing at their steps. A plan without groups is returned as it is.
    """
    if not plan.groups:
        return plan
    groups = {g.name: g for g in plan.groups}
    tasks = []
    for task in plan.tasks:
        if any(s.resource in groups for s in task.schedule.steps()):
            schedule = task.schedule
            body = _Expander(groups).body(schedule.body)
            task = dataclasses.replace(task, schedule=dataclasses.replace(schedule, body=body))
        tasks.append(task)
    return dataclasses.replace(plan, tasks=tuple(tasks), groups=())
