"""Warp-specialized persistent Hopper GEMM (``C = A @ B^T``): hand-written CuTe DSL twin.

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
``mma_wait``, ``epilogue_store`` ...), so that a TS kernel can call the same helpers from its
work methods; ``twin_kernel`` is only the pipeline / state / loop skeleton around them.

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
from typing import Any, cast

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe
import cutlass.utils as cutils
import cutlass.utils.hopper_helpers as sm90
from cutlass.base_dsl.ast_helpers import const_expr, range_constexpr
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.cutlass_dsl import Constexpr, not_
from cutlass.memory import SmemAllocator
from cutlass.tensor_utils import LayoutEnum

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

SMS = 132
WARPGROUP = 128
WGMMA_M = 64  # rows of one warpgroup's WGMMA: a BM-row tile has BM / 64 consumer warpgroups
LOAD_WARP = 0
STORE_WARP = 4  # first warp of the first consumer warpgroup issues the C stores
PRODUCER_REGS = 40
CONSUMER_REGS = 232  # two consumer warpgroups (384 threads start with 168 registers each)
EPILOGUE_BARRIER_ID = 1  # 0 is __syncthreads
TILE_K = 64
SMEM_BYTES = 232448  # sm_90 opt-in maximum per block
SMEM_RESERVED = 1024  # mbarriers + alignment slack
DTYPES: dict[str, Any] = {"bf16": cutlass.BFloat16, "fp16": cutlass.Float16}
TILES = ((128, 256), (128, 128), (64, 256), (64, 128))
CLUSTERS = ((1, 1), (2, 1), (1, 2))
# Operand majors, BLAS / CUTLASS style: the first letter is A (``M x K``), the second B, where
# B is read as the ``K x N`` operand of ``A @ B``: "t" for A / "n" for B means K-major (K
# contiguous), "n" for A means M-major, "t" for B means N-major. Values: (A, B) as LayoutEnum
# (ROW_MAJOR = K-major, COL_MAJOR = M- / N-major, as cutlass.utils.hopper_helpers reads them).
LAYOUTS: dict[str, tuple[LayoutEnum, LayoutEnum]] = {
    "tn": (LayoutEnum.ROW_MAJOR, LayoutEnum.ROW_MAJOR),  # A K-major, B K-major (default)
    "nn": (LayoutEnum.COL_MAJOR, LayoutEnum.ROW_MAJOR),  # A M-major, B K-major
    "tt": (LayoutEnum.ROW_MAJOR, LayoutEnum.COL_MAJOR),  # A K-major, B N-major
    "nt": (LayoutEnum.COL_MAJOR, LayoutEnum.COL_MAJOR),  # A M-major, B N-major
}
DEFAULT_MNK = (8192, 8192, 8192)
SCHEDULERS = ("static", "dynamic")
KERNELS = ("cooperative", "pingpong")
QUEUE_STAGES = 2  # the dynamic scheduler's tile hand-off ring
# Extra PTX kinds worth comparing for a GEMM (on top of ts_codegen's defaults).
GEMM_KINDS = (
    "wgmma.mma_async",
    "wgmma.fence",
    "wgmma.commit_group",
    "wgmma.wait_group",
    "stmatrix",
    "setmaxnreg",
    "bar.arrive",
)


@dataclasses.dataclass(frozen=True)
class GemmConfig:
    """Compile-time shape of the kernel.

    Attributes:
        tile_mn: CTA tile ``(BM, BN)``; ``BM`` is split between the ``BM / 64`` consumer
            warpgroups (two for ``BM = 128``, one for ``BM = 64``).
        cluster_mn: cluster shape ``(CM, CN)``; ``A`` is multicast along ``CN``, ``B``
            along ``CM``.
        dtype: ``"bf16"`` or ``"fp16"`` (A, B and C).
        stages: A/B ring depth; 0 picks the most that fit next to the epilogue buffers.
        epi_n: columns of one epilogue sub-tile (the sub-tile is ``BM x epi_n``).
        epi_stages: epilogue SMEM buffers (stores in flight); must divide the sub-tile count.
        swizzle: tile-scheduler swizzle: groups of ``swizzle`` cluster columns are walked
            column-major, so one wave of CTAs shares A and B rows in L2 (1 = plain
            column-major raster). It should divide the problem's cluster-column count, else the
            scheduler pads the tile grid with empty tiles; ``fit_swizzle`` makes it so.
        layout: operand majors, a key of ``LAYOUTS`` (``"tn"``: A and B K-major).
        alpha: fused epilogue ``C = alpha * (A @ B^T) + beta * C + bias[n]`` (a compile-time
            constant; 1 emits no multiply).
        beta: scale of the old ``C`` (read before it is overwritten: ``C`` is in and out);
            0 reads nothing.
        bias: add an ``N``-vector (input dtype) to every row; the kernel takes it as an
            extra argument only then.
        scheduler: ``"static"`` (CTA ``c`` runs tiles ``c, c + G, ...``) or ``"dynamic"``
            (after its first tile, the producer warp claims tiles from a global atomic counter
            and hands them to the consumers through a 2-stage SMEM queue; 1 x 1 clusters).
        kernel: ``"cooperative"`` (the consumer warpgroups share every tile) or
            ``"pingpong"`` (two consumer warpgroups take the CTA's tiles in turns, each with
            its own A/B ring and epilogue buffers, so one's epilogue overlaps the other's main
            loop; 64-row tiles, 1 x 1 clusters, static scheduler).
    """

    tile_mn: tuple[int, int] = (128, 256)
    cluster_mn: tuple[int, int] = (1, 1)
    dtype: str = "bf16"
    stages: int = 0
    epi_n: int = 32
    epi_stages: int = 4
    swizzle: int = 8
    layout: str = "tn"
    alpha: float = 1.0
    beta: float = 0.0
    bias: bool = False
    scheduler: str = "static"
    kernel: str = "cooperative"

    def __post_init__(self) -> None:
        if self.tile_mn not in TILES:
            raise ValueError(f"tile {self.tile_mn} not in {TILES}")
        if self.cluster_mn not in CLUSTERS:
            raise ValueError(f"cluster {self.cluster_mn} not in {CLUSTERS}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype {self.dtype!r} not in {sorted(DTYPES)}")
        if self.epi_stages < 2 or self.epi_subtiles % self.epi_stages:
            raise ValueError("epi_stages must be >= 2 and divide the epilogue sub-tile count")
        if self.ab_stages < 2:
            raise ValueError("the A/B ring needs at least 2 stages")
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout {self.layout!r} not in {sorted(LAYOUTS)}")
        if self.scheduler not in SCHEDULERS:
            raise ValueError(f"scheduler {self.scheduler!r} not in {SCHEDULERS}")
        if self.dynamic and self.cluster_size > 1:
            raise ValueError("the dynamic scheduler hands out single-CTA tiles: use 1x1")
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel {self.kernel!r} not in {KERNELS}")
        if self.pingpong and (self.tile_mn[0] != WGMMA_M or self.cluster_size > 1 or self.dynamic):
            raise ValueError("pingpong takes 64-row tiles, a 1x1 cluster, the static scheduler")

    @property
    def pingpong(self) -> bool:
        """True when two consumer warpgroups take tiles in turns."""
        return self.kernel == "pingpong"

    @property
    def math_wgs(self) -> int:
        """Consumer warpgroups in the CTA (each one alone on its tile in ping-pong)."""
        return 2 if self.pingpong else self.consumer_wgs

    @property
    def dynamic(self) -> bool:
        """True for the atomic dynamic scheduler."""
        return self.scheduler == "dynamic"

    @property
    def consumer_wgs(self) -> int:
        """Consumer (WGMMA) warpgroups: one per 64 tile rows."""
        return self.tile_mn[0] // WGMMA_M

    @property
    def consumer_threads(self) -> int:
        """Threads of the consumer warpgroups (the ring's readers, the epilogue barrier)."""
        return self.consumer_wgs * WARPGROUP

    @property
    def block_threads(self) -> int:
        """Threads per CTA: the producer warpgroup and the consumer warpgroups."""
        return (1 + self.math_wgs) * WARPGROUP

    @property
    def consumer_regs(self) -> int | None:
        """The consumers' ``setmaxnreg.inc`` target, or None (no ``setmaxnreg``).

        A 384-thread CTA starts with at most 168 registers per thread: the two consumer
        warpgroups take 232 from what the producer gives back. In a 256-thread CTA (one
        consumer warpgroup) ptxas may give every thread up to 255 registers from the start,
        so the consumer keeps what ptxas allocated for it (only the producer gives registers
        back); TS too would lower a 232 there as ``setmaxnreg.dec``.
        """
        return CONSUMER_REGS if self.math_wgs > 1 else None

    @property
    def a_layout(self) -> LayoutEnum:
        """A's major as a ``LayoutEnum`` (ROW_MAJOR: K-major, COL_MAJOR: M-major)."""
        return LAYOUTS[self.layout][0]

    @property
    def b_layout(self) -> LayoutEnum:
        """B's major as a ``LayoutEnum`` (ROW_MAJOR: K-major, COL_MAJOR: N-major)."""
        return LAYOUTS[self.layout][1]

    @property
    def fused_epilogue(self) -> bool:
        """Whether the epilogue does more than convert the accumulator."""
        return self.alpha != 1.0 or self.beta != 0.0 or self.bias

    @property
    def element(self) -> Any:
        """The CuTe DSL element type of A, B and C."""
        return DTYPES[self.dtype]

    @property
    def cluster_size(self) -> int:
        """CTAs per cluster."""
        return self.cluster_mn[0] * self.cluster_mn[1]

    @property
    def epi_tile(self) -> tuple[int, int]:
        """One epilogue sub-tile ``(BM, epi_n)``."""
        return (self.tile_mn[0], self.epi_n)

    @property
    def epi_subtiles(self) -> int:
        """Epilogue sub-tiles per CTA tile."""
        return self.tile_mn[1] // self.epi_n

    @property
    def stage_bytes(self) -> int:
        """Bytes one A/B stage receives (the TMA transaction count)."""
        return (self.tile_mn[0] + self.tile_mn[1]) * TILE_K * 2

    @property
    def ab_stages(self) -> int:
        """A/B ring depth (``stages`` or as many as fit)."""
        if self.stages:
            return self.stages
        rings = 2 if self.pingpong else 1  # ping-pong: a ring and epilogue buffers per WG
        epi_bytes = self.tile_mn[0] * self.epi_n * 2 * self.epi_stages * rings
        return (SMEM_BYTES - SMEM_RESERVED - epi_bytes) // self.stage_bytes // rings

    @property
    def max_active_clusters(self) -> int:
        """Persistent clusters: one CTA per SM."""
        return SMS // self.cluster_size


def fit_swizzle(cfg: GemmConfig, n: int) -> GemmConfig:
    """Fit the scheduler swizzle to a problem with ``N = n``.

    Returns:
        ``cfg`` with the largest power-of-two swizzle ``<= cfg.swizzle`` that divides the
        problem's cluster-column count (so the scheduler adds no padded, empty tiles).
    """
    columns = -(-n // cfg.tile_mn[1]) // cfg.cluster_mn[1]
    swizzle = 1
    while swizzle * 2 <= cfg.swizzle and columns % (swizzle * 2) == 0:
        swizzle *= 2
    return dataclasses.replace(cfg, swizzle=swizzle)


# ---------------------------------------------------------------------------------------------
# trace-time construction helpers (no code emitted by themselves)
# ---------------------------------------------------------------------------------------------


def make_tiled_mma(cfg: GemmConfig) -> Any:
    """WGMMA ``64 x BN x 16`` atoms, one per consumer warpgroup along M.

    A and B are read from SMEM K-major or MN-major (``cfg.layout``; MN-major WGMMA operands
    exist for 16-bit types).
    """
    return sm90.make_trivial_tiled_mma(
        cfg.element,
        cfg.element,
        cfg.a_layout.sm90_mma_major_mode(),
        cfg.b_layout.sm90_mma_major_mode(),
        cutlass.Float32,
        (cfg.consumer_wgs, 1, 1),
        tiler_mn=(WGMMA_M, cfg.tile_mn[1]),
    )


def make_smem_layouts(cfg: GemmConfig) -> tuple[Any, Any, Any]:
    """Swizzled, staged SMEM layouts of the A ring, the B ring and the epilogue buffers."""
    bm, bn = cfg.tile_mn
    tiler = (bm, bn, TILE_K)
    a = sm90.make_smem_layout_a(cfg.a_layout, tiler, cfg.element, cfg.ab_stages)
    b = sm90.make_smem_layout_b(cfg.b_layout, tiler, cfg.element, cfg.ab_stages)
    row = LayoutEnum.ROW_MAJOR  # N-major C
    c = sm90.make_smem_layout_epi(cfg.element, row, cfg.epi_tile, cfg.epi_stages)
    return a, b, c


def make_tma_atoms(
    cfg: GemmConfig, a: Any, b: Any, c: Any, layouts: tuple[Any, Any, Any]
) -> tuple[Any, Any, Any, Any, Any, Any]:
    """Host side: TMA atoms and TMA coordinate tensors ``(atom_a, tA, atom_b, tB, atom_c, tC)``.

    ``A`` is split over the ``CN`` CTAs of a cluster row and multicast to all of them, ``B``
    over the ``CM`` CTAs of a cluster column.
    """
    a_layout, b_layout, c_layout = layouts
    bm, bn = cfg.tile_mn
    cm, cn = cfg.cluster_mn

    def load_op(n_mcast: int) -> Any:
        if n_mcast == 1:
            return cpasync.CopyBulkTensorTileG2SOp()
        return cpasync.CopyBulkTensorTileG2SMulticastOp()

    atom_a, t_a = cpasync.make_tiled_tma_atom(
        load_op(cn), a, cute.slice_(a_layout, (None, None, 0)), (bm, TILE_K), num_multicast=cn
    )
    atom_b, t_b = cpasync.make_tiled_tma_atom(
        load_op(cm), b, cute.slice_(b_layout, (None, None, 0)), (bn, TILE_K), num_multicast=cm
    )
    atom_c, t_c = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileS2GOp(), c, cute.slice_(c_layout, (None, None, 0)), cfg.epi_tile
    )
    return atom_a, t_a, atom_b, t_b, atom_c, t_c


def make_scheduler_params(cfg: GemmConfig, m: Any, n: Any) -> Any:
    """Static persistent scheduler over the ``ceil(M/BM) x ceil(N/BN)`` tile grid."""
    tiles = (cute.ceil_div(m, cfg.tile_mn[0]), cute.ceil_div(n, cfg.tile_mn[1]), 1)
    return cutils.PersistentTileSchedulerParams(tiles, (*cfg.cluster_mn, 1), cfg.swizzle)


def next_scheduler(cfg: GemmConfig, sched: Any, claimed: Any) -> Any:
    """The scheduler at the next tile: ``G`` further (static) or at the claimed index."""
    if const_expr(cfg.dynamic):
        return cutils.StaticPersistentTileScheduler(
            sched.params,
            sched.num_persistent_clusters,
            claimed,
            sched.cta_id_in_cluster,
            sched._num_tiles_executed + cutlass.Int32(1),
        )
    sched.advance_to_next_work()
    return sched


def make_scheduler(params: Any) -> Any:
    """Each role builds its own scheduler copy (they all visit the same tiles)."""
    return cutils.StaticPersistentTileScheduler.create(
        params, cute.arch.block_idx(), cute.arch.grid_dim()
    )


def cluster_coord(cfg: GemmConfig) -> Any:
    """This CTA's ``(m, n, 0)`` coordinate inside its cluster."""
    rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    return cute.make_layout((*cfg.cluster_mn, 1)).get_flat_coord(rank)


def mcast_masks(cfg: GemmConfig, coord: Any) -> tuple[Any, Any]:
    """Multicast masks ``(A, B)``: A goes to the cluster row, B to the cluster column."""
    cta_layout = cute.make_layout((*cfg.cluster_mn, 1))
    mask_a = cute.make_layout_image_mask(cta_layout, coord, mode=1) if cfg.cluster_mn[1] > 1 else 0
    mask_b = cute.make_layout_image_mask(cta_layout, coord, mode=0) if cfg.cluster_mn[0] > 1 else 0
    return mask_a, mask_b


def make_ab_pipeline(cfg: GemmConfig, barrier_storage: Any) -> Any:
    """The A/B ring: 1 TMA-issuing thread -> the consumer threads (one arrival per warp).

    With ``enable_multicast_signaling`` each consumer warp arrives once on the empty barrier of
    every CTA that multicasts into this stage, so a stage is refilled only when all readers in
    the cluster are done with it.
    """
    return cpipe.PipelineTmaAsync.create(
        num_stages=cfg.ab_stages,
        producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
        consumer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, cfg.consumer_threads),
        tx_count=cfg.stage_bytes,
        barrier_storage=barrier_storage,
        cta_layout_vmnk=cute.make_layout((1, *cfg.cluster_mn, 1)),
        enable_multicast_signaling=True,
        defer_sync=True,
    )


