"""Pipeline groups: the declaration and where the collapsed operations are written.

A group's collapsed step means that operation on every member (:mod:`ts_ir.groups`), so once
the declaration is sound the verifier checks the plan with the group steps written out per
member (:func:`ts_ir.expand_groups`): each member is then a ring like any other, and the
bracket, arrival-count and whole-kernel checks count it (a group release is one release of
every member, so a Merge whose producers run different trip counts deadlocks there, with its
interleaving; a Fork consumer that never releases its member is a missing release). What the
expansion cannot see is checked here, on the plan as written:

* **TS-V240** (group declaration): every member is a pipelined resource of the plan, the
  members have the same number of stages (the shared barrier's stage ``i`` is every member's
  stage ``i``), the collapsed side is one side (a Merge or FusedMerge has one consumer task for
  all members, a Fork one producer task) and of one kind (all UMMA or all thread arrivals there).
* **TS-V241** (collapsed operation misplaced): the collapsed operation is written on the group
  and only there (``group.release()`` in a Merge, not ``group.smem_a.release()``;
  ``group.commit()`` in a Fork; ``group.wait()`` / ``try_wait()`` / ``release()`` in a
  FusedMerge), and the group runs nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator

from ts_ir import (
    KernelPlan,
    PipelineGroupMode,
    PipelineGroupSpec,
    Role,
    Step,
    TaskSpec,
)
from ts_verify.diagnostics import Diagnostic

__all__ = ["check_groups"]


def _fix_op(group: PipelineGroupSpec) -> str:
    ops = sorted(f"{group.name}.{s.op_name}()" for s in group.collapsed_ops)
    return " / ".join(ops)


def _declaration(plan: KernelPlan, group: PipelineGroupSpec) -> Iterator[Diagnostic]:
    names = {r.name for r in plan.resources}
    pipes = {}
    for m in group.members:
        res = plan.resource(m) if m in names else None
        if res is None or res.pipeline is None:
            why = "is not a resource of the kernel" if res is None else "has no pipeline"
            yield Diagnostic(
                "TS-V240",
                f"PipelineGroup `{group.name}` ({group.mode.value}): member `{m}` {why}; a "
                "group shares barriers between pipelined resources",
                resource=m,
                location=group.location,
                fix="group resources that each have a pipeline_config and are used by tasks",
            )
            return
        pipes[m] = res.pipeline
    stages = {m: p.stages for m, p in pipes.items()}
    if len(set(stages.values())) > 1:
        detail = ", ".join(f"`{m}` {n}" for m, n in stages.items())
        yield Diagnostic(
            "TS-V240",
            f"PipelineGroup `{group.name}`: the members have different stage counts ({detail}); "
            "the shared barrier's stage i is every member's stage i",
            resource=group.name,
            location=group.location,
            fix="give every member the same num_stages",
        )
    collapsed = Role.PRODUCER if group.mode is PipelineGroupMode.Fork else Role.CONSUMER
    side = "producer" if collapsed is Role.PRODUCER else "consumer"
    kinds = {
        m: (p.type.producer_is_umma if collapsed is Role.PRODUCER else p.type.consumer_is_umma)
        for m, p in pipes.items()
    }
    if len(set(kinds.values())) > 1:
        detail = ", ".join(f"`{m}` {pipes[m].type.value}" for m in pipes)
        yield Diagnostic(
            "TS-V240",
            f"PipelineGroup `{group.name}` ({group.mode.value}): the shared {side} side mixes "
            f"UMMA and thread arrivals ({detail}); one barrier takes one kind",
            resource=group.name,
            location=group.location,
            fix=f"use one {side} kind for every member (all UMMA or none)",
        )
    users = {m: _side_tasks(plan, (m, group.name), collapsed) for m in group.members}
    if len({frozenset(ts) for ts in users.values()}) > 1:
        detail = "; ".join(f"`{m}`: {', '.join(sorted(ts)) or 'none'}" for m, ts in users.items())
        yield Diagnostic(
            "TS-V240",
            f"PipelineGroup `{group.name}` ({group.mode.value}): the members have different "
            f"{side} tasks ({detail}); the collapsed {side} side is one task for all members",
            resource=group.name,
            location=group.location,
            fix=f"run every member's {side} side in the same task, or do not group them",
        )


def _side_tasks(plan: KernelPlan, names: tuple[str, str], role: Role) -> set[str]:
    """Tasks running ``role``'s side of a member (on it, or on its group)."""
    return {
        t.name
        for t in plan.tasks
        if any(s.resource in names and s.stage.role is role for s in t.schedule.steps())
    }


def _misplaced(group: PipelineGroupSpec, task: TaskSpec, step: Step) -> Diagnostic | None:
    ops = group.collapsed_ops
    on_group = step.resource == group.name
    if on_group and step.stage not in ops:
        what = f"`{group.name}.{step.label}()` runs on the group"
        why = f"a {group.mode.value} group runs only {_fix_op(group)}"
        fix = f"run it on the member: {group.name}.<member>.{step.label}()"
    elif not on_group and step.resource in group.members and step.stage in ops:
        what = f"`{step.resource}.{step.label}()` runs on one member"
        why = (
            f"in a {group.mode.value} group `{step.stage.op_name}` is collapsed: one "
            f"`{group.name}.{step.stage.op_name}()` covers every member"
        )
        fix = f"write {group.name}.{step.stage.op_name}() once instead of each member's"
    else:
        return None
    return Diagnostic(
        "TS-V241",
        f"{what}, but {why}",
        task=task.name,
        resource=step.resource,
        step=f"#{step.id} {step.describe()}",
        location=step.location,
        fix=fix,
    )


def check_groups(plan: KernelPlan) -> list[Diagnostic]:
    """TS-V240 and TS-V241 for every group of ``plan`` (before the groups are written out)."""
    out: list[Diagnostic] = []
    for group in plan.groups:
        out.extend(_declaration(plan, group))
        for task in plan.tasks:
            for step in task.schedule.steps():
                d = _misplaced(group, task, step)
                if d is not None:
                    out.append(d)
    return out
