"""``examples/hopper/_timing.best_of_rounds``: a thrown-away first round, then rotated rounds.

The GEMM sweep and the tuner keep each contender's best round. The first contender after a
pause runs on cooler, faster clocks, so the first round must not count, and no contender may
open every round.
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


def test_the_first_round_does_not_count_and_the_order_rotates() -> None:
    calls: list[str] = []

    def measure(name: str, first: float, later: float) -> Any:
        def ms() -> float:
            seen = calls.count(name)
            calls.append(name)
            return first if seen == 0 else later + seen  # the warm-up is the fastest

        return ms

    measures = {n: measure(n, 0.5, 10.0) for n in ("a", "b", "c")}
    best = _timing().best_of_rounds(measures, rounds=3)
    assert best == {"a": 11.0, "b": 11.0, "c": 11.0}  # the 0.5 of the warm-up is ignored
    assert calls[:3] == ["a", "b", "c"]  # the warm-up round
    rounds = [calls[3 + 3 * r : 6 + 3 * r] for r in range(3)]
    assert rounds == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]]


def test_nothing_to_time_gives_nothing() -> None:
    """A shape whose every candidate was wrong leaves the tuner nothing to time: no crash."""
    assert _timing().best_of_rounds({}, rounds=3) == {}
