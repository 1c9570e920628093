"""2D TMA copy on Hopper through a multi-stage SMEM pipeline: TS kernel and hand-written twin.

Warp 0 (a load task) fills a ``STAGES``-deep ring of ``TILE_M x TILE_N`` SMEM tiles with TMA
loads that complete on each stage's full barrier (``PipelineTmaAsync``); warps 4-11 (a store
task of two warpgroups) wait for a stage, copy it to global memory with 128-bit accesses and
release it. Each CTA walks the tiles ``blockIdx.x, blockIdx.x + gridDim.x, ...``. Warpgroup 0
gives registers up (``setmaxnreg.dec 40``), the store warpgroups take them (``.inc 232``).

Usage::

    python examples/hopper/tma_copy.py --compile-only   # CPU: PTX counts, TS vs twin
    python examples/hopper/tma_copy.py                  # GPU: run, check, time
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
from cutlass.cute.nvgpu import cpasync
from cutlass.memory import SmemAllocator

import ts_codegen
from ts_codegen.dsl import compile_ptx
from ts_codegen.ptx import opcode_counts
from ts_ir import CooperativeGroupSpec, KernelPlan, PipelineSpec, PipelineType
from ts_trace import (
    MemoryResource,
    ResourceProxy,
    TaskDeclaration,
    TaskLocalVariable,
    build_plan,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
)

TILE_M, TILE_N, STAGES = 128, 64, 4
TILE_BYTES = TILE_M * TILE_N * 2
CTAS = 132
LOAD_WARP, STORE_WARP, STORE_WARPS = 0, 4, 8
BLOCK_THREADS = (STORE_WARP + STORE_WARPS) * 32
STORE_THREADS = STORE_WARPS * 32
LOAD_REGS, STORE_REGS = 40, 232
DEFAULT_SHAPE = (8192, 8192)


def runtime(name: str) -> Any:
    """A placeholder for a bound that is a runtime value in the kernel (named for rendering)."""
    return type(name, (), {})()


def smem_tile_layout() -> Any:
    """One stage: a row-major ``TILE_M x TILE_N`` tile."""
    return cute.make_layout((TILE_M, TILE_N), stride=(TILE_N, 1))


def ring_layout() -> Any:
    """All stages: ``(TILE_M, TILE_N, STAGES)``, one row-major tile after the other."""
    return cute.make_layout((TILE_M, TILE_N, STAGES), stride=(TILE_N, 1, TILE_M * TILE_N))


def store_copy() -> Any:
    """The store's tiled copy: 256 threads, 8 halves (16 bytes) each, 32 rows per pass."""
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16, num_bits_per_copy=128)
    threads = cute.make_layout((STORE_THREADS // 8, 8), stride=(8, 1))
    return cute.make_tiled_copy_tv(atom, threads, cute.make_layout((1, 8)))


def tile_coord(t: Any, tiles_n: int) -> tuple[Any, Any]:
    """Row-major tile order."""
    return t // tiles_n, t % tiles_n


def store_tile(tiled: Any, tid: Any, s_tile: Any, g_tile: Any) -> None:
    """SMEM tile -> registers -> global tile, by the store threads."""
    thr = tiled.get_slice(tid)
    t_s = thr.partition_S(s_tile)
    t_g = thr.partition_D(g_tile)
    frag = cute.make_fragment_like(t_s)
    cute.copy(tiled, t_s, frag)
    cute.copy(tiled, frag, t_g)


# ---------------------------------------------------------------------------------------------
# TS kernel
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(kw_only=True)
class StageBuffer(MemoryResource):
    """The SMEM ring of tiles between the TMA load and the store."""

    tma_atom: Any = None
    g_tiles: Any = None  # TMA coordinate tensor: ((TILE_M, TILE_N), (tiles_m, tiles_n))
    s_tiles: Any = None  # (TILE_M, TILE_N, STAGES)
    tiles_n: int = 1
    view: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.view = TaskLocalVariable(dtype="SmemTile", default=None)

    @producer_work
    @cute.jit
    def tma_load(self, stage_info: Any) -> None:
        """TMA-load tile ``loop_offset`` into the acquired stage."""
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
    """The destination tensor, written tile by tile by the store threads."""

    tensor: Any = None
    tiles_n: int = 1

    @producer_work
    @cute.jit
    def store(self, stage_info: Any, *, view: Any) -> None:
        m, n = tile_coord(stage_info.loop_offset, self.tiles_n)
        g = cute.local_tile(self.tensor, (TILE_M, TILE_N), (m, n))
        tidx, _, _ = cute.arch.thread_idx()
        store_tile(store_copy(), tidx - STORE_WARP * 32, view, g)


def tile_loop() -> Any:
    """The CTA's tiles: ``blockIdx.x, blockIdx.x + gridDim.x, ... < num_tiles``."""
    return domain_loop(runtime("first_tile"), runtime("num_tiles"), runtime("grid_size"))


@schedule
def load_schedule(smem: ResourceProxy) -> None:
    """Fill one stage per tile."""
    with tile_loop():
        smem.acquire()
        smem.tma_load()
        smem.commit()


@schedule
def store_schedule(smem: ResourceProxy, dst: ResourceProxy) -> None:
    """Drain one stage per tile."""
    with tile_loop():
        smem.wait()
        view = smem.read()
        dst.store(view=view)
        smem.release()


def make_plan() -> KernelPlan:
    """The TMA copy as a kernel plan."""
    pipeline = PipelineSpec(
        PipelineType.TmaAsync,
        stages=STAGES,
        bytes_per_stage=TILE_BYTES,
        producer_group=CooperativeGroupSpec("thread", 1),
        consumer_group=CooperativeGroupSpec("thread", STORE_THREADS),
    )
    smem, dst = StageBuffer(name="smem", pipeline_config=pipeline), GlobalOut(name="dst")
    tasks = [
        TaskDeclaration([], [smem], LOAD_WARP, 1, load_schedule(smem), LOAD_REGS, name="load"),
        TaskDeclaration(
            [smem],
            [dst],
            STORE_WARP,
            STORE_WARPS,
            store_schedule(smem, dst),
            STORE_REGS,
            name="store",
        ),
    ]
    return build_plan(tasks, {dst: [smem]}, name="tma_copy", block_warps=BLOCK_THREADS // 32)


PLAN = make_plan()


def _tiles(dst: cute.Tensor) -> tuple[int, int]:
    return cute.size(dst, mode=[0]) // TILE_M, cute.size(dst, mode=[1]) // TILE_N


@cute.kernel
def ts_kernel(tma_atom: cute.CopyAtom, g_src: cute.Tensor, dst: cute.Tensor) -> None:
    bidx, _, _ = cute.arch.block_idx()
    gdim, _, _ = cute.arch.grid_dim()
    tiles_m, tiles_n = _tiles(dst)
    alloc = SmemAllocator()
    s_tiles = alloc.allocate_tensor(cutlass.Float16, ring_layout(), 1024)
    g_tiles = cute.zipped_divide(g_src, (TILE_M, TILE_N))
    smem = StageBuffer(
        name="smem", tma_atom=tma_atom, g_tiles=g_tiles, s_tiles=s_tiles, tiles_n=tiles_n
    )
    dst_r = GlobalOut(name="dst", tensor=dst, tiles_n=tiles_n)
    loop = (bidx, tiles_m * tiles_n, gdim)
    ts_codegen.emit_tasks(
        PLAN, [smem, dst_r], bounds={"load": [loop], "store": [loop]}, smem_allocator=alloc
    )


@cute.jit
def ts_copy(src: cute.Tensor, dst: cute.Tensor) -> None:
    tma_atom, g_src = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileG2SOp(), src, smem_tile_layout(), (TILE_M, TILE_N)
    )
    ts_kernel(tma_atom, g_src, dst).launch(grid=(CTAS, 1, 1), block=(BLOCK_THREADS, 1, 1))


# ---------------------------------------------------------------------------------------------
# Hand-written twin: the same schedule in plain CuTe DSL
# ---------------------------------------------------------------------------------------------


@cute.kernel
def twin_kernel(tma_atom: cute.CopyAtom, g_src: cute.Tensor, dst: cute.Tensor) -> None:
    bidx, _, _ = cute.arch.block_idx()
    gdim, _, _ = cute.arch.grid_dim()
    tiles_m, tiles_n = _tiles(dst)
    num_tiles = tiles_m * tiles_n
    alloc = SmemAllocator()
    s_tiles = alloc.allocate_tensor(cutlass.Float16, ring_layout(), 1024)
    g_tiles = cute.zipped_divide(g_src, (TILE_M, TILE_N))
    bars = alloc.allocate_array(cutlass.Int64, num_elems=2 * STAGES, byte_alignment=8)
    pipe = cpipe.PipelineTmaAsync.create(
        num_stages=STAGES,
        producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
        consumer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, STORE_THREADS),
        tx_count=TILE_BYTES,
        barrier_storage=bars,
        enable_multicast_signaling=True,  # one empty-barrier arrival per consumer warp
        defer_sync=True,
    )
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp < 4:
        cute.arch.warpgroup_reg_dealloc(LOAD_REGS)
    if warp < 1:
        state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, STAGES)
        for t in cutlass.range(bidx, num_tiles, gdim):  # type: ignore[attr-defined]
            pipe.producer_acquire(state)
            m, n = tile_coord(t, tiles_n)
            t_s, t_g = cpasync.tma_partition(
                tma_atom, 0, cute.make_layout(1), cute.group_modes(s_tiles, 0, 2), g_tiles
            )
            cute.copy(
                tma_atom,
                t_g[(None, (m, n))],
                t_s[(None, state.index)],
                tma_bar_ptr=pipe.producer_get_barrier(state),
            )
            pipe.producer_commit(state)
            state.advance()
    if (warp >= STORE_WARP) & (warp < STORE_WARP + STORE_WARPS):
        cute.arch.warpgroup_reg_alloc(STORE_REGS)
        state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, STAGES)
        tidx, _, _ = cute.arch.thread_idx()
        for t in cutlass.range(bidx, num_tiles, gdim):  # type: ignore[attr-defined]
            pipe.consumer_wait(state)
            m, n = tile_coord(t, tiles_n)
            g = cute.local_tile(dst, (TILE_M, TILE_N), (m, n))
            store_tile(store_copy(), tidx - STORE_WARP * 32, s_tiles[(None, None, state.index)], g)
            pipe.consumer_release(state)
            state.advance()


