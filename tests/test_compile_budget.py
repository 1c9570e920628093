"""The suite's compile budget counts every compile of a run, subprocesses included, and fails
the run past it (``tools/compile_count``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

COUNTER = Path(__file__).resolve().parents[1] / "tools" / "compile_count"

KERNELS = textwrap.dedent(
    """
    import subprocess, sys
    import cutlass
    import cutlass.cute as cute

    @cute.jit
    def noop(x: cutlass.Int32):
        pass

    CHILD = "import cutlass, cutlass.cute as cute\\n" + (
        "@cute.jit\\ndef noop(x: cutlass.Int32):\\n    pass\\n"
        "cute.compile(noop, cutlass.Int32(1))\\n"
    )

    def test_twice_here():
        cute.compile(noop, cutlass.Int32(1))
        cute.compile(noop, cutlass.Int32(1))

    def test_once_in_a_subprocess(tmp_path):
        (tmp_path / "child.py").write_text(CHILD)
        subprocess.run([sys.executable, str(tmp_path / "child.py")], check=True)
    """
)


def _run(tmp_path: Path, budget: int) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_kernels.py").write_text(KERNELS)
    env = {k: v for k, v in os.environ.items() if k not in ("TS_COMPILE_LOG", "PYTHONPATH")}
    env.update(PYTHONPATH=str(COUNTER), CUTE_DSL_ARCH="sm_90a")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p"]
    cmd += ["ts_compile_budget", f"--compile-budget={budget}", "--rootdir", str(tmp_path)]
    return subprocess.run(
        [*cmd, str(tmp_path / "test_kernels.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.smoke
def test_a_run_over_its_budget_fails_and_says_what_compiled(tmp_path: Path) -> None:
    pytest.importorskip("cutlass")
    over = _run(tmp_path, budget=2)
    assert over.returncode == 1, over.stdout + over.stderr
    assert "2 passed" in over.stdout
    assert "3 compiles of a budget of 2; most in:" in over.stdout
    assert "over the budget of 2" in over.stdout
