"""What a lowered loop or branch carries: the pipeline states it advances, the values it reads.

The CuTe DSL's ``scf.for`` / ``scf.while`` / ``scf.if`` take their loop-carried and yielded
values explicitly, so the lowering asks of each body which ``(resource, role)`` states its
steps advance and which task-local values it writes and reads (:mod:`ts_codegen.lower`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from ts_codegen.cursors import StateKey, commit_key, release_key
from ts_ir import (
    ConditionalBlock,
    DomainLoop,
    Node,
    OpaqueCondition,
    Role,
    ScheduleStage,
    Step,
    iter_nodes,
)

__all__ = ["carried_reads", "condition_key", "reads", "touched"]

ValueKey = tuple[str, str]
"""A task-local value: (resource name, output name)."""


def touched(
    body: Sequence[Node], lagged: Collection[str], lagged_producers: Collection[str]
) -> tuple[set[StateKey], set[ValueKey]]:
    """The states ``body`` advances and the values its work steps write.

    ``lagged`` / ``lagged_producers``: the resources whose consumer / producer side keeps a
    separate release / commit state (:func:`ts_codegen.cursors.lagged_sides`).
    """
    states: set[StateKey] = set()
    values: set[ValueKey] = set()
    for node, _ in iter_nodes(tuple(body)):
        if not isinstance(node, Step):
            continue
        # Only commit / release / skip (and a lagged wait or acquire) advance a state.
        lag, lag_p, stage = node.resource in lagged, node.resource in lagged_producers, node.stage
        if stage is ScheduleStage.ConsumerSkip:
            states.add((node.resource, Role.CONSUMER))
            if lag:
                states.add(release_key(node.resource))
        elif stage is ScheduleStage.ProducerCommit and lag_p:
            states.add(commit_key(node.resource))
        elif stage is ScheduleStage.ProducerAcquire and lag_p:
            states.add((node.resource, Role.PRODUCER))
        elif stage is ScheduleStage.ProducerCommit or (
            stage is ScheduleStage.ConsumerRelease and not lag
        ):
            states.add((node.resource, stage.role))
        elif stage is ScheduleStage.ConsumerRelease:
            states.add(release_key(node.resource))
        elif stage is ScheduleStage.ConsumerWait and lag:
            states.add((node.resource, Role.CONSUMER))
        for out in node.outputs:
            values.add((node.resource, out))
    return states, values


def reads(nodes: Sequence[Node], steps: Mapping[int, Step]) -> set[ValueKey]:
    """The task-local values ``nodes`` read (work inputs and runtime conditions)."""
    found: set[ValueKey] = set()
    for node, _ in iter_nodes(tuple(nodes)):
        if isinstance(node, Step):
            for r in node.inputs:
                found.add((steps[r.source_step].resource, r.output))
        found |= _condition_reads(node)
    return found


def carried_reads(body: Sequence[Node], steps: Mapping[int, Step]) -> set[ValueKey]:
    """Values read in ``body`` that may come from an earlier iteration or from outside."""
    inside = {n.id for n, _ in iter_nodes(tuple(body)) if isinstance(n, Step)}
    guarded: set[int] = set()
    for node, parents in iter_nodes(tuple(body)):
        if isinstance(node, Step) and any(
            isinstance(p, (ConditionalBlock, DomainLoop)) for p in parents
        ):
            guarded.add(node.id)
    found: set[ValueKey] = set()
    for node, _ in iter_nodes(tuple(body)):
        # A runtime condition may test a value of an earlier iteration: carry it.
        found |= _condition_reads(node)
        if not isinstance(node, Step):
            continue
        for r in node.inputs:
            same_iter = r.source_step in inside and r.source_step < node.id
            if not same_iter or r.source_step in guarded:
                found.add((steps[r.source_step].resource, r.output))
    return found


def _condition_reads(node: Node) -> set[ValueKey]:
    """The task-local value a runtime-condition block tests (empty for other nodes)."""
    if isinstance(node, ConditionalBlock) and isinstance(node.guard, OpaqueCondition):
        key = condition_key(node.guard)
        return set() if key is None else {key}
    return set()


def condition_key(guard: OpaqueCondition) -> ValueKey | None:
    """The (resource, output) a runtime condition tests, or None when it names no output."""
    if guard.result_name is None or guard.resource is None:
        return None
    return (str(getattr(guard.resource, "name", guard.resource)), guard.result_name)
