"""Fork: one TMA load of ``A`` into a GEMM and an activation on Hopper: TS kernel and twin.

``C = A @ B^T`` and ``D = relu(A)`` from one read of ``A`` (``A``: ``M x K``, ``B``: ``N x K``,
both K-major fp16 or bf16; ``C``: ``M x N``, ``D``: ``M x K``, the input dtype). A persistent
CTA per SM walks the ``128 x 128`` output tiles of ``C``. Warp 0 TMA-loads each K block of the
tile's ``A`` rows (``128 x 64``) and ``B`` rows (``128 x 64``) once into a 4-stage SMEM ring.
The ring is two resources grouped as a Fork ``a_fork``: ``ab`` (a ``WgmmaRing``, the ``A`` and
``B`` blocks, read by WGMMA) and ``a_act`` (a ``TmaRing`` view of the same ``A`` stages); the
load warp acquires both members' stage, loads once and publishes both with one
``a_fork.commit()``.

* warpgroups 1-2 (task ``mma``) wait on ``ab``, issue the WGMMAs of the block, release the
  previous stage once ``wgmma.wait_group 1`` retired its MMAs, and write the tile of ``C``
  through the TMA-stored epilogue (as ``gemm.py``'s cooperative kernel does);
* warpgroup 3 (task ``act``) waits on ``a_act``, reads the ``A`` block from the swizzled stage,
  writes ``relu`` of it to ``D`` (only for the tiles of the first column of ``C``: every ``A``
  block is loaded once per tile column, and ``D`` needs it once) and releases ``a_act``.

How the group is lowered (``docs/groups.rst``): one TMA load completes the one mbarrier it is
given, so both members wait on ``ab``'s full barriers (armed by ``ab``'s acquire with the
stage's ``A`` and ``B`` bytes) and keep their own empty barriers (each acquire waits for its
own consumers). The twin builds the same barriers by hand.

``M`` and ``N`` must be multiples of 128 and ``K`` of 64 (a typed error otherwise).

Usage::

    python examples/hopper/fork_gemm.py --compile-only   # CPU: PTX counts, TS vs twin
    python examples/hopper/fork_gemm.py                  # GPU: run, check, time
    python examples/hopper/fork_gemm.py --m 4096 --n 4096 --k 4096 --dtype fp16
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
from _gemm_config import K_BLOCK_BYTES, LOAD_WARP, PRODUCER_REGS, STORE_WARP, WARPGROUP, GemmConfig
from _gemm_epilogue import epilogue_drain, epilogue_store
from _gemm_steps import (
    chunk_blocks,
    cluster_coord,
    epilogue_barrier,
    load_k_block,
    make_ab_pipeline,
    make_accumulator,
    make_epilogue_views,
    make_mma_fragments,
    make_scheduler,
    make_tiled_mma,
    mma_begin_tile,
    mma_k_block,
    mma_wait,
    partition_ab_for_tma,
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
from cutlass.cute.nvgpu import cpasync
from cutlass.cutlass_dsl import Constexpr
from cutlass.memory import SmemAllocator

from task_scheduling import domain_loop, producer_work, schedule, work_tile_loop
from task_scheduling.harness import Case, to_cute
from task_scheduling.kernel import (
    Kernel,
    KernelContext,
    Tasks,
    TmaRing,
    TmaSource,
    WgmmaRing,
    prefetch_tma,
)
from task_scheduling.pipeline_group import PipelineGroup, PipelineGroupMode
from task_scheduling.plan import KernelPlan
from task_scheduling.resources import MemoryResource
from task_scheduling.schedule_builder import ResourceProxy
from task_scheduling.task import Task

MMA_WARP, MMA_WARPS = 4, 8  # warpgroups 1-2: one 64-row WGMMA slab each
ACT_WARP, ACT_WARPS = 12, 4  # warpgroup 3
ACT_THREADS = ACT_WARPS * 32
# setmaxnreg: 512 threads start with 128 registers each; the producer warpgroup gives 88 a
# thread back, the WGMMA warpgroups take 40 more (a 64 x 128 fp32 slab is 64 of them) and the
# activation 8: 128 * 40 + 256 * 168 + 128 * 136 = 65536, the whole register file.
MMA_REGS, ACT_REGS = 168, 136
BLOCK_THREADS = (ACT_WARP + ACT_WARPS) * 32


def act_copy(dtype: Any) -> Any:
    """The activation warpgroup's tiled copy: 16 bytes a thread, a 64-wide row by 8 threads.

    The 128-byte swizzle of the ``A`` stage moves whole 16-byte chunks, so each thread's 8
    elements stay contiguous in SMEM.
    """
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype, num_bits_per_copy=128)
    per_row = 64 // 8
    threads = cute.make_layout((ACT_THREADS // per_row, per_row), stride=(per_row, 1))
    return cute.make_tiled_copy_tv(atom, threads, cute.make_layout((1, 8)))


@cute.jit
def relu_block(s_a: Any, stage: Any, d: Any, m: Any, n: Any, k: Any) -> None:
    """``D[tile (m, k)] = relu(A block)`` from stage ``stage`` of the ``A`` stages ``s_a``, by the
    activation warpgroup, once per row.

    Only the tiles of column ``n == 0`` write: the other columns load the same ``A`` blocks.
    """
    tidx, _, _ = cute.arch.thread_idx()
    tid, view = tidx - ACT_WARP * 32, s_a[(None, None, stage)]
    if n == 0:
        bm, bk = cute.size(view, mode=[0]), cute.size(view, mode=[1])
        tiled = act_copy(d.element_type)
        thr = tiled.get_slice(tid)
        t_s = thr.partition_S(view)
        t_g = thr.partition_D(cute.local_tile(d, (bm, bk), (m, k)))
        frag = cute.make_fragment_like(t_s)
        cute.copy(tiled, t_s, frag)
        x = frag.load().to(cutlass.Float32)
        frag.store(cute.math.max(x, cute.full_like(x, 0.0)).to(d.element_type))  # type: ignore[attr-defined]
        cute.copy(tiled, frag, t_g)


# ---------------------------------------------------------------------------------------------
# TS kernel
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(kw_only=True)
class AView(StageIndex, TmaRing):
    """The activation's view of the ``A`` stages (the Fork's second member); ``stage`` hands
    the waited stage's index to ``D``'s store."""


@dataclasses.dataclass(kw_only=True)
class ReluOut(MemoryResource):
    """``D``, written block by block as ``relu`` of the waited ``A`` stage of ``smem``."""

    tensor: Any = None
    smem: Any = None

    @producer_work
    def store(self, stage_info: Any, *, stage: Any) -> None:
        m, n, _ = stage_info.work_tile.tile_idx
        relu_block(self.smem, stage, self.tensor, m, n, stage_info.loop_offset)


def ts_kernel(cfg: GemmConfig | None = None, *, act_release: bool = True) -> Kernel:
    """A load warp; a Fork of the ``A`` / ``B`` ring and an ``A`` view into two tasks.

    ``act_release=False`` drops the activation task's release (a broken schedule for tests:
    the load warp would wait for that member's stage forever).
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
        a_layout: Any,
        b_layout: Any,
        c_layout: Any,
        params: Any,
        d: Any,
    ) -> Tasks:
        prefetch_tma(k, atom_a, atom_b, atom_c, warp=LOAD_WARP)
        layouts = (a_layout, b_layout, c_layout)  # of the A and B stages, the epilogue buffers
        k_tiles, wq, acc, c = gemm_part(k, cfg, params, t_a, atom_c, t_c, *layouts)
        ab = WgmmaRing(
            name="ab",
            pipeline_config=WgmmaRing.pipeline(STAGES, cfg.stage_bytes, cfg.consumer_threads),
            a=TmaSource(atom_a, t_a, acc.smem_a),
            b=TmaSource(atom_b, t_b, acc.smem_b),
            acc=acc,
            tile_k=cfg.tile_k,
        )
        # The activation's view of the A stages: the ring's load fills it (no load of its own).
        a_pipe = TmaRing.pipeline(STAGES, cfg.tile_mn[0] * K_BLOCK_BYTES, ACT_THREADS)
        a_act = AView(name="a_act", pipeline_config=a_pipe, smem=acc.smem_a)
        a_fork = PipelineGroup(name="a_fork", members=[ab, a_act], mode=PipelineGroupMode.Fork)
        out_d = ReluOut(name="d", tensor=d, smem=acc.smem_a)

        @schedule
        def load(wq: ResourceProxy, g: ResourceProxy) -> None:
            g.ab.setup()
            with work_tile_loop(wq), domain_loop(k_tiles, unroll=1):
                g.ab.acquire()  # both consumers are done with the stage before the
                g.a_act.acquire()  # one load overwrites it
                g.ab.load()
                g.commit()  # publishes both members' stage

        @schedule
        def mma(wq: ResourceProxy, ab: ResourceProxy, acc: ResourceProxy, c: ResourceProxy) -> None:
            acc.setup()
            c.setup()
            with work_tile_loop(wq):
                acc.zero()
                with domain_loop(k_tiles, unroll=1) as kb:
                    ab.wait()
                    ab.mma()
                    ab.mma_wait_prior()  # the previous block's MMAs are done ...
                    with kb.every(1, start=1):
                        ab.release()  # ... so its stage goes back to the producer
                    with kb.last_iter():
                        ab.mma_wait_all()
                        ab.release()
                # Again, unconditionally: with the last block's wait alone, ptxas sees a path
                # from the loop to the epilogue's reads of the accumulator with WGMMAs in flight
                # (as gemm.py); at run time there is nothing left to wait for.
                ab.mma_wait_all()
                c.store()
            c.drain()

        @schedule
        def act(wq: ResourceProxy, r: ResourceProxy, out: ResourceProxy) -> None:
            with work_tile_loop(wq), domain_loop(k_tiles, unroll=1):
                r.wait()
                out.store(stage=r.stage())
                if act_release:
                    r.release()

        return Tasks(
            [
                Task(
                    [wq],
                    [ab, a_act],
                    LOAD_WARP,
                    1,
                    schedule=load(wq, a_fork),
                    num_registers=PRODUCER_REGS,
                    name="load",
                ),
                Task(
                    [wq, ab, acc],
                    [c],
                    MMA_WARP,
                    MMA_WARPS,
                    schedule=mma(wq, ab, acc, c),
                    num_registers=MMA_REGS,
                    name="mma",
                ),
                Task(
                    [wq, a_act],
                    [out_d],
                    ACT_WARP,
                    ACT_WARPS,
                    schedule=act(wq, a_act, out_d),
                    num_registers=ACT_REGS,
                    name="act",
                ),
            ],
            {ab: [wq], a_act: [wq], c: [ab, acc, wq], out_d: [a_act, wq]},
        )

    kernel = Kernel(tasks, name="fork_gemm", block_warps=BLOCK_THREADS // 32)
    kernel.launcher(launcher(cfg, kernel.launch))
    return kernel


# ---------------------------------------------------------------------------------------------
# Hand-written twin: the same schedule in plain CuTe DSL
# ---------------------------------------------------------------------------------------------


@cute.kernel
def twin_kernel(
    atom_a: cute.CopyAtom,
    t_a: cute.Tensor,
    atom_b: cute.CopyAtom,
    t_b: cute.Tensor,
    atom_c: cute.CopyAtom,
    t_c: cute.Tensor,
    tiled_mma: cute.TiledMma,
    a_layout: cute.ComposedLayout,
    b_layout: cute.ComposedLayout,
    c_layout: cute.ComposedLayout,
    params: Any,
    d: cute.Tensor,
    cfg: Constexpr[GemmConfig],
) -> None:
    """Load warp 0, WGMMA warpgroups 1-2, activation warpgroup 3."""
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp == LOAD_WARP:
        cpasync.prefetch_descriptor(atom_a)
        cpasync.prefetch_descriptor(atom_b)
        cpasync.prefetch_descriptor(atom_c)
    alloc = SmemAllocator()
    s_a = alloc.allocate_tensor(cfg.element, a_layout.outer, 1024, swizzle=a_layout.inner)
    s_b = alloc.allocate_tensor(cfg.element, b_layout.outer, 1024, swizzle=b_layout.inner)
    s_c = alloc.allocate_tensor(cfg.out_element, c_layout.outer, 1024, swizzle=c_layout.inner)
    k_tiles = chunk_blocks(cfg, t_a)
    pipe = make_ab_pipeline(
        cfg, alloc.allocate_array(cutlass.Int64, num_elems=2 * STAGES, byte_alignment=8)
    )
    a_bytes = cfg.tile_mn[0] * cfg.tile_k * int(cfg.element.width) // 8
    act_pipe = tma_pipeline(alloc, STAGES, a_bytes, ACT_THREADS)
    # The activation view waits on the ring's full barriers (the one load completes those)
    # and keeps its own empty barriers.
    act_pipe = dataclasses.replace(act_pipe, sync_object_full=pipe.sync_object_full)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()

    if warp < WARPGROUP // 32:
        cute.arch.setmaxregister_decrease(PRODUCER_REGS)
    if warp < LOAD_WARP + 1:
        coord = cluster_coord(cfg)
        ta_g, ta_s, tb_g, tb_s = partition_ab_for_tma(
            cfg, atom_a, atom_b, t_a, t_b, s_a, s_b, coord
        )
        # One cursor per member, as the group's commit is lowered: a commit of each member.
        state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, STAGES)
        act_state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, STAGES)
        sched = make_scheduler(params)
        tile = sched.tile()
        while tile.is_valid_tile:
            m, n, _ = tile.tile_idx
            for kb in cutlass.range(k_tiles, unroll=1):  # type: ignore[attr-defined]
                pipe.producer_acquire(state)  # waits for the WGMMAs, arms the A + B bytes
                act_pipe.sync_object_empty.wait(act_state.index, act_state.phase)  # and act
                load_k_block(
                    atom_a, atom_b, ta_g, ta_s, tb_g, tb_s, m, n, kb, state.index,
                    pipe.producer_get_barrier(state), 0, 0,
                )  # fmt: skip
                state.advance()  # TMA commits are no-ops: the loads complete the barrier
                act_state.advance()
            sched.advance()
            tile = sched.tile()
    if (warp >= MMA_WARP) & (warp < MMA_WARP + MMA_WARPS):
        cute.arch.setmaxregister_increase(MMA_REGS)
        wg = cute.arch.make_warp_uniform(tidx // WARPGROUP) - MMA_WARP // 4
        t_ra, t_rb = make_mma_fragments(tiled_mma, s_a, s_b, wg)
        acc = make_accumulator(cfg, tiled_mma, wg)
        views = make_epilogue_views(cfg, tiled_mma, acc, s_c, tidx - MMA_WARP * 32)
        bar = epilogue_barrier(cfg)
        is_store_warp = warp == STORE_WARP
        read = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, STAGES)
        release = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, STAGES)
        sched = make_scheduler(params)
        tile = sched.tile()
        while tile.is_valid_tile:
            m, n, _ = tile.tile_idx
            mma_begin_tile(tiled_mma, acc)
            for kb in cutlass.range(k_tiles, unroll=1):  # type: ignore[attr-defined]
                pipe.consumer_wait(read)
                stage = read.index
                read.advance()
                mma_k_block(tiled_mma, acc, t_ra, t_rb, stage)
                mma_wait(1)  # the previous block's MMAs are done: free its stage
                if kb >= 1:
                    pipe.consumer_release(release)
                    release.advance()
                if kb == k_tiles - 1:
                    mma_wait(0)
                    pipe.consumer_release(release)
                    release.advance()
            mma_wait(0)  # unconditionally, as the TS schedule (no WGMMAs in flight for ptxas)
            epilogue_store(cfg, views, atom_c, s_c, t_c, m, n, bar, is_store_warp)
            sched.advance()
            tile = sched.tile()
        epilogue_drain(is_store_warp)
    if (warp >= ACT_WARP) & (warp < ACT_WARP + ACT_WARPS):
        cute.arch.setmaxregister_increase(ACT_REGS)
        state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, STAGES)
        sched = make_scheduler(params)
        tile = sched.tile()
        while tile.is_valid_tile:
            m, n, _ = tile.tile_idx
            for kb in cutlass.range(k_tiles, unroll=1):  # type: ignore[attr-defined]
                act_pipe.consumer_wait(state)
                relu_block(s_a, state.index, d, m, n, kb)
                act_pipe.consumer_release(state)
                state.advance()
            sched.advance()
            tile = sched.tile()


