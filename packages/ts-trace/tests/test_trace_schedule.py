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
        else:
            out.append(dataclasses.replace(node, body=strip(node.body), location=UNKNOWN_LOCATION))
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


def test_skip_stage_records_a_consumer_skip(buf: Buf) -> None:
    @schedule
    def sched(b: Any) -> None:
        b.skip_stage()
        b.wait()
        b.release()

    stages = [s.stage for s in sched(buf).steps()]
    assert stages == [
        ScheduleStage.ConsumerSkip,
        ScheduleStage.ConsumerWait,
        ScheduleStage.ConsumerRelease,
    ]
    with pytest.raises(ScheduleError, match="TS-T017"):
        schedule(lambda b: b.skip_stage(2))(buf)


def test_a_work_method_named_skip_stage_wins() -> None:
    # The reference reserves only its six operation names: its programs may use this one.
    @dataclasses.dataclass(kw_only=True)
    class Own(MemoryResource):
        @consumer_work
        def skip_stage(self, stage_info: Any) -> None:
            del stage_info

    @schedule
    def sched(o: Any) -> None:
        o.skip_stage()

    (step,) = sched(Own(name="own")).steps()
    assert step.stage is ScheduleStage.ConsumerWork


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


# -- data flow ---------------------------------------------------------------------------------


def test_single_and_multi_output_routes(src: Src, sink: Sink) -> None:
    tokens: list[Any] = []

    @schedule
    def sched(s: Any, k: Any) -> None:
        single = s.load()
        pair = s.load_with_flag()
        tokens.extend([single, pair])
        item, flag = pair
        k.put(b=item, a=flag)

    result = sched(src, sink)
    assert strip(result.body) == (
        Step(0, "src", CW, "load", outputs=("item",)),
        Step(1, "src", CW, "load_with_flag", outputs=("item", "flag")),
        # Inputs are sorted by argument name, whatever the call's keyword order.
        Step(2, "Sink", PW, "put", inputs=(Route("a", 1, "flag"), Route("b", 1, "item"))),
    )
    single, pair = tokens
    assert isinstance(single, DataFlowToken)
    assert (single.resource, single.label, single.output, single.step_id) == (
        "src",
        "load",
        "item",
        0,
    )
    assert isinstance(pair, tuple) and len(pair) == 2
    assert [(t.label, t.output, t.step_id) for t in pair] == [
        ("load_with_flag", "item", 1),
        ("load_with_flag", "flag", 1),
    ]
    assert pair[1].describe() == "src.load_with_flag[flag]"


def test_constants_are_recorded_sorted_by_name(src: Src, buf: Buf, sink: Sink) -> None:
    @schedule
    def sched(s: Any, b: Any, k: Any) -> None:
        tok = s.load()
        b.store(item=tok, scale=2)
        k.emit(z=1, a="x", m=(1, 2), n=None)

    store, emit = sched(src, buf, sink).steps()[1:]
    assert store.inputs == (Route("item", 0, "item"),)
    assert store.constants == (("scale", 2),)
    assert emit.inputs == ()
    assert emit.constants == (("a", "x"), ("m", (1, 2)), ("n", None), ("z", 1))


def test_single_slot_resource_writes_it_implicitly(counter: Counter) -> None:
    tokens: list[Any] = []

    @schedule
    def sched(c: Any) -> None:
        n = c.bump()
        tokens.append(n)
        c.reset(count=n)

    result = sched(counter)
    assert strip(result.body) == (
        Step(0, "ctr", CW, "bump", outputs=("count",)),
        Step(1, "ctr", PW, "reset", inputs=(Route("count", 0, "count"),)),
    )
    assert tokens[0].output == "count"


def test_consumer_without_outputs_returns_an_unusable_token(src: Src) -> None:
    tokens: list[Any] = []

    @schedule
    def record(s: Any) -> None:
        s.load()
        tokens.append(s.peek())

    result = record(src)
    assert strip(result.body)[1] == Step(1, "src", CW, "peek")
    (tok,) = tokens
    assert isinstance(tok, DataFlowToken)
    assert (tok.resource, tok.label, tok.output, tok.step_id) == ("src", "peek", None, 1)

    @schedule
    def guard_with_it(s: Any) -> None:
        with when_true(s.peek()):
            s.load()

    with pytest.raises(ScheduleError) as err:
        guard_with_it(src)
    assert err.value.code == "TS-T006"
    assert "declares no output" in str(err.value)