def epilogue_barrier(cfg: GemmConfig, math_wg: int = 0) -> Any:
    """Named barrier over the threads that share a tile's epilogue (never the producer).

    Ping-pong warpgroups each get their own barrier (id ``1 + math_wg``).
    """
    return cpipe.NamedBarrier(
        barrier_id=EPILOGUE_BARRIER_ID + math_wg, num_threads=cfg.consumer_threads
    )


def partition_ab_for_tma(
    cfg: GemmConfig,
    atom_a: Any,
    atom_b: Any,
    t_a: Any,
    t_b: Any,
    s_a: Any,
    s_b: Any,
    coord: Any,
) -> tuple[Any, Any, Any, Any]:
    """TMA views ``(tAgA, tAsA, tBgB, tBsB)``: index ``tAgA[(None, m, k)]``, ``tAsA[(None, s)]``.

    With multicast, this CTA loads only its slice (by its position in the cluster row / column)
    of each tile; the multicast delivers the other slices from its peers.
    """
    bm, bn = cfg.tile_mn
    cm, cn = cfg.cluster_mn
    g_a = cute.local_tile(t_a, (bm, TILE_K), (None, None))  # (BM, BK, tiles_m, tiles_k)
    g_b = cute.local_tile(t_b, (bn, TILE_K), (None, None))  # (BN, BK, tiles_n, tiles_k)
    ta_s, ta_g = cpasync.tma_partition(
        atom_a,
        coord[1],
        cute.make_layout(cn),
        cute.group_modes(s_a, 0, 2),
        cute.group_modes(g_a, 0, 2),
    )
    tb_s, tb_g = cpasync.tma_partition(
        atom_b,
        coord[0],
        cute.make_layout(cm),
        cute.group_modes(s_b, 0, 2),
        cute.group_modes(g_b, 0, 2),
    )
    return ta_g, ta_s, tb_g, tb_s


