"""Happens-before over one run, by vector clocks, and the waits it leaves unordered.

Program order plus each barrier wait's enabling events: the ``k``-th ``acquire`` of a ring of
``S`` stages waits for the ``(k - S)``-th releases, the ``k``-th ``wait`` for the ``k``-th
commits. ``ts_verify.aliasing`` uses it for SMEM lifetimes, :func:`stale_wait` for the
consumers that skip stages.

**Stale waits.** A wait tests the parity of the stage's full barrier, which tells phases apart
only modulo 2. The ``k``-th wait targets fill ``k`` (round ``r = k // S``) and passes as soon as
the barrier has completed ``r + 1`` phases, *or* ``r - 1``: fill ``k - S`` not landed yet, fill
``k - 2 S`` landed (or, in round 1, nothing landed at all). A consumer that waits for every
stage has itself waited for fill ``k - S``, so that cannot happen. One that skips stages
(``skip_stage()``: another consumer takes them) can reach the wait first; the wait then
returns on a stage that is not filled. It cannot happen in any execution iff every commit of
fill ``k - S`` happens before the consumer's last event before the wait: otherwise an order of
the events that respects happens-before runs the wait first (everything that precedes it,
and not that commit), and it passes on the older phase. The other side needs no check here: a
fill ``k + S`` needs fill ``k`` released, by this consumer alone when the arrival counts are
right (:mod:`ts_verify.kernel_checks`).
"""

from __future__ import annotations

import dataclasses

from ts_ir import ScheduleStage
from ts_verify.simulate import Record

__all__ = ["Clock", "Mark", "all_before", "before", "clocks", "ring_index", "stale_wait"]

Clock = tuple[int, ...]

_ACQUIRE = ScheduleStage.ProducerAcquire
_COMMIT = ScheduleStage.ProducerCommit
_WAIT = ScheduleStage.ConsumerWait
_RELEASE = ScheduleStage.ConsumerRelease


@dataclasses.dataclass(frozen=True)
class Mark:
    """One event of a run: its place in the run, its task's slot in the clocks, its clock."""

    index: int
    event: Record
    slot: int
    clock: Clock

    @property
    def step_id(self) -> int:
        """The id of the event's schedule step."""
        return self.event.op.step.id


def before(x: Mark, y: Mark) -> bool:
    """``x`` happens before (or is) ``y``."""
    return x.clock[x.slot] <= y.clock[x.slot]


def all_before(xs: tuple[Mark, ...] | None, ys: tuple[Mark, ...]) -> bool:
    """Every event of ``xs`` happens before every event of ``ys`` (never, when ``xs`` is None)."""
    return xs is not None and all(before(x, y) for x in xs for y in ys)


def ring_index(e: Record, depth: int) -> int:
    """The ring index of a barrier operation: how many the task made before it on that side."""
    return e.round * depth + e.stage


def clocks(events: list[Record], stages: dict[str, int]) -> list[Mark]:
    """Vector clocks of a run: program order plus each barrier wait's enabling events."""
    slots: dict[str, int] = {}
    for e in events:
        slots.setdefault(e.task, len(slots))
    now: dict[str, Clock] = {}
    done: dict[tuple[str, ScheduleStage, int], list[Clock]] = {}
    marks = []
    for i, e in enumerate(events):
        clock = list(now.get(e.task, (0,) * len(slots)))
        step = e.op.step
        depth = stages.get(step.resource)
        if depth is not None and e.stage >= 0:
            k = ring_index(e, depth)
            enablers: list[Clock] = []
            if step.stage is _ACQUIRE and k >= depth:
                enablers = done.get((step.resource, _RELEASE, k - depth), [])
            elif step.stage is _WAIT:
                enablers = done.get((step.resource, _COMMIT, k), [])
            for other in enablers:
                clock = [max(a, b) for a, b in zip(clock, other, strict=True)]
        clock[slots[e.task]] += 1
        now[e.task] = tuple(clock)
        if depth is not None and e.stage >= 0:
            done.setdefault((step.resource, step.stage, ring_index(e, depth)), []).append(
                now[e.task]
            )
        marks.append(Mark(i, e, slots[e.task], now[e.task]))
    return marks


def stale_wait(
    events: list[Record], stages: dict[str, int], rings: frozenset[str]
) -> tuple[Record, str] | None:
    """The first wait on one of ``rings`` that may pass on a stale phase, and why; or None.

    See the module docstring. ``rings``: those whose consumers skip stages (every other ring's
    consumers wait for every stage themselves).
    """
    marks = clocks(events, stages)
    commits: dict[tuple[str, int], list[Mark]] = {}
    last: dict[str, Mark] = {}  # each task's latest event so far
    for m in marks:
        e, step = m.event, m.event.op.step
        depth = stages.get(step.resource)
        if depth is not None and e.stage >= 0 and step.resource in rings:
            k = ring_index(e, depth)
            if step.stage is _COMMIT:
                commits.setdefault((step.resource, k), []).append(m)
            elif step.stage is _WAIT and k >= depth:
                before = last.get(e.task)
                earlier = commits.get((step.resource, k - depth), [])
                if before is None or not all_before(tuple(earlier), (before,)):
                    return e, (
                        f"`{e.task}` waits for stage {e.stage} of `{step.resource}` in round "
                        f"{e.round} (#{step.id}, line {step.location.line}) without the fill of "
                        f"round {e.round - 1} ordered before it: a skipping consumer can get "
                        "there first, and the wait's parity test passes on that older phase"
                    )
        last[e.task] = m
    return None
