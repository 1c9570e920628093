"""``bench/gemm_power.py`` without a GPU: its summary (medians per contender, ratios to the
baselines) and what it refuses."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.append(str(Path(__file__).resolve().parent.parent / "bench"))


def _turn(tflops: float, watts: float, mhz: float) -> dict[str, Any]:
    return {"tflops": tflops, "watts": watts, "mhz": mhz, "temp_c": 60.0}


def test_summary_medians_and_ratios() -> None:
    power: Any = importlib.import_module("gemm_power")
    turns = {
        "ts": [_turn(690, 700, 1700), _turn(700, 690, 1750), _turn(900, 500, 1980)],
        "torch": [_turn(700, 650, 1800), _turn(710, 660, 1820), _turn(705, 655, 1810)],
    }
    for ts in turns.values():
        for t in ts:
            t["per_kw"] = t["tflops"] / t["watts"] * 1000.0
    out = power.shape_summary([4096, 4096, 4096], turns)
    assert out["median"]["ts"]["tflops"] == 700 and out["median"]["torch"]["watts"] == 655
    assert out["ts_over_torch_tflops"] == pytest.approx(700 / 705)
    assert out["ts_over_torch_mhz"] == pytest.approx(1750 / 1810)
    per_kw = (700 / 0.69) / (705 / 0.655)  # the medians of the turns' own ratios
    assert out["ts_over_torch_per_kw"] == pytest.approx(per_kw)
    assert "torch_over_torch_tflops" not in out


def test_summary_without_samples_keeps_speed() -> None:
    power: Any = importlib.import_module("gemm_power")
    turns = {"ts": [{"tflops": 10.0}], "torch": [{"tflops": 20.0}]}
    out = power.shape_summary([1, 1, 1], turns)
    assert out["ts_over_torch_tflops"] == 0.5 and "ts_over_torch_mhz" not in out


def test_summary_fp8_has_both_baselines() -> None:
    power: Any = importlib.import_module("gemm_power")
    turns = {
        "ts": [{"tflops": 1200.0}],
        "torch": [{"tflops": 1250.0}],
        "torch_accurate": [{"tflops": 1150.0}],
    }
    out = power.shape_summary([1, 1, 1], turns)
    assert out["ts_over_torch_tflops"] == pytest.approx(0.96)
    assert out["ts_over_torch_accurate_tflops"] == pytest.approx(1200 / 1150)
    assert not any(k.startswith("torch") and "_over_" in k for k in out)


def test_probe_refuses_what_it_does_not_time() -> None:
    power: Any = importlib.import_module("gemm_power")
    gemm = pytest.importorskip("gemm")  # examples/hopper, put on the path by gemm_power
    assert power.refusal(gemm.GemmConfig()) is None
    assert power.refusal(gemm.GemmConfig(dtype="e4m3", scale="tensor")) is None
    assert "--bias" in str(power.refusal(gemm.GemmConfig(bias=True)))
    assert "tn layout" in str(power.refusal(gemm.GemmConfig(layout="nt")))


@pytest.mark.parametrize(
    ("counts", "words"),
    [((0.3, 3, 20), "--seconds 0.3"), ((2.0, 0, 20), "--rounds 0"), ((2.0, 3, 0), "--sample-ms 0")],
)
def test_probe_refuses_counts_that_measure_nothing(counts: tuple[Any, ...], words: str) -> None:
    power: Any = importlib.import_module("gemm_power")
    assert power.bad_counts(2.0, 3, 20) is None
    assert words in str(power.bad_counts(*counts))
