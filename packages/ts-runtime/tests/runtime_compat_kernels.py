"""Reference-style kernels for test_runtime_reference_compat (need the CuTe DSL)."""

from __future__ import annotations

import dataclasses
from typing import Any

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe

from ts_codegen import TileRaster
from ts_runtime import PipelineConfig, Task, TaskManager, TileSchedulerConfig, WorkQueue
from ts_trace import (
    MemoryResource,
    TaskLocalVariable,
    consumer_work,
    domain_loop,
    producer_work,
    work_tile_loop,
)
from ts_trace import schedule as ts_schedule

# -- a producer ring with advance_on_acquire, positional work arguments, runtime ifs on self --


@dataclasses.dataclass(kw_only=True)
class Counter(MemoryResource):
    """Reads one value per iteration; counts the odd ones in a field assigned under ``if``."""

    src: Any = None
    odd: Any = None
    value: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.value = TaskLocalVariable(dtype=cutlass.Int32, default=cutlass.Int32(0))

    @consumer_work(returns=value)
    @cute.jit
    def read(self, stage_info: Any) -> Any:
        v = self.src[stage_info.loop_offset]
        if v % 2 == 1:
            self.odd = self.odd + 1  # a runtime `if` that writes through self
        return v


@dataclasses.dataclass(kw_only=True)
class Slots(MemoryResource):
    """An AsyncAsync ring of Int32 slots in SMEM (one per stage)."""

    slots: Any = None
    out: Any = None
    got: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.got = TaskLocalVariable(dtype=cutlass.Int32, default=cutlass.Int32(0))

    @producer_work
    @cute.jit
    def put(self, stage_info: Any, value: Any, scale: int = 1) -> None:
        self.slots[stage_info.stage_idx] = value * scale

    @consumer_work(returns=got)
    @cute.jit
    def take(self, stage_info: Any) -> Any:
        return self.slots[stage_info.stage_idx]

    @producer_work
    @cute.jit
    def nothing(self, stage_info: Any) -> None:
        pass


@dataclasses.dataclass(kw_only=True)
class Sink(MemoryResource):
    dst: Any = None

    @producer_work
    @cute.jit
    def write(self, stage_info: Any, got: Any) -> None:
        self.dst[stage_info.loop_offset] = got


STAGES = 4
TRIPS = 8


@cute.kernel
def lagged_ring_kernel(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    slots = cute.arch.alloc_smem(cutlass.Int32, STAGES)
    ring_cfg = PipelineConfig.create_async_async_pipeline_cfg(
        num_stages=STAGES,
        producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 32),
        consumer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 32),
        advance_on_acquire=True,
        advance_on_wait=True,
    )
    counter = Counter(name="counter", src=src, odd=cutlass.Int32(0))
    ring = Slots(name="ring", slots=slots, pipeline_config=ring_cfg)
    sink = Sink(name="sink", dst=dst)

    @ts_schedule
    def fill(c: Any, r: Any) -> None:
        # Two stages held at once: acquire the next before committing the previous.
        v = c.read()
        r.acquire()
        r.put(v, 2)  # positional: value, then scale
        with domain_loop(1, TRIPS) as loop:
            v = c.read()
            r.acquire()
            r.put(v, 2)
            r.commit()
            with loop.last_iter():
                r.nothing()
        r.commit()

    @ts_schedule
    def drain(r: Any, s: Any) -> None:
        # Two stages held at once: wait for the next before releasing the previous.
        r.wait()
        with domain_loop(1, TRIPS):
            got = r.take()
            s.write(got)
            r.wait()
            r.release()
        got = r.take()
        s.write(got)
        r.release()

    tm = TaskManager(
        [
            Task([counter], [ring], 0, 1, schedule=fill(counter, ring), name="fill"),
            Task([ring], [sink], 1, 1, schedule=drain(ring, sink), name="drain"),
        ],
        {ring: [counter], sink: [ring]},
    )
    LAST.append(tm)
    tm.setup_resources_and_tasks()
    tm.run()


LAST: list[TaskManager] = []


