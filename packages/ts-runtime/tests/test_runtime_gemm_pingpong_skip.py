"""Ping-pong that skips the other warpgroup's stages (``GemmConfig(kernel="pingpong-skip")``).

The warpgroup whose turn it is not moves past the tile's stages of the one A/B ring
(``skip_stage()``) instead of waiting for and releasing them, and the two pass a math-order
token (``MathTurn``) after each tile's main loop. Checked on the CPU: the ring's consumer
group (one warpgroup), the plan the verifier proves (every tile count, turn sequence and K),
the TS kernel's PTX against the hand-written twin's per family, and the refusal of a ring
whose group counts both warpgroups.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("cutlass")
pytest.importorskip("ts_runtime")
pytest.importorskip("ts_verify")

from ts_codegen.dsl import compile_ptx

FAMILIES: dict[str, dict[str, Any]] = {
    "128x128": {"tile_mn": (128, 128)},
    "128x192-2x1": {"tile_mn": (128, 192), "cluster_mn": (2, 1)},
    "64x128-e4m3": {"tile_mn": (64, 128), "dtype": "e4m3"},
}


def _cfg(gemm: Any, family: str) -> Any:
    return gemm.GemmConfig(kernel="pingpong-skip", **FAMILIES[family])


def test_each_stage_is_released_by_one_warpgroup(gemm: Any) -> None:
    skip, wait = _cfg(gemm, "128x128"), gemm.GemmConfig(kernel="pingpong", tile_mn=(128, 128))
    assert skip.pingpong and skip.skip_turns and not wait.skip_turns
    assert (skip.ring_threads, wait.ring_threads) == (128, 256)
    assert skip.ab_stages == wait.ab_stages == 6  # the same SMEM: the tokens are 4 mbarriers


def test_the_plan_passes_the_turn_after_the_main_loop(gemm: Any) -> None:
    kernel = gemm.gemm_kernel(_cfg(gemm, "128x128"))
    report = kernel.verify().report
    assert not report.errors
    stats = dict(report.stats)
    assert stats["runs"] > 0 and stats["tile_local"] >= 1  # the windows ran (ts_verify.runs)
    plan = kernel.plan().plan
    rings = {r.name: r.pipeline for r in plan.resources if r.pipeline}
    assert set(rings) == {"ab", "t0", "t1"}
    assert (rings["t0"].stages, rings["t0"].type.value) == (1, "AsyncAsync")
    steps = {t.name: [(s.resource, s.stage.value) for s in t.schedule.steps()] for t in plan.tasks}
    mma0 = steps["mma0"]
    # its own tile: waits, then passes t0; the other's: skips, then takes t1
    assert mma0.index(("t0", "ProducerCommit")) > mma0.index(("ab", "ConsumerWait"))
    assert mma0.index(("t1", "ConsumerWait")) > mma0.index(("ab", "ConsumerSkip"))
    assert ("t1", "ProducerCommit") in steps["mma1"] and ("t0", "ConsumerWait") in steps["mma1"]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_compiles_to_the_twins_code(gemm: Any, family: str) -> None:
    cfg = _cfg(gemm, family)
    out = gemm.compile_only(cfg)
    assert out["verified"] is True and out["same_counts"] is True
    assert out["ts"] == out["twin"] and out["ts_total"] == out["twin_total"]
    broadcast = gemm.compile_only(gemm.GemmConfig(**{**FAMILIES[family], "kernel": "pingpong"}))
    # The skipped tiles wait for nothing: one try_wait site fewer than waiting for every stage,
    # and the tokens' waits (acquire, wait) and arrives (commit, release) on top.
    assert out["ts"]["mbarrier.try_wait"] == broadcast["ts"]["mbarrier.try_wait"] - 2 + 4
    _, ptx = compile_ptx(dict(gemm.kernels(cfg))["ts"], *gemm.fake_operands(cfg))
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k\d+", ptx)


def test_a_ring_counting_both_warpgroups_is_rejected(
    gemm: Any, load_example: Callable[[str], Any], monkeypatch: Any
) -> None:
    """Each stage is released by the warpgroup that computed on it alone: a group counting
    both would never complete a phase (TS-R003 names the one-task count)."""
    import importlib

    from ts_runtime.errors import GroupSizeError

    config = importlib.import_module("_gemm_config")
    monkeypatch.setattr(config.GemmConfig, "ring_threads", property(lambda c: 256))
    with pytest.raises(GroupSizeError, match=r"TS-R003: resource `ab`"):
        gemm.make_plan(_cfg(gemm, "128x128"))
