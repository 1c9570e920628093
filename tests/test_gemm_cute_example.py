"""bench/gemm_sweep.py on the CPU: its host side, and the CuTe example column (CUTLASS's Hopper
persistent GEMM) compiled for sm_90a.

The example file is NVIDIA's and never in the repository: ``tools/fetch_cute_example.sh`` puts
it at ``.gpu/cute_example/dense_gemm_persistent.py`` (or set ``TS_CUTE_EXAMPLE``). Where it is,
the driver must load it and compile it for sm_90a with fake tensors exactly as the sweep calls
it (tile 128 x 256, cluster 2 x 1, ``M x K x 1`` tensors); where it is not, those tests skip
and the sweep leaves the column out with a note.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cutlass")

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"


@pytest.fixture(scope="module")
def driver() -> Any:
    if str(BENCH) not in sys.path:
        # last: bench/gemm.py must not hide examples/hopper/gemm.py from the sweep
        sys.path.append(str(BENCH))
    return importlib.import_module("_cute_example")


@pytest.fixture(scope="module")
def example_file(driver: Any) -> Path:
    path = Path(os.environ.get("TS_CUTE_EXAMPLE", driver.DEFAULT_PATH))
    if not path.is_file():
        pytest.skip(f"{path} absent: run tools/fetch_cute_example.sh")
    return path


def test_missing_file_is_a_clear_error(driver: Any, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"fetch_cute_example\.sh"):
        driver.load(tmp_path / "absent.py")


def test_other_file_is_refused(driver: Any, tmp_path: Path) -> None:
    other = tmp_path / "other.py"
    other.write_text("x = 1\n")
    with pytest.raises(AttributeError, match="HopperWgmmaGemmPersistentKernel"):
        driver.load(other)


def test_sweep_without_the_file_skips_the_column(driver: Any, tmp_path: Path) -> None:
    sweep = importlib.import_module("gemm_sweep")
    args = argparse.Namespace(cute_example=tmp_path / "absent.py")
    extras, note = sweep.cute_example_column(args, None)
    assert extras == {} and "not found" in note and "fetch_cute_example.sh" in note
    assert sweep.cute_example_column(argparse.Namespace(cute_example=None), None) == ({}, "")


def test_example_compiles_for_sm90a(driver: Any, example_file: Path) -> None:
    compiled = driver.compile_fake(example_file)
    assert callable(compiled)


def test_example_kernel_is_the_compared_configuration(driver: Any, example_file: Path) -> None:
    kernel = driver.make_kernel(driver.load(example_file))
    assert tuple(kernel.cluster_shape_mn) == (2, 1)
    assert tuple(kernel.tile_shape_mnk[:2]) == (128, 256)


def test_sweep_main_without_a_gpu(
    driver: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """The sweep's host side with the GPU parts replaced: configs per shape, the CuTe column."""
    sweep = importlib.import_module("gemm_sweep")
    gemm = importlib.import_module("gemm")
    compiled_cfgs: list[Any] = []

    def compile_for_gpu(cfg: Any) -> dict[str, Any]:
        compiled_cfgs.append(cfg)
        return {"ts": None, "twin": None}

    def run_case(cfg: Any, compiled: Any, mnk: Any, iters: int, **kw: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"mnk": list(mnk), "ts": {"ok": True, "tflops": 700.0}}
        out["twin"] = {"ok": True, "tflops": 700.0}
        out["ts_over_torch"] = 1.0
        if "cute_example" in kw["extras"]:
            out["cute_example"] = {"ok": True, "tflops": 350.0}
        return out

    monkeypatch.setattr(gemm, "compile_for_gpu", compile_for_gpu)
    monkeypatch.setattr(gemm, "run_case", run_case)
    shapes = ["--shape", "128", "8192", "8192", "--shape", "8192", "8192", "8192"]
    assert sweep.main([*shapes, "--cute-example", "/nonexistent/dense_gemm_persistent.py"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    table = importlib.import_module("_gemm_table")  # beside gemm.py
    picks = [table.pick(mnk, gemm.GemmConfig()) for mnk in ((128, 8192, 8192), (8192, 8192, 8192))]
    assert [r["config_source"] for r in lines[:2]] == [source for _, source in picks]
    assert all("not found" in r["cute_example"]["skipped"] for r in lines[:2])
    assert lines[2]["summary"] and lines[2]["ok"] and "ts_over_cute_example_geomean" not in lines[2]
    # no CuTe column: the targets judged are the two against cuBLAS, both held at 1.0
    assert lines[2]["targets"] == {
        "ts_over_torch_geomean >= 1.00": True,
        "ts_over_torch_min >= 0.97": True,
    }
    assert [c.tile_mn for c in compiled_cfgs] == [cfg.tile_mn for cfg, _ in picks]

    monkeypatch.setattr(sweep, "cute_example_column", lambda a, c: ({"cute_example": None}, ""))
    assert sweep.main([*shapes, "--config", "default", "--tile", "128x128"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["config_source"] for r in lines[:2]] == ["default", "default"]
    assert lines[0]["ts_over_cute_example"] == 2.0
    assert lines[2]["ts_over_cute_example_geomean"] == pytest.approx(2.0)


def test_sweep_measures_at_least_measure_s(
    driver: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Every measurement lasts ``--measure-s`` (50 ms by default, 0: exactly ``--iters``); a
    negative one is a usage error, not a silent 0."""
    sweep = importlib.import_module("gemm_sweep")
    gemm = importlib.import_module("gemm")
    seen: list[float] = []

    def run_case(cfg: Any, compiled: Any, mnk: Any, iters: int, **kw: Any) -> dict[str, Any]:
        seen.append(kw["measure_s"])
        ok = {"ok": True, "tflops": 1.0}
        return {"mnk": list(mnk), "ts": ok, "twin": ok}

    monkeypatch.setattr(gemm, "compile_for_gpu", lambda cfg: {"ts": None, "twin": None})
    monkeypatch.setattr(gemm, "run_case", run_case)
    shape = ["--shape", "256", "256", "256", "--config", "default"]
    assert sweep.main(shape) == 0
    assert sweep.main([*shape, "--measure-s", "0"]) == 0
    assert seen == [importlib.import_module("_timing").MEASURE_S, 0.0]
    with pytest.raises(SystemExit) as exit_:
        sweep.main([*shape, "--measure-s", "-1"])
    assert exit_.value.code == 2 and "--measure-s -1" in capsys.readouterr().err


def test_sweep_versus_times_other_configurations_in_the_same_run(
    monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """``--versus FLAGS``: another TS configuration as a variant in the same rounds."""
    if str(BENCH) not in sys.path:
        sys.path.append(str(BENCH))
    sweep = importlib.import_module("gemm_sweep")
    gemm = importlib.import_module("gemm")
    compiled: list[tuple[Any, tuple[str, ...]]] = []

    def compile_for_gpu(cfg: Any, only: tuple[str, ...] = ()) -> dict[str, Any]:
        compiled.append((cfg, only))
        return {"ts": None, "twin": None}

    def run_case(cfg: Any, done: Any, mnk: Any, iters: int, **kw: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"mnk": list(mnk), "ts": {"ok": True, "tflops": 700.0}}
        out["twin"] = {"ok": True, "tflops": 700.0}
        out["ts_over_torch"] = 1.0
        for name, (other, _) in kw["variants"].items():
            assert other.dtype == cfg.dtype and other.scale == cfg.scale  # the same problem
            out[name] = {"ok": True, "tflops": 350.0}
            out[f"{name}_over_torch"] = 0.5
        return out

    monkeypatch.setattr(gemm, "compile_for_gpu", compile_for_gpu)
    monkeypatch.setattr(gemm, "run_case", run_case)
    versus = "--tile 128x128 --kernel pingpong --cluster 2x1"
    assert sweep.main(["--shape", "8192", "8192", "8192", "--versus", versus]) == 0
    row, total = (json.loads(x) for x in capsys.readouterr().out.splitlines())
    name = "vs:tile=128x128,kernel=pingpong,cluster=2x1"
    assert sweep.versus_name(versus) == name
    assert row[name]["tflops"] == 350.0 and row[f"ts_over_{name}"] == 2.0
    assert total[f"{name}_over_torch_geomean"] == pytest.approx(0.5)
    (other, only) = compiled[-1]  # the sweep's own configuration first, then the versus one
    assert only == ("ts",)
    assert (other.kernel, other.tile_mn, other.cluster_mn) == ("pingpong", (128, 128), (2, 1))
    # FP8 with rowwise scales: the variant computes the sweep's problem on its own schedule
    versus = "--tile 128x192 --epi-stages 3 --tail-split 3"
    fp8 = ["--dtype", "e4m3", "--scale", "rowwise", "--versus", versus]
    assert sweep.main(["--shape", "4096", "4096", "4096", *fp8]) == 0
    row, total = (json.loads(x) for x in capsys.readouterr().out.splitlines())
    (other, only) = compiled[-1]
    assert (other.dtype, other.scale, other.tile_mn, other.tail_split) == (
        "e4m3",
        "rowwise",
        (128, 192),
        3,
    )
    name = "vs:tile=128x192,epi-stages=3,tail-split=3"
    assert total[f"{name}_over_torch_geomean"] == pytest.approx(0.5)


def test_sweep_passes_judge_each_shape_by_its_median(
    monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """``--passes 3``: every shape three times in turn, compiled once; a median line per shape
    (each ratio's middle value of the three passes, whichever pass it came from), and the
    summary and targets over the medians, so one bad pass decides nothing."""
    if str(BENCH) not in sys.path:
        sys.path.append(str(BENCH))
    sweep = importlib.import_module("gemm_sweep")
    gemm = importlib.import_module("gemm")
    compiles: list[Any] = []
    # TS / torch per pass, by M: 4096 dips in pass 2 only; 2048 is under the bar twice
    ratios = {4096: [1.01, 0.90, 1.03], 2048: [0.96, 0.99, 0.95]}
    calls: list[int] = []

    def run_case(cfg: Any, done: Any, mnk: Any, iters: int, **kw: Any) -> dict[str, Any]:
        calls.append(mnk[0])
        value = ratios[mnk[0]][calls.count(mnk[0]) - 1]
        out: dict[str, Any] = {"mnk": list(mnk), "ts": {"ok": True, "tflops": 700.0 * value}}
        out["twin"] = {"ok": True, "tflops": 700.0}
        out["ts_over_torch"] = value
        return out

    def compile_for_gpu(cfg: Any) -> dict[str, Any]:
        compiles.append(cfg)
        return {"ts": None, "twin": None}

    monkeypatch.setattr(gemm, "compile_for_gpu", compile_for_gpu)
    monkeypatch.setattr(gemm, "run_case", run_case)
    shapes = ["--shape", "4096", "4096", "4096", "--shape", "2048", "2048", "2048"]
    assert sweep.main([*shapes, "--passes", "3"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert calls == [4096, 2048] * 3 and len(compiles) == 2  # passes in turn, compiled once
    assert [r["pass"] for r in lines[:6]] == [1, 1, 2, 2, 3, 3]
    medians, total = lines[6:8], lines[8]
    assert [(r["mnk"][0], r["median_of_passes"]) for r in medians] == [(4096, 3), (2048, 3)]
    assert [r["ts_over_torch"] for r in medians] == [1.01, 0.96]
    assert medians[0]["ts_over_twin"] == pytest.approx(1.01)
    assert total["passes"] == 3 and total["ts_over_torch_min"] == 0.96
    assert total["ts_over_torch_geomean"] == pytest.approx((1.01 * 0.96) ** 0.5)
    assert total["targets"]["ts_over_torch_min >= 0.97"] is False
    calls.clear()
    assert sweep.main([*shapes]) == 0  # one pass: no median lines, the summary as before
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == 3 and "pass" not in lines[0] and lines[2]["passes"] == 1
    with pytest.raises(SystemExit) as exit_:
        sweep.main([*shapes, "--passes", "0"])
    assert exit_.value.code == 2 and "--passes 0" in capsys.readouterr().err


def test_run_case_variants_must_compute_the_same_problem() -> None:
    """A variant on another schedule is taken; one with other scales (or dtype, epilogue) is
    refused before any launch, naming the variant and the fields."""
    from ts_runtime.errors import RuntimeConfigError

    host = importlib.import_module("_gemm_host")
    cfg = host.GemmConfig(dtype="e4m3", scale="rowwise", tile_mn=(128, 128))
    host.same_problem(cfg, dataclasses.replace(cfg, tile_mn=(128, 256), promote_every=0), "vs")
    with pytest.raises(RuntimeConfigError, match=r"'vs:x'.*'scale': 'tensor'") as info:
        host.same_problem(cfg, dataclasses.replace(cfg, scale="tensor"), "vs:x")
    assert info.value.resource == "vs:x" and "only the schedule" in info.value.fix


def test_targets_name_each_bar_and_whether_it_holds(driver: Any) -> None:
    """The performance targets, read off a summary: bf16 against cuBLAS and the CuTe example, FP8
    against the accurate _scaled_mm (its presence makes the summary an FP8 one)."""
    sweep = importlib.import_module("gemm_sweep")
    bf16 = {"ts_over_torch_geomean": 0.994, "ts_over_torch_min": 0.973}
    bf16["ts_over_cute_example_min"] = 0.982
    assert sweep.targets(bf16) == {
        "ts_over_torch_geomean >= 1.00": False,
        "ts_over_torch_min >= 0.97": True,
        "ts_over_cute_example_min >= 1.00": False,
    }
    fp8 = {"ts_over_torch_geomean": 0.9, "ts_over_torch_accurate_geomean": 1.02}
    fp8["ts_over_torch_accurate_min"] = 0.931
    assert sweep.targets(fp8) == {
        "ts_over_torch_accurate_geomean >= 1.00": True,
        "ts_over_torch_accurate_min >= 0.95": False,
    }


def test_cublas_kernel_names_read_in_our_frame() -> None:
    """bench/cublas_kernels.py: an ``nvjet`` name is cuBLAS's column-major frame (its M is our
    N), so its tile and cluster swap; other kernels (a memset) get nothing. The names are ones
    cuBLAS ran on an H100 SXM (bench/data/cublas_kernels_h100.json); the 3000 x 5000 one is the
    table's 256 x 152 in 2 x 1: 12 x 33 tiles."""
    if str(BENCH) not in sys.path:
        sys.path.append(str(BENCH))
    names = importlib.import_module("cublas_kernels")
    ragged = names.ours("nvjet_sm90_tst_152x256_64x4_1x2_h_bz_coopA_TNN")
    assert ragged == {"tile_mn": [256, 152], "cluster_mn": [2, 1], "k_block": 64, "stages": 4}
    fp8 = names.ours("nvjet_sm90_qqtst_128x160_128x5_2x1_v_bz_coopA_algo2_TNT")
    assert fp8 == {"tile_mn": [160, 128], "cluster_mn": [1, 2], "k_block": 128, "stages": 5}
    assert names.ours("Memset (Device)") is None


def test_from_logs_pools_the_passes_of_earlier_sweeps(tmp_path: Path, capsys: Any) -> None:
    """``--from-logs``: the per-pass lines of two calls' logs judged as one sweep's passes
    (their median and summary lines, and non-JSON lines, skipped); logs that mix dtypes, or
    time two TS kernels for one shape, are refused with the reason."""
    if str(BENCH) not in sys.path:
        sys.path.append(str(BENCH))
    sweep = importlib.import_module("gemm_sweep")
    cfg = {"dtype": "bf16", "tile_mn": [128, 256]}

    def line(m: int, ratio: float, **extra: Any) -> str:
        row: dict[str, Any] = {"mnk": [m, m, m], "ts": {"ok": True}, "twin": {"ok": True}}
        row |= {"config": cfg, "baseline": "torch.matmul", "ts_over_torch": ratio, **extra}
        return json.dumps(row)

    # call 1: 4096 at 1.02, 0.96; call 2: 4096 at 0.98 (median 0.98 of three), 2048 twice
    one = tmp_path / "call1.log"
    one.write_text(
        "== python3 bench/gemm_sweep.py --passes 2\n"
        + "\n".join([line(4096, 1.02, ts_over_cute_example=1.1), line(4096, 0.96)])
        + '\n{"mnk": [4096, 4096, 4096], "median_of_passes": 2, "ts_over_torch": 0.5}\n'
        + '{"bench": "gemm_sweep", "summary": true}\nrc=0\n'
    )
    two = tmp_path / "call2.log"
    two.write_text("\n".join([line(4096, 0.98), line(2048, 1.00), line(2048, 0.94)]) + "\n")
    assert sweep.main(["--from-logs", str(one), str(two)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    medians, total = lines[:2], lines[2]
    assert [(r["mnk"][0], r["median_of_passes"]) for r in medians] == [(4096, 3), (2048, 2)]
    assert medians[0]["ts_over_torch"] == 0.98
    assert medians[1]["ts_over_torch"] == pytest.approx(0.97)
    assert total["passes"] == 3 and total["dtype"] == "bf16"
    assert total["ts_over_torch_min"] == pytest.approx(0.97)
    assert total["ts_over_cute_example_min"] == 1.1  # one pass had it
    assert total["targets"]["ts_over_torch_geomean >= 1.00"] is False

    fp8 = tmp_path / "fp8.log"
    fp8.write_text(line(4096, 1.0).replace("torch.matmul", "torch._scaled_mm") + "\n")
    other = tmp_path / "other.log"
    other.write_text(line(2048, 1.0).replace("128, 256", "256, 128") + "\n")
    empty = tmp_path / "empty.log"
    empty.write_text("== nothing ran\nrc=124\n")
    cut = tmp_path / "cut.log"
    cut.write_text(line(2048, 1.0)[:40] + "\n")
    for logs, message in (
        ([one, fp8], "mix problems"),
        ([two, other], "2048x2048x2048 ran 2 TS configurations"),
        ([empty], "no sweep lines"),
        ([cut], "cut.log:1: not a whole JSON line"),
        ([tmp_path / "absent.log"], "no such file"),
    ):
        with pytest.raises(SystemExit) as exit_:
            sweep.main(["--from-logs", *map(str, logs)])
        assert exit_.value.code == 2 and message in capsys.readouterr().err
