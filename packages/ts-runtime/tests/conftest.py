"""Compile for sm_90a on the CPU, with PTX kept in a temporary folder."""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

# Before cutlass is imported anywhere: target and PTX dump are read from the environment.
os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
os.environ.setdefault("CUTE_DSL_KEEP", "ptx")
# A folder per process: pytest-xdist's workers inherit the environment, and two processes that
# keep PTX files of the same kernel name in one folder read each other's PTX.
if "PYTEST_XDIST_WORKER" in os.environ or "CUTE_DSL_DUMP_DIR" not in os.environ:
    os.environ["CUTE_DSL_DUMP_DIR"] = tempfile.mkdtemp(prefix="ts_runtime_ptx_")

# The helper modules beside the tests (runtime_*.py), importable under --import-mode=importlib.
sys.path.insert(0, str(Path(__file__).parent))


ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "hopper"


def _load(name: str) -> object:
    mod_name = f"hopper_{name}"
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    # As when the example runs as a script: it may import the examples beside it.
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def load_example() -> Callable[[str], object]:
    """Import ``examples/hopper/<name>.py`` (kernels written with Task / TaskManager)."""
    if not EXAMPLES.is_dir():
        pytest.skip("examples/hopper lives in the repository, not in the wheel")
    pytest.importorskip("cutlass")
    # The examples are thin clients of the facade.
    pytest.importorskip(
        "task_scheduling.harness",
        reason="the examples import the task_scheduling facade (tests all)",
    )
    return _load


# The Hopper GEMM example and its modules, for every GEMM test module (each imports once).
@pytest.fixture(scope="session")
def gemm(load_example: Callable[[str], object]) -> object:
    """``examples/hopper/gemm.py`` (and its sibling modules on ``sys.path``)."""
    return load_example("gemm")


@pytest.fixture(scope="session")
def tune(load_example: Callable[[str], object]) -> object:
    """``examples/hopper/gemm_tune.py``."""
    return load_example("gemm_tune")


@pytest.fixture(scope="session")
def table(gemm: object) -> object:
    """The GEMM's table module, ``_gemm_table``."""
    return importlib.import_module("_gemm_table")


@pytest.fixture(scope="session")
def host(gemm: object) -> object:
    """The GEMM's host module, ``_gemm_host``."""
    return importlib.import_module("_gemm_host")


@pytest.fixture(scope="session")
def config(gemm: object) -> object:
    """The GEMM's configuration module, ``_gemm_config`` (``GemmConfig``, its limits,
    ``fit_swizzle``)."""
    return importlib.import_module("_gemm_config")


@pytest.fixture(scope="session")
def steps(gemm: object) -> object:
    """The GEMM's steps module, ``_gemm_steps``."""
    return importlib.import_module("_gemm_steps")


@pytest.fixture
def ptxas_log(tmp_path: Path) -> Callable[..., str]:
    """``ptxas -arch=sm_90a -v`` on a PTX text, in the test's tmp folder: its log (registers,
    spill bytes, performance notes such as C7514 "WGMMA serialized"). Tests that need it skip
    (or return) where ``shutil.which("ptxas")`` finds none."""

    def run(ptx: str, name: str = "kernel") -> str:
        src = tmp_path / f"{name}.ptx"
        src.write_text(ptx)
        cmd = ["ptxas", "-arch=sm_90a", "-v", str(src), "-o", str(tmp_path / f"{name}.cubin")]
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stderr

    return run


def pytest_configure(config: pytest.Config) -> None:
    # Registered here too: a copy of these tests runs against the installed wheel, outside the
    # repository's pytest configuration (tools/check_layers_alone.py).
    config.addinivalue_line("markers", "smoke: one kernel of each kind (the oldest Python's run)")
