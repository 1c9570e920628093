"""Persistent 2D TMA copy with over-launched (skipped) tiles: TS kernel and hand-written twin.

The work queue covers ``tiles_m + extra_rows`` rows of ``64 x 256`` fp16 tiles (as a kernel
whose tile grid is rounded up would): tiles past the tensor are *skipped*. One CTA per SM walks
its tiles with CUTLASS's static persistent scheduler (``blockIdx.z, + gridDim.z, ...``). Warp
0 (load task) TMA-loads each tile into a 6-stage SMEM ring; warp 1 (store task) TMA-stores it
and releases the stage once the store has read it. Both tasks put their ring traffic in a
``skippable()`` region, so a skipped tile costs only the queue bookkeeping and the ring stays
balanced (ts-verify proves it for skipped and non-skipped tiles, for every tile count).

Usage::

    python examples/hopper/persistent_copy.py --compile-only   # CPU: PTX counts, TS vs twin
    python examples/hopper/persistent_copy.py                  # GPU: run, check, time
    python examples/hopper/persistent_copy.py --m 4096 --n 4096 --extra-rows 7
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe

# The chunk / stage shape and the TMA load and store steps (shared with varlen_copy).
from _tma_tiles import (
    STAGES,
    TILE_BYTES,
    TILE_M,
    TILE_N,
    TileRing,
    ring_layout,
    smem_tile_layout,
    tma_load,
    tma_store,
    tma_store_wait,
)
from cutlass.cute.nvgpu import cpasync
from cutlass.memory import SmemAllocator

from task_scheduling import schedule, work_tile_loop
from task_scheduling.harness import Case, ExampleCLI, fake_tensor, to_cute
from task_scheduling.harness import compile_only as compare
from task_scheduling.harness import run_on_gpu as run_kernels
from task_scheduling.kernel import Kernel, KernelContext, Tasks, TmaRing
from task_scheduling.plan import KernelPlan
from task_scheduling.resources import (
    TileSchedulerConfig,
    WorkQueue,
)
from task_scheduling.schedule_builder import ResourceProxy
from task_scheduling.task import Task
from task_scheduling.tiles import PersistentTiles, TileRaster

CTAS = 132
LOAD_WARP, STORE_WARP = 0, 1
BLOCK_THREADS = 64
DEFAULT_SHAPE = (8192, 8192)
DEFAULT_EXTRA_ROWS = 5


# ---------------------------------------------------------------------------------------------
# TS kernel
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(kw_only=True)
class TileQueue(WorkQueue):
    """The static persistent queue over the padded tile grid; rows past ``tiles_m`` skip."""

    tiles_m: Any = None

    def beyond_tensor(self, work_tile: Any) -> Any:
        """Skip predicate: the tile's row lies past the tensor."""
        return work_tile.tile_idx[0] >= self.tiles_m


@schedule
def load_schedule(wq: ResourceProxy, ring: ResourceProxy) -> None:
    """Per tile that is not skipped: fill one stage."""
    with work_tile_loop(wq, skip_if=TileQueue.beyond_tensor) as tiles, tiles.skippable():
        ring.acquire()
        ring.load()
        ring.commit()


@schedule
def store_schedule(wq: ResourceProxy, ring: ResourceProxy) -> None:
    """Per tile that is not skipped: store one stage, release it once the store read it."""
    with work_tile_loop(wq, skip_if=TileQueue.beyond_tensor) as tiles, tiles.skippable():
        ring.wait()
        ring.store()
        ring.store_wait()
        ring.release()


def copy_tasks(
    k: KernelContext,
    load_atom: Any,
    g_src: Any,
    store_atom: Any,
    g_dst: Any,
    params: Any,
    tiles_m: Any,
) -> Tasks:
    """The two tasks over the queue of ``params`` (the padded tile grid's ``TileRaster``)."""
    cfg = TileSchedulerConfig.create_static_persistent_tile_scheduler_params(params)
    wq = TileQueue(cfg, name="tiles", tiles_m=tiles_m)
    g_in, g_out = k.value(
        ("g_in", "g_out"), lambda: [cute.zipped_divide(g, (TILE_M, TILE_N)) for g in (g_src, g_dst)]
    )
    ring = TileRing(
        name="ring",
        pipeline_config=TmaRing.pipeline(STAGES, TILE_BYTES, 32),  # 1 TMA thread -> 1 store warp
        load_atom=load_atom,
        g_src=g_in,
        store_atom=store_atom,
        g_dst=g_out,
        s_tiles=k.smem_tensor(cutlass.Float16, ring_layout),
    )
    tasks = [
        Task([wq], [ring], LOAD_WARP, 1, schedule=load_schedule(wq, ring), name="load"),
        Task([wq, ring], [], STORE_WARP, 1, schedule=store_schedule(wq, ring), name="store"),
    ]
    return Tasks(tasks, {ring: [wq]})


KERNEL = Kernel(copy_tasks, name="persistent_copy")


# ---------------------------------------------------------------------------------------------
# Hand-written twin: the same schedule in plain CuTe DSL
# ---------------------------------------------------------------------------------------------


