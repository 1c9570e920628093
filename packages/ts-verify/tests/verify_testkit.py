"""Resources, pipelines and plan builders shared by the ts-verify tests (no CuTe DSL, no GPU).

Schedules are written with ``ts_trace`` exactly as kernel authors write them, so the source
lines the verifier reports are lines of the test files. Helpers:

* resources: :class:`Src` (global input whose consumer work returns task-local tokens),
  :class:`Ring` (a pipelined buffer with producer, consumer and auxiliary work), :class:`Dst`
  (global output), :class:`Queue` (a work queue), :class:`Tasks` (per-tile domain getters);
* pipelines: :func:`async_pipe` and :func:`tma_pipe`;
* :func:`task` (a ``TaskDeclaration`` that records the caller's line) and :func:`plan_of`
  (``build_plan`` with a dependency graph derived from the tasks unless one is given);
* the standard producer / consumer / relay schedules the broken plans pair with;
* :func:`marker_line`, which finds the line of a test file that carries a marker comment.
"""

from __future__ import annotations

import dataclasses
import linecache
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from ts_ir import (
    CooperativeGroupSpec,
    KernelPlan,
    PipelineSpec,
    PipelineType,
    Schedule,
    SignalingThreads,
    SmemAllocationSpec,
    SourceLocation,
    WorkAttr,
)
from ts_trace import (
    MemoryResource,
    TaskDeclaration,
    TaskLocalVariable,
    build_plan,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    work_tile_loop,
)

__all__ = [
    "Dst",
    "Queue",
    "Ring",
    "RuntimeInt",
    "Src",
    "Tasks",
    "async_pipe",
    "consume",
    "marker_line",
    "plan_of",
    "produce",
    "relay",
    "ring",
    "task",
    "tma_pipe",
]


# -- resources --------------------------------------------------------------------------------
@dataclasses.dataclass(kw_only=True)
class Src(MemoryResource):
    """Global input: consumer work returning one task-local token, or a value and a flag."""

    item: TaskLocalVariable = TaskLocalVariable.uninitialized()
    flag: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.item = TaskLocalVariable(dtype="Int32", default=0)
        self.flag = TaskLocalVariable(dtype="Boolean", default=False)

    @consumer_work(returns=item)
    def load(self, stage_info: Any) -> Any:
        return stage_info

    @consumer_work(returns=(item, flag))
    def load_flag(self, stage_info: Any) -> Any:
        return stage_info, True


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    """A pipelined SMEM buffer: producer work, consumer work, auxiliary work on both sides."""

    view: TaskLocalVariable = TaskLocalVariable.uninitialized()
    smem_bytes: int = 0

    def __post_init__(self) -> None:
        self.view = TaskLocalVariable(dtype="SmemTile", default=None)

    def get_smem_requirements(self) -> list[Any]:
        if not self.smem_bytes:
            return []
        return [SmemAllocationSpec(f"{self.name}.tiles", self.smem_bytes, 1024, "Float16")]

    @producer_work
    def store(self, stage_info: Any, *, item: Any = None) -> None:
        """Write a stage (optionally from a routed value)."""

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    def prefetch(self, stage_info: Any) -> None:
        """Descriptor prefetch: moves no payload."""

    @consumer_work(returns=view)
    def read(self, stage_info: Any) -> Any:
        return stage_info

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def peek(self, stage_info: Any) -> None:
        """Bookkeeping that reads no payload."""


@dataclasses.dataclass(kw_only=True)
class Dst(MemoryResource):
    """Global output without a pipeline."""

    @producer_work
    def write(self, stage_info: Any, *, item: Any = None) -> None:
        """Write one element."""


@dataclasses.dataclass(kw_only=True)
class Queue(MemoryResource):
    """The persistent work queue."""

    is_work_queue: ClassVar[bool] = True
    tile: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.tile = TaskLocalVariable(dtype="WorkTileInfo", default=None)

    def past_end(self, work_tile: Any) -> bool:
        """Skip predicate: tiles beyond the problem."""
        return bool(work_tile is None)

    @consumer_work(returns=tile)
    def next_tile(self, stage_info: Any) -> Any:
        return stage_info


class Tasks:
    """Stand-in for a Task subclass: per-tile domains computed by methods."""

    def get_domain(self, work_tile_coord: Any) -> Any:
        """Blocks of the tile (may be 0)."""
        return work_tile_coord

    def k_blocks(self, work_tile_coord: Any) -> Any:
        """A second, independent per-tile domain."""
        return work_tile_coord


class RuntimeInt:
    """A runtime integer (a DSL value computed in the kernel): a ``RuntimeBound``."""


