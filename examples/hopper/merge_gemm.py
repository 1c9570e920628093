"""Merge: a GEMM fed by two TMA producers, plus a residual, on Hopper: TS kernel and twin.

``out = A @ B^T + R`` (``A``: ``M x K``, ``B``: ``N x K``, both K-major fp16 or bf16; ``R`` and
``out``: ``M x N`` row-major, the input dtype; fp32 math). A persistent CTA per SM walks the
``128 x 128`` output tiles. Warp 0 TMA-loads the tile's ``A`` K blocks (``128 x 64``) into ring
``smem_a``, warp 1 the ``B`` blocks into ring ``smem_b`` (4 stages each); the two rings are a
Merge group ``ab``. Warp 2 TMA-loads the tile's ``R`` into a 2-stage ring ``smem_r``.
Warpgroups 1-2 (task ``mma``) wait on both members, issue the WGMMAs of the block (``A`` from
``smem_a``'s stage, ``B`` from ``smem_b``'s, handed over as a token), and free both stages of
the previous block with one ``ab.release()`` once ``wgmma.wait_group 1`` retired its MMAs.
After the K loop they wait on ``smem_r``, add its tile to the fp32 accumulator, release it and
write ``out`` through the TMA-stored epilogue of ``gemm.py``.

The group's release is lowered as it is verified: a release of every member, in member order
(``docs/groups.rst``), so the twin is the same kernel written by hand with one pipeline per
ring, whose stages the consumers release one after the other.

``M`` and ``N`` must be multiples of 128 and ``K`` of 64 (a typed error otherwise).

Usage::

    python examples/hopper/merge_gemm.py --compile-only   # CPU: PTX counts, TS vs twin
    python examples/hopper/merge_gemm.py                  # GPU: run, check, time
    python examples/hopper/merge_gemm.py --m 4096 --n 4096 --k 4096 --dtype fp16
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe
import cutlass.utils.hopper_helpers as sm90
from _gemm_config import K_BLOCK_BYTES, PRODUCER_REGS, STORE_WARP, WARPGROUP, GemmConfig
from _gemm_epilogue import epilogue_drain, epilogue_store
from _gemm_steps import (
    chunk_blocks,
    epilogue_barrier,
    make_accumulator,
    make_epilogue_views,
    make_mma_fragments,
    make_scheduler,
    make_tiled_mma,
    mma_begin_tile,
    mma_wait,
    value_chunks,
)
from _group_gemm import (
    DEFAULT_MNK,
    STAGES,
    StageIndex,
    check_shape,
    compile_counts,
    gemm_config,
    gemm_part,
    host_values,
    time_gpu,
    tma_pipeline,
    torch_dtype,
)
from _group_gemm import main as group_main
from cutlass.base_dsl.ast_helpers import range_constexpr
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.cutlass_dsl import Constexpr
from cutlass.memory import SmemAllocator
from cutlass.tensor_utils import LayoutEnum

from task_scheduling import consumer_work, domain_loop, producer_work, schedule, work_tile_loop
from task_scheduling.enums import WorkAttr
from task_scheduling.harness import Case, to_cute
from task_scheduling.kernel import (
    Kernel,
    KernelContext,
    Tasks,
    TmaRing,
    TmaSource,
    WgmmaRing,
    WgmmaWaits,
    prefetch_tma,
)
from task_scheduling.pipeline_group import PipelineGroup, PipelineGroupMode
from task_scheduling.plan import KernelPlan
from task_scheduling.schedule_builder import ResourceProxy
from task_scheduling.task import Task

R_STAGES = 2  # the residual ring
LOAD_A_WARP, LOAD_B_WARP, LOAD_R_WARP = 0, 1, 2
MMA_WARP, MMA_WARPS = 4, 8  # warpgroups 1-2: one 64-row WGMMA slab each
BLOCK_THREADS = (MMA_WARP + MMA_WARPS) * 32


def r_layout(cfg: GemmConfig) -> Any:
    """The residual ring: ``(BM, BN, R_STAGES)``, N-major and swizzled like the epilogue's."""
    return sm90.make_smem_layout_epi(cfg.element, LayoutEnum.ROW_MAJOR, cfg.tile_mn, R_STAGES)


