"""Wrong arguments to the runtime's constructors: a typed TS-Rxxx error at the user's line.

Regression tests of what the public-API fuzz test (tests/test_public_api_fuzz.py) found in this
layer: each of these raised a bare ``TypeError`` / ``AttributeError`` /
``ZeroDivisionError``, was accepted silently, or hung, before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

import pytest

from ts_ir import CooperativeGroupSpec
from ts_runtime import (
    PipelineConfig,
    RuntimeConfigError,
    Task,
    TaskManager,
    TileSchedulerConfig,
    WorkQueue,
)
from ts_runtime.memory import SmemAllocation, SmemAllocator
from ts_trace import MemoryResource, consumer_work, domain_loop, producer_work, schedule

G = CooperativeGroupSpec("thread", 32)


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    @producer_work
    def load(self, stage_info: Any) -> None: ...

    @consumer_work
    def read(self, stage_info: Any) -> None: ...


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


def _async(**kw: Any) -> PipelineConfig:
    args: dict[str, Any] = {"num_stages": 2, "producer_group": G, "consumer_group": G, **kw}
    return PipelineConfig.create_async_async_pipeline_cfg(**args)


def _manager(**kw: Any) -> TaskManager:
    r = Ring(name="r", pipeline_config=_async())
    tasks = [
        Task([], [r], 0, 1, schedule=produce(r), name="p"),
        Task([r], [], 1, 1, schedule=consume(r), name="c"),
    ]
    args: dict[str, Any] = {"tasks": tasks, "graph": {r: []}, **kw}
    return TaskManager(args.pop("tasks"), args.pop("graph"), **args)


def _at_this_file(err: RuntimeConfigError) -> None:
    assert f'File "{__file__}", line' in str(err) or f"{__file__}:" in str(err), str(err)
    assert str(err).startswith(f"{err.code}: ")


CASES: list[tuple[str, Callable[[], object], str]] = [
    ("interleave 0", lambda: _async(interleave_stride=0), "interleave_stride"),
    ("interleave False", lambda: _async(interleave_stride=False), "interleave_stride"),
    ("interleave str", lambda: _async(interleave_stride="2"), "interleave_stride"),
    ("stages huge", lambda: _async(num_stages=2**31 - 1), "num_stages"),
    ("stages bool", lambda: _async(num_stages=True), "num_stages"),
    (
        "bytes huge",
        lambda: PipelineConfig.create_tma_async_pipeline_cfg(2, 2**31 - 1, G, G),
        "num_bytes",
    ),
    (
        "mcast int",
        lambda: PipelineConfig.create_tma_async_pipeline_cfg(2, 64, G, G, mcast_mode_mn=1),
        "mcast_mode_mn",
    ),
    ("signaling int", lambda: _async(producer_signaling_threads=3), "producer_signaling_threads"),
    ("signaling None", lambda: _async(consumer_signaling_threads=None), "consumer_signaling"),
    ("advance str", lambda: _async(advance_on_acquire="yes"), "advance_on_acquire"),
    ("layout str", lambda: _async(cta_layout_vmnk="1111"), "cta_layout_vmnk"),
    ("unknown option", lambda: _async(num_stagez=3), "num_stagez"),
    ("group size huge", lambda: _async(producer_group=CooperativeGroupSpec("warp", 2**20 - 1)), ""),
    ("Task src None", lambda: Task(cast(Any, None), [], 0, 1, schedule=produce(Ring())), "src"),
    (
        "Task name int",
        lambda: Task([], [Ring()], 0, 1, schedule=produce(Ring()), name=cast(Any, 3)),
        "name",
    ),
    ("Task uncalled", lambda: Task([], [], 0, 1, schedule=cast(Any, produce)), "without calling"),
    ("Task warps > 32", lambda: Task([], [Ring()], 30, 4, schedule=produce(Ring())), "num_warps"),
    (
        "Task debug int",
        lambda: Task([], [Ring()], 0, 1, schedule=produce(Ring()), debug_print=cast(Any, 1)),
        "debug_print",
    ),
    (
        "Task cta huge",
        lambda: Task([], [Ring()], 0, 1, schedule=produce(Ring()), run_only_on_cta_id=2**31 - 1),
        "run_only_on_cta_id",
    ),
    ("TM tasks None", lambda: _manager(tasks=None), "tasks"),
    ("TM tasks empty", lambda: _manager(tasks=[]), "at least one task"),
    ("TM graph list", lambda: _manager(graph=[]), "graph"),
    ("TM graph values", lambda: _manager(graph={Ring(name="r"): Ring(name="s")}), "graph"),
    ("TM block_warps huge", lambda: _manager(block_warps=2**31 - 1), "block_warps"),
    ("TM block_warps small", lambda: _manager(block_warps=1), "block_warps"),
    ("TM target int", lambda: _manager(target=90), "target"),
    ("TM capacity str", lambda: _manager(smem_capacity_bytes="232448"), "smem_capacity_bytes"),
    ("TM verbose str", lambda: _manager(verbose="no"), "verbose"),
    ("TM name None", lambda: _manager(name=None), "name"),
    ("TM allocator int", lambda: _manager(smem_allocator=3), "smem_allocator"),
    ("WorkQueue cfg", lambda: WorkQueue(cast(Any, "static")), "tile_scheduler_config"),
    (
        "counters None",
        lambda: TileSchedulerConfig.create_atomic_dynamic_persistent_tile_scheduler_params(
            None, None
        ),
        "counters",
    ),
    ("SmemAllocation size str", lambda: SmemAllocation("a", cast(Any, "16")), "size_bytes"),
    (
        "SmemAllocation count None",
        lambda: SmemAllocation("a", 0, 128, None, cast(Any, None)),
        "count",
    ),
    ("SmemAllocator.add int", lambda: SmemAllocator().add(cast(Any, 3)), "SmemAllocation"),
    ("SmemAllocator.add_resource", lambda: SmemAllocator().add_resource(3), "MemoryResource"),
    ("alias group str", lambda: SmemAllocator().add_alias_group(cast(Any, "ab")), "alias group"),
]


@pytest.mark.parametrize(("what", "call", "words"), CASES, ids=[c[0] for c in CASES])
def test_wrong_argument_is_a_typed_error_at_this_line(
    what: str, call: Callable[[], object], words: str
) -> None:
    if what == "group size huge":
        # The largest mbarrier arrival count is accepted; one more is not.
        call()
        with pytest.raises(RuntimeConfigError, match="producer_group"):
            _async(producer_group=SimpleNamespace(agent="Agent.Thread", size=2**20))
        return
    with pytest.raises(RuntimeConfigError) as err:
        call()
    assert words in str(err.value), str(err.value)
    _at_this_file(err.value)


def test_the_valid_baselines_build() -> None:
    assert isinstance(_manager(), TaskManager)
    assert _async(interleave_stride=2).max_interleave_stride == 2
    assert _async(producer_signaling_threads=4).producer_signaling_threads.has_task_warp_leader()
