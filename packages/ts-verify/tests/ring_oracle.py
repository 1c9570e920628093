"""A brute-force oracle for random ring plans, written apart from ts-verify.

Plans are plain data (:class:`Gen`): rings with a depth, and per task a small tree of
:class:`Ops` (ring operations in order), :class:`Loop` (a constant or a runtime symbol as trip
count), :class:`When` (a guard: a runtime flag, ``every(period, start)``, first or last
iteration, ``skippable``) and :class:`Tiles` (the persistent loop over work tiles, with an
optional skip predicate). ``ring_oracle_plans`` generates them and lowers them to ts-ir for
the verifier; this module only interprets them. It imports nothing from ts-verify (nor from
ts-ir): its semantics are its own.

**Valuations.** Every runtime symbol of the plan (``n``, ``m``) takes every value
``0..max_trip``. A non-persistent plan gives every flag one value for the whole kernel (both
are tried). A persistent plan has ``T`` work tiles, ``T`` in ``0..max_tiles``; every task
processes every tile in order; every flag key and every skip predicate has one value *per
tile*, every per-tile bound (a getter, ``@k``) one value per tile in ``0..max(MAX_TILE_TRIP,
max_trip // T)`` (long loops in few tiles, short ones in many), and every assignment of those
values over the ``T`` tiles is tried. The same flag key
(or predicate name) in two tasks is the same value in the same tile; different keys are
independent. A ``skippable`` region runs in a tile iff the enclosing ``Tiles``' predicate does
not skip that tile.

**Expansion.** A loop of ``n`` trips runs its body ``n`` times; iteration guards are decided
by the innermost loop's ``(i, n)``: ``every(p, s)`` fires when ``i >= s`` and ``(i - s) % p ==
0``, ``first`` when ``i == 0``, ``last`` when ``i == n - 1``.

**Rings** (one producer task and one consumer task per ring, one arrival per phase, as
mbarriers with right arrival counts). A ring of ``S`` stages is two arrays of phase counters,
``full`` and ``empty``. The ``k``-th ``acquire`` of a task uses stage ``k % S`` and may pass
once ``empty[k % S]`` has completed ``k // S`` phases; the ``k``-th ``wait`` once
``full[k % S]`` has completed ``k // S + 1``. The ``k``-th ``commit`` completes a phase of
``full[k % S]``, the ``k``-th ``release`` one of ``empty[k % S]`` (stages are committed and
released in the order they were acquired and waited). Tasks run greedily until none can move.

**Failures** (a plan is bad iff some valuation has one):

* a deadlock: some task is unfinished and none can move;
* a bracket error: a ``commit`` (``release``) with no stage acquired (waited) and not yet
  committed (released), or a stage still held when its task ends;
* a leftover: a ring filled and drained a different number of times;
* an alias conflict, for two rings that share SMEM (``Gen.aliases``: each ring's SMEM is one
  allocation, so the whole ring aliases the whole other ring). Stage index ``k`` of a ring is
  *live* from the producer's ``k``-th acquire to the consumer's ``k``-th release. Each event
  has a fixed enabling event (the ``k``-th acquire needs the ``(k - S)``-th release, the
  ``k``-th wait the ``k``-th commit), so the executions are exactly the orders of the events
  that respect *happens-before*: program order plus those enabling edges, transitively. Two
  live intervals ``[a1, r1]`` and ``[a2, r2]`` can overlap in some execution iff neither ``r1``
  happens before ``a2`` nor ``r2`` before ``a1``; that is a conflict. Happens-before is
  computed with vector clocks along the greedy run.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator

MAX_TRIP = 5
"""Symbol values tried by default: 0..MAX_TRIP."""

MAX_TILES = 4
"""Work-tile counts tried by default for persistent plans: 0..MAX_TILES."""

MAX_TILE_TRIP = 2
"""Values of a per-tile bound tried per tile at least: 0..MAX_TILE_TRIP (more in few tiles)."""

SYMBOLS = ("n", "m")
GETTERS = ("@k",)
FLAGS = ("f", "g")
PREDICATES = ("p", "q")

RingOp = tuple[str, str]
"""``(ring, op)``, op one of ``acquire``, ``commit``, ``wait``, ``release``."""


@dataclasses.dataclass(frozen=True)
class Guard:
    """``kind``: ``flag`` (``key``, ``negated``), ``every`` (``period``, ``start``), ``first``,
    ``last`` or ``skippable``."""

    kind: str
    key: str = ""
    negated: bool = False
    period: int = 1
    start: int = 0


@dataclasses.dataclass(frozen=True)
class Ops:
    """Ring operations, in program order."""

    ops: tuple[RingOp, ...]


@dataclasses.dataclass(frozen=True)
class Loop:
    """``for i in range(bound)``: a constant, a runtime symbol or a per-tile getter (``@k``)."""

    bound: int | str
    body: tuple[Node, ...]


@dataclasses.dataclass(frozen=True)
class When:
    """A guarded block."""

    guard: Guard
    body: tuple[Node, ...]


@dataclasses.dataclass(frozen=True)
class Tiles:
    """The persistent loop over work tiles; ``skip_if`` names its skip predicate."""

    skip_if: str | None
    body: tuple[Node, ...]


Node = Ops | Loop | When | Tiles


@dataclasses.dataclass(frozen=True)
class Gen:
    """A generated plan.

    Attributes:
        stages: Ring name -> depth.
        tasks: Task name -> schedule tree.
        aliases: Pairs of rings whose SMEM is aliased.
        deps: Declared dependency edges ``(upstream, downstream)``; they carry no semantics
            here (the oracle judges aliasing by happens-before only).
        features: What the generator put in (for the benchmark's breakdown).
    """

    stages: dict[str, int]
    tasks: dict[str, tuple[Node, ...]]
    aliases: tuple[tuple[str, str], ...] = ()
    deps: tuple[tuple[str, str], ...] = ()
    features: frozenset[str] = frozenset()


@dataclasses.dataclass(frozen=True)
class Valuation:
    """Symbol values, the tile count, per-tile flags, skips and bounds (index 0 outside tiles)."""

    trips: dict[str, int]
    tiles: int
    flags: dict[str, tuple[bool, ...]]
    skips: dict[str, tuple[bool, ...]]
    tile_trips: dict[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)


# -- what a plan uses ---------------------------------------------------------------------------
def _nodes(body: tuple[Node, ...]) -> Iterator[Node]:
    for node in body:
        yield node
        if not isinstance(node, Ops):
            yield from _nodes(node.body)


def _all_nodes(gen: Gen) -> Iterator[Node]:
    for body in gen.tasks.values():
        yield from _nodes(body)


def is_persistent(gen: Gen) -> bool:
    """Whether the plan has work-tile loops."""
    return any(isinstance(n, Tiles) for n in _all_nodes(gen))


def _bounds(gen: Gen) -> set[str]:
    return {n.bound for n in _all_nodes(gen) if isinstance(n, Loop) and isinstance(n.bound, str)}


def _symbols(gen: Gen) -> list[str]:
    return sorted(b for b in _bounds(gen) if not b.startswith("@"))


def _getters(gen: Gen) -> list[str]:
    return sorted(b for b in _bounds(gen) if b.startswith("@"))


def _flag_keys(gen: Gen) -> list[str]:
    return sorted(
        {n.guard.key for n in _all_nodes(gen) if isinstance(n, When) and n.guard.kind == "flag"}
    )


def _predicates(gen: Gen) -> list[str]:
    """Predicates of the tile loops that hold a ``skippable`` region (only those can skip)."""
    out = set()
    for body in gen.tasks.values():
        for node in _nodes(body):
            if (
                isinstance(node, Tiles)
                and node.skip_if is not None
                and any(
                    isinstance(n, When) and n.guard.kind == "skippable" for n in _nodes(node.body)
                )
            ):
                out.add(node.skip_if)
    return sorted(out)


# -- expansion ----------------------------------------------------------------------------------
def _fires(guard: Guard, val: Valuation, tile: int, it: tuple[int, int], pred: str | None) -> bool:
    i, n = it
    if guard.kind == "flag":
        return val.flags[guard.key][max(tile, 0)] != guard.negated
    if guard.kind == "every":
        return i >= guard.start and (i - guard.start) % guard.period == 0
    if guard.kind == "first":
        return i == 0
    if guard.kind == "last":
        return i == n - 1
    if guard.kind == "skippable":
        # Without a predicate nothing decides to skip: the region always runs.
        return pred is None or not val.skips[pred][tile]
    raise ValueError(guard.kind)


def _expand(
    body: tuple[Node, ...],
    val: Valuation,
    out: list[RingOp],
    tile: int = -1,
    it: tuple[int, int] = (0, 0),
    pred: str | None = None,
) -> None:
    for node in body:
        if isinstance(node, Ops):
            out.extend(node.ops)
        elif isinstance(node, Loop):
            b = node.bound
            if isinstance(b, int):
                n = b
            elif b.startswith("@"):
                n = val.tile_trips[b][max(tile, 0)]
            else:
                n = val.trips[b]
            for i in range(n):
                _expand(node.body, val, out, tile, (i, n), pred)
        elif isinstance(node, When):
            if _fires(node.guard, val, tile, it, pred):
                _expand(node.body, val, out, tile, it, pred)
        else:
            for t in range(val.tiles):
                _expand(node.body, val, out, t, (0, 0), node.skip_if)


def program(body: tuple[Node, ...], val: Valuation) -> list[RingOp]:
    """The ring operations one task runs under ``val``, in order."""
    out: list[RingOp] = []
    _expand(body, val, out)
    return out


# -- the ring model -----------------------------------------------------------------------------
Clock = tuple[str, tuple[int, ...]]
"""An event's task and its vector clock (one entry per task)."""


def _before(x: Clock, y: Clock, index: dict[str, int]) -> bool:
    """``x`` happens before (or is) ``y``."""
    t = index[x[0]]
    return x[1][t] <= y[1][t]


def run(gen: Gen, val: Valuation) -> str:
    """``ok`` or the failure (``deadlock``, ``bracket``, ``leftover``, ``alias``) of one run."""
    progs = {t: program(body, val) for t, body in gen.tasks.items()}
    index = {t: i for i, t in enumerate(progs)}
    pc = dict.fromkeys(progs, 0)
    full = {r: [0] * s for r, s in gen.stages.items()}
    empty = {r: [0] * s for r, s in gen.stages.items()}
    done = {(t, r, op): 0 for t in progs for r in gen.stages for op in _OPS}
    track = bool(gen.aliases)
    clock = {t: (0,) * len(progs) for t in progs}
    events: dict[tuple[str, str], list[Clock]] = {(r, op): [] for r in gen.stages for op in _OPS}
    moved = True
    while moved:
        moved = False
        for t, prog in progs.items():
            while pc[t] < len(prog):
                ring, op = prog[pc[t]]
                depth = gen.stages[ring]
                k = done[(t, ring, op)]
                stage, rnd = k % depth, k // depth
                enabler: Clock | None = None
                if op == "acquire":
                    if empty[ring][stage] < rnd:
                        break
                    if track and k >= depth:
                        enabler = events[(ring, "release")][k - depth]
                elif op == "wait":
                    if full[ring][stage] < rnd + 1:
                        break
                    if track:
                        enabler = events[(ring, "commit")][k]
                elif op == "commit":
                    if k >= done[(t, ring, "acquire")]:
                        return "bracket"
                    full[ring][stage] += 1
                else:
                    if k >= done[(t, ring, "wait")]:
                        return "bracket"
                    empty[ring][stage] += 1
                done[(t, ring, op)] = k + 1
                if track:
                    vc = list(clock[t])
                    if enabler is not None:
                        vc = [max(a, b) for a, b in zip(vc, enabler[1], strict=True)]
                    vc[index[t]] += 1
                    clock[t] = tuple(vc)
                    events[(ring, op)].append((t, clock[t]))
                pc[t] += 1
                moved = True
    if any(pc[t] < len(p) for t, p in progs.items()):
        return "deadlock"
    for t in progs:
        for ring in gen.stages:
            if done[(t, ring, "acquire")] != done[(t, ring, "commit")]:
                return "bracket"
            if done[(t, ring, "wait")] != done[(t, ring, "release")]:
                return "bracket"
    for ring in gen.stages:
        fills = sum(done[(t, ring, "acquire")] for t in progs)
        drains = sum(done[(t, ring, "wait")] for t in progs)
        if fills != drains:
            return "leftover"
    for a, b in gen.aliases:
        if _conflict(events, a, b, index):
            return "alias"
    return "ok"


_OPS = ("acquire", "commit", "wait", "release")


def _conflict(
    events: dict[tuple[str, str], list[Clock]], a: str, b: str, index: dict[str, int]
) -> bool:
    """Whether some live interval of ring ``a`` can overlap some live interval of ring ``b``."""
    a_live = list(zip(events[(a, "acquire")], events[(a, "release")], strict=True))
    b_live = list(zip(events[(b, "acquire")], events[(b, "release")], strict=True))
    for a_start, a_end in a_live:
        for b_start, b_end in b_live:
            if not _before(a_end, b_start, index) and not _before(b_end, a_start, index):
                return True
    return False


# -- valuations ---------------------------------------------------------------------------------
def valuations(
    gen: Gen, max_trip: int = MAX_TRIP, max_tiles: int = MAX_TILES
) -> Iterator[Valuation]:
    """Every valuation of the plan's own symbols, flags, tiles, skips and per-tile bounds."""
    symbols = _symbols(gen)
    flags = _flag_keys(gen)
    persistent = is_persistent(gen)
    preds = _predicates(gen) if persistent else []
    getters = _getters(gen)
    n_f, n_p = len(flags), len(preds)
    for trips in itertools.product(range(max_trip + 1), repeat=len(symbols)):
        trip_of = dict(zip(symbols, trips, strict=True))
        if not persistent:
            for bits in itertools.product((False, True), repeat=n_f):
                yield Valuation(trip_of, 1, {k: (v,) for k, v in zip(flags, bits, strict=True)}, {})
            continue
        for tiles in range(max_tiles + 1):
            # One row of values over the tiles per flag key, predicate and getter.
            binary = list(itertools.product((False, True), repeat=tiles))
            top = max(MAX_TILE_TRIP, max_trip // max(tiles, 1))
            counts = list(itertools.product(range(top + 1), repeat=tiles))
            for rows in itertools.product(binary, repeat=n_f + n_p):
                for nums in itertools.product(counts, repeat=len(getters)):
                    yield Valuation(
                        trip_of,
                        tiles,
                        {k: rows[i] or (False,) for i, k in enumerate(flags)},
                        {p: rows[n_f + i] for i, p in enumerate(preds)},
                        {g: nums[i] or (0,) for i, g in enumerate(getters)},
                    )


def failure(
    gen: Gen, max_trip: int = MAX_TRIP, max_tiles: int = MAX_TILES
) -> tuple[str, Valuation] | None:
    """The first failing run and its valuation, or None when every run is ok."""
    for val in valuations(gen, max_trip, max_tiles):
        outcome = run(gen, val)
        if outcome != "ok":
            return outcome, val
    return None


def oracle_ok(gen: Gen, max_trip: int = MAX_TRIP, max_tiles: int = MAX_TILES) -> bool:
    """Whether every valuation up to the bounds runs to the end without a failure."""
    return failure(gen, max_trip, max_tiles) is None
