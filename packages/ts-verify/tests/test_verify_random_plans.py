"""Soundness and precision against an independent brute-force oracle, on random ring plans.

The oracle (``ring_oracle``) expands and runs the generated plans (``ring_oracle_plans``) with
its own semantics; the verifier sees only the ts-ir lowering. A plan the verifier proves must
never fail in the oracle (soundness), and a plan the verifier rejects must fail there (no false
alarm on these plans, whose failures show up at small trip and tile counts). The budget is
fixed for CI; the long run is ``bench/verify_soundness.py``. The tests at the end check the
oracle itself on plans whose verdict is known by hand.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ring_oracle import Gen, Guard, Loop, Node, Ops, Tiles, When, failure, oracle_ok
from ring_oracle_plans import generate, to_plan

from ts_verify import verify


def _agree(seed: int) -> None:
    # Small plans (rings of 1 or 2 stages; per-tile bounds on one ring): the verifier's cut-offs
    # on a ring cycle with per-tile bounds can take minutes, too long for CI.
    gen = generate(random.Random(seed), small=True)
    report = verify(to_plan(gen))
    expected = oracle_ok(gen)
    assert report.ok == expected, (seed, gen, failure(gen), report.as_text())


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_verifier_agrees_with_the_oracle(seed: int) -> None:
    _agree(seed)


@pytest.mark.parametrize("small", [False, True])
def test_the_generator_covers_every_feature_both_ways(small: bool) -> None:
    """Each feature comes in plans the oracle passes and plans it fails (else agreement on
    them would prove nothing), in the benchmark's plans and in CI's small ones."""
    seen: dict[str, set[bool]] = {}
    for seed in range(400):
        gen = generate(random.Random(seed), small=small)
        ok = oracle_ok(gen)
        for feature in gen.features:
            seen.setdefault(feature, set()).add(ok)
    features = ("persistent", "skips", "flags", "tile_bounds", "lags", "aliasing")
    assert {f: seen.get(f) for f in features} == {f: {True, False} for f in features}


# -- the oracle on plans decided by hand ----------------------------------------------------------
P = (("r", "acquire"), ("r", "commit"))
C = (("r", "wait"), ("r", "release"))


def _pair(stages: int, producer: tuple[Node, ...], consumer: tuple[Node, ...]) -> Gen:
    return Gen({"r": stages}, {"p": producer, "c": consumer})


def _outcome(gen: Gen) -> str:
    found = failure(gen)
    return "ok" if found is None else found[0]


def test_oracle_ring_capacity_and_lags() -> None:
    # A consumer that releases the stage of L iterations ago holds L + 1 stages at its wait.
    def lagged(lag: int, tail: int) -> tuple[Node, ...]:
        body = (Ops((("r", "wait"),)), When(Guard("every", start=lag), (Ops((("r", "release"),)),)))
        return (Loop(4, body), Ops((("r", "release"),) * tail))

    produce = (Loop(4, (Ops(P),)),)
    assert _outcome(_pair(3, produce, lagged(2, 2))) == "ok"
    assert _outcome(_pair(2, produce, lagged(2, 2))) == "deadlock"
    assert _outcome(_pair(3, produce, lagged(2, 1))) == "bracket"  # one stage never released
    assert _outcome(_pair(3, produce, lagged(2, 3))) == "bracket"  # a release of nothing
    assert _outcome(_pair(3, (Loop(5, (Ops(P),)),), lagged(2, 2))) == "leftover"


def test_oracle_flags_are_per_tile_and_keyed() -> None:
    """A producer filling under flag `f` and a consumer draining under `f` agree in every tile;
    under `g` they disagree in some tile assignment (and only persistent plans see it per tile)."""

    def task(ops: tuple[tuple[str, str], ...], key: str) -> tuple[Node, ...]:
        return (Tiles(None, (When(Guard("flag", key), (Loop(1, (Ops(ops),)),)),)),)

    assert oracle_ok(_pair(1, task(P, "f"), task(C, "f")))
    bad = failure(_pair(1, task(P, "f"), task(C, "g")))
    assert bad is not None and bad[1].flags["f"] != bad[1].flags["g"]


def test_oracle_skips_follow_the_predicate() -> None:
    def task(ops: tuple[tuple[str, str], ...], pred: str) -> tuple[Node, ...]:
        return (Tiles(pred, (When(Guard("skippable"), (Loop(2, (Ops(ops),)),)),)),)

    assert oracle_ok(_pair(1, task(P, "p"), task(C, "p")))
    assert not oracle_ok(_pair(1, task(P, "p"), task(C, "q")))


def test_oracle_aliasing_by_happens_before() -> None:
    """Two rings: drained-then-filled by a relay is clean; filled in one loop is a conflict;
    a persistent relay overlaps tile t's `b` with tile t + 1's `a`."""
    a_p, a_c = (("a", "acquire"), ("a", "commit")), (("a", "wait"), ("a", "release"))
    b_p, b_c = (("b", "acquire"), ("b", "commit")), (("b", "wait"), ("b", "release"))
    relay: tuple[Node, ...] = (Loop(3, (Ops(a_c),)), Loop(3, (Ops(b_p),)))
    ordered: dict[str, tuple[Node, ...]] = {
        "p": (Loop(3, (Ops(a_p),)),),
        "r": relay,
        "c": (Loop(3, (Ops(b_c),)),),
    }
    stages = {"a": 2, "b": 2}
    assert oracle_ok(Gen(stages, ordered, (("a", "b"),)))
    assert oracle_ok(Gen(stages, ordered))  # and without the alias, of course
    both: dict[str, tuple[Node, ...]] = {
        "p": (Loop(3, (Ops(a_p + b_p),)),),
        "c": (Loop(3, (Ops(a_c + b_c),)),),
    }
    assert _outcome(Gen(stages, both, (("a", "b"),))) == "alias"
    assert oracle_ok(Gen(stages, both))
    tiles: dict[str, tuple[Node, ...]] = {t: (Tiles(None, b),) for t, b in ordered.items()}
    found = failure(Gen(stages, tiles, (("a", "b"),)))
    assert found is not None and found[0] == "alias" and found[1].tiles == 2


# -- regressions found by the long run (bench/verify_soundness.py) --------------------------------
def _carry(second: Guard, consumer_tail: int = 1) -> Gen:
    """The consumer waits in a first block under flag `f` and releases in a second block."""
    first = When(Guard("flag", "f"), (Ops((("r", "wait"),)),))
    then = When(second, (Ops((("r", "release"),) * consumer_tail),))
    produce = When(Guard("flag", "f"), (Ops(P),))
    return _pair(3, (Tiles(None, (produce,)),), (Tiles(None, (first, then)),))


@pytest.mark.parametrize(
    ("second", "ok"),
    [
        (Guard("flag", "f"), True),  # one value per tile: both blocks run or neither
        (Guard("flag", "g"), False),  # another flag: a stage stays open when only f is set
        (Guard("flag", "f", negated=True), False),  # the complement: never both
    ],
)
def test_blocks_of_one_condition_may_carry_a_stage(second: Guard, ok: bool) -> None:
    """Seed 9007 of the long run: two `skippable()` blocks of one tile, the first leaving a
    stage open for the second, were TS-V111 (a false alarm): the blocks share one value."""
    gen = _carry(second)
    assert oracle_ok(gen) is ok
    report = verify(to_plan(gen))
    assert report.ok is ok, report.as_text()
    if not ok:
        assert "TS-V111" in {d.code for d in report.diagnostics}


def test_seed_9007_skippable_blocks_verify() -> None:
    gen = generate(random.Random(9007))
    assert oracle_ok(gen)
    assert verify(to_plan(gen)).ok
