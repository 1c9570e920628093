"""Shared fixtures: compile for sm_90a on the CPU, with PTX kept in a temporary folder."""

from __future__ import annotations

import importlib.util
import os
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
    os.environ["CUTE_DSL_DUMP_DIR"] = tempfile.mkdtemp(prefix="ts_codegen_ptx_")

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "hopper"


def _load(name: str) -> object:
    path = EXAMPLES / f"{name}.py"
    mod_name = f"hopper_{name}"
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, path)
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
    """Import ``examples/hopper/<name>.py`` as a module."""
    if not EXAMPLES.is_dir():
        pytest.skip("examples/hopper lives in the repository, not in the wheel")
    # The examples are thin clients of the facade (and its harness, in ts-runtime).
    pytest.importorskip(
        "task_scheduling.harness",
        reason="the examples import the task_scheduling facade (tests all)",
    )
    return _load


def pytest_configure(config: pytest.Config) -> None:
    # Registered here too: a copy of these tests runs against the installed wheel, outside the
    # repository's pytest configuration (tools/check_layers_alone.py).
    config.addinivalue_line("markers", "smoke: one kernel of each kind (the oldest Python's run)")
