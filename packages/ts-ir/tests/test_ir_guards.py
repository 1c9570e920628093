"""Tests of ts_ir.guards."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ts_ir import (
    FIRST_ITER,
    LAST_ITER,
    SKIPPABLE,
    BlockGuard,
    Every,
    OpaqueCondition,
    guard_fires,
    is_iteration_predicate,
)

INT32_MAX = 2**31 - 1


@pytest.mark.parametrize(
    ("period", "start", "error", "message"),
    [
        (0, 0, ValueError, r"Every.period must be in \[1, "),
        (-3, 0, ValueError, "Every.period"),
        (INT32_MAX + 1, 0, ValueError, "Every.period"),
        (1, -1, ValueError, r"Every.start must be in \[0, "),
        (1, INT32_MAX + 1, ValueError, "Every.start"),
        (1.0, 0, TypeError, "Every.period must be an int"),
        (True, 0, TypeError, "Every.period must be an int"),
        (2, "0", TypeError, "Every.start must be an int"),
    ],
)
def test_every_validation(period: Any, start: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        Every(period, start)


def test_every_limits_accepted() -> None:
    assert Every(INT32_MAX, INT32_MAX).fires(INT32_MAX, INT32_MAX + 1)


def test_every_fires() -> None:
    assert [i for i in range(10) if Every(3, 1).fires(i, 10)] == [1, 4, 7]
    assert [i for i in range(5) if Every(1).fires(i, 5)] == [0, 1, 2, 3, 4]
    assert not Every(1).fires(5, 5)
    assert not Every(1).fires(0, 0)
    assert Every(2, 3).describe() == "every(2, start=3)"


def test_first_and_last_iteration() -> None:
    assert [i for i in range(4) if FIRST_ITER.fires(i, 4)] == [0]
    assert [i for i in range(4) if LAST_ITER.fires(i, 4)] == [3]
    assert FIRST_ITER.fires(0, 1) and LAST_ITER.fires(0, 1)
    assert not FIRST_ITER.fires(0, 0)
    assert not LAST_ITER.fires(0, 0)
    assert not LAST_ITER.fires(-1, 0)


@given(
    period=st.integers(1, 50),
    start=st.integers(0, 50),
    iter_idx=st.integers(-5, 200),
    num_iters=st.integers(0, 200),
)
def test_every_property(period: int, start: int, iter_idx: int, num_iters: int) -> None:
    expected = start <= iter_idx < num_iters and (iter_idx - start) % period == 0
    assert Every(period, start).fires(iter_idx, num_iters) == expected
    assert guard_fires(Every(period, start), iter_idx, num_iters) == expected


def test_guard_fires_opaque() -> None:
    cond = OpaqueCondition("has_work")
    negated = OpaqueCondition("has_work", negated=True)
    assert not guard_fires(cond, 0, 1)
    assert guard_fires(negated, 0, 1)
    assignment: dict[Hashable, bool] = {"has_work": True}
    assert guard_fires(cond, 0, 1, opaque_assignment=assignment)
    assert not guard_fires(negated, 0, 1, opaque_assignment=assignment)
    assert not guard_fires(cond, 0, 1, opaque_assignment={"other": True})


def test_guard_fires_skippable_and_predicates() -> None:
    assert guard_fires(SKIPPABLE, 0, 1)
    assert not guard_fires(SKIPPABLE, 0, 1, skipped=True)
    assert guard_fires(FIRST_ITER, 0, 3) and not guard_fires(FIRST_ITER, 1, 3)
    assert guard_fires(LAST_ITER, 2, 3) and not guard_fires(LAST_ITER, 1, 3)


def test_guard_fires_unknown_guard() -> None:
    with pytest.raises(TypeError, match="unknown guard"):
        guard_fires(BlockGuard(), 0, 1)


def test_is_iteration_predicate() -> None:
    assert is_iteration_predicate(Every(2))
    assert is_iteration_predicate(FIRST_ITER) and is_iteration_predicate(LAST_ITER)
    assert not is_iteration_predicate(SKIPPABLE)
    assert not is_iteration_predicate(OpaqueCondition(1))


def test_opaque_describe() -> None:
    cond = OpaqueCondition("k", True, "sched", "fetch", "valid")
    assert cond.describe() == "not sched.fetch[valid]"
    assert OpaqueCondition("k", False, "sched", "fetch").describe() == "sched.fetch"
    assert OpaqueCondition(7).describe() == "7"
    assert OpaqueCondition(7, negated=True).describe() == "not 7"


def test_guard_classifiers() -> None:
    from ts_ir import (
        FIRST_ITER,
        SKIPPABLE,
        Every,
        OpaqueCondition,
        is_loop_guard,
        is_skippable_guard,
    )

    assert is_skippable_guard(SKIPPABLE)
    assert not is_skippable_guard(FIRST_ITER)
    assert is_loop_guard(Every(2)) and is_loop_guard(OpaqueCondition("k"))
    assert not is_loop_guard(SKIPPABLE)
