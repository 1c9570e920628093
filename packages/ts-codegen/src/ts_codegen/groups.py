"""Lowering pipeline groups: each member keeps its own ``cutlass.pipeline`` barriers.

ts-verify proves a plan with groups by writing every collapsed step out per member
(:func:`ts_ir.expand_groups`: a Merge's ``group.release()`` is a release of every member, a
Fork's ``group.commit()`` a commit of every member, a FusedMerge's ``group.wait()`` a wait on
every member) and then checking each member as a ring of its own. The lowering emits exactly
that expanded plan, so what runs is what was proved:

* **Merge / FusedMerge** — every member is its own pipeline (its full and empty barriers);
  the consumer's collapsed release arrives on each member's empty barrier, its collapsed wait
  waits on each member's full barrier, in member order.
* **Fork** — the producer's collapsed commit arrives on each member's full barrier.

A shared barrier (one empty barrier whose arrival count covers the consumer once for all
members, as the reference lays it out) would save arrivals, not change what is synchronized;
it is not what the verifier models, so it is not emitted.

One case the expansion cannot lower: a Fork whose producer fills its members with TMA. A TMA
producer's acquire arms the member's full barrier with the stage's bytes and only a TMA load
into that member completes it, so a member the producer never loads into (one load feeding
every consumer) would stay armed forever and its consumer hang. :func:`unfilled_fork_members`
finds those members; ts-runtime refuses them with a typed error before any code is generated
and :func:`lowered_plan` refuses them for direct callers.
"""

from __future__ import annotations

from ts_codegen.lower import LoweringError
from ts_ir import KernelPlan, PipelineGroupMode, ScheduleStage, expand_groups

__all__ = ["lowered_plan", "unfilled_fork_members"]


def unfilled_fork_members(plan: KernelPlan) -> list[tuple[str, str]]:
    """``(group, member)`` for each TMA-fed Fork member its producer task never loads into.

    A member counts as loaded when the producer task of the group (the task that runs its
    collapsed commit) has a producer work step on that member.
    """
    found: list[tuple[str, str]] = []
    names = {r.name for r in plan.resources}
    for group in plan.groups:
        if group.mode is not PipelineGroupMode.Fork:
            continue
        for task in plan.tasks:
            steps = list(task.schedule.steps())
            if not any(s.resource == group.name for s in steps):
                continue
            loaded = {s.resource for s in steps if s.stage is ScheduleStage.ProducerWork}
            for m in group.members:
                pipe = plan.resource(m).pipeline if m in names else None
                if pipe is not None and pipe.type.producer_is_tma and m not in loaded:
                    found.append((group.name, m))
    return found


def lowered_plan(plan: KernelPlan) -> KernelPlan:
    """The plan the lowering emits: ``plan`` with its group steps written out per member.

    Raises:
        LoweringError: A TMA-fed Fork member its producer never loads into (see the module).
    """
    unfilled = unfilled_fork_members(plan)
    if unfilled:
        group, member = unfilled[0]
        raise LoweringError(
            f"PipelineGroup `{group}` (Fork): member `{member}` is TMA-fed but its producer "
            "never loads into it; its full barrier would never complete"
        )
    return expand_groups(plan)
