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

import argparse
import dataclasses
import json
import os
import sys
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe
from _gpu_check import gpu_ready
from cutlass.cute.nvgpu import cpasync
from cutlass.memory import SmemAllocator

import ts_codegen
from ts_codegen.dsl import compile_ptx
from ts_codegen.ptx import opcode_counts
from ts_ir import KernelPlan, WorkAttr
from ts_runtime import PipelineConfig, Task, TaskManager, TileSchedulerConfig, WorkQueue
from ts_trace import (
    MemoryResource,
    ResourceProxy,
    consumer_work,
    producer_work,
    schedule,
    work_tile_loop,
)

CTAS = 132
TILE_M, TILE_N, STAGES = 64, 256, 6
TILE_BYTES = TILE_M * TILE_N * 2
LOAD_WARP, STORE_WARP = 0, 1
BLOCK_THREADS = 64
DEFAULT_SHAPE = (8192, 8192)
DEFAULT_EXTRA_ROWS = 5


def smem_tile_layout() -> Any:
    """One stage: a row-major tile."""
    return cute.make_layout((TILE_M, TILE_N), stride=(TILE_N, 1))


def ring_layout() -> Any:
    """All stages, one row-major tile after the other."""
    return cute.make_layout((TILE_M, TILE_N, STAGES), stride=(TILE_N, 1, TILE_M * TILE_N))


@cute.jit
def tma_load(atom: Any, s_tiles: Any, g_tiles: Any, stage: Any, m: Any, n: Any, bar: Any) -> None:
    """TMA-load tile ``(m, n)`` into ``stage``; completes on ``bar``."""
    t_s, t_g = cpasync.tma_partition(
        atom, 0, cute.make_layout(1), cute.group_modes(s_tiles, 0, 2), g_tiles
    )
    cute.copy(atom, t_g[(None, (m, n))], t_s[(None, stage)], tma_bar_ptr=bar)


@cute.jit
def tma_store(atom: Any, s_tiles: Any, g_tiles: Any, stage: Any, m: Any, n: Any) -> None:
    """One lane TMA-stores ``stage`` into tile ``(m, n)`` and commits the bulk group."""
    cute.arch.fence_proxy("async.shared", space="cta")
    t_s, t_g = cpasync.tma_partition(
        atom, 0, cute.make_layout(1), cute.group_modes(s_tiles, 0, 2), g_tiles
    )
    with cute.arch.elect_one():
        cute.copy(atom, t_s[(None, stage)], t_g[(None, (m, n))])
        cute.arch.cp_async_bulk_commit_group()


@cute.jit
def tma_store_wait() -> None:
    """Wait until the warp's stores have read SMEM (then any lane may release)."""
    cute.arch.cp_async_bulk_wait_group(0, read=True)
    cute.arch.sync_warp()


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


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    """The SMEM ring between the TMA load and the TMA store."""

    load_atom: Any = None
    g_src: Any = None
    store_atom: Any = None
    g_dst: Any = None
    s_tiles: Any = None

    @producer_work
    def load(self, stage_info: Any) -> None:
        """TMA-load the work tile into the acquired stage."""
        m, n, _ = stage_info.work_tile.tile_idx
        tma_load(
            self.load_atom, self.s_tiles, self.g_src, stage_info.stage_idx, m, n, stage_info.barrier
        )

    @consumer_work(work_attrs=WorkAttr.ASYNC_READ)
    def store(self, stage_info: Any) -> None:
        """Start the TMA store of the waited stage (it reads the stage until waited for)."""
        m, n, _ = stage_info.work_tile.tile_idx
        tma_store(self.store_atom, self.s_tiles, self.g_dst, stage_info.stage_idx, m, n)

    @consumer_work(work_attrs=WorkAttr.ASYNC_WAIT_ALL)
    def store_wait(self, stage_info: Any) -> None:
        """``cp.async.bulk.wait_group.read 0``."""
        tma_store_wait()


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


