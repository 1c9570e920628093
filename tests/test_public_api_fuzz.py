"""Every public constructor, fed wrong types and out-of-range values.

For each argument of each constructor, factory and schedule construct a kernel author calls (the
``task_scheduling`` facade, and the documented ``ts_ir`` / ``ts_trace`` constructors), every
other argument is kept valid and the one argument gets a random value: None, bools, floats
(NaN too), strings (numbers in strings too), ints from very negative to 2**63, lists, tuples,
dicts, bytes, plain objects, a ``@schedule`` function passed uncalled and an undecorated
function. The call must either

* succeed, and then the value was really valid (each case has an oracle), or
* raise a typed TS error: a ``ValueError`` carrying a catalog code (``TS-Xnnn``) whose message
  names the argument and the line of this file that made the call,

never a bare ``TypeError`` / ``AttributeError`` / ``KeyError`` / ``RecursionError`` from inside
TS, and never a hang (a per-call alarm). The examples are derandomized: CI sees the same
values every run.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
from task_scheduling.memory import (
    SmemAllocation,
    SmemAllocator,
    TensorMemory,
    TmemAllocation,
    TmemAllocator,
)
from task_scheduling.pipeline import CooperativeGroupSpec, PipelineSpec
from task_scheduling.plan import TaskDeclaration, build_plan
from task_scheduling.resources import (
    MemoryResource,
    PdlLaunchBarrier,
    PdlWaitBarrier,
    PipelineConfig,
    PipelineGroup,
    TaskLocalVariable,
    TileSchedulerConfig,
    WorkQueue,
)
from task_scheduling.task import Task
from task_scheduling.task_manager import TaskManager
from ts_ir import ConstBound, DynamicBound, RuntimeBound, SmemAllocationSpec

FILE = Path(__file__).name
INT32_MAX = 2**31 - 1
TIMEOUT_S = 10.0
G = CooperativeGroupSpec("thread", 32)


# -- the resources and schedules the cases start from ---------------------------------------


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    flag: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.flag = TaskLocalVariable(dtype="Boolean", default=False)

    @producer_work
    def load(self, stage_info: Any) -> None: ...

    @consumer_work(returns=flag)
    def read(self, stage_info: Any) -> Any: ...


@schedule
def produce(r: Any) -> None:
    with domain_loop(4):
        r.acquire()
        r.load()
        r.commit()


@schedule
def consume(r: Any) -> None:
    with domain_loop(4):
        r.wait()
        r.read()
        r.release()


def undecorated(r: Any) -> None:
    del r


class Opaque:
    """A plain object: no field a TS constructor looks for."""

    def __repr__(self) -> str:
        return "Opaque()"


# -- the values --------------------------------------------------------------------------------

NASTY: list[object] = [
    None,
    True,
    False,
    2.5,
    math.nan,
    math.inf,
    "8",
    "232",
    "",
    -1,
    0,
    1,
    INT32_MAX,
    2**31,
    2**63,
    [4],
    (1, 2),
    {},
    b"x",
    Opaque(),
    produce,
    undecorated,
]
"""Values every argument is tried with (the ones the issue names, and their neighbours)."""

VALUES = st.one_of(
    st.sampled_from(NASTY),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.integers(-(2**40), 2**40),
    st.integers(-4, 40),
    st.lists(st.integers(-2, 8), max_size=4),
    st.tuples(st.integers(-2, 8), st.integers(-2, 8)),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
    st.builds(Opaque),
)


def is_int(v: object, low: int = -(2**63), high: int = 2**63) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and low <= v <= high


def never(v: object) -> bool:
    del v
    return False


# -- the cases ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Case:
    """One argument of one public constructor.

    Attributes:
        name: ``Callee.argument`` (the test id).
        call: Calls the constructor with the value in that argument, every other one valid.
        valid: True for the values the constructor must accept.
        words: The message names the argument with one of these.
    """

    name: str
    call: Callable[[Any], object]
    valid: Callable[[Any], bool]
    words: tuple[str, ...]


CASES: list[Case] = []


def case(name: str, valid: Callable[[Any], bool], *words: str) -> Callable[[Any], Any]:
    def register(call: Callable[[Any], object]) -> Callable[[Any], object]:
        CASES.append(Case(name, call, valid, words or (name.rsplit(".", 1)[-1],)))
        return call

    return register


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


def _traced(body: Callable[[Any], None]) -> object:
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

    return _traced(body)


@case("domain_loop(start, end, step)", lambda v: _bound_ok(v) and v != 0, "step")
def _(v: Any) -> object:
    def body(r: Any) -> None:
        with domain_loop(0, 8, v):
            r.acquire()

    return _traced(body)


@case("domain_loop.unroll", lambda v: v is None or is_int(v, 1, INT32_MAX), "unroll")
def _(v: Any) -> object:
    def body(r: Any) -> None:
        with domain_loop(8, unroll=v):
            r.acquire()

    return _traced(body)


@case("loop.every(period)", lambda v: is_int(v, 1, INT32_MAX), "period")
def _(v: Any) -> object:
    def body(r: Any) -> None:
        with domain_loop(8) as loop, loop.every(v):
            r.acquire()

    return _traced(body)


@case("loop.every(start)", lambda v: is_int(v, 0, INT32_MAX), "start")
def _(v: Any) -> object:
    def body(r: Any) -> None:
        with domain_loop(8) as loop, loop.every(2, start=v):
            r.acquire()

    return _traced(body)


@case("when_true(cond)", never, "when_true")
def _(v: Any) -> object:
    def body(r: Any) -> None:
        with domain_loop(8), when_true(v):
            r.acquire()

    return _traced(body)


@case("when_false(cond)", never, "when_false")
def _(v: Any) -> object:
    def body(r: Any) -> None:
        with domain_loop(8), when_false(v):
            r.acquire()

    return _traced(body)


@case("when_true(key)", lambda v: True, "key")
def _(v: Any) -> object:
    def body(r: Any) -> None:
        flag = r.read()
        with when_true(flag, key=v):
            r.acquire()

    return _traced(body)


@case("work_tile_loop(wq)", never, "work_tile_loop")
def _(v: Any) -> object:
    def body(r: Any) -> None:
        with work_tile_loop(v):
            r.acquire()

    return _traced(body)


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


# ts_runtime / facade: PipelineConfig and its factories, Task, TaskManager, WorkQueue, SMEM


def _async(**kw: Any) -> object:
    args = {"num_stages": 2, "producer_group": G, "consumer_group": G, **kw}
    return PipelineConfig.create_async_async_pipeline_cfg(**args)


def _tma(**kw: Any) -> object:
    args = {"num_stages": 2, "num_bytes": 1024, "producer_group": G, "consumer_group": G, **kw}
    return PipelineConfig.create_tma_async_pipeline_cfg(**args)


@case("PipelineConfig.num_stages", lambda v: is_int(v, 1, 14528), "num_stages")
def _(v: Any) -> object:
    return _async(num_stages=v)


@case("PipelineConfig.num_bytes", lambda v: is_int(v, 1, 2**20 - 1), "num_bytes")
def _(v: Any) -> object:
    return _tma(num_bytes=v)


@case("PipelineConfig.producer_group", never, "producer_group")
def _(v: Any) -> object:
    return _async(producer_group=v)


@case("PipelineConfig.consumer_group", never, "consumer_group")
def _(v: Any) -> object:
    return PipelineConfig.create_tma_wgmma_pipeline_cfg(2, 1024, G, v)


@case(
    "PipelineConfig.producer_signaling_threads",
    lambda v: is_int(v) and v in (1, 4),
    "producer_signaling_threads",
)
def _(v: Any) -> object:
    return _async(producer_signaling_threads=v)


@case("PipelineConfig.interleave_stride", lambda v: is_int(v) and v in (1, 2), "interleave_stride")
def _(v: Any) -> object:
    return _async(interleave_stride=v)


@case("PipelineConfig.advance_on_acquire", lambda v: isinstance(v, bool), "advance_on_acquire")
def _(v: Any) -> object:
    return _async(advance_on_acquire=v)


@case("PipelineConfig.advance_on_wait", lambda v: isinstance(v, bool), "advance_on_wait")
def _(v: Any) -> object:
    return _tma(advance_on_wait=v)


@case("PipelineConfig.cta_layout_vmnk", lambda v: v is None, "cta_layout_vmnk")
def _(v: Any) -> object:
    return _tma(cta_layout_vmnk=v)


@case("PipelineConfig.mcast_mode_mn", lambda v: v == (1, 1), "mcast_mode_mn")
def _(v: Any) -> object:
    return PipelineConfig(2, 0, G, G, PipelineType.AsyncAsync, mcast_mode_mn=v)


@case(
    "PipelineConfig.pipeline_type",
    lambda v: isinstance(v, str) and v in [m.value for m in PipelineType],
    "pipeline_type",
)
def _(v: Any) -> object:
    return PipelineConfig(2, 16, G, G, v)


@case("PipelineConfig.barrier_ptr", lambda v: v is None, "barrier_ptr")
def _(v: Any) -> object:
    return _async(barrier_ptr=v)


def _task(**kw: Any) -> object:
    r = Ring(name="r")
    args: dict[str, Any] = {"schedule": produce(r), **kw}
    src = args.pop("src_resources", [])
    dst = args.pop("dst_resources", [r])
    warp = args.pop("warp_idx", 0)
    warps = args.pop("num_warps", 1)
    return Task(src, dst, warp, warps, **args)


@case("Task.src_resources", lambda v: isinstance(v, (list, tuple)) and not v, "src_resources")
def _(v: Any) -> object:
    return _task(src_resources=v)


@case("Task.warp_idx", lambda v: is_int(v, 0, 31), "warp_idx")
def _(v: Any) -> object:
    return _task(warp_idx=v)


@case("Task.num_warps", lambda v: is_int(v, 1, 32), "num_warps")
def _(v: Any) -> object:
    return _task(num_warps=v)


@case("Task.schedule", never, "schedule")
def _(v: Any) -> object:
    return _task(schedule=v)


@case(
    "Task.num_registers",
    lambda v: v is None or (is_int(v, 24, 256) and v % 8 == 0),
    "num_registers",
)
def _(v: Any) -> object:
    return _task(num_registers=v)


@case("Task.name", lambda v: isinstance(v, str), "name")
def _(v: Any) -> object:
    return _task(name=v)


@case("Task.debug_print", lambda v: isinstance(v, bool), "debug_print")
def _(v: Any) -> object:
    return _task(debug_print=v)


@case("Task.run_only_on_cta_id", lambda v: v is None or is_int(v, 0, 15), "run_only_on_cta_id")
def _(v: Any) -> object:
    return _task(run_only_on_cta_id=v)


def _manager(**kw: Any) -> object:
    r = Ring(name="r", pipeline_config=_async())
    tasks = [
        Task([], [r], 0, 1, schedule=produce(r), name="p"),
        Task([r], [], 1, 1, schedule=consume(r), name="c"),
    ]
    args: dict[str, Any] = {"tasks": tasks, "resource_dependency_graph": {r: []}, **kw}
    return TaskManager(args.pop("tasks"), args.pop("resource_dependency_graph"), **args)


@case("TaskManager.tasks", never, "tasks", "Task")
def _(v: Any) -> object:
    return _manager(tasks=v)


@case("TaskManager.resource_dependency_graph", never, "graph")
def _(v: Any) -> object:
    return _manager(resource_dependency_graph=v)


@case("TaskManager.smem_allocator", lambda v: v is None, "smem_allocator")
def _(v: Any) -> object:
    return _manager(smem_allocator=v)


@case("TaskManager.skip_validation", lambda v: isinstance(v, bool), "skip_validation")
def _(v: Any) -> object:
    return _manager(skip_validation=v)


@case(
    "TaskManager.smem_capacity_bytes",
    lambda v: v is None or is_int(v, 4096, INT32_MAX),
    "smem_capacity_bytes",
    "per CTA",  # a capacity too small for the kernel: TS-R004 (SMEM over budget)
)
def _(v: Any) -> object:
    return _manager(smem_capacity_bytes=v)


@case("TaskManager.name", lambda v: isinstance(v, str) and v != "", "name")
def _(v: Any) -> object:
    return _manager(name=v)


@case("TaskManager.block_warps", lambda v: v is None or is_int(v, 2, 32), "block_warps")
def _(v: Any) -> object:
    return _manager(block_warps=v)


@case("TaskManager.target", lambda v: v is None, "target")
def _(v: Any) -> object:
    return _manager(target=v)


@case("WorkQueue.tile_scheduler_config", never, "tile_scheduler_config")
def _(v: Any) -> object:
    return WorkQueue(v)


@case("TileSchedulerConfig.counters", lambda v: v is not None, "counters")
def _(v: Any) -> object:
    return TileSchedulerConfig.create_atomic_dynamic_persistent_tile_scheduler_params(None, v)


@case("SmemAllocation.name", lambda v: isinstance(v, str) and v != "", "name")
def _(v: Any) -> object:
    return SmemAllocation(v, 16)


@case("SmemAllocation.size_bytes", lambda v: is_int(v, 0, INT32_MAX), "size_bytes")
def _(v: Any) -> object:
    return SmemAllocation("a", v)


@case("SmemAllocation.count", lambda v: is_int(v, 0, INT32_MAX), "count")
def _(v: Any) -> object:
    return SmemAllocation("a", 16, 128, None, v)


@case("SmemAllocator.add", never, "SmemAllocation")
def _(v: Any) -> object:
    return SmemAllocator().add(v)


@case("SmemAllocator.add_resource", never, "MemoryResource")
def _(v: Any) -> object:
    return SmemAllocator().add_resource(v)


@case("SmemAllocator.add_alias_group", never, "alias group")
def _(v: Any) -> object:
    SmemAllocator().add_alias_group(v)
    return None


@case("TmemAllocation.name", lambda v: isinstance(v, str) and v != "", "name")
def _(v: Any) -> object:
    return TmemAllocation(v, 128)


@case("TmemAllocation.num_columns", lambda v: is_int(v, 1, 2**16), "num_columns")
def _(v: Any) -> object:
    return TmemAllocation("acc", v)


def _tmem_columns(v: object) -> bool:
    # tcgen05.alloc takes a power of two from 32 to 512 columns.
    return is_int(v, 32, 512) and isinstance(v, int) and v & (v - 1) == 0


@case("TensorMemory.num_columns", _tmem_columns, "num_columns")
def _(v: Any) -> object:
    return TensorMemory(name="tmem", num_columns=v, warp=0)


@case("TensorMemory.warp", lambda v: is_int(v, 0, 31), "warp")  # 32 warps at most
def _(v: Any) -> object:
    return TensorMemory(name="tmem", num_columns=128, warp=v)


@case("TensorMemory.free_warp", lambda v: v is None or is_int(v, 0, 31), "free_warp")
def _(v: Any) -> object:
    return TensorMemory(name="tmem", num_columns=128, warp=0, free_warp=v)


@case("TmemAllocator.add", never, "TmemAllocation")
def _(v: Any) -> object:
    return TmemAllocator().add(v)


@case("TmemAllocator.add_resource", never, "get_tmem_requirements")
def _(v: Any) -> object:
    return TmemAllocator().add_resource(v)


@case("TmemAllocator.add_alias_group", never, "alias group")
def _(v: Any) -> object:
    TmemAllocator().add_alias_group(v)
    return None


# -- the harness -------------------------------------------------------------------------------


class Hang(Exception):
    """A call that ran past TIMEOUT_S."""


@contextmanager
def alarm(seconds: float) -> Iterator[None]:
    def on_alarm(signum: int, frame: object) -> None:
        raise Hang(f"no answer in {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


_CODE = re.compile(r"TS-[A-Z]\d{3}")


def _lines_of(call: Callable[..., Any]) -> range:
    lines, first = inspect.getsourcelines(call)
    return range(first, first + len(lines))


def _call_lines(c: Case) -> set[int]:
    """The lines where this file calls TS for the case: the case's body and its helpers."""
    lines = set(_lines_of(c.call))
    for helper in (_async, _tma, _task, _manager, _traced):
        lines |= set(_lines_of(helper))
    return lines


