"""The Blackwell examples compile for sm_100a with the instructions their protocol needs.

Each compile is its own process: the CuTe DSL reads the target when it is first imported, and
this session compiles for sm_90a. What the PTX must hold follows from the protocol, not from the
lowering:

* ``clc_copy.py`` (the CLC scheduler): one ``clusterlaunchcontrol.try_cancel`` site (the
  fetching warp's request), the answer read with ``query_cancel`` (was a cluster cancelled, and
  its first ctaid), the stage armed with ``mbarrier.arrive.expect_tx`` for the 16-byte answer,
  and no global atomic (CLC needs no counter); for sm_90a it is refused naming the target;
* ``umma_chain.py`` (the TMEM lifetime): one ``tcgen05.alloc`` followed by the relinquish of
  the permit, before the MMA warp's first commit; one ``tcgen05.dealloc``, after the
  epilogue's release of the accumulator (its last read);
* ``gemm.py`` (TS's own Blackwell GEMM): TMA loads of A and B, ``tcgen05.mma`` (one per
  16-wide K phase of a 64-wide K step: 4), the two ``tcgen05.commit`` sites (operand release,
  accumulator fill), the epilogue's ``tcgen05.ld`` and its wait, the TMEM lifetime, the CLC
  request and answer, and PDL's ``griddepcontrol`` pair; no Hopper instruction;
* ``gemm_nvfp4.py`` (a block-scaled NVFP4 GEMM): four ``kind::mxf4nvf4.block_scale.block16``
  UMMAs per 256-wide K step, the scale factors copied into TMEM (``tcgen05.cp``) before them,
  and the stage armed for A, B and both scale factors' bytes (36864);
* ``cluster_gemm.py`` (the GEMM over a 2 x 1 and a 1 x 2 cluster): the operand shared along
  the cluster's longer side is TMA-loaded with ``.multicast::cluster`` (B on 2 x 1, A on 1 x 2),
  the other one plainly; the MMA warp's operand release is a ``tcgen05.commit`` with a
  multicast mask; the operand ring's empty barriers count one commit from each of the 2 CTAs
  of the row and column; the barriers' initialisation is made visible with a cluster barrier;
  PDL's ``griddepcontrol`` pair.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cutlass")

BLACKWELL = Path(__file__).resolve().parent.parent / "examples" / "blackwell"
TILE_K = 64  # the GEMM example's K step: four 16-wide UMMAs


def _run(
    arch: str, example: str = "clc_copy.py", ptx_dir: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CUTE_DSL_ARCH=arch)
    if ptx_dir is not None:
        env.update(CUTE_DSL_KEEP_PTX="1", CUTE_DSL_DUMP_DIR=str(ptx_dir))
    return subprocess.run(
        [sys.executable, str(BLACKWELL / example)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=BLACKWELL,
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


@pytest.mark.smoke
def test_umma_chain_allocates_and_frees_tmem_at_the_right_points(tmp_path: Path) -> None:
    proc = _run("sm_100a", "umma_chain.py", tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (ptx_file,) = tmp_path.rglob("*.ptx")
    lines = [line.strip() for line in ptx_file.read_text().splitlines()]

    def at(prefix: str) -> list[int]:
        return [i for i, line in enumerate(lines) if line.startswith(prefix)]

    (alloc,) = at("tcgen05.alloc.")
    (relinquish,) = at("tcgen05.relinquish_alloc_permit.")
    (dealloc,) = at("tcgen05.dealloc.")
    commits = at("tcgen05.commit.")
    assert relinquish == alloc + 1  # the permit goes right after the allocation
    assert commits and alloc < min(commits)  # before any UMMA completes into TMEM
    # The epilogue's region: its wait for the accumulator, its release (a thread arrive),
    # then the dealloc; no tcgen05 op of the MMA warp in between.
    release = max(i for i in at("mbarrier.arrive.") if i < dealloc)
    wait = max(i for i in at("mbarrier.try_wait") if i < release)
    assert not [i for i in commits if wait < i < dealloc]


@pytest.mark.smoke
def test_the_blackwell_gemm_compiles_with_every_feature() -> None:
    proc = _run("sm_100a", "gemm.py")
    assert proc.returncode == 0, proc.stderr[-3000:]
    ops = json.loads(proc.stdout)["ts_ops"]

    def sites(prefix: str) -> int:
        return sum(n for op, n in ops.items() if op.startswith(prefix))

    assert sites("cp.async.bulk.tensor") == 2  # A and B
    assert sites("tcgen05.mma") == TILE_K // 16
    assert sites("tcgen05.commit") == 2
    assert sites("tcgen05.ld") == 1 and sites("tcgen05.wait") == 1
    for op in ("tcgen05.alloc", "tcgen05.relinquish_alloc_permit", "tcgen05.dealloc"):
        assert sites(op) == 1, op
    assert sites("clusterlaunchcontrol.try_cancel") == 1
    assert sites("griddepcontrol.wait") == 1 and sites("griddepcontrol.launch_dependents") == 1
    assert sites("wgmma") == 0 and sites("setmaxnreg") == 0


def test_the_nvfp4_gemm_scales_its_blocks(tmp_path: Path) -> None:
    proc = _run("sm_100a", "gemm_nvfp4.py", tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (ptx_file,) = tmp_path.rglob("*.ptx")
    lines = [line.strip() for line in ptx_file.read_text().splitlines()]
    mmas = [i for i, line in enumerate(lines) if line.startswith("tcgen05.mma.")]
    copies = [i for i, line in enumerate(lines) if line.startswith("tcgen05.cp.")]
    assert len(mmas) == 4
    assert all("kind::mxf4nvf4.block_scale.block16" in lines[i] for i in mmas)
    assert copies and max(copies) < min(mmas)  # the scales are in TMEM before the UMMAs
    # (128 + 128) x 256 fp4 values (2 per byte) + their (128 + 128) x 256 / 16 fp8 scales.
    assert any(line.endswith(", 36864;") for line in lines)
    for op in ("tcgen05.alloc.", "tcgen05.dealloc.", "tcgen05.ld."):
        assert sum(line.startswith(op) for line in lines) == 1, op


@pytest.mark.parametrize(("cluster", "shared"), [("2x1", "B"), ("1x2", "A")])
def test_the_cluster_gemm_multicasts_its_operands(
    cluster: str, shared: str, tmp_path: Path
) -> None:
    env = dict(os.environ, CUTE_DSL_ARCH="sm_100a")
    env.update(CUTE_DSL_KEEP_PTX="1", CUTE_DSL_DUMP_DIR=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, str(BLACKWELL / "cluster_gemm.py"), "--cluster", cluster],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=BLACKWELL,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (ptx_file,) = tmp_path.rglob("*.ptx")
    lines = [line.strip() for line in ptx_file.read_text().splitlines()]
    loads = [line for line in lines if line.startswith("cp.async.bulk.tensor.2d")]
    assert len(loads) == 2  # A and B
    # A's SMEM stages come first (offset 0), B's after the 4 A stages (4 x 128 x 64 x 2 bytes).
    (multicast,) = [line for line in loads if ".multicast::cluster" in line]
    assert ("+65536]" in multicast.split(",")[0]) == (shared == "B"), multicast
    commits = [line for line in lines if line.startswith("tcgen05.commit.cta_group::1.")]
    assert len(commits) == 2 and all(".multicast::cluster" in c for c in commits)
    assert sum(line.startswith("tcgen05.mma.cta_group::1") for line in lines) == TILE_K // 16
    assert "barrier.cluster.wait;" in lines
    # Barrier counts: accumulator full 1 (a commit) x 2 stages, empty 128 (the epilogue's
    # threads) x 2; operand full 1 (the armed TMA bytes) x 4, empty 2 (one commit from each of
    # the 2 CTAs that fill the stage) x 4.
    text = ptx_file.read_text()
    consts = dict(re.findall(r"mov\.b32\s+(%r\d+), (\d+);", text))
    inits = re.findall(r"mbarrier\.init\.shared\.b64\s+\[[^\]]+\], (%r\d+);", text)
    assert sorted(int(consts[r]) for r in inits) == [1] * 6 + [2] * 4 + [128] * 2
    assert sum(line.startswith("griddepcontrol.wait") for line in lines) == 1
    assert sum(line.startswith("griddepcontrol.launch_dependents") for line in lines) == 1
    assert not any(
        line.startswith(("wgmma", "setmaxnreg", "clusterlaunchcontrol")) for line in lines
    )
