"""Aliased SMEM never live together (TS-V210), decided by happens-before, not by declarations.

An alias group puts allocations of different phases at the same address; every allocation
belongs to one resource, and two resources of different phases must never be live at once.

* A pipelined resource's stage index ``k`` is *live* from each producer's ``k``-th
  ``acquire`` to each consumer's ``k``-th ``release``.
* A resource without a pipeline is live at each of its steps; a step that reads it
  asynchronously (``WorkAttr.ASYNC_READ``: a TMA store, a WGMMA) keeps it live until the
  task's next ``ASYNC_WAIT_ALL`` (or an ``ASYNC_WAIT_PRIOR`` after a newer asynchronous read),
  and for ever when there is none.

With the arrival counts right every barrier wait has a fixed enabling event: the ``k``-th
``acquire`` of a ring of ``S`` stages passes after every consumer's ``(k - S)``-th release,
the ``k``-th ``wait`` after every producer's ``k``-th commit. So the executions of one
valuation are exactly the orders of its events that respect *happens-before* (program order
plus those enabling edges, transitively), and two live intervals ``[a1, r1]``, ``[a2, r2]``
overlap in some execution iff neither ``r1`` happens before ``a2`` nor ``r2`` before ``a1``.
The dependency graph the user declares plays no part: it is a claim, not an order.

Happens-before is computed with vector clocks over one greedy run of the whole kernel (every
task, every ring: any ring can order two uses) per valuation, for every valuation of the
kernel's symbols up to the cut-off of :mod:`ts_verify.whole_kernel` taken with the whole
kernel's slack. Within a run, ``r1`` before ``a2`` only gets easier for later ``a2`` and
earlier ``r1`` (program order), so the pairs are swept with two pointers: linear in the
intervals, not quadratic.

*Two work tiles are enough* when the kernel's work tiles are independent
(:func:`ts_verify.whole_kernel.independent_tiles`: every ring operation inside the tile
loops, every tile balancing every ring) and every aliased resource is a ring. Take two
overlapping intervals in tiles ``t <= u`` of a longer run and remove every other tile. Program
order and each wait's enabling commit (same tile, by the balance) are kept; an acquire's
enabling release moves, if anything, to an earlier release of the same consumer, which
happens before the old one. So happens-before of the shorter run is contained in that of the
longer one, the two intervals still overlap, and the run of tiles ``(v_t, v_u)`` (one tile
when ``t = u``) shows it; it runs to the end, as the deadlock check proved for every
sequence of tiles.
"""

from __future__ import annotations

import dataclasses

from ts_ir import KernelPlan, ScheduleStage, WorkAttr
from ts_verify.clocks import Mark, all_before, clocks, ring_index
from ts_verify.diagnostics import Diagnostic, Trace
from ts_verify.simulate import simulate
from ts_verify.systems import System
from ts_verify.whole_kernel import (
    distinct_runs,
    independent_tiles,
    make_part,
    part_valuations,
    run_diagnostic,
    too_long_loop,
)

__all__ = ["alias_pairs", "check_aliasing"]

_ACQUIRE = ScheduleStage.ProducerAcquire
_RELEASE = ScheduleStage.ConsumerRelease


@dataclasses.dataclass(frozen=True)
class _Live:
    """One live interval: its opening events and its closing events (None: never closed)."""

    starts: tuple[Mark, ...]
    ends: tuple[Mark, ...] | None
    what: str


def alias_pairs(plan: KernelPlan) -> list[tuple[str, str]]:
    """Every pair of distinct resources whose allocations sit in different phases of a group."""
    owner = {a.name: r.name for r in plan.resources for a in r.smem}
    out: list[tuple[str, str]] = []
    for group in plan.smem_alias_groups:
        phases = [sorted({owner[a] for a in phase if a in owner}) for phase in group]
        for i, first in enumerate(phases):
            for second in phases[i + 1 :]:
                for a in first:
                    for b in second:
                        if a != b and (a, b) not in out and (b, a) not in out:
                            out.append((a, b))
    return out


def _intervals(marks: list[Mark], resource: str, stages: dict[str, int]) -> list[list[_Live]]:
    """The live intervals of ``resource`` in one run, as lists each in program order.

    A ring gives one list (index order: each task opens and closes the indices in order); a
    buffer without a pipeline one list per task (uses of two tasks are not ordered by it).
    """
    depth = stages.get(resource)
    if depth is not None:
        starts: dict[int, list[Mark]] = {}
        ends: dict[int, list[Mark]] = {}
        for m in marks:
            e = m.event
            if e.op.step.resource == resource and e.stage >= 0:
                if e.op.step.stage is _ACQUIRE:
                    starts.setdefault(ring_index(e, depth), []).append(m)
                elif e.op.step.stage is _RELEASE:
                    ends.setdefault(ring_index(e, depth), []).append(m)
        return [
            [
                _Live(
                    tuple(starts[k]),
                    tuple(ends[k]) if k in ends else None,
                    f"`{resource}` stage {k % depth} round {k // depth}",
                )
                for k in sorted(starts)
            ]
        ]
    by_task: dict[str, list[Mark]] = {}
    for m in marks:
        by_task.setdefault(m.event.task, []).append(m)
    out: list[list[_Live]] = []
    for task_marks in by_task.values():
        mine: list[_Live] = []
        for i, m in enumerate(task_marks):
            if m.event.op.step.resource != resource:
                continue
            end: tuple[Mark, ...] | None = (m,)
            if m.event.op.step.attrs & WorkAttr.ASYNC_READ:
                end = _async_end(task_marks[i + 1 :])
            mine.append(_Live((m,), end, f"`{resource}` used"))
        if mine:
            out.append(mine)
    return out


