"""NVIDIA's pipeline-group tutorials (``07_group_pipeline_ts``) compile through ``task_scheduling``.

The reference does not compile them on this DSL version (see the conformance README: failures
inside the reference, ``ok: false`` in its baseline), so there is no instruction count to
compare with: each must compile for sm_100a with fake tensors, as the tutorial's own
``cute.compile(...)`` does, with barriers and TMA loads in its PTX. Merge and FusedMerge are
lowered on per-member barriers, the Fork (``TmaUmma`` + ``TmaAsync`` views of one load) on the
first member's shared full barriers (``docs/groups.rst``).
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

ROOT = Path(__file__).resolve().parents[2]
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
BASELINE = CONFORMANCE / "nvidia-ts-4.8.1-baseline.json"
CASES = [
    f"07_{name}@sm_100a"
    for name in ("merge_copy", "merge_gemm", "merge_gemm_resadd", "fork_load_gemm_act")
]

pytestmark = pytest.mark.skipif(
    not HARNESS.is_file(), reason=f"the conformance suite is not at {CONFORMANCE}"
)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("group_tutorials") / "results.json"
    env = dict(os.environ)
    env["TS_TUTORIALS_DIR"] = str(CONFORMANCE / "nvidia-ts-tutorials")
    env.pop("CUTE_DSL_ARCH", None)  # the harness sets the arch per case
    cmd = [sys.executable, str(HARNESS), "--impl", "task_scheduling", "--only", ",".join(CASES)]
    proc = subprocess.run(
        [*cmd, "--json", str(out)], env=env, capture_output=True, text=True, timeout=900
    )
    if not out.is_file():
        pytest.fail(f"the harness wrote no results:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    data: dict[str, Any] = json.loads(out.read_text())["cases"]
    return data


@pytest.mark.parametrize("case", CASES)
def test_group_tutorial_compiles_through_task_scheduling(
    case: str, results: dict[str, Any]
) -> None:
    baseline = json.loads(BASELINE.read_text())["cases"]
    assert case in baseline and not baseline[case]["ok"], f"the reference compiles {case}: compare"
    got = results.get(case)
    assert got is not None, f"{case} was not run"
    assert got["ok"], f"{case}: {got.get('type')}: {got.get('error')} at {got.get('frame')}"
    assert got["ptx"]["mbarrier"] > 0 and got["ptx"]["cp.async.bulk.tensor"] > 0, got["ptx"]
