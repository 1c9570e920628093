"""2D TMA copy on Hopper through a multi-stage SMEM pipeline: TS kernel and hand-written twin.

Warp 0 (a load task) fills a ``stages``-deep ring of ``tile_m x tile_n`` SMEM tiles with TMA
loads that complete on each stage's full barrier (``PipelineTmaAsync``); warps 4-11 (a store
task of two warpgroups) wait for a stage, write it to global memory and release it. Each CTA
walks the tiles ``blockIdx.x, blockIdx.x + gridDim.x, ...`` in row-major tile order.
Warpgroup 0 gives registers up (``setmaxnreg.dec 40``), the store warpgroups take them
(``.inc 232``).

Variants (``--variant``; the TS kernel and its twin are the same code in each):

* ``tma_store``: 64 x 256 fp16 tiles (512-byte rows, 32 KiB), 6 stages (192 KiB).
  The store is a TMA store (``cp.async.bulk.tensor`` SMEM -> global) issued by warp 4 after a
  ``fence.proxy.async``; it is committed as a bulk group and the stage is released only after
  ``cp.async.bulk.wait_group.read 0`` (the store's SMEM reads are done). In the plan the store
  is consumer work marked ``WorkAttr.ASYNC_READ`` and the wait ``WorkAttr.ASYNC_WAIT_ALL``, so
  ts-verify proves that no stage is refilled while the store may still read it.
* ``regs``: the same tiles and stages, stored SMEM -> registers -> 16-byte global stores by
  the 256 store threads (one warp writes one 512-byte row segment per pass).
* ``baseline``: the first version, 4 stages of 128 x 64 tiles, 16-byte register stores.
* ``two_tiles`` (default): the ``tma_store`` kernel with a 2-stage ring, launched with one
  CTA per two tiles (grid = tiles / 2) instead of 132 persistent CTAs, so the hardware keeps
  every SM busy until the end: 0.98 of ``torch`` copy on 1 GiB, where every persistent
  variant stays at 0.94-0.95 (``bench/tma_copy_probe.py``, ``bench/RESULTS.md``).
* ``one_tile``: the same with 1 stage and one CTA per tile (0.985 of ``torch`` copy).

Usage::

    python examples/hopper/tma_copy.py --compile-only   # CPU: PTX counts, TS vs twin
    python examples/hopper/tma_copy.py                  # GPU: run, check, time
    python examples/hopper/tma_copy.py --variant regs --m 16384 --n 32768
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
from cuda.bindings import driver as cuda  # type: ignore[import-untyped]
from cutlass.cute.nvgpu import cpasync
from cutlass.memory import SmemAllocator

from task_scheduling import domain_loop, producer_work, schedule
from task_scheduling.harness import Case, ExampleCLI, fake_tensor, to_cute
from task_scheduling.harness import compile_only as compare
from task_scheduling.harness import run_on_gpu as run_kernels
from task_scheduling.kernel import Kernel, KernelContext, Tasks, TmaRing
from task_scheduling.plan import KernelPlan
from task_scheduling.resources import MemoryResource
from task_scheduling.schedule_builder import ResourceProxy
from task_scheduling.task import Task

CTAS = 132
LOAD_WARP, STORE_WARP, STORE_WARPS = 0, 4, 8
BLOCK_THREADS = (STORE_WARP + STORE_WARPS) * 32
STORE_THREADS = STORE_WARPS * 32
LOAD_REGS, STORE_REGS = 40, 232
DEFAULT_SHAPE = (8192, 8192)


@dataclasses.dataclass(frozen=True)
class Variant:
    """Tile shape, ring depth and store path of one version of the kernel."""

    name: str
    tile_m: int
    tile_n: int
    stages: int
    tma_store: bool
    tiles_per_cta: int = 0  # launch ceil(tiles / tiles_per_cta) CTAs; 0: CTAS persistent CTAs

    @property
    def tile_bytes(self) -> int:
        return self.tile_m * self.tile_n * 2

    @property
    def smem_bytes(self) -> int:
        return self.stages * self.tile_bytes


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("tma_store", 64, 256, 6, True),
        Variant("regs", 64, 256, 6, False),
        Variant("baseline", 128, 64, 4, False),
        Variant("two_tiles", 64, 256, 2, True, tiles_per_cta=2),
        Variant("one_tile", 64, 256, 1, True, tiles_per_cta=1),
    )
}
DEFAULT_VARIANT = "two_tiles"

# The default variant's constants (kept for readers and tools of the first version).
TILE_M = VARIANTS[DEFAULT_VARIANT].tile_m
TILE_N = VARIANTS[DEFAULT_VARIANT].tile_n
STAGES = VARIANTS[DEFAULT_VARIANT].stages
TILE_BYTES = VARIANTS[DEFAULT_VARIANT].tile_bytes


def smem_tile_layout(v: Variant) -> Any:
    """One stage: a row-major ``tile_m x tile_n`` tile (no swizzle: TMA boxes up to 256 wide)."""
    return cute.make_layout((v.tile_m, v.tile_n), stride=(v.tile_n, 1))


def ring_layout(v: Variant) -> Any:
    """All stages: ``(tile_m, tile_n, stages)``, one row-major tile after the other."""
    return cute.make_layout(
        (v.tile_m, v.tile_n, v.stages), stride=(v.tile_n, 1, v.tile_m * v.tile_n)
    )


def store_copy(v: Variant) -> Any:
    """The register store's tiled copy: 256 threads, 8 halves (16 bytes) each.

    A row of the tile is covered by ``tile_n / 8`` consecutive threads, so a warp reads
    contiguous SMEM (no bank conflicts without swizzle) and writes contiguous global memory.
    """
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16, num_bits_per_copy=128)
    per_row = v.tile_n // 8
    threads = cute.make_layout((STORE_THREADS // per_row, per_row), stride=(per_row, 1))
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


@cute.jit
def tma_store_tile(atom: Any, s_tiles: Any, g_tiles: Any, stage: Any, m: Any, n: Any) -> None:
    """Warp 4 starts the TMA store of stage ``stage`` into tile ``(m, n)`` and commits it.

    ``fence.proxy.async.shared::cta`` orders the stage's earlier accesses before the store's
    (async-proxy) reads. One elected lane issues the copy and commits it as a bulk group (the
    DSL 4.8.1 does not elect for a TMA store by itself: without it all 32 lanes would store).
    """
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp == STORE_WARP:
        cute.arch.fence_proxy("async.shared", space="cta")
        t_s, t_g = cpasync.tma_partition(
            atom, 0, cute.make_layout(1), cute.group_modes(s_tiles, 0, 2), g_tiles
        )
        with cute.arch.elect_one():
            cute.copy(atom, t_s[(None, stage)], t_g[(None, (m, n))])
            cute.arch.cp_async_bulk_commit_group()


@cute.jit
def tma_store_wait() -> None:
    """Warp 4 waits until its stores have read SMEM; the warp syncs before lane 0 releases."""
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp == STORE_WARP:
        cute.arch.cp_async_bulk_wait_group(0, read=True)
    cute.arch.sync_warp()


def _tiles(v: Variant, dst: cute.Tensor) -> tuple[int, int]:
    return cute.size(dst, mode=[0]) // v.tile_m, cute.size(dst, mode=[1]) // v.tile_n


def _grid(v: Variant, dst: cute.Tensor) -> Any:
    """CTAs to launch: ``CTAS`` persistent ones, or one per ``tiles_per_cta`` tiles."""
    if v.tiles_per_cta == 0:
        return CTAS
    tiles_m, tiles_n = _tiles(v, dst)
    return (tiles_m * tiles_n + v.tiles_per_cta - 1) // v.tiles_per_cta


def _tma_atoms(v: Variant, src: cute.Tensor, dst: cute.Tensor) -> tuple[Any, Any, Any, Any]:
    """TMA load atom over ``src`` and, for the TMA store path, TMA store atom over ``dst``."""
    load_atom, g_src = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileG2SOp(), src, smem_tile_layout(v), (v.tile_m, v.tile_n)
    )
    store_atom, g_dst = load_atom, g_src
    if v.tma_store:
        store_atom, g_dst = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileS2GOp(), dst, smem_tile_layout(v), (v.tile_m, v.tile_n)
        )
    return load_atom, g_src, store_atom, g_dst


# ---------------------------------------------------------------------------------------------
# TS kernel
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(kw_only=True)
class GlobalOut(MemoryResource):
    """The destination, written tile by tile from registers (the ``regs`` variants)."""

    variant: Any = None
    tensor: Any = None
    tiles_n: Any = 1

    @producer_work
    def store(self, stage_info: Any, *, view: Any) -> None:
        v = self.variant
        g = cute.local_tile(
            self.tensor, (v.tile_m, v.tile_n), tile_coord(stage_info.loop_offset, self.tiles_n)
        )
        tidx, _, _ = cute.arch.thread_idx()
        store_tile(store_copy(v), tidx - STORE_WARP * 32, view, g)


def ts_kernel(variant: str = DEFAULT_VARIANT) -> Kernel:
    """The TS kernel of one variant: a load warp filling the ring, a store task draining it."""
    v = VARIANTS[variant]

    def tasks(
        k: KernelContext, tma_atom: Any, g_src: Any, store_atom: Any, g_dst: Any, dst: Any
    ) -> Tasks:
        tiles_m, tiles_n = k.value(("tiles_m", "tiles_n"), lambda: _tiles(v, dst))
        ring = TmaRing(
            name="smem",
            pipeline_config=TmaRing.pipeline(v.stages, v.tile_bytes, STORE_THREADS),
            atom=tma_atom,
            gmem=g_src,
            box=(v.tile_m, v.tile_n),
            smem=k.smem_tensor(cutlass.Float16, lambda: ring_layout(v)),
            coord=lambda t: tile_coord(t, tiles_n),
            store_atom=store_atom,
            store_gmem=g_dst,
            store_warp=STORE_WARP,
        )
        out = GlobalOut(name="dst", variant=v, tensor=dst, tiles_n=tiles_n)
        tiles = (k.block_idx[0], tiles_m * tiles_n, k.grid_dim[0])  # this CTA's tiles

        @schedule
        def load(r: ResourceProxy) -> None:
            with domain_loop(*tiles):
                r.acquire()
                r.load()
                r.commit()

        @schedule
        def store(r: ResourceProxy, d: ResourceProxy) -> None:
            with domain_loop(*tiles):
                r.wait()
                if v.tma_store:  # the TMA store reads the stage until store_wait
                    r.store()
                    r.store_wait()
                else:
                    d.store(view=r.tile())
                r.release()

        return Tasks(
            [
                Task([], [ring], LOAD_WARP, 1, schedule=load(ring), num_registers=LOAD_REGS),
                Task(
                    [ring],
                    [out],
                    STORE_WARP,
                    STORE_WARPS,
                    schedule=store(ring, out),
                    num_registers=STORE_REGS,
                ),
            ],
            {out: [ring]},
        )

    kernel = Kernel(tasks, name="tma_copy", block_warps=BLOCK_THREADS // 32)

    @kernel.launcher
    @cute.jit
    def launch(src: cute.Tensor, dst: cute.Tensor, stream: cuda.CUstream | None = None) -> None:
        tma_atom, g_src, store_atom, g_dst = _tma_atoms(v, src, dst)
        kernel.launch(
            tma_atom, g_src, store_atom, g_dst, dst, grid=(_grid(v, dst), 1, 1), stream=stream
        )

    return kernel


# ---------------------------------------------------------------------------------------------
# Hand-written twin: the same schedule in plain CuTe DSL
# ---------------------------------------------------------------------------------------------


class TwinCopy:
    """The hand-written twin of one variant (``(src, dst)``)."""

    def __init__(self, variant: str = DEFAULT_VARIANT) -> None:
        self.v = VARIANTS[variant]

    @cute.kernel
    def kernel(
        self,
        tma_atom: cute.CopyAtom,
        g_src: cute.Tensor,
        store_atom: cute.CopyAtom,
        g_dst: cute.Tensor,
        dst: cute.Tensor,
    ) -> None:
        v = self.v
        bidx, _, _ = cute.arch.block_idx()
        gdim, _, _ = cute.arch.grid_dim()
        tiles_m, tiles_n = _tiles(v, dst)
        num_tiles = tiles_m * tiles_n
        alloc = SmemAllocator()
        s_tiles = alloc.allocate_tensor(cutlass.Float16, ring_layout(v), 1024)
        g_tiles = cute.zipped_divide(g_src, (v.tile_m, v.tile_n))
        g_out = cute.zipped_divide(g_dst, (v.tile_m, v.tile_n))
        bars = alloc.allocate_array(cutlass.Int64, num_elems=2 * v.stages, byte_alignment=8)
        pipe = cpipe.PipelineTmaAsync.create(
            num_stages=v.stages,
            producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
            consumer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, STORE_THREADS),
            tx_count=v.tile_bytes,
            barrier_storage=bars,
            enable_multicast_signaling=True,  # one empty-barrier arrival per consumer warp
            defer_sync=True,
        )
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp < 4:
            cute.arch.setmaxregister_decrease(LOAD_REGS)
        if warp < 1:
            state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, v.stages)
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
            cute.arch.setmaxregister_increase(STORE_REGS)
            state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, v.stages)
            tidx, _, _ = cute.arch.thread_idx()
            for t in cutlass.range(bidx, num_tiles, gdim):  # type: ignore[attr-defined]
                pipe.consumer_wait(state)
                m, n = tile_coord(t, tiles_n)
                if cutlass.const_expr(v.tma_store):  # type: ignore[attr-defined]
                    tma_store_tile(store_atom, s_tiles, g_out, state.index, m, n)
                    tma_store_wait()
                else:
                    g = cute.local_tile(dst, (v.tile_m, v.tile_n), (m, n))
                    store_tile(
                        store_copy(v), tidx - STORE_WARP * 32, s_tiles[(None, None, state.index)], g
                    )
                pipe.consumer_release(state)
                state.advance()

    @cute.jit
    def __call__(self, src: cute.Tensor, dst: cute.Tensor) -> None:
        tma_atom, g_src, store_atom, g_dst = _tma_atoms(self.v, src, dst)
        self.kernel(tma_atom, g_src, store_atom, g_dst, dst).launch(
            grid=(_grid(self.v, dst), 1, 1), block=(BLOCK_THREADS, 1, 1)
        )


# ---------------------------------------------------------------------------------------------
# Host side (tools, benches, tests, CLI): the harness of task_scheduling.harness
# ---------------------------------------------------------------------------------------------


def make_plan(variant: str = DEFAULT_VARIANT) -> KernelPlan:
    """The TMA copy as a kernel plan (traced on the host: no GPU, no DSL values)."""
    return ts_kernel(variant).plan().plan


KERNELS: dict[str, Kernel] = {name: ts_kernel(name) for name in VARIANTS}
PLANS: dict[str, KernelPlan] = {name: k.plan().plan for name, k in KERNELS.items()}
PLAN = PLANS[DEFAULT_VARIANT]


def TsCopy(variant: str = DEFAULT_VARIANT) -> Any:  # a class before; the name stays for callers
    """The TS kernel's ``@cute.jit`` launcher ``(src, dst)`` of one variant."""
    return (KERNELS[variant] if variant in KERNELS else ts_kernel(variant)).jit_launcher


