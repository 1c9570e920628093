"""Reusable resources: what most kernels would otherwise write again by hand.

:class:`TmaRing` is a ring of SMEM tiles that a TMA load fills and that its consumers read as
an SMEM tile, or write out with a TMA store (tracked as an asynchronous read, so the verifier
proves no stage is refilled while the store still reads it). Its work methods take the tile
from the loop offset through ``coord``. The CuTe DSL calls are in ``ts_codegen.dsl.tma``.

:class:`GmemVector` is a global tensor read or written one element per loop offset, and
:func:`grid_stride` the domain of a grid-stride loop over it: an element-wise kernel's blocks.

The Hopper GEMM blocks (their CuTe DSL calls are in ``ts_codegen.dsl.wgmma``):

* :class:`WgmmaRing`: the TMA-loaded SMEM ring of ``A`` and ``B`` blocks (multicast within a
  cluster) that WGMMA warpgroups read asynchronously; the verifier proves that no stage goes
  back to the producer before a ``wgmma.wait_group`` retired its MMAs;
* :class:`WgmmaWaits`: the two ``wgmma.wait_group`` works of a resource whose MMAs read its
  stages (``WgmmaRing``'s; the base of a WGMMA ring of one's own, e.g. one ring per operand);
* :class:`WgmmaAccumulator`: the fp32 accumulator in the registers of a WGMMA task;
* :class:`TmaEpilogue`: the accumulator written out through a few SMEM buffers that one warp
  TMA-stores, with an optional fused elementwise step;
* :class:`TileTurns`: ping-pong turns (the CTA's tiles alternate between two tasks), and
  :class:`MathTurn`, the token one math task passes to the other (the order of their turns);
* :func:`tile_queue` (a persistent kernel's work queue, static or atomic dynamic) and
  :func:`prefetch_tma` (TMA descriptor prefetch at kernel start).

They take tile, cluster and buffer shapes, operand majors and dtypes from their arguments (the
SMEM tensors, TMA atoms and tiled MMA the kernel builds), not from one configuration. A task
that issues MMAs runs its accumulator's ``setup`` before the ring's ``mma``, and the epilogue's
``setup`` after it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ts_ir import CooperativeGroupSpec, PipelineSpec, PipelineType, WorkAttr
from ts_runtime.epilogue import TmaEpilogue
from ts_runtime.errors import RuntimeConfigError
from ts_runtime.pipeline_config import PipelineConfig
from ts_runtime.turns import MathTurn, TileTurns
from ts_runtime.work_queue import TileSchedulerConfig, WorkQueue
from ts_trace import MemoryResource, TaskLocalVariable, consumer_work, producer_work

__all__ = [
    "GmemVector",
    "MathTurn",
    "SplitK",
    "TileTurns",
    "TmaEpilogue",
    "TmaRing",
    "TmaSource",
    "WgmmaAccumulator",
    "WgmmaRing",
    "WgmmaWaits",
    "grid_stride",
    "prefetch_tma",
    "tile_queue",
]


def _identity(offset: Any) -> Any:
    return offset


@dataclasses.dataclass(kw_only=True)
class TmaRing(MemoryResource):
    """A ring of SMEM tiles filled by TMA loads.

    Args:
        atom: The TMA load atom.
        gmem: The source's TMA tensor (what ``make_tiled_tma_atom`` returns with the atom).
        box: The tile shape (Python ints): ``gmem`` is read tile by tile in boxes of it.
        smem: The stages, an SMEM tensor ``(box..., stages)``.
        coord: Loop offset → tile coordinate in ``gmem``'s tile modes (default: the offset).
        store_atom: The TMA store atom (for :meth:`store`).
        store_gmem: The destination's TMA tensor.
        store_warp: The warp that issues the TMA store (the first warp of the storing task).

    Work methods: ``load`` (producer: the TMA load of the offset's tile), ``tile`` (consumer:
    the waited stage as an SMEM tensor), ``store`` (consumer, asynchronous read: the TMA
    store of the waited stage) and ``store_wait`` (consumer: wait until stores have read).
    """

    atom: Any = None
    gmem: Any = None
    box: tuple[int, ...] = ()
    smem: Any = None
    coord: Callable[[Any], Any] = _identity
    store_atom: Any = None
    store_gmem: Any = None
    store_warp: int = 0
    view: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.view = TaskLocalVariable(dtype="SmemTile", default=None)

    @staticmethod
    def pipeline(stages: int, stage_bytes: int, consumer_threads: int) -> PipelineSpec:
        """A TMA ring's pipeline: one thread arms each stage, ``consumer_threads`` release it."""
        return PipelineSpec(
            PipelineType.TmaAsync,
            stages,
            stage_bytes,
            CooperativeGroupSpec("thread", 1),
            CooperativeGroupSpec("thread", consumer_threads),
        )

    @producer_work
    def load(self, stage_info: Any) -> None:
        """TMA-load the offset's tile into the acquired stage."""
        from ts_codegen.dsl.tma import load_tile

        coord = self.coord(stage_info.loop_offset)
        load_tile(
            self.atom,
            self.gmem,
            self.box,
            self.smem,
            coord,
            stage_info.stage_idx,
            stage_info.barrier,
        )

    @consumer_work(returns=view)
    def tile(self, stage_info: Any) -> Any:
        """The waited stage as an SMEM tensor."""
        index = (*[None] * (len(self.smem.shape) - 1), stage_info.stage_idx)
        return self.smem[index]

    @consumer_work(work_attrs=WorkAttr.ASYNC_READ)
    def store(self, stage_info: Any) -> None:
        """Start the TMA store of the waited stage (it reads the stage until ``store_wait``)."""
        from ts_codegen.dsl.tma import store_tile

        coord = self.coord(stage_info.loop_offset)
        store_tile(
            self.store_atom,
            self.smem,
            self.store_gmem,
            self.box,
            stage_info.stage_idx,
            coord,
            self.store_warp,
        )

    @consumer_work(work_attrs=WorkAttr.ASYNC_WAIT_ALL)
    def store_wait(self, stage_info: Any) -> None:
        """``cp.async.bulk.wait_group.read 0``: no store reads the ring any more."""
        from ts_codegen.dsl.tma import store_wait

        store_wait(self.store_warp)


