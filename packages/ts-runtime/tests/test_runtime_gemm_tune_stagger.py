"""The GEMM tuner and staggered promotion groups (``GemmConfig.promote_stagger``).

Promoted problems get the stagger templates as candidates (``gemm_tune.STAGGER_TEMPLATES``,
and the deferred-store ones, ``DEFER_TEMPLATES``), and ``--from-sweep`` tells a schedule and
its staggered twin apart. The rest of the tuner's tests are in
``test_runtime_gemm_tune.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cutlass")
pytest.importorskip("ts_runtime")
pytest.importorskip("ts_verify")


_ODD_INTERVAL: dict[str, Any] = {"promote_every": 3, "tile_mn": (128, 128)}


@pytest.mark.parametrize(
    ("field", "templates", "options", "count"),
    [
        ("promote_stagger", "STAGGER_TEMPLATES", {"dtype": "e4m3"}, 3),
        ("promote_stagger", "STAGGER_TEMPLATES", {"dtype": "bf16"}, 0),
        ("promote_stagger", "STAGGER_TEMPLATES", {"dtype": "e4m3"} | _ODD_INTERVAL, 0),
        ("defer_store", "DEFER_TEMPLATES", {"dtype": "e4m3"}, 2),
        ("defer_store", "DEFER_TEMPLATES", {"dtype": "bf16"}, 0),
        ("defer_store", "DEFER_TEMPLATES", {"dtype": "e4m3"} | _ODD_INTERVAL, 2),
    ],
    ids=["stagger-e4m3", "stagger-bf16", "stagger-odd", "defer-e4m3", "defer-bf16", "defer-odd"],
)
def test_promoted_templates_join_promoted_problems_only(
    tune: Any, gemm: Any, field: str, templates: str, options: dict[str, Any], count: int
) -> None:
    """FP8 gets the deferred-store templates (``GemmConfig.defer_store``) at any interval and
    the stagger ones at an even interval, each verified before it could be compiled; 16-bit
    problems (no groups, no total to store from) get neither, odd intervals (no half group)
    no stagger."""
    base = gemm.GemmConfig(**options)
    cands = tune.candidates((4096, 4096, 14336), base)
    assert sum(bool(c.get(field)) for c in cands) == count
    if count:
        screened = tune.screen(getattr(tune, templates), base)
        assert [c.reason for c in screened if c.cfg is None] == []
        assert all(c.cfg is not None and getattr(c.cfg, field) for c in screened)


@pytest.mark.parametrize("stagger_wins", [True, False])
def test_from_sweep_tells_staggered_groups_apart(
    tune: Any, table: Any, tmp_path: Path, stagger_wins: bool
) -> None:
    """The same schedule with and without staggered promotion groups are two candidates (one
    key once merged their timings and kept the other's fields): the faster one's fields win."""
    import dataclasses

    plain = tune.GemmConfig(dtype="e4m3", scale="tensor", tile_mn=(128, 192), epi_stages=3)
    staggered = dataclasses.replace(plain, promote_stagger=True)
    assert (
        tune.Candidate(table.tuned_fields(plain), None).key
        != tune.Candidate(table.tuned_fields(staggered), None).key
    )
    fast, slow = (1300.0, 1200.0) if stagger_wins else (1200.0, 1300.0)
    row = {"bench": "gemm_sweep", "mnk": [8192, 8192, 8192], "config": dataclasses.asdict(plain)}
    row |= {"ts": {"ok": True, "tflops": slow}, "torch_accurate": {"ok": True, "tflops": 1250.0}}
    row["vs:s"] = {"ok": True, "tflops": fast, "config": dataclasses.asdict(staggered)}
    log, out = tmp_path / "ab.log", tmp_path / "t.json"
    log.write_text(json.dumps(row))
    argv = ["--from-sweep", str(log), "--dtype", "e4m3", "--scale", "tensor", "-o", str(out)]
    assert tune.main([*argv, "--margin", "0"]) == 0
    made = table.load_table(out)
    assert made is not None
    (entry,) = made["entries"]
    assert entry["config"].get("promote_stagger", False) is stagger_wins
    assert entry["tflops"] == [1300.0]