def launch_values(
    cfg: GemmConfig, a: Any, b: Any, r: Any, c: Any
) -> tuple[list[Any], list[Any], Any, Any]:
    """In a launcher: ``host_values`` with the residual's TMA load (a whole tile per load)
    and ring layout after the others."""
    atoms, layouts, params, grid = host_values(cfg, a, b, c)
    rl = r_layout(cfg)
    g2s = cpasync.CopyBulkTensorTileG2SOp()
    atom_r, t_r = cpasync.make_tiled_tma_atom(g2s, r, cute.slice_(rl, (None, None, 0)), cfg.tile_mn)
    return [*atoms, atom_r, t_r], [*layouts, rl], params, grid


def tma_views(atom: Any, gmem: Any, smem: Any, box: tuple[int, int]) -> tuple[Any, Any]:
    """TMA views ``(g, s)`` of one ring: ``g[(None, i, j)]`` is box ``(i, j)``, ``s[(None, st)]``
    stage ``st``."""
    tiles = cute.local_tile(gmem, box, (None, None))  # (box..., i, j)
    s, g = cpasync.tma_partition(
        atom, 0, cute.make_layout(1), cute.group_modes(smem, 0, 2), cute.group_modes(tiles, 0, 2)
    )
    return g, s


@cute.jit
def mma_block(tiled_mma: Any, acc: Any, t_ra: Any, t_rb: Any, stage_a: Any, stage_b: Any) -> None:
    """The WGMMAs of one K block, ``A`` from ``stage_a`` and ``B`` from ``stage_b``; commit."""
    for kk in range_constexpr(cute.size(t_ra, mode=[2])):
        a, b = t_ra[(None, None, kk, stage_a)], t_rb[(None, None, kk, stage_b)]
        cute.gemm(tiled_mma, acc, a, b, acc)
    warpgroup.commit_group()


@cute.jit
def add_residual(tiled_mma: Any, acc: Any, s_r: Any, tidx: Any) -> None:
    """``acc += R`` in fp32: each thread reads the residual at its accumulator's coordinates."""
    r = tiled_mma.get_slice(tidx).partition_C(s_r)
    for lo, hi in value_chunks(cute.size(acc)):
        for i in range_constexpr(lo, hi):
            acc[i] = acc[i] + r[i].to(cutlass.Float32)


# ---------------------------------------------------------------------------------------------
# TS kernel
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(kw_only=True)
class TileRing(StageIndex, WgmmaWaits):
    """A TMA-loaded SMEM ring of the MMA task. ``dims`` names the modes of the CTA tile ``(m, n,
    k)`` (of extents ``tile``: ``(BM, BN, BK)``) that its boxes span: ``"mk"`` for ``A`` (a load
    reads K block ``k`` of the work tile's rows ``m``), ``"nk"`` for ``B``, ``"mn"`` for ``R``.

    Work methods: ``setup`` (producer, auxiliary: the TMA views), ``load`` (producer), ``stage``
    (consumer: the waited stage's index, for the other operand's ``mma``), ``mma`` (consumer:
    the K block's WGMMAs, ``A`` from this stage, ``B`` from ``b_stage``), ``mma_wait_prior`` /
    ``mma_wait_all`` (``WgmmaWaits``: ``wgmma.wait_group 1`` / ``0``).
    """

    src: Any = None
    dims: str = "mk"
    tile: tuple[int, int, int] = (0, 0, 0)
    acc: Any = None

    def pick(self, m: Any, n: Any, k: Any) -> tuple[Any, ...]:
        """The ``dims`` of ``(m, n, k)``: a box's coordinate, or (of ``tile``) its shape."""
        return tuple(dict(zip("mnk", (m, n, k), strict=True))[d] for d in self.dims)

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    def setup(self, stage_info: Any) -> None:
        src = self.src
        self.views = tma_views(src.atom, src.gmem, src.smem, self.pick(*self.tile))

    @producer_work
    def load(self, stage_info: Any) -> None:
        m, n, _ = stage_info.work_tile.tile_idx
        (g, s), atom = self.views, self.src.atom
        box = (None, *self.pick(m, n, stage_info.loop_offset))  # the whole box at its coordinate
        cute.copy(atom, g[box], s[(None, stage_info.stage_idx)], tma_bar_ptr=stage_info.barrier)

    @consumer_work
    def mma(self, stage_info: Any, *, b_stage: Any) -> None:
        acc = self.acc
        mma_block(acc.tiled_mma, acc.regs, acc.frag_a, acc.frag_b, stage_info.stage_idx, b_stage)


