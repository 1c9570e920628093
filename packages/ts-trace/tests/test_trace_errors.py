"""One test per tracing error: the code, the message and the reported user line."""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Any

import pytest
from trace_testkit import Buf, Domains, Queue, Src

from ts_ir import Every
from ts_trace import (
    MemoryResource,
    ResourceDeclarationError,
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


def line_of(marker: str) -> int:
    """The line of this file that carries ``marker`` in a trailing comment."""
    lines = inspect.getsource(inspect.getmodule(line_of)).splitlines()  # type: ignore[arg-type]
    pattern = re.compile(rf"# {marker}\b")
    hits = [i + 1 for i, text in enumerate(lines) if pattern.search(text)]
    assert len(hits) == 1, marker
    return hits[0]


def check(err: pytest.ExceptionInfo[Any], code: str, marker: str, *words: str) -> None:
    """The error has ``code``, points at the marked line, and mentions every word."""
    e = err.value
    assert e.code == code
    assert e.location is not None
    assert e.location.line == line_of(marker), str(e)
    assert e.location.file == __file__
    message = str(e)
    assert message.startswith(f"{code}: ")
    assert f"line {line_of(marker)}" in message
    assert "fix: " in message and f"see: ts explain {code}" in message
    for w in words:
        assert w in message, (w, message)


def test_reserved_work_name() -> None:
    with pytest.raises(ResourceDeclarationError) as err:

        class Bad(MemoryResource):
            @producer_work
            def commit(self, stage_info: Any) -> None:  # T001
                pass

    check(err, "TS-T001", "T001", "Bad.commit", "reserved")


def test_unknown_work_with_did_you_mean(src: Src, buf: Buf) -> None:
    @schedule
    def sched(s: Any, b: Any) -> None:
        b.stor(item=s.load())  # T002

    with pytest.raises(ScheduleError) as err:
        sched(src, buf)
    check(err, "TS-T002", "T002", "did you mean `store`", "schedule `sched`", "resource `buf`")


def test_non_work_attribute_is_rejected(src: Src) -> None:
    @schedule
    def sched(s: Any) -> None:
        s.pipeline_config  # T002b  # noqa: B018

    with pytest.raises(ScheduleError) as err:
        sched(src)
    check(err, "TS-T002", "T002b", "no work method `pipeline_config`")


def test_stale_token(src: Src, buf: Buf) -> None:
    @schedule
    def sched(s: Any, b: Any) -> None:
        first = s.load()
        s.load()
        b.store(item=first)  # T003

    with pytest.raises(ScheduleError) as err:
        sched(src, buf)
    check(err, "TS-T003", "T003", "overwrote", "src.load", "step #0")


def test_stale_through_other_method_writing_same_slot(src: Src, buf: Buf) -> None:
    @schedule
    def sched(s: Any, b: Any) -> None:
        first = s.load()
        s.load_with_flag()
        b.store(item=first)  # T003b

    with pytest.raises(ScheduleError) as err:
        sched(src, buf)
    check(err, "TS-T003", "T003b", "`item`")


def test_token_outside_its_block(src: Src, buf: Buf) -> None:
    @schedule
    def sched(s: Any, b: Any) -> None:
        with domain_loop(4):
            v = s.load()
        b.store(item=v)  # T004

    with pytest.raises(ScheduleError) as err:
        sched(src, buf)
    check(err, "TS-T004", "T004", "block that has ended")


def test_token_from_another_schedule(src: Src, buf: Buf) -> None:
    leaked: list[Any] = []

    @schedule
    def first(s: Any) -> None:
        leaked.append(s.load())

    @schedule
    def second(b: Any) -> None:
        b.store(item=leaked[0])  # T005

    first(src)
    with pytest.raises(ScheduleError) as err:
        second(buf)
    check(err, "TS-T005", "T005", "different schedule trace")


def test_token_without_output(src: Src, buf: Buf) -> None:
    @schedule
    def sched(s: Any, b: Any) -> None:
        b.store(item=s.peek())  # T006

    with pytest.raises(ScheduleError) as err:
        sched(src, buf)
    check(err, "TS-T006", "T006", "declares no output")


def test_result_of_a_producer_work_is_not_routed(src: Src, buf: Buf) -> None:
    @schedule
    def sched(s: Any, b: Any) -> None:
        done = b.store(item=s.load())
        b.store(item=done)  # T006c

    with pytest.raises(ScheduleError) as err:
        sched(src, buf)
    check(err, "TS-T006", "T006c", "a producer work", "returns nothing")


def test_single_token_cannot_be_unpacked(src: Src) -> None:
    @schedule
    def sched(s: Any) -> None:
        _a, _b = s.load()  # T006b

    with pytest.raises(ScheduleError) as err:
        sched(src)
    check(err, "TS-T006", "T006b", "cannot be unpacked")


def test_work_tile_loop_twice(queue: Queue) -> None:
    @schedule
    def sched(q: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
        with work_tile_loop(q):  # T007
            q.next_tile()

    with pytest.raises(ScheduleError) as err:
        sched(queue)
    check(err, "TS-T007", "T007", "a second time")


def test_work_tile_loop_not_outermost(queue: Queue) -> None:
    @schedule
    def sched(q: Any) -> None:
        with domain_loop(2), work_tile_loop(q):  # T007b
            q.next_tile()

    with pytest.raises(ScheduleError) as err:
        sched(queue)
    check(err, "TS-T007", "T007b", "inside another block")


def test_work_tile_loop_needs_a_queue(src: Src) -> None:
    @schedule
    def sched(s: Any) -> None:
        with work_tile_loop(s):  # T007c
            pass

    with pytest.raises(ScheduleError) as err:
        sched(src)
    check(err, "TS-T007", "T007c", "work-queue resource")


def test_iteration_predicate_outside_domain_loop(src: Src) -> None:
    @schedule
    def sched(s: Any) -> None:
        with when_true(Every(2)):  # T008
            s.load()

    with pytest.raises(ScheduleError) as err:
        sched(src)
    check(err, "TS-T008", "T008", "outside every domain_loop")


def test_loop_predicate_of_an_outer_loop(src: Src) -> None:
    @schedule
    def sched(s: Any) -> None:
        with domain_loop(4) as outer, domain_loop(2), outer.first_iter():  # T008b
            s.load()

    with pytest.raises(ScheduleError) as err:
        sched(src)
    check(err, "TS-T008", "T008b", "first_iter()")


def test_when_false_with_iteration_predicate(src: Src) -> None:
    @schedule
    def sched(s: Any) -> None:
        with domain_loop(4), when_false(Every(2)):  # T009
            s.load()

    with pytest.raises(ScheduleError) as err:
        sched(src)
    check(err, "TS-T009", "T009", "cannot be negated")


def test_nested_conditions(src: Src) -> None:
    @schedule
    def sched(s: Any) -> None:
        _, flag = s.load_with_flag()
        with domain_loop(4) as k, when_true(flag), k.every(2):  # T010
            s.load()

    with pytest.raises(ScheduleError) as err:
        sched(src)
    check(err, "TS-T010", "T010", "every(2, start=0)", "src.load_with_flag[flag]")


def test_skippable_without_skip_if(queue: Queue) -> None:
    @schedule
    def sched(q: Any) -> None:
        with work_tile_loop(q) as tiles, tiles.skippable():  # T011
            q.next_tile()

    with pytest.raises(ScheduleError) as err:
        sched(queue)
    check(err, "TS-T011", "T011", "without skip_if")


def test_skippable_outside_its_loop(queue: Queue) -> None:
    @schedule
    def sched(q: Any) -> None:
        with work_tile_loop(q, skip_if=Queue.is_empty) as tiles:
            q.next_tile()
        with tiles.skippable():  # T011b
            pass

    with pytest.raises(ScheduleError) as err:
        sched(queue)
    check(err, "TS-T011", "T011b", "outside its work_tile_loop")


@pytest.mark.parametrize(
    ("bounds", "words"),
    [((), "1 to 3 bounds"), ((0, 4, 1, 1), "1 to 3 bounds"), ((0, 4, 0), "step must not be 0")],
)
def test_bad_bounds(src: Src, bounds: tuple[int, ...], words: str) -> None:
    @schedule
    def sched(s: Any) -> None:
        with domain_loop(*bounds):  # T012
            s.load()

    with pytest.raises(ScheduleError) as err:
        sched(src)
    check(err, "TS-T012", "T012", words)


def test_bad_unroll(src: Src) -> None:
    @schedule
    def sched(s: Any) -> None:
        with domain_loop(4, unroll=0):  # T012b
            s.load()

    with pytest.raises(ScheduleError) as err:
        sched(src)
    check(err, "TS-T012", "T012b", "unroll=0")


def test_token_as_bound(src: Src) -> None:
    @schedule
    def sched(s: Any) -> None:
        n = s.load()
        with domain_loop(n):  # T012c
            s.load()

    with pytest.raises(ScheduleError) as err:
        sched(src)
    check(err, "TS-T012", "T012c", "get_domain")


def test_bound_method_is_rejected(src: Src) -> None:
    @schedule
    def sched(s: Any) -> None:
        with domain_loop(Domains().get_domain):  # T013
            s.load()

    with pytest.raises(ScheduleError) as err:
        sched(src)
    check(err, "TS-T013", "T013", "Domains.get_domain", "accessed on its class")


def test_lambda_bound_is_rejected(src: Src) -> None:
    @schedule
    def sched(s: Any) -> None:
        with domain_loop(lambda self, tile: 4):  # T013b
            s.load()

    with pytest.raises(ScheduleError) as err:
        sched(src)
    check(err, "TS-T013", "T013b", "<lambda>")


@pytest.mark.parametrize("cond", [True, 1, "flag"])
def test_condition_that_is_not_a_token(src: Src, cond: object) -> None:
    @schedule
    def sched(s: Any) -> None:
        with when_true(cond):  # T014
            s.load()

    with pytest.raises(ScheduleError) as err:
        sched(src)
    check(err, "TS-T014", "T014", "would not be evaluated at run time")


def test_python_if_on_a_token(src: Src) -> None:
    @schedule
    def sched(s: Any) -> None:
        _, flag = s.load_with_flag()
        if flag:  # T014b
            s.load()

    with pytest.raises(ScheduleError) as err:
        sched(src)
    check(err, "TS-T014", "T014b", "when_true(token)")


def test_construct_outside_schedule() -> None:
    with pytest.raises(ScheduleError) as err, domain_loop(4):  # T015
        pass
    check(err, "TS-T015", "T015", "outside a @schedule")


def test_argument_not_a_resource(src: Src) -> None:
    @schedule
    def sched(s: Any, n: Any) -> None:
        s.load()

    with pytest.raises(ScheduleError) as err:
        sched(src, 3)  # T016
    check(err, "TS-T016", "T016", "argument `n`", "not a MemoryResource")


def test_two_resources_with_one_name() -> None:
    @schedule
    def sched(a: Any, b: Any) -> None:
        a.load()

    with pytest.raises(ScheduleError) as err:
        sched(Src(name="x"), Src(name="x"))  # T016b
    check(err, "TS-T016", "T016b", "both named `x`")


@dataclasses.dataclass(kw_only=True)
class Sink(MemoryResource):
    """A resource whose work takes its parameters positionally, as the reference allows."""

    @producer_work
    def put(self, stage_info: Any, item: Any, scale: int = 1) -> None:
        del stage_info, item, scale


def test_positional_work_arguments_bind_in_order(src: Src) -> None:
    @schedule
    def sched(s: Any, d: Any) -> None:
        d.put(s.load(), 2)

    (step,) = [st for st in sched(src, Sink(name="d")).steps() if st.label == "put"]
    assert [r.argument for r in step.inputs] == ["item"]
    assert step.constants == (("scale", 2),)


def test_too_many_positional_work_arguments(src: Src) -> None:
    @schedule
    def sched(s: Any, d: Any) -> None:
        item = s.load()
        d.put(item, 2, 3)  # T017

    with pytest.raises(ScheduleError) as err:
        sched(src, Sink(name="d"))
    check(err, "TS-T017", "T017", "takes 2 positional arguments after stage_info but 3")


def test_keyword_only_parameter_passed_positionally(src: Src, buf: Buf) -> None:
    @schedule
    def sched(s: Any, b: Any) -> None:
        b.store(s.load())  # T017e

    with pytest.raises(ScheduleError) as err:
        sched(src, buf)
    check(err, "TS-T017", "T017e", "takes 0 positional arguments after stage_info but 1 was")


def test_work_argument_given_twice(src: Src) -> None:
    @schedule
    def sched(s: Any, d: Any) -> None:
        item = s.load()
        d.put(item, item=item)  # T017d

    with pytest.raises(ScheduleError) as err:
        sched(src, Sink(name="d"))
    check(err, "TS-T017", "T017d", "multiple values for `item`")


def test_unknown_keyword(src: Src, buf: Buf) -> None:
    @schedule
    def sched(s: Any, b: Any) -> None:
        b.store(itme=s.load())  # T017b

    with pytest.raises(ScheduleError) as err:
        sched(src, buf)
    check(err, "TS-T017", "T017b", "no parameter `itme`", "did you mean `item`")


def test_pipeline_op_with_arguments(buf: Buf) -> None:
    @schedule
    def sched(b: Any) -> None:
        b.acquire(1)  # T017c

    with pytest.raises(ScheduleError) as err:
        sched(buf)
    check(err, "TS-T017", "T017c", "takes no arguments")


def test_unassigned_task_local_slot() -> None:
    @dataclasses.dataclass(kw_only=True)
    class Forgetful(MemoryResource):
        value: TaskLocalVariable = TaskLocalVariable.uninitialized()

        @consumer_work(returns=value)
        def get(self, stage_info: Any) -> Any:
            return 0

    @schedule
    def sched(r: Any) -> None:
        r.get()

    with pytest.raises(ResourceDeclarationError) as err:
        sched(Forgetful(name="f"))
    assert err.value.code == "TS-T018"
    assert "self.value = TaskLocalVariable" in str(err.value)


def test_returns_unknown_slot() -> None:
    @dataclasses.dataclass(kw_only=True)
    class Typo(MemoryResource):
        value: TaskLocalVariable = TaskLocalVariable.uninitialized()

        def __post_init__(self) -> None:
            self.value = TaskLocalVariable(dtype="Int32", default=0)

        @consumer_work(returns="valeu")
        def get(self, stage_info: Any) -> Any:  # T019
            return 0

    @schedule
    def sched(r: Any) -> None:
        r.get()

    with pytest.raises(ScheduleError) as err:
        sched(Typo(name="t"))
    assert err.value.code == "TS-T019"
    assert err.value.location is not None
    # The error points at the method's definition, next to its returns=.
    assert err.value.location.line == line_of("T019")
    assert "no task-local variable `valeu` (it has: value)" in str(err.value)


def test_traceback_hides_internal_frames(src: Src, buf: Buf) -> None:
    @schedule
    def sched(s: Any, b: Any) -> None:
        b.stor()

    with pytest.raises(ScheduleError) as err:
        sched(src, buf)
    # The test frame and the public trace wrapper only: no builder or proxy internals.
    files = [str(entry.path) for entry in err.traceback]
    assert files[0] == __file__
    assert not any("_internal" in f for f in files)
    assert len(files) <= 2


def test_key_on_an_iteration_predicate(src: Src) -> None:
    @schedule
    def sched(s: Any) -> None:
        with domain_loop(4), when_true(Every(2), key="k"):  # T014c
            s.load()

    with pytest.raises(ScheduleError) as err:
        sched(src)
    check(err, "TS-T014", "T014c", "takes no key", "drop key=")