def make_mma_fragments(tiled_mma: Any, s_a: Any, s_b: Any, consumer_wg: Any) -> tuple[Any, Any]:
    """WGMMA descriptors over the rings for consumer warpgroup ``consumer_wg`` (0 or 1).

    Returns ``(tCrA, tCrB)`` indexed ``[(None, None, kk, stage)]``.
    """
    thr_mma = tiled_mma.get_slice(consumer_wg * WARPGROUP)
    return (
        tiled_mma.make_fragment_A(thr_mma.partition_A(s_a)),
        tiled_mma.make_fragment_B(thr_mma.partition_B(s_b)),
    )


def make_accumulator(cfg: GemmConfig, tiled_mma: Any, consumer_wg: Any) -> Any:
    """The fp32 register accumulator of one consumer thread (``BM/2 x BN`` per warpgroup)."""
    thr_mma = tiled_mma.get_slice(consumer_wg * WARPGROUP)
    shape = thr_mma.partition_shape_C(cfg.tile_mn)
    return cute.make_rmem_tensor(shape, cutlass.Float32)


@dataclasses.dataclass(frozen=True)
class EpilogueViews:
    """Per-thread views for the epilogue (built once per kernel, reused every tile).

    Attributes:
        r2s: tiled register -> SMEM copy (``stmatrix``).
        acc: the accumulator re-tiled for ``r2s``; sub-tile ``j`` is a contiguous run of it.
        frag: registers of one converted sub-tile (output dtype).
        s_c: ``r2s`` destination view of the epilogue buffers, ``[(None, None, None, buf)]``.
        thr_mma: this thread's slice of the tiled MMA (partitions global C / bias like the
            accumulator); only for a fused epilogue, else None.
        acc_mma: the accumulator in its MMA layout (element ``i`` sits at ``thr_mma``'s
            ``partition_C`` coordinate ``i``); only for a fused epilogue, else None.
    """

    r2s: Any
    acc: Any
    frag: Any
    s_c: Any
    thr_mma: Any = None
    acc_mma: Any = None


