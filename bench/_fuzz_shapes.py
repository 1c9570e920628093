"""Random kernel *shapes* for the GPU schedule fuzzer, their mutations and their host model.

A :class:`Shape` is the structure of one fuzzed kernel, drawn by :func:`generate` and turned
into a real TS kernel by ``_fuzz_kernels.py`` (which imports the CuTe DSL; this module does
not, so the CI test and the broken-variant checks run without it):

* 2 or 3 tasks of 1 or 2 warps each, one after the other;
* 1 to 3 SMEM rings (``AsyncAsync`` pipelines) of depth 1 to 4, each from a lower task to a
  higher one (every task is on some ring);
* per ring 1 or 2 *segments*: a loop over a constant or a runtime trip count (``n0`` .. ``n2``,
  read from the ``params`` tensor) around the ring's bracket, the same on both sides, with
  at most one of: a runtime flag around the loop or inside it (``when_true`` /
  ``when_false`` on ``f0`` / ``f1``), ``every(period, start)`` inside it, a split into
  ``every(2)`` and ``every(2, start=1)`` halves, the first or the last iteration only
  (``first_iter()`` / ``last_iter()``), or a consumer that releases the stage of the
  previous iteration (lag 1: ``every(1, start=1)`` plus one more release on the last
  iteration; depth >= 2);
* optionally *persistent*: every task walks a static work queue over ``tiles`` work tiles with
  a per-tile skip flag (the ``skips`` tensor); a segment may sit in the ``skippable()``
  region, on both sides.

Every task runs its segments in one global order (ring, then segment), so a valid shape cannot
deadlock: the earliest unfinished segment always has both of its tasks at it.

The data: the producer of a ring writes, per iteration, ``value(salt, tile, i, lane)`` into
the acquired stage (each producer thread one slot); each consumer thread reads its slot, adds
it to ``out[tile, ring, thread]`` and counts a mismatch against the value it expects from its
own loop index in ``out[tile, ring, 64 + thread]``. :func:`expected` computes that array on
the host from the shape and the inputs, by walking the shape (not the plan, not the kernel).

A *broken* variant (:func:`mutate`) has one mutation (:data:`MUTATIONS`): a dropped release or
commit, a swapped wait and release, a consumer group larger than its task, an off-by-one trip
count, a guard (flag, ``every``, ``skippable``) on the producer side only, a lag without its
last release. :func:`simulate` runs a shape's tasks on the host against counting ring
semantics and says whether (and where: task, ring, step) an input deadlocks, so the fuzzer
can pick inputs on which a broken kernel must trap.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = [
    "HANGING",
    "MAX_TILES",
    "MUTATIONS",
    "SLOTS",
    "Inputs",
    "Ring",
    "Segment",
    "Shape",
    "Stuck",
    "ctas",
    "describe",
    "differences",
    "expected",
    "generate",
    "hanging_inputs",
    "mutate",
    "out_size",
    "program",
    "random_inputs",
    "simulate",
    "trips",
    "value",
]

MAX_TILES = 64
"""The most work tiles (CTAs of a non-persistent kernel) an input asks for."""

SLOTS = 64
"""Values per ring stage (one per producer thread, at most 2 warps)."""

N_TRIPS = 3
N_FLAGS = 2
PARAMS = 8  # the params tensor: n0 n1 n2 f0 f1, padded

MUTATIONS = (
    "drop_release",
    "drop_commit",
    "swap_wait_release",
    "group_size",
    "off_by_one",
    "producer_flag",
    "producer_every",
    "producer_skippable",
    "lag_no_last",
)
"""The kinds of one-mutation broken variants."""

HANGING = frozenset(MUTATIONS) - {"swap_wait_release"}
"""Mutations that deadlock on some input (the others race: wrong data, or nothing visible)."""


@dataclasses.dataclass(frozen=True)
class Ring:
    """One SMEM ring: its depth and its producer and consumer task indices."""

    depth: int
    producer: int
    consumer: int


@dataclasses.dataclass(frozen=True)
class Segment:
    """One loop of one ring's bracket, the same on both sides unless mutated.

    ``guard`` is one of ``""``, ``"flag"`` (around the loop), ``"flag_in"`` (inside it),
    ``"every"``, ``"split"``, ``"lag"``, ``"first"``, ``"last"``; ``flag`` / ``negated`` name
    the runtime flag, ``period`` / ``start`` the ``every`` guard.
    """

    ring: int
    bound: int | str
    guard: str = ""
    flag: str = ""
    negated: bool = False
    period: int = 1
    start: int = 0
    skippable: bool = False
    salt: int = 0


@dataclasses.dataclass(frozen=True)
class Shape:
    """One fuzzed kernel's structure (see the module docstring); JSON round-trips."""

    seed: int
    warps: tuple[int, ...]
    rings: tuple[Ring, ...]
    segments: tuple[Segment, ...]
    persistent: bool = False
    ctas: int = 1  # persistent CTAs (the queue hands each several tiles)
    mutation: str = ""
    target: int = -1  # the mutated segment (or ring, for group_size)

    @property
    def name(self) -> str:
        """A short unique name (seed and mutation)."""
        return f"fuzz{self.seed}" + (f"_{self.mutation}" if self.mutation else "")

    @property
    def structure(self) -> str:
        """The shape without its seed: kernels of equal structure compile to the same code."""
        d = dataclasses.asdict(self)
        del d["seed"]
        return json.dumps(d, sort_keys=True)

    def task_name(self, t: int) -> str:
        """Task ``t``'s name in the kernel (and in its debug messages)."""
        return f"t{t}"

    def ring_name(self, r: int) -> str:
        """Ring ``r``'s resource name."""
        return f"r{r}"

    def first_warp(self, t: int) -> int:
        """Task ``t``'s first warp."""
        return sum(self.warps[:t])

    def to_json(self) -> str:
        """The shape as JSON (:meth:`from_json` reads it back)."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> Shape:
        """A shape from :meth:`to_json`."""
        d = json.loads(text)
        d["warps"] = tuple(d["warps"])
        d["rings"] = tuple(Ring(**r) for r in d["rings"])
        d["segments"] = tuple(Segment(**s) for s in d["segments"])
        return Shape(**d)


@dataclasses.dataclass(frozen=True)
class Inputs:
    """One launch's runtime values: trip counts, flags, tile count, per-tile skip flags."""

    trips: tuple[int, ...]
    flags: tuple[int, ...]
    tiles: int
    skips: tuple[int, ...]

    def to_json(self) -> str:
        """The inputs as JSON (:meth:`from_json` reads them back)."""
        return json.dumps(dataclasses.asdict(self))

    @staticmethod
    def from_json(text: str) -> Inputs:
        """Inputs from :meth:`to_json`."""
        d = json.loads(text)
        return Inputs(tuple(d["trips"]), tuple(d["flags"]), d["tiles"], tuple(d["skips"]))

    def params(self) -> list[int]:
        """The ``params`` tensor's contents."""
        return [*self.trips, *self.flags, *[0] * (PARAMS - N_TRIPS - N_FLAGS)]


