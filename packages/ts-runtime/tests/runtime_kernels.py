"""Small kernels written with Task / TaskManager, for the compile tests (need the CuTe DSL)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe
from cutlass.cute.nvgpu import cpasync

import ts_codegen
from ts_runtime import (
    PipelineConfig,
    SmemAllocation,
    SmemAllocator,
    Task,
    TaskManager,
    TileSchedulerConfig,
    WorkQueue,
)
from ts_trace import (
    MemoryResource,
    ResourceProxy,
    TaskLocalVariable,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    when_false,
    work_tile_loop,
)

# ---------------------------------------------------------------------------------------------
# grid-stride copy: one task, runtime bounds traced in the kernel
# ---------------------------------------------------------------------------------------------

CTAS, THREADS, UNROLL = 132, 256, 4


@dataclasses.dataclass(kw_only=True)
class Source(MemoryResource):
    tensor: Any = None
    element: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.element = TaskLocalVariable(dtype="Float16", default=0)

    @consumer_work(returns=element)
    @cute.jit
    def load(self, stage_info: Any) -> Any:
        return self.tensor[stage_info.loop_offset]


@dataclasses.dataclass(kw_only=True)
class Destination(MemoryResource):
    tensor: Any = None

    @producer_work
    @cute.jit
    def store(self, stage_info: Any, *, element: Any) -> None:
        self.tensor[stage_info.loop_offset] = element


def copy_schedule(start: Any, end: Any, step: Any) -> Callable[..., Any]:
    """The copy schedule over ``range(start, end, step)`` (bounds are DSL values)."""

    @schedule
    def copy(src: ResourceProxy, dst: ResourceProxy) -> None:
        with domain_loop(start, end, step, unroll=UNROLL):
            value = src.load()
            dst.store(element=value)

    return copy


MANAGERS: list[TaskManager] = []


@cute.kernel
def grid_stride_kernel(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    gdim, _, _ = cute.arch.grid_dim()
    s, d = Source(name="src", tensor=src), Destination(name="dst", tensor=dst)
    sched = copy_schedule(bidx * bdim + tidx, n, gdim * bdim)(s, d)
    tm = TaskManager([Task([s], [d], 0, THREADS // 32, schedule=sched, name="copy")], {d: [s]})
    MANAGERS.append(tm)
    tm.setup_resources_and_tasks()
    tm.run()


@cute.jit
def grid_stride_copy(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    grid_stride_kernel(src, dst, n).launch(grid=(CTAS, 1, 1), block=(THREADS, 1, 1))


class CopyTask(Task):
    """A task whose loop end comes from ``get_domain`` (resolved per CTA in the kernel)."""

    def __init__(self, *args: Any, n: Any, **kwargs: Any) -> None:
        self.n = n
        super().__init__(*args, **kwargs)

    def get_domain(self, work_tile_coord: Any) -> Any:
        return self.n


def dynamic_copy_schedule(start: Any, step: Any) -> Callable[..., Any]:
    @schedule
    def copy(src: ResourceProxy, dst: ResourceProxy) -> None:
        with domain_loop(start, CopyTask.get_domain, step, unroll=UNROLL):
            value = src.load()
            dst.store(element=value)

    return copy


@cute.kernel
def dynamic_kernel(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    gdim, _, _ = cute.arch.grid_dim()
    s, d = Source(name="src", tensor=src), Destination(name="dst", tensor=dst)
    sched = dynamic_copy_schedule(bidx * bdim + tidx, gdim * bdim)(s, d)
    task = CopyTask([s], [d], 0, THREADS // 32, schedule=sched, name="copy", n=n)
    tm = TaskManager([task], {d: [s]})
    MANAGERS.append(tm)
    tm.setup_resources_and_tasks()
    tm.run()


@cute.jit
def dynamic_copy(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    dynamic_kernel(src, dst, n).launch(grid=(CTAS, 1, 1), block=(THREADS, 1, 1))


# ---------------------------------------------------------------------------------------------
# TMA copy: a load task and a store task through a TmaAsync pipeline, SMEM from SmemAllocator
# ---------------------------------------------------------------------------------------------

TILE_M, TILE_N, STAGES = 128, 64, 4
TILE_BYTES = TILE_M * TILE_N * 2
STORE_WARP, STORE_WARPS = 4, 8
STORE_THREADS = STORE_WARPS * 32
BLOCK_THREADS = (STORE_WARP + STORE_WARPS) * 32


def smem_tile_layout() -> Any:
    return cute.make_layout((TILE_M, TILE_N), stride=(TILE_N, 1))


def ring_layout() -> Any:
    return cute.make_layout((TILE_M, TILE_N, STAGES), stride=(TILE_N, 1, TILE_M * TILE_N))


def tile_coord(t: Any, tiles_n: Any) -> tuple[Any, Any]:
    return t // tiles_n, t % tiles_n


@dataclasses.dataclass(kw_only=True)
class StageBuffer(MemoryResource):
    tma_atom: Any = None
    g_tiles: Any = None
    s_tiles: Any = None
    tiles_n: Any = 1
    tiles: SmemAllocation | None = None
    view: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.view = TaskLocalVariable(dtype="SmemTile", default=None)

    def get_smem_requirements(self) -> list[Any]:
        return [] if self.tiles is None else [self.tiles]

    @producer_work
    @cute.jit
    def tma_load(self, stage_info: Any) -> None:
        m, n = tile_coord(stage_info.loop_offset, self.tiles_n)
        t_s, t_g = cpasync.tma_partition(
            self.tma_atom,
            0,
            cute.make_layout(1),
            cute.group_modes(self.s_tiles, 0, 2),
            self.g_tiles,
        )
        cute.copy(
            self.tma_atom,
            t_g[(None, (m, n))],
            t_s[(None, stage_info.stage_idx)],
            tma_bar_ptr=stage_info.barrier,
        )

    @consumer_work(returns=view)
    @cute.jit
    def read(self, stage_info: Any) -> Any:
        return self.s_tiles[(None, None, stage_info.stage_idx)]


@dataclasses.dataclass(kw_only=True)
class GlobalOut(MemoryResource):
    tensor: Any = None
    tiles_n: Any = 1

    @producer_work
    @cute.jit
    def store(self, stage_info: Any, *, view: Any) -> None:
        m, n = tile_coord(stage_info.loop_offset, self.tiles_n)
        g = cute.local_tile(self.tensor, (TILE_M, TILE_N), (m, n))
        tidx, _, _ = cute.arch.thread_idx()
        atom = cute.make_copy_atom(
            cute.nvgpu.CopyUniversalOp(), cutlass.Float16, num_bits_per_copy=128
        )
        threads = cute.make_layout((STORE_THREADS // 8, 8), stride=(8, 1))
        tiled = cute.make_tiled_copy_tv(atom, threads, cute.make_layout((1, 8)))
        thr = tiled.get_slice(tidx - STORE_WARP * 32)
        t_s = thr.partition_S(view)
        t_g = thr.partition_D(g)
        frag = cute.make_fragment_like(t_s)
        cute.copy(tiled, t_s, frag)
        cute.copy(tiled, frag, t_g)


def tma_pipeline() -> PipelineConfig:
    return PipelineConfig.create_tma_async_pipeline_cfg(
        STAGES,
        TILE_BYTES,
        cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
        cpipe.CooperativeGroup(cpipe.Agent.Thread, STORE_THREADS),
    )


def tma_schedules(start: Any, end: Any, step: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    @schedule
    def load(smem: ResourceProxy) -> None:
        with domain_loop(start, end, step):
            smem.acquire()
            smem.tma_load()
            smem.commit()

    @schedule
    def store(smem: ResourceProxy, dst: ResourceProxy) -> None:
        with domain_loop(start, end, step):
            smem.wait()
            view = smem.read()
            dst.store(view=view)
            smem.release()

    return load, store


@cute.kernel
def tma_kernel(tma_atom: cute.CopyAtom, g_src: cute.Tensor, dst: cute.Tensor) -> None:
    bidx, _, _ = cute.arch.block_idx()
    gdim, _, _ = cute.arch.grid_dim()
    tiles_m = cute.size(dst, mode=[0]) // TILE_M
    tiles_n = cute.size(dst, mode=[1]) // TILE_N
    tiles = SmemAllocation(
        "smem.tiles", dtype=cutlass.Float16, count=TILE_M * TILE_N * STAGES, alignment=1024
    )
    smem = StageBuffer(
        name="smem",
        pipeline_config=tma_pipeline(),
        tma_atom=tma_atom,
        g_tiles=cute.zipped_divide(g_src, (TILE_M, TILE_N)),
        tiles_n=tiles_n,
        tiles=tiles,
    )
    out = GlobalOut(name="dst", tensor=dst, tiles_n=tiles_n)
    alloc = SmemAllocator()
    alloc.add_resource(smem)
    alloc.compute_layout()
    load, store = tma_schedules(bidx, tiles_m * tiles_n, gdim)
    tasks = [
        Task([], [smem], 0, 1, schedule=load(smem), num_registers=40, name="load"),
        Task(
            [smem],
            [out],
            STORE_WARP,
            STORE_WARPS,
            schedule=store(smem, out),
            num_registers=232,
            name="store",
        ),
    ]
    tm = TaskManager(tasks, {out: [smem]}, smem_allocator=alloc, block_warps=BLOCK_THREADS // 32)
    MANAGERS.append(tm)
    tm.setup_resources_and_tasks()
    smem.s_tiles = alloc.get(tiles, layout=ring_layout())
    tm.run()


@cute.jit
def tma_copy(src: cute.Tensor, dst: cute.Tensor) -> None:
    tma_atom, g_src = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileG2SOp(), src, smem_tile_layout(), (TILE_M, TILE_N)
    )
    tma_kernel(tma_atom, g_src, dst).launch(grid=(CTAS, 1, 1), block=(BLOCK_THREADS, 1, 1))


# ---------------------------------------------------------------------------------------------
# Guards in a persistent loop: one warp per CTA walks rows (work tiles) with the static
# scheduler; per row a task-method domain (the row's length, 0 allowed), first/last-iteration
# blocks, an every(2) block feeding a loop-carried counter, and a when_false runtime condition.
# Lane 0 writes; tools/gpu_check_runtime.py compares with a Python model (guards_reference).
# ---------------------------------------------------------------------------------------------

GUARD_CTAS = 8


class RowTask(Task):
    """The domain of a row is its length."""

    def __init__(self, *args: Any, lengths: Any = None, **kwargs: Any) -> None:
        self.lengths = lengths
        super().__init__(*args, **kwargs)

    def row_length(self, work_tile_coord: Any) -> Any:
        return self.lengths[work_tile_coord[0]]


@dataclasses.dataclass(kw_only=True)
class RowMeta(MemoryResource):
    flags: Any = None
    skip: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.skip = TaskLocalVariable(dtype="Boolean", default=False)

    @consumer_work(returns=skip)
    def read_skip(self, stage_info: Any) -> Any:
        return self.flags[stage_info.work_tile.tile_idx[0]] != 0


@dataclasses.dataclass(kw_only=True)
class Counter(MemoryResource):
    count: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.count = TaskLocalVariable(dtype="Int32", default=0)

    @consumer_work(returns=count)
    def reset(self, stage_info: Any) -> Any:
        return cutlass.Int32(0)

    @consumer_work(returns=count)
    def bump(self, stage_info: Any, *, count: Any) -> Any:
        return count + stage_info.loop_offset + 1


@dataclasses.dataclass(kw_only=True)
class RowOut(MemoryResource):
    """``out[row] = (first, last, total, unskipped, even)``: what the guards saw for the row."""

    out: Any = None

    def _put(self, row: Any, col: int, value: Any) -> None:
        with cute.arch.elect_one():
            self.out[row, col] = cutlass.Int32(value)

    @producer_work
    def first(self, stage_info: Any) -> None:
        self._put(stage_info.work_tile.tile_idx[0], 0, stage_info.loop_offset + 100)

    @producer_work
    def last(self, stage_info: Any) -> None:
        self._put(stage_info.work_tile.tile_idx[0], 1, stage_info.loop_offset + 100)

    @producer_work
    def total(self, stage_info: Any, *, count: Any) -> None:
        self._put(stage_info.work_tile.tile_idx[0], 2, count)

    @producer_work
    def mark(self, stage_info: Any) -> None:
        self._put(stage_info.work_tile.tile_idx[0], 3, 1)

    @producer_work
    def zero_even(self, stage_info: Any) -> None:
        self._put(stage_info.work_tile.tile_idx[0], 4, 0)

    @producer_work
    def even(self, stage_info: Any) -> None:
        row = stage_info.work_tile.tile_idx[0]
        with cute.arch.elect_one():
            self.out[row, 4] = self.out[row, 4] + stage_info.loop_offset + 1


@schedule
def guard_schedule(wq: ResourceProxy, meta: ResourceProxy, ctr: ResourceProxy, out: Any) -> None:
    with work_tile_loop(wq):
        skip = meta.read_skip()
        with when_false(skip):
            out.mark()
        count = ctr.reset()
        out.zero_even()
        with domain_loop(RowTask.row_length) as k:
            with k.first_iter():
                out.first()
            count = ctr.bump(count=count)
            with k.every(2):
                out.even()
            with k.last_iter():
                out.last()
                out.total(count=count)


def guards_reference(lengths: list[int], flags: list[int]) -> list[list[int]]:
    """What guard_kernel writes, computed in Python (rows start as -1)."""
    rows = []
    for n, f in zip(lengths, flags, strict=True):
        first = 100 if n > 0 else -1
        last = 100 + n - 1 if n > 0 else -1
        total = sum(i + 1 for i in range(n)) if n > 0 else -1
        even = sum(i + 1 for i in range(0, n, 2))
        rows.append([first, last, total, -1 if f else 1, even])
    return rows


@cute.kernel
def guard_kernel(
    out: cute.Tensor,
    lengths: cute.Tensor,
    flags: cute.Tensor,
    params: ts_codegen.TileRaster,
) -> None:
    cfg = TileSchedulerConfig.create_static_persistent_tile_scheduler_params(params)
    wq = WorkQueue(cfg, name="rows")
    meta, ctr, res = (
        RowMeta(name="meta", flags=flags),
        Counter(name="ctr"),
        RowOut(name="out", out=out),
    )
    task = RowTask(
        [wq, meta, ctr],
        [res],
        0,
        1,
        schedule=guard_schedule(wq, meta, ctr, res),
        name="rows",
        lengths=lengths,
    )
    tm = TaskManager([task], {res: [wq, meta, ctr]})
    MANAGERS.append(tm)
    tm.setup_resources_and_tasks()
    tm.run()


@cute.jit
def guard_rows(out: cute.Tensor, lengths: cute.Tensor, flags: cute.Tensor) -> None:
    rows = cute.size(lengths, mode=[0])
    params = ts_codegen.TileRaster((rows, 1, 1))
    grid = params.get_grid_shape(GUARD_CTAS)
    guard_kernel(out, lengths, flags, params).launch(grid=grid, block=(32, 1, 1))