def make_epilogue_views(
    cfg: GemmConfig, tiled_mma: Any, acc: Any, s_c: Any, consumer_tidx: Any
) -> EpilogueViews:
    """Partition the accumulator and the epilogue buffers for ``stmatrix``."""
    row = LayoutEnum.ROW_MAJOR
    store_atom = sm90.get_smem_store_op(row, cfg.element, cutlass.Float32)
    stmatrix = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), cfg.element)
    r2s = cute.make_tiled_copy_S(store_atom, cute.make_tiled_copy_C_atom(stmatrix, tiled_mma))
    thr = r2s.get_slice(consumer_tidx)
    frag_shape = cute.shape(thr.partition_S(s_c))[:3]
    frag = cute.make_rmem_tensor(frag_shape, cfg.element)
    if not cfg.fused_epilogue:
        return EpilogueViews(r2s, r2s.retile(acc), frag, thr.partition_D(s_c))
    thr_mma = tiled_mma.get_slice(consumer_tidx)
    return EpilogueViews(r2s, r2s.retile(acc), frag, thr.partition_D(s_c), thr_mma, acc)


# ---------------------------------------------------------------------------------------------
# the steps of the schedule (what the TS work methods call)
# ---------------------------------------------------------------------------------------------


@cute.jit
def load_k_block(
    atom_a: Any,
    atom_b: Any,
    ta_g: Any,
    ta_s: Any,
    tb_g: Any,
    tb_s: Any,
    m: Any,
    n: Any,
    k: Any,
    stage: Any,
    barrier: Any,
    mask_a: Any,
    mask_b: Any,
) -> None:
    """Producer: TMA-load K block ``k`` of A tile row ``m`` and B tile row ``n`` into ``stage``.

    Both loads complete on ``barrier`` (the stage's full barrier, armed with the stage's byte
    count by ``producer_acquire``); out-of-bounds rows / columns arrive zero-filled. A mask of
    0 means "no multicast" (a plain load).
    """
    if const_expr(isinstance(mask_a, int)):
        cute.copy(atom_a, ta_g[(None, m, k)], ta_s[(None, stage)], tma_bar_ptr=barrier)
    else:
        cute.copy(
            atom_a, ta_g[(None, m, k)], ta_s[(None, stage)], tma_bar_ptr=barrier, mcast_mask=mask_a
        )
    if const_expr(isinstance(mask_b, int)):
        cute.copy(atom_b, tb_g[(None, n, k)], tb_s[(None, stage)], tma_bar_ptr=barrier)
    else:
        cute.copy(
            atom_b, tb_g[(None, n, k)], tb_s[(None, stage)], tma_bar_ptr=barrier, mcast_mask=mask_b
        )


@cute.jit
def mma_begin_tile(tiled_mma: Any, acc: Any) -> None:
    """Consumer: zero the accumulator and fence it for the first WGMMA of a tile."""
    acc.fill(0.0)
    tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
    # Registers written by ordinary instructions must be fenced before a WGMMA reads them.
    warpgroup.fence()


@cute.jit
def mma_k_block(tiled_mma: Any, acc: Any, t_ra: Any, t_rb: Any, stage: Any) -> None:
    """Consumer: issue the WGMMAs of one 64-deep K block (4 x k16) from ``stage``; commit."""
    for kk in range_constexpr(cute.size(t_ra, mode=[2])):
        cute.gemm(tiled_mma, acc, t_ra[(None, None, kk, stage)], t_rb[(None, None, kk, stage)], acc)
    warpgroup.commit_group()


@cute.jit
def mma_wait(outstanding: Constexpr[int]) -> None:
    """Consumer: wait until at most ``outstanding`` WGMMA groups of this warpgroup run."""
    warpgroup.wait_group(outstanding)


@cute.jit
def epilogue_fuse(
    cfg: Constexpr[GemmConfig],
    views: EpilogueViews,
    t_c: Any,
    c_in: Any,
    bias: Any,
    m: Any,
    n: Any,
) -> None:
    """Consumers: ``acc = alpha * acc + beta * C[tile (m, n)] + bias[n]`` in fp32, in place.

    Each thread reads the old C (``c_in``, the global output tensor; None when ``beta == 0``)
    and the bias (an ``N``-vector seen as an ``M x N`` tensor of row stride 0; None when off)
    at the coordinates of its own accumulator values (the MMA partition of the tile), with
    plain predicated global loads: values outside ``M x N`` read nothing (the TMA store clips
    them anyway).
    """
    acc = views.acc_mma
    n_vals = cute.size(acc)
    if const_expr(cfg.alpha != 1.0):
        for i in range_constexpr(n_vals):
            acc[i] = acc[i] * cutlass.Float32(cfg.alpha)
    if const_expr(cfg.beta != 0.0 or cfg.bias):
        shape = t_c.shape  # (M, N); t_c's own coordinates are in TMA order (N first)
        ident = cute.make_identity_tensor(shape)
        coords = views.thr_mma.partition_C(cute.local_tile(ident, cfg.tile_mn, (m, n)))
        if const_expr(cfg.beta != 0.0):
            old = views.thr_mma.partition_C(cute.local_tile(c_in, cfg.tile_mn, (m, n)))
        if const_expr(cfg.bias):
            rows = cute.make_tensor(bias.iterator, cute.make_layout(shape, stride=(0, 1)))
            add = views.thr_mma.partition_C(cute.local_tile(rows, cfg.tile_mn, (m, n)))
        for i in range_constexpr(n_vals):
            if cute.elem_less(coords[i], shape):
                if const_expr(cfg.beta != 0.0):
                    acc[i] = acc[i] + cutlass.Float32(cfg.beta) * old[i].to(cutlass.Float32)
                if const_expr(cfg.bias):
                    acc[i] = acc[i] + add[i].to(cutlass.Float32)