def test_producer_work_returns_a_token_with_nothing_to_route(src: Src, buf: Buf) -> None:
    """As every work call does (routing it is TS-T006); pipeline operations return None."""
    returned: list[Any] = []

    @schedule
    def sched(s: Any, b: Any) -> None:
        returned.append(b.store(item=s.load()))
        returned.append(b.prefetch())
        returned.append(b.acquire())

    sched(src, buf)
    store, prefetch, acquire = returned
    assert isinstance(store, DataFlowToken) and isinstance(prefetch, DataFlowToken)
    assert (store.label, store.output, store.producer) == ("store", None, True)
    assert (prefetch.label, prefetch.output, prefetch.producer) == ("prefetch", None, True)
    assert acquire is None


def test_python_for_loop_unrolls_into_repeated_steps(src: Src, buf: Buf) -> None:
    @schedule
    def sched(s: Any, b: Any) -> None:
        for i in range(3):
            b.store(item=s.load(), scale=i)

    expected: list[Node] = []
    for i in range(3):
        expected.append(Step(2 * i, "src", CW, "load", outputs=("item",)))
        expected.append(
            Step(
                2 * i + 1,
                "buf",
                PW,
                "store",
                inputs=(Route("item", 2 * i, "item"),),
                constants=(("scale", i),),
            )
        )
    assert strip(sched(src, buf).body) == tuple(expected)


def test_token_from_before_a_loop_is_usable_inside(src: Src, buf: Buf, queue: Queue) -> None:
    @schedule
    def sched(q: Any, s: Any, b: Any) -> None:
        before = s.load()
        with domain_loop(2), domain_loop(3):
            b.store(item=before)
        with work_tile_loop(q):
            b.store(item=before)

    result = sched(queue, src, buf)
    routes = [step.inputs for step in result.steps() if step.label == "store"]
    assert routes == [(Route("item", 0, "item"),)] * 2


def test_token_from_a_loop_body_is_usable_later_in_that_body(src: Src, buf: Buf) -> None:
    @schedule
    def sched(s: Any, b: Any) -> None:
        with domain_loop(4) as k:
            v = s.load()
            b.acquire()
            with k.last_iter():
                b.store(item=v)
            b.store(item=v)

    (loop,) = strip(sched(src, buf).body)
    assert loop == const_loop(
        4,
        Step(0, "src", CW, "load", outputs=("item",)),
        Step(1, "buf", ScheduleStage.ProducerAcquire, "acquire"),
        ConditionalBlock(
            LAST_ITER, (Step(2, "buf", PW, "store", inputs=(Route("item", 0, "item"),)),)
        ),
        Step(3, "buf", PW, "store", inputs=(Route("item", 0, "item"),)),
    )


# -- domain loops ------------------------------------------------------------------------------

RUNTIME = RuntimeInt()


@pytest.mark.parametrize(
    ("bounds", "expected"),
    [
        ((4,), (ConstBound(0), ConstBound(4), ConstBound(1))),
        ((2, 10), (ConstBound(2), ConstBound(10), ConstBound(1))),
        ((2, 10, 3), (ConstBound(2), ConstBound(10), ConstBound(3))),
        ((10, 0, -2), (ConstBound(10), ConstBound(0), ConstBound(-2))),
        ((RUNTIME,), (ConstBound(0), RuntimeBound("RuntimeInt"), ConstBound(1))),
        (
            (1, RUNTIME, RUNTIME),
            (ConstBound(1), RuntimeBound("RuntimeInt"), RuntimeBound("RuntimeInt")),
        ),
        ((Domains.get_domain,), (ConstBound(0), DynamicBound("Domains.get_domain"), ConstBound(1))),
        (
            (Domains.get_domain, 8),
            (DynamicBound("Domains.get_domain"), ConstBound(8), ConstBound(1)),
        ),
    ],
)
def test_domain_loop_bounds(
    src: Src, bounds: tuple[object, ...], expected: tuple[Any, ...]
) -> None:
    @schedule
    def sched(s: Any) -> None:
        with domain_loop(*bounds):
            s.load()

    (loop,) = sched(src).body
    assert isinstance(loop, DomainLoop)
    assert (loop.start, loop.end, loop.step) == expected
    assert loop.unroll is None
    assert strip(loop.body) == (Step(0, "src", CW, "load", outputs=("item",)),)


