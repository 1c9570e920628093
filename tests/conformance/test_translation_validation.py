"""Translation validation on NVIDIA's tutorials: what runs is what was verified.

Every conformance case that compiles through ``task_scheduling`` (the copy and persistent
tutorials, sm_90a and sm_100a; the simple and split-K GEMMs, sm_100a) is compiled by the
shared harness in its own process (``translation_child.py``), with the plans the tutorial's
kernel lowered recorded; the dumped PTX must run each plan's barrier protocol
(:func:`ts_runtime.check_ptx`: barriers, arrivals per phase, transaction bytes, wait parity,
setmaxnreg, SMEM). The tutorials are read from ``../shared/conformance`` in place, never
copied.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cutlass")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
_CANDIDATES = [
    os.environ.get("TS_CONFORMANCE_DIR", ""),
    str(ROOT.parent / "shared" / "conformance"),
    "/work/shared/conformance",
]
CONFORMANCE = next(
    (Path(c) for c in _CANDIDATES if c and (Path(c) / "run_tutorials.py").is_file()),
    Path(_CANDIDATES[1]),
)
HARNESS = CONFORMANCE / "run_tutorials.py"
CASES = [
    f"{name}@{arch}"
    for arch in ("sm_90a", "sm_100a")
    for name in ("01_copy_grid_stride", "01_copy_tma", "03_persistent_skip", "03_varlen_dynamic")
] + [
    # Blackwell GEMMs: UMMA sides arrive by tcgen05.commit (one per committing warp); the
    # split-K tutorial keeps an mbarrier of its own beside the plan's (ignored).
    "02_gemm_simple@sm_100a",
    "06_gemm_split_k@sm_100a",
]

pytestmark = pytest.mark.skipif(
    not HARNESS.is_file(), reason=f"the conformance suite is not at {CONFORMANCE}"
)


def _run(case: str, dump: Path) -> dict[str, Any]:
    env = dict(os.environ)
    env["TS_TUTORIALS_DIR"] = str(CONFORMANCE / "nvidia-ts-tutorials")
    env.pop("CUTE_DSL_ARCH", None)  # the harness sets the arch per case
    proc = subprocess.run(
        [sys.executable, str(HERE / "translation_child.py"), str(HARNESS), case, str(dump)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("TSX_RESULT "):
            result: dict[str, Any] = json.loads(line[len("TSX_RESULT ") :])
            return result
    pytest.fail(f"{case}: no result\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


@pytest.mark.parametrize("case", CASES)
def test_tutorial_runs_its_verified_plan(case: str, tmp_path: Path) -> None:
    got = _run(case, tmp_path)
    assert got["compiled"], f"{case} does not compile: {got['error']}"
    assert got["plans"] >= 1, f"{case}: no TS plan was lowered"
    assert got["ok"], got["text"]
