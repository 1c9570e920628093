"""The CLC persistent copy (``examples/blackwell/clc_copy.py``) compiles for sm_100a only.

Each compile is its own process: the CuTe DSL reads the target when it is first imported, and
this session compiles for sm_90a. What the PTX must hold follows from the protocol, not from the
lowering: one ``clusterlaunchcontrol.try_cancel`` site (the fetching warp's request), the answer
read with ``query_cancel`` (was a cluster cancelled, and its first ctaid), the stage armed with
``mbarrier.arrive.expect_tx`` for the 16-byte answer, and no global atomic (CLC needs no
counter).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cutlass")

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "blackwell" / "clc_copy.py"


def _run(arch: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CUTE_DSL_ARCH=arch)
    return subprocess.run(
        [sys.executable, str(EXAMPLE)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=EXAMPLE.parent,
    )


def test_clc_copy_compiles_for_sm100a_with_the_clc_query() -> None:
    proc = _run("sm_100a")
    assert proc.returncode == 0, proc.stderr[-3000:]
    ops = json.loads(proc.stdout)["ts_ops"]

    def sites(prefix: str) -> int:
        return sum(n for op, n in ops.items() if op.startswith(prefix))

    assert sites("clusterlaunchcontrol.try_cancel") == 1
    assert sites("clusterlaunchcontrol.query_cancel.is_canceled") >= 1
    assert sites("clusterlaunchcontrol.query_cancel.get_first_ctaid") >= 1
    assert sites("mbarrier.arrive.expect_tx") >= 1
    assert sites("atom.") == 0 and sites("wgmma") == 0


def test_clc_copy_for_hopper_names_the_target() -> None:
    proc = _run("sm_90a")
    assert proc.returncode != 0
    assert "TS-R002" in proc.stderr and "the target is sm_90a" in proc.stderr
    assert "create_atomic_dynamic_persistent_tile_scheduler_params" in proc.stderr
