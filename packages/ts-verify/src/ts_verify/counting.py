"""Symbolic operation counts: do all tasks on a pipeline run it equally often, always?

How often a step runs is a polynomial in the plan's symbols (:mod:`ts_verify.symbols`). Each
monomial is a coefficient times a product of *factors*:

* ``tiles`` — once per work tile (a sum over tiles of the per-tile product that follows);
* ``trip L`` — the trip count of loop class ``L``; ``nonempty L`` — 1 when it runs at all (a
  first/last-iteration block); ``every p s L`` — how often ``Every(p, s)`` fires in it;
  ``above s L`` — 1 when it runs more than ``s`` times. A loop with a run-time end, a constant
  start ``s >= 0`` and step ``t > 0`` other than ``(0, 1)`` is counted through the loop
  ``L = domain_loop(0, end, 1)``: its trips are ``every t s L``, its ``Every(p, j)`` blocks
  fire ``every (p t) (s + j t) L`` times, and it runs at all ``above s L`` times;
* ``cond K@S`` — the runtime condition ``K`` in scope ``S`` (``kernel`` or ``tile``);
  ``when_false`` is ``1 - cond``;
* ``kept P`` — the work tile is not rejected by the skip predicate ``P``.

Constant loops multiply the coefficient (their ``Every`` counts exactly). Two polynomials are
compared as *functions* of the symbols, not by shape: ``every(2) + every(2, start=1)`` equals
``trip`` and is recognised as such. :func:`difference_witness` decides whether a difference is
identically zero for every valuation and, if not, finds the smallest valuation that shows it.

Why the decision is exact and polynomial: every factor is a function of one symbol. For a trip
count ``n`` each such function (and each product of them) is, past ``n0 = max start + 1``, a
polynomial in ``q`` on every residue class ``n = P q + r`` (``P`` the lcm of the periods), of
degree at most ``d`` (the factors of one symbol in one monomial). So a combination of them is
zero for every ``n`` iff it is zero on ``n < n0 + (d + 1) P``. Per symbol the functions that
occur are written in a basis of their value vectors on that window (Gaussian elimination); a
polynomial in several symbols is then a sum of tensor products of basis coordinates, which is
zero iff every coordinate is. The work is linear in the monomials times (basis size) to the
power of the nesting depth, never exponential in the number of symbols. The sum over work tiles
is zero for every tile count and every per-tile valuation iff the part outside the tiles and
the per-tile part are each zero (take no tile, then one).
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from fractions import Fraction

from ts_ir import (
    ConditionalBlock,
    ConstBound,
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

__all__ = [
    "MAX_WINDOW",
    "Polynomial",
    "count_polynomial",
    "difference_witness",
    "evaluate",
    "every_count",
    "factor_symbol",
    "loop_base",
]

Monomial = tuple[str, ...]
Polynomial = dict[Monomial, int]

MAX_WINDOW = 1 << 16
"""Largest value window per symbol (``n0 + (d + 1) * lcm of periods``) the proof evaluates."""


def every_count(period: int, start: int, n: int) -> int:
    """How often ``Every(period, start)`` fires in a loop of ``n`` iterations (O(1))."""
    return 0 if n <= start else (n - start + period - 1) // period


def _mul(poly: Polynomial, factor: str | None, coeff: int = 1) -> Polynomial:
    out: Counter[Monomial] = Counter()
    for mono, c in poly.items():
        new = mono if factor is None else tuple(sorted((*mono, factor)))
        out[new] += c * coeff
    return {m: c for m, c in out.items() if c}


def _add(a: Polynomial, b: Polynomial, sign: int = 1) -> Polynomial:
    out: Counter[Monomial] = Counter(a)
    for m, c in b.items():
        out[m] += sign * c
    return {m: c for m, c in out.items() if c}


def _const_fires(guard: IterationPredicate, n: int) -> int:
    if isinstance(guard, (FirstIteration, LastIteration)):
        return 1 if n > 0 else 0
    if isinstance(guard, Every):
        return every_count(guard.period, guard.start, n)
    return sum(1 for i in range(n) if guard.fires(i, n))


Counts = tuple[Polynomial, Polynomial]
"""How often steps run: ``(per pass over the nodes, over the whole enclosing loop)``.