# -- pipelines ----------------------------------------------------------------------------------
def async_pipe(
    stages: int = 2,
    producers: int = 128,
    consumers: int = 128,
    *,
    producer_signaling: SignalingThreads = SignalingThreads.All,
    consumer_signaling: SignalingThreads = SignalingThreads.All,
) -> PipelineSpec:
    """An AsyncAsync pipeline whose groups count threads (128: one 4-warp task per side)."""
    return PipelineSpec(
        PipelineType.AsyncAsync,
        stages,
        0,
        CooperativeGroupSpec("thread", producers),
        CooperativeGroupSpec("thread", consumers),
        producer_signaling,
        consumer_signaling,
    )


def tma_pipe(stages: int = 4, nbytes: int = 16384, consumers: int = 128) -> PipelineSpec:
    """A TmaAsync pipeline: one elected producer thread arms the stage with ``nbytes``."""
    return PipelineSpec(
        PipelineType.TmaAsync,
        stages,
        nbytes,
        CooperativeGroupSpec("thread", 1),
        CooperativeGroupSpec("thread", consumers),
    )


def ring(name: str, stages: int = 2, spec: PipelineSpec | None = None, smem: int = 0) -> Ring:
    """A pipelined ring named ``name`` (AsyncAsync with ``stages`` unless ``spec`` is given)."""
    return Ring(
        name=name, pipeline_config=spec if spec is not None else async_pipe(stages), smem_bytes=smem
    )


# -- tasks and plans ----------------------------------------------------------------------------
def _caller() -> SourceLocation:
    frame = sys._getframe(2)
    file, line = frame.f_code.co_filename, frame.f_lineno
    text = linecache.getline(file, line).strip()
    return SourceLocation(file, line, text, frame.f_code.co_name)


def task(
    name: str,
    sched: Schedule,
    src: Sequence[MemoryResource] = (),
    dst: Sequence[MemoryResource] = (),
    *,
    warp: int = 0,
    warps: int = 4,
    regs: int | None = None,
) -> TaskDeclaration:
    """A task declaration located at the caller's line."""
    return TaskDeclaration(
        list(src), list(dst), warp, warps, sched, regs, name=name, location=_caller()
    )


def _derived_graph(
    tasks: Sequence[TaskDeclaration],
) -> dict[MemoryResource, list[MemoryResource]]:
    graph: dict[MemoryResource, list[MemoryResource]] = {}
    for t in tasks:
        for d in t.dst_resources:
            ups = graph.setdefault(d, [])
            ups.extend(s for s in t.src_resources if s is not d and s not in ups)
    return graph


def plan_of(
    *tasks: TaskDeclaration,
    graph: Mapping[MemoryResource, Sequence[MemoryResource]] | None = None,
    name: str = "kernel",
    **options: Any,
) -> KernelPlan:
    """``build_plan`` of the tasks; the dependency graph defaults to "dst from the task's srcs"."""
    return build_plan(
        tasks, _derived_graph(tasks) if graph is None else graph, name=name, **options
    )


# -- standard schedules ---------------------------------------------------------------------------
def produce(src: Src, r: Ring, trips: object = 4) -> Schedule:
    """Per iteration: load an item and fill one stage of ``r`` with it."""

    @schedule
    def producer(s: Any, ring_: Any) -> None:
        with domain_loop(trips):
            item = s.load()
            ring_.acquire()
            ring_.store(item=item)
            ring_.commit()

    return producer(src, r)


def consume(r: Ring, dst: Dst, trips: object = 4) -> Schedule:
    """Per iteration: drain one stage of ``r`` into ``dst``."""

    @schedule
    def consumer(ring_: Any, d: Any) -> None:
        with domain_loop(trips):
            ring_.wait()
            view = ring_.read()
            d.write(item=view)
            ring_.release()

    return consumer(r, dst)


def relay(upstream: Ring, downstream: Ring, trips: object = 4) -> Schedule:
    """Per iteration: move one stage of ``upstream`` into one stage of ``downstream``."""

    @schedule
    def relay_(up: Any, down: Any) -> None:
        with domain_loop(trips):
            up.wait()
            view = up.read()
            down.acquire()
            down.store(item=view)
            down.commit()
            up.release()

    return relay_(upstream, downstream)


def persistent_relay(
    wq: Queue, upstream: Ring, downstream: Ring, trips: object = Tasks.get_domain
) -> Schedule:
    """``relay`` inside a persistent work-tile loop."""

    @schedule
    def persistent(q: Any, up: Any, down: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            with domain_loop(trips):
                up.wait()
                view = up.read()
                down.acquire()
                down.store(item=view)
                down.commit()
                up.release()

    return persistent(wq, upstream, downstream)


# -- source lines ---------------------------------------------------------------------------------
def marker_line(path: str, marker: str) -> int:
    """The line of ``path`` that carries ``# marker`` in a comment (exactly one such line)."""
    pattern = re.compile(rf"# {re.escape(marker)}(\s|$)")
    lines = Path(path).read_text().splitlines()
    hits = [i + 1 for i, text in enumerate(lines) if pattern.search(text)]
    assert len(hits) == 1, (marker, hits)
    return hits[0]
