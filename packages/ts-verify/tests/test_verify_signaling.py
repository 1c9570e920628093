"""Arrival counts with ``CtaLeader`` signaling over a cluster of several CTAs.

``CtaLeader`` lets the leader CTA of each CTA group (the V mode of the cluster layout) signal.
A Hopper cluster ``(1, CM, CN, 1)`` has V = 1: every CTA is a leader and signals its own ring
with all the threads of its task, so the groups count one CTA's arrivals, never the cluster's.
"""

from __future__ import annotations

import dataclasses

import pytest
from verify_testkit import Dst, Ring, Src, async_pipe, consume, plan_of, produce, task

from ts_ir import KernelPlan
from ts_ir import SignalingThreads as ST
from ts_verify import verify


def _plan(producers: int, consumers: int, signaling: ST) -> KernelPlan:
    spec = dataclasses.replace(
        async_pipe(2, producers, consumers, producer_signaling=signaling),
        consumer_signaling=signaling,
        cluster_mn=(2, 1),
    )
    src, r, dst = Src(name="src"), Ring(name="ring", pipeline_config=spec), Dst(name="dst")
    return plan_of(
        task("load", produce(src, r), [src], [r], warp=0, warps=4),
        task("store", consume(r, dst), [r], [dst], warp=4, warps=4),
    )


@pytest.mark.parametrize("signaling", [ST.CtaLeader, ST.All])
def test_cta_leader_over_a_cluster_counts_one_cta(signaling: ST) -> None:
    report = verify(_plan(128, 128, signaling))
    assert report.ok, report.as_text()


def test_cta_leader_groups_counted_over_the_cluster_are_reported() -> None:
    # 2 CTAs x 128 threads: each CTA's barriers only ever see their own CTA's 128 arrivals.
    report = verify(_plan(256, 256, ST.CtaLeader))
    assert not report.ok
    assert any(
        d.code == "TS-V203" and "256" in d.message and "128" in d.message for d in report.errors
    ), report.as_text()


def test_cta_leader_with_task_warp_leader_counts_one_warp_per_cta() -> None:
    report = verify(_plan(128, 32, ST.CtaLeader | ST.TaskWarpLeader))
    # The producer group of 128 is right for All-style producers only: TaskWarpLeader on both
    # sides makes the producer arrive 32 times, the consumer too.
    assert any(d.code == "TS-V203" and d.resource == "ring" for d in report.errors)
    assert verify(_plan(32, 32, ST.CtaLeader | ST.TaskWarpLeader)).ok
