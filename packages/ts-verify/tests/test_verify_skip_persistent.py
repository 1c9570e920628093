"""Persistent ``skip_stage`` plans against a brute-force oracle over every concrete instance.

For a *persistent* ping-pong plan (a ``work_tile_loop`` whose tiles alternate owners through
the per-tile condition ``odd``, a runtime ``domain_loop`` bound) ``verify`` claims a proof for
every tile count, every sequence of owners and every bound, from windows of at most ``S + 1``
tiles (:func:`ts_verify.runs.skip_windows`, the stale-wait check of
:func:`ts_verify.clocks.stale_wait`). This file tests that window argument from outside.

**The family** (:class:`Spec`). A loader fills ring ``ab`` (``S`` stages) with ``prologue +
k`` stages per tile (``prologue`` constant fills, then ``domain_loop(k)``); two math tasks
``math0`` / ``math1`` take the tiles in turns (``math0`` owns a tile when ``odd`` is false):
the owner waits for, reads and releases the tile's stages, the other skips them; with
``shared``, ``math0`` reads every tile's ``prologue`` stages whoever owns it (``math1`` skips
them) and the owner takes the ``k`` others. ``k`` is a ``RuntimeInt`` (one value per kernel)
or, with ``per_tile``, ``Tasks.get_domain`` (one value per tile). Order tokens: one-way
rings ``t0`` (``math0`` -> ``math1``) and ``t1`` (``math1`` -> ``math0``) of ``token_stages``
stages, used as :data:`PROTOCOLS` says.

**The oracle** (:func:`oracle`). Every concrete instance up to the bounds: tile count ``T`` in
``0..S + 3``, every owner sequence in ``{0, 1}^T``, every ``k`` in ``0..S + 1`` (with
``per_tile``, every sequence of ``k`` in ``0..max(S, 2)`` over up to 4 tiles; :func:`bounds`).
Each becomes straight-line per-task programs (:func:`instance_programs`, the persistent
schedule's semantics written out by hand, sharing nothing with ``ts_trace`` or ``ts_verify``)
and goes to :func:`skip_oracle.explore`, which searches every interleaving. A spec is *bad*
when some instance races, deadlocks or ends unbalanced. Instances run smallest first, so the
first bad one is a minimal witness.

**Checks.** Soundness: the oracle finds a bad instance -> ``verify`` refuses the plan (the
key assertion). Completeness within the bounds: ``verify`` refuses -> the oracle finds a bad
instance. Run this file as a script for the table.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import pytest
from skip_oracle import Op, Result, RingSpec, explore
from verify_testkit import Dst, Queue, Ring, RuntimeInt, Src, Tasks, async_pipe, plan_of, task

from ts_ir import KernelPlan
from ts_trace import domain_loop, schedule, when_false, when_true, work_tile_loop
from ts_verify import verify

PROTOCOLS: dict[str, str] = {
    "after": "the owner passes its out-token after its waits; the other drains its in-token "
    "after its skips (the right protocol)",
    "drain_first": "as after, but the other drains its in-token before its skips",
    "split": "the owner acquires its out-token before its waits and commits it after them",
    "none": "no tokens",
    "before": "the owner passes its out-token before its waits (too early)",
    "early_drain_first": "before, and the other drains its in-token before its skips",
    "one_way": "as after, with the math0 -> math1 token only (math1 passes nothing back)",
}
SEED = 20250612
RANDOM_SPECS = 12

Programs = dict[str, list[Op]]


@dataclasses.dataclass(frozen=True)
class Spec:
    """One persistent plan of the family (see the module docstring).

    Attributes:
        stages: ``S``, the stages of ``ab``.
        protocol: A key of :data:`PROTOCOLS`.
        prologue: Constant fills per tile before the ``domain_loop``.
        token_stages: The stages of each token ring.
        per_tile: ``k`` per tile (``Tasks.get_domain``) rather than per kernel.
        shared: ``math0`` reads the prologue stages of every tile.
        loop: Whether there is a ``domain_loop`` (without: ``prologue`` fills per tile).
    """

    stages: int
    protocol: str
    prologue: int = 0
    token_stages: int = 1
    per_tile: bool = False
    shared: bool = False
    loop: bool = True

    def __str__(self) -> str:
        extra = f",P={self.prologue}" if self.prologue else ""
        extra += f",D={self.token_stages}" if self.token_stages != 1 else ""
        extra += ",per-tile k" if self.per_tile else ""
        extra += ",shared" if self.shared else ""
        extra += ",no loop" if not self.loop else ""
        return f"{self.protocol}(S={self.stages}{extra})"

    @property
    def tokens(self) -> tuple[str, ...]:
        """The token rings: ``t{i}`` carries ``math{i}``'s turn to the other."""
        return {"none": (), "one_way": ("t0",)}.get(self.protocol, ("t0", "t1"))

    @property
    def drain_first(self) -> bool:
        return self.protocol in ("drain_first", "early_drain_first")

    @property
    def early(self) -> bool:
        return self.protocol in ("before", "early_drain_first")