@dataclasses.dataclass(kw_only=True)
class GmemVector(MemoryResource):
    """A tensor in global memory, read or written one element per loop offset.

    An element-wise kernel's input or output: in a grid-stride loop (:func:`grid_stride`) the
    loop offset is the element's index. No pipeline: each thread reads and writes its own
    elements.

    Args:
        tensor: The tensor, indexed by the loop offset.
        dtype: The element type by name (``"Float32"``, ``"Float16"``, ...): that of the
            task-local ``element`` that ``load`` returns.
        op: ``store`` writes ``op(element)`` (default: the element as it is), e.g.
            ``lambda x: x * 2.0``.

    Work methods: ``load`` (consumer: the offset's element, into ``element``) and ``store``
    (producer: write ``op(element)`` at the offset).
    """

    tensor: Any = None
    dtype: str = "Float32"
    op: Callable[[Any], Any] = _identity
    element: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.element = TaskLocalVariable(dtype=self.dtype, default=0)

    @consumer_work(returns=element)
    def load(self, stage_info: Any) -> Any:
        """The element at the loop offset."""
        return self.tensor[stage_info.loop_offset]

    @producer_work
    def store(self, stage_info: Any, *, element: Any) -> None:
        """Write ``op(element)`` at the loop offset."""
        self.tensor[stage_info.loop_offset] = self.op(element)


def grid_stride(k: Any, n: Any) -> tuple[Any, Any, Any]:
    """``(first, n, stride)``: a grid-stride loop's domain over ``n`` elements.

    ``domain_loop(*grid_stride(k, n))`` visits this thread's elements ``t, t + T, ...`` below
    ``n`` (``t``: the thread's index in the grid, ``T``: the grid's threads; 1-D grids). ``k``
    is the declaration's ``KernelContext``.
    """
    first = k.block_idx[0] * k.block_dim[0] + k.thread_idx[0]
    return first, n, k.grid_dim[0] * k.block_dim[0]


