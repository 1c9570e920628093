"""What a verified plan says its compiled kernel must do, read for translation validation.

:mod:`ts_runtime.ptx_check` compares the PTX with these readings of the plan: which ring
operations each task's schedule makes (:func:`roles`; with ``live_only``, only those that can
run at all, :func:`can_run`), which tasks work on warp lanes (:func:`warp_lane_tasks`) and how
many arrivals one signal of a task makes (:func:`plan_arrivals`, the verifier's own rule) and
where a consumer that skips stages first waits (:func:`first_wait_states`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ts_ir import (
    ConditionalBlock,
    DomainLoop,
    IterationPredicate,
    KernelPlan,
    Node,
    PipelineSpec,
    Role,
    ScheduleStage,
    Step,
    TaskSpec,
)
from ts_verify import split_lanes, umma_arrivals

__all__ = ["can_run", "first_wait_states", "plan_arrivals", "roles", "warp_lane_tasks"]


def roles(task: TaskSpec, *, live_only: bool = False) -> dict[str, set[ScheduleStage]]:
    """The pipeline operations ``task``'s schedule makes, per ring.

    With ``live_only``, only those :func:`can_run` does not rule out.
    """
    out: dict[str, set[ScheduleStage]] = {}
    for node, chain in task.schedule.walk():
        if not isinstance(node, Step) or not node.stage.is_pipeline_op:
            continue
        if live_only and not can_run(chain):
            continue
        out.setdefault(node.resource, set()).add(node.stage)
    return out


_MAX_TRIPS = 4096
"""Longest constant loop whose iteration predicates :func:`can_run` tries one by one."""


def can_run(chain: tuple[object, ...]) -> bool:
    """False when the plan alone shows a step inside ``chain`` never runs, for any valuation.

    That is: a constant domain loop around it runs zero times, or the iteration predicates
    that guard it on a constant loop (``every(3, start=1)`` on a loop of one iteration) fire
    together on none of its iterations. The compiler folds such code away, so the PTX holds
    no barrier operation for it; anything else (runtime bounds, flags) may run and counts.
    """
    loops: list[tuple[DomainLoop, list[IterationPredicate]]] = []
    for node in chain:
        if isinstance(node, DomainLoop):
            loops.append((node, []))
        elif (
            isinstance(node, ConditionalBlock)
            and isinstance(node.guard, IterationPredicate)
            and loops
        ):
            loops[-1][1].append(node.guard)
    for loop, guards in loops:
        n = loop.static_trip_count()
        if n is None:
            continue
        if n <= 0:
            return False
        if (
            guards
            and n <= _MAX_TRIPS
            and not any(all(g.fires(i, n) for g in guards) for i in range(n))
        ):
            return False
    return True


def warp_lane_tasks(plan: KernelPlan) -> set[str]:
    """Tasks whose warps each work on a lane of their own (ts-verify splits them per warp)."""
    split, errors = split_lanes(plan)
    if errors:
        return set()
    out: set[str] = set()
    for task in plan.tasks:
        if task.num_warps > 1 and not any(t.name == task.name for t in split.tasks):
            out.add(task.name)
    return out


def plan_arrivals(task: TaskSpec, pipe: PipelineSpec, role: Role) -> int:
    """Arrivals one commit (producer) or release (consumer) of ``task`` makes, in the plan.

    The plan's own reading of its declarations (the rule ts-verify checks group sizes by): a
    UMMA side's ``tcgen05.commit`` is one arrival per signaling warp
    (:func:`ts_verify.umma_arrivals`); a TMA producer arms the full barrier from one elected
    thread; a side signalled by the task's first warp only counts that warp; otherwise every
    warp (or thread) of the task.
    """
    umma = umma_arrivals(task, pipe, role)
    if umma is not None:
        return umma  # tcgen05.commit: one arrival per signaling warp, whatever its threads
    if role is Role.PRODUCER:
        group, signaling = pipe.producer_group, pipe.producer_signaling
        if pipe.type.producer_expects_tx:
            return 1
    else:
        group, signaling = pipe.consumer_group, pipe.consumer_signaling
    return group.arrivals_for(1 if signaling.has_task_warp_leader() else task.num_warps)


_WAITS = (ScheduleStage.ConsumerWait, ScheduleStage.ConsumerTryWait)


def first_wait_states(task: TaskSpec, resource: str, stages: int) -> frozenset[tuple[int, int]]:
    """The (stage, parity) a consumer's first wait on ``resource`` may see, after its skips.

    A consumer starts at stage 0 on parity 0 and each ``skip_stage()`` before its first wait
    (or try_wait) moves it on one stage. Read as the PTX check explores the code: every loop
    may run any number of times, every block may run or not; skip counts are kept modulo
    ``2 x stages``, the period of (stage, parity), so the walk ends.
    """
    period = 2 * stages
    found: set[int] = set()

    def walk(nodes: Sequence[Node], counts: frozenset[int]) -> frozenset[int]:
        """The skip counts with which control leaves ``nodes`` without having waited."""
        for node in nodes:
            if isinstance(node, Step):
                if node.resource == resource and node.stage.is_skip:
                    counts = frozenset((c + 1) % period for c in counts)
                elif node.resource == resource and node.stage in _WAITS:
                    found.update(counts)
                    return frozenset()
            elif isinstance(node, ConditionalBlock):
                counts |= walk(node.body, counts)
            else:  # a domain or work-tile loop: any number of iterations
                grown = counts | walk(node.body, counts)
                while grown != counts:
                    counts, grown = grown, grown | walk(node.body, grown)
        return counts

    walk(task.schedule.body, frozenset({0}))
    return frozenset((k % stages, (k // stages) % 2) for k in found)
