"""Real TS kernels from the fuzzer's shapes (``_fuzz_shapes.py``), on the public facade.

:func:`declaration` turns a :class:`~_fuzz_shapes.Shape` into a ``Kernel`` declaration: one
``AsyncAsync`` ring per shape ring (``(64, depth)`` Int32 SMEM), an ``Inputs`` resource whose
consumer work reads the runtime flags, and in a persistent shape a static ``WorkQueue`` whose
skip predicate reads the per-tile ``skips`` tensor. Each task's schedule walks the shape's
segments in order (mutated per the shape's ``mutation``). :func:`kernel` is the verified
kernel (the staged ``Kernel``, debug bounded waits on); :func:`unverified_launcher` builds
the same tasks with ``TaskManager(skip_validation=True, debug_bounded_waits=True)`` (a broken
variant run to see it trap). Both launchers take ``(params, skips, out, tiles)``:

* ``params``: Int32 ``[n0, n1, n2, f0, f1, 0, 0, 0]``, the trip counts and flags;
* ``skips``: Int32 per work tile (``MAX_TILES``), nonzero = skipped (persistent shapes);
* ``out``: Int32 ``(MAX_TILES, rings, 2, 64)`` flat, zeroed, see ``_fuzz_shapes.expected``;
* ``tiles``: how many work tiles (CTAs of a non-persistent kernel).

So one compile per shape serves every input.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe
from _fuzz_shapes import MAX_TILES, SLOTS, Segment, Shape, out_size

from task_scheduling import (
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    when_false,
    when_true,
    work_tile_loop,
)
from task_scheduling.harness import fake_tensor
from task_scheduling.kernel import Kernel, KernelContext, Tasks
from task_scheduling.resources import (
    MemoryResource,
    PipelineConfig,
    TaskLocalVariable,
    TileSchedulerConfig,
    WorkQueue,
)
from task_scheduling.task import Task
from task_scheduling.task_manager import TaskManager
from task_scheduling.tiles import TileRaster

__all__ = ["compile_args", "declaration", "kernel", "unverified_launcher"]


@dataclasses.dataclass(kw_only=True)
class Inputs(MemoryResource):
    """The kernel's runtime flags (``params[3]``, ``params[4]``)."""

    params: Any = None
    f0: TaskLocalVariable = TaskLocalVariable.uninitialized()
    f1: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.f0 = TaskLocalVariable(dtype="Boolean", default=False)
        self.f1 = TaskLocalVariable(dtype="Boolean", default=False)

    @consumer_work(returns=f0)
    def flag0(self, stage_info: Any) -> Any:
        return self.params[3] != 0

    @consumer_work(returns=f1)
    def flag1(self, stage_info: Any) -> Any:
        return self.params[4] != 0


@dataclasses.dataclass(kw_only=True)
class Tiles(WorkQueue):
    """The static persistent queue; a tile whose ``skips`` entry is nonzero is skipped."""

    skips: Any = None

    def skipped(self, work_tile: Any) -> Any:
        return self.skips[work_tile.tile_idx[0]] != 0


@dataclasses.dataclass(kw_only=True)
class Slots(MemoryResource):
    """One ring: a stage holds one Int32 per producer thread.

    The producer writes ``value(salt, tile, i, lane)`` (``_fuzz_shapes.value``); each consumer
    thread reads its slot, adds it to its ``out`` sum and counts a mismatch with the value its
    own iteration expects.
    """

    smem: Any = None
    out: Any = None
    tile: Any = None  # the block index (non-persistent kernels)
    persistent: bool = False
    index: int = 0
    rings: int = 1
    producer_warp: int = 0
    producer_threads: int = 32
    consumer_warp: int = 0

    def _tile(self, stage_info: Any) -> Any:
        return stage_info.work_tile.tile_idx[0] if self.persistent else self.tile

    def _value(self, stage_info: Any, salt: int, lane: Any) -> Any:
        tile = self._tile(stage_info)
        return ((salt * 512 + tile) * 64 + stage_info.loop_offset % 64) * 64 + lane

    @producer_work
    def fill(self, stage_info: Any, *, salt: int) -> None:
        lane = cute.arch.thread_idx()[0] - self.producer_warp * 32
        self.smem[lane, stage_info.stage_idx] = cutlass.Int32(self._value(stage_info, salt, lane))

    @consumer_work
    def take(self, stage_info: Any, *, salt: int) -> None:
        t = cute.arch.thread_idx()[0] - self.consumer_warp * 32
        lane = t % self.producer_threads
        got = self.smem[lane, stage_info.stage_idx]
        want = cutlass.Int32(self._value(stage_info, salt, lane))
        base = ((self._tile(stage_info) * self.rings + self.index) * 2) * SLOTS + t
        self.out[base] = self.out[base] + got
        self.out[base + SLOTS] = self.out[base + SLOTS] + cutlass.Int32(got != want)