# -- Hopper GEMM blocks ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class TmaSource:
    """One TMA-loaded operand of a ring stage.

    Attributes:
        atom: The TMA load atom (a multicast one when the operand is shared in a cluster).
        gmem: The operand's TMA tensor (``make_tiled_tma_atom``'s second result).
        smem: Its stages, an SMEM tensor ``(rows, k, stages)``.
    """

    atom: Any
    gmem: Any
    smem: Any


@dataclasses.dataclass(frozen=True)
class SplitK:
    """Split-K for a :class:`WgmmaAccumulator`: where the partial tiles of a tile meet.

    Attributes:
        chunks: K chunks per output tile (the work tile's L coordinate is the chunk).
        workspace: A global fp32 tensor of ``tiles x chunks x BM x BN`` elements.
        counters: A global Int32 tensor of one zeroed counter per output tile.
        flag: One Int32 of SMEM (the task's threads learn there whether they sum the tile).
        tiles_m: Output tiles along M (a kernel value): tile ``(m, n)`` is ``m + n * tiles_m``.
        tiles_n: Output tiles along N (a kernel value). A work tile past ``tiles_m x tiles_n``
            (a persistent scheduler's swizzle rounds its grid up) hands nothing over.
        barrier_id: A named barrier over the task's threads (the epilogue's may be reused).
        tail: Tail split: only the tiles of the schedule's last, ragged round are cut into
            ``chunks`` (``TileRaster(tail_split=...)``). The work tile's L coordinate is then
            0 for a whole tile (``reduce`` returns True and writes nothing) and
            ``chunks * (1 + j) + c`` for chunk ``c`` of tail tile ``j``, whose workspace slot
            and counter are ``j`` (``r x chunks x BM x BN`` elements and ``r`` counters for
            ``r`` tail tiles).
        cluster_mn: With ``tail``: the cluster shape in tiles. Tail tile ``j`` is then a
            cluster tile; its CTA tile ``(m, n)`` hands over through slot and counter
            ``j * cm * cn + m % cm + (n % cn) * cm`` (``cm * cn`` times the slots).
        stream_k: A stream-K tail instead (``chunks`` is then unused): the kernel's
            ``ts_codegen.TileRaster(stream_k=True, ...)``, whose ``piece`` reads an item's L
            coordinate (0: a whole tile). Piece ``(w, j)`` hands over through slot
            ``(w + j) * cm * cn + rank`` and counter ``j * cm * cn + rank`` (``(P + r) x cm x
            cn`` slots and ``r x cm x cn`` counters for ``r`` tail tiles on ``P`` workers); the
            last to arrive sums the tile's pieces in worker order.
    """

    chunks: int
    workspace: Any
    counters: Any
    flag: Any
    tiles_m: Any
    tiles_n: Any
    barrier_id: int
    tail: bool = False
    cluster_mn: tuple[int, int] = (1, 1)
    stream_k: Any = None

    def __post_init__(self) -> None:
        shape = self.cluster_mn
        if not (
            isinstance(shape, tuple)
            and len(shape) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in shape)
        ):
            raise RuntimeConfigError(
                f"SplitK(cluster_mn={shape!r}): the cluster shape in tiles is two ints >= 1",
                resource="split",
                fix="pass the kernel's cluster shape, e.g. cluster_mn=(2, 1), or leave (1, 1)",
            )