# -- the plan -------------------------------------------------------------------------------------
def build(spec: Spec) -> KernelPlan:
    """The persistent plan of ``spec`` (``ts_trace`` schedules, as a kernel author writes them)."""
    bound: Any = Tasks.get_domain if spec.per_tile else RuntimeInt()
    q, src, dst = Queue(name="q"), Src(name="src"), Dst(name="dst")
    ab = Ring(name="ab", pipeline_config=async_pipe(spec.stages))
    toks = {n: Ring(name=n, pipeline_config=async_pipe(spec.token_stages)) for n in spec.tokens}

    @schedule
    def loader(q_: Any, src_: Any, ab_: Any) -> None:
        with work_tile_loop(q_):
            for _ in range(spec.prologue):
                item = src_.load()
                ab_.acquire()
                ab_.store(item=item)
                ab_.commit()
            if spec.loop:
                with domain_loop(bound):
                    item = src_.load()
                    ab_.acquire()
                    ab_.store(item=item)
                    ab_.commit()

    def math(me: int, t_in: Ring | None, t_out: Ring | None) -> Any:
        mine, theirs = (when_false, when_true) if me == 0 else (when_true, when_false)

        @schedule
        def turns(q_: Any, src_: Any, ab_: Any, dst_: Any, *tok: Any) -> None:
            it = iter(tok)
            in_ = next(it) if t_in is not None else None
            out = next(it) if t_out is not None else None
            with work_tile_loop(q_):
                _, odd = src_.load_flag()
                for _ in range(spec.prologue if spec.shared else 0):
                    if me == 0:
                        ab_.wait()
                        ab_.read()
                        ab_.release()
                    else:
                        ab_.skip_stage()
                with mine(odd, key="odd"):
                    if out is not None and spec.early:
                        out.acquire()
                        out.commit()
                    if out is not None and spec.protocol == "split":
                        out.acquire()
                    for _ in range(0 if spec.shared else spec.prologue):
                        ab_.wait()
                        ab_.read()
                        ab_.release()
                    if spec.loop:
                        with domain_loop(bound):
                            ab_.wait()
                            ab_.read()
                            ab_.release()
                    if out is not None and spec.protocol == "split":
                        out.commit()
                    elif out is not None and not spec.early:
                        out.acquire()
                        out.commit()
                    dst_.write()
                with theirs(odd, key="odd"):
                    if in_ is not None and spec.drain_first:
                        in_.wait()
                        in_.release()
                    for _ in range(0 if spec.shared else spec.prologue):
                        ab_.skip_stage()
                    if spec.loop:
                        with domain_loop(bound):
                            ab_.skip_stage()
                    if in_ is not None and not spec.drain_first:
                        in_.wait()
                        in_.release()

        return turns

    graph: dict[Any, list[Any]] = {ab: [src], dst: [ab], **{t: [ab] for t in toks.values()}}
    decls = []
    for me in (0, 1):
        t_in, t_out = toks.get(f"t{1 - me}"), toks.get(f"t{me}")
        ins = [t_in] if t_in is not None else []
        outs = [t_out] if t_out is not None else []
        sched = math(me, t_in, t_out)(q, src, ab, dst, *ins, *outs)
        decls.append(task(f"math{me}", sched, [q, src, ab, *ins], [*outs, dst], warp=4 + 4 * me))
    return plan_of(task("loader", loader(q, src, ab), [q, src], [ab], warp=0), *decls, graph=graph)


