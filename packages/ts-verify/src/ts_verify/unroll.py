"""Concrete runs of schedules: a valuation of the runtime unknowns and the flat op sequence.

A :class:`Valuation` fixes everything a schedule leaves to run time: the number of work tiles,
the trip count of every loop whose bounds are not constants (per tile for per-tile getters),
the value of every opaque condition per tile, and which tiles are skipped. :func:`unroll` turns
one task's schedule into the sequence of pipeline operations it performs under a valuation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterator, Mapping

from ts_ir import (
    ConditionalBlock,
    ConstBound,
    DomainLoop,
    DynamicBound,
    IterationPredicate,
    Node,
    OpaqueCondition,
    Schedule,
    Skippable,
    Step,
    WorkTileLoop,
)
from ts_verify.symbols import bound_symbol

__all__ = ["Op", "TileCache", "Valuation", "is_per_tile", "loop_key", "unroll"]


def loop_key(loop: DomainLoop) -> str:
    """The class of a loop: loops with the same bound symbols have the same trip count.

    See :mod:`ts_verify.symbols` for when two runtime bounds are the same symbol.
    """
    return ", ".join(bound_symbol(b) for b in (loop.start, loop.end, loop.step))


def is_per_tile(loop: DomainLoop) -> bool:
    """True when a bound is computed per work tile."""
    return any(isinstance(b, DynamicBound) for b in (loop.start, loop.end, loop.step))


@dataclasses.dataclass(frozen=True)
class Valuation:
    """Values for everything a schedule decides at run time.

    Attributes:
        tiles: Work tiles each persistent task iterates.
        trips: Trip count per loop class (``loop_key``) and tile (-1: outside the tile loop).
        conditions: Value per opaque-condition key and tile.
        skipped: Tiles that every skip predicate rejects.
        skips: Per ``(skip_if predicate, tile)``: whether that predicate rejects the tile
            (overrides ``skipped``; different predicates are independent).
    """

    tiles: int = 1
    trips: Mapping[tuple[str, int], int] = dataclasses.field(default_factory=dict)
    conditions: Mapping[tuple[Hashable, int], bool] = dataclasses.field(default_factory=dict)
    skipped: frozenset[int] = frozenset()
    skips: Mapping[tuple[str, int], bool] = dataclasses.field(default_factory=dict)
    # Constant trip counts too long to run, by loop class: replaced by an equivalent shorter
    # count (same residue, past the cut-off; see ts_verify.whole_kernel).
    static_trips: Mapping[str, int] = dataclasses.field(default_factory=dict)

    def is_skipped(self, predicate: str, tile: int) -> bool:
        """Whether ``predicate`` rejects ``tile``."""
        return self.skips.get((predicate, tile), tile in self.skipped)

    def trip(self, loop: DomainLoop, tile: int) -> int:
        """The trip count of ``loop`` in ``tile``."""
        n = loop.static_trip_count()
        if n is not None:
            return self.static_trips.get(loop_key(loop), n) if self.static_trips else n
        key = loop_key(loop)
        return self.trips.get((key, tile if is_per_tile(loop) else -1), 0)

    def describe(self) -> tuple[tuple[str, str], ...]:
        """Readable ``(name, value)`` pairs for reports."""
        out = [("work tiles", str(self.tiles))] if self.tiles != 1 else []
        per: dict[str, list[str]] = {}
        for (key, tile), n in sorted(self.trips.items(), key=lambda kv: (kv[0][0], kv[0][1])):
            per.setdefault(f"trips of domain_loop({key})", []).append(
                str(n) if tile < 0 else f"tile {tile}: {n}"
            )
        out.extend((k, ", ".join(v)) for k, v in per.items())
        for (cond, tile), value in sorted(self.conditions.items(), key=lambda kv: str(kv[0])):
            out.append((f"{cond} (tile {tile})", str(value)))
        if self.skipped:
            out.append(("skipped tiles", ", ".join(map(str, sorted(self.skipped)))))
        by_pred: dict[str, list[str]] = {}
        for (pred, tile), skip in sorted(self.skips.items()):
            if skip:
                by_pred.setdefault(f"tiles {pred} skips", []).append(str(tile))
        out.extend((k, ", ".join(v)) for k, v in by_pred.items())
        return tuple(out)


@dataclasses.dataclass(frozen=True)
class Op:
    """One operation of a concrete run.

    Attributes:
        step: The schedule step.
        context: Where in the loops it runs, e.g. ``tile 1, i=3``.
    """

    step: Step
    context: str


# Ops of one work tile, by (tile loop, the valuation's part that the tile reads, keep filter).
TileCache = dict[Hashable, list[Op]]


def _tile_signature(val: Valuation, tile: int) -> Hashable:
    """Everything of ``val`` that the body of a work-tile loop reads in ``tile``."""
    mine = (tile, -1)
    return (
        tile,
        frozenset(kv for kv in val.trips.items() if kv[0][1] in mine),
        frozenset(kv for kv in val.conditions.items() if kv[0][1] in mine),
        tile in val.skipped,
        frozenset(kv for kv in val.skips.items() if kv[0][1] == tile),
        frozenset(val.static_trips.items()),
    )


def _walk(
    nodes: tuple[Node, ...],
    val: Valuation,
    tile: int,
    ctx: str,
    iters: tuple[int, int],
    skip_if: str = "",
    keep: Callable[[Step], bool] | None = None,
    cache: TileCache | None = None,
) -> Iterator[Op]:
    for node in nodes:
        if isinstance(node, Step):
            if keep is None or keep(node):
                yield Op(node, ctx)
        elif isinstance(node, DomainLoop):
            n = val.trip(node, tile)
            start = node.start.value if isinstance(node.start, ConstBound) else 0
            step = node.step.value if isinstance(node.step, ConstBound) else 1
            for i in range(n):
                inner = f"{ctx}, " if ctx else ""
                yield from _walk(
                    node.body, val, tile, f"{inner}i={start + i * step}", (i, n), skip_if, keep
                )
        elif isinstance(node, WorkTileLoop):
            for t in range(val.tiles):
                body = _walk(node.body, val, t, f"tile {t}", (0, 0), node.skip_if or "", keep)
                if cache is None:
                    yield from body
                    continue
                # Many valuations share a tile's values (the verifier tries every first tile
                # against every later one): each tile is unrolled once per distinct values.
                key = (id(node), id(keep), _tile_signature(val, t))
                ops = cache.get(key)
                if ops is None:
                    ops = cache[key] = list(body)
                yield from ops
        else:
            if _fires(node, val, tile, iters, skip_if):
                yield from _walk(node.body, val, tile, ctx, iters, skip_if, keep, cache)


def _fires(
    node: ConditionalBlock, val: Valuation, tile: int, iters: tuple[int, int], skip_if: str
) -> bool:
    guard = node.guard
    if isinstance(guard, IterationPredicate):
        return guard.fires(*iters)
    if isinstance(guard, OpaqueCondition):
        return val.conditions.get((guard.key, tile), False) != guard.negated
    if isinstance(guard, Skippable):
        return not val.is_skipped(skip_if, tile)
    raise TypeError(f"unknown guard {guard!r}")


def unroll(
    schedule: Schedule,
    val: Valuation,
    keep: Callable[[Step], bool] | None = None,
    cache: TileCache | None = None,
) -> list[Op]:
    """Every step ``schedule`` runs under ``val``, in program order.

    ``keep`` leaves out the steps it rejects; ``cache`` (one dict per schedule set, kept across
    valuations) reuses the ops of work tiles whose values were seen before.
    """
    return list(_walk(schedule.body, val, -1, "", (0, 0), "", keep, cache))
