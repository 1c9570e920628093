"""The verifier against a brute-force oracle (``verify_oracle``): every interleaving, real
mbarrier semantics, written independently of ``ts_verify.simulate``.

* Agreement: for hand-written plans and each cut-off valuation, one greedy simulator run and
  the search over all interleavings agree on "deadlocks", and every interleaving that reaches
  the deadlock has the simulator's length (Kahn determinacy).
* Cut-off: for random plans with runtime-valued loops, ``verify`` accepts a plan exactly when
  no trip count up to ``2 * (total stages) + 4`` deadlocks.
"""

from __future__ import annotations

import sys
from collections import Counter
from itertools import islice
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import pytest
from hypothesis import HealthCheck, example, given, settings
from verify_oracle import (
    Bar,
    barrier_programs,
    explore,
    kernels,
    loop,
    loop_classes,
    make_plan,
    small_valuations,
    tiles,
    when,
)

from ts_ir import FIRST_ITER, LAST_ITER, Every, KernelPlan, PipelineType
from ts_verify import verify
from ts_verify.unroll import Valuation
from ts_verify.whole_kernel import run_valuation, valuations

N = "n"
K = "@Gemm.k_blocks"

# ---------------------------------------------------------------------------------------------
# Hand-written plans: tiny (2-3 tasks, 1-3 stages) so that the search is fast.
# ---------------------------------------------------------------------------------------------

SOUND: dict[str, KernelPlan] = {
    "copy": make_plan(
        "copy",
        {"P": 2},
        [
            ("load", 1, [loop(N, "P.acquire P.load P.commit")]),
            ("store", 1, [loop(N, "P.wait P.use P.release")]),
        ],
    ),
    "tma_copy": make_plan(
        "tma_copy",
        {"P": 2},
        [
            ("load", 1, [loop(N, "P.try_acquire P.acquire P.load P.commit")]),
            ("store", 4, [loop(N, "P.try_wait P.wait P.use P.release")]),
        ],
        kind=PipelineType.TmaAsync,
        bytes_per_stage=4096,
    ),
    "ping_pong": make_plan(
        "ping_pong",
        {"P": 1, "Q": 1},
        [
            ("a", 1, [loop(N, "P.acquire P.load P.commit Q.wait Q.use Q.release")]),
            ("b", 2, [loop(N, "P.wait P.use P.release Q.acquire Q.load Q.commit")]),
        ],
    ),
    "fork": make_plan(
        "fork",
        {"P": 2},
        [
            ("load", 1, [loop(N, "P.acquire P.load P.commit")]),
            ("c1", 2, [loop(N, "P.wait P.use P.release")]),
            ("c2", 1, [loop(N, "P.wait P.use P.release")]),
        ],
    ),
    "merge": make_plan(
        "merge",
        {"P": 1},
        [
            ("p1", 1, [loop(N, "P.acquire P.load P.commit")]),
            ("p2", 2, [loop(N, "P.acquire P.load P.commit")]),
            ("sum", 1, [loop(N, "P.wait P.use P.release")]),
        ],
    ),
    "gemm": make_plan(
        "gemm",
        {"AB": 2, "ACC": 1},
        [
            ("load", 1, [tiles(loop(K, "AB.acquire AB.load AB.commit"))]),
            (
                "mma",
                4,
                [tiles("ACC.acquire", loop(K, "AB.wait AB.use ACC.load AB.release"), "ACC.commit")],
            ),
            ("epilogue", 4, [tiles("ACC.wait ACC.use ACC.release")]),
        ],
    ),
    "lagged_ok": make_plan(
        "lagged_ok",
        {"P": 2},
        [
            ("load", 1, [loop(N, "P.acquire P.load P.commit P.acquire P.load P.commit")]),
            ("mma", 1, [loop(N, "P.wait P.wait P.use P.release P.release")]),
        ],
    ),
    # The WGMMA main loop: release the previous stage on every iteration but the first, and
    # the last stage on the last iteration (every(1, start=1) + last_iter).
    "lagged_every_ok": make_plan(
        "lagged_every_ok",
        {"P": 2},
        [
            ("load", 1, [loop(N, "P.acquire P.load P.commit")]),
            (
                "mma",
                1,
                [
                    loop(
                        N,
                        "P.wait P.use",
                        when(Every(1, start=1), "P.release"),
                        when(LAST_ITER, "P.release"),
                    )
                ],
            ),
        ],
    ),
    "prologue_ok": make_plan(
        "prologue_ok",
        {"P": 2},
        [
            (
                "load",
                1,
                [
                    loop(
                        N,
                        when(FIRST_ITER, "P.acquire P.load P.commit"),
                        "P.acquire P.load P.commit",
                    )
                ],
            ),
            (
                "mma",
                1,
                [
                    loop(
                        N,
                        when(FIRST_ITER, "P.wait"),
                        "P.wait P.use P.release",
                        when(LAST_ITER, "P.release"),
                    )
                ],
            ),
        ],
    ),
}

