"""The Hopper GEMM's steps, shared by its TS kernel and its twin.

The trace-time builders (tiled MMA, SMEM layouts, TMA atoms, scheduler
parameters, pipelines, fragments, epilogue views), then one small helper per step of the
schedule (``load_k_block``, ``mma_begin_tile``, ``mma_k_block``, ``mma_wait``,
``epilogue_store``, ``epilogue_drain``), all reading a ``GemmConfig`` (``_gemm_config.py``).
See ``gemm.py``.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe
import cutlass.utils.hopper_helpers as sm90
from _gemm_config import EPILOGUE_BARRIER_ID, WARPGROUP, WGMMA_M, GemmConfig
from cutlass.base_dsl.ast_helpers import const_expr, range_constexpr
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.cutlass_dsl import Constexpr, not_
from cutlass.tensor_utils import LayoutEnum

from task_scheduling.tiles import PersistentTiles, TileRaster

# ---------------------------------------------------------------------------------------------
# trace-time construction helpers (no code emitted by themselves)
# ---------------------------------------------------------------------------------------------


def make_tiled_mma(cfg: GemmConfig) -> Any:
    """WGMMA ``64 x BN x 16`` (16-bit) or ``64 x BN x 32`` (e4m3) atoms, one per consumer
    warpgroup along M (``64 x BN / 2`` for ``BN = 320``: a warpgroup issues two side by side,
    ``GemmConfig.mma_n``).

    A and B are read from SMEM K-major or MN-major (``cfg.layout``; MN-major WGMMA operands
    exist for 16-bit types only).
    """
    return sm90.make_trivial_tiled_mma(
        cfg.element,
        cfg.element,
        cfg.a_layout.sm90_mma_major_mode(),
        cfg.b_layout.sm90_mma_major_mode(),
        cutlass.Float32,
        (cfg.consumer_wgs, 1, 1),
        tiler_mn=(WGMMA_M, cfg.mma_n),
    )


def make_smem_layouts(cfg: GemmConfig) -> tuple[Any, Any, Any]:
    """Swizzled, staged SMEM layouts of the A ring, the B ring and the epilogue buffers."""
    bm, bn = cfg.tile_mn
    tiler = (bm, bn, cfg.tile_k)
    a = sm90.make_smem_layout_a(cfg.a_layout, tiler, cfg.element, cfg.ab_stages)
    b = sm90.make_smem_layout_b(cfg.b_layout, tiler, cfg.element, cfg.ab_stages)
    row = LayoutEnum.ROW_MAJOR  # N-major C
    c = sm90.make_smem_layout_epi(cfg.out_element, row, cfg.epi_tile, cfg.epi_stages)
    return a, b, c


def stage_layout(layout: Any) -> Any:
    """Stage 0 of a staged SMEM layout ``(rows, k, stages)``, as a TMA box's SMEM layout.

    A swizzled layout is cut as its plain part and composed again: the CuTe DSL aborts the
    process slicing a composed layout whose stage stride is an odd number of swizzle atoms
    (a 152-row bf16 B stage, 19 atoms of 8 rows)."""
    if isinstance(layout, cute.ComposedLayout):
        return cute.make_composed_layout(
            layout.inner, 0, cute.slice_(layout.outer, (None, None, 0))
        )
    return cute.slice_(layout, (None, None, 0))


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
        load_op(cn), a, stage_layout(a_layout), (bm, cfg.tile_k), num_multicast=cn
    )
    atom_b, t_b = cpasync.make_tiled_tma_atom(
        load_op(cm), b, stage_layout(b_layout), (bn, cfg.tile_k), num_multicast=cm
    )
    atom_c, t_c = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileS2GOp(), c, stage_layout(c_layout), cfg.epi_tile
    )
    return atom_a, t_a, atom_b, t_b, atom_c, t_c


def make_scheduler_params(cfg: GemmConfig, m: Any, n: Any, k_blocks: Any = None) -> Any:
    """Static persistent scheduler over the ``ceil(M/BM) x ceil(N/BN) x split_k`` work items
    (with a tail split: the tiles, the last round's ``tail_split`` items each; with stream-K,
    the last round's pieces of its ``k_blocks``-block tiles, two per cluster)."""
    # Split-K: the K chunk of a work item is its L coordinate (1 without a split).
    tiles = (cute.ceil_div(m, cfg.tile_mn[0]), cute.ceil_div(n, cfg.tile_mn[1]), cfg.split_k)
    along_m = cfg.raster == "m"
    # A tail's rounds are those of the launch's grid: max_active_clusters clusters.
    tail: dict[str, Any] = {}
    if cfg.tail:
        tail = {"tail_split": cfg.tail_split, "workers": cfg.max_active_clusters}
    elif cfg.stream_k:
        tail = {"stream_k": True, "workers": cfg.max_active_clusters, "k_blocks": k_blocks}
    return TileRaster(tiles, (*cfg.cluster_mn, 1), cfg.swizzle, raster_along_m=along_m, **tail)


def chunk_blocks(cfg: GemmConfig, t_a: Any) -> Any:
    """K blocks of a work item: ``ceil(K / BK)``, or with split-K its chunk's share
    ``ceil(ceil(K / BK) / split_k)`` (blocks past ``K`` arrive zero-filled)."""
    k_blocks = cute.ceil_div(cute.size(t_a, mode=[1]), cfg.tile_k)
    return cute.ceil_div(k_blocks, cfg.split_k) if cfg.split_k > 1 else k_blocks


def next_scheduler(cfg: GemmConfig, sched: Any, claimed: Any) -> Any:
    """The scheduler at the next tile: ``G`` further (static) or at the claimed index."""
    if const_expr(cfg.dynamic):
        return sched.at(claimed)
    return sched.advance()


def is_last_tile(sched: Any) -> Any:
    """Static schedules: whether ``sched``'s tile is the CTA's last (``sched`` stays put)."""
    return not_(sched.at(sched.linear + cutlass.Int32(sched.num_ctas)).tile().is_valid_tile)


def make_scheduler(params: Any) -> Any:
    """Each role builds its own scheduler copy (they all visit the same tiles)."""
    return PersistentTiles.create(params)


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
    """The A/B ring: 1 TMA-issuing thread -> the consumer threads, of every math warpgroup
    (``ring_threads``; one arrival per warp).

    With ``enable_multicast_signaling`` each consumer warp arrives once on the empty barrier of
    every CTA that multicasts into this stage, so a stage is refilled only when all readers in
    the cluster are done with it.
    """
    return cpipe.PipelineTmaAsync.create(
        num_stages=cfg.ab_stages,
        producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
        consumer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, cfg.ring_threads),
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
    g_a = cute.local_tile(t_a, (bm, cfg.tile_k), (None, None))  # (BM, BK, tiles_m, tiles_k)
    g_b = cute.local_tile(t_b, (bn, cfg.tile_k), (None, None))  # (BN, BK, tiles_n, tiles_k)
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
        acc: the accumulator in its MMA layout (its flat order is ``r2s``'s; a sub-tile is a
            contiguous run of it). ``r2s.retile(acc)`` would pad a 152-wide tile's 19 column
            groups a row block to 20, and its flat index would run into the padding.
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
    out = cfg.out_element
    store_atom = sm90.get_smem_store_op(row, out, cutlass.Float32)
    stmatrix = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), out)
    r2s = cute.make_tiled_copy_S(store_atom, cute.make_tiled_copy_C_atom(stmatrix, tiled_mma))
    thr = r2s.get_slice(consumer_tidx)
    frag_shape = cute.shape(thr.partition_S(s_c))[:3]
    frag = cute.make_rmem_tensor(frag_shape, out)
    if not cfg.fused_epilogue:
        return EpilogueViews(r2s, acc, frag, thr.partition_D(s_c))
    thr_mma = tiled_mma.get_slice(consumer_tidx)
    return EpilogueViews(r2s, acc, frag, thr.partition_D(s_c), thr_mma, acc)


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
def mma_begin_tile(
    tiled_mma: Any, acc: Any, total: Any = None, zero: Constexpr[bool] = True
) -> None:
    """Consumer: zero the accumulator and fence it for the first WGMMA of a tile.

    With two-level accumulation the fp32 ``total`` is zeroed instead: block 0 starts a group,
    whose first WGMMA overwrites ``acc``; ``zero=False``: a deferred store reads it first,
    and the tile's first promotion assigns it (``GemmConfig.defer_store``).
    """
    if const_expr(total is None):
        acc.fill(0.0)
    elif const_expr(zero):
        total.fill(0.0)
    tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
    # Registers written by ordinary instructions must be fenced before a WGMMA reads them.
    warpgroup.fence()


