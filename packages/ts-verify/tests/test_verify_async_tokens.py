"""One WGMMA, two rings: an asynchronous read keeps every stage its inputs came from.

A WGMMA issued on ring ``a``'s stage with ring ``b``'s stage (``b``'s index handed over as a
token, as ``examples/hopper/merge_gemm.py`` does) reads both stages until a ``wait_group``
retires it. Before, the read of ``b`` was its own, older asynchronous read, so a
``wait_group 1`` after the WGMMA counted it as retired and a release of ``b``'s stage right
there (the WGMMA still reading it) went unreported.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from verify_testkit import Src, plan_of, produce, task

from ts_ir import CooperativeGroupSpec, KernelPlan, PipelineSpec, PipelineType, WorkAttr
from ts_trace import MemoryResource, TaskLocalVariable, consumer_work, domain_loop, producer_work
from ts_trace import schedule as trace_schedule
from ts_verify import verify


@dataclasses.dataclass(kw_only=True)
class Operand(MemoryResource):
    """One operand's TMA ring, read by WGMMA (a ``TmaWgmma`` pipeline)."""

    index: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.index = TaskLocalVariable(dtype="Int32", default=0)

    @producer_work
    def store(self, stage_info: Any, *, item: Any = None) -> None:
        """TMA-load a stage."""

    @consumer_work(returns=index)
    def stage(self, stage_info: Any) -> Any:
        """The waited stage's index, for the WGMMA issued on the other ring."""

    @consumer_work
    def mma(self, stage_info: Any, *, b_stage: Any) -> None:
        """WGMMA: A from this ring's stage, B from ``b_stage``."""

    @consumer_work(work_attrs=WorkAttr.ASYNC_WAIT_PRIOR)
    def wait_prior(self, stage_info: Any) -> None:
        """wgmma.wait_group 1."""

    @consumer_work(work_attrs=WorkAttr.ASYNC_WAIT_ALL)
    def wait_all(self, stage_info: Any) -> None:
        """wgmma.wait_group 0."""


def _wgmma_ring() -> PipelineSpec:
    return PipelineSpec(
        PipelineType.TmaWgmma,
        4,
        16384,
        CooperativeGroupSpec("thread", 1),
        CooperativeGroupSpec("thread", 128),
    )


def _plan(release_b_early: bool) -> KernelPlan:
    src_a, src_b = Src(name="src_a"), Src(name="src_b")
    a = Operand(name="a", pipeline_config=_wgmma_ring())
    b = Operand(name="b", pipeline_config=_wgmma_ring())

    @trace_schedule
    def mma(a: Any, b: Any) -> None:
        with domain_loop(8):
            a.wait()
            b.wait()
            a.mma(b_stage=b.stage())
            a.wait_prior()
            if release_b_early:
                b.release()  # EARLY: the WGMMA still reads b's stage
            a.wait_all()
            a.release()
            if not release_b_early:
                b.release()

    return plan_of(
        task("load_a", produce(src_a, a, 8), [src_a], [a], warps=1),  # type: ignore[arg-type]
        task("load_b", produce(src_b, b, 8), [src_b], [b], warp=1, warps=1),  # type: ignore[arg-type]
        task("mma", mma(a, b), [a, b], [], warp=4),
    )


def test_release_after_the_wgmma_retired_passes() -> None:
    assert verify(_plan(release_b_early=False)).ok


def test_release_of_the_token_ring_while_the_wgmma_reads_it_is_reported() -> None:
    report = verify(_plan(release_b_early=True))
    found = [d for d in report.diagnostics if d.code == "TS-V113"]
    assert [d.resource for d in found] == ["b"], report.diagnostics
    location = found[0].location
    assert found[0].task == "mma" and location is not None
    assert location.text.startswith("b.release()")