DEADLOCKING: dict[str, KernelPlan] = {
    # The same lagged loop on a one-stage ring: the second wait needs the stage still held.
    "lagged_every_one_stage": make_plan(
        "lagged_every_one_stage",
        {"P": 1},
        [
            ("load", 1, [loop(N, "P.acquire P.load P.commit")]),
            (
                "mma",
                1,
                [
                    loop(
                        N,
                        "P.wait P.use",
                        when(Every(1, start=1), "P.release"),
                        when(LAST_ITER, "P.release"),
                    )
                ],
            ),
        ],
    ),
    # Each task waits for the other's pipeline before filling its own.
    "cross_wait": make_plan(
        "cross_wait",
        {"P": 1, "Q": 1},
        [
            ("a", 1, [loop(N, "Q.wait Q.use Q.release P.acquire P.load P.commit")]),
            ("b", 1, [loop(N, "P.wait P.use P.release Q.acquire Q.load Q.commit")]),
        ],
    ),
    # Both tasks fill all n stages before draining: a hang once n exceeds both rings.
    "capacity": make_plan(
        "capacity",
        {"P": 2, "Q": 1},
        [
            ("a", 1, [loop(N, "P.acquire P.load P.commit"), loop(N, "Q.wait Q.use Q.release")]),
            ("b", 1, [loop(N, "Q.acquire Q.load Q.commit"), loop(N, "P.wait P.use P.release")]),
        ],
    ),
    # The consumer holds two stages of a one-stage ring.
    "lagged_release": make_plan(
        "lagged_release",
        {"P": 1},
        [
            ("load", 1, [loop(N, "P.acquire P.load P.commit P.acquire P.load P.commit")]),
            ("mma", 1, [loop(N, "P.wait P.wait P.use P.release P.release")]),
        ],
    ),
    "lagged_prologue": make_plan(
        "lagged_prologue",
        {"P": 1},
        [
            (
                "load",
                1,
                [
                    loop(
                        N,
                        when(FIRST_ITER, "P.acquire P.load P.commit"),
                        "P.acquire P.load P.commit",
                    )
                ],
            ),
            (
                "mma",
                1,
                [
                    loop(
                        N,
                        when(FIRST_ITER, "P.wait"),
                        "P.wait P.use P.release",
                        when(LAST_ITER, "P.release"),
                    )
                ],
            ),
        ],
    ),
    # Fork: c2 drains Q before P, but c1 only fills Q once c2 has released P.
    "fork_deadlock": make_plan(
        "fork_deadlock",
        {"P": 1, "Q": 1},
        [
            ("load", 1, [loop(N, "P.acquire P.load P.commit")]),
            ("c1", 1, [loop(N, "P.wait P.use P.release Q.acquire Q.load Q.commit")]),
            ("c2", 1, [loop(N, "Q.wait Q.use Q.release"), loop(N, "P.wait P.use P.release")]),
        ],
    ),
    # Merge: p2 fills its half of P only after the consumer answered on Q.
    "merge_deadlock": make_plan(
        "merge_deadlock",
        {"P": 1, "Q": 1},
        [
            ("p1", 1, [loop(N, "P.acquire P.load P.commit")]),
            ("p2", 1, [loop(N, "Q.wait Q.use Q.release P.acquire P.load P.commit")]),
            ("sum", 1, [loop(N, "P.wait P.use P.release Q.acquire Q.load Q.commit")]),
        ],
    ),
    # Persistent: the loader waits for the previous tile's accumulator before loading.
    "tile_cycle": make_plan(
        "tile_cycle",
        {"AB": 2, "ACC": 1},
        [
            (
                "load",
                1,
                [tiles("ACC.wait ACC.use ACC.release", loop(K, "AB.acquire AB.load AB.commit"))],
            ),
            (
                "mma",
                1,
                [tiles(loop(K, "AB.wait AB.use AB.release"), "ACC.acquire ACC.load ACC.commit")],
            ),
        ],
    ),
}

