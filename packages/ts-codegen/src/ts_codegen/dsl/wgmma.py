"""Hopper GEMM building blocks of ``ts_runtime.blocks``, the DSL side.

* the operand ring (``WgmmaRing``): TMA views of the ``A`` / ``B`` stages and their multicast
  masks within a thread-block cluster, the TMA loads of one K block;
* the accumulator (``WgmmaAccumulator``): WGMMA descriptors over the operand stages, the fp32
  register tile, one K block of WGMMAs; two-level accumulation (``promote``: a second fp32
  tile summing groups of K blocks) and split-K's hand-over (``split_reduce``: partial tiles
  through a global workspace, summed in chunk order by a tile's last work item);
* the epilogue (``TmaEpilogue``): the accumulator converted sub-tile by sub-tile into SMEM
  buffers (``stmatrix``) that one warp TMA-stores.

Shapes: ``A`` is ``M x K``, ``B`` is ``N x K`` (each K- or MN-major, as its TMA tensor and
SMEM layout say), ``C`` is ``M x N``. A stage of the ring holds an ``A`` block ``(BM, BK)``
and a ``B`` block ``(BN, BK)``; an SMEM ring tensor is ``(rows, BK, stages)``, the epilogue's
``(BM, EN, buffers)``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe
import cutlass.utils.hopper_helpers as sm90
from cutlass.base_dsl.ast_helpers import const_expr, range_constexpr
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.cutlass_dsl import Constexpr
from cutlass.tensor_utils import LayoutEnum

__all__ = [
    "EpilogueViews",
    "Int32",
    "OperandViews",
    "accumulator_setup",
    "add_into",
    "begin_tile",
    "copy_into",
    "epilogue_drain",
    "epilogue_setup",
    "epilogue_store",
    "epilogue_views",
    "load_operands",
    "make_accumulator",
    "mma_fragments",
    "mma_k_block",
    "mma_wait",
    "operand_views",
    "prefetch_descriptors",
    "promote",
    "promote_rest",
    "split_reduce",
    "stagger_shift",
    "task_barrier",
]

WARPGROUP = 128


@cute.jit
def prefetch_descriptors(warp: Constexpr[int], atoms: Constexpr[tuple[Any, ...]]) -> None:
    """Warp ``warp`` prefetches the TMA descriptors of ``atoms``."""
    if cute.arch.make_warp_uniform(cute.arch.warp_idx()) == warp:
        for i in range_constexpr(len(atoms)):
            cpasync.prefetch_descriptor(atoms[i])


# -- the operand ring ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class OperandViews:
    """One producer's TMA views of a ring and its multicast masks.

    ``a_g[(None, m, k)]`` is K block ``k`` of ``A`` tile row ``m``, ``a_s[(None, stage)]`` a
    stage (``B`` alike); a mask of 0 means a plain load.
    """

    a_g: Any
    a_s: Any
    b_g: Any
    b_s: Any
    mask_a: Any
    mask_b: Any


def operand_views(
    a: Any,
    b: Any,
    tile_mnk: tuple[int, int, int],
    cluster_mn: tuple[int, int],
) -> OperandViews:
    """TMA views of the ``A`` / ``B`` stages for this CTA of its cluster.

    ``a`` and ``b`` have the ``atom``, the TMA tensor ``gmem`` and the SMEM stages ``smem``
    (``ts_runtime.blocks.TmaSource``). With a cluster ``(CM, CN)``, ``A`` is multicast to the
    ``CN`` CTAs of this CTA's cluster row and ``B`` to the ``CM`` CTAs of its column: each CTA
    loads its slice of the tile, the multicast brings the others.
    """
    bm, bn, bk = tile_mnk
    cm, cn = cluster_mn
    rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    cta_layout = cute.make_layout((cm, cn, 1))
    coord = cta_layout.get_flat_coord(rank)
    atom_a, t_a, s_a = a.atom, a.gmem, a.smem
    atom_b, t_b, s_b = b.atom, b.gmem, b.smem
    g_a = cute.local_tile(t_a, (bm, bk), (None, None))  # (BM, BK, tiles_m, tiles_k)
    g_b = cute.local_tile(t_b, (bn, bk), (None, None))  # (BN, BK, tiles_n, tiles_k)
    a_s, a_g = cpasync.tma_partition(
        atom_a,
        coord[1],
        cute.make_layout(cn),
        cute.group_modes(s_a, 0, 2),
        cute.group_modes(g_a, 0, 2),
    )
    b_s, b_g = cpasync.tma_partition(
        atom_b,
        coord[0],
        cute.make_layout(cm),
        cute.group_modes(s_b, 0, 2),
        cute.group_modes(g_b, 0, 2),
    )
    mask_a = cute.make_layout_image_mask(cta_layout, coord, mode=1) if cn > 1 else 0
    mask_b = cute.make_layout_image_mask(cta_layout, coord, mode=0) if cm > 1 else 0
    return OperandViews(a_g, a_s, b_g, b_s, mask_a, mask_b)


@cute.jit
def _load(atom: Any, src: Any, dst: Any, barrier: Any, mask: Any) -> None:
    if const_expr(isinstance(mask, int)):
        cute.copy(atom, src, dst, tma_bar_ptr=barrier)
    else:
        cute.copy(atom, src, dst, tma_bar_ptr=barrier, mcast_mask=mask)


def load_operands(
    atoms: tuple[Any, Any], views: OperandViews, m: Any, n: Any, k: Any, stage: Any, barrier: Any
) -> None:
    """TMA-load K block ``k`` of ``A`` tile row ``m`` and ``B`` tile row ``n`` into ``stage``.

    Both loads complete on ``barrier`` (the stage's full barrier); rows and columns outside the
    tensors arrive zero-filled.
    """
    v = views
    _load(atoms[0], v.a_g[(None, m, k)], v.a_s[(None, stage)], barrier, v.mask_a)
    _load(atoms[1], v.b_g[(None, n, k)], v.b_s[(None, stage)], barrier, v.mask_b)


# -- the accumulator ----------------------------------------------------------------------------
def mma_fragments(tiled_mma: Any, s_a: Any, s_b: Any, wg: Any) -> tuple[Any, Any]:
    """WGMMA descriptors of warpgroup ``wg`` of the task over the stages.

    Returns ``(frag_a, frag_b)``, indexed ``[(None, None, kk, stage)]``.
    """
    thr_mma = tiled_mma.get_slice(wg * WARPGROUP)
    return (
        tiled_mma.make_fragment_A(thr_mma.partition_A(s_a)),
        tiled_mma.make_fragment_B(thr_mma.partition_B(s_b)),
    )


def make_accumulator(tiled_mma: Any, tile_mn: tuple[int, int], wg: Any) -> Any:
    """The fp32 register tile of one thread of warpgroup ``wg`` of the task."""
    shape = tiled_mma.get_slice(wg * WARPGROUP).partition_shape_C(tile_mn)
    return cute.make_rmem_tensor(shape, cutlass.Float32)


def accumulator_setup(
    tiled_mma: Any, tile_mn: tuple[int, int], s_a: Any, s_b: Any, first_wg: int
) -> tuple[Any, Any, Any, Any, Any]:
    """The accumulator of this thread of a task that starts at warpgroup ``first_wg``.

    Returns ``(frag_a, frag_b, regs, tidx, wg)``: the WGMMA descriptors, the register tile, the
    thread's index in the task and its warpgroup's (warp-uniform).
    """
    tidx, _, _ = cute.arch.thread_idx()
    wg = cute.arch.make_warp_uniform(tidx // WARPGROUP) - first_wg
    frag_a, frag_b = mma_fragments(tiled_mma, s_a, s_b, wg)
    regs = make_accumulator(tiled_mma, tile_mn, wg)
    return frag_a, frag_b, regs, tidx - WARPGROUP * first_wg, wg


@cute.jit
def begin_tile(tiled_mma: Any, acc: Any, total: Any = None, zero: Constexpr[bool] = True) -> None:
    """Zero the accumulator and fence its registers for the first WGMMA of a tile.

    With two-level accumulation (``total``, the fp32 sum of the promoted groups) the total is
    zeroed instead: the tile's first K block starts a group, whose WGMMA overwrites ``acc``;
    ``zero=False`` leaves it to a deferred store, which reads it first (the tile's first
    promotion then assigns it: ``promote``'s ``first``).
    """
    if const_expr(total is None):
        acc.fill(0.0)
    elif const_expr(zero):
        total.fill(0.0)
    tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
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
    """Issue the WGMMAs of one K block of ``stage`` (one per ``k`` step of the atom); commit.

    With ``every`` (two-level accumulation, K block ``k`` of the tile), the first WGMMA of a
    block that starts a group of ``every`` blocks overwrites the accumulator instead of adding
    to it: it is issued with ``fresh_mma``, whose accumulate flag is set right before to
    ``k % every != 0`` (WGMMA's scale-d predicate, a runtime operand). No branch: with one
    WGMMA on each side of a branch, ptxas ended the WGMMA chain after the first and injected
    a ``warpgroup.arrive`` before the second (C7519) in every K block, which cost 128 x 192
    FP8 tiles 15 % on the H200. ``promote`` has moved the previous group into the fp32 total,
    so no register needs zeroing. ``shift`` (staggered groups, :func:`stagger_shift`): this
    warpgroup's groups start at blocks ``0`` and ``k`` with ``(k + shift) % every == 0``.
    """
    for kk in range_constexpr(cute.size(t_ra, mode=[2])):
        a, b = t_ra[(None, None, kk, stage)], t_rb[(None, None, kk, stage)]
        if const_expr(every == 0 or kk > 0):
            cute.gemm(tiled_mma, acc, a, b, acc)
        else:
            if const_expr(every > 1 and shift is None):  # every == 1: the flag stays off
                fresh_mma.set(warpgroup.Field.ACCUMULATE, k % every != 0)
            if const_expr(shift is not None):
                fresh_mma.set(warpgroup.Field.ACCUMULATE, ((k + shift) % every != 0) & (k != 0))
            cute.gemm(fresh_mma, acc, a, b, acc)
    warpgroup.commit_group()


def stagger_shift(wg: Any, every: int) -> Any:
    """The K-block shift of the groups of the task's warpgroup ``wg`` (``accumulator_setup``).

    Warpgroup ``w`` shifts its groups by ``w * every / 2`` K blocks, so two warpgroups on one
    tile end their groups in turns: while one waits for its WGMMAs and adds them up, the
    other's keep the tensor cores busy (in step, both drain at once and the tensor cores idle).
    """
    return wg * (every // 2)


@cute.jit
def promote(
    total: Any,
    acc: Any,
    k: Any = None,
    every: Constexpr[int] = 0,
    shift: Any = None,
    first: Any = None,
) -> None:
    """Two-level accumulation: ``total += acc`` in fp32 once the WGMMAs writing ``acc`` retired.

    It waits for them itself (``wgmma.wait_group 0``), so it can never read a register a WGMMA
    still writes; the fence orders these reads of ``acc`` before the next WGMMA overwrites it.
    With ``shift`` (staggered groups, called every block) only where this warpgroup's group
    ends: K block ``k`` with ``(k + 1 + shift) % every == 0``. With ``first`` (a runtime
    condition: the tile's first group) ``total = acc`` there instead, for a total that no
    zeroing in the K loop may touch (a deferred store's).
    """
    if const_expr(shift is None):
        _promote_now(total, acc, first)
    else:
        if (k + 1 + shift) % every == 0:
            _promote_now(total, acc, first)


@cute.jit
def _promote_now(total: Any, acc: Any, first: Any = None) -> None:
    warpgroup.wait_group(0)
    if const_expr(first is None):
        add_into(total, acc)
    else:
        _assign_or_add(total, acc, first)
    warpgroup.fence()


@cute.jit
def _assign_or_add(total: Any, acc: Any, first: Any) -> None:
    """``total = acc`` where ``first``, else ``total += acc``.

    Two branches, not a select per value: a select would run on every call either way.
    """
    if first:
        copy_into(total, acc)
    else:
        add_into(total, acc)


# Static loops of at most this many values (the DSL warns that longer ones compile slowly).
_CHUNK = 32


@cute.jit
def copy_into(total: Any, acc: Any) -> None:
    """``total[i] = acc[i]`` for every register value, fully unrolled."""
    n = cute.size(acc)
    for lo in range_constexpr(0, n, _CHUNK):
        for i in range_constexpr(lo, min(lo + _CHUNK, n)):
            total[i] = acc[i]


@cute.jit
def add_into(total: Any, acc: Any) -> None:
    """``total[i] += acc[i]`` for every register value, fully unrolled."""
    n = cute.size(acc)
    for lo in range_constexpr(0, n, _CHUNK):
        for i in range_constexpr(lo, min(lo + _CHUNK, n)):
            total[i] = total[i] + acc[i]


@cute.jit
def promote_rest(
    total: Any,
    acc: Any,
    k_blocks: Any,
    every: Constexpr[int],
    shift: Any = None,
    assign: Constexpr[bool] = False,
) -> None:
    """After a tile's K loop, whose last block waited for every WGMMA: the last, short group.

    It is promoted when ``k_blocks`` is not a multiple of ``every`` (no group end promoted it;
    with ``shift``: ``k_blocks + shift``); nothing for ``K = 0``. No fence: the next tile's
    ``begin_tile`` fences the registers. ``assign`` (``promote``'s ``first``): a group that
    is the tile's only one (``k_blocks < every``) assigns the total.
    """
    if const_expr(every > 1 and shift is None and assign):
        if k_blocks % every != 0:
            _assign_or_add(total, acc, k_blocks < every)
    elif const_expr(every > 1 and shift is None):  # noqa: SIM102 (DSL: no dynamic `and`)
        if k_blocks % every != 0:
            add_into(total, acc)
    if const_expr(shift is not None):  # noqa: SIM102 (DSL: no `and` with a dynamic value)
        if ((k_blocks + shift) % every != 0) & (k_blocks > 0):
            add_into(total, acc)


@cute.jit
def mma_wait(outstanding: Constexpr[int]) -> None:
    """Wait until at most ``outstanding`` WGMMA groups of this warpgroup are in flight."""
    warpgroup.wait_group(outstanding)


def task_threads(tiled_mma: Any) -> int:
    """The threads of the task that issues ``tiled_mma``.

    128 per warpgroup of its atom layout, whatever tile it repeats over.
    """
    return int(cute.size(tiled_mma))


def task_barrier(tiled_mma: Any, barrier_id: int) -> Any:
    """A named barrier over the threads of the task that issues ``tiled_mma``."""
    return cpipe.NamedBarrier(barrier_id=barrier_id, num_threads=task_threads(tiled_mma))


# -- split-K: partial tiles through a global workspace -------------------------------------------
@cute.jit
def _count_in(counters: Any, tile: Any, expected: Any, flag: Any, barrier: Any, tidx: Any) -> Any:
    """After each thread wrote its share of a partial tile: count the item in.

    Each thread fences its writes for the GPU (``fence.acq_rel.gpu``) and meets the others at
    ``barrier``; thread 0 adds the item to ``counters[tile]`` (``atom.add.acq_rel.gpu``) and
    tells the task through the SMEM ``flag``, after a second barrier, whether it was the
    ``expected``-th (then it also zeroes the counter for the next launch). Returns that, in
    every thread.
    """
    cute.arch.fence_acq_rel_gpu()  # the partial is visible before the count says so
    barrier.arrive_and_wait()
    if tidx == 0:
        ctr = counters.iterator + tile
        seen = cute.arch.atomic_add(ctr, Int32(1), sem="acq_rel", scope="gpu")
        done = Int32(seen) == expected - 1
        flag[0] = Int32(done)
        if done:  # every item of the tile has counted: reset for the next launch
            cute.arch.atomic_exch(ctr, Int32(0), sem="relaxed", scope="gpu")
    barrier.arrive_and_wait()
    return flag[0] != 0


@cute.jit
def split_reduce(
    acc: Any,
    workspace: Any,
    counters: Any,
    flag: Any,
    barrier: Any,
    tile: Any,
    chunk: Any,
    chunks: Constexpr[int],
    tidx: Any,
    threads: Constexpr[int],
    in_grid: Any,
) -> Any:
    """Split-K: write this item's partial tile; the tile's last item sums all partials.

    Every one of the ``threads`` threads of the task writes its ``n`` accumulator values to the
    ``workspace`` (fp32, ``[tile][chunk][value][thread]``: a warp's stores are contiguous), fences
    them (``fence.acq_rel.gpu``) and meets the others at ``barrier``; thread 0 counts the item
    in ``counters[tile]`` (``atom.add.acq_rel.gpu``) and tells the task through the SMEM ``flag``
    whether it was the tile's ``chunks``-th, after a second barrier. The last item (and only
    it; it also zeroes the counter for the next launch) reads the partials back in chunk order
    ``0 .. chunks - 1`` into ``acc``: the same sum, in the same order, whichever item is last.

    ``in_grid`` is False (for the whole task) on a tile past the problem's tile grid: the
    persistent scheduler's swizzle rounds the grid up to whole swizzle groups, and such a tile,
    harmless elsewhere (TMA clips its loads and stores), has no counter or workspace slot. It
    writes and counts nothing and is not the last.

    Returns:
        Whether this item holds the tile's sum (then it writes the tile).
    """
    n = cute.size(acc)
    per_chunk = n * threads
    last = cutlass.Boolean(False)
    if in_grid:
        base = (tile * chunks + chunk) * per_chunk + tidx
        for lo in range_constexpr(0, n, _CHUNK):
            for i in range_constexpr(lo, min(lo + _CHUNK, n)):
                workspace[base + i * threads] = acc[i]
        last = _count_in(counters, tile, chunks, flag, barrier, tidx)
    if last:
        cute.arch.fence_acq_rel_gpu()  # see the other items' partials
        first = tile * chunks * per_chunk + tidx
        for lo in range_constexpr(0, n, _CHUNK):
            for i in range_constexpr(lo, min(lo + _CHUNK, n)):
                acc[i] = workspace[first + i * threads]
        for c in range_constexpr(1, chunks):
            for lo in range_constexpr(0, n, _CHUNK):
                for i in range_constexpr(lo, min(lo + _CHUNK, n)):
                    acc[i] = acc[i] + workspace[first + c * per_chunk + i * threads]
    return last


def _slot_values(workspace: Any, offset: Any, first: int, count: int, threads: int) -> Any:
    """A thread's values ``first .. first + count`` of a stream-K workspace slot.

    Value ``v`` of the thread sits at ``offset + (v mod 4) + (v // 4) * 4 * threads`` (``offset``
    counts the slot and ``4 * tidx`` in): four consecutive values are 16 contiguous bytes, and a
    warp's 16-byte accesses are 512 contiguous bytes.
    """
    base = cute.assume(offset + (first // 4) * 4 * threads, divby=4)
    layout = cute.make_layout((4, count // 4), stride=(1, 4 * threads))
    return cute.make_tensor(workspace.iterator + base, layout)


@cute.jit
def stream_reduce(
    acc: Any,
    workspace: Any,
    counters: Any,
    flag: Any,
    barrier: Any,
    l_coord: Any,
    piece: Any,
    tidx: Any,
    threads: Constexpr[int],
    in_grid: Any,
    ranks: Constexpr[int] = 1,
    rank: Any = 0,
) -> Any:
    """Stream-K tail: hand a piece of a tail tile over; True where this item holds the sum.

    ``l_coord`` is the item's L coordinate (0: a whole tile, which holds its sum: True) and
    ``piece`` its :class:`ts_codegen.tiles_raster.StreamPiece`. A tile of one piece holds its
    sum too. Otherwise, as :func:`split_reduce`: the piece of worker ``w`` in tail tile ``j``
    goes to workspace slot ``(w + j) * ranks + rank`` (one per CTA tile of a cluster tile; no
    two pieces share ``w + j``) in 16-byte stores (:func:`_slot_values`), the tile counts its
    pieces at counter ``j * ranks + rank``, and the last to arrive sums the pieces of workers
    ``first_worker .. last_worker`` in that order (a fixed order, whichever piece comes last),
    its own from its registers and the others' from their slots.
    """
    last = cutlass.Boolean(True)
    pieces = piece.last_worker - piece.first_worker + 1
    if (l_coord > 0) & (pieces > 1):
        n = cute.size(acc)
        stride = n * threads * ranks  # between consecutive workers' slots
        tile = piece.tile * ranks + rank
        first = ((piece.first_worker + piece.tile) * ranks + rank) * (n * threads) + tidx * 4
        mine = first + (piece.worker - piece.first_worker) * stride
        regs = cute.make_tensor(acc.iterator, cute.make_layout((4, n // 4), stride=(1, 4)))
        last = cutlass.Boolean(False)
        if in_grid:
            cute.autovec_copy(regs, _slot_values(workspace, mine, 0, n, threads))
            last = _count_in(counters, tile, pieces, flag, barrier, tidx)
        if last:
            cute.arch.fence_acq_rel_gpu()  # see the other pieces' partials
            own = piece.worker - piece.first_worker
            for lo in range_constexpr(0, n, _CHUNK):  # a chunk of values at a time: registers
                # 0 + p_first + ... + p_own (registers) + ... + p_last: worker order, and no
                # branch writes registers (a conditional write puts the chunk on the stack)
                total = cute.make_rmem_tensor((4, min(_CHUNK, n - lo) // 4), cutlass.Float32)
                total.fill(0.0)
                _add_slots(total, workspace, first, stride, 0, own, lo, threads)
                for i in range_constexpr(cute.size(total)):
                    total[i] = total[i] + acc[lo + i]
                _add_slots(total, workspace, first, stride, own + 1, pieces, lo, threads)
                for i in range_constexpr(cute.size(total)):
                    acc[lo + i] = total[i]
    return last


@cute.jit
def _add_slots(
    total: Any,
    workspace: Any,
    first: Any,
    stride: Any,
    start: Any,
    stop: Any,
    lo: Constexpr[int],
    threads: Constexpr[int],
) -> None:
    """Add values ``lo ..`` of stream-K pieces ``start .. stop - 1`` to ``total``, in order.

    Piece ``c``'s partial sits in the workspace slot at ``first + c * stride``.
    """
    for c in cutlass.range(start, stop, 1, unroll=1):  # type: ignore[attr-defined]
        part = cute.make_rmem_tensor(total.layout, cutlass.Float32)
        src = _slot_values(workspace, first + c * stride, lo, cute.size(total), threads)
        cute.autovec_copy(src, part)
        for i in range_constexpr(cute.size(total)):
            total[i] = total[i] + part[i]


@cute.jit
def tail_reduce(
    acc: Any,
    workspace: Any,
    counters: Any,
    flag: Any,
    barrier: Any,
    l_coord: Any,
    chunks: Constexpr[int],
    tidx: Any,
    threads: Constexpr[int],
    in_grid: Any,
    ranks: Constexpr[int] = 1,
    rank: Any = 0,
) -> Any:
    """Tail split: :func:`split_reduce` for a chunk of a tail tile, nothing for a whole tile.

    ``l_coord`` is the work item's L coordinate (``ts_codegen.tiles_raster.tail_split_item``):
    0 for a whole tile, which holds its sum already (True), ``chunks * (1 + j) + c`` for chunk
    ``c`` of tail (cluster) tile ``j``. With ``ranks`` CTAs per cluster, the CTA whose tile
    is number ``rank`` of the cluster tile's hands over through workspace slot and counter
    ``j * ranks + rank``.
    """
    last = cutlass.Boolean(True)
    if l_coord >= chunks:
        tile = l_coord // chunks - 1
        if const_expr(ranks > 1):
            tile = tile * ranks + rank
        chunk = l_coord % chunks
        last = split_reduce(
            acc, workspace, counters, flag, barrier, tile, chunk, chunks, tidx, threads, in_grid
        )
    return last


# -- the epilogue ---------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class EpilogueViews:
    """One thread's epilogue views (built once, used every tile).

    Attributes:
        r2s: The register -> SMEM tiled copy (``stmatrix``).
        acc: The accumulator in its MMA layout, whose flat order is ``r2s``'s: row blocks (or
            the column halves of a two-WGMMA tile) one after the other, each thread's values of
            one by column, 4 per 8 columns; a sub-tile is a contiguous run of it. (Not
            ``r2s.retile(acc)``: that rounds a block of 19 column groups, a 152-wide tile's, up
            to 20, so its flat index runs past the block into padding.)
        frag: The registers of one converted sub-tile.
        smem: ``r2s``'s view of the buffers, ``[(None, None, None, buffer)]``.
        thr_mma: The thread's slice of the tiled MMA (for a fused epilogue, else None).
        acc_mma: The accumulator in its MMA layout (for a fused epilogue, else None).
    """

    r2s: Any
    acc: Any
    frag: Any
    smem: Any
    thr_mma: Any = None
    acc_mma: Any = None


def epilogue_views(tiled_mma: Any, acc: Any, smem: Any, tidx: Any, fused: bool) -> EpilogueViews:
    """Thread ``tidx`` of the task: ``stmatrix`` views of ``acc`` and the N-major buffers."""
    dtype = smem.element_type
    store_atom = sm90.get_smem_store_op(LayoutEnum.ROW_MAJOR, dtype, cutlass.Float32)
    stmatrix = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), dtype)
    r2s = cute.make_tiled_copy_S(store_atom, cute.make_tiled_copy_C_atom(stmatrix, tiled_mma))
    thr = r2s.get_slice(tidx)
    frag = cute.make_rmem_tensor(cute.shape(thr.partition_S(smem))[:3], dtype)
    if not fused:
        return EpilogueViews(r2s, acc, frag, thr.partition_D(smem))
    thr_mma = tiled_mma.get_slice(tidx)
    return EpilogueViews(r2s, acc, frag, thr.partition_D(smem), thr_mma, acc)


@cute.jit
def epilogue_store(
    views: EpilogueViews,
    atom: Any,
    smem: Any,
    gmem: Any,
    tile_mn: Constexpr[tuple[int, int]],
    sub_tile: Constexpr[tuple[int, int]],
    m: Any,
    n: Any,
    barrier: Any,
    is_store_warp: Any,
    fuse: Any,
    when: Any = True,
) -> None:
    """Write tile ``(m, n)`` of ``C`` from the accumulator, one ``sub_tile`` at a time.

    Sub-tile ``j`` (``sub_tile = (EM, EN)``: row block ``j // columns``, columns from
    ``(j % columns) * EN``, ``columns = ceil(BN / EN)``; ``EM < BM`` when one warpgroup holds
    several 64-row WGMMA blocks, whose values are runs of the accumulator one after the other)
    goes through buffer ``j % buffers`` (the buffers divide the sub-tiles, so the ring
    continues into the next tile): convert and ``stmatrix`` it into the buffer,
    ``fence.proxy.async``, one named barrier over the task's threads, and the store warp
    TMA-stores it and commits. Before the barrier the store warp waits until at most
    ``buffers - 2`` stores still read SMEM, so the next sub-tile's buffer is free after it.
    ``fuse(acc, thr_mma, m, n)`` first rewrites the accumulator (in its MMA layout).

    When ``EN`` does not divide ``BN`` (a fitted width such as 152 = 4 x 32 + 24), the last
    sub-tile of a row block ends at the tile's edge and overlaps the one before it: the
    overlapped columns are written twice with the same values (the fused step ran on the whole
    accumulator first, so no store depends on another). ``when`` (a runtime condition, or the
    default True): the tile is stored only where it holds (a deferred store's).
    """
    if when:
        if const_expr(fuse is not None):
            fuse(views.acc_mma, views.thr_mma, m, n)
        buffers = cute.size(smem, mode=[2])
        columns = -(-tile_mn[1] // sub_tile[1])
        g_tile = cute.local_tile(gmem, tile_mn, (m, n))
        s_bufs = cute.group_modes(smem, 0, 2)
        t_s, t_g = cpasync.tma_partition(
            atom, 0, cute.make_layout(1), s_bufs, cute.zipped_divide(g_tile, sub_tile)
        )
        edge = tile_mn[1] - sub_tile[1]  # the first column of a sub-tile ending at the edge
        t_edge = t_g
        if const_expr(edge % sub_tile[1] != 0):
            g_edge = cute.zipped_divide(cute.domain_offset((0, edge), g_tile), sub_tile)
            _, t_edge = cpasync.tma_partition(atom, 0, cute.make_layout(1), s_bufs, g_edge)
        n_vals = cute.size(views.frag)
        for j in range_constexpr(tile_mn[0] // sub_tile[0] * columns):
            buf = j % buffers
            row, col = j // columns, j % columns
            first = min(col * sub_tile[1], edge)  # the sub-tile's first column in the tile
            # Its first accumulator value: a thread holds n_vals / EN values per column of a row
            # block, ordered by column (4 per 8 columns), so any multiple of 8 starts a run.
            base = (row * tile_mn[1] + first) * n_vals // sub_tile[1]
            for v in range_constexpr(n_vals):
                views.frag[v] = views.acc[base + v].to(smem.element_type)
            cute.copy(views.r2s, views.frag, views.smem[(None, None, None, buf)])
            cute.arch.fence_proxy("async.shared", space="cta")
            if is_store_warp:
                cute.arch.cp_async_bulk_wait_group(buffers - 2, read=True)
            barrier.arrive_and_wait()
            if is_store_warp:
                # Bulk groups are per thread: the elected lane issues and commits; the warp's
                # wait_group above covers it.
                with cute.arch.elect_one():
                    if const_expr(first % sub_tile[1] == 0):
                        cute.copy(atom, t_s[(None, buf)], t_g[(None, (row, col))])
                    else:
                        cute.copy(atom, t_s[(None, buf)], t_edge[(None, (row, 0))])
                    cute.arch.cp_async_bulk_commit_group()


@cute.jit
def epilogue_drain(is_store_warp: Any) -> None:
    """The store warp waits until its TMA stores have read SMEM (before the CTA exits)."""
    if is_store_warp:
        cute.arch.cp_async_bulk_wait_group(0, read=True)


def epilogue_setup(
    tiled_mma: Any, acc: Any, smem: Any, tidx: Any, fused: bool, barrier_id: int, first_wg: int
) -> tuple[EpilogueViews, Any, Any]:
    """The epilogue of this thread of a task that starts at warpgroup ``first_wg``.

    Returns ``(views, barrier, is_store_warp)``: the thread's views, the task's named barrier
    (over its threads) and whether the thread's warp is the store warp (the task's first).
    """
    views = epilogue_views(tiled_mma, acc, smem, tidx, fused)
    barrier = cpipe.NamedBarrier(barrier_id=barrier_id, num_threads=cute.size(tiled_mma))
    is_store_warp = cute.arch.make_warp_uniform(cute.arch.warp_idx()) == first_wg * WARPGROUP // 32
    return views, barrier, is_store_warp


Int32: Any = cutlass.Int32
"""The DSL's 32-bit integer type."""
