"""Blackwell rings over a cluster of one-CTA UMMAs: who arrives on a CTA's barriers.

The plans are the cluster GEMM's: a 1-warp TMA loader fills ``smem`` (``TmaUmma``; ``A`` is
multicast along the cluster row, ``B`` along the column), an MMA task consumes it and fills
the TMEM accumulator ``acc`` (``UmmaAsync``), a 4-warp epilogue drains it. The expected counts
are written out by hand from the hardware rules, not computed with the functions tested:

* a stage of one CTA is filled by the CTAs of its cluster row and column (2 on a 2 x 1 or
  1 x 2 cluster, 3 on 2 x 2, 5 on 4 x 2), and each of them releases it with one
  ``tcgen05.commit`` per committing warp whose multicast mask holds the CTA;
* the accumulator is the CTA's own: its commit's mask is the CTA alone and the epilogue's
  threads arrive locally.

The plan counts one CTA's commits (the lowering multiplies the barrier's count by the CTAs);
the reference's spelling, the count a barrier receives over the cluster, reads as that.
"""

from __future__ import annotations

import pytest
from verify_testkit import Dst, Ring, Src, consume, plan_of, produce, relay, task

from ts_ir import CooperativeGroupSpec, KernelPlan, PipelineSpec, PipelineType, Target
from ts_verify import multicast_peers, per_warp_consumer_group, verify

SM100 = Target.of("sm_100a")


def _threads(n: int) -> CooperativeGroupSpec:
    return CooperativeGroupSpec("thread", n)


def _specs(
    cluster: tuple[int, int], smem_consumers: int, acc_consumers: int = 128
) -> tuple[PipelineSpec, PipelineSpec]:
    smem = PipelineSpec(
        PipelineType.TmaUmma,
        4,
        32768,
        _threads(1),
        _threads(smem_consumers),
        cluster_mn=cluster,
    )
    acc = PipelineSpec(
        PipelineType.UmmaAsync, 2, 0, _threads(1), _threads(acc_consumers), cluster_mn=cluster
    )
    return smem, acc


def _gemm(
    cluster: tuple[int, int], smem_consumers: int, *, acc_consumers: int = 128, mma_warps: int = 1
) -> KernelPlan:
    smem_spec, acc_spec = _specs(cluster, smem_consumers, acc_consumers)
    src, dst = Src(name="gmem_ab"), Dst(name="gmem_d")
    smem = Ring(name="smem", pipeline_config=smem_spec)
    acc = Ring(name="acc", pipeline_config=acc_spec)
    return plan_of(
        task("load", produce(src, smem), [src], [smem], warp=4, warps=1),
        task("mma", relay(smem, acc), [smem], [acc], warp=5, warps=mma_warps),
        task("store", consume(acc, dst), [acc], [dst], warp=0, warps=4),
    )


def _normalised(plan: KernelPlan) -> CooperativeGroupSpec | None:
    spec = plan.resource("smem").pipeline
    assert spec is not None
    return per_warp_consumer_group(spec, [plan.task("mma")])


@pytest.mark.parametrize(
    ("cluster", "peers"), [((1, 1), 1), ((2, 1), 2), ((1, 2), 2), ((2, 2), 3), ((4, 2), 5)]
)
def test_a_tma_umma_stage_is_released_by_the_cluster_row_and_column(
    cluster: tuple[int, int], peers: int
) -> None:
    smem, acc = _specs(cluster, 1)
    assert multicast_peers(smem) == peers
    assert multicast_peers(acc) == 1  # the CTA's own accumulator


@pytest.mark.parametrize("cluster", [(2, 1), (1, 2), (2, 2)])
def test_one_ctas_commits_verify_over_a_cluster(cluster: tuple[int, int]) -> None:
    plan = _gemm(cluster, 1)
    report = verify(plan, target=SM100)
    assert report.ok and report.diagnostics == (), report.as_text()
    assert any("no deadlock" in p for p in report.proven)
    assert _normalised(plan) is None  # already one CTA's count


@pytest.mark.parametrize(
    ("cluster", "size", "mma_warps", "commits"),
    [
        ((2, 1), 2, 1, 1),  # 2 CTAs x 1 commit
        ((1, 2), 2, 1, 1),
        ((2, 2), 3, 1, 1),  # row and column of a 2 x 2 cluster
        ((1, 2), 4, 2, 2),  # 2 CTAs x 2 committing warps
    ],
)
def test_the_cluster_wide_count_stands_for_one_ctas_commits(
    cluster: tuple[int, int], size: int, mma_warps: int, commits: int
) -> None:
    plan = _gemm(cluster, size, mma_warps=mma_warps)
    assert _normalised(plan) == _threads(commits)


@pytest.mark.parametrize(
    ("cluster", "size", "count"),
    [
        ((2, 2), 4, 3),  # every CTA of the cluster counted: only row and column multicast
        ((2, 1), 3, 2),
    ],
)
def test_a_wrong_group_over_a_cluster_is_ts_v203(
    cluster: tuple[int, int], size: int, count: int
) -> None:
    plan = _gemm(cluster, size)
    assert _normalised(plan) is None
    report = verify(plan, target=SM100)
    errors = [d for d in report.errors if d.code == "TS-V203"]
    assert errors, report.as_text()
    err = errors[0]
    assert err.resource == "smem" and err.task == "mma"
    assert err.step is not None and "release" in err.step
    assert err.location is not None and err.location.line > 0
    assert f"expects {size} arrivals" in err.message and "1 times" in err.message
    assert err.fix is not None
    assert "CooperativeGroup(Agent.Thread, 1)" in err.fix
    assert f"CooperativeGroup(Agent.Thread, {count})" in err.fix
    assert f"each of the {count} CTAs" in err.fix


def test_an_accumulator_counted_over_the_cluster_deadlocks() -> None:
    # 256 = 128 epilogue threads x 2 CTAs: but each CTA's accumulator is released by its own
    # epilogue only, 128 arrivals per phase.
    report = verify(_gemm((2, 1), 1, acc_consumers=256), target=SM100)
    errors = [d for d in report.errors if d.code == "TS-V203"]
    assert errors and errors[0].resource == "acc", report.as_text()
    assert "expects 256 arrivals" in errors[0].message
    assert "128 times" in errors[0].message and "deadlock" in errors[0].message