def twin_launcher(cfg: GemmConfig) -> Any:
    """The twin's ``@cute.jit`` launcher ``(a, b, c, d)`` (its kernel also takes the tiled MMA
    and ``cfg``)."""

    def start(*values: Any, stream: Any, **launch: Any) -> None:
        twin_kernel(*values[:6], make_tiled_mma(cfg), *values[6:], cfg).launch(**launch)

    return launcher(cfg, start)


# ---------------------------------------------------------------------------------------------
# Host side (tools, benches, tests, CLI): the harness of task_scheduling.harness
# ---------------------------------------------------------------------------------------------


def launcher(cfg: GemmConfig, start: Callable[..., None]) -> Any:
    """The ``@cute.jit`` ``launch(a, b, c, d, stream=None)`` of both kernels, for ``cfg``.

    It builds the TMA atoms, SMEM layouts and scheduler parameters (``host_values``) and hands
    them, then ``d``, to ``start(*values, grid=, block=, stream=)``: the TS kernel's ``launch``
    or the twin's.
    """

    @cute.jit
    def launch(
        a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor, stream: Any = None
    ) -> None:
        atoms, layouts, params, grid = host_values(cfg, a, b, c)
        start(*atoms, *layouts, params, d, grid=grid, block=(BLOCK_THREADS, 1, 1), stream=stream)

    return launch


