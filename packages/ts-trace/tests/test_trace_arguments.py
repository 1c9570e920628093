"""Wrong arguments to the ts-trace constructors: a typed TS error at the user's line.

Regression tests of what the public-API fuzz test (tests/test_public_api_fuzz.py) found in this
layer, plus a small fuzz of the schedule constructs with random values.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ts_ir import entry
from ts_ir.errors import ArgumentError
from ts_trace import (
    MemoryResource,
    PlanError,
    ResourceDeclarationError,
    ScheduleError,
    TaskDeclaration,
    TaskLocalVariable,
    TraceError,
    build_plan,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
)
from ts_trace.catalog_entries import EXAMPLES_PRELUDE


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    @producer_work
    def load(self, stage_info: Any) -> None: ...


@schedule
def fill(r: Any) -> None:
    with domain_loop(4):
        r.acquire()
        r.load()
        r.commit()


def _line_in(err: TraceError, marker: str) -> None:
    assert err.location is not None and err.location.file == __file__, str(err)
    assert err.location.text.endswith(marker), str(err)
    assert f'File "{__file__}", line {err.location.line}' in str(err)


@pytest.mark.parametrize("value", [2.5, True, "2", None, 0, -1, 2**31, [2]])
def test_every_period_is_ts_t021(value: object) -> None:
    @schedule
    def sched(r: Any) -> None:
        with domain_loop(8) as loop, loop.every(cast(int, value)):  # every-line
            r.acquire()

    with pytest.raises(ScheduleError) as err:
        sched(Ring(name="r"))
    assert err.value.code == "TS-T021" and "period must be an int" in err.value.detail
    assert err.value.schedule == "sched"
    _line_in(err.value, "# every-line")


@pytest.mark.parametrize("bound", [2**31, -(2**31) - 1, b"8", range(4)])
def test_domain_loop_bounds_outside_int32_are_ts_t012(bound: object) -> None:
    @schedule
    def sched(r: Any) -> None:
        with domain_loop(bound):  # loop-line
            r.acquire()

    with pytest.raises(ScheduleError) as err:
        sched(Ring(name="r"))
    assert err.value.code == "TS-T012"
    _line_in(err.value, "# loop-line")


def test_schedule_called_with_the_wrong_arity_is_ts_t016() -> None:
    with pytest.raises(ScheduleError) as err:
        fill(Ring(name="r"), Ring(name="s"))  # arity-line
    assert err.value.code == "TS-T016" and "`fill(r)`" in err.value.detail
    _line_in(err.value, "# arity-line")


@pytest.mark.parametrize("target", [3, None, "fill", Ring])
def test_schedule_decorates_functions_only(target: object) -> None:
    with pytest.raises(ScheduleError) as err:
        schedule(cast(Any, target))  # decorate-line
    assert err.value.code == "TS-T022"
    _line_in(err.value, "# decorate-line")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"name": 3}, "name"),
        ({"name": None}, "name"),
        ({"is_barrier": "yes"}, "is_barrier"),
        ({"is_barrier": 1}, "is_barrier"),
        ({"pipeline_config": 4}, "pipeline_config"),
        ({"pipeline_config": "AsyncAsync"}, "pipeline_config"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_resource_fields_are_ts_t022(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ResourceDeclarationError) as err:
        Ring(**kwargs)  # resource-line
    assert err.value.code == "TS-T022" and field in err.value.detail
    _line_in(err.value, "# resource-line")


def test_positional_resource_argument_is_ts_t022() -> None:
    with pytest.raises(ResourceDeclarationError, match="TS-T022"):
        cast(Any, Ring)("r")


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: producer_work(work_attrs=cast(Any, "x")), "work_attrs must be a WorkAttr"),
        (lambda: consumer_work(work_attrs=cast(Any, 3)), "work_attrs=3 is not a supported"),
        (lambda: consumer_work(returns=cast(Any, 3)), "returns= takes task-local slot names"),
        (lambda: consumer_work(returns=""), "returns= takes task-local slot names"),
        (lambda: producer_work(cast(Any, 5)), "@producer_work decorates a method, got 5"),
        (lambda: producer_work(cast(Any, Ring)), "@producer_work decorates a method"),
    ],
)
def test_work_decorators_are_ts_t019(make: Callable[[], object], words: str) -> None:
    with pytest.raises(ResourceDeclarationError) as err:
        make()
    assert err.value.code == "TS-T019" and words in str(err.value)
    assert err.value.location is not None and err.value.location.file == __file__


@pytest.mark.parametrize(
    "kwargs",
    [
        {"dtype": None, "default": 0},
        {"dtype": 3, "default": 0},
        {"dtype": "", "default": 0},
        {"dtype": "Int32", "default_factory": 3},
        {"dtype": "Int32", "default": 0, "docs": 5},
        {"dtype": "Int32", "default": 0, "runtime_slot_name": ""},
    ],
)
def test_task_local_variable_is_ts_t018(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ResourceDeclarationError) as err:
        TaskLocalVariable(**kwargs)  # slot-line
    assert err.value.code == "TS-T018"
    _line_in(err.value, "# slot-line")


def test_uncalled_schedule_in_a_declaration_is_ts_t020() -> None:
    r = Ring(name="r")
    with pytest.raises(PlanError) as err:
        TaskDeclaration([], [r], 0, 1, cast(Any, fill))  # declaration-line
    assert err.value.code == "TS-T020" and "passed without calling it" in err.value.detail
    _line_in(err.value, "# declaration-line")


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"warp_idx": 0.5}, "warp_idx=0.5 must be an int"),
        ({"num_warps": True}, "num_warps=True must be an int"),
        ({"num_registers": "232"}, "num_registers='232'"),
        ({"name": 7}, "name=7 must be a str"),
        ({"src_resources": None}, "src_resources=None"),
    ],
)
def test_declaration_types_are_ts_t020(kwargs: dict[str, Any], words: str) -> None:
    r = Ring(name="r")
    args: dict[str, Any] = {
        "src_resources": [],
        "dst_resources": [r],
        "warp_idx": 0,
        "num_warps": 1,
        "schedule": fill(r),
        **kwargs,
    }
    with pytest.raises(PlanError) as err:
        TaskDeclaration(**args)
    assert err.value.code == "TS-T020" and words in err.value.detail


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: build_plan(cast(Any, None), {}), "tasks=None"),
        (lambda: build_plan([cast(Any, "task")], {}), "tasks lists 'task'"),
        (lambda: build_plan([], cast(Any, [])), "resource_dependency_graph=[]"),
        (lambda: build_plan([], {}, name=cast(Any, 3)), "name=3"),
        (lambda: build_plan([], {}, block_warps=2**31 - 1), "block_warps=2147483647"),
        (lambda: build_plan([], {}, smem_capacity=cast(Any, 1.5)), "smem_capacity=1.5"),
    ],
)
def test_build_plan_arguments_are_ts_t020(call: Callable[[], object], words: str) -> None:
    with pytest.raises(PlanError) as err:
        call()
    assert err.value.code == "TS-T020" and words in err.value.detail
    assert err.value.location is not None and err.value.location.file == __file__


def test_ts_i001_catalog_examples() -> None:
    """The ts-ir entry's examples run on the shared prelude: wrong raises, right traces."""
    e = entry("TS-I001")
    namespace: dict[str, Any] = {"__name__": "catalog_example_TS_I001"}
    exec(compile(EXAMPLES_PRELUDE, "<catalog prelude>", "exec", dont_inherit=True), namespace)
    with pytest.raises(ArgumentError) as err:
        exec(compile(e.wrong, "<catalog TS-I001>", "exec", dont_inherit=True), dict(namespace))
    assert str(err.value).startswith("TS-I001: ") and err.value.location.file == "<catalog TS-I001>"
    exec(compile(e.right, "<catalog TS-I001>", "exec", dont_inherit=True), dict(namespace))


VALUES = st.one_of(
    st.sampled_from([None, True, False, 2.5, math.nan, "8", "", -1, 0, 2**31 - 1, 2**31, [4]]),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
    st.builds(object),
)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(end=VALUES, step=VALUES, period=VALUES)
def test_schedule_constructs_never_raise_untyped(end: Any, step: Any, period: Any) -> None:
    @schedule
    def sched(r: Any) -> None:
        with domain_loop(0, end, step, unroll=None) as loop, loop.every(period):
            r.acquire()

    try:
        sched(Ring(name="r"))
    except TraceError as err:
        assert isinstance(err, ValueError) and err.code in {"TS-T012", "TS-T013", "TS-T021"}
        assert err.location is not None and err.location.file == __file__, str(err)
