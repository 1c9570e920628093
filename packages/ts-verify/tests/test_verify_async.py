"""Asynchronous reads (WGMMA, TMA store): a stage is never freed while one may still read it."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from verify_testkit import Queue, Src, Tasks, async_pipe, plan_of, produce, task, tma_pipe

from ts_ir import KernelPlan, WorkAttr
from ts_trace import (
    MemoryResource,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    work_tile_loop,
)
from ts_verify import verify


def line_of(marker: str) -> int:
    lines = Path(__file__).read_text().splitlines()
    hits = [i + 1 for i, t in enumerate(lines) if re.search(rf"# {marker}\b", t)]
    assert len(hits) == 1, marker
    return hits[0]


@dataclasses.dataclass(kw_only=True)
class Operands(MemoryResource):
    """A/B stages read by WGMMA, which keeps reading after the call returns."""

    @producer_work
    def store(self, stage_info: Any, *, item: Any = None) -> None:
        """TMA-load a stage."""

    @consumer_work(work_attrs=WorkAttr.ASYNC_READ)
    def mma(self, stage_info: Any) -> None:
        """Issue WGMMA on the stage."""

    @consumer_work(work_attrs=WorkAttr.ASYNC_WAIT_PRIOR)
    def wait_prior(self, stage_info: Any) -> None:
        """wgmma.wait_group 1."""

    @consumer_work(work_attrs=WorkAttr.ASYNC_WAIT_ALL)
    def wait_all(self, stage_info: Any) -> None:
        """wgmma.wait_group 0."""


@dataclasses.dataclass(kw_only=True)
class Staging(MemoryResource):
    """Epilogue SMEM written by the threads and read by a TMA store."""

    @producer_work
    def write(self, stage_info: Any) -> None:
        """Registers to SMEM."""

    @producer_work(work_attrs=WorkAttr.ASYNC_READ)
    def tma_store(self, stage_info: Any) -> None:
        """Start the TMA store (reads SMEM asynchronously)."""

    @producer_work(work_attrs=WorkAttr.ASYNC_WAIT_ALL)
    def store_wait(self, stage_info: Any) -> None:
        """cp.async.bulk.wait_group.read 0."""

    @consumer_work
    def done(self, stage_info: Any) -> None:
        """The consumer side only recycles the buffer."""


def _gemm(consumer: Any, trips: object = 8) -> KernelPlan:
    src, ab = Src(name="src"), Operands(name="ab", pipeline_config=tma_pipe(4))
    return plan_of(
        task("load", produce(src, ab, trips), [src], [ab]),  # type: ignore[arg-type]
        task("mma", consumer(ab), [ab], [], warp=4),
    )


def test_wait_all_before_release_is_clean() -> None:
    @schedule
    def mma(ab: Any) -> None:
        with domain_loop(8):
            ab.wait()
            ab.mma()
            ab.wait_all()
            ab.release()

    report = verify(_gemm(lambda ab: mma(ab)))
    assert report.ok, report.as_text()


def test_software_pipelined_mainloop_is_clean() -> None:
    """Release stage k after wgmma.wait_group 1 retired the MMA of stage k (k+1 in flight)."""

    @schedule
    def mma(ab: Any) -> None:
        with domain_loop(Tasks.get_domain) as k:
            with k.first_iter():
                ab.wait()
                ab.mma()
            ab.wait()
            ab.mma()
            ab.wait_prior()
            ab.release()
            with k.last_iter():
                ab.wait_all()
                ab.release()

    @schedule
    def load(s: Any, r: Any) -> None:
        with domain_loop(Tasks.get_domain) as k:
            with k.first_iter():
                r.acquire()
                r.store(item=s.load())
                r.commit()
            r.acquire()
            r.store(item=s.load())
            r.commit()

    src, ab = Src(name="src"), Operands(name="ab", pipeline_config=tma_pipe(4))
    plan = plan_of(
        task("load", load(src, ab), [src], [ab]),
        task("mma", mma(ab), [ab], [], warp=4),
    )
    report = verify(plan)
    assert report.ok, report.as_text()


def test_release_while_wgmma_reads_the_stage() -> None:
    @schedule
    def mma(ab: Any) -> None:
        with domain_loop(8):
            ab.wait()
            ab.mma()
            ab.release()  # V113-release

    report = verify(_gemm(lambda ab: mma(ab)))
    assert report.codes() == ["TS-V113"], report.as_text()
    d = report.diagnostics[0]
    assert d.location is not None and d.location.line == line_of("V113-release")
    assert d.task == "mma" and d.resource == "ab"
    assert "asynchronous read" in d.message and "ASYNC_WAIT" in d.as_text()


def test_wait_prior_does_not_retire_the_newest_read() -> None:
    """wait_group 1 leaves the newest MMA running: releasing its own stage races."""

    @schedule
    def mma(ab: Any) -> None:
        with domain_loop(8):
            ab.wait()
            ab.mma()
            ab.wait_prior()
            ab.release()  # V113-prior

    report = verify(_gemm(lambda ab: mma(ab)))
    assert report.codes() == ["TS-V113"], report.as_text()
    d = report.diagnostics[0]
    assert d.location is not None and d.location.line == line_of("V113-prior")


def test_tma_store_must_finish_reading_before_commit() -> None:
    buf = Staging(name="staging", pipeline_config=async_pipe(2))

    @schedule
    def epilogue(b: Any) -> None:
        with domain_loop(4):
            b.acquire()
            b.write()
            b.tma_store()
            b.commit()  # V113-store

    @schedule
    def epilogue_ok(b: Any) -> None:
        with domain_loop(4):
            b.acquire()
            b.write()
            b.tma_store()
            b.store_wait()
            b.commit()

    @schedule
    def recycle(b: Any) -> None:
        with domain_loop(4):
            b.wait()
            b.done()
            b.release()

    def plan(producer: Any) -> KernelPlan:
        return plan_of(
            task("epi", producer(buf), [], [buf]),
            task("recycle", recycle(buf), [buf], [], warp=4),
        )

    bad = verify(plan(epilogue))
    assert bad.codes() == ["TS-V113"], bad.as_text()
    assert bad.diagnostics[0].location is not None
    assert bad.diagnostics[0].location.line == line_of("V113-store")
    assert verify(plan(epilogue_ok)).ok


def test_rewrite_of_a_buffer_without_pipeline_while_its_tma_store_reads() -> None:
    """An epilogue buffer with no pipeline: the next iteration's write races the TMA store."""
    staging = Staging(name="staging")
    src, ab = Src(name="src"), Operands(name="ab", pipeline_config=tma_pipe(4))

    @schedule
    def epilogue(a: Any, c: Any) -> None:
        with domain_loop(8):
            a.wait()
            a.mma()
            a.wait_all()
            a.release()
            c.write()  # V113-rewrite
            c.tma_store()

    @schedule
    def epilogue_ok(a: Any, c: Any) -> None:
        with domain_loop(8):
            a.wait()
            a.mma()
            a.wait_all()
            a.release()
            c.write()
            c.tma_store()
            c.store_wait()

    def plan(consumer: Any) -> KernelPlan:
        return plan_of(
            task("load", produce(src, ab, 8), [src], [ab]),  # type: ignore[arg-type]
            task("mma", consumer(ab, staging), [ab], [staging], warp=4),
        )

    bad = verify(plan(epilogue))
    assert bad.codes() == ["TS-V113"], bad.as_text()
    d = bad.diagnostics[0]
    assert d.location is not None and d.location.line == line_of("V113-rewrite")
    assert d.task == "mma" and d.resource == "staging" and "tma_store" in d.message
    assert verify(plan(epilogue_ok)).ok, verify(plan(epilogue_ok)).as_text()


