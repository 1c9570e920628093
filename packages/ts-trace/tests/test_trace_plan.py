"""Kernel-plan assembly: resource and task specs, pipelines, SMEM needs, errors and examples."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import re
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, cast

import pytest
import trace_testkit
from trace_testkit import Buf, Queue, Src, pipeline

from ts_ir import (
    UNKNOWN_LOCATION,
    CooperativeGroupSpec,
    DependencyEdge,
    KernelPlan,
    PipelineSpec,
    PipelineType,
    ResourceSpec,
    Role,
    Schedule,
    SignalingThreads,
    SmemAllocationSpec,
    TaskSpec,
    WorkAttr,
    WorkMethodSpec,
    from_json,
    to_json,
)
from ts_trace import (
    MemoryResource,
    PlanError,
    TaskDeclaration,
    build_plan,
    consumer_work,
    domain_loop,
    pipeline_spec_of,
    producer_work,
    resource_spec_of,
    schedule,
    when_false,
    work_tile_loop,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "schedules"


def line_of(marker: str) -> int:
    """The line of this file that carries ``marker`` in a trailing comment."""
    lines = inspect.getsource(inspect.getmodule(line_of)).splitlines()  # type: ignore[arg-type]
    pattern = re.compile(rf"# {re.escape(marker)}$")
    hits = [i + 1 for i, text in enumerate(lines) if pattern.search(text)]
    assert len(hits) == 1, marker
    return hits[0]


def class_line_in_testkit(cls: type) -> int:
    """The ``class`` line of a testkit resource (after its decorator)."""
    lines = Path(trace_testkit.__file__).read_text().splitlines()
    return lines.index(f"class {cls.__name__}(MemoryResource):") + 1


class Float16:
    """A duck-typed DSL element type: only ``width`` is read."""

    width = 16


@dataclasses.dataclass(kw_only=True)
class Staged(MemoryResource):
    """A resource whose SMEM needs are whatever the test hands it."""

    allocations: list[Any] = dataclasses.field(default_factory=list)

    def get_smem_requirements(self) -> list[Any]:
        return list(self.allocations)

    @producer_work
    def fill(self, stage_info: Any) -> None:
        del stage_info

    @consumer_work
    def drain(self, stage_info: Any) -> None:
        del stage_info


@schedule
def producer(q: Any, s: Any, b: Any) -> None:
    with work_tile_loop(q):
        tile = q.next_tile()
        with domain_loop(4):
            item, flag = s.load_with_flag()
            b.acquire()
            with when_false(flag):
                b.store(item=item, scale=2)
            b.commit()
        with when_false(tile, key="last"):
            b.prefetch()


@schedule
def consumer(q: Any, b: Any) -> None:
    with work_tile_loop(q):
        q.next_tile()
        with domain_loop(4) as k:
            b.wait()
            with k.every(2, start=1):
                b.read()
            b.release()


def task_pair(
    queue: Queue, src: Src, buf: Buf
) -> tuple[TaskDeclaration, TaskDeclaration, Schedule, Schedule]:
    made = producer(queue, src, buf)
    drained = consumer(queue, buf)
    first = TaskDeclaration([queue, src], [buf], 0, 4, made, 40)  # decl-producer
    second = TaskDeclaration([queue, buf], [], 4, 8, drained, 232, name="drain")  # decl-drain
    return first, second, made, drained


# -- build_plan --------------------------------------------------------------------------------


def test_build_plan_assembles_resources_tasks_and_edges(src: Src, buf: Buf, queue: Queue) -> None:
    extra = Staged(name="extra", is_barrier=True)
    first, second, made, drained = task_pair(queue, src, buf)
    plan = build_plan(
        [first, second],
        {buf: [src, queue]},
        name="k",
        extra_resources=[extra, buf],
        smem_alias_groups=[[["a"], ["b", "c"]], [("d",)]],
        smem_capacity=1000,
        block_warps=16,
    )
    assert plan.name == "k"
    assert [r.name for r in plan.resources] == ["wq", "src", "buf", "extra"]
    extra_spec = plan.resource("extra")
    assert (extra_spec.kind, extra_spec.is_barrier, extra_spec.pipeline) == ("Staged", True, None)
    assert not plan.resource("buf").is_barrier
    assert plan.dependencies == (DependencyEdge("src", "buf"), DependencyEdge("wq", "buf"))
    assert plan.smem_alias_groups == ((("a",), ("b", "c")), (("d",),))
    assert plan.smem_capacity == 1000
    assert plan.block_warps == 16
    assert plan.num_warps == 16

    producer_loc, drain_loc = first.location, second.location
    assert plan.tasks == (
        TaskSpec("producer", 0, 4, 40, ("wq", "src"), ("buf",), made, producer_loc),
        TaskSpec("drain", 4, 8, 232, ("wq", "buf"), (), drained, drain_loc),
    )
    assert plan.task("producer").schedule is made
    assert plan.task("drain").warps == range(4, 12)
    assert plan.producers_of("buf") == (plan.task("producer"),)
    assert plan.consumers_of("buf") == (plan.task("drain"),)
    assert plan.upstreams_of("buf") == ("src", "wq")


def test_resource_specs_of_the_testkit(src: Src, buf: Buf, queue: Queue) -> None:
    first, second, _, _ = task_pair(queue, src, buf)
    plan = build_plan([first, second], {})
    p, c = Role.PRODUCER, Role.CONSUMER
    buf_spec = plan.resource("buf")
    assert dataclasses.replace(buf_spec, location=UNKNOWN_LOCATION) == ResourceSpec(
        name="buf",
        kind="Buf",
        pipeline=pipeline(),
        smem=(),
        work=(
            WorkMethodSpec("store", p, WorkAttr.NONE, (), ("item", "scale")),
            WorkMethodSpec("prefetch", p, WorkAttr.AUXILIARY, (), ()),
            WorkMethodSpec("read", c, WorkAttr.NONE, (), ()),
        ),
        is_work_queue=False,
        is_barrier=False,
        location=UNKNOWN_LOCATION,
    )
    assert plan.resource("src").work == (
        WorkMethodSpec("load", c, WorkAttr.NONE, ("item",), ()),
        WorkMethodSpec("load_with_flag", c, WorkAttr.NONE, ("item", "flag"), ()),
        WorkMethodSpec("peek", c, WorkAttr.NONE, (), ()),
    )
    assert plan.resource("src").pipeline is None
    wq = plan.resource("wq")
    assert (wq.kind, wq.is_work_queue, wq.work) == (
        "Queue",
        True,
        (WorkMethodSpec("next_tile", c, WorkAttr.NONE, ("tile",), ()),),
    )
    for cls, spec in ((Buf, buf_spec), (Src, plan.resource("src")), (Queue, wq)):
        assert spec.location.file == trace_testkit.__file__
        assert spec.location.line == class_line_in_testkit(cls)
        assert spec.location.text == f"class {cls.__name__}(MemoryResource):"
    assert resource_spec_of(buf) == buf_spec


def test_task_name_defaults_to_the_schedule_name(src: Src, buf: Buf, queue: Queue) -> None:
    first, _, _, _ = task_pair(queue, src, buf)
    assert first.name == ""
    plan = build_plan([first], {})
    assert [t.name for t in plan.tasks] == ["producer"]
    assert plan.tasks[0].schedule.name == "producer"


def test_task_declaration_location_is_where_it_was_written(
    src: Src, buf: Buf, queue: Queue
) -> None:
    first, second, _, _ = task_pair(queue, src, buf)
    assert first.location.file == __file__
    assert first.location.line == line_of("decl-producer")
    assert first.location.function == "task_pair"
    assert second.location.line == line_of("decl-drain")
    explicit = dataclasses.replace(first, name="renamed")
    # replace() re-runs __init__ but keeps the given location.
    assert explicit.location == first.location


def test_extra_resources_and_smem_are_carried_through() -> None:
    staged = Staged(
        name="staged",
        allocations=[
            SmemAllocationSpec("spec", 512, 256, "Int8", 512),
            SimpleNamespace(name="tiles", dtype=Float16, count=64),
            SimpleNamespace(name="sized", dtype=Float16, count=4, size_bytes=4096, alignment=1024),
            SimpleNamespace(name="raw", size_bytes=256),
            SimpleNamespace(name="bytes", dtype=SimpleNamespace(width=8), count=3),
        ],
    )
    plan = build_plan([], {}, extra_resources=[staged])
    (spec,) = plan.resources
    assert spec.smem == (
        SmemAllocationSpec("spec", 512, 256, "Int8", 512),
        SmemAllocationSpec("tiles", 128, 128, "Float16", 64),
        SmemAllocationSpec("sized", 4096, 1024, "Float16", 4),
        SmemAllocationSpec("raw", 256, 128, "", 1),
        SmemAllocationSpec("bytes", 3, 128, "namespace(width=8)", 3),
    )
    assert [a.name for a in plan.iter_smem()] == ["spec", "tiles", "sized", "raw", "bytes"]
    assert plan.tasks == ()
    assert spec.work == (
        WorkMethodSpec("fill", Role.PRODUCER),
        WorkMethodSpec("drain", Role.CONSUMER),
    )


def test_plan_survives_a_json_round_trip(src: Src, buf: Buf, queue: Queue) -> None:
    first, second, _, _ = task_pair(queue, src, buf)
    staged = Staged(
        name="staged",
        is_barrier=True,
        allocations=[SimpleNamespace(name="tiles", dtype=Float16, count=64)],
    )
    plan = build_plan(
        [first, second],
        {buf: [src, queue], staged: [buf]},
        name="roundtrip",
        extra_resources=[staged],
        smem_alias_groups=[[["tiles"], ["other"]]],
        smem_capacity=4096,
    )
    text = to_json(plan)
    back = from_json(text)
    assert isinstance(back, KernelPlan)
    assert back == plan
    assert back.task("producer").schedule.fingerprint() == first.schedule.fingerprint()
    assert to_json(back) == text


# -- pipeline_spec_of --------------------------------------------------------------------------


def config(**overrides: Any) -> SimpleNamespace:
    fields: dict[str, Any] = {
        "pipeline_type": PipelineType.TmaAsync,
        "num_stages": 4,
        "num_bytes": 32768,
        "producer_group": SimpleNamespace(agent="Agent.Thread", size=1),
        "consumer_group": SimpleNamespace(agent="Agent.Warp", size=4),
    }
    fields.update(overrides)
    return SimpleNamespace(**fields)


def test_pipeline_spec_passes_through_and_defaults() -> None:
    spec = pipeline(3)
    assert pipeline_spec_of(Buf(name="b", pipeline_config=spec)) is spec
    assert pipeline_spec_of(Buf(name="b")) is None


def test_pipeline_spec_from_a_duck_typed_config() -> None:
    res = Buf(
        name="tma",
        pipeline_config=config(
            producer_signaling_threads=SignalingThreads.CtaLeader,
            consumer_signaling_threads=SignalingThreads.TaskWarpLeader,
        ),
    )
    assert pipeline_spec_of(res) == PipelineSpec(
        PipelineType.TmaAsync,
        4,
        32768,
        CooperativeGroupSpec("thread", 1),
        CooperativeGroupSpec("warp", 4),
        SignalingThreads.CtaLeader,
        SignalingThreads.TaskWarpLeader,
    )
    assert resource_spec_of(res).pipeline == pipeline_spec_of(res)


def test_pipeline_spec_reads_names_and_group_specs() -> None:
    group = CooperativeGroupSpec("thread", 128)
    res = Buf(
        name="b",
        pipeline_config=config(
            pipeline_type="AsyncAsync", num_stages="2", producer_group=group, consumer_group=group
        ),
    )
    spec = pipeline_spec_of(res)
    assert spec == PipelineSpec(PipelineType.AsyncAsync, 2, 32768, group, group)
    assert spec is not None
    assert spec.producer_signaling is SignalingThreads.All
    assert spec.consumer_signaling is SignalingThreads.All


@pytest.mark.parametrize(
    ("cfg", "words"),
    [
        (SimpleNamespace(num_stages=2), "has no attribute 'pipeline_type'"),
        (config(pipeline_type="NoSuchPipeline"), "'NoSuchPipeline' is not a valid PipelineType"),
        (config(num_stages="many"), "invalid literal for int()"),
        (config(num_stages=0), "at least one stage"),
        (config(num_bytes=None), "int() argument must be"),
        (config(consumer_group=SimpleNamespace(agent="Agent.Thread", size=0)), "at least one"),
    ],
)
def test_unreadable_pipeline_config(cfg: SimpleNamespace, words: str) -> None:
    with pytest.raises(PlanError) as err:
        pipeline_spec_of(Buf(name="bad", pipeline_config=cfg))
    e = err.value
    assert e.code == "TS-T020"
    assert e.resource == "bad"
    assert e.detail.startswith("the pipeline_config of `bad` cannot be read: ")
    assert words in e.detail, e.detail
    assert e.fix == "build it with a PipelineConfig factory or as a ts_ir.PipelineSpec"


@pytest.mark.parametrize(
    ("side", "group"),
    [
        ("producer", SimpleNamespace(agent="Agent.Thread")),
        ("consumer", SimpleNamespace(agent="Agent.Thread", size="4")),
    ],
)
def test_pipeline_group_without_size(side: str, group: SimpleNamespace) -> None:
    cfg = config(**{f"{side}_group": group})
    with pytest.raises(PlanError) as err:
        pipeline_spec_of(Buf(name="g", pipeline_config=cfg))
    e = err.value
    assert e.code == "TS-T020"
    assert e.resource == "g"
    assert e.detail == f"the {side} group of `g`'s pipeline has no integer size ({group!r})"
    assert e.fix == "build the group as cutlass.pipeline.CooperativeGroup(Agent.Thread, n)"
    # The same error surfaces from build_plan.
    with pytest.raises(PlanError, match="has no integer size"):
        build_plan([], {}, extra_resources=[Buf(name="g", pipeline_config=cfg)])


# -- plan errors -------------------------------------------------------------------------------


def test_duplicate_task_names(src: Src, buf: Buf, queue: Queue) -> None:
    first, _, made, _ = task_pair(queue, src, buf)
    again = TaskDeclaration([queue, src], [buf], 4, 4, made)  # dup-task
    with pytest.raises(PlanError) as err:
        build_plan([first, again], {})
    e = err.value
    assert e.code == "TS-T020"
    assert e.detail == "two tasks are named `producer`"
    assert e.location is not None and e.location.line == line_of("dup-task")
    assert e.fix == "pass a unique name=... to every task"


def test_two_resources_with_one_name_in_tasks() -> None:
    a, b = Src(name="x"), Buf(name="x")

    @schedule
    def reader(s: Any) -> None:
        s.load()

    task = TaskDeclaration([a], [b], 0, 1, reader(a))  # same-name
    with pytest.raises(PlanError) as err:
        build_plan([task], {})
    e = err.value
    assert e.code == "TS-T020"
    assert e.resource == "x"
    assert e.detail == "two different resources are named `x` (task `reader`)"
    assert e.location is not None and e.location.line == line_of("same-name")


def test_two_resources_with_one_name_in_graph_or_extras(src: Src) -> None:
    other = Src(name="src")
    with pytest.raises(PlanError, match=r"named `src` \(the dependency graph\)"):
        build_plan([], {src: [other]})
    with pytest.raises(PlanError, match=r"named `src` \(extra_resources\)"):
        build_plan([], {src: []}, extra_resources=[other])


def test_non_resource_in_the_graph(src: Src, buf: Buf) -> None:
    with pytest.raises(PlanError) as err:
        build_plan([], cast(Any, {buf: [src, "gmem"]}))
    assert err.value.code == "TS-T020"
    assert err.value.detail == "the dependency graph lists 'gmem', which is not a MemoryResource"
    with pytest.raises(PlanError, match="extra_resources lists 3, which is not a MemoryResource"):
        build_plan([], {}, extra_resources=cast(Any, [3]))


def test_schedule_step_on_an_unlisted_resource(src: Src, buf: Buf) -> None:
    @schedule
    def writer(s: Any, b: Any) -> None:
        v = s.load()
        b.acquire()  # unlisted
        b.store(item=v)

    task = TaskDeclaration([src], [], 0, 4, writer(src, buf), name="w")
    with pytest.raises(PlanError) as err:
        build_plan([task], {})
    e = err.value
    assert e.code == "TS-T020"
    assert e.schedule == "writer"
    assert e.resource == "buf"
    assert e.step == "buf.acquire"
    assert e.detail == (
        "task `w` runs buf.acquire but does not list `buf` among its src_resources or dst_resources"
    )
    assert e.fix is not None
    assert "add buf to the task's src_resources" in e.fix and "dst_resources" in e.fix
    assert e.location is not None
    assert (e.location.file, e.location.line) == (__file__, line_of("unlisted"))
    assert f"line {line_of('unlisted')}" in str(e)


# -- examples ----------------------------------------------------------------------------------

EXAMPLE_TASKS = {
    "grid_stride_copy": ["copy"],
    "tma_copy": ["tma_load", "store"],
    "varlen_copy": ["loader", "writer"],
    "ws_gemm": ["load", "mma", "epilogue"],
}


def load_example(name: str) -> ModuleType:
    path = EXAMPLES / f"{name}.py"
    if not path.is_file():
        pytest.skip(f"{path} is not part of this checkout")
    pytest.importorskip(
        "task_scheduling", reason="the examples import the task_scheduling facade (tests all)"
    )
    module_name = f"ts_trace_example_{name}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses resolve annotations through it
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[module_name]
    return module


def test_every_example_is_covered() -> None:
    if not EXAMPLES.is_dir():
        pytest.skip("examples/ is not part of this checkout")
    assert sorted(p.stem for p in EXAMPLES.glob("*.py")) == sorted(EXAMPLE_TASKS)


@pytest.mark.parametrize("name", sorted(EXAMPLE_TASKS))
def test_example_builds_and_round_trips(name: str) -> None:
    module = load_example(name)
    plan = module.kernel()
    assert isinstance(plan, KernelPlan)
    assert plan.name == name
    assert [t.name for t in plan.tasks] == EXAMPLE_TASKS[name]
    for task in plan.tasks:
        listed = set(task.sources) | set(task.destinations)
        assert {s.resource for s in task.schedule.steps()} <= listed
        assert task.location.file == str(EXAMPLES / f"{name}.py")
    assert from_json(to_json(plan)) == plan
    # Building twice gives the same plan.
    assert module.kernel() == plan