def test_domain_loop_records_unroll(src: Src) -> None:
    @schedule
    def sched(s: Any) -> None:
        with domain_loop(0, 64, 2, unroll=4):
            s.load()
        with domain_loop(8, unroll=1):
            s.load()

    first, second = sched(src).body
    assert isinstance(first, DomainLoop) and isinstance(second, DomainLoop)
    assert (first.unroll, second.unroll) == (4, 1)
    assert first.static_trip_count() == 32


def test_nested_domain_loops(src: Src, buf: Buf) -> None:
    @schedule
    def sched(s: Any, b: Any) -> None:
        with domain_loop(2) as outer:
            with outer.first_iter():
                b.prefetch()
            with domain_loop(1, 5) as inner, inner.every(2, start=1):
                s.load()
            s.load()

    assert strip(sched(src, buf).body) == (
        const_loop(
            2,
            ConditionalBlock(
                FIRST_ITER,
                (Step(0, "buf", ScheduleStage.ProducerAuxWork, "prefetch", WorkAttr.AUXILIARY),),
            ),
            const_loop(
                5,
                ConditionalBlock(Every(2, 1), (Step(1, "src", CW, "load", outputs=("item",)),)),
                start=1,
            ),
            Step(2, "src", CW, "load", outputs=("item",)),
        ),
    )


# -- condition blocks --------------------------------------------------------------------------


def test_iteration_predicate_blocks(src: Src) -> None:
    @schedule
    def sched(s: Any) -> None:
        with domain_loop(8) as k:
            with k.first_iter():
                s.load()
            with k.last_iter():
                s.load()
            with k.every(2):
                s.load()
            with k.every(3, start=1):
                s.load()
            with when_true(Every(4)):
                s.load()

    def load(i: int) -> Step:
        return Step(i, "src", CW, "load", outputs=("item",))

    guards = [FIRST_ITER, LAST_ITER, Every(2), Every(3, 1), Every(4)]
    assert strip(sched(src).body) == (
        const_loop(8, *(ConditionalBlock(g, (load(i),)) for i, g in enumerate(guards))),
    )


def test_opaque_conditions_from_tokens(src: Src, buf: Buf) -> None:
    @schedule
    def sched(s: Any, b: Any) -> None:
        s.load()
        _, flag = s.load_with_flag()
        with when_true(flag):
            b.prefetch()
        with when_false(flag):
            b.read()

    prefetch = Step(2, "buf", ScheduleStage.ProducerAuxWork, "prefetch", WorkAttr.AUXILIARY)
    key = "src.load_with_flag.flag#1"
    assert strip(sched(src, buf).body)[2:] == (
        ConditionalBlock(OpaqueCondition(key, False, "src", "load_with_flag", "flag"), (prefetch,)),
        ConditionalBlock(
            OpaqueCondition(key, True, "src", "load_with_flag", "flag"),
            (Step(3, "buf", CW, "read"),),
        ),
    )


@pytest.mark.parametrize(
    ("key", "stored"),
    [
        ("shared-flag", "shared-flag"),
        (7, 7),
        (("tail", 1), "('tail', 1)"),
        (frozenset({"x"}), "frozenset({'x'})"),
        (True, "True"),
    ],
)
def test_custom_condition_keys(src: Src, key: Hashable, stored: object) -> None:
    @schedule
    def sched(s: Any) -> None:
        _, flag = s.load_with_flag()
        with when_false(flag, key=key):
            s.load()

    block = sched(src).body[1]
    assert isinstance(block, ConditionalBlock)
    assert isinstance(block.guard, OpaqueCondition)
    assert block.guard == OpaqueCondition(stored, True, "src", "load_with_flag", "flag")
    assert type(block.guard.key) is type(stored)
    assert block.negated