@cute.jit
def epilogue_store(
    cfg: Constexpr[GemmConfig],
    views: EpilogueViews,
    atom_c: Any,
    s_c: Any,
    t_c: Any,
    m: Any,
    n: Any,
    bar: Any,
    is_store_warp: Any,
    c_in: Any = None,
    bias: Any = None,
) -> None:
    """Consumers: write tile ``(m, n)`` of C from the accumulator, one sub-tile at a time.

    Sub-tile ``j`` goes through buffer ``j % epi_stages`` (the sub-tile count is a multiple of
    it, so the buffer is static and the ring continues seamlessly into the next tile). For each
    sub-tile: convert + ``stmatrix`` into the buffer, ``fence.proxy.async`` (make the generic
    proxy writes visible to TMA), and one named barrier over the consumer threads. Before
    arriving, the store thread waits until at most ``epi_stages - 2`` of its stores still read
    SMEM, so after the barrier the *next* sub-tile's buffer is free; after the barrier it
    issues the TMA store of this sub-tile and commits it. One barrier per sub-tile suffices.

    With a fused epilogue (``cfg.fused_epilogue``) ``epilogue_fuse`` first rewrites the
    accumulator (``c_in``: the output tensor when ``beta != 0``, ``bias``: the bias vector).
    """
    if const_expr(cfg.fused_epilogue):
        epilogue_fuse(cfg, views, t_c, c_in, bias, m, n)
    g_tile = cute.local_tile(t_c, cfg.tile_mn, (m, n))
    g_sub = cute.zipped_divide(g_tile, cfg.epi_tile)  # (epi_tile, (1, subtiles))
    t_s, t_g = cpasync.tma_partition(
        atom_c, 0, cute.make_layout(1), cute.group_modes(s_c, 0, 2), g_sub
    )
    n_vals = cute.size(views.frag)
    for j in range_constexpr(cfg.epi_subtiles):
        buf = j % cfg.epi_stages
        for v in range_constexpr(n_vals):
            views.frag[v] = views.acc[j * n_vals + v].to(cfg.element)
        cute.copy(views.r2s, views.frag, views.s_c[(None, None, None, buf)])
        cute.arch.fence_proxy("async.shared", space="cta")
        if is_store_warp:
            cute.arch.cp_async_bulk_wait_group(cfg.epi_stages - 2, read=True)
        bar.arrive_and_wait()
        if is_store_warp:
            # Bulk groups are per thread: the same (elected) lane issues and commits, and the
            # whole warp's wait_group above includes that lane.
            with cute.arch.elect_one():
                cute.copy(atom_c, t_s[(None, buf)], t_g[(None, (0, j))])
                cute.arch.cp_async_bulk_commit_group()


@cute.jit
def epilogue_drain(is_store_warp: Any) -> None:
    """Store warp, before exit: wait until the TMA stores finished reading SMEM."""
    if is_store_warp:
        cute.arch.cp_async_bulk_wait_group(0, read=True)


# ---------------------------------------------------------------------------------------------
# Hand-written twin: the pipeline / state / loop skeleton around the steps
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
    params: cutils.PersistentTileSchedulerParams,
    c_in: cute.Tensor | None,
    bias: cute.Tensor | None,
    counters: cute.Tensor | None,
    cfg: Constexpr[GemmConfig],
) -> None:
    """The persistent warp-specialized GEMM: producer warpgroup 0, consumer warpgroups 1 (-2)."""
    tidx, _, _ = cute.arch.thread_idx()
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
    bars = alloc.allocate_array(cutlass.Int64, num_elems=2 * cfg.ab_stages, byte_alignment=8)
    pipe = make_ab_pipeline(cfg, bars)
    qpipe: Any = None
    slots: Any = None
    ctr: Any = counters
    if const_expr(cfg.dynamic):
        qbars = alloc.allocate_array(cutlass.Int64, num_elems=2 * QUEUE_STAGES, byte_alignment=8)
        qpipe = cpipe.PipelineAsync.create(
            num_stages=QUEUE_STAGES,
            producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 32),
            consumer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, cfg.consumer_threads),
            barrier_storage=qbars,
            defer_sync=True,
        )
        slot_ptr = alloc.allocate_array(cutlass.Int32, num_elems=QUEUE_STAGES, byte_alignment=4)
        slots = cute.make_tensor(slot_ptr, cute.make_layout(QUEUE_STAGES))
    if const_expr(cfg.cluster_size > 1):
        # Barrier init must be visible cluster-wide before any peer multicasts into this CTA.
        cpipe.pipeline_init_arrive(cluster_shape_mn=cfg.cluster_mn, is_relaxed=True)
        cpipe.pipeline_init_wait(cluster_shape_mn=cfg.cluster_mn)
    else:
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
    coord = cluster_coord(cfg)

    if warp < WARPGROUP // 32:
        cute.arch.setmaxregister_decrease(PRODUCER_REGS)
    if warp < LOAD_WARP + 1:
        ta_g, ta_s, tb_g, tb_s = partition_ab_for_tma(
            cfg, atom_a, atom_b, t_a, t_b, s_a, s_b, coord
        )
        mask_a, mask_b = mcast_masks(cfg, coord)
        state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, cfg.ab_stages)
        qstate = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, QUEUE_STAGES)
        sched = make_scheduler(params)
        tile = sched.get_current_work()
        while tile.is_valid_tile:
            nxt = cutlass.Int32(0)
            if const_expr(cfg.dynamic):
                # Claim the next tile (lane 0), publish it for the consumers, count this CTA
                # out after its last claim (the last CTA out zeroes the counters).
                qpipe.producer_acquire(qstate)
                lane = cute.arch.lane_idx()
                claimed = cutlass.Int32(0)
                if lane == 0:
                    claimed = cutlass.Int32(
                        cute.arch.atomic_add(
                            ctr.iterator, cutlass.Int32(1), sem="relaxed", scope="gpu"
                        )
                    )
                nxt = cute.arch.shuffle_sync(claimed, 0) + sched.num_persistent_clusters
                if lane == 0:
                    slots[qstate.index] = nxt
                total = cute.size(params.problem_layout_ncluster_mnl)
                if nxt >= total:  # noqa: SIM102 (DSL: no `and` on dynamic values)
                    if lane == 0:
                        done = cute.arch.atomic_add(
                            ctr.iterator + 1, cutlass.Int32(1), sem="acq_rel", scope="gpu"
                        )
                        active = cutlass.min(sched.num_persistent_clusters, total)  # type: ignore[attr-defined]
                        if cutlass.Int32(done) == active - 1:
                            cute.arch.atomic_exch(
                                ctr.iterator, cutlass.Int32(0), sem="relaxed", scope="gpu"
                            )
                            cute.arch.atomic_exch(
                                ctr.iterator + 1, cutlass.Int32(0), sem="relaxed", scope="gpu"
                            )
                qpipe.producer_commit(qstate)
                qstate.advance()
            m, n, _ = tile.tile_idx
            for k in cutlass.range(k_tiles, unroll=1):  # type: ignore[attr-defined]
                pipe.producer_acquire(state)
                load_k_block(
                    atom_a,
                    atom_b,
                    ta_g,
                    ta_s,
                    tb_g,
                    tb_s,
                    m,
                    n,
                    k,
                    state.index,
                    pipe.producer_get_barrier(state),
                    mask_a,
                    mask_b,
                )
                pipe.producer_commit(state)
                state.advance()
            sched = next_scheduler(cfg, sched, nxt)
            tile = sched.get_current_work()
        if const_expr(cfg.cluster_size > 1):
            # Do not exit while a peer may still arrive on (multicast into) this ring.
            pipe.producer_tail(state)
    if (warp >= WARPGROUP // 32) & (warp < cfg.block_threads // 32):
        if const_expr(cfg.consumer_regs is not None):
            cute.arch.setmaxregister_increase(cfg.consumer_regs)
        consumer_wg = cute.arch.make_warp_uniform(tidx // WARPGROUP) - 1
        t_ra, t_rb = make_mma_fragments(tiled_mma, s_a, s_b, consumer_wg)
        acc = make_accumulator(cfg, tiled_mma, consumer_wg)
        views = make_epilogue_views(cfg, tiled_mma, acc, s_c, tidx - WARPGROUP)
        bar = epilogue_barrier(cfg)
        is_store_warp = warp == STORE_WARP
        read = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, cfg.ab_stages)
        release = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, cfg.ab_stages)
        qstate = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, QUEUE_STAGES)
        sched = make_scheduler(params)
        tile = sched.get_current_work()
        while tile.is_valid_tile:
            nxt = cutlass.Int32(0)
            if const_expr(cfg.dynamic):
                qpipe.consumer_wait(qstate)
                nxt = cutlass.Int32(slots[qstate.index])
                qpipe.consumer_release(qstate)
                qstate.advance()
            m, n, _ = tile.tile_idx
            mma_begin_tile(tiled_mma, acc)
            for k in cutlass.range(k_tiles, unroll=1):  # type: ignore[attr-defined]
                pipe.consumer_wait(read)
                stage = read.index
                read.advance()
                mma_k_block(tiled_mma, acc, t_ra, t_rb, stage)
                # Keep this block's WGMMAs in flight; the previous block's are done, so its
                # stage can go back to the producer (from the second block on).
                mma_wait(1)
                if k >= 1:
                    pipe.consumer_release(release)
                    release.advance()
                if k == k_tiles - 1:
                    mma_wait(0)
                    pipe.consumer_release(release)
                    release.advance()
            epilogue_store(cfg, views, atom_c, s_c, t_c, m, n, bar, is_store_warp, c_in, bias)
            sched = next_scheduler(cfg, sched, nxt)
            tile = sched.get_current_work()
        epilogue_drain(is_store_warp)