@dataclasses.dataclass(kw_only=True)
class ResidualRing(TileRing):
    """``R``'s ring (``dims="mn"``: one tile per work tile). ``add`` (consumer): ``acc += R`` in
    fp32 from the waited tile; once it returns, ``R`` is in registers and the stage is free."""

    @producer_work
    def load(self, stage_info: Any) -> None:
        m, n, _ = stage_info.work_tile.tile_idx
        (g, s), atom = self.views, self.src.atom
        dst = s[(None, stage_info.stage_idx)]
        cute.copy(atom, g[(None, m, n)], dst, tma_bar_ptr=stage_info.barrier)  # no K block

    @consumer_work
    def add(self, stage_info: Any) -> None:
        acc, tile = self.acc, self.src.smem[(None, None, stage_info.stage_idx)]
        add_residual(acc.tiled_mma, acc.regs, tile, acc.tidx)


def ts_kernel(cfg: GemmConfig | None = None, *, release_each: bool = False) -> Kernel:
    """Three load warps (``A``, ``B``, ``R``); the ``A`` / ``B`` rings merged into the MMA task.

    ``release_each=True`` frees the members one by one (``ab.smem_a.release()``, ...) instead
    of with ``ab.release()``: a broken schedule for tests (TS-V241).
    """
    cfg = cfg or gemm_config()

    def tasks(
        k: KernelContext,
        atom_a: Any,
        t_a: Any,
        atom_b: Any,
        t_b: Any,
        atom_c: Any,
        t_c: Any,
        atom_r: Any,
        t_r: Any,
        a_layout: Any,
        b_layout: Any,
        c_layout: Any,
        rr_layout: Any,
        params: Any,
    ) -> Tasks:
        prefetch_tma(k, atom_a, atom_b, atom_c, atom_r, warp=LOAD_A_WARP)
        layouts = (a_layout, b_layout, c_layout)  # of the A and B stages, the epilogue buffers
        k_tiles, wq, acc, c = gemm_part(k, cfg, params, t_a, atom_c, t_c, *layouts)
        s_r = k.smem_tensor(cfg.element, rr_layout)
        (bm, bn), threads = cfg.tile_mn, cfg.consumer_threads

        def ring(name: str, pipe: Any, src: TmaSource, dims: str, kind: Any = TileRing) -> Any:
            tile = (bm, bn, cfg.tile_k)
            return kind(name=name, pipeline_config=pipe, src=src, dims=dims, tile=tile, acc=acc)

        # A and B: rings of K blocks (WGMMA reads them), merged; R: one tile per work tile.
        a_pipe = WgmmaRing.pipeline(STAGES, bm * K_BLOCK_BYTES, threads)
        b_pipe = WgmmaRing.pipeline(STAGES, bn * K_BLOCK_BYTES, threads)
        r_pipe = TmaRing.pipeline(R_STAGES, bm * bn * int(cfg.element.width) // 8, threads)
        smem_a = ring("smem_a", a_pipe, TmaSource(atom_a, t_a, acc.smem_a), "mk")
        smem_b = ring("smem_b", b_pipe, TmaSource(atom_b, t_b, acc.smem_b), "nk")
        smem_r = ring("smem_r", r_pipe, TmaSource(atom_r, t_r, s_r), "mn", ResidualRing)
        ab = PipelineGroup(name="ab", members=[smem_a, smem_b], mode=PipelineGroupMode.Merge)

        @schedule
        def load_k(wq: ResourceProxy, r: ResourceProxy) -> None:  # an operand's K blocks
            r.setup()
            with work_tile_loop(wq), domain_loop(k_tiles, unroll=1):
                r.acquire()
                r.load()
                r.commit()

        @schedule
        def load_tile(wq: ResourceProxy, r: ResourceProxy) -> None:  # the residual tile
            r.setup()
            with work_tile_loop(wq):
                r.acquire()
                r.load()
                r.commit()

        def release(g: ResourceProxy) -> None:  # one release frees the stage of both rings
            for member in (g.smem_a, g.smem_b) if release_each else (g,):
                member.release()  # one by one (release_each): wrong, a Merge's is collapsed

        @schedule
        def mma(
            wq: ResourceProxy, g: ResourceProxy, acc: ResourceProxy, r: ResourceProxy,
            c: ResourceProxy,
        ) -> None:  # fmt: skip
            acc.setup()
            c.setup()
            with work_tile_loop(wq):
                acc.zero()
                with domain_loop(k_tiles, unroll=1) as kb:
                    g.smem_a.wait()
                    g.smem_b.wait()
                    g.smem_a.mma(b_stage=g.smem_b.stage())
                    g.smem_a.mma_wait_prior()  # the previous block's MMAs are done ...
                    with kb.every(1, start=1):
                        release(g)  # ... so its stages go back to the producers
                    with kb.last_iter():
                        g.smem_a.mma_wait_all()
                        release(g)
                # Again, unconditionally: with the last block's wait alone, ptxas sees a path
                # from the loop to the accumulator's reads with WGMMAs in flight (as gemm.py).
                g.smem_a.mma_wait_all()
                r.wait()
                r.add()  # acc += R: then R is in registers and its stage is free
                r.release()
                c.store()
            c.drain()

        return Tasks(
            [
                Task([wq], [smem_a], LOAD_A_WARP, 1, schedule=load_k(wq, smem_a),
                     num_registers=PRODUCER_REGS, name="load_a"),
                Task([wq], [smem_b], LOAD_B_WARP, 1, schedule=load_k(wq, smem_b),
                     num_registers=PRODUCER_REGS, name="load_b"),
                Task([wq], [smem_r], LOAD_R_WARP, 1, schedule=load_tile(wq, smem_r),
                     num_registers=PRODUCER_REGS, name="load_r"),
                Task(
                    [wq, smem_a, smem_b, acc, smem_r],
                    [c],
                    MMA_WARP,
                    MMA_WARPS,
                    schedule=mma(wq, ab, acc, smem_r, c),
                    num_registers=cfg.consumer_regs,
                    name="mma",
                ),
            ],
            {smem_a: [wq], smem_b: [wq], smem_r: [wq], c: [smem_a, smem_b, acc, smem_r, wq]},
        )  # fmt: skip

    kernel = Kernel(tasks, name="merge_gemm", block_warps=BLOCK_THREADS // 32)
    kernel.launcher(launcher(cfg, kernel.launch))
    return kernel


# ---------------------------------------------------------------------------------------------
# Hand-written twin: the same schedule in plain CuTe DSL
# ---------------------------------------------------------------------------------------------


@cute.jit
def _twin_load(
    pipe: Any, atom: Any, g: Any, s: Any, params: Any, k_tiles: Any, is_b: Constexpr[bool]
) -> None:
    """One operand's load warp: its K blocks of every tile of this CTA."""
    state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, STAGES)
    sched = make_scheduler(params)
    tile = sched.tile()
    while tile.is_valid_tile:
        m, n, _ = tile.tile_idx
        row = n if is_b else m
        for kb in cutlass.range(k_tiles, unroll=1):  # type: ignore[attr-defined]
            pipe.producer_acquire(state)
            bar = pipe.producer_get_barrier(state)
            cute.copy(atom, g[(None, row, kb)], s[(None, state.index)], tma_bar_ptr=bar)
            state.advance()  # TMA commits are no-ops: the load completes the barrier
        sched.advance()
        tile = sched.tile()


@cute.kernel
def twin_kernel(
    atom_a: cute.CopyAtom,
    t_a: cute.Tensor,
    atom_b: cute.CopyAtom,
    t_b: cute.Tensor,
    atom_c: cute.CopyAtom,
    t_c: cute.Tensor,
    atom_r: cute.CopyAtom,
    t_r: cute.Tensor,
    tiled_mma: cute.TiledMma,
    a_layout: cute.ComposedLayout,
    b_layout: cute.ComposedLayout,
    c_layout: cute.ComposedLayout,
    rr_layout: cute.ComposedLayout,
    params: Any,
    cfg: Constexpr[GemmConfig],
) -> None:
    """Load warps 0-2 (``A``, ``B``, ``R``), WGMMA warpgroups 1-2."""
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp == LOAD_A_WARP:
        for atom in (atom_a, atom_b, atom_c, atom_r):
            cpasync.prefetch_descriptor(atom)
    alloc = SmemAllocator()
    s_a = alloc.allocate_tensor(cfg.element, a_layout.outer, 1024, swizzle=a_layout.inner)
    s_b = alloc.allocate_tensor(cfg.element, b_layout.outer, 1024, swizzle=b_layout.inner)
    s_c = alloc.allocate_tensor(cfg.out_element, c_layout.outer, 1024, swizzle=c_layout.inner)
    s_r = alloc.allocate_tensor(cfg.element, rr_layout.outer, 1024, swizzle=rr_layout.inner)
    k_tiles = chunk_blocks(cfg, t_a)
    bm, bn = cfg.tile_mn
    bytes_k = cfg.tile_k * int(cfg.element.width) // 8
    threads = cfg.consumer_threads
    pipe_a = tma_pipeline(alloc, STAGES, bm * bytes_k, threads)
    pipe_b = tma_pipeline(alloc, STAGES, bn * bytes_k, threads)
    pipe_r = tma_pipeline(alloc, R_STAGES, bm * bn * int(cfg.element.width) // 8, threads)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()

    if warp < WARPGROUP // 32:
        cute.arch.setmaxregister_decrease(PRODUCER_REGS)
    if warp < LOAD_A_WARP + 1:
        g, s = tma_views(atom_a, t_a, s_a, (bm, cfg.tile_k))
        _twin_load(pipe_a, atom_a, g, s, params, k_tiles, False)
    if (warp >= LOAD_B_WARP) & (warp < LOAD_B_WARP + 1):
        g, s = tma_views(atom_b, t_b, s_b, (bn, cfg.tile_k))
        _twin_load(pipe_b, atom_b, g, s, params, k_tiles, True)
    if (warp >= LOAD_R_WARP) & (warp < LOAD_R_WARP + 1):
        g, s = tma_views(atom_r, t_r, s_r, cfg.tile_mn)
        state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, R_STAGES)
        sched = make_scheduler(params)
        tile = sched.tile()
        while tile.is_valid_tile:
            m, n, _ = tile.tile_idx
            pipe_r.producer_acquire(state)
            bar = pipe_r.producer_get_barrier(state)
            cute.copy(atom_r, g[(None, m, n)], s[(None, state.index)], tma_bar_ptr=bar)
            state.advance()
            sched.advance()
            tile = sched.tile()
    if (warp >= MMA_WARP) & (warp < MMA_WARP + MMA_WARPS):
        cute.arch.setmaxregister_increase(cfg.consumer_regs)
        wg = cute.arch.make_warp_uniform(tidx // WARPGROUP) - MMA_WARP // 4
        t_ra, t_rb = make_mma_fragments(tiled_mma, s_a, s_b, wg)
        acc = make_accumulator(cfg, tiled_mma, wg)
        ctid = tidx - MMA_WARP * 32
        views = make_epilogue_views(cfg, tiled_mma, acc, s_c, ctid)
        bar = epilogue_barrier(cfg)
        is_store_warp = warp == STORE_WARP
        # One cursor per ring, as the group's release is lowered: a release of each member.
        read_a = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, STAGES)
        read_b = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, STAGES)
        free_a = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, STAGES)
        free_b = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, STAGES)
        read_r = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, R_STAGES)
        sched = make_scheduler(params)
        tile = sched.tile()
        while tile.is_valid_tile:
            m, n, _ = tile.tile_idx
            mma_begin_tile(tiled_mma, acc)
            for kb in cutlass.range(k_tiles, unroll=1):  # type: ignore[attr-defined]
                pipe_a.consumer_wait(read_a)
                stage_a = read_a.index
                read_a.advance()
                pipe_b.consumer_wait(read_b)
                stage_b = read_b.index
                read_b.advance()
                mma_block(tiled_mma, acc, t_ra, t_rb, stage_a, stage_b)
                mma_wait(1)  # the previous block's MMAs are done: free its stages
                if kb >= 1:
                    pipe_a.consumer_release(free_a)
                    free_a.advance()
                    pipe_b.consumer_release(free_b)
                    free_b.advance()
                if kb == k_tiles - 1:
                    mma_wait(0)
                    pipe_a.consumer_release(free_a)
                    free_a.advance()
                    pipe_b.consumer_release(free_b)
                    free_b.advance()
            mma_wait(0)  # unconditionally, as the TS schedule (no WGMMAs in flight for ptxas)
            pipe_r.consumer_wait(read_r)
            add_residual(tiled_mma, acc, s_r[(None, None, read_r.index)], ctid)
            pipe_r.consumer_release(read_r)
            read_r.advance()
            epilogue_store(cfg, views, atom_c, s_c, t_c, m, n, bar, is_store_warp)
            sched.advance()
            tile = sched.tile()
        epilogue_drain(is_store_warp)