def _async_end(later: list[Mark]) -> tuple[Mark, ...] | None:
    """The task's step that retires an asynchronous read, or None (it may read for ever)."""
    newer = False
    for m in later:
        a = m.event.op.step.attrs
        if a & WorkAttr.ASYNC_WAIT_ALL or (a & WorkAttr.ASYNC_WAIT_PRIOR and newer):
            return (m,)
        newer = newer or bool(a & WorkAttr.ASYNC_READ)
    return None


def _overlap(first: list[_Live], second: list[_Live]) -> tuple[_Live, _Live] | None:
    """Two intervals, one of each list, that can overlap, or None.

    ``first[i]`` before ``second[j]`` stays true for smaller ``i`` and larger ``j`` (closing
    events earlier, opening ones later, in each task's program order); ``second[j]`` before
    ``first[i]`` for larger ``i`` and smaller ``j``. So for each ``j`` the ``i`` ordered
    before it form a prefix ``[0, lo)`` and those ordered after it a suffix ``[hi, n)``, both
    bounds growing with ``j`` (and ``lo <= hi``: no interval is both). There is an overlap
    iff some ``j`` leaves a gap, ``lo < hi``; two pointers find it in linear time.
    """
    lo = hi = 0
    for b in second:
        while lo < len(first) and all_before(first[lo].ends, b.starts):
            lo += 1
        hi = max(hi, lo)
        while hi < len(first) and not all_before(b.ends, first[hi].starts):
            hi += 1
        if lo < hi:
            return first[lo], b
    return None


def _describe(live: _Live) -> str:
    opened = ", ".join(f"{m.event.task} #{m.step_id}" for m in live.starts)
    if live.ends is None:
        return f"{live.what} (from {opened}, never retired)"
    closed = ", ".join(f"{m.event.task} #{m.step_id}" for m in live.ends)
    return f"{live.what} (from {opened} to {closed})"


def _conflict(pair: tuple[str, str], hit: tuple[_Live, _Live], trace: Trace) -> Diagnostic:
    first, second = hit
    # Point at the step that opens the later use: that is where the shared bytes get reused.
    at = max((first.starts[0], second.starts[0]), key=lambda m: m.index).event
    step = at.op.step
    return Diagnostic(
        "TS-V210",
        f"SMEM of `{pair[0]}` and `{pair[1]}` is aliased, but they can be live together: "
        f"{_describe(first)} and {_describe(second)}; neither ends before the other starts "
        "(program order and the barriers order them neither way)",
        task=at.task,
        resource=step.resource,
        step=f"#{step.id} {step.describe()}",
        location=step.location,
        fix="alias only buffers whose uses never overlap (one finished before the other "
        "starts, in every task), or give them separate SMEM",
        trace=trace,
    )


def _first_overlap(
    marks: list[Mark], pairs: list[tuple[str, str]], stages: dict[str, int]
) -> tuple[tuple[str, str], tuple[_Live, _Live]] | None:
    for pair in pairs:
        for first in _intervals(marks, pair[0], stages):
            for second in _intervals(marks, pair[1], stages):
                hit = _overlap(first, second)
                if hit is not None:
                    return pair, hit
    return None


def check_aliasing(plan: KernelPlan) -> tuple[list[Diagnostic], int]:
    """TS-V210 for the first aliased pair that can be live together, and the runs made.

    Runs the whole kernel for every valuation up to the cut-off (see the module docstring).
    A deadlock that only this longer run shows is reported as such.
    """
    pairs = alias_pairs(plan)
    if not pairs:
        return [], 0
    aliased = {r for pair in pairs for r in pair}
    stages = {r.name: r.pipeline.stages for r in plan.resources if r.pipeline is not None}
    rings = tuple(r.name for r in plan.resources if r.name in stages or r.name in aliased)
    system = System(rings, tuple(t.name for t in plan.tasks), cycle=False)
    part = make_part(plan, system, sum(stages.values()) + len(plan.tasks))
    too_long = too_long_loop(plan, part)
    if too_long is not None:
        return [too_long], 0
    tasks = {t.name: t for t in plan.tasks}
    two = aliased <= set(stages) and independent_tiles(part, tasks)
    runs = 0
    for val, programs in distinct_runs(part, tasks, part_valuations(part, 2 if two else None)):
        outcome = simulate(plan, programs)
        runs += 1
        if outcome.kind != "ok":
            return [run_diagnostic(val, outcome, system)], runs
        found = _first_overlap(clocks(outcome.records, stages), pairs, stages)
        if found is not None:
            trace = Trace(val.describe(), tuple(outcome.events), (), ())
            return [_conflict(found[0], found[1], trace)], runs
    return [], runs
