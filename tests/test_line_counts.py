"""Line-count targets: the TS kernels read no longer than their hand-written twins."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[1] / "tools" / "count_lines.py"


@pytest.mark.skipif(not TOOL.is_file(), reason="tools/ is not part of this checkout")
def test_line_count_targets_hold() -> None:
    out = subprocess.run(
        [sys.executable, str(TOOL), "--check"], capture_output=True, text=True, check=False
    )
    rows = {r["example"]: r for r in map(json.loads, out.stdout.splitlines())}
    assert out.returncode == 0, out.stdout + out.stderr
    assert rows["tma_copy"]["meets_target"] and rows["gemm"]["meets_target"]
    assert rows["tma_copy"]["ts"] <= rows["tma_copy"]["twin"]
    assert rows["gemm"]["ts"] <= 0.7 * rows["gemm"]["twin"]
    assert rows["fork_gemm"]["meets_target"]
    assert rows["fork_gemm"]["ts"] <= rows["fork_gemm"]["twin"]
    assert rows["persistent_copy"]["meets_target"]
    assert rows["persistent_copy"]["ts"] <= rows["persistent_copy"]["twin"]
