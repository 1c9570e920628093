"""The 2D TMA copy compiles for sm_90a and matches its hand-written twin."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("cutlass")


@pytest.fixture(scope="module")
def result(load_example: Callable[[str], Any]) -> dict[str, Any]:
    example: Any = load_example("tma_copy")
    out: dict[str, Any] = example.compile_only((1024, 512))
    return out


def test_plan_verifies(result: dict[str, Any]) -> None:
    pytest.importorskip("ts_verify")
    assert result["verified"] is True


def test_expected_instructions(result: dict[str, Any]) -> None:
    ts = result["ts"]
    assert ts["cp.async.bulk.tensor"] >= 1
    assert ts["mbarrier.try_wait"] >= 2  # producer acquire + consumer wait
    assert ts["mbarrier.arrive.expect_tx"] >= 1
    assert ts["mbarrier.init"] == 8  # full + empty barrier per stage, 4 stages
    assert ts["setmaxnreg.dec"] == 1
    assert ts["setmaxnreg.inc"] == 1
    assert ts["st.global"] >= 1


def test_same_counts_per_kind_as_twin(result: dict[str, Any]) -> None:
    assert result["ts"] == result["twin"]
    assert result["ts_total"] == result["twin_total"]