def twin_launcher(cfg: GemmConfig) -> Any:
    """The twin's ``@cute.jit`` launcher ``(a, b, r, c)`` (its kernel also takes the tiled MMA
    and ``cfg``)."""

    def start(*values: Any, stream: Any, **launch: Any) -> None:
        twin_kernel(*values[:8], make_tiled_mma(cfg), *values[8:], cfg).launch(**launch)

    return launcher(cfg, start)


# ---------------------------------------------------------------------------------------------
# Host side (tools, benches, tests, CLI): the harness of task_scheduling.harness
# ---------------------------------------------------------------------------------------------


def launcher(cfg: GemmConfig, start: Callable[..., None]) -> Any:
    """The ``@cute.jit`` ``launch(a, b, r, c, stream=None)`` of both kernels, for ``cfg``.

    It builds the TMA atoms, SMEM layouts and scheduler parameters (``launch_values``) and
    hands them to ``start(*values, grid=, block=, stream=)``: the TS kernel's ``launch`` or the
    twin's.
    """

    @cute.jit
    def launch(
        a: cute.Tensor, b: cute.Tensor, r: cute.Tensor, c: cute.Tensor, stream: Any = None
    ) -> None:
        atoms, layouts, params, grid = launch_values(cfg, a, b, r, c)
        start(*atoms, *layouts, params, grid=grid, block=(BLOCK_THREADS, 1, 1), stream=stream)

    return launch


