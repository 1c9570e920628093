"""The Blackwell pipeline-group GEMMs (``merge_gemm.py``, ``fork_gemm.py``) for sm_100a.

Each example is compiled in its own process (the CuTe DSL reads the target when it is first
imported, and this session compiles for sm_90a); the same process writes the example's plan and
the errors of a broken variant (the TaskManager verifies what it builds); ts-verify (no DSL)
checks the plan here. What the PTX must hold
follows from the schedules, not from the lowering:

* ``merge_gemm.py``: three TMA loads (``A``, ``B``, and ``R``, whose 128-column tile is two
  64-column boxes: a swizzled row holds 64 fp16 values), one ``tcgen05.mma`` per 16-wide K
  phase of a K step, three ``tcgen05.commit`` sites (the MMA warp's release of the ``ab``
  Merge is a commit per member, then the accumulator's fill), the epilogue's ``tcgen05.ld``,
  one TMEM alloc / relinquish / dealloc; the barriers: ``smem_a`` / ``smem_b`` full 1 (the armed
  TMA bytes) and empty 1 (a commit) x 4 stages each, ``acc`` full 1 (a commit) and empty 128
  (every epilogue thread), ``smem_r`` full 1 and empty 4 (one arrival per epilogue warp), x 2
  stages each.
* ``fork_gemm.py``: two TMA loads (``A`` and ``B``, once for both members), the same UMMAs,
  two commit sites (``ab``'s release, the accumulator's fill); one arming of a full barrier,
  ``ab``'s, with the ``A`` and ``B`` bytes (32768), on which ``a_act`` waits too; ``a_act``'s
  empty barriers count the activation warpgroup's 4 warps.

Translation validation of both runs with every other Blackwell example
(``test_blackwell_translation.py`` compiles every example in the folder).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cutlass")

from ts_ir import KernelPlan
from ts_ir.serialize import from_json
from ts_verify import verify

BLACKWELL = Path(__file__).resolve().parent.parent / "examples" / "blackwell"
TILE_K = 64  # a K step: four 16-wide UMMAs
# Compile the example (PTX kept), write its plan, and the errors of its broken variant.
CHILD = """
import json, os, sys
sys.path.insert(0, {dir!r})
import {name} as ex
from ts_ir.serialize import to_json
from ts_verify import VerificationError
out = ex.compile_only()
open(os.path.join({out!r}, "plan.json"), "w").write(to_json(ex.make_plan()))
try:  # the TaskManager verifies the plan it builds: the broken one raises
    ex.make_plan(**{broken!r})
    errors = []
except VerificationError as exc:
    errors = [[d.code, d.task, d.resource] for d in exc.report.errors]
