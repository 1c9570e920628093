"""Tests of ts_ir.enums."""

from __future__ import annotations

from typing import Any

import pytest

from ts_ir import (
    RESERVED_OP_NAMES,
    CooperativeGroupSpec,
    PipelineSpec,
    PipelineType,
    Role,
    ScheduleStage,
    SignalingThreads,
    WorkAttr,
)

S = ScheduleStage
ST = SignalingThreads


@pytest.mark.parametrize("stage", list(ScheduleStage))
def test_stage_role_follows_name(stage: ScheduleStage) -> None:
    expected = Role.PRODUCER if stage.name.startswith("Producer") else Role.CONSUMER
    assert stage.role is expected


def test_stage_classification() -> None:
    assert {s for s in S if s.is_work} == {
        S.ProducerWork,
        S.ProducerAuxWork,
        S.ConsumerWork,
        S.ConsumerAuxWork,
    }
    assert {s for s in S if s.is_aux_work} == {S.ProducerAuxWork, S.ConsumerAuxWork}
    assert {s for s in S if s.is_try} == {S.ProducerTryAcquire, S.ConsumerTryWait}
    assert all(s.is_pipeline_op != s.is_work for s in S)


def test_op_names_round_trip() -> None:
    expected = {
        S.ProducerTryAcquire: "try_acquire",
        S.ProducerAcquire: "acquire",
        S.ProducerCommit: "commit",
        S.ConsumerTryWait: "try_wait",
        S.ConsumerWait: "wait",
        S.ConsumerRelease: "release",
    }
    for stage in S:
        assert stage.op_name == expected.get(stage, "skip_stage" if stage.is_skip else "")
    for stage, name in expected.items():
        assert S.from_op_name(name) is stage
    assert frozenset(expected.values()) == RESERVED_OP_NAMES  # the reference's six only
    assert S.from_op_name("skip_stage") is S.ConsumerSkip
    assert {s for s in S if s.is_skip} == {S.ConsumerSkip}
    with pytest.raises(KeyError):
        S.from_op_name("work")


def test_stage_str_labels() -> None:
    assert str(S.ProducerAcquire) == "ProdAcq->"
    assert str(S.ProducerCommit) == "ProdCmt->"
    assert str(S.ConsumerWork) == "<-ConsWrk"
    assert str(S.ConsumerRelease) == "<-ConsRel"
    labels = [str(s) for s in S]
    assert len(set(labels)) == len(labels)
    for stage in S:
        if stage.role is Role.PRODUCER:
            assert str(stage).endswith("->")
        else:
            assert str(stage).startswith("<-")


def test_work_attr_valid_values() -> None:
    for value in (
        WorkAttr.NONE,
        WorkAttr.AUXILIARY,
        WorkAttr.ASYNC_READ,
        WorkAttr.ASYNC_WAIT_ALL,
        WorkAttr.ASYNC_WAIT_PRIOR,
        WorkAttr.GRID_WAIT,
        WorkAttr.GRID_LAUNCH,
        WorkAttr.TMEM_ALLOC,
        WorkAttr.TMEM_DEALLOC,
        0,
        1,
    ):
        assert WorkAttr.is_valid_combination(value)  # type: ignore[arg-type]
        WorkAttr.validate(value, "attrs")  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [3, 6, 48, 192, 256, -1, WorkAttr(3), True, "1", None, 1.0])
def test_work_attr_invalid_values(value: Any) -> None:
    assert not WorkAttr.is_valid_combination(value)


def test_work_attr_validate_errors() -> None:
    with pytest.raises(ValueError, match=r"attrs=3 is not a supported WorkAttr"):
        WorkAttr.validate(WorkAttr(3), "attrs")
    with pytest.raises(TypeError, match="attrs must be a WorkAttr, got bool"):
        WorkAttr.validate(True, "attrs")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got str"):
        WorkAttr.validate("x", "attrs")  # type: ignore[arg-type]


def test_work_attr_is_auxiliary() -> None:
    assert WorkAttr.AUXILIARY.is_auxiliary()
    assert not WorkAttr.NONE.is_auxiliary()


@pytest.mark.parametrize("value", [ST.All, ST.CtaLeader, ST.TaskWarpLeader, ST(6)])
def test_signaling_legal(value: SignalingThreads) -> None:
    assert ST.is_valid_combination(value)
    ST.validate(value, "producer_signaling")


@pytest.mark.parametrize(
    "value",
    [ST.All | ST.CtaLeader, ST.All | ST.TaskWarpLeader, ST(7), ST(0), ST(8), True, "All"],
)
def test_signaling_illegal(value: Any) -> None:
    assert not ST.is_valid_combination(value)
    with pytest.raises(ValueError, match=r"producer_signaling=.*All cannot be combined"):
        ST.validate(value, "producer_signaling")


def test_signaling_str_and_queries() -> None:
    both = ST.CtaLeader | ST.TaskWarpLeader
    assert str(both) == "CtaLeader|TaskWarpLeader"
    assert str(ST.All) == "All"
    assert both.has_cta_leader() and both.has_task_warp_leader()
    assert not ST.All.has_cta_leader()
    assert not ST.CtaLeader.has_task_warp_leader()


def test_pipeline_spec_rejects_all_with_leader() -> None:
    group = CooperativeGroupSpec("thread", 1)
    with pytest.raises(ValueError, match="consumer_signaling"):
        PipelineSpec(
            PipelineType.TmaAsync,
            2,
            0,
            group,
            group,
            consumer_signaling=ST.All | ST.CtaLeader,
        )


def test_pipeline_type_properties() -> None:
    assert PipelineType.TmaUmma.needs_blackwell
    assert PipelineType.ClcFetchAsync.needs_blackwell
    assert not PipelineType.TmaAsync.needs_blackwell
    assert PipelineType.TmaAsync.producer_is_tma
    assert not PipelineType.AsyncAsync.producer_is_tma