def make_plan(cfg: GemmConfig | None = None) -> KernelPlan:
    """The merge GEMM as a kernel plan (traced on the host: no GPU, no DSL values)."""
    return ts_kernel(cfg).plan().plan


def kernels(cfg: GemmConfig) -> dict[str, Any]:
    """The TS kernel and its twin, by name (launchers ``(a, b, r, c)``)."""
    return {"ts": ts_kernel(cfg), "twin": twin_launcher(cfg)}


def compile_only(
    mnk: tuple[int, int, int] = DEFAULT_MNK, dtype: str = "bf16", *, ops: bool = False
) -> dict[str, Any]:
    """Verify the plan, compile both kernels for sm_90a with fake tensors, count PTX."""
    cfg = gemm_config(dtype, mnk[1])
    check_shape("merge_gemm", "ab", mnk, cfg)
    m, n, k = mnk
    shapes = ((m, k), (n, k), (m, n), (m, n))
    return compile_counts("merge_gemm", kernels(cfg), shapes, cfg, ops=ops, mnk=[*mnk], dtype=dtype)


def run_on_gpu(mnk: tuple[int, int, int], dtype: str, iters: int) -> dict[str, Any]:
    """Run both kernels on the GPU, check ``A @ B^T + R`` against torch, time them."""
    import torch

    cfg = gemm_config(dtype, mnk[1])
    check_shape("merge_gemm", "ab", mnk, cfg)
    m, n, k = mnk
    tdt = torch_dtype(dtype)
    a = torch.randn(m, k, device="cuda", dtype=tdt)
    b = torch.randn(n, k, device="cuda", dtype=tdt)
    r = torch.randn(m, n, device="cuda", dtype=tdt)
    want = (a.float() @ b.float().t() + r.float()).to(tdt).float()

    def case(name: str) -> Case:
        c = torch.zeros(m, n, device="cuda", dtype=tdt)

        def check() -> dict[str, Any]:
            got = c.float()
            ok = bool(torch.allclose(got, want, rtol=2e-2, atol=0.5))
            return {"ok": ok, "max_abs_err": (got - want).abs().max().item()}

        return Case((to_cute(a), to_cute(b), to_cute(r), to_cute(c)), check)

    return time_gpu("merge_gemm", kernels(cfg), case, mnk, dtype, iters)


def main(argv: list[str] | None = None) -> int:
    return group_main(__doc__, __file__, compile_only, run_on_gpu, argv)


if __name__ == "__main__":
    sys.exit(main())