@dataclasses.dataclass(kw_only=True)
class WgmmaAccumulator(MemoryResource):
    """The fp32 accumulator of a WGMMA task, in the registers of its warpgroups.

    Args:
        tiled_mma: The task's ``TiledMma`` (one per task: the accumulate flag is per task).
        tile_mn: The tile ``(BM, BN)`` it accumulates; with ``W`` warpgroups in the task,
            warpgroup ``w`` holds the 64-row blocks ``w, w + W, ...`` (as ``tiled_mma``'s
            ``W x 1`` atom layout repeats over the tile).
        smem_a: The ``A`` stages the WGMMAs read (the operand ring's SMEM).
        smem_b: The ``B`` stages.
        warpgroup: The task's first warpgroup in the CTA.
        promote_every: Two-level accumulation when ``>= 1``: the WGMMAs accumulate groups of
            this many K blocks, each group added into a second fp32 register tile (the
            *total*, what the epilogue reads) by :meth:`promote` once its WGMMAs retired;
            the next group's first WGMMA overwrites the WGMMA tile. For FP8 inputs, whose
            WGMMA accumulation is not full fp32. 0 (the default): one register tile.
        k_blocks: The tile's K block count (a kernel value), for :meth:`promote_rest`; or a
            function of the work tile's coordinate when it differs between work items (a
            tail split's whole tiles and chunks).
        fresh_mma: With ``promote_every``: a second ``TiledMma`` like ``tiled_mma`` whose
            accumulate flag is off (``set(warpgroup.Field.ACCUMULATE, False)``), for the first
            WGMMA of a group.
        promote_stagger: With ``promote_every`` (even) and a task of two warpgroups: the second
            warpgroup's groups are shifted by ``promote_every / 2`` blocks (its first group is
            half as long), so the warpgroups end their groups in turns and one's WGMMAs keep
            the tensor cores busy while the other waits for its own and adds them up. The
            schedule then calls :meth:`promote` every K block; each warpgroup promotes at its
            own groups' ends only.
        split: Split-K (:class:`SplitK`), or None: work items ``(m, n, chunk)`` each hold a
            partial sum of tile ``(m, n)``, which :meth:`reduce` hands over.
        deferred: With ``promote_every``: each tile's total is stored by the next tile's first
            K block (:class:`TmaEpilogue`'s ``store_tile``), so nothing zeroes it in the K loop:
            tiles start with :meth:`begin` and the tile's first promotion assigns the total.

    Work methods (consumer, auxiliary): ``setup`` (once per thread: the WGMMA descriptors over
    the stages, the register tile) and ``zero`` (per tile: zero the registers and fence them
    for WGMMA); with ``promote_every``, ``promote`` (at the end of a group, after a
    ``wgmma.wait_group 0``: ``total += regs``) and ``promote_rest`` (after the K loop: the
    last group when ``k_blocks`` is not a multiple of ``promote_every``); with ``split``,
    ``reduce`` (after the K loop: write the partial tile, count the item, and in the tile's last
    item sum every chunk's partial in chunk order; returns ``last``, whether this item holds
    the tile's sum: ``with when_true(last, key=...): c.store()``). The MMAs are the operand
    ring's work (:meth:`WgmmaRing.mma`): they read its stage. For a deferred store
    (:class:`TmaEpilogue`'s ``store_tile``): ``no_tile`` and ``this_tile`` (the tile's
    coordinates in two task-local slots, ``tile_m`` / ``tile_n``) and ``begin`` (start a tile
    without zeroing the total).
    """

    tiled_mma: Any
    tile_mn: tuple[int, int]
    smem_a: Any
    smem_b: Any
    warpgroup: int = 1
    promote_every: int = 0
    k_blocks: Any = None
    fresh_mma: Any = None
    promote_stagger: bool = False
    split: SplitK | None = None
    deferred: bool = False
    last: TaskLocalVariable = TaskLocalVariable.uninitialized()
    tile_m: TaskLocalVariable = TaskLocalVariable.uninitialized()
    tile_n: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.last = TaskLocalVariable(dtype="Boolean", default=False)
        self.tile_m = TaskLocalVariable(dtype="Int32", default=-1)
        self.tile_n = TaskLocalVariable(dtype="Int32", default=0)
        every = self.promote_every
        if isinstance(every, bool) or not isinstance(every, int) or every < 0:
            raise RuntimeConfigError(
                f"WgmmaAccumulator(promote_every={every!r}): a count of K blocks, an int >= 0",
                resource=self.name,
                fix="pass promote_every=0 (one register tile) or the group length, e.g. 4",
            )
        if every and (self.fresh_mma is None or self.k_blocks is None):
            raise RuntimeConfigError(
                f"WgmmaAccumulator(promote_every={every}) needs fresh_mma (the tiled MMA with "
                "its accumulate flag off) and k_blocks (the K loop's trip count)",
                resource=self.name,
                fix="pass fresh_mma=k.value(...) and k_blocks=<the K loop's bound>",
            )
        if not isinstance(self.promote_stagger, bool):  # "off" would be truthy: on, silently
            raise RuntimeConfigError(
                f"WgmmaAccumulator(promote_stagger={self.promote_stagger!r}): not a bool",
                resource=self.name,
                fix="pass promote_stagger=True or False",
            )
        if self.promote_stagger and (every < 2 or every % 2):
            raise RuntimeConfigError(
                f"WgmmaAccumulator(promote_every={every}, promote_stagger=True): staggered "
                "groups shift the second warpgroup's by half a group, an even count of K blocks",
                resource=self.name,
                fix="pass an even promote_every (e.g. 4), or promote_stagger=False",
            )
        if self.deferred and (not every or self.promote_stagger):
            raise RuntimeConfigError(
                f"WgmmaAccumulator(deferred=True, promote_every={every}, promote_stagger="
                f"{self.promote_stagger}): a deferred store writes from the total of unstaggered "
                "two-level accumulation",
                resource=self.name,
                fix="pass promote_every >= 1 and promote_stagger=False, or deferred=False",
            )

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def setup(self, stage_info: Any) -> None:
        """Once per thread: the WGMMA descriptors and the register tile."""
        from ts_codegen.dsl import wgmma

        self.frag_a, self.frag_b, self.regs, self.tidx, wg = wgmma.accumulator_setup(
            self.tiled_mma, self.tile_mn, self.smem_a, self.smem_b, self.warpgroup
        )
        self.total = self.shift = None
        if self.promote_every:
            self.total = wgmma.make_accumulator(self.tiled_mma, self.tile_mn, 0)
        if self.promote_stagger:
            self.shift = wgmma.stagger_shift(wg, self.promote_every)
        if self.split is not None:
            self.split_barrier = wgmma.task_barrier(self.tiled_mma, self.split.barrier_id)

    @property
    def result(self) -> Any:
        """The registers that hold the tile's product at the end (the total when promoting)."""
        total = getattr(self, "total", None)
        return self.regs if total is None else total

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def zero(self, stage_info: Any) -> None:
        """Start a tile: zero the registers (the total when promoting), fence them."""
        from ts_codegen.dsl import wgmma

        wgmma.begin_tile(self.tiled_mma, self.regs, self.total)

    def deferred_total(self, what: str) -> Any:
        """The fp32 total a deferred store writes from (``what`` needs it), or a typed error."""
        total = getattr(self, "total", None)  # set by setup
        if total is None or not self.deferred:
            has = "is not declared deferred" if total is not None else "has none"
            raise RuntimeConfigError(
                f"{what} is a deferred store's, which writes a tile from the fp32 total of "
                f"two-level accumulation, and accumulator `{self.name}` {has}",
                resource=self.name,
                fix="pass WgmmaAccumulator(promote_every=..., deferred=True), or store each "
                "tile with TmaEpilogue.store()",
            )
        return total

    @consumer_work(returns=(tile_m, tile_n), work_attrs=WorkAttr.AUXILIARY)
    def no_tile(self, stage_info: Any) -> Any:
        """A deferred store's start (``TmaEpilogue.store_tile``): no tile to store yet.

        It zeroes the total: what a tile without K blocks stores.
        """
        from ts_codegen.dsl.wgmma import Int32

        self.deferred_total("no_tile()").fill(0.0)
        return Int32(-1), Int32(0)

    @consumer_work(returns=(tile_m, tile_n), work_attrs=WorkAttr.AUXILIARY)
    def this_tile(self, stage_info: Any) -> Any:
        """The work tile's coordinates, for the deferred store of the next tile (or the end)."""
        m, n, _ = stage_info.work_tile.tile_idx
        return m, n

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def begin(self, stage_info: Any) -> None:
        """Start a tile whose total a deferred store still reads: fence the registers only.

        The tile's first promotion assigns the total (``deferred``): a zeroing after the
        store, in the K loop's first block, cost a select and a copy per value in every block.
        """
        from ts_codegen.dsl import wgmma

        self.deferred_total("begin()")
        wgmma.begin_tile(self.tiled_mma, self.regs, self.total, zero=False)

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def promote(self, stage_info: Any) -> None:
        """End of a group: add the WGMMA registers into the total.

        It waits for the group's WGMMAs itself (``wgmma.wait_group 0``) and fences the
        registers for the next group's first WGMMA. With ``promote_stagger`` it runs in every
        K block and does so only where the thread's warpgroup ends a group.
        """
        from ts_codegen.dsl import wgmma

        k = stage_info.loop_offset  # the K block (staggered groups: is it this one's end?)
        first = k < self.promote_every if self.deferred else None  # the tile's first group
        wgmma.promote(self.total, self.regs, k, self.promote_every, self.shift, first)

    @consumer_work(returns=last, work_attrs=WorkAttr.AUXILIARY)
    def reduce(self, stage_info: Any) -> Any:
        """Split-K, after the K loop: hand this item's partial tile over.

        True in the tile's last item, whose registers then hold the sum of every chunk (in
        chunk order).
        """
        from ts_codegen.dsl import wgmma

        split = self.split
        if split is None:
            raise RuntimeConfigError(
                f"{self.name}.reduce() is split-K's hand-over, and this accumulator has no split",
                resource=self.name,
                fix="pass WgmmaAccumulator(split=SplitK(...)), or do not call reduce()",
            )
        m, n, chunk = stage_info.work_tile.tile_idx
        threads = wgmma.task_threads(self.tiled_mma)
        cm, cn = split.cluster_mn  # the CTA tile's number in its cluster tile
        rank = (m % cm if cm > 1 else 0) + (n % cn * cm if cn > 1 else 0)
        meet = (self.result, split.workspace, split.counters, split.flag, self.split_barrier)
        grid = (m < split.tiles_m) & (n < split.tiles_n)
        if split.stream_k is not None:  # the L coordinate says whole tile or which piece
            piece = split.stream_k.piece(chunk)
            return wgmma.stream_reduce(*meet, chunk, piece, self.tidx, threads, grid, cm * cn, rank)
        if split.tail:  # the L coordinate says whole tile or which chunk of which tail tile
            chunks = split.chunks
            return wgmma.tail_reduce(*meet, chunk, chunks, self.tidx, threads, grid, cm * cn, rank)
        tile = m + n * split.tiles_m
        return wgmma.split_reduce(*meet, tile, chunk, split.chunks, self.tidx, threads, grid)

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def promote_rest(self, stage_info: Any) -> None:
        """After the K loop: promote a last, short group.

        The loop's last block waited for every WGMMA (``mma_wait_all``) before this runs.
        """
        from ts_codegen.dsl import wgmma

        k_blocks = self.k_blocks
        if callable(k_blocks):  # a per-item count
            k_blocks = k_blocks(stage_info.work_tile.tile_idx)
        every, shift = self.promote_every, self.shift
        wgmma.promote_rest(self.total, self.regs, k_blocks, every, shift, self.deferred)