# Three one-stage rings in a cycle; t2 fills C for the whole loop before it drains B. Every
# loop touches at most two rings, so the cut-off set stops at k = 4, but it hangs from k = 5.
CUTOFF_GAP = make_plan(
    "cutoff_gap",
    {"A": 1, "B": 1, "C": 1},
    [
        ("t0", 1, [loop("k", "A.acquire A.commit C.wait C.release")]),
        ("t1", 1, [loop("k", "A.wait A.release B.acquire B.commit")]),
        ("t2", 1, [loop("k", "C.acquire C.commit"), loop("k", "B.wait B.release")]),
    ],
)

# Found by the hypothesis run below (2026-12-02): t0 opens three stages per iteration (two
# waits on C), so t2's first loop outlasts the buffering only from k = 9, past the old cut-off
# of (3 stages + 3 tasks + 2) = 8. The cut-off now scales the slack by the opens per iteration.
MULTI_OPEN_GAP = make_plan(
    "multi_open_gap",
    {"A": 1, "B": 1, "C": 1},
    [
        ("t0", 1, [loop("k", "C.wait C.release A.acquire A.commit C.wait C.release")]),
        ("t1", 1, [loop("k", "A.wait A.release B.acquire B.commit")]),
        (
            "t2",
            1,
            [loop("k", "C.acquire C.commit"), loop("k", "B.wait B.release C.acquire C.commit")],
        ),
    ],
)

# Every(3) thins both rings: three-stage rings hold nine iterations, the cut-off set stops at 7.
_E3 = Every(3)
EVERY_GAP = make_plan(
    "every_gap",
    {"A": 3, "B": 3},
    [
        (
            "t0",
            1,
            [loop("k", when(_E3, "A.acquire A.commit")), loop("k", when(_E3, "B.wait B.release"))],
        ),
        (
            "t1",
            1,
            [loop("k", when(_E3, "B.acquire B.commit")), loop("k", when(_E3, "A.wait A.release"))],
        ),
    ],
)

# Arrival counts that do not match the tasks (TS-V203); the runs are no longer determinate.
WRONG_COUNTS: dict[str, KernelPlan] = {
    "fork_empty_too_small": make_plan(
        "fork_empty_too_small",
        {"P": 1},
        [
            ("load", 1, [loop(N, "P.acquire P.load P.commit")]),
            ("c1", 1, [loop(N, "P.wait P.use P.release")]),
            ("c2", 1, [loop(N, "P.wait P.use P.release")]),
        ],
        groups={"P": (32, 32)},
    ),
    "merge_full_too_small": make_plan(
        "merge_full_too_small",
        {"P": 1},
        [
            ("p1", 1, [loop(N, "P.acquire P.load P.commit")]),
            ("p2", 1, [loop(N, "P.acquire P.load P.commit")]),
            ("sum", 1, [loop(N, "P.wait P.use P.release")]),
        ],
        groups={"P": (32, 32)},
    ),
    "tma_merge_too_small": make_plan(
        "tma_merge_too_small",
        {"P": 1},
        [
            ("p1", 1, [loop(N, "P.acquire P.load P.commit")]),
            ("p2", 1, [loop(N, "P.acquire P.load P.commit")]),
            ("sum", 1, [loop(N, "P.wait P.use P.release")]),
        ],
        kind=PipelineType.TmaAsync,
        bytes_per_stage=1024,
        groups={"P": (1, 32)},
    ),
    "full_too_large": make_plan(
        "full_too_large",
        {"P": 2},
        [
            ("load", 1, [loop(N, "P.acquire P.load P.commit")]),
            ("store", 1, [loop(N, "P.wait P.use P.release")]),
        ],
        groups={"P": (64, 32)},
    ),
}


