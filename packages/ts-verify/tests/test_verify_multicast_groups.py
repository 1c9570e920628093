"""A TMA ring's consumer group counted per warp, also over a multicast cluster.

``PipelineTmaAsync`` arrives on a stage's empty barrier once per consumer warp and per CTA that
multicast into the stage (the CTAs of the cluster row and column, ``CM + CN - 1``), and
initialises the barrier with the group's size as given. A reference program therefore sizes
the group ``warps x peers``; the plan counts threads. The expected counts here are written out
by hand from that rule (4 warps on a 2 x 1 cluster: 8), not computed with the functions tested.
"""

from __future__ import annotations

import dataclasses

import pytest
from verify_testkit import Dst, Ring, Src, consume, plan_of, produce, task, tma_pipe

from ts_ir import CooperativeGroupSpec, KernelPlan, PipelineSpec, PipelineType, SignalingThreads
from ts_verify import multicast_peers, per_warp_consumer_group, verify


def _spec(
    consumers: int,
    cluster: tuple[int, int],
    consumer_signaling: SignalingThreads = SignalingThreads.All,
) -> PipelineSpec:
    return dataclasses.replace(
        tma_pipe(2, 4096, consumers), cluster_mn=cluster, consumer_signaling=consumer_signaling
    )


def _plan(spec: PipelineSpec, consumer_warps: int = 4) -> KernelPlan:
    src, r, dst = Src(name="src"), Ring(name="ring", pipeline_config=spec), Dst(name="dst")
    return plan_of(
        task("load", produce(src, r), [src], [r], warp=0, warps=1),
        task("store", consume(r, dst), [r], [dst], warp=4, warps=consumer_warps),
    )


@pytest.mark.parametrize(
    ("cluster", "peers"), [((1, 1), 1), ((2, 1), 2), ((1, 2), 2), ((2, 2), 3), ((4, 2), 5)]
)
def test_multicast_peers_are_the_cluster_row_and_column(
    cluster: tuple[int, int], peers: int
) -> None:
    assert multicast_peers(_spec(128, cluster)) == peers


def test_an_async_ring_has_no_multicast_peers() -> None:
    spec = dataclasses.replace(_spec(128, (2, 1)), type=PipelineType.AsyncAsync)
    assert multicast_peers(spec) == 1


@pytest.mark.parametrize(
    ("cluster", "size", "warps", "threads"),
    [
        ((1, 1), 4, 4, 128),  # one CTA: one arrival per warp
        ((2, 1), 8, 4, 128),  # 2 CTAs multicast into each stage: 4 warps x 2
        ((2, 2), 6, 2, 64),  # 3 peers (row and column of a 2 x 2 cluster) x 2 warps
        ((4, 1), 4, 1, 32),  # 1 warp x 4 peers
    ],
)
def test_the_per_warp_spelling_stands_for_the_consumer_threads(
    cluster: tuple[int, int], size: int, warps: int, threads: int
) -> None:
    spec = _spec(size, cluster)
    group = per_warp_consumer_group(spec, [_plan(spec, consumer_warps=warps).task("store")])
    assert group == CooperativeGroupSpec("thread", threads)


@pytest.mark.parametrize(
    ("cluster", "size"),
    [
        ((1, 1), 128),  # already threads
        ((2, 1), 128),  # threads on a cluster: the lowering derives the barrier's count
        ((2, 1), 4),  # one CTA's warps on a 2-CTA multicast: not the per-warp count
        ((1, 1), 8),  # a wrong count
    ],
)
def test_other_sizes_are_judged_as_written(cluster: tuple[int, int], size: int) -> None:
    spec = _spec(size, cluster)
    assert per_warp_consumer_group(spec, [_plan(spec).task("store")]) is None


def test_task_warp_leader_consumers_count_one_warp() -> None:
    spec = _spec(2, (2, 1), consumer_signaling=SignalingThreads.TaskWarpLeader)
    plan = _plan(spec)
    group = per_warp_consumer_group(spec, [plan.task("store")])
    assert group == CooperativeGroupSpec("thread", 32)


def test_async_rings_are_never_rewritten() -> None:
    # An AsyncAsync release arrives once per thread: 4 is a count of threads there.
    async_spec = dataclasses.replace(_spec(4, (1, 1)), type=PipelineType.AsyncAsync)
    plan = _plan(async_spec)
    assert per_warp_consumer_group(async_spec, [plan.task("store")]) is None


def test_threads_on_a_multicast_ring_verify() -> None:
    report = verify(_plan(_spec(128, (2, 1))))
    assert report.ok, report.as_text()


def test_one_ctas_warps_on_a_multicast_ring_name_the_reference_count() -> None:
    report = verify(_plan(_spec(4, (2, 1))))
    errors = [d for d in report.errors if d.code == "TS-V203"]
    assert errors, report.as_text()
    assert "CooperativeGroup(Agent.Thread, 8)" in errors[0].fix
    assert "2 CTAs that multicast" in errors[0].fix
    assert "CooperativeGroup(Agent.Thread, 128)" in errors[0].fix


def test_a_wrong_count_without_a_cluster_names_both_spellings() -> None:
    report = verify(_plan(_spec(64, (1, 1))))
    errors = [d for d in report.errors if d.code == "TS-V203"]
    assert errors and "CooperativeGroup(Agent.Thread, 4)" in errors[0].fix, report.as_text()
    assert "multicast" not in errors[0].fix
