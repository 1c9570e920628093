"""Public-API fuzz cases: the ``ts_ir`` and ``ts_trace`` constructors and schedule constructs.

Called through the facade; see ``test_public_api_fuzz.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from api_fuzz_kit import (
    INT32_MAX,
    G,
    Opaque,
    Ring,
    case,
    is_int,
    never,
    produce,
    undecorated,
)

from task_scheduling import (
    Every,
    OpaqueCondition,
    WorkAttr,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    when_false,
    when_true,
    work_tile_loop,
)
from task_scheduling.enums import (
    PipelineGroupMode,
    PipelineType,
    SignalingThreads,
    TileSchedulerType,
)
from task_scheduling.pipeline import CooperativeGroupSpec, PipelineSpec
from task_scheduling.plan import TaskDeclaration, build_plan
from task_scheduling.resources import (
    PdlLaunchBarrier,
    PdlWaitBarrier,
    PipelineGroup,
    TaskLocalVariable,
    TileSchedulerConfig,
    WorkQueue,
)
from ts_ir import ConstBound, DynamicBound, RuntimeBound, SmemAllocationSpec

# ts_ir / facade: guards, specs, bounds, enumerations


@case("Every.period", lambda v: is_int(v, 1, INT32_MAX))
def _(v: Any) -> object:
    return Every(v)


@case("Every.start", lambda v: is_int(v, 0, INT32_MAX))
def _(v: Any) -> object:
    return Every(2, v)


@case("OpaqueCondition.key", lambda v: not isinstance(v, (list, dict)), "key")
def _(v: Any) -> object:
    return OpaqueCondition(v)


@case("OpaqueCondition.negated", lambda v: isinstance(v, bool))
def _(v: Any) -> object:
    return OpaqueCondition("k", v)


@case("OpaqueCondition.method_label", lambda v: v is None or isinstance(v, str))
def _(v: Any) -> object:
    return OpaqueCondition("k", method_label=v)


@case("CooperativeGroupSpec.agent", lambda v: v in ("thread", "warp"))
def _(v: Any) -> object:
    return CooperativeGroupSpec(v, 4)


@case("CooperativeGroupSpec.size", lambda v: is_int(v, 1, 2**20 - 1))
def _(v: Any) -> object:
    return CooperativeGroupSpec("thread", v)


@case("PipelineSpec.type", never)
def _(v: Any) -> object:
    return PipelineSpec(v, 2, 0, G, G)


@case("PipelineSpec.stages", lambda v: is_int(v, 1, INT32_MAX))
def _(v: Any) -> object:
    return PipelineSpec(PipelineType.AsyncAsync, v, 0, G, G)


@case("PipelineSpec.bytes_per_stage", lambda v: is_int(v, 0, INT32_MAX))
def _(v: Any) -> object:
    return PipelineSpec(PipelineType.AsyncAsync, 2, v, G, G)


@case("PipelineSpec.producer_group", never)
def _(v: Any) -> object:
    return PipelineSpec(PipelineType.AsyncAsync, 2, 0, v, G)


@case("PipelineSpec.interleave", lambda v: is_int(v) and v in (1, 2))
def _(v: Any) -> object:
    return PipelineSpec(PipelineType.AsyncAsync, 2, 0, G, G, interleave=v)


@case(
    "PipelineSpec.cluster_mn",
    lambda v: isinstance(v, (tuple, list)) and len(v) == 2 and all(is_int(x, 1) for x in v),
)
def _(v: Any) -> object:
    return PipelineSpec(PipelineType.AsyncAsync, 2, 0, G, G, cluster_mn=v)


@case("PipelineSpec.producer_signaling", lambda v: is_int(v) and v in (1, 2, 4, 6))
def _(v: Any) -> object:
    return PipelineSpec(PipelineType.AsyncAsync, 2, 0, G, G, producer_signaling=v)


@case("SmemAllocationSpec.name", lambda v: isinstance(v, str) and v != "")
def _(v: Any) -> object:
    return SmemAllocationSpec(v, 16)


@case("SmemAllocationSpec.size_bytes", lambda v: is_int(v, 0, INT32_MAX))
def _(v: Any) -> object:
    return SmemAllocationSpec("a", v)


@case("SmemAllocationSpec.alignment", lambda v: is_int(v, 1, INT32_MAX) and v & (v - 1) == 0)
def _(v: Any) -> object:
    return SmemAllocationSpec("a", 16, v)


@case("ConstBound.value", is_int)
def _(v: Any) -> object:
    return ConstBound(v)


@case("RuntimeBound.name", lambda v: isinstance(v, str) and v != "")
def _(v: Any) -> object:
    return RuntimeBound(v)


@case("DynamicBound.getter", lambda v: isinstance(v, str) and v != "")
def _(v: Any) -> object:
    return DynamicBound(v)


def _member_value(enum_type: Any) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, str) and v in [m.value for m in enum_type]


for _enum in (PipelineType, TileSchedulerType):

    @case(f"{_enum.__name__}(value)", _member_value(_enum), _enum.__name__)
    def _(v: Any, e: Any = _enum) -> object:
        return e(v)


for _flag in (WorkAttr, SignalingThreads):
    # Python's own flag semantics for ints (any int is a combination, and True == 1 finds the
    # member of value 1); TS-I001 otherwise.
    @case(f"{_flag.__name__}(value)", lambda v: isinstance(v, int), _flag.__name__)
    def _(v: Any, f: Any = _flag) -> object:
        return f(v)


@case("WorkAttr.validate", lambda v: is_int(v) and v in (0, 1, 2, 4, 8, 16, 32), "attrs")
def _(v: Any) -> object:
    WorkAttr.validate(v, "attrs")
    return None


# ts_trace / facade: work decorators, task-local variables, resources, schedules


def _method(self: Any, stage_info: Any) -> None:
    del self, stage_info


@case(
    "producer_work.method",
    lambda v: v is None or v is produce or v is undecorated,  # None: the factory form
    "producer_work",
)
def _(v: Any) -> object:
    return producer_work(v)


@case("producer_work.work_attrs", lambda v: is_int(v) and v in (0, 1, 2, 4, 8), "work_attrs")
def _(v: Any) -> object:
    return producer_work(work_attrs=v)(_method)


@case("consumer_work.work_attrs", lambda v: is_int(v) and v in (0, 1, 2, 4, 8), "work_attrs")
def _(v: Any) -> object:
    return consumer_work(work_attrs=v)


@case(
    "consumer_work.returns",
    lambda v: (
        v is None
        or (isinstance(v, str) and v != "")
        or (isinstance(v, (list, tuple)) and all(isinstance(x, str) and x for x in v))
    ),
    "returns",
)
def _(v: Any) -> object:
    return consumer_work(returns=v)


@case("TaskLocalVariable.dtype", lambda v: isinstance(v, str) and v.strip() != "", "dtype")
def _(v: Any) -> object:
    return TaskLocalVariable(dtype=v, default=0)


@case("TaskLocalVariable.default_factory", lambda v: callable(v), "default_factory")
def _(v: Any) -> object:
    return TaskLocalVariable(dtype="Int32", default_factory=v)


@case("TaskLocalVariable.docs", lambda v: v is None or (isinstance(v, str) and v != ""))
def _(v: Any) -> object:
    return TaskLocalVariable(dtype="Int32", default=0, docs=v)


@case(
    "TaskLocalVariable.runtime_slot_name", lambda v: v is None or (isinstance(v, str) and v != "")
)
def _(v: Any) -> object:
    return TaskLocalVariable(dtype="Int32", default=0, runtime_slot_name=v)


@case("MemoryResource.name", lambda v: isinstance(v, str))
def _(v: Any) -> object:
    return Ring(name=v)


@case("MemoryResource.is_barrier", lambda v: isinstance(v, bool))
def _(v: Any) -> object:
    return Ring(name="r", is_barrier=v)


@case("MemoryResource.pipeline_config", lambda v: v is None)
def _(v: Any) -> object:
    return Ring(name="r", pipeline_config=v)


@case("PdlWaitBarrier.name", lambda v: isinstance(v, str))
def _(v: Any) -> object:
    return PdlWaitBarrier(name=v)


@case("PdlLaunchBarrier.is_barrier", lambda v: isinstance(v, bool))
def _(v: Any) -> object:
    return PdlLaunchBarrier(name="launch", is_barrier=v)


@case("PipelineGroup.mode", lambda v: isinstance(v, PipelineGroupMode))
def _(v: Any) -> object:
    return PipelineGroup(name="g", members=[Ring(name="ga"), Ring(name="gb")], mode=v)


@case("MemoryResource(positional)", never, "Ring")
def _(v: Any) -> object:
    return Ring(v)  # type: ignore[call-arg]


@case("schedule.fn", lambda v: v is produce or v is undecorated, "@schedule")
def _(v: Any) -> object:
    return schedule(v)


@case("schedule(resource)", never, "produce")
def _(v: Any) -> object:
    return produce(v)


@case("schedule(extra argument)", never, "produce")
def _(v: Any) -> object:
    return produce(Ring(name="r"), v)


def traced(body: Callable[[Any], None]) -> object:
    return schedule(body)(Ring(name="r"))


def _bound_ok(v: object) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return -(2**31) <= v <= INT32_MAX
    return isinstance(v, Opaque) or (isinstance(v, str) and v.isidentifier())


@case("domain_loop(end)", _bound_ok, "end bound")
def _(v: Any) -> object:
    def body(r: Any) -> None:
        with domain_loop(v):
            r.acquire()

    return traced(body)


@case("domain_loop(start, end, step)", lambda v: _bound_ok(v) and v != 0, "step")
def _(v: Any) -> object:
    def body(r: Any) -> None:
        with domain_loop(0, 8, v):
            r.acquire()

    return traced(body)


@case("domain_loop.unroll", lambda v: v is None or is_int(v, 1, INT32_MAX), "unroll")
def _(v: Any) -> object:
    def body(r: Any) -> None:
        with domain_loop(8, unroll=v):
            r.acquire()

    return traced(body)


@case("loop.every(period)", lambda v: is_int(v, 1, INT32_MAX), "period")
def _(v: Any) -> object:
    def body(r: Any) -> None:
        with domain_loop(8) as loop, loop.every(v):
            r.acquire()

    return traced(body)


@case("loop.every(start)", lambda v: is_int(v, 0, INT32_MAX), "start")
def _(v: Any) -> object:
    def body(r: Any) -> None:
        with domain_loop(8) as loop, loop.every(2, start=v):
            r.acquire()

    return traced(body)


@case("when_true(cond)", never, "when_true")
def _(v: Any) -> object:
    def body(r: Any) -> None:
        with domain_loop(8), when_true(v):
            r.acquire()

    return traced(body)


@case("when_false(cond)", never, "when_false")
def _(v: Any) -> object:
    def body(r: Any) -> None:
        with domain_loop(8), when_false(v):
            r.acquire()

    return traced(body)


@case("when_true(key)", lambda v: True, "key")
def _(v: Any) -> object:
    def body(r: Any) -> None:
        flag = r.read()
        with when_true(flag, key=v):
            r.acquire()

    return traced(body)


@case("work_tile_loop(wq)", never, "work_tile_loop")
def _(v: Any) -> object:
    def body(r: Any) -> None:
        with work_tile_loop(v):
            r.acquire()

    return traced(body)


@case("work_tile_loop.skip_if", lambda v: v is None or callable(v), "skip_if")
def _(v: Any) -> object:
    wq = WorkQueue(TileSchedulerConfig.create_static_persistent_tile_scheduler_params(None))

    def body(q: Any) -> None:
        with work_tile_loop(q, skip_if=v):
            q.get_and_advance_work_tile()

    return schedule(body)(wq)


@case("TaskDeclaration.schedule", never, "schedule")
def _(v: Any) -> object:
    return TaskDeclaration([], [], 0, 1, v)


@case("TaskDeclaration.warp_idx", is_int, "warp_idx")
def _(v: Any) -> object:
    r = Ring(name="r")
    return TaskDeclaration([], [r], v, 1, produce(r))


@case("build_plan.tasks", lambda v: isinstance(v, (list, tuple)) and not v, "tasks")
def _(v: Any) -> object:
    return build_plan(v, {})


@case("build_plan.resource_dependency_graph", lambda v: v == {}, "resource_dependency_graph")
def _(v: Any) -> object:
    return build_plan([], v)


@case("build_plan.block_warps", lambda v: v is None or is_int(v, 1, 32), "block_warps")
def _(v: Any) -> object:
    r = Ring(name="r")
    return build_plan([TaskDeclaration([], [r], 0, 1, produce(r))], {r: []}, block_warps=v)
