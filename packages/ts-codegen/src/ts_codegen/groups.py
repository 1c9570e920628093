"""Lowering pipeline groups on ``cutlass.pipeline``: what each member's barriers are.

ts-verify proves a plan with groups by writing every collapsed step out per member
(:func:`ts_ir.expand_groups`: a Merge's ``group.release()`` is a release of every member, a
Fork's ``group.commit()`` a commit of every member, a FusedMerge's ``group.wait()`` a wait on
every member) and then checking each member as a ring of its own. The lowering emits that
expanded plan, step for step:

* **Merge / FusedMerge** — every member is its own pipeline (its full and empty barriers);
  the consumer's collapsed release arrives on each member's empty barrier, its collapsed wait
  waits on each member's full barrier, in member order. A shared empty barrier (one arrival
  for all members, as the reference lays it out) would save arrivals but is not what the
  verifier models, so it is not emitted.
* **Fork with a thread producer** (``AsyncAsync``): likewise; the collapsed commit arrives on
  each member's full barrier after the producer's stores.
* **Fork with a TMA producer** (``TmaAsync``, ``TmaWgmma``, ``TmaUmma`` members, mixed or not):
  a TMA load completes the one mbarrier it is given, and a Fork's one load fills the buffer
  all members view, so per-member full barriers would leave every member but the loaded one
  armed forever. The members share the first member's full barriers (:func:`fork_shared_full`,
  ``ts_codegen.dsl.groups``): the first member's acquire arms them with the bytes of every
  member the producer loads into (:func:`fork_tx_bytes`), each load completes its bytes there,
  every member's consumers wait there. Each member keeps its own empty barriers, so every
  acquire waits for its own consumers exactly as in the expansion. The verified model stands:
  in it, each member's full barrier completes at the collapsed commit (one point for all
  members, TS-V241), which is where the shared barrier completes (a TMA commit is where its
  loads land); the producer is one task (TS-V240) that acquires every member of a stage before
  the commit, so the shared barrier is never more than one phase ahead of any member's
  consumer.

A TMA Fork over a cluster, or one that mixes TMA and thread producers, is not lowered:
:func:`unlowered_forks`.
"""

from __future__ import annotations

from ts_codegen.lower import LoweringError
from ts_ir import (
    KernelPlan,
    PipelineGroupMode,
    PipelineGroupSpec,
    PipelineSpec,
    ScheduleStage,
    expand_groups,
)

__all__ = ["fork_shared_full", "fork_tx_bytes", "lowered_plan", "unlowered_forks"]


def _pipe(plan: KernelPlan, name: str) -> PipelineSpec | None:
    return next((r.pipeline for r in plan.resources if r.name == name), None)


def _tma_forks(plan: KernelPlan) -> list[PipelineGroupSpec]:
    forks = []
    for g in plan.groups:
        pipes = [_pipe(plan, m) for m in g.members]
        if g.mode is PipelineGroupMode.Fork and any(
            p is not None and p.type.producer_is_tma for p in pipes
        ):
            forks.append(g)
    return forks


def unlowered_forks(plan: KernelPlan) -> list[tuple[str, str, str]]:
    """``(group, member, why)`` for each TMA Fork member whose shared full barrier is not lowered.

    Lowered: members that are all TMA-fed, on one CTA (``cluster_mn`` 1 x 1).
    """
    found = []
    for g in _tma_forks(plan):
        for m in g.members:
            p = _pipe(plan, m)
            if p is None:
                continue
            if not p.type.producer_is_tma:
                found.append((g.name, m, f"fed by threads ({p.type.value}) beside TMA-fed members"))
            elif p.cluster_mn != (1, 1):
                found.append((g.name, m, f"a ring over a {p.cluster_mn} cluster"))
    return found


def fork_shared_full(plan: KernelPlan) -> dict[str, str]:
    """Each TMA Fork member after the first → the first member, whose full barriers it uses."""
    return {m: g.members[0] for g in _tma_forks(plan) for m in g.members[1:]}


def fork_tx_bytes(plan: KernelPlan) -> dict[str, int]:
    """Each TMA Fork's first member → the bytes its shared full barrier is armed with.

    The sum of the stage bytes of every member the group's producer task loads into (a
    producer work step on the member); the first member's own when it loads into none.
    """
    out: dict[str, int] = {}
    for g in _tma_forks(plan):
        loaded: set[str] = set()
        for task in plan.tasks:
            steps = list(task.schedule.steps())
            if any(s.resource == g.name for s in steps):
                loaded |= {s.resource for s in steps if s.stage is ScheduleStage.ProducerWork}
        sizes = {m: _pipe(plan, m) for m in g.members}
        total = sum(p.bytes_per_stage for m, p in sizes.items() if p is not None and m in loaded)
        first = sizes[g.members[0]]
        out[g.members[0]] = total or (first.bytes_per_stage if first is not None else 0)
    return out


def lowered_plan(plan: KernelPlan) -> KernelPlan:
    """The plan the lowering emits: ``plan`` with its group steps written out per member.

    Raises:
        LoweringError: A TMA Fork that is not lowered (see :func:`unlowered_forks`).
    """
    unlowered = unlowered_forks(plan)
    if unlowered:
        group, member, why = unlowered[0]
        raise LoweringError(
            f"PipelineGroup `{group}` (Fork): member `{member}` is {why}; a TMA Fork's shared "
            "full barrier is lowered for TMA-fed members on one CTA only"
        )
    return expand_groups(plan)