# -- schedules ------------------------------------------------------------------------------------
@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _segment(
    shape: Shape, k: int, producer: bool, ring: Any, trips: list[Any], flags: dict[str, Any]
) -> None:
    """One side of segment ``k`` (called while a schedule is traced)."""
    seg: Segment = shape.segments[k]
    mut = shape.mutation if shape.target == k else ""
    bound: Any = seg.bound if isinstance(seg.bound, int) else trips[int(seg.bound[1])]
    if mut == "off_by_one" and not producer:
        bound = bound + 1
    salt = seg.salt

    def bracket(loop: Any) -> None:
        if producer:
            ring.acquire()
            ring.fill(salt=salt)
            if mut != "drop_commit":
                ring.commit()
        elif seg.guard == "lag":
            ring.wait()
            ring.take(salt=salt)
            with loop.every(1, start=1):
                ring.release()
            if mut != "lag_no_last":
                with loop.last_iter():
                    ring.release()
        elif mut == "swap_wait_release":
            ring.release()
            ring.take(salt=salt)
            ring.wait()
        else:
            ring.wait()
            ring.take(salt=salt)
            if mut != "drop_release":
                ring.release()

    def flag_block(name: str) -> Any:
        return (when_false if seg.negated else when_true)(flags[name], key=name)

    with ExitStack() as outer:
        if seg.guard == "flag":
            outer.enter_context(flag_block(seg.flag))
        if mut == "producer_flag" and producer:
            outer.enter_context(when_true(flags["f0"], key="f0"))
        loop = outer.enter_context(domain_loop(bound))
        with ExitStack() as inner:
            if seg.guard == "flag_in":
                inner.enter_context(flag_block(seg.flag))
            if seg.guard == "every":
                inner.enter_context(loop.every(seg.period, start=seg.start))
            if seg.guard == "first":
                inner.enter_context(loop.first_iter())
            if seg.guard == "last":
                inner.enter_context(loop.last_iter())
            if mut == "producer_every" and producer:
                inner.enter_context(loop.every(2))
            if seg.guard == "split":
                with loop.every(2):
                    bracket(loop)
                with loop.every(2, start=1):
                    bracket(loop)
            else:
                bracket(loop)


def _task_schedule(shape: Shape, t: int, trips: list[Any]) -> Callable[..., Any]:
    """Task ``t``'s schedule function ``(inputs, queue, *rings)``."""

    def body(inputs: Any, wq: Any, *rings: Any) -> None:
        def segments(tiles: Any) -> None:
            flags = {"f0": inputs.flag0(), "f1": inputs.flag1()} if _uses_flags(shape) else {}
            for k, seg in enumerate(shape.segments):
                ring = shape.rings[seg.ring]
                for producer, task in ((True, ring.producer), (False, ring.consumer)):
                    if task != t:
                        continue
                    skip = seg.skippable or (
                        producer and shape.mutation == "producer_skippable" and shape.target == k
                    )
                    with tiles.skippable() if skip else _nothing():
                        _segment(shape, k, producer, rings[seg.ring], trips, flags)

        if shape.persistent:
            with work_tile_loop(wq, skip_if=Tiles.skipped) as tiles:
                segments(tiles)
        else:
            segments(None)

    body.__name__ = body.__qualname__ = shape.task_name(t)
    return schedule(body)


def _uses_flags(shape: Shape) -> bool:
    return shape.mutation == "producer_flag" or any(
        s.guard.startswith("flag") for s in shape.segments
    )


# -- the declaration and its kernels --------------------------------------------------------------
def _reader(params: Any, i: int) -> Callable[[], Any]:
    """``params[i]``, read in the kernel (a runtime trip count)."""
    return lambda: params[i]


