"""Soundness and precision against an independent brute-force oracle, on random ring plans.

The oracle (``ring_oracle``) expands and runs the generated plans with its own semantics; the
verifier sees only the ts-ir lowering. A plan the verifier proves must never fail in the
oracle (soundness), and a plan the verifier rejects must fail there (no false alarm on these
plans, whose failures show up at small trip counts). The budget is fixed for CI; the long run
is ``bench/verify_soundness.py``.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from ring_oracle import oracle_ok
from ring_oracle_plans import generate, to_plan

from ts_verify import verify


def _agree(seed: int) -> None:
    gen = generate(random.Random(seed))
    plan = to_plan(gen)
    report = verify(plan)
    expected = oracle_ok(gen)
    assert report.ok == expected, (seed, gen, report.as_text())


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_verifier_agrees_with_the_oracle(seed: int) -> None:
    _agree(seed)


def test_the_oracle_sees_both_verdicts() -> None:
    """The generator makes both good and bad plans (else agreement would prove nothing)."""
    verdicts = {oracle_ok(generate(random.Random(s))) for s in range(60)}
    assert verdicts == {True, False}
