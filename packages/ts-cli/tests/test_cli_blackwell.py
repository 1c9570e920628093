"""``ts compile --arch sm_100a``: a Blackwell kernel compiles on a machine without a GPU.

Each run is its own process: the CuTe DSL reads the target when it is first imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "blackwell" / "umma_chain.py"

pytestmark = pytest.mark.skipif(
    not EXAMPLE.is_file(), reason="examples/blackwell lives in the repository, not in the wheel"
)


def _ts(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUTE_DSL_")}
    return subprocess.run(
        [sys.executable, "-m", "ts_cli", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_compile_for_blackwell(tmp_path: Path) -> None:
    pytest.importorskip("cutlass")
    proc = _ts("compile", "--arch", "sm_100a", "--ptx-dir", str(tmp_path), f"{EXAMPLE}:make_plan")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["ok"]
    ops = result["ts_ops"]
    # The MMA warp's two commits (release of an operand stage, fill of the accumulator).
    assert sum(n for op, n in ops.items() if op.startswith("tcgen05.commit")) == 2
    assert not any(op.startswith("wgmma") for op in ops)
    assert any(p.suffix == ".ptx" for p in tmp_path.rglob("*"))


def test_the_same_kernel_for_hopper_names_the_target() -> None:
    pytest.importorskip("cutlass")
    proc = _ts("compile", "--arch", "sm_90a", f"{EXAMPLE}:make_plan")
    assert proc.returncode != 0
    assert "AsyncUmma pipeline needs Blackwell" in proc.stderr
    assert "the target is sm_90a" in proc.stderr


def test_an_arch_that_is_not_one_is_a_usage_error() -> None:
    proc = _ts("compile", "--arch", "hopper", f"{EXAMPLE}:make_plan")
    assert proc.returncode == 2
    assert "--arch 'hopper' is not an architecture" in proc.stderr