@cute.jit
def mma_k_block(
    tiled_mma: Any,
    acc: Any,
    t_ra: Any,
    t_rb: Any,
    stage: Any,
    k: Any = None,
    every: Constexpr[int] = 0,
    fresh_mma: Any = None,
    shift: Any = None,
) -> None:
    """Consumer: issue the WGMMAs of one K block from ``stage`` (4 x k16 or 4 x k32); commit.

    With ``every`` (two-level accumulation; ``k`` the block's index in the tile) the first
    WGMMA of every block is issued with ``fresh_mma``, a copy of the tiled MMA whose
    accumulate flag is set to ``k % every != 0`` first: a group's first block overwrites
    ``acc``. A runtime predicate, not a branch between two WGMMAs (which breaks ptxas's WGMMA
    chain in every block). ``shift`` (``_gemm_promote.group_shift``): groups also start where
    ``(k + shift) % every == 0``.
    """
    for kk in range_constexpr(cute.size(t_ra, mode=[2])):
        a, b = t_ra[(None, None, kk, stage)], t_rb[(None, None, kk, stage)]
        if const_expr(every == 0 or kk > 0):
            cute.gemm(tiled_mma, acc, a, b, acc)
        else:
            if const_expr(shift is not None):
                fresh_mma.set(warpgroup.Field.ACCUMULATE, ((k + shift) % every != 0) & (k != 0))
            elif const_expr(every > 1):
                fresh_mma.set(warpgroup.Field.ACCUMULATE, k % every != 0)
            cute.gemm(fresh_mma, acc, a, b, acc)
    warpgroup.commit_group()


@cute.jit
def mma_wait(outstanding: Constexpr[int]) -> None:
    """Consumer: wait until at most ``outstanding`` WGMMA groups of this warpgroup run."""
    warpgroup.wait_group(outstanding)


# The fused epilogue walks the accumulator in static loops of at most VALUE_CHUNK values: the
# same unrolled code as one loop over all of them (``cutlass.range(..., unroll_full=True)``
# costs more address arithmetic), and under the DSL's 64-iteration "slow to compile" warning.
VALUE_CHUNK = 32


def value_chunks(n: int) -> list[tuple[int, int]]:
    """``[0, n)`` as static ``(start, stop)`` loop bounds, at most ``VALUE_CHUNK`` apart."""
    return [(lo, min(lo + VALUE_CHUNK, n)) for lo in range(0, n, VALUE_CHUNK)]
