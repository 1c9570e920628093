"""Running a Hopper example without torch or without a GPU says so and exits 2, no traceback."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
HOPPER = ROOT / "examples" / "hopper"
EXAMPLES = sorted(p.stem for p in HOPPER.glob("*.py") if not p.name.startswith("_"))


def _gpu_check() -> Any:
    spec = importlib.util.spec_from_file_location("examples_gpu_check", HOPPER / "_gpu_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fake_torch(available: bool, capability: tuple[int, int] = (9, 0)) -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_available=lambda: available,
        get_device_capability=lambda: capability,
        get_device_name=lambda: "NVIDIA Test GPU",
    )
    return torch


def test_no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` fails as if not installed
    problem = _gpu_check().gpu_missing()
    assert "`pip install torch`" in problem and "--compile-only" in problem


def test_no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(False))
    problem = _gpu_check().gpu_missing()
    assert problem.startswith("no CUDA GPU here") and "--compile-only" in problem


def test_not_a_hopper_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(True, (10, 0)))
    problem = _gpu_check().gpu_missing()
    assert "this GPU is NVIDIA Test GPU (sm_100)" in problem and "--compile-only" in problem


def test_a_hopper_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(True))
    assert _gpu_check().gpu_missing() is None


@pytest.mark.skipif(not EXAMPLES, reason="examples/hopper is not here")
@pytest.mark.parametrize("example", EXAMPLES)
def test_example_without_torch(example: str) -> None:
    pytest.importorskip("cutlass")  # the examples are CuTe DSL programs
    # As `python examples/hopper/<example>.py` on a machine without torch.
    script = HOPPER / f"{example}.py"
    code = textwrap.dedent(
        f"""
        import runpy, sys
        sys.modules["torch"] = None
        sys.path.insert(0, {str(HOPPER)!r})
        sys.argv = [{str(script)!r}]
        runpy.run_path({str(script)!r}, run_name="__main__")
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"{example}.py: the GPU run needs PyTorch")
    assert "--compile-only" in proc.stderr and proc.stdout == ""


@pytest.mark.smoke
def test_compile_only_leaves_no_files_behind(tmp_path: Path) -> None:
    """``--compile-only`` reads the PTX from the compiled kernel; no file lands in the cwd."""
    pytest.importorskip("cutlass")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUTE_DSL_")}
    proc = subprocess.run(
        [sys.executable, str(HOPPER / "tma_copy.py"), "--compile-only"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert '"same_counts": true' in proc.stdout
    assert list(tmp_path.iterdir()) == []