@dataclasses.dataclass(kw_only=True)
class WgmmaWaits(MemoryResource):
    """The WGMMA waits of a ring whose consumer work issues WGMMAs that read its stages.

    A WGMMA reads its SMEM operands after the work that issued it has returned, so a stage may
    go back to the producer only once a ``wgmma.wait_group`` has retired the MMAs that read it.
    These works are those waits, with the work attributes (``ASYNC_WAIT_PRIOR`` /
    ``ASYNC_WAIT_ALL``) by which ts-verify knows which MMAs each retires (an earlier release is
    TS-V113). :class:`WgmmaRing` has them; a WGMMA ring of one's own subclasses this, e.g. one
    ring per operand merged in a group, whose ``mma`` (a consumer work of the ring) issues the
    WGMMAs.

    Work methods (consumer): ``mma_wait_prior`` (``wgmma.wait_group 1``: every MMA group but the
    newest is done) and ``mma_wait_all`` (``wgmma.wait_group 0``: every MMA group is done).
    """

    @consumer_work(work_attrs=WorkAttr.ASYNC_WAIT_PRIOR)
    def mma_wait_prior(self, stage_info: Any) -> None:
        """``wgmma.wait_group 1``: every MMA group but the newest is done."""
        from ts_codegen.dsl import wgmma

        wgmma.mma_wait(1)

    @consumer_work(work_attrs=WorkAttr.ASYNC_WAIT_ALL)
    def mma_wait_all(self, stage_info: Any) -> None:
        """``wgmma.wait_group 0``: every MMA group is done."""
        from ts_codegen.dsl import wgmma

        wgmma.mma_wait(0)


