"""Malformed plans get typed diagnostics, never an internal exception or a hang."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ring_oracle import Gen, Loop, Ops
from ring_oracle_plans import to_plan

from ts_ir import CooperativeGroupSpec, KernelPlan, PipelineSpec, PipelineType
from ts_trace import domain_loop, schedule
from ts_trace.errors import ScheduleError
from ts_verify import verify


def _plan() -> KernelPlan:
    produce = Loop(4, (Ops((("r", "acquire"), ("r", "commit"))),))
    consume = Loop(4, (Ops((("r", "wait"), ("r", "release"))),))
    gen = Gen({"r": 2}, {"p": (produce,), "c": (consume,)})
    return to_plan(gen)


def _with_pipeline(plan: KernelPlan, **changes: Any) -> KernelPlan:
    res = plan.resources[0]
    assert res.pipeline is not None
    # Bypass __post_init__: a plan decoded or built elsewhere may carry any value.
    pipe = object.__new__(PipelineSpec)
    for f in dataclasses.fields(PipelineSpec):
        object.__setattr__(pipe, f.name, changes.get(f.name, getattr(res.pipeline, f.name)))
    return dataclasses.replace(plan, resources=(dataclasses.replace(res, pipeline=pipe),))


def _with_task(plan: KernelPlan, **changes: Any) -> KernelPlan:
    return dataclasses.replace(
        plan, tasks=(dataclasses.replace(plan.tasks[0], **changes), *plan.tasks[1:])
    )


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"stages": 2.5}, "TS-V214"),
        ({"stages": True}, "TS-V214"),
        ({"stages": "2"}, "TS-V214"),
        ({"bytes_per_stage": 1.5}, "TS-V214"),
    ],
)
def test_malformed_pipeline(change: dict[str, Any], code: str) -> None:
    report = verify(_with_pipeline(_plan(), **change))
    assert report.codes() == [code], report.as_text()
    assert report.diagnostics[0].resource == "r"


def test_tma_ring_without_bytes() -> None:
    one = CooperativeGroupSpec("warp", 1)
    plan = _with_pipeline(
        _plan(), type=PipelineType.TmaAsync, producer_group=one, bytes_per_stage=0
    )
    assert verify(plan).codes() == ["TS-V214"]


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"num_warps": 2.5}, "TS-V205"),
        ({"warp_start": None}, "TS-V205"),
        ({"num_registers": "232"}, "TS-V208"),
        ({"num_registers": 232.0}, "TS-V208"),
    ],
)
def test_malformed_task(change: dict[str, Any], code: str) -> None:
    report = verify(_with_task(_plan(), **change))
    assert report.codes() == [code], report.as_text()
    assert report.diagnostics[0].task == "p"


def test_schedule_passed_uncalled() -> None:
    @schedule
    def producer(r: Any) -> None: ...

    report = verify(_with_task(_plan(), schedule=producer))
    assert report.codes() == ["TS-V214"]
    assert "without calling it" in report.diagnostics[0].message


@pytest.mark.parametrize("bound", [2.5, "8", None, [4]])
def test_domain_loop_rejects_plain_non_ints(bound: object) -> None:
    @schedule
    def bad() -> None:
        with domain_loop(bound):  # the line the error names
            pass

    with pytest.raises(ScheduleError) as err:
        bad()
    assert err.value.code == "TS-T012"
    assert "the line the error names" in str(err.value)


_WRONG = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(allow_nan=True),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
    st.integers(min_value=-3, max_value=3),
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.sampled_from(["stages", "bytes_per_stage"]),
    st.sampled_from(["num_warps", "warp_start", "num_registers", "schedule"]),
    _WRONG,
    _WRONG,
)
def test_fuzz_wrong_types_never_crash(pipe_field: str, task_field: str, a: Any, b: Any) -> None:
    plan = _with_task(_with_pipeline(_plan(), **{pipe_field: a}), **{task_field: b})
    report = verify(plan)  # must not raise
    assert all(d.code.startswith("TS-V") for d in report.diagnostics)
