"""The Hopper GEMM's verified autotuner and per-shape table, on the CPU.

Candidate generation, the verification of every candidate before anything is compiled (a
broken schedule is rejected and never reaches the compiler), the shape classes (checked
against classes worked out by hand), the fallback rule and the shipped table's picks for the
twelve sweep shapes, the table's format checks, the merge of two tuning halves, the choice
of the best configuration per class, and ``--config auto`` with explicit options on top.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cutlass")
pytest.importorskip("ts_runtime")
pytest.importorskip("ts_verify")

from ts_trace import ResourceProxy, domain_loop, schedule, work_tile_loop

# Worked out by hand: M / N buckets s <= 256 < m <= 2048 < l, K buckets s <= 1024 < m <= 8192
# < l, waves = ceil(M/128) * ceil(N/256) / 132 (W0 < 1 <= W1 < 4 <= W4; W1r: a last wave
# under 75 % full).
SWEEP_CLASSES = {
    (2048, 2048, 2048): "Mm-Nm-Km-W0",  # 16 * 8 = 128 tiles
    (4096, 4096, 4096): "Ml-Nl-Km-W1",  # 512 tiles, 3.9 waves: the last one 88 % full
    (8192, 8192, 8192): "Ml-Nl-Km-W4",
    (4096, 4096, 14336): "Ml-Nl-Kl-W1",
    (8192, 1024, 8192): "Ml-Nm-Km-W1",  # 256 tiles
    (1024, 8192, 8192): "Mm-Nl-Km-W1",
    (16384, 16384, 1024): "Ml-Nl-Ks-W4",
    (3000, 5000, 4000): "Ml-Nl-Km-W1r",  # 24 * 20 = 480 tiles, 3.6 waves: ragged
    (8192, 28672, 8192): "Ml-Nl-Km-W4",
    (8192, 8192, 28672): "Ml-Nl-Kl-W4",
    (128, 8192, 8192): "Ms-Nl-Km-W0",  # 32 tiles
    (256, 28672, 8192): "Ms-Nl-Km-W1r",  # 2 * 112 = 224 tiles, 1.7 waves
}


@schedule
def early_release(
    wq: ResourceProxy, ab: ResourceProxy, acc: ResourceProxy, c: ResourceProxy
) -> None:
    """Gives the stage back while its WGMMAs may still read it (TS-V113)."""
    acc.setup()
    c.setup()
    with work_tile_loop(wq):
        acc.zero()
        with domain_loop("k_tiles", unroll=1):
            ab.wait()
            ab.mma()
            ab.release()
            ab.mma_wait_all()
        c.store()
    c.drain()


def test_sweep_is_the_benchmarks_shapes(tune: Any) -> None:
    assert set(tune.SWEEP) == set(SWEEP_CLASSES)


@pytest.mark.parametrize("mnk", sorted(SWEEP_CLASSES))
def test_shape_class_by_hand(table: Any, mnk: tuple[int, int, int]) -> None:
    assert table.shape_class(mnk) == SWEEP_CLASSES[mnk]


@pytest.mark.parametrize("mnk", [*sorted(SWEEP_CLASSES), (64, 4096, 4096), (1, 1, 1)])
def test_candidates_per_shape_are_few_and_distinct(tune: Any, gemm: Any, mnk: Any) -> None:
    cands = tune.candidates(mnk, gemm.GemmConfig())
    assert 8 <= len(cands) <= 60 or mnk[0] <= 64
    assert 1 <= len(cands) <= 60
    keys = [json.dumps(c, sort_keys=True, default=list) for c in cands]
    assert len(set(keys)) == len(keys)
    m, n, _ = mnk
    for c in cands:  # no cluster wider than the problem's tiles, no 128-row tile on M <= 64
        assert -(-m // c["tile_mn"][0]) >= c["cluster_mn"][0]
        assert -(-n // c["tile_mn"][1]) >= c["cluster_mn"][1]
        assert m > 64 or c["tile_mn"][0] == 64


def test_candidates_include_the_rule(tune: Any, gemm: Any, table: Any) -> None:
    for mnk in SWEEP_CLASSES:
        rule = table.tuned_fields(table.rule_config(mnk, gemm.GemmConfig()))
        as_fields = [
            table.tuned_fields(table.apply_fields(gemm.GemmConfig(), c))
            for c in tune.candidates(mnk, gemm.GemmConfig())
        ]
        assert rule in as_fields


@pytest.mark.parametrize("every", [0, 8])
def test_an_explicit_promotion_interval_tunes_the_tiles_that_take_it(
    tune: Any, table: Any, every: int
) -> None:
    """``--promote-every 8`` was refused before any template was tried (the placeholder tile
    of the options' check was 128 x 256); now the candidates are the tiles with registers for
    it, the rule's included. ``0`` (FP8 without promotion) offers every tile."""
    argv = ["--mnk", "3000", "5000", "4000", "--dtype", "e4m3", "--promote-every", str(every)]
    base = tune.base_config(tune._parse_args([*argv, "--dry-run"]))
    assert table.promotes(base) is bool(every)
    tiles = {tuple(c["tile_mn"]) for c in tune.candidates((3000, 5000, 4000), base)}
    assert ((128, 256) in tiles) is (every == 0)
    if every:
        assert all(tune.can_promote({"kernel": "cooperative", "tile_mn": t}) for t in tiles)


@pytest.mark.parametrize("dtype", ["bf16", "e4m3"])
def test_every_template_verifies(tune: Any, gemm: Any, dtype: str) -> None:
    screened = tune.screen(tune.TEMPLATES, gemm.GemmConfig(dtype=dtype))
    assert [c.reason for c in screened if c.cfg is None] == []
    assert len({c.key for c in screened}) == len(tune.TEMPLATES)


def test_broken_candidate_is_rejected_with_the_reason(tune: Any, gemm: Any) -> None:
    out = tune.screen(
        tune.TEMPLATES[:2],
        gemm.GemmConfig(),
        build=lambda cfg: gemm.make_plan(cfg, mma=early_release),
    )
    assert all(c.cfg is None for c in out)
    assert all("VerificationError" in c.reason for c in out)
    bad = {**tune.TEMPLATES[0], "kernel": "pingpong"}  # no ping-pong 128 x 256 (registers)
    (invalid,) = tune.screen([bad], gemm.GemmConfig())
    assert invalid.cfg is None and invalid.reason.startswith("invalid configuration")


def test_an_internal_error_is_not_a_rejection(tune: Any, gemm: Any) -> None:
    def bug(cfg: Any) -> None:
        raise KeyError("a bug in the builder, not a verdict on the schedule")

    with pytest.raises(KeyError):
        tune.screen(tune.TEMPLATES[:1], gemm.GemmConfig(), build=bug)


def test_rejected_candidate_is_never_compiled(
    tune: Any, gemm: Any, monkeypatch: Any, capsys: Any
) -> None:
    real_screen = tune.screen
    broken = tune.TEMPLATES[1]  # 128x256, cluster 2x1

    def screen(fields: Any, base: Any, build: Any = None) -> Any:
        fields = list(fields)
        if fields == [broken]:
            return real_screen(
                fields, base, build=lambda cfg: gemm.make_plan(cfg, mma=early_release)
            )
        return real_screen(fields, base, build)

    compiled: list[Any] = []

    def compile_all(cfgs: Any, jobs: int, compile_only: bool) -> dict[Any, Any]:
        compiled.extend(cfgs)
        return {c: {"same_counts": True, "ts_total": 1} for c in cfgs}

    monkeypatch.setattr(tune, "screen", screen)
    monkeypatch.setattr(tune, "compile_all", compile_all)
    assert tune.main(["--compile-only", "--mnk", "4096", "4096", "4096", "--sample", "100"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    (row,) = [r for r in rows if "mnk" in r]
    key = "128x256-c2x1-coop-sta"
    assert key in row["rejected"] and "TS-V113" in row["rejected"][key]
    assert key not in row["candidates"]
    base = gemm.GemmConfig()
    never = tune.fit_swizzle(tune.apply_fields(base, broken), 4096, 4096)
    assert compiled and never not in compiled
    assert tune.fit_swizzle(tune.apply_fields(base, tune.TEMPLATES[0]), 4096, 4096) in compiled


def test_rule_for_sweep_shapes(table: Any, gemm: Any) -> None:
    base = gemm.GemmConfig()
    expect = {
        (2048, 2048, 2048): ((128, 128), (1, 1), "cooperative"),  # 128 tiles of 128 x 256
        (128, 8192, 8192): ((64, 128), (2, 1), "cooperative"),  # 128 tiles of 64 x 128
        (256, 28672, 8192): ((128, 256), (2, 1), "cooperative"),  # 224 tiles, two rows
        (8192, 8192, 8192): ((128, 256), (2, 1), "cooperative"),
    }
    for mnk, (tile, cluster, kernel) in expect.items():
        cfg, source = table.pick(mnk, base, table=False)
        assert source == f"rule:{SWEEP_CLASSES[mnk]}"
        assert (cfg.tile_mn, cfg.cluster_mn, cfg.kernel) == (tile, cluster, kernel)
    one_row, _ = table.pick((100, 1 << 20, 64), base, table=False)
    assert one_row.cluster_mn == (1, 1)  # one tile row: no 2 x 1 cluster


def test_shipped_table_picks_verify_for_sweep_shapes(table: Any, gemm: Any, config: Any) -> None:
    data = table.load_table()
    assert data is not None, "examples/hopper/gemm_table.json is shipped with the GEMM"
    for mnk, klass in SWEEP_CLASSES.items():
        cfg, source = table.pick(mnk, gemm.GemmConfig())
        entry = table.lookup(data, "bf16", klass)
        assert entry is not None and source == f"table:{klass}"
        assert table.tuned_fields(cfg) == entry["config"]
        gemm.make_plan(config.fit_swizzle(cfg, mnk[1], mnk[0]))  # verified (raises otherwise)


def test_shipped_table_header_and_every_entry_verifies(table: Any, gemm: Any) -> None:
    data = json.loads(table.TABLE_PATH.read_text())
    assert data["schema"] == table.SCHEMA and data["kind"] == table.TABLE_KIND
    assert data["command"].startswith("python examples/hopper/gemm_tune.py")
    assert data["cute_dsl"] and "created" in data and "gpu" in data
    for entry in data["entries"]:
        cfg = table.apply_fields(gemm.GemmConfig(dtype=entry["dtype"]), entry["config"])
        assert gemm.make_plan(cfg).name in ("gemm", "gemm_pingpong")


def _good(table: Any) -> dict[str, Any]:
    return dict(json.loads(table.TABLE_PATH.read_text()))


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (lambda t: t.update(schema=99), "schema 99"),
        (lambda t: t.pop("command"), "missing keys ['command']"),
        (lambda t: t["entries"].append(dict(t["entries"][0])), "appears twice"),
        (lambda t: t["entries"][0]["config"].pop("raster"), "config must set"),
        (lambda t: t["entries"][0]["shapes"].append([3000, 5000, 4000]), "not in the entry's"),
        (
            lambda t: t["entries"][0]["config"].update(kernel="pingpong", tile_mn=[128, 256]),
            "not a valid GemmConfig",
        ),
        (lambda t: t["entries"][0].update(dtype="int4"), "not a valid GemmConfig"),
    ],
)
def test_bad_table_is_a_typed_error(
    table: Any, damage: Callable[[dict[str, Any]], Any], words: str
) -> None:
    from task_scheduling.kernel import RuntimeConfigError

    data = _good(table)
    damage(data)
    with pytest.raises(RuntimeConfigError) as err:
        table.validate_table(data)
    assert words in str(err.value) and "gemm_tune.py" in str(err.value)


def test_table_that_is_not_json_is_a_typed_error(table: Any, tmp_path: Path) -> None:
    from task_scheduling.kernel import RuntimeConfigError

    path = tmp_path / "t.json"
    path.write_text("{not json")
    with pytest.raises(RuntimeConfigError, match="is not JSON"):
        table.load_table(path)
    assert table.load_table(tmp_path / "absent.json") is None


def test_dump_round_trips(table: Any) -> None:
    data = _good(table)
    assert json.loads(table.dump_table(data)) == data


def test_best_per_class_is_the_geometric_mean_winner(tune: Any, table: Any, gemm: Any) -> None:
    fields = {
        k: table.tuned_fields(table.apply_fields(gemm.GemmConfig(), t))
        for k, t in (("a", tune.TEMPLATES[0]), ("b", tune.TEMPLATES[8]))
    }
    rows = [  # "a" wins one shape by 10 %, "b" the other by 50 %: "b" has the better mean
        {
            "mnk": [1, 1, 1],
            "class": "X",
            "dtype": "bf16",
            "rule": {},
            "tflops": {"a": 110.0, "b": 100.0, "torch": 90.0},
        },
        {
            "mnk": [2, 2, 2],
            "class": "X",
            "dtype": "bf16",
            "rule": {},
            "tflops": {"a": 100.0, "b": 150.0, "torch": 90.0},
        },
    ]
    (entry,) = tune.best_per_class(rows, fields)
    assert entry["winner"] == "b" and entry["config"] == fields["b"]
    assert entry["score"] == pytest.approx((100 / 110 * 1.0) ** 0.5)
    assert entry["torch_tflops"] == [90.0, 90.0]


@pytest.mark.parametrize(
    ("b_speed", "margin", "winner"),
    [(101.0, 0.02, "a"), (102.0, 0.02, "a"), (103.0, 0.02, "b"), (101.0, 0.0, "b")],
)
def test_a_class_keeps_its_entry_within_the_margin(
    tune: Any, table: Any, gemm: Any, b_speed: float, margin: float, winner: str
) -> None:
    """The incumbent ``a`` (the current table's winner) stays unless ``b`` is faster by more
    than the margin; a margin of 0 lets the best win."""
    fields = {
        k: table.tuned_fields(table.apply_fields(gemm.GemmConfig(), t))
        for k, t in (("a", tune.TEMPLATES[0]), ("b", tune.TEMPLATES[8]))
    }
    row = {"mnk": [1, 1, 1], "class": "X", "dtype": "bf16", "rule": {}}
    rows = [dict(row, tflops={"a": 100.0, "b": b_speed})]
    (entry,) = tune.best_per_class(rows, fields, {"X": "a"}, margin)
    assert entry["winner"] == winner and entry["config"] == fields[winner]
    (entry,) = tune.best_per_class(rows, fields, {"X": "gone"}, margin)  # not timed: no say
    assert entry["winner"] == "b"


def test_table_from_a_tuning_log(tune: Any, table: Any, tmp_path: Path) -> None:
    """``--from-log``: the entries from an earlier run's per-shape lines, no GPU; a log with
    no timed row of the dtype is a typed error."""
    from ts_runtime.errors import RuntimeConfigError

    mnk = (4096, 4096, 4096)
    keys = [tune.Candidate(f, None).key for f in tune.candidates(mnk, tune.GemmConfig())]
    row = {"mnk": list(mnk), "class": table.shape_class(mnk), "dtype": "bf16", "rule": {}}
    row["tflops"] = {k: 100.0 + i for i, k in enumerate(keys)}
    log = tmp_path / "tune.log"
    log.write_text("compiling ...\n" + json.dumps(row) + "\n" + json.dumps({"summary": True}))
    out = tmp_path / "t.json"
    assert tune.main(["--from-log", str(log), "--margin", "0", "-o", str(out)]) == 0
    made = table.load_table(out)
    assert made is not None and [e["winner"] for e in made["entries"]] == [keys[-1]]
    with pytest.raises(RuntimeConfigError, match="no timed e4m3 rows"):
        tune.main(["--from-log", str(log), "--dtype", "e4m3", "-o", str(out)])


def test_combine_two_halves(tune: Any, table: Any, tmp_path: Path) -> None:
    data = _good(table)
    half = len(data["entries"]) // 2
    one, two = (
        dict(data, entries=data["entries"][:half]),
        dict(data, entries=data["entries"][half:]),
    )
    paths = [tmp_path / "1.json", tmp_path / "2.json"]
    for p, t in zip(paths, (one, two), strict=True):
        p.write_text(table.dump_table(t))
    out = tmp_path / "t.json"
    assert tune.main(["--combine", *map(str, paths), "-o", str(out)]) == 0
    merged = table.load_table(out)
    assert merged is not None and len(merged["entries"]) == len(data["entries"])
    assert merged["command"] == data["command"]  # halves of one run: its command, once
    # a table made from a log names no GPU: the merged one keeps the GPU the other names
    two["gpu"] = None
    paths[1].write_text(table.dump_table(two))
    assert tune.main(["--combine", *map(str, paths), "-o", str(out)]) == 0
    merged = table.load_table(out)
    assert merged is not None and merged["gpu"] == data["gpu"] and data["gpu"]


def test_combine_leaves_out_shapes_that_changed_class(
    tune: Any, table: Any, tmp_path: Path
) -> None:
    """A table tuned before the ragged-wave class split: 3000 x 5000 x 4000 shared 4096^3's
    class, and 256 x 28672 x 8192 was alone in ``Ms-Nl-Km-W1``."""
    data = _good(table)
    config = data["entries"][0]["config"]
    old = [
        {
            "dtype": "bf16",
            "class": "Ml-Nl-Km-W1",
            "config": config,
            "shapes": [[4096, 4096, 4096], [3000, 5000, 4000]],
            "tflops": [784.4, 689.0],
            "torch_tflops": [748.6, 718.4],
            "score": 0.99,
        },
        {"dtype": "bf16", "class": "Ms-Nl-Km-W1", "config": config, "shapes": [[256, 28672, 8192]]},
    ]
    path, out = tmp_path / "old.json", tmp_path / "t.json"
    path.write_text(json.dumps(dict(data, entries=old)))
    assert tune.main(["--combine", str(path), "-o", str(out)]) == 0
    merged = table.load_table(out)
    assert merged is not None
    (entry,) = merged["entries"]
    assert entry["shapes"] == [[4096, 4096, 4096]] and entry["tflops"] == [784.4]
    assert entry["torch_tflops"] == [748.6] and "score" not in entry


def _args(gemm: Any, *argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    gemm.add_config_args(parser)
    return parser.parse_args(list(argv))


def _rule_table(tune: Any, table: Any, gemm: Any, path: Path) -> dict[str, Any]:
    """A table of the rule's picks for the sweep classes, written to ``path`` (the tests that
    read ``--config auto`` must not depend on what the GPU tuning run put in the shipped one)."""
    entries = []
    for mnk, klass in SWEEP_CLASSES.items():
        if mnk == (8192, 28672, 8192):
            continue  # its class is that of 8192^3
        fields = table.tuned_fields(table.rule_config(mnk, gemm.GemmConfig()))
        entries.append({"dtype": "bf16", "class": klass, "shapes": [list(mnk)], "config": fields})
    data: dict[str, Any] = tune.make_table(
        entries, False, "python examples/hopper/gemm_tune.py (test)", None, 0.0
    )
    path.write_text(table.dump_table(data))
    return data


def test_config_auto_and_overrides(
    tune: Any, gemm: Any, table: Any, config: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    _gemm_cli: Any = importlib.import_module("_gemm_cli")
    _rule_table(tune, table, gemm, tmp_path / "rule.json")
    monkeypatch.setenv("TS_GEMM_TABLE", str(tmp_path / "rule.json"))
    mnk = (2048, 2048, 2048)
    cfg, source = _gemm_cli.config_for(_args(gemm), mnk)
    picked, _ = table.pick(mnk, gemm.GemmConfig())
    assert source == "table:Mm-Nm-Km-W0" and cfg == config.fit_swizzle(picked, 2048, 2048)
    cfg, source = _gemm_cli.config_for(_args(gemm, "--cluster", "1x2", "--stages", "3"), mnk)
    assert (cfg.cluster_mn, cfg.stages, cfg.tile_mn) == ((1, 2), 3, picked.tile_mn)
    assert source.endswith("+flags")
    cfg, source = _gemm_cli.config_for(_args(gemm, "--config", "default"), mnk)
    assert source == "default" and dataclasses.replace(cfg, swizzle=8) == gemm.GemmConfig()
    with pytest.raises(ValueError, match="no valid configuration"):
        _gemm_cli.config_for(_args(gemm, "--kernel", "pingpong"), (8192, 8192, 8192))
    # the rule picks 64 x 128 ping-pong here; a cooperative cluster request fills in from
    # the defaults instead (as tools/gpu_batch.sh asks)
    odd = (1003, 1501, 707)
    assert table.pick(odd, gemm.GemmConfig())[0].kernel == "pingpong"
    cfg, source = _gemm_cli.config_for(_args(gemm, "--tile", "128x128", "--cluster", "2x1"), odd)
    assert source.startswith("default+flags") and cfg.kernel == "cooperative"
    assert (cfg.tile_mn, cfg.cluster_mn) == ((128, 128), (2, 1))
    cfg, source = _gemm_cli.config_for(_args(gemm, "--scheduler", "dynamic"), odd)
    assert cfg.dynamic and cfg.tile_mn == (128, 256) and source.startswith("default+flags")


def test_raster_along_n_fits_the_swizzle_to_m(gemm: Any, config: Any) -> None:
    cfg = gemm.GemmConfig(raster="n")
    assert config.fit_swizzle(cfg, 4096, 3 * 128).swizzle == 1  # three tile rows
    assert config.fit_swizzle(gemm.GemmConfig(), 4096, 3 * 128).swizzle == 8  # 16 columns
    with pytest.raises(ValueError, match="pass m"):
        config.fit_swizzle(cfg, 4096)
    with pytest.raises(ValueError, match="raster"):
        gemm.GemmConfig(raster="k")


def test_compile_only_samples_compile_with_twin_counts(tune: Any, capsys: Any) -> None:
    assert tune.main(["--compile-only", "--mnk", "128", "8192", "8192", "--sample", "1"]) == 0
    compiled = [json.loads(x) for x in capsys.readouterr().out.splitlines() if '"compiled"' in x]
    assert len(compiled) == 1 and compiled[0]["same_counts"] is True


def test_own_table_from_the_environment(
    tune: Any, table: Any, gemm: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    data = _rule_table(tune, table, gemm, tmp_path / "rule.json")
    klass = SWEEP_CLASSES[(4096, 4096, 4096)]
    mine = [e for e in data["entries"] if e["class"] == klass]
    mine[0]["config"] = {**mine[0]["config"], "tile_mn": [64, 256], "cluster_mn": [1, 1]}
    path = tmp_path / "mine.json"
    path.write_text(table.dump_table(dict(data, entries=mine)))
    monkeypatch.setenv("TS_GEMM_TABLE", str(path))
    cfg, source = table.pick((4096, 4096, 4096), gemm.GemmConfig())
    assert source == f"table:{klass}" and cfg.tile_mn == (64, 256)
    _, other = table.pick((2048, 2048, 2048), gemm.GemmConfig())
    assert other.startswith("rule:")  # a class the own table does not hold


def test_gpu_path_writes_the_winners_table(
    tune: Any, gemm: Any, table: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """The GPU branch of ``main`` with the GPU parts replaced: what reaches the table."""
    _gpu_check: Any = importlib.import_module("_gpu_check")

    favourite = "128x128-c1x2-coop-sta"
    timed: list[tuple[tuple[int, int, int], list[str]]] = []

    def time_shape(
        mnk: Any,
        accepted: Any,
        compiled: Any,
        base: Any,
        iters: int,
        rounds: int,
        graph: bool = False,
    ) -> Any:
        assert graph is False  # eager timing unless --graph
        keys = [c.key for c in accepted]
        timed.append((mnk, keys))
        assert all(tune.fit_swizzle(c.cfg, mnk[1], mnk[0]) in compiled for c in accepted)
        tflops = {k: 700.0 if k == favourite else 500.0 for k in keys}
        return {"tflops": {**tflops, "torch": 650.0}, "wrong": {}}

    monkeypatch.setattr(_gpu_check, "gpu_ready", lambda _file: True)
    monkeypatch.setattr(tune, "compile_all", lambda cfgs, jobs, compile_only: dict.fromkeys(cfgs))
    monkeypatch.setattr(tune, "_time_shape", time_shape)
    monkeypatch.setattr(tune, "_gpu_name", lambda: "NVIDIA H200")
    out = tmp_path / "part.json"
    argv = ["--shapes", "sweep", "--part", "2/4", "-o", str(out)]
    assert tune.main(argv) == 0
    assert [mnk for mnk, _ in timed] == list(tune.SWEEP[1::4])
    written = table.load_table(out)
    assert written is not None and written["timed"] is True and written["gpu"] == "NVIDIA H200"
    assert written["command"] == "python examples/hopper/gemm_tune.py " + " ".join(argv)
    assert {e["class"] for e in written["entries"]} == {SWEEP_CLASSES[s] for s in tune.SWEEP[1::4]}
    for entry in written["entries"]:
        assert entry["winner"] == favourite and entry["source"] == "tuned"
        assert entry["tflops"] == [700.0] * len(entry["shapes"])
        assert entry["torch_tflops"] == [650.0] * len(entry["shapes"])
        cfg = table.apply_fields(gemm.GemmConfig(), entry["config"])
        assert (cfg.tile_mn, cfg.cluster_mn) == ((128, 128), (1, 2))


NEW_FAMILIES: dict[str, dict[str, Any]] = {  # options no other GEMM test compiles
    "raster-n": {"tile_mn": (128, 256), "cluster_mn": (2, 1), "raster": "n"},
    "epi-n-64": {"tile_mn": (128, 256), "cluster_mn": (2, 1), "epi_n": 64, "epi_stages": 2},
    "stages-3": {"tile_mn": (128, 256), "cluster_mn": (2, 1), "stages": 3},
    "64x256-1x2": {"tile_mn": (64, 256), "cluster_mn": (1, 2)},
    "128x192-2x1": {"tile_mn": (128, 192), "cluster_mn": (2, 1), "raster": "m", "epi_stages": 3},
    "128x192-2x1-raster-n": {"tile_mn": (128, 192), "cluster_mn": (2, 1), "raster": "n"},
    "128x256-2x1-epi-8": {"tile_mn": (128, 256), "cluster_mn": (2, 1), "epi_stages": 8},
    "128x192-2x1-epi-6": {"tile_mn": (128, 192), "cluster_mn": (2, 1), "epi_stages": 6},
    "128x192-split-3": {"tile_mn": (128, 192), "split_k": 3},
    "128x256-split-4": {"tile_mn": (128, 256), "split_k": 4},
    "128x128-k256-split-2": {"tile_mn": (128, 128), "split_k": 2, "k_block_bytes": 256},
    "128x256-k256-split-4": {"tile_mn": (128, 256), "split_k": 4, "k_block_bytes": 256},
    "64x128-2x1": {"tile_mn": (64, 128), "cluster_mn": (2, 1), "k_block_bytes": 128},
    "64x128-2x1-k256": {"tile_mn": (64, 128), "cluster_mn": (2, 1), "k_block_bytes": 256},
    "128x128-2x1-tail-3": {"tile_mn": (128, 128), "cluster_mn": (2, 1), "tail_split": 3},
    "256x128-2x1": {"tile_mn": (256, 128), "cluster_mn": (2, 1)},
    "256x128-1x2": {"tile_mn": (256, 128), "cluster_mn": (1, 2)},
    "128x192-1x2-tail-3": {"tile_mn": (128, 192), "cluster_mn": (1, 2), "tail_split": 3},
}


@pytest.mark.parametrize("family", sorted(NEW_FAMILIES))
def test_template_family_compiles_to_the_twins_code(
    tune: Any, gemm: Any, table: Any, family: str
) -> None:
    fields = NEW_FAMILIES[family]
    defaults = {"split_k": 1, "k_block_bytes": 128, "tail_split": 1}  # unnamed: these
    want = {**defaults, **fields}
    (template,) = [
        t for t in tune.TEMPLATES if all(t.get(k, defaults.get(k)) == v for k, v in want.items())
    ]
    cfg = table.apply_fields(gemm.GemmConfig(), template)
    out = gemm.compile_only(cfg)
    assert out["verified"] is True and out["same_counts"] is True
    assert out["ts"]["wgmma.mma_async"] > 0 and out["ts"]["cp.async.bulk.tensor"] > 0


def test_shipped_fp8_entries_promote(gemm: Any, table: Any) -> None:
    """Every FP8 entry keeps two-level accumulation: a tile without registers for it would
    trade the accurate product (what ``torch_accurate`` is measured against) for speed."""
    fp8 = gemm.GemmConfig(dtype="e4m3", scale="tensor")
    for dtype, config in _shipped_families():
        if dtype == "e4m3":
            assert table.apply_fields(fp8, json.loads(config)).promotion > 0, config


def _shipped_families() -> list[tuple[str, str]]:
    """The distinct ``(dtype, config)`` pairs of the shipped table (JSON config text)."""
    path = Path(__file__).resolve().parents[3] / "examples" / "hopper" / "gemm_table.json"
    if not path.is_file():  # the package tested alone, without the examples: nothing to pick
        return []
    entries = json.loads(path.read_text())["entries"]
    return sorted({(e["dtype"], json.dumps(e["config"], sort_keys=True)) for e in entries})


@pytest.mark.parametrize(("dtype", "config"), _shipped_families())
def test_every_configuration_the_table_picks_compiles_to_the_twins_code(
    gemm: Any, table: Any, dtype: str, config: str
) -> None:
    """What the table can pick is verified and its PTX checked on the CPU (an
    entry of a ``WIDTH_FAMILIES`` tile in every width ``fit_width`` may give it)."""
    import dataclasses

    scale = "tensor" if dtype == "e4m3" else "none"  # the FP8 entries were tuned so
    cfg = table.apply_fields(gemm.GemmConfig(dtype=dtype, scale=scale), json.loads(config))
    family = next((f for f in table.WIDTH_FAMILIES if cfg.tile_mn in f), (cfg.tile_mn,))
    for tile in family:
        out = gemm.compile_only(dataclasses.replace(cfg, tile_mn=tile))
        assert out["verified"] is True and out["same_counts"] is True
        assert out["ts"]["wgmma.mma_async"] > 0 and out["ts"]["cp.async.bulk.tensor"] > 0


def test_from_sweep_ranks_graph_timings_or_with_eager_per_call_ones(
    tune: Any, table: Any, tmp_path: Path, capsys: Any
) -> None:
    """Graph timing where every contender has it; ``--eager`` the per-call one; ``--eager``
    alone (nothing to rank) is a usage error."""
    import dataclasses

    plain = tune.GemmConfig(tile_mn=(128, 256))
    other = dataclasses.replace(plain, cluster_mn=(2, 1))
    row: dict[str, Any] = {"bench": "gemm_sweep", "mnk": [1024, 8192, 8192]}
    row["config"] = dataclasses.asdict(plain)
    row["ts"] = {"ok": True, "tflops": 666.0, "graph_tflops": 680.0}
    row["torch"] = {"ok": True, "tflops": 668.0, "graph_tflops": 670.0}
    row["vs:c2x1"] = {"ok": True, "tflops": 725.0, "graph_tflops": 677.0}
    row["vs:c2x1"]["config"] = dataclasses.asdict(other)
    log = tmp_path / "ab.log"
    log.write_text(json.dumps(row) + "\n")
    winners = {}
    for extra in ([], ["--eager"]):
        out = tmp_path / f"t{len(extra)}.json"
        argv = ["--from-sweep", str(log), "--margin", "0", *extra, "-o", str(out)]
        assert tune.main(argv) == 0
        (entry,) = table.load_table(out)["entries"]
        winners[bool(extra)] = (entry["winner"], entry["tflops"])
    assert winners == {
        False: ("128x256-c1x1-coop-sta", [680.0]),
        True: ("128x256-c2x1-coop-sta", [725.0]),
    }
    with pytest.raises(SystemExit):
        tune.main(["--eager", "--dry-run"])
    assert "--eager ranks --from-sweep" in capsys.readouterr().err


def test_table_from_a_sweeps_same_run_ab(
    tune: Any, table: Any, tmp_path: Path, capsys: Any
) -> None:
    """``--from-sweep``: the entry from a ``gemm_sweep.py --versus`` run, each contender
    verified first; the swizzle the sweep fitted to the shape is the default maximum again;
    lines of another problem (here rowwise scales) and wrong contenders take no part; within
    the margin the current table's entry stays."""
    import dataclasses

    from ts_runtime.errors import RuntimeConfigError

    fp8 = tune.GemmConfig(dtype="e4m3", scale="tensor", tile_mn=(128, 128))
    table_cfg = dataclasses.replace(fp8, cluster_mn=(1, 2), tail_split=3)
    fast = dataclasses.replace(fp8, tile_mn=(128, 192), epi_stages=3, raster="n")
    wrong = dataclasses.replace(fp8, tile_mn=(128, 192), epi_stages=3)
    # the same schedule run with another swizzle than the fitted one: a contender of its own,
    # whose slower timing must not stand for the fitted schedule's
    unfitted = dataclasses.replace(fast, swizzle=1)
    # faster, but no registers to promote: fast-accumulation error, not the same product
    wide = dataclasses.replace(fp8, tile_mn=(128, 256))
    # the table's own schedule without promotion: its fields, another promotion interval
    asdict_unpromoted = dataclasses.asdict(dataclasses.replace(table_cfg, promote_every=0))
    asdict_gone = {**dataclasses.asdict(table_cfg), "tile_mn": [128, 224]}

    def line(mnk: list[int], base: Any, speeds: tuple[float, float, float]) -> str:
        row: dict[str, Any] = {"bench": "gemm_sweep", "mnk": mnk}
        row["config"] = dataclasses.asdict(base)
        row["ts"] = {"ok": True, "tflops": speeds[0]}
        row["torch_accurate"] = {"ok": True, "tflops": 1250.0}
        row["vs:fast"] = {"ok": True, "tflops": speeds[1], "config": dataclasses.asdict(fast)}
        row["vs:wrong"] = {"ok": False, "tflops": speeds[2], "config": dataclasses.asdict(wrong)}
        row["vs:unfitted"] = {"ok": True, "tflops": 900.0, "config": dataclasses.asdict(unfitted)}
        row["vs:wide"] = {"ok": True, "tflops": 1500.0, "config": dataclasses.asdict(wide)}
        row["vs:unpromoted"] = {"ok": True, "tflops": 1600.0, "config": asdict_unpromoted}
        # a tile this code does not have (a sweep log may time one added for a single A/B)
        row["vs:gone"] = {"ok": True, "tflops": 1700.0, "config": asdict_gone}
        return json.dumps(row)

    rowwise = dataclasses.replace(table_cfg, scale="rowwise")
    log = tmp_path / "ab.log"
    log.write_text(
        "\n".join(
            [
                "compiling ...",
                line([8192, 8192, 8192], table_cfg, (1200.0, 1290.0, 2000.0)),
                line([8192, 28672, 8192], table_cfg, (1210.0, 1240.0, 2000.0)),
                line([8192, 8192, 8192], rowwise, (100.0, 1.0, 1.0)),  # another problem
                json.dumps({"bench": "gemm_sweep", "summary": True}),
            ]
        )
    )
    out = tmp_path / "t.json"
    argv = ["--from-sweep", str(log), "--dtype", "e4m3", "--scale", "tensor", "-o", str(out)]
    assert tune.main([*argv, "--margin", "0"]) == 0
    printed = capsys.readouterr().out
    assert '"left_out": "vs:unpromoted"' in printed
    assert '"left_out": "vs:gone"' in printed and "TS-R005" in printed
    made = table.load_table(out)
    assert made is not None
    (entry,) = made["entries"]
    assert entry["class"] == table.shape_class((8192, 8192, 8192)) == "Ml-Nl-Km-W4"
    assert entry["winner"] == "128x192-c1x1-coop-sta-rastern-epi_stages3"
    assert entry["config"]["swizzle"] == 8 and entry["tflops"] == [1290.0, 1240.0]
    assert entry["torch_tflops"] == [1250.0, 1250.0]
    # a 2 % margin for the table's own entry (incumbents: the shipped table's winners)
    incumbent = tune.Candidate(table.tuned_fields(table_cfg), None).key
    rows = [
        {"mnk": [1, 1, 1], "class": "X", "dtype": "e4m3", "tflops": {incumbent: 100.0, "b": 101.5}},
    ]
    fields = {incumbent: table.tuned_fields(table_cfg), "b": table.tuned_fields(fast)}
    (kept,) = tune.best_per_class(rows, fields, {"X": incumbent}, 0.02)
    assert kept["winner"] == incumbent
    with pytest.raises(RuntimeConfigError, match="no timed bf16 sweep lines"):
        tune.main(["--from-sweep", str(log), "-o", str(out)])


def test_from_sweep_names_a_class_it_leaves_out_and_takes_one_source(
    tune: Any, tmp_path: Path, capsys: Any
) -> None:
    """Two lines of one class whose contenders share none (a variant without the sweep's own
    configuration is impossible, so: the sweep's configuration wrong in one line) leave the
    class out, and the run says so; ``--from-log`` with ``--from-sweep`` is a usage error."""
    import dataclasses

    fp8 = tune.GemmConfig(dtype="e4m3", scale="tensor", tile_mn=(128, 128))
    other = dataclasses.replace(fp8, tile_mn=(128, 192), epi_stages=3)

    def line(ts_ok: bool, vs_ok: bool) -> str:
        row: dict[str, Any] = {"bench": "gemm_sweep", "mnk": [8192, 8192, 8192]}
        row["config"] = dataclasses.asdict(fp8)
        row["ts"] = {"ok": ts_ok, "tflops": 1200.0}
        row["vs:x"] = {"ok": vs_ok, "tflops": 1250.0, "config": dataclasses.asdict(other)}
        return json.dumps(row)

    log = tmp_path / "ab.log"
    log.write_text(line(True, False) + "\n" + line(False, True))
    argv = ["--dtype", "e4m3", "--scale", "tensor", "-o", str(tmp_path / "t.json")]
    assert tune.main(["--from-sweep", str(log), *argv]) == 0
    out = capsys.readouterr().out
    assert '"class_left_out": "Ml-Nl-Km-W4"' in out and '"entries": 0' in out
    with pytest.raises(SystemExit):
        tune.main(["--from-sweep", str(log), "--from-log", str(log), *argv])


def test_versus_options_that_are_not_schedule_options_are_a_typed_error(gemm: Any) -> None:
    from ts_runtime.errors import RuntimeConfigError

    cli = importlib.import_module("_gemm_cli")
    problem = gemm.GemmConfig(dtype="e4m3", scale="tensor")
    cfg = cli.versus_config(problem, ["--tile", "128x192", "--epi-stages", "3"], (64, 64, 64))
    assert (cfg.tile_mn, cfg.scale) == ((128, 192), "tensor")
    with pytest.raises(RuntimeConfigError, match=r"unknown \['--tiles'"):
        cli.versus_config(problem, ["--tiles", "128x192"], (64, 64, 64))
    with pytest.raises(RuntimeConfigError, match="invalid choice"):
        cli.versus_config(problem, ["--tile", "100x100"], (64, 64, 64))


def test_a_time_budget_writes_the_shapes_timed_and_names_the_rest(
    tune: Any, table: Any, tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    """``--budget-s``: once the budget is spent no further shape is timed; the table holds the
    shapes timed before, and every shape left out is named."""
    _gpu_check: Any = importlib.import_module("_gpu_check")
    clock = [0.0]
    timed: list[Any] = []

    def time_shape(mnk: Any, accepted: Any, *_: Any, **__: Any) -> Any:
        timed.append(tuple(mnk))
        clock[0] += 100.0  # each shape takes 100 s of the budget
        return {"tflops": {accepted[0].key: 600.0, "torch": 650.0}, "wrong": {}}

    monkeypatch.setattr(_gpu_check, "gpu_ready", lambda _file: True)
    monkeypatch.setattr(tune, "compile_all", lambda cfgs, jobs, compile_only: dict.fromkeys(cfgs))
    monkeypatch.setattr(tune, "_time_shape", time_shape)
    monkeypatch.setattr(tune, "_gpu_name", lambda: "NVIDIA H200")
    monkeypatch.setattr(tune, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    out = tmp_path / "part.json"
    assert tune.main(["--shapes", "sweep", "--budget-s", "250", "-o", str(out)]) == 0
    # Shapes start at 0, 100, 200 s (within 250); the fourth would start at 300 s.
    assert timed == [tuple(s) for s in tune.SWEEP[:3]]
    left = [json.loads(line) for line in capsys.readouterr().out.splitlines() if "left_out" in line]
    assert [tuple(x["left_out"]) for x in left] == [tuple(s) for s in tune.SWEEP[3:]]
    written = table.load_table(out)
    assert written is not None
    assert {e["class"] for e in written["entries"]} == {SWEEP_CLASSES[s] for s in tune.SWEEP[:3]}


def test_a_budget_that_is_not_positive_is_a_usage_error(tune: Any, capsys: Any) -> None:
    with pytest.raises(SystemExit):
        tune.main(["--dry-run", "--budget-s", "0"])
    assert "give a positive number of seconds" in capsys.readouterr().err