@cute.kernel
def twin_kernel(
    load_atom: cute.CopyAtom,
    g_src: cute.Tensor,
    store_atom: cute.CopyAtom,
    g_dst: cute.Tensor,
    params: TileRaster,
    tiles_m: cutlass.Int32,
) -> None:
    alloc = SmemAllocator()
    s_tiles = alloc.allocate_tensor(cutlass.Float16, ring_layout(), 1024)
    g_in = cute.zipped_divide(g_src, (TILE_M, TILE_N))
    g_out = cute.zipped_divide(g_dst, (TILE_M, TILE_N))
    bars = alloc.allocate_array(cutlass.Int64, num_elems=2 * STAGES, byte_alignment=8)
    pipe = cpipe.PipelineTmaAsync.create(
        num_stages=STAGES,
        producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
        consumer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 32),
        tx_count=TILE_BYTES,
        barrier_storage=bars,
        enable_multicast_signaling=True,
        defer_sync=True,
    )
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp < LOAD_WARP + 1:  # the load task's warps [0, 1), tested as the TS dispatch does
        state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, STAGES)
        sched = PersistentTiles.create(params)
        tile = sched.tile()
        while tile.is_valid_tile:
            m, n, _ = tile.tile_idx
            if not (m >= tiles_m):
                pipe.producer_acquire(state)
                tma_load(
                    load_atom, s_tiles, g_in, state.index, m, n, pipe.producer_get_barrier(state)
                )
                pipe.producer_commit(state)
                state.advance()
            sched.advance()
            tile = sched.tile()
    if warp == STORE_WARP:
        state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, STAGES)
        sched = PersistentTiles.create(params)
        tile = sched.tile()
        while tile.is_valid_tile:
            m, n, _ = tile.tile_idx
            if not (m >= tiles_m):
                pipe.consumer_wait(state)
                tma_store(store_atom, s_tiles, g_out, state.index, m, n)
                tma_store_wait()
                pipe.consumer_release(state)
                state.advance()
            sched.advance()
            tile = sched.tile()


# ---------------------------------------------------------------------------------------------
# Host side: the launchers, and the harness of task_scheduling.harness
# ---------------------------------------------------------------------------------------------


def _launch_args(src: cute.Tensor, dst: cute.Tensor, extra_rows: int) -> tuple[Any, Any]:
    """The kernels' arguments (TMA atoms, the padded tile raster, ``tiles_m``) and grid."""
    load_atom, g_src = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileG2SOp(), src, smem_tile_layout(), (TILE_M, TILE_N)
    )
    store_atom, g_dst = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileS2GOp(), dst, smem_tile_layout(), (TILE_M, TILE_N)
    )
    tiles_m = cute.size(dst, mode=[0]) // TILE_M
    tiles_n = cute.size(dst, mode=[1]) // TILE_N
    params = TileRaster((tiles_m + extra_rows, tiles_n, 1))
    args = (load_atom, g_src, store_atom, g_dst, params, cutlass.Int32(tiles_m))
    return args, params.get_grid_shape(CTAS)


def kernels(extra_rows: int = DEFAULT_EXTRA_ROWS) -> tuple[tuple[str, Any], ...]:
    """The TS kernel and its twin, as ``(name, @cute.jit launcher(src, dst))``."""

    @cute.jit
    def ts(src: cute.Tensor, dst: cute.Tensor) -> None:
        args, grid = _launch_args(src, dst, extra_rows)
        KERNEL.launch(*args, grid=grid)

    @cute.jit
    def twin(src: cute.Tensor, dst: cute.Tensor) -> None:
        args, grid = _launch_args(src, dst, extra_rows)
        twin_kernel(*args).launch(grid=grid, block=(BLOCK_THREADS, 1, 1))

    return (("ts", ts), ("twin", twin))


def make_plan() -> KernelPlan:
    """The kernel plan, traced on the host (no GPU, no DSL values)."""
    return Kernel(copy_tasks, name="persistent_copy").plan().plan


def compile_only(
    shape: tuple[int, int] = DEFAULT_SHAPE, extra_rows: int = DEFAULT_EXTRA_ROWS
) -> dict[str, Any]:
    """Verify the plan, compile both kernels for sm_90a with fake tensors, count PTX."""
    args = [fake_tensor(cutlass.Float16, shape, row_major=True, align=16) for _ in range(2)]
    return compare(
        "persistent_copy",
        kernels(extra_rows),
        args,
        plan=KERNEL,
        shape=[*shape],
        extra_rows=extra_rows,
    )


def run_on_gpu(shape: tuple[int, int], iters: int, extra_rows: int) -> dict[str, Any]:
    """Run both kernels on the GPU, check against torch, time them (and torch's copy)."""
    import torch

    src = torch.randn(*shape, device="cuda", dtype=torch.float16)
    copy = torch.empty_like(src)

    def case(name: str) -> Case:
        dst = torch.zeros_like(src)
        return Case((to_cute(src), to_cute(dst)), lambda: torch.equal(dst, src))

    out = run_kernels(
        kernels(extra_rows),
        case,
        iters=iters,
        bytes_moved=4 * src.numel(),
        baselines={"torch": lambda: copy.copy_(src)},
    )
    return {"example": "persistent_copy", "shape": [*shape], "extra_rows": extra_rows, **out}


def main(argv: list[str] | None = None) -> int:
    shape = {"m": DEFAULT_SHAPE[0], "n": DEFAULT_SHAPE[1]}
    cli = ExampleCLI(__doc__, __file__, shape=shape, multiple_of=(TILE_M, TILE_N))
    cli.parser.add_argument(
        "--extra-rows", type=int, default=DEFAULT_EXTRA_ROWS, help="skipped tile rows"
    )
    args = cli.parse(argv)
    return cli.run(
        lambda: compile_only(args.shape, args.extra_rows),
        lambda: run_on_gpu(args.shape, args.iters, args.extra_rows),
    )


if __name__ == "__main__":
    sys.exit(main())