def _trips(plan: KernelPlan, n: int) -> Valuation:
    """Trip count ``n`` for every runtime-valued loop of ``plan``."""
    return Valuation(1, {(key, -1): n for key in loop_classes(plan)})


# ---------------------------------------------------------------------------------------------
# The oracle itself
# ---------------------------------------------------------------------------------------------


def test_oracle_barrier_phases_and_parity() -> None:
    bar = Bar()
    assert bar.parity_passed(1) and not bar.parity_passed(0)  # a fresh barrier: phase 0 open
    bar = bar.arrive(2, 1)
    assert (bar.phases, bar.arrivals) == (0, 1)
    bar = bar.arrive(2, 1)
    assert (bar.phases, bar.arrivals) == (1, 0) and bar.parity_passed(0)
    bar = bar.arrive(1, 1, tx=128)  # arrivals are in, the bytes are not
    assert (bar.phases, bar.tx) == (1, 128)
    bar = bar.land(1, 128)
    assert (bar.phases, bar.tx) == (2, 0) and bar.parity_passed(1) and not bar.parity_passed(0)


def test_oracle_finds_the_immediate_cross_wait() -> None:
    ex = explore(DEADLOCKING["cross_wait"], _trips(DEADLOCKING["cross_wait"], 1))
    assert ex.deadlock == () and not ex.races
    assert ex.ends == frozenset({(0, 0)})


def test_oracle_explores_every_interleaving_of_a_copy() -> None:
    # One stage, two iterations: producer and consumer alternate through a ring of one, and
    # every interleaving ends with both done.
    plan = make_plan(
        "copy1",
        {"P": 1},
        [("p", 1, [loop(2, "P.acquire P.commit")]), ("c", 1, [loop(2, "P.wait P.release")])],
    )
    ex = explore(plan, Valuation())
    assert not ex.deadlocks and not ex.races
    assert ex.ends == frozenset({(4, 4)})
    assert ex.states > 8  # more than one interleaving was explored


@pytest.mark.parametrize("name", sorted(WRONG_COUNTS))
def test_oracle_reports_races_of_wrong_counts(name: str) -> None:
    outcomes = [explore(WRONG_COUNTS[name], v) for v in small_valuations(WRONG_COUNTS[name], 3)]
    if name == "full_too_large":  # the phase never completes: a hang, no race
        assert any(ex.deadlocks for ex in outcomes) and not any(ex.races for ex in outcomes)
    else:
        assert any(ex.races for ex in outcomes)


# ---------------------------------------------------------------------------------------------
# Agreement: one greedy run per valuation decides what all interleavings do.
# ---------------------------------------------------------------------------------------------


def _agree(plan: KernelPlan, cap: int = 50) -> list[bool]:
    verdicts = []
    for val in islice(valuations(plan), cap):
        run = run_valuation(plan, val)
        ex = explore(plan, val)
        where = f"{plan.name} at {val.describe()}"
        assert run.kind in ("ok", "deadlock"), where
        assert not ex.races, where
        assert (run.kind == "deadlock") == ex.deadlocks, where
        # Determinacy: every interleaving ends in the same state ...
        assert len(ex.ends) == 1, where
        if ex.deadlock is not None:
            # ... so every path to the deadlock has the simulator's length and its ops.
            assert len(run.events) == len(ex.deadlock), where
            assert Counter(e.task for e in run.events) == Counter(t for t, _ in ex.deadlock), where
            assert [e.step_id for e in run.events if e.task == ex.deadlock[-1][0]] == [
                op.step.id for t, op in ex.deadlock if t == ex.deadlock[-1][0]
            ], where
        verdicts.append(ex.deadlocks)
    return verdicts


@pytest.mark.parametrize("name", sorted(SOUND))
def test_sound_plans_agree_and_never_deadlock(name: str) -> None:
    plan = SOUND[name]
    assert not any(_agree(plan))
    report = verify(plan)
    assert report.ok and not report.diagnostics, report.as_text()


