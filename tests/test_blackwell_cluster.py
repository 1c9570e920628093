"""Translation validation reads the cluster GEMM's multicast UMMA release.

``examples/blackwell/cluster_gemm.py`` (2 x 1 cluster) is compiled for sm_100a in its own
process (``blackwell_capture_child.py``: the CuTe DSL reads the target when it is imported)
with the plan it lowered. Its operand ring's empty barrier counts 2: one ``tcgen05.commit``
from the MMA warp of each of the 2 CTAs that fill a stage (the commit's multicast mask holds
both). The plan counts one CTA's commit (1); the checker must read the multicast commit as
arriving from both CTAs (``TS-X102`` otherwise), and a commit without the multicast (one
arrival on this CTA only) must be reported. The counts are the protocol's, written by hand.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cutlass")

from ts_ir import KernelPlan
from ts_ir.serialize import from_json
from ts_runtime.ptx_check import check_ptx

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "examples" / "blackwell" / "cluster_gemm.py"
CHILD = HERE / "blackwell_capture_child.py"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[KernelPlan, str]:
    out = tmp_path_factory.mktemp("cluster_gemm")
    proc = subprocess.run(
        [sys.executable, str(CHILD), str(EXAMPLE), str(out)],
        env=dict(os.environ, CUTE_DSL_ARCH="sm_100a"),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=out,  # where the DSL may dump its files; the child finds the example by path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    plan = from_json((out / "0.0.json").read_text())
    assert isinstance(plan, KernelPlan)
    return plan, (out / "0.ptx").read_text()


def test_the_plan_counts_one_ctas_commit(compiled: tuple[KernelPlan, str]) -> None:
    plan, _ = compiled
    ab = plan.resource("ab").pipeline
    assert ab is not None and ab.cluster_mn == (2, 1)
    # Declared as the reference counts it (2: one commit per CTA of the row and column).
    assert (ab.consumer_group.agent, ab.consumer_group.size) == ("thread", 1)


def test_the_multicast_release_runs_the_plan(compiled: tuple[KernelPlan, str]) -> None:
    plan, ptx = compiled
    report = check_ptx(plan, ptx)
    assert report.ok, report.as_text()
    text = report.as_text()
    assert re.search(r"ring `ab`: 4 stage\(s\), .* full count 1, empty count 2", text), text
    assert "task `mma` arrives 2x on ring `ab` (empty)" in text


def test_a_release_without_its_multicast_is_ts_x102(compiled: tuple[KernelPlan, str]) -> None:
    plan, ptx = compiled
    release = re.search(
        r"tcgen05\.commit(\S*)\.multicast::cluster\.b64(\s+\[[^\]]+\]), %rs\d+;", ptx
    )
    assert release is not None
    bad = (
        ptx[: release.start()]
        + f"tcgen05.commit{release.group(1)}.b64{release.group(2)};"
        + ptx[release.end() :]
    )
    report = check_ptx(plan, bad)
    assert not report.ok
    (err,) = report.errors
    assert err.code == "TS-X102" and err.task == "mma" and err.resource == "ab"
    assert err.line == ptx.count("\n", 0, release.start()) + 1
    assert "count 2 arrival(s)" in str(err) and "should count 1" in str(err)