@cute.jit
def _pingpong_math(
    cfg: Constexpr[GemmConfig],
    i: Constexpr[int],
    pipe: Any,
    tiled_mma: Any,
    s_a: Any,
    s_b: Any,
    s_c: Any,
    atom_c: Any,
    t_c: Any,
    params: Any,
    k_tiles: Any,
    c_in: Any,
    bias: Any,
) -> None:
    """Ping-pong math warpgroup ``i``: the CTA's even (``i = 0``) or odd tiles, on its ring."""
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if const_expr(cfg.consumer_regs is not None):
        cute.arch.setmaxregister_increase(cfg.consumer_regs)
    # Each warpgroup its own TiledMma: the accumulate flag it carries is set per warpgroup.
    tiled_mma = make_tiled_mma(cfg)
    consumer_wg = cute.arch.make_warp_uniform(tidx // WARPGROUP) - (1 + i)
    t_ra, t_rb = make_mma_fragments(tiled_mma, s_a, s_b, consumer_wg)
    acc = make_accumulator(cfg, tiled_mma, consumer_wg)
    views = make_epilogue_views(cfg, tiled_mma, acc, s_c, tidx - WARPGROUP * (1 + i))
    bar = epilogue_barrier(cfg, i)
    is_store_warp = warp == STORE_WARP + i * (WARPGROUP // 32)
    read = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, cfg.ab_stages)
    release = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, cfg.ab_stages)
    count = cutlass.Int32(0)
    sched = make_scheduler(params)
    tile = sched.get_current_work()
    while tile.is_valid_tile:
        nxt = count + 1
        odd = (count % 2) == 1
        count = nxt
        mine = odd if const_expr(i == 1) else not_(odd)
        if mine:
            m, n, _ = tile.tile_idx
            mma_begin_tile(tiled_mma, acc)
            for k in cutlass.range(k_tiles, unroll=1):  # type: ignore[attr-defined]
                pipe.consumer_wait(read)
                stage = read.index
                read.advance()
                mma_k_block(tiled_mma, acc, t_ra, t_rb, stage)
                mma_wait(1)
                if k >= 1:
                    pipe.consumer_release(release)
                    release.advance()
                if k == k_tiles - 1:
                    mma_wait(0)
                    pipe.consumer_release(release)
                    release.advance()
            epilogue_store(cfg, views, atom_c, s_c, t_c, m, n, bar, is_store_warp, c_in, bias)
        sched.advance_to_next_work()
        tile = sched.get_current_work()
    epilogue_drain(is_store_warp)