@dataclasses.dataclass(kw_only=True)
class WgmmaRing(WgmmaWaits):
    """A TMA-loaded SMEM ring of GEMM operands that WGMMA warpgroups read.

    Each stage holds an ``A`` and a ``B`` block that one thread TMA-loads (a ``TmaWgmma``
    pipeline, see :meth:`pipeline`). The WGMMAs read the stage after ``mma`` returns, so on this
    ring ts-verify requires a ``mma_wait_prior`` / ``mma_wait_all`` (``wgmma.wait_group``) to
    retire them before the stage is released. With a cluster (the pipeline's ``cluster_mn``) the
    ``A`` block is multicast to the CTAs of the cluster row and the ``B`` block to those of the
    column.

    Several tasks may read the ring, each waiting for and releasing every stage (the
    pipeline's consumer group counts all their threads); a task whose ``Task.make_task_cache``
    returns a :class:`WgmmaAccumulator` issues its MMAs into that one. Ping-pong math tasks
    share one ring so: each runs ``mma`` on its own tiles and only waits and releases on the
    other's (``wait``, ``release``), which keeps its phase exact (a task that skipped the
    other's stages without waiting could see a stage's previous phase as its own).

    Args:
        a: The ``A`` operand (``M x K``), loaded in ``(BM, tile_k)`` blocks.
        b: The ``B`` operand (``N x K``), loaded in ``(BN, tile_k)`` blocks.
        acc: The accumulator the MMAs write (its ``tile_mn`` is ``(BM, BN)``), unless the
            calling task has its own (its task cache).
        tile_k: The K extent of a block.
        chunk_blocks: Split-K: the K blocks of one chunk (a kernel value); the work tile's L
            coordinate is its chunk, so ``load`` reads block ``chunk * chunk_blocks +
            loop_offset``. None: block ``loop_offset``.
        tail_chunks: Tail split (:class:`SplitK` ``tail``): the chunk count; the chunk is then
            ``l mod tail_chunks`` of the L coordinate ``l`` (0 for a whole tile, whose K loop
            starts at block 0).
        first_block: Or the first K block of a work item as a function of its coordinate
            ``(m, n, l)`` (a stream-K piece's): ``load`` reads block ``first_block(coord) +
            loop_offset``.

    Work methods: ``setup`` (producer, auxiliary: the TMA views and multicast masks), ``load``
    (producer: K block ``loop_offset`` of the work tile), ``mma`` (consumer: the WGMMAs of the
    waited stage, committed as one group), ``mma_wait_prior`` / ``mma_wait_all`` (consumer:
    ``wgmma.wait_group 1`` / ``0``, :class:`WgmmaWaits`).
    """

    a: TmaSource
    b: TmaSource
    acc: WgmmaAccumulator
    tile_k: int
    chunk_blocks: Any = None
    tail_chunks: int = 0
    first_block: Callable[[Any], Any] | None = None

    @staticmethod
    def pipeline(
        stages: int, stage_bytes: int, consumer_threads: int, cluster_mn: tuple[int, int] = (1, 1)
    ) -> PipelineSpec:
        """The ring's pipeline: one TMA thread arms a stage, ``consumer_threads`` release it.

        With a cluster each consumer warp also releases the stage in the CTAs that multicast
        into it.
        """
        return PipelineSpec(
            PipelineType.TmaWgmma,
            stages,
            stage_bytes,
            CooperativeGroupSpec("thread", 1),
            CooperativeGroupSpec("thread", consumer_threads),
            cluster_mn=cluster_mn,
        )

    @property
    def cluster_mn(self) -> tuple[int, int]:
        """The cluster the ring spans (its pipeline's)."""
        return tuple(getattr(self.pipeline_config, "cluster_mn", (1, 1)))

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    def setup(self, stage_info: Any) -> None:
        """Once per producer: the TMA views of this CTA's slices and the multicast masks."""
        from ts_codegen.dsl import wgmma

        tile = (*self.acc.tile_mn, self.tile_k)
        self.views = wgmma.operand_views(self.a, self.b, tile, self.cluster_mn)

    @producer_work
    def load(self, stage_info: Any) -> None:
        """TMA-load K block ``loop_offset`` of the work tile into the acquired stage."""
        from ts_codegen.dsl import wgmma

        m, n, chunk = stage_info.work_tile.tile_idx
        atoms = (self.a.atom, self.b.atom)
        k, stage = stage_info.loop_offset, stage_info.stage_idx
        if self.tail_chunks:  # tail split: the L coordinate packs the chunk
            chunk = chunk % self.tail_chunks
        if self.chunk_blocks is not None:  # split-K: the blocks of the work tile's chunk
            k = chunk * self.chunk_blocks + k
        if self.first_block is not None:  # stream-K: where the item's piece starts
            k = self.first_block(stage_info.work_tile.tile_idx) + k
        wgmma.load_operands(atoms, self.views, m, n, k, stage, stage_info.barrier)

    def acc_of(self, stage_info: Any) -> WgmmaAccumulator:
        """The accumulator of a work call: its task's own (task cache), else ``acc``."""
        own = stage_info.task_cache
        return own if isinstance(own, WgmmaAccumulator) else self.acc

    @consumer_work
    def mma(self, stage_info: Any) -> None:
        """Issue the WGMMAs of the waited stage into the accumulator (asynchronous)."""
        from ts_codegen.dsl import wgmma

        acc, stage, k = self.acc_of(stage_info), stage_info.stage_idx, stage_info.loop_offset
        every = acc.promote_every  # a group's first block overwrites the WGMMA registers
        regs, frags = acc.regs, (acc.frag_a, acc.frag_b)
        wgmma.mma_k_block(acc.tiled_mma, regs, *frags, stage, k, every, acc.fresh_mma, acc.shift)