def ring_pipeline() -> PipelineConfig:
    """TMA producer (1 thread arms the barrier) -> 1 store warp."""
    return PipelineConfig.create_tma_async_pipeline_cfg(
        STAGES,
        TILE_BYTES,
        cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
        cpipe.CooperativeGroup(cpipe.Agent.Thread, 32),
    )


def build_tasks(wq: TileQueue, ring: Ring, smem_allocator: Any = None) -> TaskManager:
    """The two tasks and their manager (plans and verifies the kernel)."""
    tasks = [
        Task([wq], [ring], LOAD_WARP, 1, schedule=load_schedule(wq, ring), name="load"),
        Task([wq, ring], [], STORE_WARP, 1, schedule=store_schedule(wq, ring), name="store"),
    ]
    return TaskManager(tasks, {ring: [wq]}, smem_allocator=smem_allocator, name="persistent_copy")


def make_plan() -> KernelPlan:
    """The kernel plan, built on the host with placeholder resources (no GPU, no DSL values)."""
    cfg = TileSchedulerConfig.create_static_persistent_tile_scheduler_params(None)
    return build_tasks(
        TileQueue(cfg, name="tiles"), Ring(name="ring", pipeline_config=ring_pipeline())
    ).plan


@cute.kernel
def ts_kernel(
    load_atom: cute.CopyAtom,
    g_src: cute.Tensor,
    store_atom: cute.CopyAtom,
    g_dst: cute.Tensor,
    params: ts_codegen.TileRaster,
    tiles_m: cutlass.Int32,
) -> None:
    alloc = SmemAllocator()
    s_tiles = alloc.allocate_tensor(cutlass.Float16, ring_layout(), 1024)
    cfg = TileSchedulerConfig.create_static_persistent_tile_scheduler_params(params)
    wq = TileQueue(cfg, name="tiles", tiles_m=tiles_m)
    ring = Ring(
        name="ring",
        pipeline_config=ring_pipeline(),
        load_atom=load_atom,
        g_src=cute.zipped_divide(g_src, (TILE_M, TILE_N)),
        store_atom=store_atom,
        g_dst=cute.zipped_divide(g_dst, (TILE_M, TILE_N)),
        s_tiles=s_tiles,
    )
    tm = build_tasks(wq, ring, alloc)
    tm.setup_resources_and_tasks()
    tm.run()


# ---------------------------------------------------------------------------------------------
# Hand-written twin: the same schedule in plain CuTe DSL
# ---------------------------------------------------------------------------------------------


@cute.kernel
def twin_kernel(
    load_atom: cute.CopyAtom,
    g_src: cute.Tensor,
    store_atom: cute.CopyAtom,
    g_dst: cute.Tensor,
    params: ts_codegen.TileRaster,
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
        sched = ts_codegen.PersistentTiles.create(params)
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
        sched = ts_codegen.PersistentTiles.create(params)
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
# host side
# ---------------------------------------------------------------------------------------------


def _launcher(kernel: Any, extra_rows: int) -> Any:
    @cute.jit
    def launch(src: cute.Tensor, dst: cute.Tensor) -> None:
        load_atom, g_src = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(), src, smem_tile_layout(), (TILE_M, TILE_N)
        )
        store_atom, g_dst = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileS2GOp(), dst, smem_tile_layout(), (TILE_M, TILE_N)
        )
        tiles_m = cute.size(dst, mode=[0]) // TILE_M
        tiles_n = cute.size(dst, mode=[1]) // TILE_N
        params = ts_codegen.TileRaster((tiles_m + extra_rows, tiles_n, 1))
        grid = params.get_grid_shape(CTAS)
        kernel(load_atom, g_src, store_atom, g_dst, params, cutlass.Int32(tiles_m)).launch(
            grid=grid, block=(BLOCK_THREADS, 1, 1)
        )

    return launch


def kernels(extra_rows: int = DEFAULT_EXTRA_ROWS) -> tuple[tuple[str, Any], ...]:
    """The TS kernel and its twin, as ``(name, @cute.jit launcher(src, dst))``."""
    return (("ts", _launcher(ts_kernel, extra_rows)), ("twin", _launcher(twin_kernel, extra_rows)))