@functools.cache
def verdict(spec: Spec) -> tuple[str, ...]:
    """``verify``'s error codes for the plan (``crash: ...`` when it raised)."""
    try:
        return tuple(d.code for d in verify(build(spec)).errors)
    except Exception as err:  # the verifier must report, never raise
        return (f"crash: {type(err).__name__}: {err}",)


# -- the oracle -----------------------------------------------------------------------------------
def instance_programs(spec: Spec, owners: tuple[int, ...], ks: tuple[int, ...]) -> Programs:
    """The straight-line ring operations of every task for tiles ``owners`` with bounds ``ks``."""
    progs: Programs = {"loader": [], "math0": [], "math1": []}

    def pair(a: str, b: str, ring: str, n: int = 1) -> list[Op]:
        return [Op(a, ring), Op(b, ring)] * n

    for owner, k in zip(owners, ks, strict=True):
        fills = spec.prologue + k
        own, other = progs[f"math{owner}"], progs[f"math{1 - owner}"]
        out = f"t{owner}" if f"t{owner}" in spec.tokens else None
        progs["loader"] += pair("acquire", "commit", "ab", fills)
        if spec.shared:  # math0 reads the prologue stages of every tile, math1 skips them
            progs["math0"] += pair("wait", "release", "ab", spec.prologue)
            progs["math1"] += [Op("skip", "ab")] * spec.prologue
            fills = k
        if out is not None and spec.early:
            own += pair("acquire", "commit", out)
        if out is not None and spec.protocol == "split":
            own.append(Op("acquire", out))
        own += pair("wait", "release", "ab", fills)
        if out is not None and spec.protocol == "split":
            own.append(Op("commit", out))
        elif out is not None and not spec.early:
            own += pair("acquire", "commit", out)
        if out is not None and spec.drain_first:
            other += pair("wait", "release", out)
        other += [Op("skip", "ab")] * fills
        if out is not None and not spec.drain_first:
            other += pair("wait", "release", out)
    return progs


Key = tuple[tuple[tuple[str, RingSpec], ...], tuple[tuple[str, tuple[Op, ...]], ...]]

_SWAP = {"math0": "math1", "math1": "math0", "t0": "t1", "t1": "t0"}


def _key(rings: dict[str, RingSpec], progs: Programs) -> Key:
    """A canonical key: the smaller of the instance and its mirror (math0 <-> math1, t0 <-> t1).

    The mirror is the same kernel with the tasks' and tokens' names swapped: same verdict.
    """

    def key(swap: Callable[[str], str]) -> Key:
        return (
            tuple(sorted((swap(r), s) for r, s in rings.items())),
            tuple(
                sorted(
                    (swap(t), tuple(Op(o.kind, swap(o.ring), o.count) for o in ops))
                    for t, ops in progs.items()
                )
            ),
        )

    def same(n: str) -> str:
        return n

    return min(key(same), key(lambda n: _SWAP.get(n, n)), key=repr)


@functools.cache
def _explore(key: Key) -> Result:
    rings, progs = key
    return explore(dict(rings), {t: list(ops) for t, ops in progs})


def bounds(spec: Spec) -> tuple[int, int]:
    """The most tiles and the largest ``k`` of the oracle's instances.

    One ``k`` for the kernel: ``S + 3`` tiles (two more than the verifier's windows of
    ``S + 1``) and ``k <= S + 1`` (``k = 0`` without a loop). Per-tile ``k``: 4 tiles
    (``>= S + 1``), each ``k <= max(S, 2)``: a tile of ``S`` fills is what lets a turn passed
    too early show (with ``k <= 2``, a spec the verifier refuses on three stages looked ok);
    ``8 ** 4`` sequences on three stages.
    """
    if not spec.loop:
        return spec.stages + 3, 0
    if spec.per_tile:
        return 4, max(spec.stages, 2)
    return spec.stages + 3, spec.stages + 1


