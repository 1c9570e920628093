"""The pipeline-group GEMM examples on the CPU (sm_90a): ``fork_gemm.py`` and ``merge_gemm.py``.

Each plan verifies, compiles with WGMMA, TMA and mbarriers to the same PTX per opcode as its
hand-written twin, and passes translation validation; the Fork's members share the WGMMA
ring's full barriers; a broken schedule of each is rejected with its code; ragged shapes get
a typed error before anything is compiled. The expected counts are worked out by hand from
the schedules (noted beside each).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("cutlass")

MNK = (1024, 1024, 512)


@pytest.fixture(scope="module")
def fork(load_example: Callable[[str], Any]) -> Any:
    return load_example("fork_gemm")


@pytest.fixture(scope="module")
def merge(load_example: Callable[[str], Any]) -> Any:
    return load_example("merge_gemm")


@pytest.fixture(scope="module")
def fork_out(fork: Any) -> dict[str, Any]:
    out: dict[str, Any] = fork.compile_only(MNK, "fp16", ops=True)
    return out


@pytest.fixture(scope="module")
def merge_out(merge: Any) -> dict[str, Any]:
    out: dict[str, Any] = merge.compile_only(MNK, "bf16", ops=True)
    return out


def _fakes(example: Any, shapes: tuple[tuple[int, int], ...]) -> list[Any]:
    from task_scheduling.harness import fake_tensor

    el = example.gemm_config("bf16").element
    return [fake_tensor(el, s, row_major=True, align=16) for s in shapes]


def _tma_loads(ops: dict[str, int]) -> int:
    return sum(v for op, v in ops.items() if op.startswith("cp.async.bulk.tensor.2d.shared"))


@pytest.mark.parametrize("name", ["fork_out", "merge_out"])
def test_verified_and_same_ptx_per_opcode_as_twin(name: str, request: Any) -> None:
    out = request.getfixturevalue(name)
    assert out["verified"] is True
    assert out["same_counts"] is True
    assert out["ts_ops"] == out["twin_ops"]
    assert out["ts_total"] == out["twin_total"]
    for kind in ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.try_wait"):
        assert out["ts"][kind] > 0, kind


def test_fork_instructions(fork: Any, fork_out: dict[str, Any]) -> None:
    ts, ops = fork_out["ts"], fork_out["ts_ops"]
    # 128 x 128 tile, K block 16 x 4 per 64 columns: 4 WGMMAs m64n128k16 per K block.
    assert ops["wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"] == 4
    assert _tma_loads(ops) == 2  # A and B, loaded once for both consumers
    # Armed once per stage, by the ring's acquire: a second arm (the activation member's own
    # full barrier) would wait for bytes no load brings.
    assert ts["mbarrier.arrive.expect_tx"] == 1
    # Full waits: the MMA task and the activation task (the shared barrier), empty waits: the
    # producer's two acquires.
    assert ts["mbarrier.try_wait"] == 4
    # relu: a 128 x 64 block over 128 threads, 16 bytes (8 elements) a copy: 8 each way.
    assert ops["ld.shared.v4.b32"] == 8 and ops["st.global.v4.b32"] == 8
    assert (ts["setmaxnreg.dec"], ts["setmaxnreg.inc"]) == (1, 2)  # 40 / 168 and 136


def test_fork_members_share_the_rings_full_barrier(fork: Any) -> None:
    from ts_codegen.groups import fork_shared_full, fork_tx_bytes

    cfg = fork.gemm_config("bf16")
    plan = fork.make_plan(cfg)
    assert [g.members for g in plan.groups] == [("ab", "a_act")]
    assert fork_shared_full(plan) == {"a_act": "ab"}
    assert fork_tx_bytes(plan) == {"ab": cfg.stage_bytes}  # A + B: the one load's bytes


def test_merge_instructions(merge_out: dict[str, Any]) -> None:
    ts, ops = merge_out["ts"], merge_out["ts_ops"]
    assert ops["wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"] == 4
    # A, B, and the residual tile in two 64-column boxes (128-byte swizzle span).
    assert _tma_loads(ops) == 4
    assert ts["mbarrier.arrive.expect_tx"] == 3  # A ring, B ring, residual ring
    # ab.release() at two sites (lagging, last block) on both members + the residual release.
    assert ops["mbarrier.arrive.shared.b64"] == 5
    assert ts["mbarrier.try_wait"] == 6  # three acquires, three waits
    assert (ts["setmaxnreg.dec"], ts["setmaxnreg.inc"]) == (1, 1)


def test_translation_validation(fork: Any, merge: Any) -> None:
    m, n, k = MNK
    fork_args = _fakes(fork, ((m, k), (n, k), (m, n), (m, k)))
    report = fork.ts_kernel().compile(*fork_args).check()
    assert report.ok, report.as_text()
    assert "ring `a_act`: a TMA Fork member, it uses the full barriers of `ab`" in report.as_text()
    merge_args = _fakes(merge, ((m, k), (n, k), (m, n), (m, n)))
    report = merge.ts_kernel().compile(*merge_args).check()
    assert report.ok, report.as_text()


def test_two_box_tma_stage_is_one_ring_buffer(merge: Any) -> None:
    """TS-X107 on a stage filled by two boxes: clear of the barriers as built, caught when a
    box is moved a stage up (into the mbarriers right after the residual ring)."""
    from ts_codegen.capture import capture_compiles
    from ts_runtime.ptx_check import check_ptx

    with capture_compiles() as cap:
        merge.compile_only(MNK)
    (plan, ptx), *_ = [(p, c.ptx) for c in cap.compiles for p in c.plans]
    assert check_ptx(plan, ptx).ok
    load = r"(cp\.async\.bulk\.tensor\.2d\.shared::cta\.global\S*\s+)\[(%r\d+)\+?(\d*)\]"
    r_boxes = list(re.finditer(load, ptx))[-2:]  # the load_r task comes last: its two boxes
    offsets = sorted(int(box.group(3) or 0) for box in r_boxes)
    assert offsets[1] - offsets[0] == 16384  # 128 rows x 64 columns x 2 bytes: box 2
    for box in r_boxes:
        moved = int(box.group(3) or 0) + 32768  # one stage (128 x 128 x 2 bytes) up
        bad = ptx[: box.start()] + f"{box.group(1)}[{box.group(2)}+{moved}]" + ptx[box.end() :]
        assert "TS-X107" in check_ptx(plan, bad).codes()


def test_broken_schedules_are_rejected(fork: Any, merge: Any) -> None:
    # The activation task never frees its member: its wait opens a stage it never closes.
    fork_report = fork.ts_kernel(act_release=False).verify().report
    assert {d.code for d in fork_report.diagnostics} == {"TS-V104"}
    assert fork_report.diagnostics[0].resource == "a_act"
    # The Merge's release written per member: the collapsed operation belongs to the group.
    merge_report = merge.ts_kernel(release_each=True).verify().report
    codes = [d.code for d in merge_report.diagnostics]
    assert codes and set(codes) == {"TS-V241"}
    assert {d.resource for d in merge_report.diagnostics} == {"smem_a", "smem_b"}


@pytest.mark.parametrize(
    "mnk", [(1000, 1024, 512), (1024, 1000, 512), (1024, 1024, 100), (0, 128, 64)]
)
def test_ragged_shapes_get_a_typed_error(fork: Any, merge: Any, mnk: tuple[int, int, int]) -> None:
    from task_scheduling.kernel import RuntimeConfigError

    for example in (fork, merge):
        with pytest.raises(RuntimeConfigError, match="multiples of 128, 128 and 64"):
            example.compile_only(mnk)


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas (CUDA toolkit)")
@pytest.mark.parametrize(
    ("name", "shapes"),
    [
        ("fork_gemm", ((1024, 512), (1024, 512), (1024, 1024), (1024, 512))),
        ("merge_gemm", ((1024, 512), (1024, 512), (1024, 1024), (1024, 1024))),
    ],
)
def test_ptxas_no_spills_no_wgmma_waits_injected(
    name: str, shapes: tuple[tuple[int, int], ...], request: Any, ptxas_log: Callable[..., str]
) -> None:
    """ptxas keeps the accumulator in registers and injects no ``wgmma.wait`` (C7517) nor
    serializes the WGMMAs (C7514): the K loop is followed by an unconditional wait in both."""
    from ts_runtime.harness import ptx_of

    example = request.getfixturevalue(name.split("_")[0])
    for kind, fn in example.kernels(example.gemm_config("bf16")).items():
        log = ptxas_log(ptx_of(fn, *_fakes(example, shapes)), kind)
        assert "0 bytes spill stores, 0 bytes spill loads" in log, (kind, log)
        assert "C7514" not in log and "C7517" not in log, (kind, log)


def test_swizzle_fits_the_tile_columns(fork: Any) -> None:
    """No padded tiles: ``D``'s plain stores (fork) would not clip one."""
    assert fork.gemm_config("bf16", 384).swizzle == 1  # 3 tile columns
    assert fork.gemm_config("bf16", 768).swizzle == 2  # 6
    assert fork.gemm_config("bf16", 8192).swizzle == 8  # 64
