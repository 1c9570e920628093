"""``skip_stage`` rings against a brute-force oracle (``skip_oracle``): the ping-pong family.

One producer task ``load`` fills ring ``ab`` (``S`` stages, AsyncAsync, one 1-warp task's
arrivals per side); two 1-warp consumer tasks ``c0`` and ``c1`` take turns over ``T`` tiles of
``K`` fills each. The owner of a tile waits for and releases its ``K`` fills; the other skips
them (``ab.skip_stage()``). Order tokens: one-stage rings ``t0`` (``c0`` -> ``c1``) and ``t1``
(``c1`` -> ``c0``); after its tile's waits the owner fills its out-ring, and the other, after
its skips, drains its in-ring, so every owner's first wait comes after the previous owner's
last wait. Tiles are unrolled in Python: a case is one straight-line program per task
(:func:`programs`), from which both the plan (:func:`plan_of_case`) and the oracle's input
(:func:`oracle_input`) are made.

Variants (``Case.variant``): ``tokens`` (the protocol above), ``no_tokens``, ``token_early``
(the owner fills its out-ring *before* its waits), and, in one tile ``Case.bad``, with tokens:
``nonowner_waits`` (the non-owner waits instead of skipping and never releases),
``both_release`` (the non-owner waits and releases too: one fill freed twice) and
``skip_off`` (the non-owner skips ``K + Case.delta`` stages).

Checks: the oracle's verdicts on hand-written cases; soundness (the oracle says race or
deadlock -> ``verify`` reports an error, and kernels the oracle finds ``leftover``, ending
with a fill held or freed twice or a cursor off, are refused too); completeness for this
family (the oracle says ok -> ``verify`` accepts). Run this file as a script for the whole
table.
"""

from __future__ import annotations

import dataclasses
import functools
import random
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import pytest
from skip_oracle import Op, Result, RingSpec, explore
from verify_testkit import Ring, async_pipe, plan_of, ring, task

from ts_ir import KernelPlan, Schedule
from ts_trace import MemoryResource, schedule
from ts_verify import verify

VARIANTS = ("tokens", "no_tokens", "token_early", "nonowner_waits", "both_release", "skip_off")
TOKENS = ("t0", "t1")  # t0: c0 -> c1, t1: c1 -> c0
WARP = 32  # arrivals of one 1-warp task (thread groups count threads)
SEED = 20250611
RANDOM_CASES = 200

Prog = list[tuple[str, str]]
"""``(ring, op)`` in program order; op one of ``acquire commit wait release skip``."""


@dataclasses.dataclass(frozen=True)
class Case:
    """One kernel of the family; ``bad``/``delta``: the tile and skip error of a broken variant."""

    stages: int
    k: int
    turns: tuple[int, ...]
    variant: str = "tokens"
    bad: int = 0
    delta: int = 0

    def __str__(self) -> str:
        turns = "".join(map(str, self.turns)) or "-"
        extra = f",bad={self.bad}" if self.variant in VARIANTS[3:] else ""
        extra += f",delta={self.delta:+d}" if self.variant == "skip_off" else ""
        return f"{self.variant}(S={self.stages},K={self.k},turns={turns}{extra})"


def programs(case: Case) -> dict[str, Prog]:
    """Every task's ring operations, tiles unrolled."""
    progs: dict[str, Prog] = {"load": [], "c0": [], "c1": []}
    tokens = case.variant != "no_tokens"
    for tile, owner in enumerate(case.turns):
        own, other = progs[f"c{owner}"], progs[f"c{1 - owner}"]
        out = [(TOKENS[owner], "acquire"), (TOKENS[owner], "commit")] if tokens else []
        progs["load"] += [("ab", "acquire"), ("ab", "commit")] * case.k
        if case.variant == "token_early":
            own += out
        own += [("ab", "wait"), ("ab", "release")] * case.k
        if case.variant != "token_early":
            own += out
        bad = tile == case.bad
        if bad and case.variant == "nonowner_waits":
            other += [("ab", "wait")] * case.k
        elif bad and case.variant == "both_release":
            other += [("ab", "wait"), ("ab", "release")] * case.k
        elif bad and case.variant == "skip_off":
            other += [("ab", "skip")] * max(case.k + case.delta, 0)
        else:
            other += [("ab", "skip")] * case.k
        if tokens:
            other += [(TOKENS[owner], "wait"), (TOKENS[owner], "release")]
    return progs


def _rings_used(progs: dict[str, Prog]) -> list[str]:
    used = {r for prog in progs.values() for r, _ in prog}
    return [r for r in ("ab", *TOKENS) if r in used]


