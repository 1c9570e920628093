"""Warp-specialized persistent Hopper GEMM (``C = A @ B^T``) through TS, and its hand-written twin.

``A`` is ``M x K`` and ``B`` is ``N x K``; by default both are K-contiguous ("TN"); ``C`` is
``M x N`` row-major. Inputs are fp16 or bf16, the accumulator fp32, ``C`` has the input dtype.

Options (``GemmConfig``, all compile-time):

* ``layout`` (``--layout``): operand majors in BLAS / CUTLASS letters, A first, B read as the
  ``K x N`` operand: ``tn`` A and B K-major (default), ``nn`` A M-major (a ``K x M`` row-major
  buffer), ``tt`` B N-major (a ``K x N`` row-major buffer), ``nt`` both MN-major. MN-major
  operands are TMA-loaded into MN-major swizzled SMEM and read by WGMMA as such (16-bit types).
* fused epilogue (``--alpha``, ``--beta``, ``--bias``):
  ``C = alpha * (A @ B^T) + beta * C + bias[n]``, computed in fp32. ``C`` is in and out (the
  old tile is read, with predicated per-thread global loads, before it is overwritten); the
  bias is an ``N``-vector of the input dtype, a kernel argument only with ``--bias``. The
  default (``alpha = 1``, ``beta = 0``, no bias) emits exactly the plain epilogue.
* tiles ``128x256``, ``128x128`` (two consumer warpgroups, 384 threads) and ``64x256``,
  ``64x128`` (one consumer warpgroup, 256 threads).

One CTA per SM (or per cluster slot) walks its output tiles with CUTLASS's static persistent
scheduler. Warpgroup 0 is the producer: it gives registers back (``setmaxnreg.dec 40``) and
its warp 0 TMA-loads the ``BM x 64`` slice of ``A`` and the ``BN x 64`` slice of ``B`` of each
K block into a multi-stage SMEM ring (``PipelineTmaAsync``; with a cluster the slices are
multicast: ``A`` to the CTAs of the same cluster row, ``B`` to those of the same column).
The ``BM / 64`` warpgroups after it are the consumers, cooperative on one ``BM x BN`` tile:
each one issues the WGMMAs of 64 rows (two of them take ``setmaxnreg.inc 232``; a single
one keeps its initial registers, already more than it needs). Per K block they wait for the
stage, issue its WGMMAs, commit, wait until at most one WGMMA group is in flight and then release
the *previous* stage (a release state that lags the read state by one), so the tensor cores
always have the next block queued. The epilogue converts the accumulator to the output dtype
``BM x 32`` sub-tile by sub-tile through a small ring of SMEM buffers and one thread TMA-stores
each sub-tile (ragged ``M``/``N`` are clipped by the store, a ragged ``K`` is zero-filled by
the loads).

Each step of that schedule is a small module-level helper (``load_k_block``, ``mma_k_block``,
``mma_wait``, ``epilogue_store`` ... in ``_gemm_steps.py``), so that the TS kernel (this file)
calls the same helpers from its work methods that the hand-written twin (``_gemm_twin.py``,
only the pipeline / state / loop skeleton around them) does; ``_gemm_host.py`` holds the
inputs, the torch reference, timing and the CLI options.

Usage::

    python examples/hopper/gemm.py --compile-only            # CPU: PTX instruction counts
    python examples/hopper/gemm.py --mnk 8192 8192 8192      # GPU: run, check, TFLOP/s
    python examples/hopper/gemm.py --mnk 1000 1500 700 --tile 128x128 --cluster 2x1
    python examples/hopper/gemm.py --mnk 1003 1501 707 --layout nt --alpha 0.5 --beta 1 --bias
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
from _gemm_host import (
    add_config_args,
    fake_operands,
    make_bias,
    make_counters_tensor,
    make_inputs,
    make_output,
    parse_config,
    run_case,
    to_counters,
    to_cute,
)

# The configuration and steps, the twins and the host helpers live beside this file.
from _gemm_steps import (
    DEFAULT_MNK,
    GEMM_KINDS,
    LOAD_WARP,
    PRODUCER_REGS,
    QUEUE_STAGES,
    STORE_WARP,
    TILE_K,
    WARPGROUP,
    GemmConfig,
    cluster_coord,
    epilogue_barrier,
    epilogue_drain,
    epilogue_store,
    fit_swizzle,
    load_k_block,
    make_accumulator,
    make_epilogue_views,
    make_mma_fragments,
    make_scheduler_params,
    make_smem_layouts,
    make_tiled_mma,
    make_tma_atoms,
    mcast_masks,
    mma_begin_tile,
    mma_k_block,
    mma_wait,
    partition_ab_for_tma,
)
from _gemm_twin import (
    twin_kernel,
    twin_pingpong_kernel,
)
from _gpu_check import gpu_ready
from cutlass.base_dsl.ast_helpers import const_expr
from cutlass.cute.nvgpu import cpasync
from cutlass.cutlass_dsl import Constexpr
from cutlass.memory import SmemAllocator

import ts_codegen
from ts_codegen.dsl import compile_ptx
from ts_codegen.ptx import DEFAULT_KINDS, opcode_counts
from ts_ir import WorkAttr
from ts_runtime import PipelineConfig, Task, TaskManager, TileSchedulerConfig, WorkQueue
from ts_trace import (
    MemoryResource,
    ResourceProxy,
    TaskLocalVariable,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    when_false,
    when_true,
    work_tile_loop,
)

# ---------------------------------------------------------------------------------------------
# TS kernel: the same schedule as resources, schedules and tasks
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(kw_only=True)
class Operands(MemoryResource):
    """The A/B ring: TMA loads (one producer thread) feed the WGMMA warpgroups (``TmaWgmma``).

    ``mma`` is consumer work that ``wgmma.mma_async`` finishes later: on a ``TmaWgmma`` ring
    ts-verify requires ``mma_wait_prior`` / ``mma_wait_all`` (``wgmma.wait_group``) to retire
    it before the stage is released.
    """

    cfg: Any = None
    atom_a: Any = None
    t_a: Any = None
    atom_b: Any = None
    t_b: Any = None
    s_a: Any = None
    s_b: Any = None
    acc: Any = None  # the Accumulator whose registers the MMAs write

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    def setup_loads(self, stage_info: Any) -> None:
        """Once per producer: TMA views of A and B and the multicast masks."""
        coord = cluster_coord(self.cfg)
        views = partition_ab_for_tma(
            self.cfg, self.atom_a, self.atom_b, self.t_a, self.t_b, self.s_a, self.s_b, coord
        )
        self._loads = (*views, *mcast_masks(self.cfg, coord))

    @producer_work
    def load(self, stage_info: Any) -> None:
        """TMA-load K block ``loop_offset`` of the work tile into the acquired stage."""
        ta_g, ta_s, tb_g, tb_s, mask_a, mask_b = self._loads
        m, n, _ = stage_info.work_tile.tile_idx
        load_k_block(
            self.atom_a,
            self.atom_b,
            ta_g,
            ta_s,
            tb_g,
            tb_s,
            m,
            n,
            stage_info.loop_offset,
            stage_info.stage_idx,
            stage_info.barrier,
            mask_a,
            mask_b,
        )

    @consumer_work
    def mma(self, stage_info: Any) -> None:
        """Issue the WGMMAs of the waited stage into the accumulator (asynchronous)."""
        acc = self.acc
        mma_k_block(acc.tiled_mma, acc.regs, acc.t_ra, acc.t_rb, stage_info.stage_idx)

    @consumer_work(work_attrs=WorkAttr.ASYNC_WAIT_PRIOR)
    def mma_wait_prior(self, stage_info: Any) -> None:
        """``wgmma.wait_group 1``: every MMA but the newest is done."""
        mma_wait(1)

    @consumer_work(work_attrs=WorkAttr.ASYNC_WAIT_ALL)
    def mma_wait_all(self, stage_info: Any) -> None:
        """``wgmma.wait_group 0``."""
        mma_wait(0)


@dataclasses.dataclass(kw_only=True)
class Accumulator(MemoryResource):
    """The fp32 accumulator in the registers of the consumer warpgroups."""

    cfg: Any = None
    tiled_mma: Any = None
    s_a: Any = None
    s_b: Any = None
    first_wg: int = 1  # the task's first warpgroup (ping-pong: 1 or 2)

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def setup(self, stage_info: Any) -> None:
        """Once per consumer thread: WGMMA descriptors over the ring, the register tile."""
        tidx, _, _ = cute.arch.thread_idx()
        consumer_wg = cute.arch.make_warp_uniform(tidx // WARPGROUP) - self.first_wg
        self.t_ra, self.t_rb = make_mma_fragments(self.tiled_mma, self.s_a, self.s_b, consumer_wg)
        self.regs = make_accumulator(self.cfg, self.tiled_mma, consumer_wg)
        self.consumer_tidx = tidx - WARPGROUP * self.first_wg

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def zero(self, stage_info: Any) -> None:
        """Start a tile: zero the registers and fence them for WGMMA."""
        mma_begin_tile(self.tiled_mma, self.regs)


@dataclasses.dataclass(kw_only=True)
class Output(MemoryResource):
    """C: the epilogue (registers -> SMEM sub-tiles -> TMA store)."""

    cfg: Any = None
    atom_c: Any = None
    t_c: Any = None
    s_c: Any = None
    acc: Any = None
    c_in: Any = None  # the output tensor, read by a fused epilogue with beta != 0
    bias: Any = None  # the bias vector of a fused epilogue

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    def setup(self, stage_info: Any) -> None:
        """Once per consumer thread: the epilogue views, its named barrier, the store warp."""
        acc = self.acc
        self.views = make_epilogue_views(
            self.cfg, acc.tiled_mma, acc.regs, self.s_c, acc.consumer_tidx
        )
        math_wg = acc.first_wg - 1
        self.bar = epilogue_barrier(self.cfg, math_wg)
        store_warp = STORE_WARP + math_wg * (WARPGROUP // 32)
        self.is_store_warp = cute.arch.make_warp_uniform(cute.arch.warp_idx()) == store_warp

    @producer_work
    def store(self, stage_info: Any) -> None:
        """Write the work tile of C (``fence.proxy.async`` before each TMA store)."""
        m, n, _ = stage_info.work_tile.tile_idx
        epilogue_store(
            self.cfg,
            self.views,
            self.atom_c,
            self.s_c,
            self.t_c,
            m,
            n,
            self.bar,
            self.is_store_warp,
            self.c_in,
            self.bias,
        )

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    def drain(self, stage_info: Any) -> None:
        """Before exit: the TMA stores have finished reading SMEM."""
        epilogue_drain(self.is_store_warp)


def make_schedules(k_tiles: Any, dynamic: bool = False) -> tuple[Any, Any]:
    """The producer's and the consumers' schedules over ``k_tiles`` K blocks per tile.

    With the dynamic scheduler the producer claims the next tile at the start of each tile and
    the consumers take it from the queue's ring (plain Python ``if``: decided while tracing).
    """

    @schedule
    def load_schedule(wq: ResourceProxy, ab: ResourceProxy) -> None:
        ab.setup_loads()
        with work_tile_loop(wq):
            if dynamic:
                wq.acquire()
                wq.fetch_next_tile()
                wq.commit()
            with domain_loop(k_tiles, unroll=1):
                ab.acquire()
                ab.load()
                ab.commit()

    @schedule
    def mma_schedule(
        wq: ResourceProxy, ab: ResourceProxy, acc: ResourceProxy, c: ResourceProxy
    ) -> None:
        acc.setup()
        c.setup()
        with work_tile_loop(wq):
            if dynamic:
                wq.wait()
                wq.read_next_tile()
                wq.release()
            acc.zero()
            with domain_loop(k_tiles, unroll=1) as k:
                ab.wait()
                ab.mma()
                ab.mma_wait_prior()  # the previous K block's MMAs are done ...
                with k.every(1, start=1):
                    ab.release()  # ... so its stage goes back to the producer
                with k.last_iter():
                    ab.mma_wait_all()
                    ab.release()
            c.store()
        c.drain()

    return load_schedule, mma_schedule


@dataclasses.dataclass(kw_only=True)
class Turns(MemoryResource):
    """Ping-pong: whose turn a tile is (the CTA's tiles alternate between the warpgroups).

    Every task counts the CTA's tiles itself (a loop-carried task-local value); ``odd`` is a
    runtime condition with the same key in every task, so the verifier knows they agree.
    """

    count: TaskLocalVariable = TaskLocalVariable.uninitialized()
    odd: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.count = TaskLocalVariable(dtype="Int32", default=0)
        self.odd = TaskLocalVariable(dtype="Boolean", default=False)

    @consumer_work(returns=count, work_attrs=WorkAttr.AUXILIARY)
    def start(self, stage_info: Any) -> Any:
        """No tile yet."""
        return cutlass.Int32(0)

    @consumer_work(returns=(count, odd), work_attrs=WorkAttr.AUXILIARY)
    def take(self, stage_info: Any, *, count: Any) -> Any:
        """Count the tile; odd tiles go to the second warpgroup."""
        return count + 1, (count % 2) == 1


def make_pingpong_schedules(k_tiles: Any) -> tuple[Any, Any, Any]:
    """Ping-pong: the producer fills the ring of the warpgroup whose turn the tile is."""

    @schedule
    def load_schedule(
        wq: ResourceProxy, turns: ResourceProxy, ab0: ResourceProxy, ab1: ResourceProxy
    ) -> None:
        ab0.setup_loads()
        ab1.setup_loads()
        n = turns.start()
        with work_tile_loop(wq):
            n, odd = turns.take(count=n)
            with when_false(odd, key="odd"), domain_loop(k_tiles, unroll=1):
                ab0.acquire()
                ab0.load()
                ab0.commit()
            with when_true(odd, key="odd"), domain_loop(k_tiles, unroll=1):
                ab1.acquire()
                ab1.load()
                ab1.commit()

    def math(mine: Any) -> Any:
        @schedule
        def mma_schedule(
            wq: ResourceProxy,
            turns: ResourceProxy,
            ab: ResourceProxy,
            acc: ResourceProxy,
            c: ResourceProxy,
        ) -> None:
            acc.setup()
            c.setup()
            n = turns.start()
            with work_tile_loop(wq):
                n, odd = turns.take(count=n)
                with mine(odd, key="odd"):
                    acc.zero()
                    with domain_loop(k_tiles, unroll=1) as k:
                        ab.wait()
                        ab.mma()
                        ab.mma_wait_prior()
                        with k.every(1, start=1):
                            ab.release()
                        with k.last_iter():
                            ab.mma_wait_all()
                            ab.release()
                    c.store()
            c.drain()

        return mma_schedule

    return load_schedule, math(when_false), math(when_true)


def build_pingpong_tasks(
    cfg: GemmConfig,
    wq: WorkQueue,
    rings: tuple[Operands, Operands],
    accs: tuple[Accumulator, Accumulator],
    outs: tuple[Output, Output],
    k_tiles: Any,
    smem_allocator: Any = None,
) -> TaskManager:
    """The producer warp and one task per math warpgroup, each with its ring and epilogue."""
    turns = Turns(name="turns")
    load, mma0, mma1 = make_pingpong_schedules(k_tiles)
    tasks = [
        Task(
            [wq, turns],
            list(rings),
            LOAD_WARP,
            1,
            schedule=load(wq, turns, *rings),
            num_registers=PRODUCER_REGS,
            name="load",
        ),
    ]
    for i, mma in enumerate((mma0, mma1)):
        tasks.append(
            Task(
                [wq, turns, rings[i], accs[i]],
                [outs[i]],
                (1 + i) * WARPGROUP // 32,
                WARPGROUP // 32,
                schedule=mma(wq, turns, rings[i], accs[i], outs[i]),
                num_registers=cfg.consumer_regs,
                name=f"mma{i}",
            )
        )
    graph: dict[Any, list[Any]] = {r: [wq, turns] for r in rings} | {
        outs[i]: [rings[i], accs[i], wq, turns] for i in range(2)
    }
    return TaskManager(
        tasks,
        graph,
        smem_allocator=smem_allocator,
        block_warps=cfg.block_threads // 32,
        name="gemm_pingpong",
    )


def make_work_queue(cfg: GemmConfig, params: Any, counters: Any) -> WorkQueue:
    """The static queue, or the dynamic one with its hand-off ring (warp 0 -> consumers)."""
    if not cfg.dynamic:
        return WorkQueue(TileSchedulerConfig.create_static_persistent_tile_scheduler_params(params))
    handoff = PipelineConfig.create_async_async_pipeline_cfg(
        QUEUE_STAGES,
        cpipe.CooperativeGroup(cpipe.Agent.Thread, 32),
        cpipe.CooperativeGroup(cpipe.Agent.Thread, cfg.consumer_threads),
    )
    sched = TileSchedulerConfig.create_atomic_dynamic_persistent_tile_scheduler_params(
        params, counters
    )
    return WorkQueue(sched, pipeline_config=handoff)


def ab_pipeline(cfg: GemmConfig) -> PipelineConfig:
    """The A/B ring as a TS pipeline: 1 TMA thread -> the WGMMA threads (128 or 256).

    With a cluster the ring spans it (``cta_layout_vmnk``): the TMA loads multicast and every
    consumer warp releases the stage in each CTA that filled it.
    """
    cluster = None if cfg.cluster_size == 1 else (1, *cfg.cluster_mn, 1)
    return PipelineConfig.create_tma_wgmma_pipeline_cfg(
        cfg.ab_stages,
        cfg.stage_bytes,
        cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
        cpipe.CooperativeGroup(cpipe.Agent.Thread, cfg.consumer_threads),
        cta_layout_vmnk=cluster,
    )


def build_tasks(
    cfg: GemmConfig,
    wq: WorkQueue,
    ab: Operands,
    acc: Accumulator,
    c: Output,
    k_tiles: Any,
    smem_allocator: Any = None,
    schedules: tuple[Any, Any] | None = None,
) -> TaskManager:
    """The producer task (warp 0) and the consumer task (warpgroups 1 .. BM / 64), verified.

    ``schedules``: ``(load, mma)`` schedules to use instead of ``make_schedules(k_tiles)``
    (tests build deliberately broken variants on the same resources and tasks).
    """
    load, mma = schedules or make_schedules(k_tiles, cfg.dynamic)
    # With the dynamic scheduler the producer also fills the work queue's hand-off ring.
    tasks = [
        Task(
            [] if cfg.dynamic else [wq],
            [ab, wq] if cfg.dynamic else [ab],
            LOAD_WARP,
            1,
            schedule=load(wq, ab),
            num_registers=PRODUCER_REGS,
            name="load",
        ),
        Task(
            [wq, ab, acc],
            [c],
            WARPGROUP // 32,
            cfg.consumer_threads // 32,
            schedule=mma(wq, ab, acc, c),
            num_registers=cfg.consumer_regs,
            name="mma",
        ),
    ]
    graph: dict[Any, list[Any]] = {ab: [wq], c: [ab, acc, wq]}
    return TaskManager(
        tasks,
        graph,
        smem_allocator=smem_allocator,
        block_warps=cfg.block_threads // 32,
        name="gemm",
    )


def make_plan(cfg: GemmConfig | None = None, schedules: tuple[Any, Any] | None = None) -> Any:
    """The kernel plan on the host (placeholders; no GPU, no DSL values), verified.

    ``schedules`` replaces ``make_schedules("k_tiles")`` (see ``build_tasks``).

    Raises:
        ts_verify.VerificationError: The verifier rejects the plan.
    """
    cfg = cfg or GemmConfig()
    wq = make_work_queue(cfg, None, 0)
    if cfg.pingpong:
        accs = (Accumulator(name="acc0"), Accumulator(name="acc1", first_wg=2))
        rings = tuple(
            Operands(name=f"ab{i}", pipeline_config=ab_pipeline(cfg), acc=accs[i]) for i in range(2)
        )
        outs = (Output(name="c0", acc=accs[0]), Output(name="c1", acc=accs[1]))
        return build_pingpong_tasks(cfg, wq, rings, accs, outs, "k_tiles").plan  # type: ignore[arg-type]
    acc = Accumulator(name="acc")
    ab = Operands(name="ab", pipeline_config=ab_pipeline(cfg), acc=acc)
    c = Output(name="c", acc=acc)
    return build_tasks(cfg, wq, ab, acc, c, "k_tiles", schedules=schedules).plan


@cute.kernel
def ts_kernel(
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
    params: ts_codegen.TileRaster,
    c_in: cute.Tensor | None,
    bias: cute.Tensor | None,
    counters: cute.Tensor | None,
    cfg: Constexpr[GemmConfig],
) -> None:
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp == LOAD_WARP:
        cpasync.prefetch_descriptor(atom_a)
        cpasync.prefetch_descriptor(atom_b)
        cpasync.prefetch_descriptor(atom_c)
    alloc = SmemAllocator()
    s_a = alloc.allocate_tensor(cfg.element, a_layout.outer, 1024, swizzle=a_layout.inner)
    s_b = alloc.allocate_tensor(cfg.element, b_layout.outer, 1024, swizzle=b_layout.inner)
    s_c = alloc.allocate_tensor(cfg.element, c_layout.outer, 1024, swizzle=c_layout.inner)
    k_tiles = cute.ceil_div(cute.size(t_a, mode=[1]), TILE_K)
    wq = make_work_queue(cfg, params, counters)
    acc = Accumulator(name="acc", cfg=cfg, tiled_mma=tiled_mma, s_a=s_a, s_b=s_b)
    ab = Operands(
        name="ab",
        pipeline_config=ab_pipeline(cfg),
        cfg=cfg,
        atom_a=atom_a,
        t_a=t_a,
        atom_b=atom_b,
        t_b=t_b,
        s_a=s_a,
        s_b=s_b,
        acc=acc,
    )
    c = Output(name="c", cfg=cfg, atom_c=atom_c, t_c=t_c, s_c=s_c, acc=acc, c_in=c_in, bias=bias)
    tm = build_tasks(cfg, wq, ab, acc, c, k_tiles, alloc)
    tm.setup_resources_and_tasks()
    tm.run()


@cute.kernel
def ts_pingpong_kernel(
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
    params: ts_codegen.TileRaster,
    c_in: cute.Tensor | None,
    bias: cute.Tensor | None,
    counters: cute.Tensor | None,
    cfg: Constexpr[GemmConfig],
) -> None:
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp == LOAD_WARP:
        cpasync.prefetch_descriptor(atom_a)
        cpasync.prefetch_descriptor(atom_b)
        cpasync.prefetch_descriptor(atom_c)
    alloc = SmemAllocator()
    smem = [
        [
            alloc.allocate_tensor(cfg.element, lay.outer, 1024, swizzle=lay.inner)
            for lay in (a_layout, b_layout, c_layout)
        ]
        for _ in range(2)
    ]
    k_tiles = cute.ceil_div(cute.size(t_a, mode=[1]), TILE_K)
    wq = make_work_queue(cfg, params, counters)
    accs = tuple(
        Accumulator(
            name=f"acc{i}",
            cfg=cfg,
            tiled_mma=make_tiled_mma(cfg),  # one per warpgroup: the accumulate flag is per WG
            s_a=smem[i][0],
            s_b=smem[i][1],
            first_wg=1 + i,
        )
        for i in range(2)
    )
    rings = tuple(
        Operands(
            name=f"ab{i}",
            pipeline_config=ab_pipeline(cfg),
            cfg=cfg,
            atom_a=atom_a,
            t_a=t_a,
            atom_b=atom_b,
            t_b=t_b,
            s_a=smem[i][0],
            s_b=smem[i][1],
            acc=accs[i],
        )
        for i in range(2)
    )
    outs = tuple(
        Output(
            name=f"c{i}",
            cfg=cfg,
            atom_c=atom_c,
            t_c=t_c,
            s_c=smem[i][2],
            acc=accs[i],
            c_in=c_in,
            bias=bias,
        )
        for i in range(2)
    )
    tm = build_pingpong_tasks(cfg, wq, rings, accs, outs, k_tiles, alloc)  # type: ignore[arg-type]
    tm.setup_resources_and_tasks()
    tm.run()


# ---------------------------------------------------------------------------------------------
# host side
# ---------------------------------------------------------------------------------------------


def _launcher(kernel: Any, cfg: GemmConfig) -> Any:
    """A ``@cute.jit`` ``launch(a, b, c, bias)`` for ``kernel`` specialised to ``cfg``.

    ``bias`` is None unless ``cfg.bias``; the kernel gets ``c`` a second time (as the old C)
    only when ``cfg.beta != 0``.
    """

    @cute.jit
    def launch(
        a: cute.Tensor,
        b: cute.Tensor,
        c: cute.Tensor,
        bias: cute.Tensor | None,
        counters: cute.Tensor | None,
    ) -> None:
        layouts = make_smem_layouts(cfg)
        atom_a, t_a, atom_b, t_b, atom_c, t_c = make_tma_atoms(cfg, a, b, c, layouts)
        tiled_mma = make_tiled_mma(cfg)
        params = make_scheduler_params(cfg, cute.size(c, mode=[0]), cute.size(c, mode=[1]))
        grid = params.get_grid_shape(cfg.max_active_clusters)
        c_in = c if const_expr(cfg.beta != 0.0) else None
        epi_bias = bias if const_expr(cfg.bias) else None
        kernel(
            atom_a,
            t_a,
            atom_b,
            t_b,
            atom_c,
            t_c,
            tiled_mma,
            *layouts,
            params,
            c_in,
            epi_bias,
            counters if const_expr(cfg.dynamic) else None,
            cfg,
        ).launch(grid=grid, block=(cfg.block_threads, 1, 1), cluster=(*cfg.cluster_mn, 1))

    return launch


def kernels(cfg: GemmConfig) -> tuple[tuple[str, Any], ...]:
    """The kernels of this example as ``(name, @cute.jit launcher(a, b, c))``."""
    if cfg.pingpong:
        return (
            ("ts", _launcher(ts_pingpong_kernel, cfg)),
            ("twin", _launcher(twin_pingpong_kernel, cfg)),
        )
    return (("ts", _launcher(ts_kernel, cfg)), ("twin", _launcher(twin_kernel, cfg)))


def compile_only(cfg: GemmConfig | None = None) -> dict[str, Any]:
    """Verify the TS plan, compile every kernel for sm_90a with fake tensors; count PTX.

    ``verified``: the host plan was built, and so verified, by a ``TaskManager`` (it raises
    otherwise); ``same_counts``: the TS kernel's PTX counts equal the twin's (True when only
    the twin exists).
    """
    cfg = cfg or GemmConfig()
    make_plan(cfg)  # TaskManager verifies the plan (raises VerificationError otherwise)
    result: dict[str, Any] = {
        "example": "gemm",
        "config": dataclasses.asdict(cfg),
        "ab_stages": cfg.ab_stages,
        "verified": True,
    }
    for name, fn in kernels(cfg):
        _, ptx = compile_ptx(fn, *fake_operands(cfg))
        result[name] = ts_codegen.count_instructions(ptx, (*DEFAULT_KINDS, *GEMM_KINDS))
        result[f"{name}_total"] = sum(opcode_counts(ptx).values())
    if "ts" in result:
        result["same_counts"] = (
            result["ts"] == result["twin"] and result["ts_total"] == result["twin_total"]
        )
    else:
        result["same_counts"] = True
    return result


def compile_for_gpu(cfg: GemmConfig) -> dict[str, Any]:
    """Compile every kernel once (dynamic shapes) on sample tensors: ``{name: compiled}``."""
    a, b = make_inputs(cfg, (256, 256, 64))
    c = make_output(cfg, 256, 256)
    counters = to_counters(make_counters_tensor(cfg))
    args = (to_cute(a), to_cute(b), to_cute(c), to_cute(make_bias(cfg, 256)), counters)
    return {name: cute.compile(fn, *args) for name, fn in kernels(cfg)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compile-only", action="store_true", help="CPU: compile, count PTX")
    parser.add_argument(
        "--mnk", type=int, nargs=3, default=list(DEFAULT_MNK), metavar=("M", "N", "K")
    )
    parser.add_argument("--iters", type=int, default=20, help="timed launches (GPU run)")
    add_config_args(parser)
    args = parser.parse_args(argv)
    cfg = parse_config(args)
    if args.compile_only:
        out = compile_only(cfg)
        print(json.dumps(out, sort_keys=True))
        twin = out["twin"]
        needed = ("wgmma.mma_async", "cp.async.bulk.tensor", "setmaxnreg")
        return 0 if out["same_counts"] and all(twin[kind] > 0 for kind in needed) else 1
    if not gpu_ready(__file__):
        return 2
    cfg = fit_swizzle(cfg, args.mnk[1])
    compiled = compile_for_gpu(cfg)
    out = run_case(cfg, compiled, (args.mnk[0], args.mnk[1], args.mnk[2]), args.iters)
    print(json.dumps(out, sort_keys=True))
    return 0 if all(out[name]["ok"] for name in compiled) else 1


if __name__ == "__main__":
    sys.exit(main())
