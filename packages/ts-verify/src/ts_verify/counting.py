"""Symbolic operation counts: do all tasks on a pipeline run it equally often, always?

The number of times a step runs is a polynomial in the schedule's unknowns: the work-tile count,
the trip count of every non-constant loop, the iteration predicates that fire, the opaque
conditions and the skip flag. Each monomial is a product of *factors*:

* ``tiles`` — once per work tile (a sum over tiles of the per-tile product that follows);
* ``trip L`` — the trip count of loop class ``L``; ``nonempty L`` — 1 when it runs at all (the
  count of a first/last-iteration block); ``every p s L`` — how often ``Every(p, s)`` fires;
* ``cond K`` — the opaque condition ``K`` (``when_false`` is ``1 - cond K``);
* ``kept`` — the tile is not skipped.

Constant loops multiply the coefficient. Two tasks run a pipeline equally often for every
valuation exactly when their polynomials are equal, so comparing polynomials proves it for all
trip counts and conditions; a difference is turned into a concrete witness.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from ts_ir import (
    ConditionalBlock,
    DomainLoop,
    Every,
    FirstIteration,
    IterationPredicate,
    LastIteration,
    Node,
    OpaqueCondition,
    Schedule,
    Skippable,
    Step,
    WorkTileLoop,
)
from ts_verify.unroll import loop_key

__all__ = ["Polynomial", "count_polynomial", "evaluate"]

Monomial = tuple[str, ...]
Polynomial = dict[Monomial, int]

_BOOLEAN = ("nonempty ", "cond ", "kept", "every ")


def _mul(poly: Polynomial, factor: str | None, coeff: int = 1) -> Polynomial:
    out: Counter[Monomial] = Counter()
    for mono, c in poly.items():
        new = mono if factor is None else _normalize((*mono, factor))
        out[new] += c * coeff
    return {m: c for m, c in out.items() if c}


def _normalize(mono: Iterable[str]) -> Monomial:
    items = list(mono)
    booleans = {f for f in items if f.startswith(_BOOLEAN)}
    trips = [f for f in items if f not in booleans]
    # [n >= 1] * n == n: a nonempty factor adds nothing next to a trip of the same loop.
    booleans = {f for f in booleans if not (f.startswith("nonempty ") and f"trip {f[9:]}" in trips)}
    return tuple(sorted(trips)) + tuple(sorted(booleans))


def _add(a: Polynomial, b: Polynomial, sign: int = 1) -> Polynomial:
    out: Counter[Monomial] = Counter(a)
    for m, c in b.items():
        out[m] += sign * c
    return {m: c for m, c in out.items() if c}


def _const_fires(guard: object, n: int) -> int:
    if isinstance(guard, (FirstIteration, LastIteration)):
        return 1 if n > 0 else 0
    assert isinstance(guard, Every)
    return sum(1 for i in range(n) if guard.fires(i, n))


def _count(
    nodes: tuple[Node, ...], want: frozenset[tuple[str, str]], loop: DomainLoop | None
) -> Polynomial:
    total: Polynomial = {}
    for node in nodes:
        if isinstance(node, Step):
            if (node.resource, node.stage.value) in want:
                total = _add(total, {(): 1})
        elif isinstance(node, DomainLoop):
            # Iteration-predicate blocks count their firings over the whole loop (see _block);
            # only the rest of the body runs once per iteration.
            edges = tuple(n for n in node.body if _is_predicate_block(n))
            rest = tuple(n for n in node.body if not _is_predicate_block(n))
            body = _count(rest, want, node)
            n = node.static_trip_count()
            total = _add(
                total,
                _mul(body, None, n) if n is not None else _mul(body, f"trip {loop_key(node)}"),
            )
            total = _add(total, _count(edges, want, node))
        elif isinstance(node, WorkTileLoop):
            total = _add(total, _mul(_count(node.body, want, loop), "tiles"))
        else:
            total = _add(total, _block(node, want, loop))
    return total


def _is_predicate_block(node: Node) -> bool:
    return isinstance(node, ConditionalBlock) and isinstance(node.guard, IterationPredicate)


def _block(
    node: ConditionalBlock, want: frozenset[tuple[str, str]], loop: DomainLoop | None
) -> Polynomial:
    body = _count(node.body, want, loop)
    guard = node.guard
    if isinstance(guard, Skippable):
        return _mul(body, "kept")
    if isinstance(guard, OpaqueCondition):
        cond = _mul(body, f"cond {guard.key}")
        return _add(body, cond, -1) if guard.negated else cond
    assert loop is not None  # iteration predicates live in domain loops (ts-trace checks it)
    n = loop.static_trip_count()
    if n is not None:
        return _mul(body, None, _const_fires(guard, n))
    key = loop_key(loop)
    if isinstance(guard, Every) and guard.period == 1 and guard.start <= 1:
        # every(1) fires trip times, every(1, start=1) trip - [trip >= 1] times: written
        # with the loop's own factors, so that a lagged release balances the waits.
        trips = _mul(body, f"trip {key}")
        return trips if guard.start == 0 else _add(trips, _mul(body, f"nonempty {key}"), -1)
    if isinstance(guard, Every):
        return _mul(body, f"every {guard.period} {guard.start} {key}")
    return _mul(body, f"nonempty {key}")


def count_polynomial(schedule: Schedule, resource: str, stages: Iterable[str]) -> Polynomial:
    """How often ``schedule`` runs ``stages`` (ScheduleStage values) on ``resource``."""
    want = frozenset((resource, s) for s in stages)
    return _count(schedule.body, want, None)


def evaluate(poly: Polynomial, values: Mapping[str, int]) -> int:
    """The polynomial's value with every factor given (per-tile factors uniform over tiles)."""
    total = 0
    for mono, coeff in poly.items():
        term = coeff
        for factor in mono:
            term *= values.get(factor, 0)
        total += term
    return total
