"""The Blackwell pipeline kinds compile for sm_100a (no GPU) and are refused for sm_90a.

Each kind's ring is compiled in its own process (``blackwell_kinds_child.py``; the target is
read when the DSL is imported, and this session compiles for sm_90a). The PTX must signal each
side the way the hardware protocol of the kind says: a UMMA side with ``tcgen05.commit`` (an
``mbarrier::arrive::one``), a TMA or CLC producer with ``mbarrier.arrive.expect_tx``, an
AsyncThread side with a plain ``mbarrier.arrive``. The expectations below are written from the
kinds' definitions, not read from the lowering. The child also runs translation validation
(:func:`ts_runtime.check_ptx`) on the PTX.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cutlass")

CHILD = Path(__file__).with_name("blackwell_kinds_child.py")

# kind: (tcgen05.commit sites, expect_tx sites > 0, plain arrive sites > 0)
EXPECTED = {
    "TmaUmma": (1, True, False),  # TMA fills; the UMMA consumer commits
    "UmmaAsync": (1, False, True),  # the UMMA producer commits; threads release
    "AsyncUmma": (1, False, True),  # threads fill; the UMMA consumer commits
    "UmmaUmma": (2, False, False),  # commits on both barriers
    "ClcFetchAsync": (0, True, True),  # a CLC response fills; threads release
}


def _compile(kind: str, arch: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CUTE_DSL_ARCH=arch)
    return subprocess.run(
        [sys.executable, str(CHILD), kind],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.smoke
@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_kind_compiles_for_sm100a_with_its_arrivals(kind: str) -> None:
    proc = _compile(kind, "sm_100a")
    assert proc.returncode == 0, proc.stderr[-3000:]
    ptx = proc.stdout.split("PTX_BEGIN", 1)[1].split("PTX_END", 1)[0]
    commits, expect_tx, plain = EXPECTED[kind]
    assert ptx.count("tcgen05.commit.cta_group::1.mbarrier::arrive::one") == commits
    assert ("mbarrier.arrive.expect_tx" in ptx) == expect_tx
    plain_arrives = [
        line
        for line in ptx.splitlines()
        if "mbarrier.arrive." in line and "expect_tx" not in line and "tcgen05" not in line
    ]
    assert bool(plain_arrives) == plain, plain_arrives
    assert ptx.count("mbarrier.init.shared.b64") == 4 * (2 if kind == "TmaUmma" else 1)
    assert "wgmma" not in ptx
    # Translation validation: the PTX runs the plan's protocol, a tcgen05.commit counted as
    # one arrival of its warp; a plan whose commit side counts one arrival more is refused.
    tsx = json.loads(proc.stdout.split("TSX_RESULT ", 1)[1].splitlines()[0])
    if kind == "ClcFetchAsync":
        # The ring's fill work is empty: no try_cancel ever brings the 16 bytes the acquire
        # arms, so the consumer's first wait would never finish (TS-X103, ts_runtime.ptx_clc).
        # The arming itself is one arrival, as the barrier counts.
        assert tsx["codes"] == ["TS-X103"], tsx
        arming = "task `producer` arrives 1x on ring `ring` (full)"
        assert any(arming in line for line in tsx["checked"]), tsx
    if commits:
        assert tsx["codes"] == [], tsx
        umma_task = "producer" if kind.startswith("Umma") else "consumer"
        assert any(f"task `{umma_task}` arrives 1x" in line for line in tsx["checked"]), tsx
        assert "TS-X102" in tsx["bigger_group"], tsx


@pytest.mark.parametrize("kind", ["UmmaUmma", "ClcFetchAsync"])
def test_kind_is_refused_for_hopper_naming_the_target(kind: str) -> None:
    proc = _compile(kind, "sm_90a")
    assert proc.returncode != 0
    assert "UnsupportedOnTarget" in proc.stderr
    assert f"the {kind} pipeline needs Blackwell" in proc.stderr
    assert "the target is sm_90a" in proc.stderr
