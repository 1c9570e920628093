"""``examples/hopper/_timing.best_of_rounds``: a thrown-away first round, then shuffled rounds.

The GEMM sweep and the tuner keep each contender's best round. The first contender after a
pause runs on cooler, faster clocks, so the first round must not count, and no contender may
open every round; a contender right after a light one runs cooler too, so no contender may
keep its predecessor in every round.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "hopper"


def _timing() -> Any:
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return importlib.import_module("_timing")


def _recorded(names: list[str], rounds: int, seed: int = 0) -> tuple[dict[str, float], list[str]]:
    calls: list[str] = []

    def measure(name: str) -> Any:
        def ms() -> float:
            seen = calls.count(name)
            calls.append(name)
            return 0.5 if seen == 0 else 10.0 + seen  # the warm-up is the fastest

        return ms

    best = _timing().best_of_rounds({n: measure(n) for n in names}, rounds=rounds, seed=seed)
    return best, calls


def test_the_first_round_does_not_count() -> None:
    best, calls = _recorded(["a", "b", "c"], rounds=3)
    assert best == {"a": 11.0, "b": 11.0, "c": 11.0}  # the 0.5 of the warm-up is ignored
    assert calls[:3] == ["a", "b", "c"]  # the warm-up round, then 3 rounds of every name
    assert all(sorted(calls[3 + 3 * r : 6 + 3 * r]) == ["a", "b", "c"] for r in range(3))


def test_no_contender_keeps_its_place_or_its_predecessor() -> None:
    """The tuner's case: 45 candidates, 4 rounds. A rotation kept every predecessor."""
    names = [f"k{i}" for i in range(45)]
    _, calls = _recorded(names, rounds=4)
    rounds = [calls[45 * (r + 1) : 45 * (r + 2)] for r in range(4)]
    assert all(sorted(r) == sorted(names) for r in rounds)
    assert len({r[0] for r in rounds}) > 1  # not one opener
    before = {n: {r[r.index(n) - 1] if r.index(n) else None for r in rounds} for n in names}
    assert all(len(p) > 1 for p in before.values())
    assert _recorded(names, rounds=4)[1] == calls  # seeded: the same orders again
    assert _recorded(names, rounds=4, seed=1)[1] != calls


def test_nothing_to_time_gives_nothing() -> None:
    """A shape whose every candidate was wrong leaves the tuner nothing to time: no crash."""
    assert _timing().best_of_rounds({}, rounds=3) == {}


def test_a_measurement_lasts_long_enough_for_the_clocks_to_settle() -> None:
    """``steady_iters``: enough launches for ``MEASURE_S`` at the nominal rate, within bounds."""
    t = _timing()
    flop = 2.0 * 4096**3  # ~200 us a launch: 256 of them fill 50 ms
    assert t.steady_iters(30, flop) * flop / t.NOMINAL_FLOPS >= t.MEASURE_S
    assert (t.steady_iters(30, flop) - 1) * flop / t.NOMINAL_FLOPS < t.MEASURE_S
    assert t.steady_iters(30, 2.0 * 1024**3) == t.MAX_ITERS  # a tiny problem: capped
    assert t.steady_iters(10, 2.0 * 16384**3) == 10  # 12.6 ms a launch: the floor decides
    assert t.steady_iters(30, 2.0 * 2048**3, seconds=0) == 30  # 0: exactly the floor
    assert t.steady_iters(30, 0.0) == 30  # an empty problem: nothing to fill