def test_guard_inside_skippable_is_bracket_checked() -> None:
    """A WGMMA issued in last_iter() inside skippable() and released at once: TS-V113."""
    src, queue = Src(name="src"), Queue(name="wq")
    ab = Operands(name="ab", pipeline_config=tma_pipe(4))

    @schedule
    def load(q: Any, s: Any, r: Any) -> None:
        with work_tile_loop(q, skip_if=Queue.past_end) as tiles:
            q.next_tile()
            with tiles.skippable(), domain_loop(Tasks.get_domain):
                r.acquire()
                r.store(item=s.load())
                r.commit()

    @schedule
    def mma(q: Any, a: Any) -> None:
        with work_tile_loop(q, skip_if=Queue.past_end) as tiles:
            q.next_tile()
            with tiles.skippable(), domain_loop(Tasks.get_domain) as k:
                a.wait()
                with k.last_iter():
                    a.mma()
                a.release()  # V113-skippable

    plan = plan_of(
        task("load", load(queue, src, ab), [queue, src], [ab]),
        task("mma", mma(queue, ab), [queue, ab], [], warp=4),
    )
    report = verify(plan)
    assert report.codes() == ["TS-V113"], report.as_text()
    d = report.diagnostics[0]
    assert d.location is not None and d.location.line == line_of("V113-skippable")
