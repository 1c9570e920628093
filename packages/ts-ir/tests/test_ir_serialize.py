"""Tests of ts_ir.serialize: round-trip properties and format errors."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ts_ir import (
    FIRST_ITER,
    IR_VERSION,
    LAST_ITER,
    SKIPPABLE,
    UNKNOWN_LOCATION,
    ConditionalBlock,
    ConstBound,
    CooperativeGroupSpec,
    DependencyEdge,
    DomainLoop,
    DynamicBound,
    Every,
    IRFormatError,
    KernelPlan,
    Node,
    OpaqueCondition,
    PipelineSpec,
    PipelineType,
    ResourceSpec,
    Role,
    Route,
    RuntimeBound,
    Schedule,
    ScheduleStage,
    SignalingThreads,
    SmemAllocationSpec,
    SourceLocation,
    Step,
    TaskSpec,
    TileSchedulerType,
    WorkAttr,
    WorkMethodSpec,
    WorkTileLoop,
    from_json,
    plan_from_dict,
    plan_to_dict,
    schedule_from_dict,
    schedule_to_dict,
    to_json,
)

# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------

names = st.text(min_size=1, max_size=8)
idents = st.from_regex(r"[a-z_][a-z0-9_.]{0,7}", fullmatch=True)
opt_names = st.none() | names
small_ints = st.integers(-(2**40), 2**40)
locations = st.just(UNKNOWN_LOCATION) | st.builds(
    SourceLocation,
    file=names,
    line=st.integers(0, 10**6),
    text=st.text(max_size=20),
    function=st.text(max_size=8),
)
scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10)
)
work_attrs = st.sampled_from([WorkAttr.NONE, WorkAttr.AUXILIARY])
routes = st.builds(Route, argument=idents, source_step=st.integers(0, 1000), output=idents)

steps = st.builds(
    Step,
    id=st.integers(0, 10**6),
    resource=idents,
    stage=st.sampled_from(ScheduleStage),
    label=idents,
    attrs=work_attrs,
    inputs=st.lists(routes, max_size=3).map(tuple),
    outputs=st.lists(idents, max_size=3).map(tuple),
    constants=st.lists(st.tuples(idents, scalars), max_size=3).map(tuple),
    location=locations,
)
bounds = (
    st.builds(ConstBound, small_ints)
    | st.builds(RuntimeBound, names)
    | st.builds(DynamicBound, names)
)
guards = (
    st.builds(Every, st.integers(1, 2**31 - 1), st.integers(0, 2**31 - 1))
    | st.sampled_from([FIRST_ITER, LAST_ITER, SKIPPABLE])
    | st.builds(
        OpaqueCondition,
        key=names | st.integers(),
        negated=st.booleans(),
        resource=opt_names,
        method_label=opt_names,
        result_name=opt_names,
    )
)


def _containers(children: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    body = st.lists(children, max_size=4).map(tuple)
    return st.one_of(
        st.builds(
            DomainLoop,
            start=bounds,
            end=bounds,
            step=bounds,
            unroll=st.none() | st.integers(1, 16),
            body=body,
            location=locations,
        ),
        st.builds(
            WorkTileLoop, work_queue=idents, skip_if=opt_names, body=body, location=locations
        ),
        st.builds(ConditionalBlock, guard=guards, body=body, location=locations),
    )


nodes: st.SearchStrategy[Node] = st.recursive(steps, _containers, max_leaves=12)
schedules = st.builds(
    Schedule,
    name=names,
    resources=st.lists(idents, max_size=3).map(tuple),
    body=st.lists(nodes, max_size=4).map(tuple),
    location=locations,
)

signaling = st.sampled_from(
    [
        SignalingThreads.All,
        SignalingThreads.CtaLeader,
        SignalingThreads.TaskWarpLeader,
        SignalingThreads.CtaLeader | SignalingThreads.TaskWarpLeader,
    ]
)
groups = st.builds(CooperativeGroupSpec, st.sampled_from(["thread", "warp"]), st.integers(1, 512))
pipelines = st.builds(
    PipelineSpec,
    type=st.sampled_from(PipelineType),
    stages=st.integers(1, 16),
    bytes_per_stage=st.integers(0, 2**20),
    producer_group=groups,
    consumer_group=groups,
    producer_signaling=signaling,
    consumer_signaling=signaling,
)
smem_specs = st.builds(
    SmemAllocationSpec,
    name=names,
    size_bytes=st.integers(0, 2**20),
    alignment=st.sampled_from([1, 2, 8, 16, 128, 1024]),
    dtype_name=st.sampled_from(["", "bf16", "f32"]),
    count=st.integers(1, 4096),
)
work_methods = st.builds(
    WorkMethodSpec,
    label=idents,
    role=st.sampled_from(Role),
    attrs=work_attrs,
    outputs=st.lists(idents, max_size=2).map(tuple),
    inputs=st.lists(idents, max_size=2).map(tuple),
)
resources = st.builds(
    ResourceSpec,
    name=names,
    kind=names,
    pipeline=st.none() | pipelines,
    smem=st.lists(smem_specs, max_size=3).map(tuple),
    work=st.lists(work_methods, max_size=3).map(tuple),
    is_work_queue=st.booleans(),
    is_barrier=st.booleans(),
    location=locations,
)
tasks = st.builds(
    TaskSpec,
    name=names,
    warp_start=st.integers(0, 32),
    num_warps=st.integers(1, 16),
    num_registers=st.none() | st.integers(24, 256),
    sources=st.lists(names, max_size=3).map(tuple),
    destinations=st.lists(names, max_size=3).map(tuple),
    schedule=schedules,
    location=locations,
)
alias_groups = st.lists(
    st.lists(st.lists(names, max_size=3).map(tuple), min_size=2, max_size=3).map(tuple),
    max_size=2,
).map(tuple)
plans = st.builds(
    KernelPlan,
    name=names,
    resources=st.lists(resources, max_size=3).map(tuple),
    tasks=st.lists(tasks, max_size=3).map(tuple),
    dependencies=st.lists(st.builds(DependencyEdge, names, names), max_size=3).map(tuple),
    smem_alias_groups=alias_groups,
    smem_capacity=st.integers(0, 2**20),
    block_warps=st.none() | st.integers(1, 32),
)

_SLOW = settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])


def _constant_types(schedule: Schedule) -> list[list[type]]:
    return [[type(v) for _, v in s.constants] for s in schedule.steps()]


# --------------------------------------------------------------------------------------------
# Round-trip properties
# --------------------------------------------------------------------------------------------


@given(schedules)
def test_schedule_round_trip(schedule: Schedule) -> None:
    text = to_json(schedule)
    back = from_json(text)
    assert back == schedule
    assert isinstance(back, Schedule)
    # 1 == 1.0 == True, so == alone would not notice a type change.
    assert _constant_types(back) == _constant_types(schedule)
    assert to_json(back) == text
    assert schedule_from_dict(schedule_to_dict(schedule)) == schedule
    assert json.loads(to_json(schedule, indent=None)) == json.loads(text)


@_SLOW
@given(plans)
def test_plan_round_trip(plan: KernelPlan) -> None:
    text = to_json(plan)
    back = from_json(text)
    assert back == plan
    assert isinstance(back, KernelPlan)
    for t_back, t in zip(back.tasks, plan.tasks, strict=True):
        assert _constant_types(t_back.schedule) == _constant_types(t.schedule)
    assert plan_from_dict(plan_to_dict(plan)) == plan


def _unlocated(body: tuple[Node, ...]) -> tuple[Node, ...]:
    out: list[Node] = []
    for node in body:
        if isinstance(node, Step):
            out.append(dataclasses.replace(node, location=UNKNOWN_LOCATION))
        else:
            out.append(
                dataclasses.replace(node, body=_unlocated(node.body), location=UNKNOWN_LOCATION)
            )
    return tuple(out)


@given(schedules)
def test_without_locations(schedule: Schedule) -> None:
    data = schedule_to_dict(schedule, with_locations=False)
    expected = Schedule(schedule.name, schedule.resources, _unlocated(schedule.body))
    assert schedule_from_dict(data) == expected
    assert expected.fingerprint() == schedule.fingerprint()


def test_without_locations_omits_location_keys(sample_plan: KernelPlan) -> None:
    def keys(value: Any) -> set[str]:
        if isinstance(value, dict):
            return set(value) | {k for v in value.values() for k in keys(v)}
        if isinstance(value, list):
            return {k for v in value for k in keys(v)}
        return set()

    assert "location" in keys(plan_to_dict(sample_plan))
    assert "location" not in keys(plan_to_dict(sample_plan, with_locations=False))


def test_sample_plan_round_trip(sample_plan: KernelPlan) -> None:
    top = json.loads(to_json(sample_plan))
    assert top["ir_version"] == IR_VERSION == 1
    assert top["kind"] == "kernel_plan"
    assert from_json(to_json(sample_plan)) == sample_plan
    step = top["data"]["tasks"][1]["schedule"]["body"][0]["body"][0]["body"][3]
    assert step["stage"] == "ProducerWork"
    assert step["inputs"] == [["a", 5, "tile"]]
    assert step["constants"] == [["scale", 1.5]]


def test_smem_extra_round_trips_and_is_absent_when_empty(sample_plan: KernelPlan) -> None:
    assert "smem_extra" not in json.loads(to_json(sample_plan))["data"]
    scratch = SmemAllocationSpec("scratch", 4096, 1024, "Float32", 1024)
    plan = dataclasses.replace(sample_plan, smem_extra=(scratch,))
    assert json.loads(to_json(plan))["data"]["smem_extra"][0]["size_bytes"] == 4096
    assert from_json(to_json(plan)) == plan


def test_cta_gate_and_scheduler_round_trip_and_are_absent_when_unset(
    sample_plan: KernelPlan,
) -> None:
    data = json.loads(to_json(sample_plan))["data"]
    assert all("cta_rank" not in t for t in data["tasks"])
    assert all("scheduler" not in r for r in data["resources"])
    wq = dataclasses.replace(
        sample_plan.resource("wq"), scheduler=TileSchedulerType.AtomicDynamicPersistent
    )
    plan = dataclasses.replace(
        sample_plan,
        tasks=(dataclasses.replace(sample_plan.tasks[0], cta_rank=1), *sample_plan.tasks[1:]),
        resources=tuple(wq if r.name == "wq" else r for r in sample_plan.resources),
    )
    data = json.loads(to_json(plan))["data"]
    assert data["tasks"][0]["cta_rank"] == 1 and "cta_rank" not in data["tasks"][1]
    assert data["resources"][0]["scheduler"] == "AtomicDynamicPersistent"
    assert from_json(to_json(plan)) == plan
    # Fingerprints (the JSON without locations) tell the gated plan from the ungated one.
    assert plan_to_dict(plan, with_locations=False) != plan_to_dict(
        sample_plan, with_locations=False
    )
    bad = json.loads(to_json(plan))
    bad["data"]["tasks"][0]["cta_rank"] = "0"
    with pytest.raises(IRFormatError, match=r"tasks\[0\]\.cta_rank"):
        from_json(json.dumps(bad))
    bad = json.loads(to_json(plan))
    bad["data"]["resources"][0]["scheduler"] = "Hardware"
    with pytest.raises(IRFormatError, match=r"resources\[0\]\.scheduler"):
        from_json(json.dumps(bad))


def test_side_strides_round_trip_and_are_absent_for_one_stride(sample_plan: KernelPlan) -> None:
    ring = next(r for r in sample_plan.resources if r.pipeline is not None)
    assert ring.pipeline is not None
    assert "strides" not in json.dumps(json.loads(to_json(sample_plan))["data"]["resources"])
    sided = dataclasses.replace(
        ring.pipeline, stages=4, interleave=2, strides=(2, 2, 1, 1), bytes_per_stage=0
    )
    plan = dataclasses.replace(
        sample_plan,
        resources=tuple(
            dataclasses.replace(r, pipeline=sided) if r is ring else r
            for r in sample_plan.resources
        ),
    )
    doc = json.loads(to_json(plan))
    pipes = [r["pipeline"] for r in doc["data"]["resources"] if r["pipeline"]]
    assert [p.get("strides") for p in pipes] == [[2, 2, 1, 1]]
    assert from_json(to_json(plan)) == plan
    pipes[0]["strides"] = [2, 2, 1]
    with pytest.raises(IRFormatError, match="four strides"):
        from_json(json.dumps(doc))


def test_schedule_kind(producer_schedule: Schedule) -> None:
    assert json.loads(to_json(producer_schedule))["kind"] == "schedule"
    assert from_json(to_json(producer_schedule, indent=None)) == producer_schedule


# --------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------


def _one_step_schedule(*constants: tuple[str, object]) -> Schedule:
    step = Step(0, "r", ScheduleStage.ProducerWork, "w", constants=tuple(constants))
    return Schedule("s", ("r",), (step,))


def test_non_scalar_constants_decode_as_repr() -> None:
    schedule = _one_step_schedule(("shape", (128, 64)), ("d", {"a": 1}), ("r", range(3)))
    data = schedule_to_dict(schedule)
    assert data["body"][0]["constants"][0] == ["shape", {"repr": "(128, 64)"}]
    back = from_json(to_json(schedule))
    assert isinstance(back, Schedule)
    assert back.steps()[0].constants == (
        ("shape", "(128, 64)"),
        ("d", "{'a': 1}"),
        ("r", "range(0, 3)"),
    )


def test_non_finite_floats_stay_strict_json() -> None:
    schedule = _one_step_schedule(("a", math.inf), ("b", -math.inf), ("c", math.nan))
    text = to_json(schedule)
    assert "Infinity" not in text and "NaN" not in text
    back = from_json(text)
    assert isinstance(back, Schedule)
    values = [v for _, v in back.steps()[0].constants]
    assert values[:2] == [math.inf, -math.inf]
    assert isinstance(values[2], float) and math.isnan(values[2])


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


def _guarded(guard: Any) -> Schedule:
    return Schedule("s", (), (ConditionalBlock(guard, ()),))


@pytest.mark.parametrize("key", [("a", 1), 1.5, None, True, frozenset()])
def test_opaque_key_must_be_str_or_int(key: Any) -> None:
    with pytest.raises(IRFormatError, match=r"\$\.body\[0\]\.guard\.key: .*tracer normalises"):
        to_json(_guarded(OpaqueCondition(key)))


def test_opaque_resource_must_be_name() -> None:
    with pytest.raises(IRFormatError, match=r"guard\.resource: must be a resource name"):
        schedule_to_dict(_guarded(OpaqueCondition("k", resource=object())))


def test_opaque_error_in_plan_names_task(sample_plan: KernelPlan) -> None:
    task = dataclasses.replace(sample_plan.tasks[0], schedule=_guarded(OpaqueCondition(2.5)))
    plan = dataclasses.replace(sample_plan, tasks=(task,))
    with pytest.raises(IRFormatError, match="task 'load': "):
        plan_to_dict(plan)


def test_to_json_rejects_other_objects() -> None:
    with pytest.raises(TypeError, match="Schedule or KernelPlan, got int"):
        to_json(42)  # type: ignore[arg-type]


def _envelope(producer_schedule: Schedule) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(to_json(producer_schedule))
    return data


def test_version_mismatch(producer_schedule: Schedule) -> None:
    top = _envelope(producer_schedule)
    top["ir_version"] = 2
    with pytest.raises(IRFormatError, match="IR version 2 but this ts-ir reads IR version 1"):
        from_json(json.dumps(top))
    del top["ir_version"]
    with pytest.raises(IRFormatError, match=r"\$\.ir_version: missing"):
        from_json(json.dumps(top))
    top["ir_version"] = True
    with pytest.raises(IRFormatError, match="IR version True"):
        from_json(json.dumps(top))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", r"\$: expected an object, got list"),
        ('{"ir_version": 1, "kind": "graph", "data": {}}', r"\$\.kind: expected 'schedule'"),
        ('{"ir_version": 1, "kind": "schedule"}', r"\$\.data: expected an object, got null"),
        ('{"ir_version": 1, "kind": "schedule", "data": {}}', r"\$\.data\.name: missing"),
    ],
)
def test_bad_documents(text: str, message: str) -> None:
    with pytest.raises(IRFormatError, match=message):
        from_json(text)


def _step_path(top: dict[str, Any]) -> dict[str, Any]:
    step: dict[str, Any] = top["data"]["body"][0]["body"][0]["body"][1]
    return step


STEP = r"\$\.data\.body\[0\]\.body\[0\]\.body\[1\]"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("stage", "ProducerDance", STEP + r"\.stage: 'ProducerDance' is not valid"),
        ("id", True, STEP + r"\.id: expected int, got bool"),
        ("id", "1", STEP + r"\.id: expected int, got str"),
        ("attrs", 3, STEP + r"\.attrs: 3 is not a valid WorkAttr"),
        ("outputs", ["x", 3], STEP + r"\.outputs\[1\]: expected str, got int"),
        ("inputs", [["a", 1]], STEP + r"\.inputs\[0\]: expected \[argument, source_step"),
        ("constants", [["a", [1]]], STEP + r"\.constants\[0\]\[1\]: expected an object"),
        ("constants", [["a", {"x": 1}]], STEP + r"\.constants\[0\]\[1\]: expected a JSON scalar"),
        ("node", "jump", STEP + r"\.node: unknown node kind 'jump'"),
        ("location", {"file": "f"}, STEP + r"\.location\.line: missing"),
    ],
)
def test_bad_step_fields(producer_schedule: Schedule, field: str, value: Any, message: str) -> None:
    top = _envelope(producer_schedule)
    _step_path(top)[field] = value
    with pytest.raises(IRFormatError, match=message):
        from_json(json.dumps(top))


def test_missing_step_field(producer_schedule: Schedule) -> None:
    top = _envelope(producer_schedule)
    del _step_path(top)["resource"]
    with pytest.raises(IRFormatError, match=STEP + r"\.resource: missing required field"):
        from_json(json.dumps(top))


@pytest.mark.parametrize(
    ("guard", "message"),
    [
        ({"kind": "every", "period": 0, "start": 0}, r"guard: Every\.period must be in"),
        ({"kind": "maybe"}, r"guard\.kind: unknown guard kind 'maybe'"),
        ({"kind": "opaque", "negated": False}, r"guard\.key: missing"),
        ({"kind": "opaque", "key": [1], "negated": False}, r"guard\.key: expected str or int"),
    ],
)
def test_bad_guards(guard: dict[str, Any], message: str) -> None:
    data = schedule_to_dict(_guarded(FIRST_ITER))
    data["body"][0]["guard"] = guard
    with pytest.raises(IRFormatError, match=r"\$\.body\[0\]\." + message):
        schedule_from_dict(data)


def test_bad_bound() -> None:
    loop = DomainLoop(ConstBound(0), ConstBound(4), ConstBound(1), None, ())
    data = schedule_to_dict(Schedule("s", (), (loop,)))
    data["body"][0]["end"] = {"kind": "symbolic"}
    with pytest.raises(IRFormatError, match=r"\$\.body\[0\]\.end\.kind: unknown bound kind"):
        schedule_from_dict(data)


def test_bad_plan_fields(sample_plan: KernelPlan) -> None:
    def broken(edit: Any) -> dict[str, Any]:
        data = plan_to_dict(sample_plan)
        edit(data)
        return data

    cases: list[tuple[Any, str]] = [
        (
            lambda d: d["resources"][1]["pipeline"].update(consumer_signaling=3),
            r"\$\.resources\[1\]\.pipeline\.consumer_signaling: 3 is not a valid",
        ),
        (
            lambda d: d["resources"][1]["pipeline"].update(stages=0),
            r"\$\.resources\[1\]\.pipeline: a pipeline needs at least one stage",
        ),
        (
            lambda d: d["resources"][1]["pipeline"].update(type="Carrier"),
            r"pipeline\.type: 'Carrier' is not valid",
        ),
        (
            lambda d: d["resources"][1]["pipeline"]["producer_group"].update(agent="cta"),
            r"producer_group: agent must be 'thread' or 'warp'",
        ),
        (
            lambda d: d["resources"][1]["smem"][0].update(alignment=3),
            r"\$\.resources\[1\]\.smem\[0\]: .*alignment 3 is not a power of 2",
        ),
        (
            lambda d: d["resources"][1]["work"][0].update(role="middleman"),
            r"\$\.resources\[1\]\.work\[0\]\.role: 'middleman' is not valid",
        ),
        (
            lambda d: d["tasks"][0]["schedule"].update(body={}),
            r"\$\.tasks\[0\]\.schedule\.body: expected list, got dict",
        ),
        (
            lambda d: d.update(dependencies=[["ab"]]),
            r"\$\.dependencies\[0\]: expected \[upstream, downstream\]",
        ),
        (
            lambda d: d.update(smem_alias_groups=[[["a"], [1]]]),
            r"\$\.smem_alias_groups\[0\]\[1\]\[0\]: expected str",
        ),
        (lambda d: d.update(block_warps="8"), r"\$\.block_warps: expected int, got str"),
    ]
    for edit, message in cases:
        with pytest.raises(IRFormatError, match=message):
            plan_from_dict(broken(edit))


def test_error_type_is_value_error() -> None:
    assert issubclass(IRFormatError, ValueError)


def test_pipeline_cluster_round_trips_and_defaults() -> None:
    from ts_ir.serialize import _pipeline_from_dict, _pipeline_to_dict

    group = CooperativeGroupSpec("thread", 1)
    spec = PipelineSpec(PipelineType.TmaWgmma, 4, 1024, group, group, cluster_mn=(1, 2))
    d = _pipeline_to_dict(spec)
    assert d["cluster_mn"] == [1, 2]
    assert _pipeline_from_dict(d, "$") == spec
    del d["cluster_mn"]  # IR written before clusters existed
    assert _pipeline_from_dict(d, "$").cluster_mn == (1, 1)
    with pytest.raises(IRFormatError, match=r"\$\.cluster_mn: expected two ints"):
        _pipeline_from_dict({**d, "cluster_mn": [2]}, "$")
    with pytest.raises(ValueError, match="cluster_mn"):
        PipelineSpec(PipelineType.TmaWgmma, 4, 1024, group, group, cluster_mn=(0, 1))