def test_sibling_condition_blocks(src: Src, buf: Buf) -> None:
    @schedule
    def sched(s: Any, b: Any) -> None:
        item, flag = s.load_with_flag()
        with when_true(flag):
            b.store(item=item)
        with when_true(flag, key="again"):
            b.store(item=item)
        with domain_loop(2) as k:
            with k.first_iter():
                b.prefetch()
            with when_true(flag):
                b.prefetch()

    body = strip(sched(src, buf).body)
    assert [type(n).__name__ for n in body] == [
        "Step",
        "ConditionalBlock",
        "ConditionalBlock",
        "DomainLoop",
    ]
    loop = body[3]
    assert isinstance(loop, DomainLoop)
    assert [n.guard for n in loop.body if isinstance(n, ConditionalBlock)] == [
        FIRST_ITER,
        OpaqueCondition("src.load_with_flag.flag#0", False, "src", "load_with_flag", "flag"),
    ]


def test_skippable_region_inside_work_tile_loop(src: Src, buf: Buf, queue: Queue) -> None:
    @schedule
    def sched(q: Any, s: Any, b: Any) -> None:
        b.prefetch()
        with work_tile_loop(q, skip_if=Queue.is_empty) as tiles:
            tile = q.next_tile()
            with tiles.skippable():
                _, flag = s.load_with_flag()
                with when_true(flag):
                    b.prefetch()
                with when_false(tile, key="tile"):
                    b.read()
            b.read()
        b.read()

    aux = ScheduleStage.ProducerAuxWork
    result = sched(queue, src, buf)
    assert strip(result.body) == (
        Step(0, "buf", aux, "prefetch", WorkAttr.AUXILIARY),
        WorkTileLoop(
            "wq",
            "Queue.is_empty",
            (
                Step(1, "wq", CW, "next_tile", outputs=("tile",)),
                ConditionalBlock(
                    SKIPPABLE,
                    (
                        Step(2, "src", CW, "load_with_flag", outputs=("item", "flag")),
                        ConditionalBlock(
                            OpaqueCondition(
                                "src.load_with_flag.flag#2", False, "src", "load_with_flag", "flag"
                            ),
                            (Step(3, "buf", aux, "prefetch", WorkAttr.AUXILIARY),),
                        ),
                        ConditionalBlock(
                            OpaqueCondition("tile", True, "wq", "next_tile", "tile"),
                            (Step(4, "buf", CW, "read"),),
                        ),
                    ),
                ),
                Step(5, "buf", CW, "read"),
            ),
        ),
        Step(6, "buf", CW, "read"),
    )
    assert result.resources == ("wq", "src", "buf")