def oracle_input(case: Case) -> tuple[dict[str, RingSpec], dict[str, list[Op]]]:
    """The oracle's rings (one arrival per task and phase) and programs."""
    progs = programs(case)
    rings = {r: RingSpec(case.stages if r == "ab" else 1) for r in _rings_used(progs)}
    return rings, {t: [Op(op, r) for r, op in prog] for t, prog in progs.items()}


def _traced(prog: Prog, resources: Sequence[MemoryResource]) -> Schedule:
    @schedule
    def unrolled(*proxies: Any) -> None:
        by_name = {res.name: p for res, p in zip(resources, proxies, strict=True)}
        for name, op in prog:
            proxy = by_name[name]
            getattr(proxy, "skip_stage" if op == "skip" else op)()
            if op == "acquire":
                proxy.store()
            elif op == "wait":
                proxy.read()

    return unrolled(*resources)


def plan_of_case(case: Case) -> KernelPlan:
    """The plan: ``ab`` and the tokens count one 1-warp task's arrivals per side."""
    progs = programs(case)
    rings: dict[str, Ring] = {
        r: ring(r, spec=async_pipe(case.stages if r == "ab" else 1, WARP, WARP))
        for r in _rings_used(progs)
    }
    decls = []
    for warp, (name, prog) in enumerate(progs.items()):
        touched = [rings[r] for r in rings if any(x == r for x, _ in prog)]
        fills = {r for r, op in prog if op in ("acquire", "commit")}
        decls.append(
            task(
                name,
                _traced(prog, touched),
                [r for r in touched if r.name not in fills],
                [r for r in touched if r.name in fills],
                warp=warp,
                warps=1,
            )
        )
    return plan_of(*decls, graph={r: [] for r in rings.values()}, name=f"skip_{case.variant}")


# -- the cases ------------------------------------------------------------------------------------
HAND: dict[Case, str] = {
    # One stage: c1's first wait (fill 1, round 1) passes on the fresh barrier's parity.
    Case(1, 1, (0, 1), "no_tokens"): "race",
    Case(1, 1, (0, 1), "tokens"): "ok",
    # Two stages, one fill a tile: each consumer reads one stage only, in order: no race.
    Case(2, 1, (0, 1, 0), "no_tokens"): "ok",
    Case(2, 1, (0, 1, 0), "tokens"): "ok",
    # Two fills a tile on two stages: c1 first waits on stage 0 in round 1.
    Case(2, 2, (0, 1), "no_tokens"): "race",
    Case(2, 2, (0, 1), "tokens"): "ok",
    Case(3, 3, (0, 1, 0, 1), "no_tokens"): "race",
    Case(3, 3, (0, 1, 1, 0), "tokens"): "ok",
    Case(2, 0, (0, 1, 0, 1), "no_tokens"): "ok",
    Case(1, 3, (0,), "no_tokens"): "ok",
    Case(2, 1, (), "tokens"): "ok",
    # c1 may pass c0's token before c0 has waited on fill 0.
    Case(1, 1, (0, 1), "token_early"): "race",
    # The stage is refilled while the non-owner still holds fill 0 ...
    Case(1, 1, (0, 1), "nonowner_waits"): "race",
    Case(1, 1, (0, 1), "both_release"): "race",
    # ... or never refilled: the kernel ends with a fill held, or freed twice.
    Case(2, 1, (0,), "nonowner_waits"): "leftover",
    Case(2, 1, (0,), "both_release"): "leftover",
    # c1 skips past fill 1 and waits for fill 2, which is never made.
    Case(2, 1, (0, 1), "skip_off", 0, +1): "deadlock",
    # c1 skips nothing, reads fill 0 again and frees it twice; fill 1 is never freed.
    Case(2, 1, (0, 1), "skip_off", 0, -1): "leftover",
}