# -- generation -----------------------------------------------------------------------------------
def generate(seed: int) -> Shape:
    """A random valid shape (see the module docstring)."""
    rng = random.Random(seed)
    n_tasks = rng.randint(2, 3)
    warps = tuple(rng.choice((1, 1, 1, 2)) for _ in range(n_tasks))
    pairs = [(t, t + 1) for t in range(n_tasks - 1)]  # a chain covers every task
    for _ in range(rng.randint(0, 3 - len(pairs))):
        a, b = sorted(rng.sample(range(n_tasks), 2))
        pairs.append((a, b))
    rings = tuple(Ring(rng.randint(1, 4), a, b) for a, b in pairs)
    persistent = rng.random() < 0.4
    segments: list[Segment] = []
    for r, ring in enumerate(rings):
        for _ in range(rng.randint(1, 2)):
            bound: int | str = rng.choice((1, 2, 3, 5, "n0", "n1", "n2", "n0"))
            guard = rng.choice(
                ("", "", "", "flag", "flag_in", "every", "split", "lag", "first", "last")
            )
            if guard == "lag" and ring.depth < 2:
                guard = ""  # a lagged consumer holds two stages
            seg = Segment(
                r,
                bound,
                guard,
                flag=rng.choice(["f0", "f1"]) if guard.startswith("flag") else "",
                negated=guard.startswith("flag") and rng.random() < 0.3,
                period=rng.randint(2, 3) if guard == "every" else 1,
                start=rng.randint(0, 2) if guard == "every" else 0,
                skippable=persistent and rng.random() < 0.5,
                salt=len(segments) + 1,
            )
            segments.append(seg)
    return Shape(seed, warps, rings, tuple(segments), persistent, rng.randint(1, 3))