def tile_queue(
    params: Any,
    counters: Any = None,
    *,
    consumer_threads: int = 0,
    stages: int = 2,
    name: str = "WorkQueue",
) -> WorkQueue:
    """A persistent kernel's work queue over ``params`` (the scheduler's tile grid).

    Args:
        params: The tile scheduler parameters (a symbol on the host).
        counters: None for the static schedule (CTA ``c`` runs tiles ``c, c + G, ...``), else
            the atomic dynamic scheduler's global counters (two zeroed Int32): one warp claims
            each further tile and hands it over through the queue's own ring of ``stages``.
        consumer_threads: The threads that read the handed-over tiles (dynamic only).
        stages: The hand-over ring's depth (dynamic only).
        name: The resource name.
    """
    if counters is None:
        static = TileSchedulerConfig.create_static_persistent_tile_scheduler_params(params)
        return WorkQueue(static, name=name)
    handoff = PipelineConfig.create_async_async_pipeline_cfg(
        stages, CooperativeGroupSpec("thread", 32), CooperativeGroupSpec("thread", consumer_threads)
    )
    dynamic = TileSchedulerConfig.create_atomic_dynamic_persistent_tile_scheduler_params(
        params, counters
    )
    return WorkQueue(dynamic, name=name, pipeline_config=handoff)


def prefetch_tma(k: Any, *atoms: Any, warp: int = 0) -> None:
    """At kernel start, warp ``warp`` prefetches the descriptors of the TMA ``atoms``.

    ``k`` is the declaration's ``KernelContext``; nothing happens on the host.
    """
    if k.on_device:
        from ts_codegen.dsl import wgmma

        wgmma.prefetch_descriptors(warp, atoms)