def declaration(shape: Shape) -> Callable[..., Tasks]:
    """The shape's ``declare(k, params, skips, out[, raster])`` (the raster if persistent)."""

    def declare(k: KernelContext, params: Any, skips: Any, out: Any, raster: Any) -> Tasks:
        trips = [k.value(f"n{i}", _reader(params, i)) for i in range(3)]
        inputs = Inputs(name="inputs", params=params)
        wq: Any = None
        if shape.persistent:
            queue = TileSchedulerConfig.create_static_persistent_tile_scheduler_params(raster)
            wq = Tiles(queue, name="tiles", skips=skips)
        rings = []
        for r, ring in enumerate(shape.rings):
            threads = 32 * shape.warps[ring.consumer]
            if shape.mutation == "group_size" and shape.target == r:
                threads += 32  # one warp more than the consumer task has
            cfg = PipelineConfig.create_async_async_pipeline_cfg(
                ring.depth,
                cpipe.CooperativeGroup(cpipe.Agent.Thread, 32 * shape.warps[ring.producer]),
                cpipe.CooperativeGroup(cpipe.Agent.Thread, threads),
            )
            depth = ring.depth
            rings.append(
                Slots(
                    name=shape.ring_name(r),
                    pipeline_config=cfg,
                    smem=k.smem_tensor(
                        cutlass.Int32, lambda d=depth: cute.make_layout((SLOTS, d)), 128
                    ),
                    out=out,
                    tile=k.block_idx[0],
                    persistent=shape.persistent,
                    index=r,
                    rings=len(shape.rings),
                    producer_warp=shape.first_warp(ring.producer),
                    producer_threads=32 * shape.warps[ring.producer],
                    consumer_warp=shape.first_warp(ring.consumer),
                )
            )
        tasks = []
        for t, w in enumerate(shape.warps):
            srcs: list[Any] = [wq] if wq is not None else []
            if _uses_flags(shape):
                srcs.append(inputs)
            srcs += [rings[r] for r, ring in enumerate(shape.rings) if ring.consumer == t]
            dsts = [rings[r] for r, ring in enumerate(shape.rings) if ring.producer == t]
            sched = _task_schedule(shape, t, trips)(
                inputs, wq if wq is not None else inputs, *rings
            )
            tasks.append(
                Task(srcs, dsts, shape.first_warp(t), w, schedule=sched, name=shape.task_name(t))
            )
        ups = ([wq] if wq is not None else []) + ([inputs] if _uses_flags(shape) else [])
        return Tasks(tasks, {ring: ups for ring in rings})

    # The Kernel reads the parameters from the signature: a raster only when persistent.
    def persistent(k: KernelContext, params: Any, skips: Any, out: Any, raster: Any) -> Tasks:
        return declare(k, params, skips, out, raster)

    def plain(k: KernelContext, params: Any, skips: Any, out: Any) -> Tasks:
        return declare(k, params, skips, out, None)

    return persistent if shape.persistent else plain


def _launch_values(shape: Shape, params: Any, skips: Any, out: Any, tiles: Any) -> Any:
    """The device kernel's arguments and grid, in the ``@cute.jit`` launcher."""
    if shape.persistent:
        raster = TileRaster((tiles, 1, 1))
        return (params, skips, out, raster), raster.get_grid_shape(shape.ctas)
    return (params, skips, out), (tiles, 1, 1)


def kernel(shape: Shape, debug: bool = True) -> Kernel:
    """The verified kernel of ``shape`` (debug bounded waits on by default), with its launcher."""
    ker = Kernel(declaration(shape), name=shape.name, debug_bounded_waits=debug)

    @ker.launcher
    @cute.jit
    def launch(
        params: cute.Tensor, skips: cute.Tensor, out: cute.Tensor, tiles: cutlass.Int32
    ) -> None:
        values, grid = _launch_values(shape, params, skips, out, tiles)
        ker.launch(*values, grid=grid)

    return ker


def unverified_launcher(shape: Shape) -> Any:
    """The ``@cute.jit`` launcher of ``shape`` built with verification off and debug waits on."""
    declare = declaration(shape)
    threads = 32 * sum(shape.warps)

    def emit(*values: Any) -> None:
        ctx = KernelContext(True)
        decl = declare(ctx, *values)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # skip_validation turns the errors into warnings
            tm = TaskManager(
                decl.tasks,
                decl.graph,
                smem_allocator=ctx.smem_allocator,
                skip_validation=True,
                debug_bounded_waits=True,
                name=shape.name,
            )
        tm.setup_resources_and_tasks()
        tm.run()

    if shape.persistent:

        @cute.kernel
        def device(params: cute.Tensor, skips: cute.Tensor, out: cute.Tensor, raster: Any) -> None:
            emit(params, skips, out, raster)

    else:

        @cute.kernel
        def device(params: cute.Tensor, skips: cute.Tensor, out: cute.Tensor) -> None:
            emit(params, skips, out)

    @cute.jit
    def launch(
        params: cute.Tensor, skips: cute.Tensor, out: cute.Tensor, tiles: cutlass.Int32
    ) -> None:
        values, grid = _launch_values(shape, params, skips, out, tiles)
        device(*values).launch(grid=grid, block=(threads, 1, 1))

    return launch


def compile_args(shape: Shape) -> tuple[Any, ...]:
    """Fake tensors (and a tile count) to compile ``shape``'s launcher on the CPU."""
    return (
        fake_tensor(cutlass.Int32, 8),
        fake_tensor(cutlass.Int32, MAX_TILES),
        fake_tensor(cutlass.Int32, out_size(shape)),
        cutlass.Int32(1),
    )