open(os.path.join({out!r}, "broken.json"), "w").write(json.dumps(errors))
print(json.dumps(out))
sys.stdout.flush()
os._exit(0)
"""
BROKEN = {"merge_gemm": {"release_each": True}, "fork_gemm": {"act_release": False}}

Compiled = tuple[dict[str, int], str, KernelPlan, list[tuple[str, str, str]]]


def _compile(name: str, out: Path) -> Compiled:
    env = dict(os.environ, CUTE_DSL_ARCH="sm_100a", CUTE_DSL_KEEP_PTX="1")
    env["CUTE_DSL_DUMP_DIR"] = str(out)
    code = CHILD.format(dir=str(BLACKWELL), name=name, out=str(out), broken=BROKEN[name])
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        cwd=BLACKWELL,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    ops = json.loads(proc.stdout.strip().splitlines()[-1])["ts_ops"]
    (ptx_file,) = out.rglob("*.ptx")
    plan = from_json((out / "plan.json").read_text())
    assert isinstance(plan, KernelPlan)
    errors = [(c, t, r) for c, t, r in json.loads((out / "broken.json").read_text())]
    return ops, ptx_file.read_text(), plan, errors


@pytest.fixture(scope="module")
def merge(tmp_path_factory: pytest.TempPathFactory) -> Compiled:
    return _compile("merge_gemm", tmp_path_factory.mktemp("merge_gemm"))


@pytest.fixture(scope="module")
def fork(tmp_path_factory: pytest.TempPathFactory) -> Compiled:
    return _compile("fork_gemm", tmp_path_factory.mktemp("fork_gemm"))


def _sites(ops: dict[str, int], prefix: str) -> int:
    return sum(n for op, n in ops.items() if op.startswith(prefix))


def _values(ptx: str, pattern: str) -> list[int]:
    """The integer operand (a constant or a register set by ``mov.b32``) that ``pattern``
    captures, at every match, sorted."""
    consts = dict(re.findall(r"mov\.b32\s+(%r\d+), (\d+);", ptx))
    return sorted(int(consts.get(r, r)) for r in re.findall(pattern, ptx))


def _barrier_counts(ptx: str) -> list[int]:
    """The arrival count of every ``mbarrier.init`` in the PTX, sorted."""
    return _values(ptx, r"mbarrier\.init\.shared(?:::cta)?\.b64\s+\[[^\]]+\], (%r\d+|\d+);")


def _common(ops: dict[str, int]) -> None:
    assert _sites(ops, "tcgen05.mma") == TILE_K // 16
    assert _sites(ops, "tcgen05.ld") == 1 and _sites(ops, "tcgen05.wait") == 1
    for op in ("tcgen05.alloc", "tcgen05.relinquish_alloc_permit", "tcgen05.dealloc"):
        assert _sites(ops, op) == 1, op
    assert _sites(ops, "mbarrier.try_wait") > 0 and _sites(ops, "mbarrier.arrive") > 0
    assert _sites(ops, "wgmma") == 0 and _sites(ops, "clusterlaunchcontrol") == 0


def test_merge_gemm_compiles_with_a_commit_per_member(merge: Compiled) -> None:
    ops, ptx, _, _ = merge
    _common(ops)
    assert _sites(ops, "cp.async.bulk.tensor") == 4  # A, B, and R's two boxes
    assert _sites(ops, "tcgen05.commit") == 3
    assert _barrier_counts(ptx) == [1] * 20 + [4] * 2 + [128] * 2
    # Each operand ring armed for its own block; the residual ring for its whole tile.
    expect = r"mbarrier\.arrive\.expect_tx\S*\s+\S+\s*\[[^\]]+\],\s*(%r\d+|\d+);"
    assert _values(ptx, expect) == [128 * TILE_K * 2] * 2 + [128 * 128 * 2]


def test_fork_gemm_loads_once_for_both_members(fork: Compiled) -> None:
    ops, ptx, _, _ = fork
    _common(ops)
    assert _sites(ops, "cp.async.bulk.tensor") == 2
    assert _sites(ops, "tcgen05.commit") == 2
    # ab: full 1 (the armed TMA bytes) and empty 1 (a commit) x 4; acc: full 1 (a commit) and
    # empty 128 (every epilogue thread) x 2; a_act: empty 4 (one arrival per activation warp)
    # x 4, and full barriers of its own that nothing uses (1 x 4).
    assert _barrier_counts(ptx) == [1] * 14 + [4] * 4 + [128] * 2
    # One arming per stage, on ab's full barrier, for both blocks the one load brings.
    expect = r"mbarrier\.arrive\.expect_tx\S*\s+\S+\s*\[[^\]]+\],\s*(%r\d+|\d+);"
    assert _values(ptx, expect) == [2 * 128 * TILE_K * 2]


@pytest.mark.parametrize("example", ["merge", "fork"])
def test_the_plan_verifies(example: str, request: pytest.FixtureRequest) -> None:
    _, _, plan, _ = request.getfixturevalue(example)
    report = verify(plan)
    assert report.ok, report.as_text()
    # The TMEM order (TS-V224) takes runs of one work tile: the tiles are independent.
    assert dict(report.stats).get("tmem_runs", 0) <= 30, report.stats
    groups = {g.name: (g.mode.name, g.members) for g in plan.groups}
    want: dict[str, Any] = {
        "merge": {"ab": ("Merge", ("smem_a", "smem_b")), "acc_r": ("Merge", ("acc", "smem_r"))},
        "fork": {"a_fork": ("Fork", ("ab", "a_act"))},
    }
    assert groups == want[example]


def test_merge_released_member_by_member_is_rejected(merge: Compiled) -> None:
    """Both Merges' collapsed release written on each member (the MMA warp's two commits, the
    epilogue's two arrivals): TS-V241 at every one of them."""
    errors = merge[3]
    assert sorted(errors) == sorted(
        [
            ("TS-V241", "mma", "smem_a"),
            ("TS-V241", "mma", "smem_b"),
            ("TS-V241", "epilogue", "acc"),
            ("TS-V241", "epilogue", "smem_r"),
        ]
    ), errors


def test_fork_member_never_released_is_rejected(fork: Compiled) -> None:
    """The activation waits on its member and never frees it (the load warp's acquire of that
    member would block for ever): TS-V104 in task ``act``, and nothing else."""
    assert fork[3] == [("TS-V104", "act", "a_act")]
