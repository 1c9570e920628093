"""TmaWgmma pipelines: the WGMMA consumer may release a stage only after wgmma.wait_group.

The good main loop is software-pipelined: wait for stage k, issue its MMA, ``wait_group 1``
(the MMA of stage k-1 is retired), release stage k-1; after the loop ``wait_group 0`` and
release the last stage. The known-bad variants release a stage while its MMA may still read it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ts_ir import CooperativeGroupSpec, KernelPlan, PipelineSpec, PipelineType, WorkAttr
from ts_trace import (
    MemoryResource,
    ResourceProxy,
    TaskDeclaration,
    build_plan,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
)
from ts_verify import verify


class K:
    def k_blocks(self, work_tile_coord: Any) -> int:
        return 8


@dataclasses.dataclass(kw_only=True)
class Operands(MemoryResource):
    @producer_work
    def tma_load(self, stage_info: Any) -> None:
        """TMA A and B of one K block."""

    @consumer_work
    def mma(self, stage_info: Any) -> None:
        """wgmma.mma_async on the stage (no attribute: the pipeline type says it is async)."""

    @consumer_work(work_attrs=WorkAttr.ASYNC_WAIT_PRIOR)
    def mma_wait_prior(self, stage_info: Any) -> None:
        """wgmma.wait_group 1."""

    @consumer_work(work_attrs=WorkAttr.ASYNC_WAIT_ALL)
    def mma_wait_all(self, stage_info: Any) -> None:
        """wgmma.wait_group 0."""


@schedule
def load(ab: ResourceProxy) -> None:
    with domain_loop(K.k_blocks):
        ab.acquire()
        ab.tma_load()
        ab.commit()


@schedule
def mma_lagged_in_loop(ab: ResourceProxy) -> None:
    with domain_loop(K.k_blocks) as k:
        ab.wait()
        ab.mma()
        ab.mma_wait_prior()
        with k.every(1, start=1):
            ab.release()  # the previous stage
        with k.last_iter():
            ab.mma_wait_all()
            ab.release()  # this one


@schedule
def mma_release_before_wait(ab: ResourceProxy) -> None:
    with domain_loop(K.k_blocks):
        ab.wait()
        ab.mma()
        ab.release()  # the MMA may still read the stage
        ab.mma_wait_all()


@schedule
def mma_prior_is_not_enough(ab: ResourceProxy) -> None:
    with domain_loop(K.k_blocks):
        ab.wait()
        ab.mma()
        ab.mma_wait_prior()  # retires older MMAs, not this one
        ab.release()


def _plan(mma: Any, ptype: PipelineType = PipelineType.TmaWgmma) -> KernelPlan:
    ab = Operands(
        name="ab",
        pipeline_config=PipelineSpec(
            ptype,
            4,
            (128 + 256) * 64 * 2,
            CooperativeGroupSpec("thread", 1),
            CooperativeGroupSpec("thread", 256),
        ),
    )
    tasks = [
        TaskDeclaration([], [ab], 0, 4, load(ab), name="load"),
        TaskDeclaration([ab], [], 4, 8, mma(ab), name="mma"),
    ]
    return build_plan(tasks, {ab: []}, name="wgmma_mainloop")


def test_lagged_release_after_wait_group_is_proven() -> None:
    report = verify(_plan(mma_lagged_in_loop))
    assert report.ok, report.as_text()


def test_release_before_wait_group_is_rejected() -> None:
    report = verify(_plan(mma_release_before_wait))
    assert "TS-V113" in report.codes()
    (diag,) = [d for d in report.errors if d.code == "TS-V113"]
    assert diag.task == "mma" and diag.resource == "ab"
    assert "ab.release" in diag.step
    assert diag.location is not None
    assert diag.location.function == "mma_release_before_wait"


def test_wait_group_1_does_not_retire_the_newest_mma() -> None:
    assert "TS-V113" in verify(_plan(mma_prior_is_not_enough)).codes()


def test_tma_async_does_not_treat_consumer_work_as_async() -> None:
    # Same schedule on a TmaAsync ring: the consumer work is synchronous there.
    assert verify(_plan(mma_release_before_wait, PipelineType.TmaAsync)).ok
