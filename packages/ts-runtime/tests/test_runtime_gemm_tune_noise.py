"""The tuner's guard against adopting noise: a challenger must lead in both timings.

``gemm_tune.py --from-sweep`` ranks by one timing (graph, or per call with ``--eager``) and
keeps a class's entry unless the best leads it by ``--margin``. A contender can run 1.7 %
ahead per call and 4.5 % behind in graph timing (one H100 call): the sweep's line holds both
timings, so the best must also lead the incumbent in the other one.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cutlass")
pytest.importorskip("ts_runtime")
pytest.importorskip("ts_verify")


def _fields(tune: Any, table: Any, gemm: Any) -> dict[str, Any]:
    return {
        k: table.tuned_fields(table.apply_fields(gemm.GemmConfig(), t))
        for k, t in (("a", tune.TEMPLATES[0]), ("b", tune.TEMPLATES[8]))
    }


@pytest.mark.parametrize(
    ("other_b", "winner", "kept"),
    [(97.0, "a", "b"), (101.0, "b", None), (None, "b", None)],
    ids=["b-behind-in-the-other", "b-ahead-in-both", "no-other-timing"],
)
def test_a_challenger_must_lead_in_the_other_timing_too(
    tune: Any, table: Any, gemm: Any, other_b: float | None, winner: str, kept: str | None
) -> None:
    """``b`` leads ``a`` (the incumbent) by 3 % in the ranked timing, past the margin: it wins
    only where it leads in the other timing as well (or the rows have none)."""
    fields = _fields(tune, table, gemm)
    row: dict[str, Any] = {"mnk": [1, 1, 1], "class": "X", "dtype": "bf16", "rule": {}}
    row["tflops"] = {"a": 100.0, "b": 103.0}
    if other_b is not None:
        row["other_tflops"] = {"a": 100.0, "b": other_b}
    (entry,) = tune.best_per_class([row], fields, {"X": "a"}, 0.015)
    assert entry["winner"] == winner and entry["config"] == fields[winner]
    assert entry.get("kept_over") == kept
    (entry,) = tune.best_per_class([row], fields, {}, 0.015)  # no incumbent: the best wins
    assert entry["winner"] == "b" and "kept_over" not in entry


def test_from_sweep_keeps_the_entry_a_per_call_lead_does_not_confirm(
    tune: Any, table: Any, tmp_path: Path
) -> None:
    """End to end: the shipped table's 1024 x 8192 x 8192 entry (128 x 256 in 2 x 1) against a
    256 x 128 1 x 2 that is 2.9 % ahead per call and 1.4 % behind in graph timing."""
    held = table.pick((1024, 8192, 8192))[0]
    other = dataclasses.replace(held, tile_mn=(256, 128), cluster_mn=(1, 2))
    row: dict[str, Any] = {"bench": "gemm_sweep", "mnk": [1024, 8192, 8192]}
    row["config"] = dataclasses.asdict(held)
    row["ts"] = {"ok": True, "tflops": 700.0, "graph_tflops": 700.0}
    row["torch"] = {"ok": True, "tflops": 690.0, "graph_tflops": 690.0}
    row["vs:b"] = {"ok": True, "tflops": 720.0, "graph_tflops": 690.0}
    row["vs:b"]["config"] = dataclasses.asdict(other)
    log = tmp_path / "ab.log"
    log.write_text(json.dumps(row) + "\n")
    out = tmp_path / "t.json"
    argv = ["--from-sweep", str(log), "--margin", "0.015", "--eager", "-o", str(out)]
    assert tune.main(argv) == 0
    (entry,) = table.load_table(out)["entries"]
    assert entry["config"] == table.tuned_fields(held)
    assert entry["kept_over"].startswith("256x128-c1x2")


def test_from_sweep_counts_each_pass_and_skips_the_median_lines(
    tune: Any, table: Any, gemm: Any, tmp_path: Path
) -> None:
    """A ``gemm_sweep.py --passes`` log: every pass's line is a row of its shape (the class
    ranks by the geometric mean over them); the per-shape median lines hold ratios only and
    are no rows (they name no configuration)."""
    held = table.pick((4096, 4096, 4096), gemm.GemmConfig(dtype="e4m3", scale="tensor"))[0]
    lines = []
    for turn, ts in ((1, 1100.0), (2, 1120.0)):
        row: dict[str, Any] = {"bench": "gemm_sweep", "mnk": [4096, 4096, 4096], "pass": turn}
        row["config"] = dataclasses.asdict(held)
        row["ts"] = {"ok": True, "tflops": ts, "graph_tflops": ts}
        row["torch_accurate"] = {"ok": True, "tflops": 1150.0, "graph_tflops": 1150.0}
        lines.append(row)
    median = {"bench": "gemm_sweep", "mnk": [4096, 4096, 4096], "median_of_passes": 2}
    lines.append(median | {"ts_over_torch_accurate": 0.965})
    log = tmp_path / "passes.log"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    base = gemm.GemmConfig(dtype="e4m3", scale="tensor")
    rows = tune.sweep_rows([log], base)
    assert [r["contenders"][0][1] for r in rows] == [1100.0, 1120.0]
    assert all(r["mnk"] == [4096, 4096, 4096] for r in rows)