def random_cases(n: int = RANDOM_CASES, seed: int = SEED) -> list[Case]:
    """``n`` seeded cases: S in 1..3, K in 0..3, T in 0..4, alternating or random turns."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        tiles = rng.randint(0, 4)
        if rng.random() < 0.5:
            first = rng.randint(0, 1)
            turns = tuple((first + i) % 2 for i in range(tiles))
        else:
            turns = tuple(rng.randint(0, 1) for _ in range(tiles))
        k = rng.randint(0, 3)
        out.append(
            Case(
                stages=rng.randint(1, 3),
                k=k,
                turns=turns,
                variant=rng.choice(VARIANTS),
                bad=rng.randrange(max(tiles, 1)),
                delta=1 if k == 0 else rng.choice((-1, 1)),
            )
        )
    return out


# -- the comparison -------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Outcome:
    """The oracle's result and the verifier's error codes (``crash: ...`` when it raised)."""

    case: Case
    oracle: Result
    codes: tuple[str, ...]

    @property
    def accepted(self) -> bool:
        return not self.codes

    def __str__(self) -> str:
        got = ", ".join(self.codes) or "accepted"
        return f"{self.case}: oracle {self.oracle.verdict} [{self.oracle.detail}]; verify {got}"


def compare(case: Case) -> Outcome:
    oracle = explore(*oracle_input(case))
    try:
        report = verify(plan_of_case(case))
        codes = tuple(d.code for d in report.errors)
    except Exception as err:  # the verifier must report, never raise
        codes = (f"crash: {type(err).__name__}: {err}",)
    return Outcome(case, oracle, codes)


@functools.cache
def outcomes() -> tuple[Outcome, ...]:
    return tuple(compare(c) for c in (*HAND, *random_cases()))


def unsound() -> list[Outcome]:
    """Bad kernels (race, deadlock) the verifier accepts, and every crash."""
    return [
        o
        for o in outcomes()
        if (o.oracle.verdict in ("race", "deadlock") and o.accepted)
        or any(c.startswith("crash") for c in o.codes)
    ]


def imprecise() -> list[Outcome]:
    """Kernels the oracle finds ok and the verifier refuses (a precision issue)."""
    return [o for o in outcomes() if o.oracle.verdict == "ok" and not o.accepted]


def leftover_accepted() -> list[Outcome]:
    """Kernels that end unbalanced (a fill held, freed twice, or a cursor off) yet verify."""
    return [o for o in outcomes() if o.oracle.verdict == "leftover" and o.accepted]


# -- tests ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(HAND), ids=str)
def test_oracle_hand_cases(case: Case) -> None:
    result = explore(*oracle_input(case))
    assert result.verdict == HAND[case], result


def test_oracle_arrival_counts() -> None:
    """Two readers of every fill on a 1-stage ring: ok when the empty barrier expects both
    releases, a race when it expects one (the stage is refilled while the other still reads),
    a hang when it expects three."""
    load = [Op("acquire", "r"), Op("commit", "r")] * 2
    read = [Op("wait", "r"), Op("release", "r")] * 2
    progs = {"load": load, "a": read, "b": read}
    verdicts = [explore({"r": RingSpec(1, 1, n)}, progs).verdict for n in (2, 1, 3)]
    assert verdicts == ["ok", "race", "deadlock"]
    # One release of count 2 frees the stage as well as two of count 1.
    halves = [Op("acquire", "r"), Op("commit", "r"), Op("acquire", "r"), Op("commit", "r")]
    whole = [Op("wait", "r"), Op("release", "r", 2)] * 2
    assert explore({"r": RingSpec(1, 1, 2)}, {"load": halves, "a": whole}).verdict == "ok"


def test_random_cases_are_deterministic_and_cover_every_verdict() -> None:
    cases = random_cases()
    assert cases == random_cases()
    assert {c.variant for c in cases} == set(VARIANTS)
    verdicts = Counter(explore(*oracle_input(c)).verdict for c in cases)
    assert set(verdicts) == {"ok", "race", "deadlock", "leftover"}, verdicts


def test_the_token_protocol_is_ok_for_every_small_shape() -> None:
    """The oracle's side of the family's claim: with tokens after the waits, no turn order of
    up to 4 tiles races or hangs."""
    for stages in (1, 2, 3):
        for k in (0, 1, 2):
            for tiles in range(5):
                for bits in range(2**tiles):
                    turns = tuple((bits >> i) & 1 for i in range(tiles))
                    result = explore(*oracle_input(Case(stages, k, turns)))
                    assert result.verdict == "ok", (stages, k, turns, result)


def test_verifier_refuses_every_bad_kernel() -> None:
    """Soundness: the oracle says race or deadlock -> ``verify`` reports an error."""
    bad = unsound()
    assert not bad, "\n".join(map(str, bad))


def test_verifier_accepts_every_good_kernel() -> None:
    """Completeness for this family: the oracle says ok -> ``verify`` accepts."""
    refused = imprecise()
    assert not refused, "\n".join(map(str, refused))


def test_verifier_refuses_every_unbalanced_kernel() -> None:
    """A fill held at the end, freed twice or a cursor off: ``verify`` reports it."""
    accepted = leftover_accepted()
    assert not accepted, "\n".join(map(str, accepted))


def main() -> None:
    """Print the comparison: verdict counts, then every disagreement."""
    table = Counter((o.oracle.verdict, "accepted" if o.accepted else "refused") for o in outcomes())
    for (verdict, got), n in sorted(table.items()):
        print(f"oracle {verdict:9} verify {got:9} {n}")
    for title, rows in (
        ("unsound / crash", unsound()),
        ("imprecise", imprecise()),
        ("leftover accepted", leftover_accepted()),
    ):
        print(f"\n{title}: {len(rows)}")
        for o in rows:
            print(f"  {o}")


if __name__ == "__main__":
    main()