def instances(spec: Spec) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Every ``(owners, ks)`` within the bounds, fewest tiles first, then smallest bounds."""
    t_max, k_max = bounds(spec)
    for tiles in range(t_max + 1):
        if spec.per_tile:
            seqs = sorted(itertools.product(range(k_max + 1), repeat=tiles), key=sum)
        else:
            seqs = [(k,) * tiles for k in range(k_max + 1)]
        for ks in seqs:
            for owners in itertools.product((0, 1), repeat=tiles):
                yield owners, ks


@dataclasses.dataclass(frozen=True)
class Oracle:
    """The oracle's verdict on a spec: ``bad``, the first bad instance and its result."""

    bad: bool
    instances: int
    owners: tuple[int, ...] = ()
    ks: tuple[int, ...] = ()
    result: Result | None = None

    def __str__(self) -> str:
        if not self.bad or self.result is None:
            return f"ok over {self.instances} instances"
        owners = "".join(map(str, self.owners)) or "-"
        return (
            f"{self.result.verdict} at T={len(self.owners)}, owners={owners}, k={self.ks} "
            f"[{self.result.detail}]"
        )


@functools.cache
def oracle(spec: Spec) -> Oracle:
    """Explore every instance of ``spec`` within the bounds; stop at the first bad one."""
    n = 0
    for owners, ks in instances(spec):
        progs = instance_programs(spec, owners, ks)
        used = {o.ring for ops in progs.values() for o in ops}
        rings = {
            r: RingSpec(spec.stages if r == "ab" else spec.token_stages)
            for r in ("ab", *spec.tokens)
            if r in used
        }
        n += 1
        if _explore(_key(rings, progs)).verdict != "ok":
            # Run the instance itself: the memoised result may be its mirror's (names swapped).
            return Oracle(True, n, owners, ks, explore(rings, progs))
    return Oracle(False, n)


# -- the specs ------------------------------------------------------------------------------------
HAND: list[Spec] = [
    *(Spec(s, p) for p in PROTOCOLS for s in (1, 2, 3)),
    Spec(2, "after", prologue=1),
    Spec(3, "none", prologue=1),
    Spec(1, "before", token_stages=2),
    Spec(2, "after", per_tile=True),
    Spec(2, "none", per_tile=True),
    # math0 reads every tile's prologue stage: ok with one k for all tiles, a race when a
    # tile of k = 0 precedes one of math1's (math1 skipped both fills before its wait).
    Spec(2, "after", prologue=1, shared=True),
    Spec(2, "after", prologue=1, shared=True, per_tile=True),
    Spec(1, "after", prologue=1, shared=True),
    Spec(3, "split", prologue=3, shared=True),
    # Three tiles: math1 skips math0's prologue fills of two tiles of k = 0, then waits.
    Spec(3, "after", prologue=1, token_stages=2, shared=True, per_tile=True),
    # Per-tile k on three stages: the windows are grown only where a window can still come
    # of them (ts_verify.runs.skip_windows), not every sequence of up to 4 tiles of 22
    # values; the right protocols were refused before (TS-V115, too many sequences).
    Spec(3, "after", prologue=1, per_tile=True),
    Spec(3, "split", per_tile=True),
    Spec(3, "one_way", per_tile=True),
    # A constant number of fills per tile and no loop: with one fill a tile and no tokens the
    # race needs S + 1 tiles (owners 0001 on three stages), the verifier's longest window; a
    # turn passed before the waits is ok while a tile fills fewer than S stages.
    *(Spec(s, p, prologue=n, loop=False) for p in PROTOCOLS for s, n in ((2, 1), (3, 1), (3, 2))),
]


