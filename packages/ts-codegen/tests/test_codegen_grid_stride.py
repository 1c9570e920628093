"""The grid-stride copy compiles for sm_90a and matches its hand-written twin."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

# The smoke subset (the oldest Python runs only it): one kernel of each kind.
pytestmark = pytest.mark.smoke

pytest.importorskip("cutlass")


@pytest.fixture(scope="module")
def result(load_example: Callable[[str], Any]) -> dict[str, Any]:
    example: Any = load_example("grid_stride_copy")
    out: dict[str, Any] = example.compile_only(1 << 20)
    return out


def test_plan_verifies(result: dict[str, Any]) -> None:
    pytest.importorskip("ts_verify")
    assert result["verified"] is True


def test_expected_instructions(result: dict[str, Any]) -> None:
    ts = result["ts"]
    # unroll=4: four element copies per trip of the unrolled body.
    assert ts["ld.global"] == 4
    assert ts["st.global"] == 4
    assert ts["mbarrier.try_wait"] == 0
    assert ts["setmaxnreg.inc"] == ts["setmaxnreg.dec"] == 0


def test_same_counts_per_kind_as_twin(result: dict[str, Any]) -> None:
    assert result["ts"] == result["twin"]


def test_no_more_instructions_than_twin(result: dict[str, Any]) -> None:
    # cutlass.range with a runtime step adds negative-step handling; the TS loop does not.
    assert result["ts_total"] <= result["twin_total"]
