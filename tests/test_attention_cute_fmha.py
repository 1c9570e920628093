"""bench/attention.py's CuTe FMHA column (CUTLASS's Hopper FMHA example) on the CPU: its host
side, and the example compiled for sm_90a as the bench calls it.

The example file is NVIDIA's and never in the repository: ``tools/fetch_cute_fmha.sh`` puts it
(and the ``helpers`` package it imports) at ``.gpu/cute_example/fmha.py`` (or set
``TS_CUTE_FMHA``). Where it is, the driver must load it and compile it for sm_90a with fake
tensors in the layout it passes TS's ``(B, H, S, D)`` tensors in (tile 64 x 128, persistent);
where it is not, those tests skip and the bench says the column is absent.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

# The DSL reads its target when cutlass is first imported, and the example traces differently
# for another target (its accumulator's size is no longer a constant): sm_90a before the import.
os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
pytest.importorskip("cutlass")

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"


@pytest.fixture(scope="module")
def driver() -> ModuleType:
    if str(BENCH) not in sys.path:
        # last: bench/attention.py must not hide examples/hopper/attention.py
        sys.path.append(str(BENCH))
    return importlib.import_module("_cute_fmha")


@pytest.fixture(scope="module")
def bench(driver: ModuleType) -> ModuleType:
    """bench/attention.py under its own name (``attention`` is the example's)."""
    spec = importlib.util.spec_from_file_location("bench_attention", BENCH / "attention.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def example_file(driver: ModuleType) -> Path:
    path = Path(os.environ.get("TS_CUTE_FMHA", driver.DEFAULT_PATH))
    if not path.is_file():
        pytest.skip(f"{path} absent: run tools/fetch_cute_fmha.sh")
    return path


def test_missing_file_is_a_clear_error(driver: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"fetch_cute_fmha\.sh"):
        driver.load(tmp_path / "absent.py")


def test_other_file_is_refused(driver: ModuleType, tmp_path: Path) -> None:
    other = tmp_path / "other.py"
    other.write_text("x = 1\n")
    with pytest.raises(AttributeError, match="HopperFusedMultiHeadAttentionForward"):
        driver.load(other)


def test_without_the_file_the_column_says_so(driver: ModuleType, tmp_path: Path) -> None:
    fmha, note = driver.open_column(tmp_path / "absent.py")
    assert fmha is None and "not found" in note and "fetch_cute_fmha.sh" in note
    column = driver.column(None, note, None, None, None, None, False, 1.0, 1, 1e-2)
    assert column == {"skipped": note}


def test_bench_passes_the_column_to_every_shape(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """The bench's host side with the GPU parts replaced: ``--cute-fmha`` reaches each shape."""
    seen: list[Any] = []

    def run_shape(*args: Any) -> dict[str, Any]:
        seen.append(args[-1])
        return {"bench": "attention", "ts": {"ok": True}, "cute_fmha": {"skipped": args[-1][1]}}

    monkeypatch.setattr(bench, "run_shape", run_shape)
    # the packed batches (if this revision has them) are not this column's business
    monkeypatch.setattr(bench, "VARLEN", (), raising=False)
    assert bench.main(["--cute-fmha", "/nonexistent/fmha.py"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == len(bench.SHAPES) == len(seen)
    assert all(fmha is None and "not found" in note for fmha, note in seen)
    assert all("fetch_cute_fmha.sh" in r["cute_fmha"]["skipped"] for r in lines)


def test_compared_configuration(driver: ModuleType, example_file: Path) -> None:
    module = driver.load(example_file)
    kernel = driver.make_kernel(module, 128, driver.mask_type(4096, False))
    assert tuple(kernel.qk_mma_tiler) == (64, 128, 128) and kernel.is_persistent
    assert tuple(kernel.cta_tiler[:2]) == (128, 128)  # two warpgroups of 64 rows


def test_head_dims_the_example_takes(driver: ModuleType, example_file: Path) -> None:
    """D 64 and 128 in fp16 and bf16 (GQA too); D 256 needs another tile there: n/a."""
    module = driver.load(example_file)
    for dtype in ("fp16", "bf16"):
        assert driver.refusal(module, 4, 4096, 16, 16, 128, dtype) == ""
        assert driver.refusal(module, 2, 777, 4, 2, 64, dtype) == ""
        assert "refuses" in driver.refusal(module, 2, 4096, 16, 16, 256, dtype)


@pytest.mark.parametrize(
    ("dtype", "d", "causal", "ragged"),
    [("fp16", 128, False, False), ("bf16", 64, True, False), ("fp16", 64, False, True)],
)
def test_example_compiles_for_sm90a(
    driver: ModuleType, example_file: Path, dtype: str, d: int, causal: bool, ragged: bool
) -> None:
    compiled = driver.compile_fake(example_file, dtype, d, causal, ragged)
    assert callable(compiled)
