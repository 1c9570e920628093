"""bench/gemm_sweep.py's CuTe example column: CUTLASS's Hopper persistent GEMM, driven on the CPU.

The example file is NVIDIA's and never in the repository: ``tools/fetch_cute_example.sh`` puts
it at ``.gpu/cute_example/dense_gemm_persistent.py`` (or set ``TS_CUTE_EXAMPLE``). Where it is,
the driver must load it and compile it for sm_90a with fake tensors exactly as the sweep calls
it (tile 128 x 256, cluster 2 x 1, ``M x K x 1`` tensors); where it is not, those tests skip
and the sweep leaves the column out with a note.
"""

from __future__ import annotations

import argparse
import importlib
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
        sys.path.insert(0, str(BENCH))
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
