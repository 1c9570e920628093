"""Cluster launch control: one request per tile, every task reads every answer (TS-V220/V221).

The plans are a CLC persistent copy: ``sched`` (warp 4) asks for the next tile, ``worker``
(warps 0-3) copies the current one; both read the answer. The broken variants are the
mistakes the protocol invites: a task that never reads, a request ahead of its tile (a
prefetch, two requests per tile, a request inside a K loop), and the fetching task reading
before its request. A Hopper atomic queue (AsyncAsync), whose fetching warp learns its tile
from the counter and reads nothing, is not subject to these rules.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

from ts_ir import CooperativeGroupSpec, KernelPlan, PipelineSpec, PipelineType
from ts_trace import (
    MemoryResource,
    TaskDeclaration,
    TaskLocalVariable,
    build_plan,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    work_tile_loop,
)
from ts_verify import Diagnostic, verify


@dataclasses.dataclass(kw_only=True)
class Queue(MemoryResource):
    is_work_queue: ClassVar[bool] = True
    next_tile: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.next_tile = TaskLocalVariable(dtype="Int32", default=0)

    @producer_work
    def fetch_next_tile(self, stage_info: Any) -> None: ...

    @consumer_work(returns=next_tile)
    def read_next_tile(self, stage_info: Any) -> Any: ...


@dataclasses.dataclass(kw_only=True)
class Rows(MemoryResource):
    @consumer_work
    def copy_tile(self, stage_info: Any) -> None: ...


def _threads(n: int) -> CooperativeGroupSpec:
    return CooperativeGroupSpec("thread", n)


def fetch(wq: Any) -> None:
    wq.acquire()
    wq.fetch_next_tile()
    wq.commit()


def read(wq: Any) -> None:
    wq.wait()
    wq.read_next_tile()
    wq.release()


@schedule
def sched_ok(wq: Any) -> None:
    with work_tile_loop(wq):
        fetch(wq)
        read(wq)  # line of the fetching task's read


@schedule
def worker_ok(wq: Any, rows: Any) -> None:
    with work_tile_loop(wq):
        rows.copy_tile()
        read(wq)


def plan_of(
    sched: Callable[..., Any] = sched_ok,
    worker: Callable[..., Any] = worker_ok,
    *,
    consumers: int = 160,
    kind: PipelineType = PipelineType.ClcFetchAsync,
) -> KernelPlan:
    nbytes = 16 if kind is PipelineType.ClcFetchAsync else 0
    producers = 1 if kind is PipelineType.ClcFetchAsync else 32
    spec = PipelineSpec(kind, 2, nbytes, _threads(producers), _threads(consumers))
    wq, rows = Queue(name="tiles", pipeline_config=spec), Rows(name="rows")
    return build_plan(
        [
            TaskDeclaration([wq, rows], [], 0, 4, worker(wq, rows), name="worker"),
            TaskDeclaration([wq], [wq], 4, 1, sched(wq), name="sched"),
        ],
        {rows: [wq]},
        name="clc_copy",
    )


def only(plan: KernelPlan, code: str) -> Diagnostic:
    report = verify(plan)
    found = [d for d in report.diagnostics if d.code == code]
    assert found, report.as_text()
    return found[0]


def test_the_clc_copy_verifies() -> None:
    report = verify(plan_of())
    assert report.ok and report.diagnostics == (), report.as_text()
    assert any("no deadlock" in p for p in report.proven)


def test_a_worker_that_reads_no_answer_is_v220() -> None:
    @schedule
    def worker(wq: Any, rows: Any) -> None:
        with work_tile_loop(wq):  # the loop that reads nothing
            rows.copy_tile()

    d = only(plan_of(worker=worker, consumers=32), "TS-V220")
    assert (d.task, d.resource) == ("worker", "tiles")
    assert d.location is not None and "the loop that reads nothing" in _line(d)
    assert "read_next_tile" in d.fix


def test_a_fetching_task_that_reads_no_answer_is_v220() -> None:
    @schedule
    def sched(wq: Any) -> None:
        with work_tile_loop(wq):
            fetch(wq)

    d = only(plan_of(sched=sched, consumers=128), "TS-V220")
    assert (d.task, d.resource) == ("sched", "tiles")
    assert "fetching task too" in d.message


def test_a_prefetch_before_the_loop_is_v221() -> None:
    @schedule
    def sched(wq: Any) -> None:
        wq.acquire()  # the prefetch
        wq.fetch_next_tile()
        wq.commit()
        with work_tile_loop(wq):
            read(wq)
            fetch(wq)

    d = only(plan_of(sched=sched), "TS-V221")
    assert (d.task, d.resource) == ("sched", "tiles")
    assert "the prefetch" in _line(d)
    assert "outside the tile's body" in d.message


def test_two_requests_per_tile_are_v221() -> None:
    @schedule
    def sched(wq: Any) -> None:
        with work_tile_loop(wq):
            fetch(wq)
            fetch(wq)
            read(wq)
            read(wq)

    @schedule
    def worker(wq: Any, rows: Any) -> None:
        with work_tile_loop(wq):
            rows.copy_tile()
            read(wq)
            read(wq)

    d = only(plan_of(sched=sched, worker=worker), "TS-V221")
    assert d.task == "sched" and "number 2 of 2" in d.message


def test_reading_before_the_request_is_v221() -> None:
    @schedule
    def sched(wq: Any) -> None:
        with work_tile_loop(wq):
            read(wq)
            fetch(wq)

    d = only(plan_of(sched=sched), "TS-V221")
    assert d.task == "sched" and d.step.endswith("tiles.wait")
    assert "before this tile's request" in d.message


def test_a_request_inside_a_k_loop_is_v221() -> None:
    @schedule
    def sched(wq: Any) -> None:
        with work_tile_loop(wq):
            with domain_loop(4):
                fetch(wq)
            read(wq)

    d = only(plan_of(sched=sched), "TS-V221")
    assert d.task == "sched" and "inside a block or loop" in d.message


def test_an_atomic_queue_needs_no_read_in_the_fetching_task() -> None:
    @schedule
    def sched(wq: Any) -> None:
        with work_tile_loop(wq):
            fetch(wq)

    report = verify(plan_of(sched=sched, consumers=128, kind=PipelineType.AsyncAsync))
    assert report.ok, report.as_text()
    assert not {"TS-V220", "TS-V221"} & set(report.codes())


def _line(d: Diagnostic) -> str:
    """The source line the diagnostic points at."""
    import linecache

    assert d.location is not None
    return linecache.getline(d.location.file, d.location.line)
