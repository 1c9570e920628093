"""Blackwell arrival semantics: tcgen05.commit arrivals (UMMA sides) and CLC response bytes.

The plans are the Blackwell GEMM's: a 1-warp TMA loader fills ``smem`` (``TmaUmma``), a
1-warp MMA task consumes it and produces the TMEM accumulator ``acc`` (``UmmaAsync``), a
4-warp epilogue drains it. The expected arrivals per phase are written out by hand from the
hardware rules (an elected thread of every warp that executes ``tcgen05.commit`` arrives once;
every thread of an ``AsyncThread`` side arrives once), not computed by the verifier's code.
"""

from __future__ import annotations

from typing import Any

import pytest
from verify_testkit import Dst, Ring, Src, consume, plan_of, produce, relay, task

from ts_ir import CooperativeGroupSpec, KernelPlan, PipelineSpec, PipelineType, Target
from ts_ir import SignalingThreads as ST
from ts_verify import verify


def _threads(n: int) -> CooperativeGroupSpec:
    return CooperativeGroupSpec("thread", n)


def _gemm(
    *,
    mma_warps: int = 1,
    smem_consumers: CooperativeGroupSpec | None = None,
    acc_producers: CooperativeGroupSpec | None = None,
    acc_consumers: CooperativeGroupSpec | None = None,
    mma_signaling: ST = ST.All,
) -> KernelPlan:
    smem_spec = PipelineSpec(
        PipelineType.TmaUmma,
        3,
        49152,
        _threads(1),
        smem_consumers or _threads(1),
        consumer_signaling=mma_signaling,
    )
    acc_spec = PipelineSpec(
        PipelineType.UmmaAsync,
        2,
        0,
        acc_producers or _threads(1),
        acc_consumers or _threads(128),
        producer_signaling=mma_signaling,
    )
    src, dst = Src(name="gmem_ab"), Dst(name="gmem_d")
    smem = Ring(name="smem", pipeline_config=smem_spec)
    acc = Ring(name="acc", pipeline_config=acc_spec)
    return plan_of(
        task("load", produce(src, smem), [src], [smem], warp=4, warps=1),
        task("mma", relay(smem, acc), [smem], [acc], warp=5, warps=mma_warps),
        task("store", consume(acc, dst), [acc], [dst], warp=0, warps=4),
    )


def _codes(plan: KernelPlan, target: Any = None) -> set[str]:
    return set(verify(plan, target=target).codes())


def test_gemm_with_one_commit_arrival_per_phase_is_proven() -> None:
    report = verify(_gemm(), target=Target.of("sm_100a"))
    assert report.ok and report.diagnostics == (), report.as_text()
    assert any("no deadlock" in p for p in report.proven)


def test_umma_consumer_counted_per_thread_deadlocks() -> None:
    # 32 threads expected, but tcgen05.commit arrives once for the MMA warp.
    report = verify(_gemm(smem_consumers=_threads(32)))
    errors = [d for d in report.errors if d.code == "TS-V203"]
    assert errors and errors[0].resource == "smem", report.as_text()
    assert "expects 32 arrivals" in errors[0].message and "1 times" in errors[0].message
    assert "deadlock" in errors[0].message


def test_umma_producer_counted_per_thread_deadlocks() -> None:
    report = verify(_gemm(acc_producers=_threads(32)))
    errors = [d for d in report.errors if d.code == "TS-V203"]
    assert errors and errors[0].resource == "acc", report.as_text()
    assert "deadlock" in errors[0].message
    # The whole-kernel run shows the hang too (the count is the only fault).
    assert "TS-V302" in report.codes() or "TS-V303" in report.codes(), report.as_text()


def test_two_mma_warps_commit_twice_per_phase() -> None:
    # Two warps each commit: 2 arrivals on a barrier that expects 1 -> early phase (race).
    report = verify(_gemm(mma_warps=2))
    bad = {d.resource for d in report.errors if d.code == "TS-V203"}
    assert bad == {"smem", "acc"}, report.as_text()
    assert all("race" in d.message for d in report.errors if d.code == "TS-V203")
    # Sized for two committing warps, the same plan is proven.
    ok = _gemm(mma_warps=2, smem_consumers=_threads(2), acc_producers=_threads(2))
    assert verify(ok).ok, verify(ok).as_text()