Iteration-predicate blocks count their firings over the whole domain loop they belong to,
also when they sit inside a ``skippable()`` or condition block in that loop (those are
constant within a work tile, so they scale both parts alike); the rest of a loop body runs
once per iteration.
"""


class _Counter:
    def __init__(self, want: frozenset[tuple[str, str]]) -> None:
        self.want = want

    def count(
        self, nodes: tuple[Node, ...], loop: DomainLoop | None, scope: str, skip_if: str
    ) -> Polynomial:
        return _add(*self.counts(nodes, loop, scope, skip_if))

    def counts(
        self, nodes: tuple[Node, ...], loop: DomainLoop | None, scope: str, skip_if: str
    ) -> Counts:
        per: Polynomial = {}
        whole: Polynomial = {}
        for node in nodes:
            if isinstance(node, Step):
                if (node.resource, node.stage.value) in self.want:
                    per = _add(per, {(): 1})
            elif isinstance(node, DomainLoop):
                body, fired = self.counts(node.body, node, scope, skip_if)
                n = node.static_trip_count()
                iters = _mul(body, None, n) if n is not None else _mul(body, _trips(node))
                per = _add(per, _add(iters, fired))
            elif isinstance(node, WorkTileLoop):
                body = self.count(node.body, loop, "tile", node.skip_if or "")
                per = _add(per, _mul(body, "tiles"))
            else:
                p, w = self.block(node, loop, scope, skip_if)
                per, whole = _add(per, p), _add(whole, w)
        return per, whole

    def block(
        self, node: ConditionalBlock, loop: DomainLoop | None, scope: str, skip_if: str
    ) -> Counts:
        guard = node.guard
        if isinstance(guard, Skippable):
            p, w = self.counts(node.body, loop, scope, skip_if)
            return _mul(p, f"kept {skip_if}"), _mul(w, f"kept {skip_if}")
        if isinstance(guard, OpaqueCondition):
            p, w = self.counts(node.body, loop, scope, skip_if)
            cond = f"cond {guard.key}@{scope}"
            if guard.negated:
                return _add(p, _mul(p, cond), -1), _add(w, _mul(w, cond), -1)
            return _mul(p, cond), _mul(w, cond)
        assert isinstance(guard, IterationPredicate) and loop is not None  # ts-trace checks it
        # The block's body runs once per firing; nested loops inside it multiply as usual.
        body = self.count(node.body, loop, scope, skip_if)
        n = loop.static_trip_count()
        if n is not None:
            return {}, _mul(body, None, _const_fires(guard, n))
        key = loop_key(loop)
        base = loop_base(loop)
        if isinstance(guard, Every):
            if base is not None:
                # The firing iterations are those of domain_loop(s + j t, end, p t).
                key, start, step = base
                return {}, _mul(
                    body, f"every {guard.period * step} {start + guard.start * step} {key}"
                )
            if guard.period == 1 and guard.start == 0:
                return {}, _mul(body, f"trip {key}")
            return {}, _mul(body, f"every {guard.period} {guard.start} {key}")
        if base is not None:
            return {}, _mul(body, f"above {base[1]} {base[0]}")
        return {}, _mul(body, f"nonempty {key}")


def loop_base(loop: DomainLoop) -> tuple[str, int, int] | None:
    """``(class of domain_loop(0, end, 1), start, step)`` for a loop to count through it.

    A loop with a run-time ``end``, a constant ``start >= 0`` and a constant ``step > 0`` runs
    ``every_count(step, start, n)`` times, ``n`` the trips of ``domain_loop(0, end, 1)`` (the
    end's value, or 0): so it is counted as that function of that loop's symbol, and loops
    that split one end in different ways (``domain_loop(0, n, 2)``, ``domain_loop(1, n, 2)``
    and ``every(2, start=j)`` blocks of ``domain_loop(n)``) are related exactly. None for the
    base loop itself and for every other loop (a class of its own, :mod:`ts_verify.symbols`).
    """
    start, step = loop.start, loop.step
    if isinstance(loop.end, ConstBound) or not isinstance(start, ConstBound):
        return None
    if not isinstance(step, ConstBound) or start.value < 0 or step.value <= 0:
        return None
    if (start.value, step.value) == (0, 1):
        return None
    base = dataclasses.replace(loop, start=ConstBound(0), step=ConstBound(1), body=())
    return loop_key(base), start.value, step.value


def _trips(loop: DomainLoop) -> str:
    """The factor of a run-time loop's trip count (through its base loop where it has one)."""
    base = loop_base(loop)
    if base is None:
        return f"trip {loop_key(loop)}"
    key, start, step = base
    return f"every {step} {start} {key}"


def count_polynomial(schedule: Schedule, resource: str, stages: Iterable[str]) -> Polynomial:
    """How often ``schedule`` runs ``stages`` (ScheduleStage values) on ``resource``."""
    want = frozenset((resource, s) for s in stages)
    return _Counter(want).count(schedule.body, None, "kernel", "")


# -- symbols and their value windows ----------------------------------------------------------
def factor_symbol(factor: str) -> str:
    """The symbol a factor depends on: ``loop L``, ``cond K@S``, ``kept P`` or ``tiles``."""
    kind, _, rest = factor.partition(" ")
    if kind in ("trip", "nonempty"):
        return f"loop {rest}"
    if kind == "every":
        return "loop " + rest.split(" ", 2)[2]
    if kind == "above":
        return "loop " + rest.split(" ", 1)[1]
    return factor if kind != "tiles" else "tiles"


def _factor_value(factor: str, n: int) -> int:
    kind, _, rest = factor.partition(" ")
    if kind == "trip":
        return n
    if kind == "nonempty":
        return int(n > 0)
    if kind == "above":
        return int(n > int(rest.split(" ", 1)[0]))
    if kind == "every":
        period, start, _ = rest.split(" ", 2)
        return every_count(int(period), int(start), n)
    return n  # cond, kept, tiles: the symbol's own 0/1 (or count) value


def _window(symbol: str, factor_sets: Iterable[tuple[str, ...]]) -> int:
    """Values of ``symbol`` that decide every combination of its factor products."""
    if not symbol.startswith("loop "):
        return 2
    period, start, degree = 1, 0, 1
    for factors in factor_sets:
        degree = max(degree, len(factors))
        for f in factors:
            if f.startswith("every "):
                p, s, _ = f.split(" ", 3)[1:]
                period = math.lcm(period, int(p))
                start = max(start, int(s))
            elif f.startswith("above "):
                start = max(start, int(f.split(" ", 2)[1]))
    return min(start + 1 + (degree + 1) * period, MAX_WINDOW)


def _split(mono: Monomial) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for f in mono:
        out.setdefault(factor_symbol(f), []).append(f)
    return {k: tuple(v) for k, v in out.items()}


def _value(factors: tuple[str, ...], n: int) -> int:
    return math.prod(_factor_value(f, n) for f in factors)


class _Basis:
    """Coordinates of one symbol's factor products in a basis of their value vectors."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.rows: list[tuple[list[Fraction], int]] = []  # (reduced value vector, pivot)
        self.cache: dict[tuple[str, ...], dict[int, Fraction]] = {}
        self.coords(())  # the constant 1 is basis vector 0

    def coords(self, factors: tuple[str, ...]) -> dict[int, Fraction]:
        hit = self.cache.get(factors)
        if hit is not None:
            return hit
        vec = [Fraction(_value(factors, n)) for n in range(self.size)]
        combo: dict[int, Fraction] = {}
        for i, (row, pivot) in enumerate(self.rows):
            if vec[pivot]:
                scale = vec[pivot] / row[pivot]
                vec = [a - scale * b for a, b in zip(vec, row, strict=True)]
                combo[i] = combo.get(i, Fraction(0)) + scale
        pivot = next((k for k, a in enumerate(vec) if a), -1)
        if pivot >= 0:
            combo[len(self.rows)] = Fraction(1)
            self.rows.append((vec, pivot))
        # Each row is zero at the pivots of the rows before it, so reducing in order leaves a
        # residual zero at every pivot: `combo` is the unique expression in the rows.
        out = {k: v for k, v in combo.items() if v}
        self.cache[factors] = out
        return out


def _is_zero(poly: Polynomial) -> bool:
    if not poly:
        return True
    split = {m: _split(m) for m in poly}
    symbols = sorted({s for parts in split.values() for s in parts})
    bases = {
        s: _Basis(_window(s, (parts[s] for parts in split.values() if s in parts))) for s in symbols
    }
    # Index 0 of every symbol is the constant 1, left out of the keys: a monomial without a
    # symbol and one with a factor equal to 1 land on the same coordinate.
    tensor: dict[tuple[tuple[str, int], ...], Fraction] = {}
    for mono, coeff in poly.items():
        entries: list[tuple[tuple[tuple[str, int], ...], Fraction]] = [((), Fraction(coeff))]
        for s, factors in sorted(split[mono].items()):
            coords = bases[s].coords(factors)
            entries = [
                ((*key, (s, i)) if i else key, c * v)
                for key, c in entries
                for i, v in coords.items()
            ]
        for key, c in entries:
            tensor[key] = tensor.get(key, Fraction(0)) + c
    return not any(tensor.values())


def _substitute(poly: Polynomial, symbol: str, value: int) -> Polynomial:
    out: Counter[Monomial] = Counter()
    for mono, coeff in poly.items():
        keep = tuple(f for f in mono if factor_symbol(f) != symbol)
        gone = tuple(f for f in mono if factor_symbol(f) == symbol)
        factor = _value(gone, value) if gone else 1
        if factor:
            out[keep] += coeff * factor
    return {m: c for m, c in out.items() if c}


def _tile_parts(poly: Polynomial) -> tuple[Polynomial, Polynomial]:
    outside = {m: c for m, c in poly.items() if "tiles" not in m}
    per_tile = {tuple(f for f in m if f != "tiles"): c for m, c in poly.items() if "tiles" in m}
    return outside, per_tile


def difference_witness(a: Polynomial, b: Polynomial) -> dict[str, int] | None:
    """None when ``a`` and ``b`` agree for every valuation; else the smallest one that differs.

    The witness maps symbols (``tiles``, ``loop L``, ``cond K@S``, ``kept P``) to values; it is
    found one symbol at a time, each at the smallest value that keeps a difference possible.
    """
    diff = _add(a, b, -1)
    outside, per_tile = _tile_parts(diff)
    if _is_zero(outside) and _is_zero(per_tile):
        return None
    tiles = 0 if not _is_zero(outside) else 1
    rest = outside if tiles == 0 else _add(outside, per_tile)
    witness = {"tiles": tiles} if per_tile else {}
    symbols = sorted({factor_symbol(f) for m in rest for f in m})
    for s in symbols:
        size = _window(s, (tuple(f for f in m if factor_symbol(f) == s) for m in rest))
        for v in range(size):
            candidate = _substitute(rest, s, v)
            if not _is_zero(candidate):
                witness[s] = v
                rest = candidate
                break
    return witness


def evaluate(poly: Polynomial, values: Mapping[str, int]) -> int:
    """The polynomial's value with every symbol given (per-tile symbols uniform over tiles)."""
    total = 0
    for mono, coeff in poly.items():
        term = coeff
        for factor in mono:
            sym = factor_symbol(factor)
            term *= _factor_value(factor, values.get(sym, 0))
        total += term
    return total