def mutate(shape: Shape, rng: random.Random) -> Shape:
    """``shape`` with one random mutation (see :data:`MUTATIONS`) that changes what it runs.

    A mutation whose ring protocol the host model cannot tell from the original's on any of 64
    random inputs (``off_by_one`` on an ``every`` loop whose extra iteration does not fire,
    ``every(2)`` on a one-trip loop, ...) is drawn again: such a variant is not broken.
    """
    for _ in range(100):
        mutated = _mutate_once(shape, rng)
        if mutated is not None and _differs(shape, mutated, rng):
            return mutated
    raise ValueError(f"no effective mutation of {shape.name}")


# Which segments each mutation may target: guards it can be combined with (condition blocks do
# not nest, except in ``skippable()``), and a lag needs its own.
_TARGETS = {
    "drop_release": ("", "flag", "flag_in", "every", "split", "first", "last"),
    "drop_commit": ("", "flag", "flag_in", "every", "split", "lag", "first", "last"),
    "swap_wait_release": ("", "flag", "flag_in", "every", "split", "first", "last"),
    "off_by_one": ("", "flag", "flag_in", "every", "split", "lag", "first", "last"),
    "producer_flag": ("", "flag_in", "every", "split", "lag", "first", "last"),
    "producer_every": ("", "flag", "lag"),
    "producer_skippable": ("", "flag", "flag_in", "every", "split", "lag", "first", "last"),
    "lag_no_last": ("lag",),
}


def _mutate_once(shape: Shape, rng: random.Random) -> Shape | None:
    kinds = [k for k in MUTATIONS if shape.persistent or k != "producer_skippable"]
    kind = rng.choice(kinds)
    if kind == "group_size":
        return dataclasses.replace(shape, mutation=kind, target=rng.randrange(len(shape.rings)))
    fits = [
        i
        for i, s in enumerate(shape.segments)
        if s.guard in _TARGETS[kind] and not (kind == "producer_skippable" and s.skippable)
    ]
    if not fits:
        return None
    return dataclasses.replace(shape, mutation=kind, target=rng.choice(fits))


def _differs(shape: Shape, mutated: Shape, rng: random.Random) -> bool:
    if mutated.mutation == "group_size":
        return True  # the arrival count, not the ops, changes
    for _ in range(64):
        inputs = random_inputs(shape, rng)
        for cta in range(ctas(shape, inputs)):
            for t in range(len(shape.warps)):
                if _protocol(mutated, inputs, cta, t) != _protocol(shape, inputs, cta, t):
                    return True
    return False


def _protocol(shape: Shape, inputs: Inputs, cta: int, task: int) -> list[tuple[int, str]]:
    """A task's ring ops without their iteration: what the barriers see. (A consumer that
    waits in a later iteration than the producer committed in, the same number of times,
    reads mislabelled data but runs the same protocol: no schedule checker can flag it.)"""
    return [(r, step) for _, r, step, _, _ in program(shape, inputs, cta, task)]


def random_inputs(shape: Shape, rng: random.Random) -> Inputs:
    """Random runtime values for ``shape`` (trip counts 0..7, mostly nonzero)."""
    tiles = rng.randint(1, MAX_TILES if rng.random() < 0.3 else 8)
    skips = tuple(int(rng.random() < 0.3) for _ in range(tiles)) if shape.persistent else ()
    return Inputs(
        trips=tuple(rng.choice([0, 1, 2, 3, 4, 5, 7]) for _ in range(N_TRIPS)),
        flags=tuple(rng.randint(0, 1) for _ in range(N_FLAGS)),
        tiles=tiles,
        skips=skips + (0,) * (MAX_TILES - len(skips)),
    )


# -- the host model -------------------------------------------------------------------------------
def value(salt: int, tile: int, i: int, lane: int) -> int:
    """What the producer writes for iteration ``i`` of a segment (and the consumer expects)."""
    return ((salt * 512 + tile) * 64 + i % 64) * 64 + lane