def random_specs(n: int = RANDOM_SPECS, seed: int = SEED) -> list[Spec]:
    """``n`` seeded specs beyond :data:`HAND`: any protocol, S, prologue, tokens, bound, loop."""
    rng = random.Random(seed)
    out: list[Spec] = []
    while len(out) < n:
        loop = rng.random() < 0.75
        prologue = rng.randint(0, 1) if loop else rng.randint(1, 2)
        spec = Spec(
            stages=rng.randint(1, 3),
            protocol=rng.choice(list(PROTOCOLS)),
            prologue=prologue,
            token_stages=rng.randint(1, 2),
            per_tile=loop and rng.random() < 0.25,
            shared=loop and prologue > 0 and rng.random() < 0.5,
            loop=loop,
        )
        # Per-tile bounds on three stages: 4,681 instances for the oracle (5-45 s a spec);
        # HAND has three.
        if spec.per_tile and spec.stages == 3:
            continue
        if spec not in HAND and spec not in out:
            out.append(spec)
    return out


SPECS = [*HAND, *random_specs()]


# -- tests ----------------------------------------------------------------------------------------
def test_oracle_programs_follow_the_schedule() -> None:
    """One hand-checked instance: S = 1, tiles owned by 0 then 1, one fill each, tokens after."""
    progs = instance_programs(Spec(1, "after"), (0, 1), (1, 1))
    text = {t: " ".join(f"{o.ring}.{o.kind}" for o in ops) for t, ops in progs.items()}
    assert text == {
        "loader": "ab.acquire ab.commit ab.acquire ab.commit",
        "math0": "ab.wait ab.release t0.acquire t0.commit ab.skip t1.wait t1.release",
        "math1": "ab.skip t0.wait t0.release ab.wait ab.release t1.acquire t1.commit",
    }


def test_oracle_verdicts() -> None:
    """The right protocol is ok; no tokens races at the smallest shape, and with one fill a
    tile only after ``S + 1`` tiles (the verifier's longest window)."""
    assert not oracle(Spec(2, "after")).bad
    bad = oracle(Spec(1, "none"))
    assert bad.result is not None and bad.result.verdict == "race"
    assert (bad.owners, bad.ks) == ((0, 1), (1, 1))
    late = oracle(Spec(3, "none", prologue=1, loop=False))
    assert late.result is not None and late.result.verdict == "race"
    assert late.owners == (0, 0, 0, 1)
    assert not oracle(Spec(3, "before", prologue=2, loop=False)).bad


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_oracle_bad_implies_verify_refuses(spec: Spec) -> None:
    """Soundness: an instance that races, hangs or ends unbalanced -> ``verify`` refuses."""
    found = oracle(spec)
    codes = verdict(spec)
    assert not any(c.startswith("crash") for c in codes), codes
    if found.bad:
        assert codes, f"{spec}: verify accepts, oracle {found}"


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_verify_refuses_implies_oracle_bad(spec: Spec) -> None:
    """Completeness within the bounds: ``verify`` refuses -> some instance is bad."""
    codes = verdict(spec)
    if codes:
        found = oracle(spec)
        assert found.bad, f"{spec}: verify {codes}, oracle {found}"


def per_tile_grid() -> list[Spec]:
    """Every per-tile-``k`` spec on three stages: protocol, prologue 0-2, shared, 1-2 token
    stages (70; the oracle takes 5-60 s for each right one)."""
    return [
        Spec(3, p, prologue=pr, token_stages=d, per_tile=True, shared=sh)
        for p in PROTOCOLS
        for pr in (0, 1, 2)
        for sh in ((False, True) if pr else (False,))
        for d in (1, 2)
    ]


def main() -> None:
    """Print every spec's oracle verdict, ``verify``'s codes and the time each took
    (``--grid``: the specs of :func:`per_tile_grid` instead)."""
    for spec in per_tile_grid() if "--grid" in sys.argv else SPECS:
        t0 = time.perf_counter()
        found = oracle(spec)
        t1 = time.perf_counter()
        codes = verdict(spec)
        t2 = time.perf_counter()
        agree = "agree" if found.bad == bool(codes) else "DISAGREE"
        got = ",".join(sorted(set(codes))) or "accepted"
        took = f"verify {t2 - t1:.1f}s, oracle {t1 - t0:.1f}s"
        print(f"{spec!s:40} {agree:8} verify {got:10} oracle {found} ({took})")


if __name__ == "__main__":
    main()
