"""Bias + activation fused into the TMA copy's store task: compiles, matches its twin."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

# The smoke subset (the oldest Python runs only it): one kernel of each kind.
pytestmark = pytest.mark.smoke

pytest.importorskip("cutlass")

SHAPE = (1024, 512)


@pytest.fixture(scope="module")
def example(load_example: Callable[[str], Any]) -> Any:
    return load_example("bias_act_copy")


@pytest.fixture(scope="module", params=["gelu", "relu"])
def result(request: pytest.FixtureRequest, example: Any) -> dict[str, Any]:
    out: dict[str, Any] = example.compile_only(SHAPE, request.param)
    return out


def test_plan_verifies(result: dict[str, Any]) -> None:
    pytest.importorskip("ts_verify")
    assert result["verified"] is True


def test_expected_instructions(example: Any, result: dict[str, Any]) -> None:
    ts, ops = result["ts"], result["ts_ops"]
    per_thread = example.TILE_M * example.TILE_N // (8 * example.STORE_THREADS)
    assert ts["cp.async.bulk.tensor"] == 1  # the TMA load
    assert ts["mbarrier.try_wait"] >= 2  # producer acquire + consumer wait
    assert ts["mbarrier.arrive.expect_tx"] >= 1
    assert ts["mbarrier.init"] == 2 * example.STAGES
    assert ts["setmaxnreg.dec"] == 1 and ts["setmaxnreg.inc"] == 1
    assert ops.get("ld.global.v4.b32") == 1  # the thread's 8 bias values, once per tile
    assert ops.get("ld.shared.v4.b32") == per_thread  # 16-byte SMEM reads
    assert ops.get("st.global.v4.b32") == per_thread  # 16-byte global stores
    assert ops.get("cvt.f32.f16", 0) >= 8  # fp32 math
    assert ops.get("cvt.rn.f16x2.f32", 0) >= 1
    values = per_thread * 8
    if result["act"] == "gelu":
        assert ops.get("tanh.approx.f32") == values
    else:
        assert ops.get("max.f32") == values


def test_same_counts_per_kind_as_twin(result: dict[str, Any]) -> None:
    assert result["ts"] == result["twin"]
    assert result["ts_total"] == result["twin_total"]
    assert result["ts_ops"] == result["twin_ops"]
