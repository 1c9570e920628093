"""The Hopper GEMM's split-K step (``GemmConfig.split_k``), for the hand-written twin.

A work item ``(m, n, chunk)`` holds the partial sum of tile ``(m, n)`` over its chunk of K
blocks. ``split_reduce`` writes it to a global fp32 workspace, counts the item at its tile, and
in the tile's last item sums every chunk's partial in chunk order. The TS kernel's side is
``ts_runtime.blocks.WgmmaAccumulator(split=SplitK(...))``. See ``docs/gemm.rst``.

The tail split (``GemmConfig.tail_split``) cuts only the tiles of the last, ragged round: the
scheduler's L coordinate ``l`` of an item is 0 for a whole tile and ``s * (1 + j) + c`` for
chunk ``c`` of tail tile ``j`` (``ts_codegen.tiles_raster.tail_split_item``). ``item_blocks``
(an item's K loop, shared with the TS kernel), ``tail_reduce`` (the twin's hand-over) and the
host's sizes (``tail_tiles``, ``tail_workspace_elements``) are here.
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
from _gemm_config import GemmConfig
from _gemm_steps import value_chunks
from cutlass.base_dsl.ast_helpers import const_expr, range_constexpr
from cutlass.cutlass_dsl import Constexpr

from task_scheduling.tiles import raster_shape, tail_split_shape


@cute.jit
def count_item(counters: Any, tile: Any, expected: Any, flag: Any, bar: Any, tidx: Any) -> Any:
    """Fence this thread's partial, meet at ``bar``; thread 0 adds one to ``counters[tile]``
    and publishes in ``flag`` whether it was the ``expected``-th (and then zeroes it). True
    for all threads of that item."""
    cute.arch.fence_acq_rel_gpu()  # the partial is visible before the count says so
    bar.arrive_and_wait()
    if tidx == 0:
        ctr = counters.iterator + tile
        seen = cute.arch.atomic_add(ctr, cutlass.Int32(1), sem="acq_rel", scope="gpu")
        done = cutlass.Int32(seen) == expected - 1
        flag[0] = cutlass.Int32(done)
        if done:
            cute.arch.atomic_exch(ctr, cutlass.Int32(0), sem="relaxed", scope="gpu")
    bar.arrive_and_wait()
    return flag[0] != 0


@cute.jit
def split_reduce(
    acc: Any,
    workspace: Any,
    counters: Any,
    flag: Any,
    bar: Any,
    tile: Any,
    chunk: Any,
    chunks: Constexpr[int],
    tidx: Any,
    threads: Constexpr[int],
    in_grid: Any,
) -> Any:
    """Consumers: hand this item's partial tile over; True in the tile's last item.

    Each thread stores its accumulator values to ``workspace[tile][chunk][value][thread]``
    (a warp's stores contiguous), fences them for the GPU, and meets the others at ``bar``;
    thread 0 adds the item to ``counters[tile]`` and publishes in ``flag`` (SMEM) whether it
    was the ``chunks``-th (then it also zeroes the counter for the next launch). In that last
    item every thread reads the ``chunks`` partials back in chunk order and sums them into
    ``acc``: the order does not depend on which item comes last. A tile past the problem's tile
    grid (``in_grid`` False: the scheduler's swizzle padding) has no slot: it does nothing.
    """
    n = cute.size(acc)
    per_chunk = n * threads
    last = cutlass.Boolean(False)
    if in_grid:
        base = (tile * chunks + chunk) * per_chunk + tidx
        for lo, hi in value_chunks(n):
            for i in range_constexpr(lo, hi):
                workspace[base + i * threads] = acc[i]
        last = count_item(counters, tile, chunks, flag, bar, tidx)
    if last:
        cute.arch.fence_acq_rel_gpu()  # see the other items' partials
        first = tile * chunks * per_chunk + tidx
        for lo, hi in value_chunks(n):
            for i in range_constexpr(lo, hi):
                acc[i] = workspace[first + i * threads]
        for c in range_constexpr(1, chunks):
            for lo, hi in value_chunks(n):
                for i in range_constexpr(lo, hi):
                    acc[i] = acc[i] + workspace[first + c * per_chunk + i * threads]
    return last


# -- tail split --------------------------------------------------------------------------------
def tail_chunk_blocks(cfg: GemmConfig, k_blocks: Any) -> Any:
    """K blocks of a tail chunk: ``ceil(k_blocks / tail_split)`` (as split-K's chunks)."""
    return cute.ceil_div(k_blocks, cfg.tail_split)


def item_blocks(l_coord: Any, chunks: int, k_blocks: Any, chunk_blocks: Any) -> Any:
    """The K loop of the work item with L coordinate ``l_coord``: a whole tile's ``k_blocks``
    or a tail chunk's ``chunk_blocks`` (a select: the loop bound is one value either way)."""
    whole = l_coord < chunks
    return cutlass.Int32(cutlass.select_(whole, k_blocks, chunk_blocks))  # type: ignore[attr-defined]


@cute.jit
def tail_reduce(
    acc: Any,
    workspace: Any,
    counters: Any,
    flag: Any,
    bar: Any,
    l_coord: Any,
    chunks: Constexpr[int],
    tidx: Any,
    threads: Constexpr[int],
    in_grid: Any,
    ranks: Constexpr[int],
    rank: Any,
) -> Any:
    """``split_reduce`` for a tail chunk (slot and counter: CTA ``rank`` of the ``ranks`` in
    its tail cluster tile); True for a whole tile, which holds its sum already."""
    last = cutlass.Boolean(True)
    if l_coord >= chunks:
        tile = l_coord // chunks - 1
        if const_expr(ranks > 1):  # one slot per CTA of the cluster
            tile = tile * ranks + rank
        chunk = l_coord % chunks
        last = split_reduce(
            acc, workspace, counters, flag, bar, tile, chunk, chunks, tidx, threads, in_grid
        )
    return last


# -- stream-K tail -------------------------------------------------------------------------------
def stream_blocks(raster: Any, l_coord: Any, k_blocks: Any) -> Any:
    """The K loop of the item with L coordinate ``l_coord`` in a stream-K raster: a whole
    tile's ``k_blocks`` or its piece's (``TileRaster.piece``)."""
    piece = raster.piece(l_coord)
    return cutlass.Int32(cutlass.select_(l_coord > 0, piece.blocks, k_blocks))  # type: ignore[attr-defined]


def stream_first_block(raster: Any, l_coord: Any) -> Any:
    """The first K block of that item (0 for a whole tile)."""
    piece = raster.piece(l_coord)
    return cutlass.Int32(cutlass.select_(l_coord > 0, piece.first_block, 0))  # type: ignore[attr-defined]


def slot_view(workspace: Any, offset: Any, lo: int, count: int, threads: int) -> Any:
    """Values ``lo .. lo + count`` of a thread in a stream-K slot: value ``v`` at ``offset +
    v mod 4 + (v // 4) 4 threads`` (``offset`` includes ``4 tidx``), 16-byte groups."""
    start = cute.assume(offset + (lo // 4) * 4 * threads, divby=4)
    return cute.make_tensor(
        workspace.iterator + start, cute.make_layout((4, count // 4), stride=(1, 4 * threads))
    )


@cute.jit
def stream_reduce(
    acc: Any,
    workspace: Any,
    counters: Any,
    flag: Any,
    bar: Any,
    l_coord: Any,
    piece: Any,
    tidx: Any,
    threads: Constexpr[int],
    in_grid: Any,
    ranks: Constexpr[int],
    rank: Any,
) -> Any:
    """Consumers, stream-K: hand a piece of a tail tile over; True in a whole tile, a tile of
    one piece, or the tile's last piece to arrive, which then holds the sum of its pieces in
    worker order. Piece ``(w, j)`` of CTA ``rank`` goes to slot ``(w + j) * ranks + rank`` in
    16-byte stores, counted at ``j * ranks + rank``; the last reads back only the others'."""
    last = cutlass.Boolean(True)
    pieces = piece.last_worker - piece.first_worker + 1
    if (l_coord > 0) & (pieces > 1):
        n = cute.size(acc)
        per_slot = n * threads
        stride = per_slot * ranks  # one worker's slot to the next's
        ctr_idx = piece.tile * ranks + rank
        first = ((piece.first_worker + piece.tile) * ranks + rank) * per_slot + tidx * 4
        mine = first + (piece.worker - piece.first_worker) * stride
        flat = cute.make_tensor(acc.iterator, cute.make_layout((4, n // 4), stride=(1, 4)))
        last = cutlass.Boolean(False)
        if in_grid:
            cute.autovec_copy(flat, slot_view(workspace, mine, 0, n, threads))
            last = count_item(counters, ctr_idx, pieces, flag, bar, tidx)
        if last:
            cute.arch.fence_acq_rel_gpu()  # see the other pieces' partials
            me = piece.worker - piece.first_worker
            for lo, hi in value_chunks(n):  # worker order from 0.0, this CTA's piece in place
                total = cute.make_rmem_tensor((4, (hi - lo) // 4), cutlass.Float32)
                total.fill(0.0)
                sum_slots(total, workspace, first, stride, 0, me, lo, threads)
                for i in range_constexpr(hi - lo):
                    total[i] = total[i] + acc[lo + i]
                sum_slots(total, workspace, first, stride, me + 1, pieces, lo, threads)
                for i in range_constexpr(hi - lo):
                    acc[lo + i] = total[i]
    return last


@cute.jit
def sum_slots(
    total: Any,
    workspace: Any,
    first: Any,
    stride: Any,
    begin: Any,
    end: Any,
    lo: Constexpr[int],
    threads: Constexpr[int],
) -> None:
    """``total += `` values ``lo ..`` of the pieces ``begin .. end - 1`` (slots ``first + c
    stride``), one after another."""
    count = cute.size(total)
    for c in cutlass.range(begin, end, 1, unroll=1):  # type: ignore[attr-defined]
        tmp = cute.make_rmem_tensor(total.layout, cutlass.Float32)
        cute.autovec_copy(slot_view(workspace, first + c * stride, lo, count, threads), tmp)
        for i in range_constexpr(count):
            total[i] = total[i] + tmp[i]


def tail_tiles(cfg: GemmConfig, m: int, n: int) -> int:
    """The CTA tiles of the last, ragged round of an ``M x N`` problem (0 without a tail
    split or stream-K): ``T mod P`` for the scheduler's ``T`` cluster tile indices (swizzle
    padding included, none with a fitted swizzle) on ``P = max_active_clusters`` clusters, as
    ``make_scheduler_params`` deals them, times the CTAs of a cluster (one counter each)."""
    if not (cfg.tail or cfg.stream_k):
        return 0
    grid = (-(-m // cfg.tile_mn[0]), -(-n // cfg.tile_mn[1]), 1)
    tiles = raster_shape(grid, cfg.cluster_mn, cfg.swizzle, cfg.raster == "m").num_tiles()
    first, _ = tail_split_shape(tiles, cfg.max_active_clusters, max(cfg.tail_split, 1))
    return int(tiles - first) * cfg.cluster_size


def tail_workspace_elements(cfg: GemmConfig, m: int, n: int) -> int:
    """fp32 elements of the tail's partial tiles: ``r x tail_split x BM x BN`` (CTA tiles
    ``r``); stream-K's ``(r + P x CTAs a cluster) x BM x BN`` (slot ``w + j`` of each CTA
    rank: ``P + r / CTAs`` per rank), none without a tail."""
    tail = tail_tiles(cfg, m, n)
    tile = cfg.tile_mn[0] * cfg.tile_mn[1]
    if cfg.stream_k:
        return (tail + cfg.max_active_clusters * cfg.cluster_size) * tile if tail else 0
    return tail * cfg.tail_split * tile
