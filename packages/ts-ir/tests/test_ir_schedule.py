"""Tests of ts_ir.schedule."""

from __future__ import annotations

import dataclasses

import pytest

from ts_ir import (
    FIRST_ITER,
    UNKNOWN_LOCATION,
    ConditionalBlock,
    ConstBound,
    DomainLoop,
    DynamicBound,
    Node,
    RuntimeBound,
    Schedule,
    ScheduleStage,
    ScheduleVisitor,
    SourceLocation,
    Step,
    WorkTileLoop,
    iter_nodes,
    iter_steps,
)


def _kind(node: Node) -> str:
    return f"#{node.id}" if isinstance(node, Step) else type(node).__name__


def test_iter_nodes_order_and_parents(consumer_schedule: Schedule) -> None:
    walked = [
        (_kind(n), [type(p).__name__ for p in parents])
        for n, parents in iter_nodes(consumer_schedule.body)
    ]
    loops = ["WorkTileLoop", "DomainLoop"]
    assert walked == [
        ("WorkTileLoop", []),
        ("DomainLoop", ["WorkTileLoop"]),
        ("ConditionalBlock", loops),
        ("#3", [*loops, "ConditionalBlock"]),
        ("#4", loops),
        ("#5", loops),
        ("#6", loops),
        ("#7", loops),
        ("ConditionalBlock", loops),
        ("#8", [*loops, "ConditionalBlock"]),
    ]
    assert list(consumer_schedule.walk()) == list(iter_nodes(consumer_schedule.body))


def test_iter_steps_order(consumer_schedule: Schedule) -> None:
    assert [s.id for s in iter_steps(consumer_schedule.body)] == [3, 4, 5, 6, 7, 8]
    assert [s.id for s in consumer_schedule.steps()] == [3, 4, 5, 6, 7, 8]
    assert consumer_schedule.step(6).label == "mma"
    with pytest.raises(KeyError):
        consumer_schedule.step(0)


class _Recorder(ScheduleVisitor):
    def __init__(self, skip_conditionals: bool) -> None:
        self.events: list[str] = []
        self.skip_conditionals = skip_conditionals

    def visit_step(self, node: Step) -> None:
        self.events.append(f"#{node.id}")

    def visit_domain_loop(self, node: DomainLoop) -> None:
        self.events.append("for")
        super().visit_domain_loop(node)

    def visit_conditional(self, node: ConditionalBlock) -> None:
        self.events.append("if")
        if not self.skip_conditionals:
            self.generic_visit(node)


def test_visitor_order(consumer_schedule: Schedule) -> None:
    rec = _Recorder(skip_conditionals=False)
    consumer_schedule.accept(rec)
    assert rec.events == ["for", "if", "#3", "#4", "#5", "#6", "#7", "if", "#8"]


def test_visitor_override_can_prune(consumer_schedule: Schedule) -> None:
    rec = _Recorder(skip_conditionals=True)
    consumer_schedule.accept(rec)
    assert rec.events == ["for", "if", "#4", "#5", "#6", "#7", "if"]


def _loop(start: int, end: int, step: int) -> DomainLoop:
    return DomainLoop(ConstBound(start), ConstBound(end), ConstBound(step), None, ())


@pytest.mark.parametrize(
    ("start", "end", "step", "trips"),
    [(0, 8, 1, 8), (0, 8, 3, 3), (5, 5, 1, 0), (8, 0, 1, 0), (10, 0, -3, 4), (0, 10, -1, 0)],
)
def test_static_trip_count(start: int, end: int, step: int, trips: int) -> None:
    loop = _loop(start, end, step)
    assert loop.is_static
    assert loop.static_trip_count() == trips


def test_static_trip_count_dynamic_bounds() -> None:
    for bound in (RuntimeBound("K"), DynamicBound("Task.get_domain")):
        loop = DomainLoop(ConstBound(0), bound, ConstBound(1), None, ())
        assert not loop.is_static
        assert loop.static_trip_count() is None
    assert (
        DomainLoop(ConstBound(0), RuntimeBound("K"), ConstBound(2), 4, ()).describe()
        == "domain_loop(0, <K>, 2, unroll=4)"
    )


def _relocate(body: tuple[Node, ...], line: int) -> tuple[Node, ...]:
    """Give every node a different location (keeps structure identical)."""
    out: list[Node] = []
    for i, node in enumerate(body):
        loc = SourceLocation("elsewhere.py", line + i, "x")
        if isinstance(node, Step):
            out.append(dataclasses.replace(node, location=loc))
        else:
            inner = _relocate(node.body, line * 10 + i)
            out.append(dataclasses.replace(node, body=inner, location=loc))
    return tuple(out)


def test_fingerprint_stable_and_ignores_locations(consumer_schedule: Schedule) -> None:
    fp = consumer_schedule.fingerprint()
    assert len(fp) == 16
    assert int(fp, 16) >= 0
    assert consumer_schedule.fingerprint() == fp
    relocated = dataclasses.replace(
        consumer_schedule,
        body=_relocate(consumer_schedule.body, 1),
        location=SourceLocation("other.py", 99),
    )
    assert relocated != consumer_schedule
    assert relocated.fingerprint() == fp


def test_fingerprint_changes_with_structure(consumer_schedule: Schedule) -> None:
    fp = consumer_schedule.fingerprint()
    renamed = dataclasses.replace(consumer_schedule, name="other")
    extra = dataclasses.replace(
        consumer_schedule,
        body=(*consumer_schedule.body, Step(9, "acc", ScheduleStage.ProducerWork, "flush")),
    )
    wrapped = dataclasses.replace(
        consumer_schedule,
        body=(ConditionalBlock(FIRST_ITER, consumer_schedule.body),),
    )
    tile_loop = consumer_schedule.body[0]
    assert isinstance(tile_loop, WorkTileLoop)
    skip = dataclasses.replace(
        consumer_schedule, body=(dataclasses.replace(tile_loop, skip_if="Task.skip"),)
    )
    fingerprints = {fp, *(s.fingerprint() for s in (renamed, extra, wrapped, skip))}
    assert len(fingerprints) == 5


def test_step_properties() -> None:
    step = Step(0, "acc", ScheduleStage.ProducerWork, "mma")
    assert step.is_work and not step.is_auxiliary
    assert step.describe() == "acc.mma"
    assert step.location == UNKNOWN_LOCATION
    assert Step(1, "acc", ScheduleStage.ProducerAuxWork, "zero").is_auxiliary
    assert not Step(2, "ab", ScheduleStage.ConsumerWait, "wait").is_work


def test_source_location_rendering() -> None:
    loc = SourceLocation("k.py", 3, "x = 1", "main")
    assert str(loc) == "k.py:3"
    assert loc.frame() == 'File "k.py", line 3, in main\n    x = 1'
    assert SourceLocation("k.py", 3).frame() == 'File "k.py", line 3'