@pytest.mark.parametrize("name", sorted(DEADLOCKING))
def test_deadlocking_plans_agree_and_are_reported(name: str) -> None:
    plan = DEADLOCKING[name]
    assert any(_agree(plan))
    assert verify(plan).codes() == ["TS-V302"]


@pytest.mark.parametrize("plan", [CUTOFF_GAP, EVERY_GAP], ids=["cycle", "every"])
def test_gap_plans_agree(plan: KernelPlan) -> None:
    _agree(plan)


def test_gap_plans_hang_only_for_long_loops() -> None:
    assert not any(explore(CUTOFF_GAP, _trips(CUTOFF_GAP, n)).deadlocks for n in range(5))
    assert all(explore(CUTOFF_GAP, _trips(CUTOFF_GAP, n)).deadlocks for n in range(5, 9))
    assert not any(explore(EVERY_GAP, _trips(EVERY_GAP, n)).deadlocks for n in range(10))
    assert explore(EVERY_GAP, _trips(EVERY_GAP, 10)).deadlocks


@pytest.mark.parametrize("name", sorted(WRONG_COUNTS))
def test_wrong_counts_the_run_is_one_of_the_interleavings(name: str) -> None:
    # With a wrong arrival count a phase completes early or never; what happens next depends
    # on the interleaving. The simulator's one run must still be a possible outcome.
    plan = WRONG_COUNTS[name]
    assert "TS-V203" in verify(plan).codes()
    for val in islice(valuations(plan), 50):
        run = run_valuation(plan, val)
        ex = explore(plan, val)
        where = f"{name} at {val.describe()}"
        if run.kind == "deadlock":
            assert ex.deadlocks, where
        elif run.kind == "race":
            assert ex.races, where
        else:
            assert not ex.deadlocks and not ex.races, where


# ---------------------------------------------------------------------------------------------
# The cut-off: verify(plan).ok  <=>  no trip count up to 2 * (total stages) + 4 deadlocks.
# ---------------------------------------------------------------------------------------------

_CUTOFF_GAP_REASON = (
    "the cut-off set is too small: whole_kernel._loops bounds a loop's trip counts by the "
    "stages of the rings *that loop* touches, but a hang can need the slack of every ring and "
    "task on a cycle (CUTOFF_GAP: 3 one-stage rings, checked up to k=4, hangs from k=5), and "
    "Every(p) guards multiply it by p (EVERY_GAP: checked up to k=7, hangs from k=10)"
)


def _brute_force_deadlock(plan: KernelPlan) -> Valuation | None:
    total = sum(r.pipeline.stages for r in plan.resources if r.pipeline is not None)
    for val in small_valuations(plan, 2 * total + 4):
        if explore(plan, val, programs=barrier_programs, stop_early=True).deadlocks:
            return val
    return None


@pytest.mark.parametrize(
    "plan", [CUTOFF_GAP, EVERY_GAP, MULTI_OPEN_GAP], ids=["cycle", "every", "multi_open"]
)
def test_cutoff_covers_long_loops(plan: KernelPlan) -> None:
    hang = _brute_force_deadlock(plan)
    assert hang is not None
    assert not verify(plan).ok, f"verify accepts {plan.name}, which hangs at {hang.describe()}"


# Derandomized: the brute force's cost varies a lot between plans (3 s to 90 s for 50 random
# ones); a fixed set keeps CI time stable. bench/verify_soundness.py is the long random run.
@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    database=None,
)
@example(plan=CUTOFF_GAP)
@example(plan=MULTI_OPEN_GAP)
@given(
    plan=kernels(
        valid=False,
        topologies=(
            "chain2",
            "chain3",
            "fork",
            "merge",
            "ring2",
            "ring3",
            "diamond",
            "merge_chain",
        ),
        max_stages=2,
        bounds=("runtime", "dynamic"),
    )
)
def test_cutoff_is_sound_against_brute_force(plan: KernelPlan) -> None:
    report = verify(plan)
    # The random plans are well bracketed and balanced: only deadlocks can be found.
    assert set(report.codes()) <= {"TS-V302"}, report.as_text()
    hang = _brute_force_deadlock(plan)
    if hang is None:
        assert report.ok, report.as_text()
    else:
        assert not report.ok, f"verify accepts {plan.name}, which hangs at {hang.describe()}"
