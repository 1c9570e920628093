"""Our own merge and fork group examples compile for Blackwell too.

``examples/hopper/merge_copy.py`` (a Merge of two TMA-fed rings into one consumer) and
``examples/hopper/fork.py`` (one TMA load into two consumers through a Fork) use no
Hopper-only instruction, so ``ts compile --arch sm_100a`` builds them for Blackwell: the plan
verifies, the TS kernel has the hand-written twin's instruction counts, and the PTX targets
sm_100a with its TMA loads and mbarriers. Each compile runs in its own process (the CuTe DSL
reads the target when it is imported).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cutlass")

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("example", ["merge_copy.py", "fork.py"])
def test_group_example_compiles_for_sm100a(example: str, tmp_path: Path) -> None:
    env = dict(os.environ, CUTE_DSL_ARCH="sm_100a")
    cmd = [sys.executable, "-m", "task_scheduling", "compile", "--arch", "sm_100a", "--json"]
    cmd += ["--ptx-dir", str(tmp_path), str(ROOT / "examples" / "hopper" / example)]
    proc = subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["verified"] and out["ts_total"] == out["twin_total"], out
    assert out["ts"]["cp.async.bulk.tensor"] >= 1 and out["ts"]["mbarrier.try_wait"] >= 1, out
    targets = {
        line.strip()
        for ptx in tmp_path.rglob("*.ptx")
        for line in ptx.read_text().splitlines()
        if line.startswith(".target")
    }
    assert targets == {".target sm_100a"}, targets