def check(c: Case, value: object) -> None:
    """The contract: accepted only when valid; otherwise a typed error at this file's line."""
    try:
        with alarm(TIMEOUT_S):
            c.call(value)
    except Hang:
        pytest.fail(f"{c.name}({value!r}) hangs")
    except Exception as err:
        code = str(getattr(err, "code", ""))
        assert isinstance(err, ValueError) and _CODE.fullmatch(code), (
            f"{c.name}({value!r}) raised an untyped {type(err).__name__}: {err}"
        )
        message = str(err)
        assert message.startswith(code), message
        assert any(w in message for w in c.words), (
            f"{c.name}: the message names none of {c.words}: {message}"
        )
        found = re.search(rf'{re.escape(FILE)}", line (\d+)|{re.escape(FILE)}:(\d+)', message)
        assert found, f"{c.name}({value!r}): no line of {FILE} in the message:\n{message}"
        line = int(found.group(1) or found.group(2))
        assert line in _call_lines(c), f"{c.name}: line {line} is not the call's\n{message}"
        assert not c.valid(value), f"{c.name}({value!r}) is valid but was refused:\n{message}"
    else:
        assert c.valid(value), f"{c.name}({value!r}) was accepted"


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors],
)
@given(value=VALUES)
def test_random_values(c: Case, value: object) -> None:
    check(c, value)