def trips(seg: Segment, inputs: Inputs) -> int:
    """The loop's trip count on ``inputs`` (unmutated)."""
    return seg.bound if isinstance(seg.bound, int) else inputs.trips[int(seg.bound[1])]


def _flag_on(seg: Segment, inputs: Inputs) -> bool:
    on = inputs.flags[int(seg.flag[1])] != 0
    return on != seg.negated


# An op of the host model: (task, ring, step, segment, iteration); step is one of
# "acquire", "commit", "wait", "release".
Op = tuple[int, int, str, int, int]


def _side(shape: Shape, k: int, producer: bool, inputs: Inputs, tile: int) -> Iterator[Op]:
    """The ring ops one side of segment ``k`` runs on one tile, as the kernel would."""
    seg = shape.segments[k]
    ring = shape.rings[seg.ring]
    task = ring.producer if producer else ring.consumer
    mine = shape.target == k and shape.mutation != ""
    mut = shape.mutation if mine else ""
    skipped = inputs.skips[tile] != 0 if shape.persistent else False
    in_region = seg.skippable or (mut == "producer_skippable" and producer)
    if skipped and in_region:
        return
    n = trips(seg, inputs) + (1 if mut == "off_by_one" and not producer else 0)
    guard = seg.guard
    if guard == "flag" and not _flag_on(seg, inputs):
        return
    if mut == "producer_flag" and producer and inputs.flags[0] == 0:
        return
    first, second = ("acquire", "commit") if producer else ("wait", "release")
    for i in range(n):
        if guard == "flag_in" and not _flag_on(seg, inputs):
            continue
        if guard == "every" and not (i >= seg.start and (i - seg.start) % seg.period == 0):
            continue
        if (guard == "first" and i != 0) or (guard == "last" and i != n - 1):
            continue
        if mut == "producer_every" and producer and i % 2 != 0:
            continue
        if guard == "lag" and not producer:
            yield (task, seg.ring, "wait", k, i)
            if i >= 1:
                yield (task, seg.ring, "release", k, i - 1)
            if i == n - 1 and mut != "lag_no_last":
                yield (task, seg.ring, "release", k, i)
            continue
        if mut == "swap_wait_release" and not producer:
            yield (task, seg.ring, "release", k, i)
            yield (task, seg.ring, "wait", k, i)
            continue
        yield (task, seg.ring, first, k, i)
        if not (mut == "drop_commit" and producer) and not (mut == "drop_release" and not producer):
            yield (task, seg.ring, second, k, i)


def _tiles_of(shape: Shape, inputs: Inputs, cta: int) -> list[int]:
    if not shape.persistent:
        return [cta]
    ctas = min(shape.ctas, inputs.tiles)
    return list(range(cta, inputs.tiles, ctas))


def ctas(shape: Shape, inputs: Inputs) -> int:
    """CTAs launched on ``inputs``."""
    return min(shape.ctas, inputs.tiles) if shape.persistent else inputs.tiles


def program(shape: Shape, inputs: Inputs, cta: int, task: int) -> list[Op]:
    """Every ring op task ``task`` runs in CTA ``cta``, in order."""
    out: list[Op] = []
    for tile in _tiles_of(shape, inputs, cta):
        for k, seg in enumerate(shape.segments):
            ring = shape.rings[seg.ring]
            if task == ring.producer:
                out.extend(_side(shape, k, True, inputs, tile))
            if task == ring.consumer:
                out.extend(_side(shape, k, False, inputs, tile))
    return out


def expected(shape: Shape, inputs: Inputs) -> list[int]:
    """The ``out`` tensor a correct kernel leaves (flat: tile, ring, sum / mismatch, thread)."""
    n_rings = len(shape.rings)
    out = [0] * (MAX_TILES * n_rings * 2 * SLOTS)
    for cta in range(ctas(shape, inputs)):
        for tile in _tiles_of(shape, inputs, cta):
            for k, seg in enumerate(shape.segments):
                ring = shape.rings[seg.ring]
                p_threads = 32 * shape.warps[ring.producer]
                for _, r, step, _, i in _side(shape, k, False, inputs, tile):
                    if step != "wait":
                        continue
                    base = ((tile * n_rings + r) * 2) * SLOTS
                    for t in range(32 * shape.warps[ring.consumer]):
                        out[base + t] += value(seg.salt, tile, i, t % p_threads)
    return out