def test_work_tile_loop_without_skip_if(queue: Queue) -> None:
    @schedule
    def sched(q: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()

    assert strip(sched(queue).body) == (
        WorkTileLoop("wq", None, (Step(0, "wq", CW, "next_tile", outputs=("tile",)),)),
    )


# -- resources and the schedule itself ----------------------------------------------------------


def test_resources_follow_parameter_order_and_accept_keywords(src: Src, buf: Buf) -> None:
    @schedule
    def sched(b: Any, s: Any) -> None:
        b.store(item=s.load())

    positional = sched(buf, src)
    by_keyword = sched(s=src, b=buf)
    assert positional.resources == by_keyword.resources == ("buf", "src")
    assert positional == by_keyword
    assert [s.resource for s in by_keyword.steps()] == ["src", "buf"]


def test_unnamed_resource_uses_its_class_name(sink: Sink) -> None:
    @schedule
    def sched(k: Any) -> None:
        k.drain()

    result = sched(sink)
    assert result.resources == ("Sink",)
    assert result.steps()[0].resource == "Sink"


def test_tracing_twice_gives_equal_schedules(src: Src, buf: Buf, queue: Queue) -> None:
    @schedule
    def sched(q: Any, s: Any, b: Any) -> None:
        with work_tile_loop(q, skip_if=Queue.is_empty) as tiles, tiles.skippable():
            with domain_loop(Domains.get_domain, unroll=2) as k, k.first_iter():
                b.acquire()
            b.store(item=s.load(), scale=3)

    first = sched(queue, src, buf)
    second = sched(queue, src, buf)
    # Fresh builders: step ids restart at 0 and nothing leaks from the first trace.
    assert first is not second
    assert first == second
    assert first.fingerprint() == second.fingerprint()
    assert [s.id for s in second.steps()] == [0, 1, 2]
    # Equally named fresh resources trace to the same schedule too.
    third = sched(Queue(name="wq"), Src(name="src"), Buf(name="buf", pipeline_config=pipeline()))
    assert third == first


def test_concurrent_traces_on_two_threads_do_not_mix() -> None:
    barrier = threading.Barrier(2, timeout=10)

    @schedule
    def left(s: Any) -> None:
        v = s.load()
        barrier.wait()
        with domain_loop(2):
            s.load()
        barrier.wait()
        s.load_with_flag()
        del v

    @schedule
    def right(b: Any, s: Any) -> None:
        b.acquire()
        barrier.wait()
        v = s.load()
        barrier.wait()
        b.store(item=v)
        b.commit()

    def make_src() -> Src:
        return Src(name="src")

    results: dict[str, Schedule] = {}
    failures: list[BaseException] = []

    def run(name: str, trace: Callable[[], Schedule]) -> None:
        try:
            results[name] = trace()
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    buf = Buf(name="buf", pipeline_config=pipeline())
    threads = [
        threading.Thread(target=run, args=("left", lambda: left(make_src()))),
        threading.Thread(target=run, args=("right", lambda: right(buf, make_src()))),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert failures == []
    assert [s.describe() for s in results["left"].steps()] == [
        "src.load",
        "src.load",
        "src.load_with_flag",
    ]
    assert strip(results["right"].body) == (
        Step(0, "buf", ScheduleStage.ProducerAcquire, "acquire"),
        Step(1, "src", CW, "load", outputs=("item",)),
        Step(2, "buf", PW, "store", inputs=(Route("item", 1, "item"),)),
        Step(3, "buf", ScheduleStage.ProducerCommit, "commit"),
    )
    # Sequential traces (barriers released by the helper thread) give the same trees.
    helper = threading.Thread(target=lambda: [barrier.wait() for _ in range(2)])
    helper.start()
    assert left(make_src()) == results["left"]
    helper.join(timeout=30)


# -- source lines ------------------------------------------------------------------------------


def test_every_node_points_at_its_source_line(src: Src, buf: Buf, queue: Queue) -> None:
    @schedule
    def sched(q: Any, s: Any, b: Any) -> None:  # loc-def
        b.prefetch()  # loc-pre
        with work_tile_loop(q, skip_if=Queue.is_empty) as tiles:  # loc-wtl
            q.next_tile()  # loc-next
            with tiles.skippable():  # loc-skip
                item, flag = s.load_with_flag()  # loc-lwf
                with domain_loop(4) as k:  # loc-loop
                    b.acquire()  # loc-acq
                    with k.every(2):  # loc-every
                        b.store(  # loc-store
                            item=item,
                            scale=1,
                        )
                    b.commit()  # loc-commit
                with when_false(flag):  # loc-cond
                    b.read()  # loc-read
        b.read()  # loc-post

    result = sched(queue, src, buf)
    assert result.location.line == line_of("loc-def")
    assert result.location.file == __file__
    assert result.location.text == "def sched(q: Any, s: Any, b: Any) -> None:  # loc-def"
    walked = [(type(n).__name__, n.location.line) for n, _ in result.walk()]
    expected = [
        ("Step", "loc-pre"),
        ("WorkTileLoop", "loc-wtl"),
        ("Step", "loc-next"),
        ("ConditionalBlock", "loc-skip"),
        ("Step", "loc-lwf"),
        ("DomainLoop", "loc-loop"),
        ("Step", "loc-acq"),
        ("ConditionalBlock", "loc-every"),
        ("Step", "loc-store"),
        ("Step", "loc-commit"),
        ("ConditionalBlock", "loc-cond"),
        ("Step", "loc-read"),
        ("Step", "loc-post"),
    ]
    assert walked == [(kind, line_of(marker)) for kind, marker in expected]
    markers = {line_of(marker): marker for _, marker in expected}
    for step in result.steps():
        assert step.location.file == __file__
        assert step.location.function == "sched"
        assert step.location.text.endswith("# " + markers[step.location.line])