def test_task_warp_leader_commits_once_for_the_task() -> None:
    assert verify(_gemm(mma_warps=2, mma_signaling=ST.TaskWarpLeader)).ok
    plan = _gemm(mma_warps=2, mma_signaling=ST.TaskWarpLeader, smem_consumers=_threads(2))
    assert "TS-V203" in _codes(plan)


def test_async_consumer_of_an_umma_ring_still_counts_threads() -> None:
    # The epilogue releases with every thread: 128 arrivals (a group of 4 would race).
    assert "TS-V203" in _codes(_gemm(acc_consumers=_threads(4)))


@pytest.mark.parametrize("side", ["smem_consumers", "acc_producers"])
def test_umma_side_counted_in_warps_is_reported(side: str) -> None:
    warps = CooperativeGroupSpec("warp", 1)
    on_smem = side == "smem_consumers"
    plan = _gemm(smem_consumers=warps) if on_smem else _gemm(acc_producers=warps)
    report = verify(plan)
    found = [d for d in report.errors if d.code == "TS-V217"]
    assert len(found) == 1, report.as_text()
    assert found[0].resource == ("smem" if side == "smem_consumers" else "acc")
    assert "32 thread arrivals" in found[0].message


@pytest.mark.parametrize("ptype", [PipelineType.AsyncUmma, PipelineType.UmmaUmma])
def test_other_umma_kinds_count_one_arrival_per_committing_warp(ptype: PipelineType) -> None:
    # A 4-warp producer (AsyncUmma: every thread arrives; UmmaUmma: one commit per warp) and
    # a 1-warp UMMA consumer (one commit).
    producers = 4 if ptype is PipelineType.UmmaUmma else 128
    spec = PipelineSpec(ptype, 2, 0, _threads(producers), _threads(1))
    src, dst = Src(name="src"), Dst(name="dst")
    r = Ring(name="ring", pipeline_config=spec)
    plan = plan_of(
        task("p", produce(src, r), [src], [r], warp=0, warps=4),
        task("c", consume(r, dst), [r], [dst], warp=4, warps=1),
    )
    assert verify(plan).ok, verify(plan).as_text()
    wrong = PipelineSpec(ptype, 2, 0, _threads(producers), _threads(32))
    r2 = Ring(name="ring", pipeline_config=wrong)
    plan = plan_of(
        task("p", produce(src, r2), [src], [r2], warp=0, warps=4),
        task("c", consume(r2, dst), [r2], [dst], warp=4, warps=1),
    )
    assert "TS-V203" in _codes(plan)


def _clc(nbytes: int) -> KernelPlan:
    spec = PipelineSpec(PipelineType.ClcFetchAsync, 2, nbytes, _threads(1), _threads(128))
    src, dst = Src(name="src"), Dst(name="dst")
    r = Ring(name="clc", pipeline_config=spec)
    return plan_of(
        task("fetch", produce(src, r), [src], [r], warp=0, warps=1),
        task("use", consume(r, dst), [r], [dst], warp=4, warps=4),
    )


def test_clc_response_of_16_bytes_completes_the_phase() -> None:
    report = verify(_clc(16), target=Target.of("sm_100a"))
    assert report.ok and report.diagnostics == (), report.as_text()


@pytest.mark.parametrize(("nbytes", "effect"), [(32, "deadlock"), (8, "race")])
def test_clc_response_bytes_other_than_16_are_reported(nbytes: int, effect: str) -> None:
    report = verify(_clc(nbytes))
    found = [d for d in report.errors if d.code == "TS-V218"]
    assert found and found[0].resource == "clc" and effect in found[0].message


def test_blackwell_kinds_are_refused_for_hopper_targets() -> None:
    report = verify(_gemm(), target=Target.of("sm_90a"))
    refused = {d.resource for d in report.errors if d.code == "TS-V216"}
    assert refused == {"smem", "acc"}
    assert all("sm_90a" in d.message for d in report.errors if d.code == "TS-V216")