ts_copy = TsCopy()
twin_copy = TwinCopy()


def _kernels(variant: str) -> dict[str, Any]:
    if variant == DEFAULT_VARIANT:
        return {"ts": ts_copy, "twin": twin_copy}
    return {"ts": TsCopy(variant), "twin": TwinCopy(variant)}


def compile_only(
    shape: tuple[int, int] = DEFAULT_SHAPE, variant: str = DEFAULT_VARIANT
) -> dict[str, Any]:
    """Verify the plan, compile both kernels for sm_90a with fake tensors, count PTX."""
    args = [fake_tensor(cutlass.Float16, shape, row_major=True, align=16) for _ in range(2)]
    kernels, plan = _kernels(variant), PLANS[variant]
    return compare("tma_copy", kernels, args, plan=plan, variant=variant, shape=[*shape])


def run_on_gpu(
    shape: tuple[int, int], iters: int, variant: str = DEFAULT_VARIANT
) -> dict[str, Any]:
    """Run both kernels on the GPU, check against torch, time them."""
    import torch

    src = torch.randn(*shape, device="cuda", dtype=torch.float16)

    def case(name: str) -> Case:
        dst = torch.zeros_like(src)
        return Case((to_cute(src), to_cute(dst)), lambda: torch.equal(dst, src))

    out = run_kernels(_kernels(variant), case, iters=iters, bytes_moved=4 * src.numel())
    return {"example": "tma_copy", "variant": variant, "shape": [*shape], **out}


def main(argv: list[str] | None = None) -> int:
    cli = ExampleCLI(__doc__, __file__, shape={"m": DEFAULT_SHAPE[0], "n": DEFAULT_SHAPE[1]})
    cli.parser.add_argument("--variant", choices=sorted(VARIANTS), default=DEFAULT_VARIANT)
    args = cli.parse(argv, lambda a: (VARIANTS[a.variant].tile_m, VARIANTS[a.variant].tile_n))
    return cli.run(
        lambda: compile_only(args.shape, args.variant),
        lambda: run_on_gpu(args.shape, args.iters, args.variant),
    )


if __name__ == "__main__":
    sys.exit(main())