def compile_only(
    shape: tuple[int, int] = DEFAULT_SHAPE, extra_rows: int = DEFAULT_EXTRA_ROWS
) -> dict[str, Any]:
    """Verify the plan, compile both kernels for sm_90a with fake tensors, count PTX."""
    from cutlass.cute.runtime import make_fake_compact_tensor

    result: dict[str, Any] = {
        "example": "persistent_copy",
        "shape": list(shape),
        "extra_rows": extra_rows,
        "verified": make_plan().name == "persistent_copy",  # TaskManager verified it
    }
    for name, fn in kernels(extra_rows):
        src = make_fake_compact_tensor(
            cutlass.Float16, shape, stride_order=(1, 0), assumed_align=16
        )
        dst = make_fake_compact_tensor(
            cutlass.Float16, shape, stride_order=(1, 0), assumed_align=16
        )
        _, ptx = compile_ptx(fn, src, dst)
        result[name] = ts_codegen.count_instructions(ptx)
        result[f"{name}_total"] = sum(opcode_counts(ptx).values())
    result["same_counts"] = result["ts"] == result["twin"]
    return result


def run_on_gpu(shape: tuple[int, int], iters: int, extra_rows: int) -> dict[str, Any]:
    """Run both kernels on the GPU, check against torch, time them (and torch's copy)."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    src_t = torch.randn(*shape, device="cuda", dtype=torch.float16)
    nbytes = src_t.numel() * 2
    result: dict[str, Any] = {
        "example": "persistent_copy",
        "shape": list(shape),
        "extra_rows": extra_rows,
    }
    for name, fn in kernels(extra_rows):
        dst_t = torch.zeros_like(src_t)
        src = from_dlpack(src_t, assumed_align=16)
        dst = from_dlpack(dst_t, assumed_align=16)
        compiled = cute.compile(fn, src, dst)
        compiled(src, dst)
        torch.cuda.synchronize()
        ok = bool(torch.equal(dst_t, src_t))
        ms = time_ms(lambda c=compiled, s=src, d=dst: c(s, d), iters)
        result[name] = {"ok": ok, "ms": ms, "GBps": 2 * nbytes / (ms * 1e6)}
    dst_t = torch.empty_like(src_t)
    ms = time_ms(lambda: dst_t.copy_(src_t), iters)
    result["torch"] = {"ms": ms, "GBps": 2 * nbytes / (ms * 1e6)}
    result["ts_over_twin"] = result["twin"]["ms"] / result["ts"]["ms"]
    return result


def time_ms(fn: Any, iters: int) -> float:
    import torch

    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return float(start.elapsed_time(end)) / iters


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compile-only", action="store_true", help="CPU: compile, count PTX")
    parser.add_argument("--m", type=int, default=DEFAULT_SHAPE[0], help=f"rows (x{TILE_M})")
    parser.add_argument("--n", type=int, default=DEFAULT_SHAPE[1], help=f"columns (x{TILE_N})")
    parser.add_argument(
        "--extra-rows", type=int, default=DEFAULT_EXTRA_ROWS, help="skipped tile rows"
    )
    parser.add_argument("--iters", type=int, default=20, help="timed launches (GPU run)")
    args = parser.parse_args(argv)
    if args.m % TILE_M or args.n % TILE_N:
        parser.error(f"--m must be a multiple of {TILE_M} and --n of {TILE_N}")
    shape = (args.m, args.n)
    if args.compile_only:
        out = compile_only(shape, args.extra_rows)
        print(json.dumps(out, sort_keys=True))
        return 0 if out["same_counts"] else 1
    if not gpu_ready(__file__):
        return 2
    out = run_on_gpu(shape, args.iters, args.extra_rows)
    print(json.dumps(out, sort_keys=True))
    return 0 if out["ts"]["ok"] and out["twin"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