@cute.kernel
def twin_pingpong_kernel(
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
    params: cutils.PersistentTileSchedulerParams,
    c_in: cute.Tensor | None,
    bias: cute.Tensor | None,
    counters: cute.Tensor | None,
    cfg: Constexpr[GemmConfig],
) -> None:
    """Ping-pong: the producer fills the ring of the warpgroup whose turn the tile is."""
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp == LOAD_WARP:
        cpasync.prefetch_descriptor(atom_a)
        cpasync.prefetch_descriptor(atom_b)
        cpasync.prefetch_descriptor(atom_c)
    alloc = SmemAllocator()
    s_a0 = alloc.allocate_tensor(cfg.element, a_layout.outer, 1024, swizzle=a_layout.inner)
    s_b0 = alloc.allocate_tensor(cfg.element, b_layout.outer, 1024, swizzle=b_layout.inner)
    s_c0 = alloc.allocate_tensor(cfg.element, c_layout.outer, 1024, swizzle=c_layout.inner)
    s_a1 = alloc.allocate_tensor(cfg.element, a_layout.outer, 1024, swizzle=a_layout.inner)
    s_b1 = alloc.allocate_tensor(cfg.element, b_layout.outer, 1024, swizzle=b_layout.inner)
    s_c1 = alloc.allocate_tensor(cfg.element, c_layout.outer, 1024, swizzle=c_layout.inner)
    k_tiles = cute.ceil_div(cute.size(t_a, mode=[1]), TILE_K)
    bars0 = alloc.allocate_array(cutlass.Int64, num_elems=2 * cfg.ab_stages, byte_alignment=8)
    pipe0 = make_ab_pipeline(cfg, bars0)
    bars1 = alloc.allocate_array(cutlass.Int64, num_elems=2 * cfg.ab_stages, byte_alignment=8)
    pipe1 = make_ab_pipeline(cfg, bars1)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    coord = cluster_coord(cfg)

    if warp < WARPGROUP // 32:
        cute.arch.setmaxregister_decrease(PRODUCER_REGS)
    if warp < LOAD_WARP + 1:
        ta_g0, ta_s0, tb_g0, tb_s0 = partition_ab_for_tma(
            cfg, atom_a, atom_b, t_a, t_b, s_a0, s_b0, coord
        )
        mask_a0, mask_b0 = mcast_masks(cfg, coord)
        ta_g1, ta_s1, tb_g1, tb_s1 = partition_ab_for_tma(
            cfg, atom_a, atom_b, t_a, t_b, s_a1, s_b1, coord
        )
        mask_a1, mask_b1 = mcast_masks(cfg, coord)
        count = cutlass.Int32(0)
        state0 = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, cfg.ab_stages)
        state1 = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, cfg.ab_stages)
        sched = make_scheduler(params)
        tile = sched.get_current_work()
        while tile.is_valid_tile:
            nxt = count + 1
            odd = (count % 2) == 1
            count = nxt
            m, n, _ = tile.tile_idx
            if not_(odd):
                for k in cutlass.range(k_tiles, unroll=1):  # type: ignore[attr-defined]
                    pipe0.producer_acquire(state0)
                    load_k_block(
                        atom_a,
                        atom_b,
                        ta_g0,
                        ta_s0,
                        tb_g0,
                        tb_s0,
                        m,
                        n,
                        k,
                        state0.index,
                        pipe0.producer_get_barrier(state0),
                        mask_a0,
                        mask_b0,
                    )
                    pipe0.producer_commit(state0)
                    state0.advance()
            if odd:
                for k in cutlass.range(k_tiles, unroll=1):  # type: ignore[attr-defined]
                    pipe1.producer_acquire(state1)
                    load_k_block(
                        atom_a,
                        atom_b,
                        ta_g1,
                        ta_s1,
                        tb_g1,
                        tb_s1,
                        m,
                        n,
                        k,
                        state1.index,
                        pipe1.producer_get_barrier(state1),
                        mask_a1,
                        mask_b1,
                    )
                    pipe1.producer_commit(state1)
                    state1.advance()
            sched.advance_to_next_work()
            tile = sched.get_current_work()
    if (warp >= WARPGROUP // 32) & (warp < 2 * WARPGROUP // 32):
        _pingpong_math(
            cfg, 0, pipe0, tiled_mma, s_a0, s_b0, s_c0, atom_c, t_c, params, k_tiles, c_in, bias
        )
    if (warp >= 2 * WARPGROUP // 32) & (warp < 3 * WARPGROUP // 32):
        _pingpong_math(
            cfg, 1, pipe1, tiled_mma, s_a1, s_b1, s_c1, atom_c, t_c, params, k_tiles, c_in, bias
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
        cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
        cpipe.CooperativeGroup(cpipe.Agent.Thread, cfg.consumer_threads),
        cfg.stage_bytes,
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
    params: cutils.PersistentTileSchedulerParams,
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
    params: cutils.PersistentTileSchedulerParams,
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
        grid = cutils.StaticPersistentTileScheduler.get_grid_shape(
            params, cast(Any, cfg.max_active_clusters)
        )
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


def _fake_operands(cfg: GemmConfig) -> tuple[Any, Any, Any, Any, Any]:
    """Fake A, B (majors by ``cfg.layout``), N-major C and the bias (None unless ``cfg.bias``).

    Dynamic shapes and leading strides: a K-major ``rows x K`` operand has strides
    ``(ld, 1)``, an M- / N-major one ``(1, ld)``.
    """
    from cutlass.cute.runtime import make_fake_tensor

    m, n, k = (cute.sym_int32() for _ in range(3))
    lda, ldb, ldc = (cute.sym_int64(divisibility=8) for _ in range(3))

    def fake(rows: Any, cols: Any, ld: Any, layout: LayoutEnum = LayoutEnum.ROW_MAJOR) -> Any:
        stride = (ld, 1) if layout == LayoutEnum.ROW_MAJOR else (1, ld)
        return make_fake_tensor(cfg.element, (rows, cols), stride, assumed_align=16)

    bias = make_fake_tensor(cfg.element, (n,), (1,), assumed_align=16) if cfg.bias else None
    counters = make_fake_tensor(cutlass.Int32, (2,), (1,), assumed_align=4) if cfg.dynamic else None
    return (
        fake(m, k, lda, cfg.a_layout),
        fake(n, k, ldb, cfg.b_layout),
        fake(m, n, ldc),
        bias,
        counters,
    )


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
        _, ptx = compile_ptx(fn, *_fake_operands(cfg))
        result[name] = ts_codegen.count_instructions(ptx, (*DEFAULT_KINDS, *GEMM_KINDS))
        result[f"{name}_total"] = sum(opcode_counts(ptx).values())
    if "ts" in result:
        result["same_counts"] = (
            result["ts"] == result["twin"] and result["ts_total"] == result["twin_total"]
        )
    else:
        result["same_counts"] = True
    return result


def _torch_dtype(cfg: GemmConfig) -> Any:
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16}[cfg.dtype]


def _matrix(cfg: GemmConfig, rows: int, cols: int, layout: LayoutEnum, gen: Any) -> Any:
    """A random ``rows x cols`` view: ``cols`` contiguous for ROW_MAJOR, else ``rows``.

    TMA needs 16-byte aligned strides, so the contiguous extent gets a padded pitch (the
    tensor is a view of a wider buffer; the pad is never read).
    """
    import torch

    dt = _torch_dtype(cfg)
    if layout == LayoutEnum.ROW_MAJOR:
        pitch = -(-cols // 8) * 8
        return torch.randn(rows, pitch, device="cuda", dtype=dt, generator=gen)[:, :cols]
    pitch = -(-rows // 8) * 8
    return torch.randn(cols, pitch, device="cuda", dtype=dt, generator=gen)[:, :rows].t()


def make_inputs(cfg: GemmConfig, mnk: tuple[int, int, int], seed: int = 0) -> tuple[Any, Any]:
    """Random A (``M x K``) and B (``N x K``) on the GPU, strided by ``cfg.layout``.

    A K-major operand is a row-major view, an M- / N-major one the transpose of a row-major
    ``K x M`` / ``K x N`` buffer; either way the pitch is padded to 16 bytes.
    """
    import torch

    m, n, k = mnk
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return _matrix(cfg, m, k, cfg.a_layout, gen), _matrix(cfg, n, k, cfg.b_layout, gen)


def make_output(cfg: GemmConfig, m: int, n: int, seed: int = 1) -> Any:
    """An ``M x N`` output with a 16-byte aligned row pitch.

    NaN-filled (every element must be written), or random when ``beta != 0`` (the old C).
    """
    import torch

    np_ = -(-n // 8) * 8
    if cfg.beta == 0.0:
        full = torch.full((m, np_), float("nan"), device="cuda", dtype=_torch_dtype(cfg))
        return full[:, :n]
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(m, np_, device="cuda", dtype=_torch_dtype(cfg), generator=gen)[:, :n]


def make_counters_tensor(cfg: GemmConfig) -> Any:
    """The dynamic scheduler's two Int32 counters, zero (None for the static scheduler)."""
    import torch

    return torch.zeros(2, dtype=torch.int32, device="cuda") if cfg.dynamic else None


def to_counters(t: Any) -> Any:
    """The counters as a CuTe tensor (or None)."""
    from cutlass.cute.runtime import from_dlpack

    return None if t is None else from_dlpack(t, assumed_align=4)


def make_bias(cfg: GemmConfig, n: int, seed: int = 2) -> Any:
    """A random bias ``N``-vector when ``cfg.bias``, else None."""
    import torch

    if not cfg.bias:
        return None
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(n, device="cuda", dtype=_torch_dtype(cfg), generator=gen)


def to_cute(t: Any) -> Any:
    """A torch tensor (or None) as a CuTe tensor with dynamic shape / pitch (one compile fits all).

    The contiguous mode (stride 1) stays static: mode 1 of a row-major matrix, mode 0 of a
    transposed view or of a vector.
    """
    from cutlass.cute.runtime import from_dlpack

    if t is None:
        return None
    leading = 1 if t.dim() == 2 and t.stride(1) == 1 else 0
    return from_dlpack(t, assumed_align=16).mark_layout_dynamic(leading_dim=leading)


def reference(cfg: GemmConfig, a: Any, b: Any, c_old: Any = None, bias: Any = None) -> Any:
    """``alpha * A @ B^T + beta * C_old + bias`` in fp32."""
    ref = a.float() @ b.float().t()
    if cfg.alpha != 1.0:
        ref = cfg.alpha * ref
    if cfg.beta != 0.0:
        ref = ref + cfg.beta * c_old.float()
    if bias is not None:
        ref = ref + bias.float()
    return ref


def check(
    c: Any, a: Any, b: Any, cfg: GemmConfig | None = None, c_old: Any = None, bias: Any = None
) -> tuple[bool, float]:
    """Compare with an fp32 reference; error relative to the reference's largest magnitude."""
    import torch

    ref = reference(cfg or GemmConfig(), a, b, c_old, bias)
    err = float((c.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-6))
    return bool(torch.isfinite(c).all()) and err < 1e-2, err


def time_ms(fn: Any, iters: int) -> float:
    """Mean milliseconds per call over ``iters`` back-to-back launches (after warm-up)."""
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


def compile_for_gpu(cfg: GemmConfig) -> dict[str, Any]:
    """Compile every kernel once (dynamic shapes) on sample tensors: ``{name: compiled}``."""
    a, b = make_inputs(cfg, (256, 256, 64))
    c = make_output(cfg, 256, 256)
    counters = to_counters(make_counters_tensor(cfg))
    args = (to_cute(a), to_cute(b), to_cute(c), to_cute(make_bias(cfg, 256)), counters)
    return {name: cute.compile(fn, *args) for name, fn in kernels(cfg)}


def run_case(
    cfg: GemmConfig,
    compiled: dict[str, Any],
    mnk: tuple[int, int, int],
    iters: int,
    timed: bool = True,
    rounds: int = 6,
) -> dict[str, Any]:
    """Run the compiled kernels and torch.matmul on the same inputs; check, time, TFLOP/s.

    Timing interleaves the contenders (``rounds`` rounds of every kernel and torch, in an order
    rotated every round) and keeps each one's best round, so clock / power drift during the run
    biases none of them.
    """
    import torch

    m, n, k = mnk
    a, b = make_inputs(cfg, mnk)
    bias = make_bias(cfg, n)
    flop = 2.0 * m * n * k
    result: dict[str, Any] = {"mnk": list(mnk), "config": dataclasses.asdict(cfg)}
    calls: dict[str, Any] = {}
    for name, kernel in compiled.items():
        c = make_output(cfg, m, n)
        c_old = c.clone() if cfg.beta != 0.0 else None
        counters_t = make_counters_tensor(cfg)
        args = (to_cute(a), to_cute(b), to_cute(c), to_cute(bias), to_counters(counters_t))
        kernel(*args)
        torch.cuda.synchronize()
        ok, err = check(c, a, b, cfg, c_old, bias)
        if counters_t is not None:  # the last CTA out zeroed the counters for the next launch
            ok = ok and int(counters_t.abs().sum()) == 0
        result[name] = {"ok": ok, "rel_err": err}
        calls[name] = lambda kk=kernel, aa=args: kk(*aa)
    if not timed:
        return result
    bt = b.t()
    calls["torch"] = lambda: torch.matmul(a, bt)
    best = dict.fromkeys(calls, float("inf"))
    names = list(calls)
    for r in range(rounds):
        # Rotate the order every round: the first contender after a pause runs on cooler,
        # faster clocks, which would otherwise always favour the same kernel.
        for name in names[r % len(names) :] + names[: r % len(names)]:
            best[name] = min(best[name], time_ms(calls[name], iters))
    for name, ms in best.items():
        result.setdefault(name, {}).update(ms=ms, tflops=flop / (ms * 1e9))
    for name in compiled:
        result[f"{name}_over_torch"] = result[name]["tflops"] / result["torch"]["tflops"]
    return result


def parse_config(args: argparse.Namespace) -> GemmConfig:
    """A ``GemmConfig`` from the CLI options."""
    tile = tuple(int(x) for x in args.tile.split("x"))
    cluster = tuple(int(x) for x in args.cluster.split("x"))
    return GemmConfig(
        tile_mn=(tile[0], tile[1]),
        cluster_mn=(cluster[0], cluster[1]),
        dtype=args.dtype,
        stages=args.stages,
        swizzle=args.swizzle,
        layout=args.layout,
        alpha=args.alpha,
        beta=args.beta,
        bias=args.bias,
        scheduler=args.scheduler,
        kernel=args.kernel,
    )


def add_config_args(parser: argparse.ArgumentParser) -> None:
    """The kernel-configuration options (shared with ``bench/gemm.py``)."""
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--tile", choices=[f"{m}x{n}" for m, n in TILES], default="128x256")
    parser.add_argument("--cluster", choices=[f"{m}x{n}" for m, n in CLUSTERS], default="1x1")
    parser.add_argument("--scheduler", choices=list(SCHEDULERS), default="static")
    parser.add_argument(
        "--kernel",
        choices=list(KERNELS),
        default="cooperative",
        help="consumer warpgroups share each tile (cooperative) or take tiles in turns "
        "(pingpong: 64-row tiles)",
    )
    parser.add_argument("--stages", type=int, default=0, help="A/B stages (0: as many as fit)")
    parser.add_argument(
        "--swizzle", type=int, default=8, help="max tile-scheduler swizzle (fit to N per run)"
    )
    parser.add_argument(
        "--layout",
        choices=sorted(LAYOUTS),
        default="tn",
        help="operand majors, A then B (B read as K x N): tn = both K-major, nn = A M-major, "
        "tt = B N-major, nt = A M-major and B N-major",
    )
    parser.add_argument("--alpha", type=float, default=1.0, help="C = alpha * A @ B^T + ...")
    parser.add_argument("--beta", type=float, default=0.0, help="... + beta * C (C read first)")
    parser.add_argument("--bias", action="store_true", help="... + bias[n] (an N-vector)")


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
    cfg = fit_swizzle(cfg, args.mnk[1])
    compiled = compile_for_gpu(cfg)
    out = run_case(cfg, compiled, (args.mnk[0], args.mnk[1], args.mnk[2]), args.iters)
    print(json.dumps(out, sort_keys=True))
    return 0 if all(out[name]["ok"] for name in compiled) else 1


if __name__ == "__main__":
    sys.exit(main())
