"""Whole-kernel checks: equal bracket counts for all valuations, no deadlock, no race.

Two steps.

1. **Counts** (:mod:`ts_verify.counting`): for every pipelined resource, every task that opens its
   brackets must do so equally often as a polynomial in the unknowns. This is a proof for every
   trip count, condition and skip pattern; a difference becomes a witness valuation.
2. **Ordering** (:mod:`ts_verify.simulate`): with counts equal, what remains are deadlocks from
   the order of operations and the ring capacities, and races from wrong arrival counts. The
   tasks form a Kahn process network, so one run per valuation decides a valuation. The
   valuations checked are a cut-off set: every loop class takes trip counts 0, 1, 2, ``C - 1``
   and ``C``, where ``C`` is the largest slack of a cycle of tasks and rings (its stages plus
   its tasks, see :func:`cycle_slack`) plus 2, times the longest ``Every`` period, plus the
   latest ``Every`` start; 0 to 3 work tiles, with per-tile values and conditions varied over
   the first two tiles and every skip pattern of them. Why this suffices: every loop body is
   balanced (checked per task), so from one iteration to the next a loop carries only how far
   producers run ahead of consumers, which the rings bound; a deadlock needs the tasks of a
   cycle to get ahead of each other by more than the cycle's capacity, which happens within
   ``C`` iterations or never, and longer loops repeat iterations already checked. Tiles carry
   ring state the same way, and two tiles expose every tile-to-tile hand-off. The test suite
   checks this claim against a brute-force interleaving oracle over larger trip counts on
   random chains, forks, merges, diamonds and rings. A failure is shrunk to the smallest trip
   counts that still fail, so the reported interleaving is short.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Hashable, Iterator

from ts_ir import (
    ConditionalBlock,
    DomainLoop,
    Every,
    KernelPlan,
    Node,
    OpaqueCondition,
    Role,
    Skippable,
    TaskSpec,
    WorkTileLoop,
    iter_nodes,
)
from ts_verify.counting import Polynomial, count_polynomial, evaluate
from ts_verify.diagnostics import Diagnostic, Trace
from ts_verify.kernel_checks import steps_by_resource, tasks_touching
from ts_verify.simulate import Outcome, simulate
from ts_verify.unroll import Valuation, is_per_tile, loop_key, unroll

__all__ = ["check_counts", "check_runs", "cycle_slack", "run_valuation", "valuations"]

_OPENS = {Role.PRODUCER: "ProducerAcquire", Role.CONSUMER: "ConsumerWait"}


def _opens(plan: KernelPlan, resource: str, users: tuple[TaskSpec, ...]) -> dict[str, Polynomial]:
    out = {}
    for t in users:
        steps = steps_by_resource(t).get(resource, ())
        for role, stage in _OPENS.items():
            # Every task that runs this side's pipeline ops takes part, even one whose count is
            # identically 0 (say, a loop of 0 iterations): the others must then be 0 too.
            if any(s.stage.role is role and s.stage.is_pipeline_op for s in steps):
                out[f"{t.name} ({role.value})"] = count_polynomial(t.schedule, resource, [stage])
    return out


def _factor_values(
    poly_factors: set[str], trip: int, cond: bool, kept: bool, tiles: int
) -> dict[str, int]:
    values: dict[str, int] = {"tiles": tiles, "kept": int(kept)}
    for f in poly_factors:
        kind, _, rest = f.partition(" ")
        if kind == "trip":
            values[f] = trip
        elif kind == "nonempty":
            values[f] = int(trip > 0)
        elif kind == "cond":
            values[f] = int(cond)
        elif kind == "every":
            period, start, _ = rest.split(" ", 2)
            values[f] = sum(1 for i in range(trip) if Every(int(period), int(start)).fires(i, trip))
    return values


def _witness(polys: dict[str, Polynomial]) -> tuple[str, dict[str, int]]:
    factors = {f for p in polys.values() for m in p for f in m}
    for tiles, trip, cond, kept in itertools.product(
        (1, 2), range(6), (True, False), (True, False)
    ):
        values = _factor_values(factors, trip, cond, kept, tiles)
        counts = {name: evaluate(p, values) for name, p in polys.items()}
        if len(set(counts.values())) > 1:
            parts = []
            if any(f.startswith(("trip", "nonempty", "every")) for f in factors):
                parts.append(f"every non-constant loop runs {trip} times")
            if any(f.startswith("cond") for f in factors):
                parts.append(f"every condition is {cond}")
            if "kept" in factors:
                parts.append("tiles are " + ("kept" if kept else "skipped"))
            if "tiles" in factors:
                parts.append(f"{tiles} work tile(s)")
            return "; ".join(parts) or "always", counts
    return "some valuation", {}


def check_counts(plan: KernelPlan) -> list[Diagnostic]:
    """TS-V301 for every resource whose tasks open its brackets unequally often."""
    out = []
    touching = tasks_touching(plan)
    for res in plan.resources:
        if res.pipeline is None:
            continue
        polys = _opens(plan, res.name, touching.get(res.name, ()))
        if len({tuple(sorted(p.items())) for p in polys.values()}) <= 1:
            continue
        when, counts = _witness(polys)
        detail = ", ".join(f"{name} {n}x" for name, n in counts.items())
        task = next(iter(polys)).split(" ")[0]
        first = next((s for s in plan.task(task).schedule.steps() if s.resource == res.name), None)
        out.append(
            Diagnostic(
                "TS-V301",
                f"the tasks on `{res.name}` open its stages unequally often; when {when}: "
                f"{detail}. The side that runs more often waits forever (or overruns the ring)",
                task=task,
                resource=res.name,
                step="" if first is None else f"#{first.id} {first.describe()}",
                location=None if first is None else first.location,
            )
        )
    return out


_CYCLE_SEARCH_LIMIT = 20000


def _ring_edges(plan: KernelPlan) -> list[tuple[str, str, int]]:
    """(task, task, stages) for every producer/consumer pair of every ring."""
    edges: list[tuple[str, str, int]] = []
    users = tasks_touching(plan)
    for res in plan.resources:
        if res.pipeline is None:
            continue
        touching = {t.name: steps_by_resource(t).get(res.name, ()) for t in users.get(res.name, ())}
        producers = [
            t
            for t, st in touching.items()
            if any(s.stage.role is Role.PRODUCER and s.stage.is_pipeline_op for s in st)
        ]
        consumers = [
            t
            for t, st in touching.items()
            if any(s.stage.role is Role.CONSUMER and s.stage.is_pipeline_op for s in st)
        ]
        edges.extend((p, c, res.pipeline.stages) for p in producers for c in consumers)
    return edges


def cycle_slack(plan: KernelPlan) -> int:
    """The largest slack of any cycle of tasks and rings: its stages plus its tasks.

    Tasks are nodes and rings are edges between their producers and consumers. A deadlock
    needs tasks on a cycle of such edges to run ahead of each other by more than the cycle's
    capacity, so the cycle with the most stages and tasks bounds the trip count at which a
    deadlock first appears. Two tasks sharing one ring form the smallest cycle. The search is
    exhaustive on the small graphs kernels have; on a huge one it falls back to the slack of
    the whole kernel (all stages plus all tasks), which bounds every cycle.
    """
    edges = _ring_edges(plan)
    total = sum(w for _, _, w in edges) + len(plan.tasks)
    adjacent: dict[str, list[tuple[int, str, int]]] = {}
    for i, (a, b, w) in enumerate(edges):
        adjacent.setdefault(a, []).append((i, b, w))
        if b != a:
            adjacent.setdefault(b, []).append((i, a, w))
    best = max((w + (1 if a == b else 2) for a, b, w in edges), default=0)
    budget = _CYCLE_SEARCH_LIMIT

    def walk(
        start: str, node: str, seen: frozenset[str], used: frozenset[int], weight: int
    ) -> None:
        nonlocal best, budget
        for i, other, w in adjacent.get(node, ()):
            budget -= 1
            if budget < 0 or i in used:
                continue
            if other == start:
                best = max(best, weight + w + len(seen))
            elif other not in seen and other > start:
                walk(start, other, seen | {other}, used | {i}, weight + w)

    for start in sorted(adjacent):
        walk(start, start, frozenset({start}), frozenset(), 0)
    return total if budget < 0 else best


def _loops(plan: KernelPlan) -> dict[str, tuple[bool, int]]:
    """Every non-constant loop class: (per tile?, cut-off trip count).

    The cut-off is the largest cycle slack (:func:`cycle_slack`) plus 2, scaled by the longest
    ``Every`` period (a guarded bracket advances once per period) and shifted by the latest
    ``Every`` start.
    """
    period, start = 1, 0
    for t in plan.tasks:
        for node, _ in iter_nodes(t.schedule.body):
            if isinstance(node, ConditionalBlock) and isinstance(node.guard, Every):
                period = max(period, node.guard.period)
                start = max(start, node.guard.start)
    reach = (cycle_slack(plan) + 2) * period + start
    classes: dict[str, tuple[bool, int]] = {}
    for t in plan.tasks:
        for node, _ in iter_nodes(t.schedule.body):
            if not isinstance(node, DomainLoop) or node.static_trip_count() is not None:
                continue
            key = loop_key(node)
            old = classes.get(key, (False, 0))
            classes[key] = (old[0] or is_per_tile(node), reach)
    return classes


def _conditions(plan: KernelPlan) -> list[Hashable]:
    keys: list[Hashable] = []
    for t in plan.tasks:
        for node, _ in iter_nodes(t.schedule.body):
            guard = node.guard if isinstance(node, ConditionalBlock) else None
            if isinstance(guard, OpaqueCondition) and guard.key not in keys:
                keys.append(guard.key)
    return keys


def _has(plan: KernelPlan, kind: type) -> bool:
    def match(n: Node) -> bool:
        if kind is Skippable:
            return isinstance(n, ConditionalBlock) and isinstance(n.guard, Skippable)
        return isinstance(n, kind)

    return any(match(n) for t in plan.tasks for n, _ in iter_nodes(t.schedule.body))


def valuations(plan: KernelPlan) -> Iterator[Valuation]:
    """The cut-off set of valuations, smallest first (see the module docstring)."""
    loops = _loops(plan)
    conds = _conditions(plan)
    persistent = _has(plan, WorkTileLoop)
    skips = _has(plan, Skippable)
    trip_sets = {k: sorted({0, 1, 2, reach - 1, reach}) for k, (_, reach) in loops.items()}
    found: list[tuple[int, Valuation]] = []
    for tiles in (0, 1, 2, 3) if persistent else (1,):
        varied = min(tiles, 2) if persistent else 0
        slots = [
            (k, t)
            for k, (per_tile, _) in loops.items()
            for t in (range(varied) if per_tile and varied else [-1])
        ]
        cond_slots = [(c, t) for c in conds for t in range(max(varied, 1))]
        for trips in itertools.product(*(trip_sets[k] for k, _ in slots)):
            for values in itertools.product((False, True), repeat=len(cond_slots)):
                for skipped in _skip_sets(varied, skips):
                    trip_map = dict(zip(slots, trips, strict=True))
                    if persistent and tiles > varied:
                        trip_map = _extend(trip_map, loops, tiles)
                    cond_map = dict(zip(cond_slots, values, strict=True))
                    cond_map.update(
                        {
                            (c, t): cond_map.get((c, 0), False)
                            for c in conds
                            for t in range(varied, tiles)
                        }
                    )
                    val = Valuation(tiles, trip_map, cond_map, frozenset(skipped))
                    found.append((tiles + sum(trips) + len(skipped), val))
    found.sort(key=lambda x: x[0])
    return (v for _, v in found)


def _extend(
    trip_map: dict[tuple[str, int], int], loops: dict[str, tuple[bool, int]], tiles: int
) -> dict[tuple[str, int], int]:
    out = dict(trip_map)
    for key, (per_tile, _) in loops.items():
        if per_tile:
            for t in range(tiles):
                out.setdefault((key, t), out.get((key, 0), 0))
    return out


def _skip_sets(varied: int, skips: bool) -> list[tuple[int, ...]]:
    if not skips:
        return [()]
    return [c for n in range(varied + 1) for c in itertools.combinations(range(varied), n)]


def _diagnostic(plan: KernelPlan, val: Valuation, outcome: Outcome) -> Diagnostic:
    trace = Trace(
        val.describe(),
        tuple(outcome.events),
        tuple(outcome.blocked),
        tuple(b for b in outcome.barriers if b.completed or b.arrivals or b.tx_bytes),
    )
    task, op = outcome.culprit if outcome.culprit else ("", None)
    step = op.step if op is not None else None
    code = {"deadlock": "TS-V302", "race": "TS-V303"}.get(outcome.kind, "TS-V301")
    what = {"deadlock": "the kernel deadlocks", "race": "the kernel races"}.get(
        outcome.kind, "the brackets do not match up"
    )
    return Diagnostic(
        code,
        f"{what}: {outcome.message}",
        task=task,
        resource="" if step is None else step.resource,
        step="" if step is None else f"#{step.id} {step.describe()}",
        location=None if step is None else step.location,
        trace=trace,
    )


def run_valuation(plan: KernelPlan, val: Valuation) -> Outcome:
    """Run every task of ``plan`` under ``val`` against the barrier model."""
    programs = {
        t.name: [
            op
            for op in unroll(t.schedule, val)
            if op.step.stage.is_pipeline_op or not op.step.is_auxiliary
        ]
        for t in plan.tasks
    }
    return simulate(plan, programs)


def _shrink(plan: KernelPlan, val: Valuation, outcome: Outcome) -> tuple[Valuation, Outcome]:
    """Lower each trip count of a failing valuation to the smallest that still fails.

    The cut-off set jumps from small trip counts to the kernel's slack; a counterexample is
    clearer (and its interleaving shorter) at the smallest trip count that shows it.
    """
    for key in sorted(val.trips):
        for smaller in range(val.trips[key]):
            trips = {**val.trips, key: smaller}
            candidate = dataclasses.replace(val, trips=trips)
            result = run_valuation(plan, candidate)
            if result.kind == outcome.kind:
                val, outcome = candidate, result
                break
    return val, outcome


def check_runs(plan: KernelPlan) -> tuple[list[Diagnostic], dict[str, float]]:
    """Simulate every cut-off valuation; the first failure, shrunk, is reported."""
    runs = events = 0
    # Every valuation of the cut-off set runs: stopping early would claim a proof not made.
    for val in valuations(plan):
        outcome = run_valuation(plan, val)
        runs += 1
        events += len(outcome.events)
        if outcome.kind != "ok":
            val, outcome = _shrink(plan, val, outcome)
            return [_diagnostic(plan, val, outcome)], {"runs": runs, "events": events}
    return [], {"runs": runs, "events": events}