@cute.jit
def lagged_ring(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    lagged_ring_kernel(src, dst, n).launch(grid=(1, 1, 1), block=(64, 1, 1))


# -- runtime (start, end, step) bounds with last_iter() --------------------------------------


@dataclasses.dataclass(kw_only=True)
class Marks(MemoryResource):
    dst: Any = None

    @producer_work
    @cute.jit
    def mark(self, stage_info: Any, *, what: int) -> None:
        self.dst[stage_info.loop_offset] = what


@cute.kernel
def strided_marks_kernel(dst: cute.Tensor, start: cutlass.Int32, end: cutlass.Int32) -> None:
    tidx, _, _ = cute.arch.thread_idx()
    step = cute.arch.block_dim()[0]
    marks = Marks(name="marks", dst=dst)

    @ts_schedule
    def sched(m: Any) -> None:
        with domain_loop(start + tidx, end, step) as loop:
            m.mark(what=1)
            with loop.last_iter():
                m.mark(what=2)

    tm = TaskManager([Task([], [marks], 0, 4, schedule=sched(marks), name="marks")], {marks: []})
    tm.setup_resources_and_tasks()
    tm.run()


@cute.jit
def strided_marks(dst: cute.Tensor, start: cutlass.Int32, end: cutlass.Int32) -> None:
    strided_marks_kernel(dst, start, end).launch(grid=(1, 1, 1), block=(128, 1, 1))


@cute.kernel
def cta_gated_kernel(dst: cute.Tensor) -> None:
    marks = Marks(name="marks", dst=dst)

    @ts_schedule
    def sched(m: Any) -> None:
        with domain_loop(4):
            m.mark(what=3)

    task = Task([], [marks], 0, 4, schedule=sched(marks), name="marks", run_only_on_cta_id=0)
    tm = TaskManager([task], {marks: []})
    tm.setup_resources_and_tasks()
    tm.run()


@cute.jit
def cta_gated(dst: cute.Tensor) -> None:
    cta_gated_kernel(dst).launch(grid=(2, 1, 1), block=(128, 1, 1), cluster=(2, 1, 1))


# -- a dynamic queue read the reference's way: get_and_advance_work_tile returns the tile ------

NEXT_ROWS = 4  # work tiles (rows of next_of)


@dataclasses.dataclass(kw_only=True)
class NextTiles(MemoryResource):
    """Writes, for each tile the CTA works on, the tile the queue hands it next (-1: none)."""

    next_of: Any = None

    @producer_work
    @cute.jit
    def record(self, stage_info: Any, tile: Any) -> None:
        m, _, _ = stage_info.work_tile.tile_idx
        nxt, _, _ = tile.tile_idx  # a WorkTileInfo, as the reference's step returns
        self.next_of[m] = nxt if tile.is_valid_tile else cutlass.Int32(-1)


@cute.kernel
def next_tile_kernel(next_of: cute.Tensor, counters: cute.Tensor, params: Any) -> None:
    hand_over = PipelineConfig.create_async_async_pipeline_cfg(
        2,
        cpipe.CooperativeGroup(cpipe.Agent.Thread, 32),
        cpipe.CooperativeGroup(cpipe.Agent.Thread, 32),
    )
    cfg = TileSchedulerConfig.create_atomic_dynamic_persistent_tile_scheduler_params(
        params, counters
    )
    wq = WorkQueue(cfg, name="tiles", pipeline_config=hand_over)
    out = NextTiles(name="next", next_of=next_of)

    @ts_schedule
    def fetch(q: Any) -> None:
        with work_tile_loop(q):
            q.acquire()
            q.fetch_work_tile()
            q.commit()

    @ts_schedule
    def follow(q: Any, o: Any) -> None:
        with work_tile_loop(q):
            q.wait()
            tile = q.get_and_advance_work_tile()
            q.release()
            o.record(tile)

    tm = TaskManager(
        [
            Task([], [wq], 0, 1, schedule=fetch(wq), name="fetch"),
            Task([wq], [out], 1, 1, schedule=follow(wq, out), name="follow"),
        ],
        {out: [wq]},
    )
    tm.setup_resources_and_tasks()
    tm.run()
    LAST.append(tm)


@cute.jit
def next_tile(next_of: cute.Tensor, counters: cute.Tensor) -> None:
    params = TileRaster((NEXT_ROWS, 1, 1), (1, 1, 1))
    next_tile_kernel(next_of, counters, params).launch(grid=(1, 1, 2), block=(64, 1, 1))
