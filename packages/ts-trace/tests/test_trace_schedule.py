"""The traced schedule tree: steps, stages, routes, blocks, guards, bounds and source lines."""

from __future__ import annotations

import dataclasses
import inspect
import re
import threading
from collections.abc import Callable, Hashable
from typing import Any

import pytest
from trace_testkit import Buf, Domains, Queue, Src, pipeline

from ts_ir import (
    FIRST_ITER,
    LAST_ITER,
    SKIPPABLE,
    UNKNOWN_LOCATION,
    ConditionalBlock,
    ConstBound,
    DomainLoop,
    DynamicBound,
    Every,
    Node,
    OpaqueCondition,
    Route,
    RuntimeBound,
    Schedule,
    ScheduleStage,
    Step,
    WorkAttr,
    WorkTileLoop,
)
from ts_trace import (
    DataFlowToken,
    MemoryResource,
    ScheduleError,
    TaskLocalVariable,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    when_false,
    when_true,
    work_tile_loop,
)

PW = ScheduleStage.ProducerWork
CW = ScheduleStage.ConsumerWork


@dataclasses.dataclass(kw_only=True)
class Counter(MemoryResource):
    """Exactly one task-local slot: consumer work without returns= writes it implicitly."""

    count: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.count = TaskLocalVariable(dtype="Int32", default=0)

    @consumer_work
    def bump(self, stage_info: Any) -> Any:
        return stage_info

    @producer_work
    def reset(self, stage_info: Any, *, count: Any = None) -> None:
        del stage_info, count


@dataclasses.dataclass(kw_only=True)
class Sink(MemoryResource):
    """No task-local slots: a two-input producer, a **kwargs producer and auxiliary work."""

    @producer_work
    def put(self, stage_info: Any, *, a: Any, b: Any) -> None:
        del stage_info, a, b

    @producer_work
    def emit(self, stage_info: Any, **options: Any) -> None:
        del stage_info, options

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def drain(self, stage_info: Any) -> None:
        del stage_info


class RuntimeInt:
    """Stands in for a DSL integer computed in the kernel (neither int nor callable)."""


def line_of(marker: str) -> int:
    """The line of this file that carries ``marker`` in a trailing comment."""
    lines = inspect.getsource(inspect.getmodule(line_of)).splitlines()  # type: ignore[arg-type]
    pattern = re.compile(rf"# {re.escape(marker)}$")
    hits = [i + 1 for i, text in enumerate(lines) if pattern.search(text)]
    assert len(hits) == 1, marker
    return hits[0]


def strip(body: tuple[Node, ...]) -> tuple[Node, ...]:
    """``body`` with every source location replaced by UNKNOWN_LOCATION (for == checks)."""
    out: list[Node] = []
    for node in body:
        if isinstance(node, Step):
            out.append(dataclasses.replace(node, location=UNKNOWN_LOCATION))
        elif isinstance(node, DomainLoop):
            out.append(
                dataclasses.replace(node, body=strip(node.body), location=UNKNOWN_LOCATION)
            )
        elif isinstance(node, WorkTileLoop):
            out.append(
                dataclasses.replace(node, body=strip(node.body), location=UNKNOWN_LOCATION)
            )
        else:
            out.append(
                dataclasses.replace(node, body=strip(node.body), location=UNKNOWN_LOCATION)
            )
    return tuple(out)


def const_loop(end: int, *body: Node, start: int = 0, step: int = 1) -> DomainLoop:
    return DomainLoop(ConstBound(start), ConstBound(end), ConstBound(step), None, body)


@pytest.fixture
def sink() -> Sink:
    return Sink()


@pytest.fixture
def counter() -> Counter:
    return Counter(name="ctr")


# -- steps -------------------------------------------------------------------------------------


def test_pipeline_ops_record_their_stage_and_increasing_ids(buf: Buf) -> None:
    @schedule
    def sched(b: Any) -> None:
        b.acquire()
        b.try_acquire()
        b.commit()
        b.wait()
        b.try_wait()
        b.release()

    ops = [
        (ScheduleStage.ProducerAcquire, "acquire"),
        (ScheduleStage.ProducerTryAcquire, "try_acquire"),
        (ScheduleStage.ProducerCommit, "commit"),
        (ScheduleStage.ConsumerWait, "wait"),
        (ScheduleStage.ConsumerTryWait, "try_wait"),
        (ScheduleStage.ConsumerRelease, "release"),
    ]
    result = sched(buf)
    assert strip(result.body) == tuple(
        Step(i, "buf", stage, label) for i, (stage, label) in enumerate(ops)
    )
    assert result.name == "sched"
    assert result.resources == ("buf",)


def test_work_stages_labels_and_attrs(src: Src, buf: Buf, sink: Sink) -> None:
    @schedule
    def sched(s: Any, b: Any, k: Any) -> None:
        v = s.load()
        b.prefetch()
        b.read()
        k.drain()
        b.store(item=v)

    assert strip(sched(src, buf, sink).body) == (
        Step(0, "src", CW, "load", outputs=("item",)),
        Step(1, "buf", ScheduleStage.ProducerAuxWork, "prefetch", WorkAttr.AUXILIARY),
        Step(2, "buf", CW, "read"),
        Step(3, "Sink", ScheduleStage.ConsumerAuxWork, "drain", WorkAttr.AUXILIARY),
        Step(4, "buf", PW, "store", inputs=(Route("item", 0, "item"),)),
    )


def test_step_ids_follow_program_order_across_blocks(src: Src, buf: Buf, queue: Queue) -> None:
    @schedule
    def sched(q: Any, s: Any, b: Any) -> None:
        b.prefetch()
        with work_tile_loop(q):
            q.next_tile()
            with domain_loop(2) as k:
                v = s.load()
                with k.first_iter():
                    b.acquire()
                b.store(item=v)
        b.prefetch()

    result = sched(queue, src, buf)
    steps = result.steps()
    assert [s.id for s in steps] == list(range(6))
    assert [s.describe() for s in steps] == [
        "buf.prefetch",
        "wq.next_tile",
        "src.load",
        "buf.acquire",
        "buf.store",
        "buf.prefetch",
    ]
    assert result.step(4).inputs == (Route("item", 2, "item"),)