def differences(shape: Shape, got: Sequence[int], want: Sequence[int]) -> dict[str, Any]:
    """Where a kernel's ``out`` differs from :func:`expected`: the first (tile, ring) pairs
    whose sums differ, and how many consumer threads counted a mismatched value."""
    n_rings = len(shape.rings)
    sums: list[list[int]] = []
    mismatches = 0
    for tile in range(MAX_TILES):
        for r in range(n_rings):
            base = ((tile * n_rings + r) * 2) * SLOTS
            if got[base : base + SLOTS] != want[base : base + SLOTS]:
                sums.append([tile, r])
            mismatches += sum(1 for v in got[base + SLOTS : base + 2 * SLOTS] if v)
    return {"sums_differ": sums[:4], "threads_mismatched": mismatches}


def out_size(shape: Shape) -> int:
    """Elements of the ``out`` tensor."""
    return MAX_TILES * len(shape.rings) * 2 * SLOTS


@dataclasses.dataclass(frozen=True)
class Stuck:
    """Where a simulated CTA deadlocks: each stuck task's ring and step."""

    cta: int
    waits: tuple[tuple[str, str, str], ...]  # (task, ring, step)


def simulate(shape: Shape, inputs: Inputs) -> Stuck | None:
    """Run every CTA's tasks against counting ring semantics; the first deadlock, if any.

    A producer's ``k``-th acquire needs ``k - depth + 1`` releases (with a consumer group
    twice too large, ``group_size``, no release ever completes a phase); a consumer's ``k``-th
    wait needs ``k + 1`` commits. A task runs ahead as far as it can; the CTA is stuck when no
    task can move and one is unfinished. Races (``swap_wait_release``) do not deadlock here.
    """
    for cta in range(ctas(shape, inputs)):
        progs = [program(shape, inputs, cta, t) for t in range(len(shape.warps))]
        pcs = [0] * len(progs)
        counts = {(r, s): 0 for r in range(len(shape.rings)) for s in _STEPS}
        moved = True
        while moved:
            moved = False
            for t, prog in enumerate(progs):
                while pcs[t] < len(prog) and _enabled(shape, counts, prog[pcs[t]]):
                    _, r, step, _, _ = prog[pcs[t]]
                    counts[(r, step)] += 1
                    pcs[t] += 1
                    moved = True
        stuck = [
            (shape.task_name(t), shape.ring_name(prog[pcs[t]][1]), prog[pcs[t]][2])
            for t, prog in enumerate(progs)
            if pcs[t] < len(prog)
        ]
        if stuck:
            return Stuck(cta, tuple(stuck))
    return None


_STEPS = ("acquire", "commit", "wait", "release")


def _enabled(shape: Shape, counts: dict[tuple[int, str], int], op: Op) -> bool:
    _, r, step, _, _ = op
    depth = shape.rings[r].depth
    if step == "acquire":
        done = counts[(r, "acquire")]
        if shape.mutation == "group_size" and shape.target == r:
            return done < depth
        return counts[(r, "release")] >= done - depth + 1
    if step == "wait":
        return counts[(r, "commit")] >= counts[(r, "wait")] + 1
    return True


def hanging_inputs(shape: Shape, rng: random.Random, tries: int = 64) -> Inputs | None:
    """Random inputs on which ``shape`` deadlocks in :func:`simulate`, or None."""
    for _ in range(tries):
        inputs = random_inputs(shape, rng)
        if simulate(shape, inputs) is not None:
            return inputs
    return None


def describe(shapes: Sequence[Shape]) -> dict[str, Any]:
    """Counts of the features of ``shapes`` (for the bench's summary)."""
    feats: dict[str, int] = {}
    for s in shapes:
        names = {g.guard or "plain" for g in s.segments}
        if s.persistent:
            names.add("persistent")
        if any(g.skippable for g in s.segments):
            names.add("skippable")
        if any(w > 1 for w in s.warps):
            names.add("two_warp_task")
        for n in names:
            feats[n] = feats.get(n, 0) + 1
    return dict(sorted(feats.items()))