def make_plan(cfg: GemmConfig | None = None) -> KernelPlan:
    """The fork GEMM as a kernel plan (traced on the host: no GPU, no DSL values)."""
    return ts_kernel(cfg).plan().plan


def kernels(cfg: GemmConfig) -> dict[str, Any]:
    """The TS kernel and its twin, by name (launchers ``(a, b, c, d)``)."""
    return {"ts": ts_kernel(cfg), "twin": twin_launcher(cfg)}


def compile_only(
    mnk: tuple[int, int, int] = DEFAULT_MNK, dtype: str = "bf16", *, ops: bool = False
) -> dict[str, Any]:
    """Verify the plan, compile both kernels for sm_90a with fake tensors, count PTX."""
    cfg = gemm_config(dtype, mnk[1])
    check_shape("fork_gemm", "a_fork", mnk, cfg)
    m, n, k = mnk
    shapes = ((m, k), (n, k), (m, n), (m, k))
    return compile_counts("fork_gemm", kernels(cfg), shapes, cfg, ops=ops, mnk=[*mnk], dtype=dtype)


def run_on_gpu(mnk: tuple[int, int, int], dtype: str, iters: int) -> dict[str, Any]:
    """Run both kernels on the GPU, check ``C`` and ``D`` against torch, time them."""
    import torch

    cfg = gemm_config(dtype, mnk[1])
    check_shape("fork_gemm", "a_fork", mnk, cfg)
    m, n, k = mnk
    tdt = torch_dtype(dtype)
    a = torch.randn(m, k, device="cuda", dtype=tdt)
    b = torch.randn(n, k, device="cuda", dtype=tdt)
    want_c = (a.float() @ b.float().t()).to(tdt).float()
    want_d = torch.relu(a)

    def case(name: str) -> Case:
        c = torch.zeros(m, n, device="cuda", dtype=tdt)
        d = torch.zeros_like(a)

        def check() -> dict[str, Any]:
            got = c.float()
            close = torch.allclose(got, want_c, rtol=2e-2, atol=0.5)
            ok = bool(close and torch.equal(d, want_d))  # relu is exact
            return {"ok": ok, "max_abs_err": (got - want_c).abs().max().item()}

        return Case((to_cute(a), to_cute(b), to_cute(c), to_cute(d)), check)

    return time_gpu("fork_gemm", kernels(cfg), case, mnk, dtype, iters)


def main(argv: list[str] | None = None) -> int:
    return group_main(__doc__, __file__, compile_only, run_on_gpu, argv)


if __name__ == "__main__":
    sys.exit(main())