@cute.jit
def twin_copy(src: cute.Tensor, dst: cute.Tensor) -> None:
    tma_atom, g_src = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileG2SOp(), src, smem_tile_layout(), (TILE_M, TILE_N)
    )
    twin_kernel(tma_atom, g_src, dst).launch(grid=(CTAS, 1, 1), block=(BLOCK_THREADS, 1, 1))


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def compile_only(shape: tuple[int, int]) -> dict[str, Any]:
    """Verify the plan, compile both kernels for sm_90a with fake tensors, count PTX."""
    from cutlass.cute.runtime import make_fake_compact_tensor

    try:
        from ts_verify import verify

        verify(PLAN).raise_for_errors()
        verified = True
    except ImportError:
        verified = False
    result: dict[str, Any] = {"example": "tma_copy", "shape": list(shape), "verified": verified}
    for name, fn in (("ts", ts_copy), ("twin", twin_copy)):
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


def run_on_gpu(shape: tuple[int, int], iters: int) -> dict[str, Any]:
    """Run both kernels on the GPU, check against torch, time them."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    src_t = torch.randn(*shape, device="cuda", dtype=torch.float16)
    nbytes = src_t.numel() * 2
    result: dict[str, Any] = {"example": "tma_copy", "shape": list(shape)}
    for name, fn in (("ts", ts_copy), ("twin", twin_copy)):
        dst_t = torch.zeros_like(src_t)
        src = from_dlpack(src_t, assumed_align=16)
        dst = from_dlpack(dst_t, assumed_align=16)
        compiled = cute.compile(fn, src, dst)
        compiled(src, dst)
        torch.cuda.synchronize()
        ok = bool(torch.equal(dst_t, src_t))
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            compiled(src, dst)
        end.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(end) / iters
        result[name] = {"ok": ok, "ms": ms, "GBps": 2 * nbytes / (ms * 1e6)}
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compile-only", action="store_true", help="CPU: compile, count PTX")
    parser.add_argument("--m", type=int, default=DEFAULT_SHAPE[0], help="rows (multiple of 128)")
    parser.add_argument("--n", type=int, default=DEFAULT_SHAPE[1], help="columns (multiple of 64)")
    parser.add_argument("--iters", type=int, default=20, help="timed launches (GPU run)")
    args = parser.parse_args(argv)
    shape = (args.m, args.n)
    if args.compile_only:
        out = compile_only(shape)
        print(json.dumps(out, sort_keys=True))
        return 0 if out["same_counts"] else 1
    out = run_on_gpu(shape, args.iters)
    print(json.dumps(out, sort_keys=True))
    return 0 if out["ts"]["ok"] and out["twin"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