@pytest.mark.parametrize("value", NASTY, ids=repr)
@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
def test_named_values(c: Case, value: object) -> None:
    check(c, value)


def test_valid_baselines_are_accepted() -> None:
    """The valid values each case starts from still build (the cases test what they say)."""
    assert isinstance(_manager(), TaskManager)
    assert isinstance(_task(), Task)
    assert isinstance(_async(), PipelineConfig)
    assert isinstance(_tma(), PipelineConfig)


# Names of the facade that are not constructors a kernel author calls with arguments (types,
# constants, predicates on guards, IR records that ts-verify reports when malformed), so no
# case fuzzes them.
NOT_FUZZED = {
    "FIRST_ITER",
    "LAST_ITER",
    "SKIPPABLE",
    "BlockGuard",
    "IterationPredicate",
    "ScheduleStage",
    "PipelineGroupMode",
    "guard_fires",
    "is_iteration_predicate",
    "is_loop_guard",
    "is_skippable_guard",
    "StageInfo",
    "ConditionalBlock",
    "DataFlowToken",
    "DomainLoop",
    "DomainLoopProxy",
    "Node",
    "ResourceProxy",
    "Route",
    "Schedule",
    "ScheduleError",
    "Step",
    "WorkTileLoop",
    "WorkTileLoopProxy",
    "KernelPlan",
    "PlanError",
    "ResourceSpec",
    "TaskSpec",
    "from_json",
    "to_json",
    "render_mermaid",
    "render_plan_table",
    "render_schedule",
    "ResourceContext",
    "pipeline",
    "enums",
    "plan",
    "resources",
    "schedule_builder",
}


def test_every_facade_name_is_fuzzed_or_listed() -> None:
    import task_scheduling.memory
    import task_scheduling.task
    import task_scheduling.task_manager

    modules = [
        task_scheduling,
        task_scheduling.enums,
        task_scheduling.resources,
        task_scheduling.schedule_builder,
        task_scheduling.pipeline,
        task_scheduling.plan,
        task_scheduling.memory,
        task_scheduling.task,
        task_scheduling.task_manager,
    ]
    exported = {name for m in modules for name in m.__all__}
    fuzzed = {re.split(r"[.(]", c.name)[0] for c in CASES}
    fuzzed |= {"domain_loop", "when_true", "when_false", "work_tile_loop", "schedule"}
    fuzzed |= {"producer_work", "consumer_work", "TaskLocalVariable", "MemoryResource"}
    missing = sorted(exported - fuzzed - NOT_FUZZED)
    assert not missing, f"public names without a fuzz case: {missing}"
