"""The TMA-stored epilogue of a WGMMA tile (re-exported by :mod:`ts_runtime.blocks`).

:class:`TmaEpilogue` writes a :class:`~ts_runtime.blocks.WgmmaAccumulator` out through a few
SMEM buffers that one warp TMA-stores, optionally fused with an elementwise step, either per
tile or deferred under the next tile's first WGMMAs. Its CuTe DSL calls are in
``ts_codegen.dsl.wgmma``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ts_ir import WorkAttr
from ts_runtime.errors import RuntimeConfigError
from ts_trace import MemoryResource, producer_work

if TYPE_CHECKING:  # blocks re-exports this module: importing it at run time would be a cycle
    from ts_runtime.blocks import WgmmaAccumulator

__all__ = ["Fuse", "TmaEpilogue"]


Fuse = Callable[[Any, Any, Any, Any], None]
"""``fuse(acc, thr_mma, m, n)``: rewrite the accumulator of tile ``(m, n)`` in place."""


@dataclasses.dataclass(kw_only=True)
class TmaEpilogue(MemoryResource):
    """A TMA-stored epilogue: the accumulator of a tile goes out through SMEM buffers.

    Per tile, sub-tile by sub-tile (``sub_tile``, columns left to right, row block by row
    block): the task's threads
    convert their registers to the output type and ``stmatrix`` them into the next buffer, a
    named barrier over the task, and the store warp (the task's first) TMA-stores the buffer.
    The buffers form a ring of their own, reused once at most ``buffers - 2`` stores still read
    (``cp.async.bulk.wait_group.read``), so a store overlaps the next sub-tiles' conversion.

    Args:
        acc: The accumulator to write (its task writes this epilogue).
        atom: The TMA store atom.
        gmem: The output's TMA tensor (``M x N``, N-major).
        smem: The buffers, an SMEM tensor ``(EM, EN, buffers)`` of the output type.
        sub_tile: ``(EM, EN)``: ``EM`` is ``BM`` when each of the task's warpgroups holds one
            64-row WGMMA block (``BM = 64 x warpgroups``), 64 when one warpgroup holds several
            (a 128-row tile: each thread's values of a block are one run of its registers, and
            a sub-tile must be one run); ``EN`` is a multiple of 16 (``stmatrix`` x4) up to
            ``BN``, and ``buffers`` divides the sub-tile count ``BM / EM x ceil(BN / EN)``.
            When ``EN`` does not divide ``BN`` the last sub-tile of a row block ends at the
            tile's edge, overlapping the one before (both write the same values).
        barrier_id: The named barrier of the task (unique in the kernel; 0 is
            ``__syncthreads``).
        fuse: ``fuse(acc, thr_mma, m, n)`` before the conversion, or None: rewrite the fp32
            accumulator of tile ``(m, n)`` in place (``acc`` in its MMA layout, element ``i``
            at ``thr_mma.partition_C`` coordinate ``i``), e.g. ``alpha * acc + bias``.

    Work methods (producer): ``setup`` (auxiliary, once per thread: views, barrier, store
    warp), ``store`` (the work tile) and ``drain`` (auxiliary, before exit: the stores have
    read SMEM). A deferred store (two-level accumulation: the tile goes out from the fp32
    total while the next tile's first WGMMAs write the other register tile) carries the
    tile's coordinates to the next one: the accumulator's ``no_tile`` (``(-1, 0)``: none
    yet; it zeroes the total) and ``this_tile`` (the work tile's) return them,
    ``store_tile(m=, n=)`` stores that tile if there is one (the running tile's first
    promotion then assigns the total, ``WgmmaAccumulator(deferred=True)``), and
    ``store_tile_now`` stores the work tile itself where no next tile will (the CTA's last,
    ``WorkQueue.is_last_tile``, or any tile without K blocks)::

        m, n = acc.no_tile()
        with work_tile_loop(wq):
            acc.begin()  # the total is not zeroed here
            with domain_loop(k_blocks) as kb:
                ab.wait()
                ab.mma()
                with kb.first_iter():
                    c.store_tile(m=m, n=n)  # under this block's WGMMAs
                ...
            mine = acc.this_tile()  # the next tile stores it, if there is one
            c.store_tile_now(m=mine[0], n=mine[1], last=wq.is_last_tile())
    """

    acc: WgmmaAccumulator
    atom: Any
    gmem: Any
    smem: Any
    sub_tile: tuple[int, int]
    barrier_id: int
    fuse: Fuse | None = None

    def __post_init__(self) -> None:
        (bm, bn), (em, en) = self.acc.tile_mn, self.sub_tile
        if em < 1 or bm % em or en % 16 or not 16 <= en <= bn or bn % 8:
            raise RuntimeConfigError(
                f"TmaEpilogue(sub_tile={self.sub_tile!r}) on a {bm} x {bn} tile: a sub-tile's "
                "rows divide the tile's, its columns are a multiple of 16 (stmatrix x4) up to "
                "the tile's, and the tile's columns a multiple of 8",
                resource=self.name,
                fix=f"pass sub_tile=({em if em >= 1 and bm % em == 0 else bm}, 32)",
            )

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    def setup(self, stage_info: Any) -> None:
        """Once per thread: the stmatrix views, the task's named barrier, the store warp."""
        from ts_codegen.dsl import wgmma

        acc, fused = self.acc, self.fuse is not None
        self.views, self.barrier, self.is_store_warp = wgmma.epilogue_setup(
            acc.tiled_mma, acc.result, self.smem, acc.tidx, fused, self.barrier_id, acc.warpgroup
        )

    @producer_work
    def store(self, stage_info: Any) -> None:
        """Write the work tile (``fence.proxy.async`` before each TMA store)."""
        m, n, _ = stage_info.work_tile.tile_idx
        self._store(m, n)

    def _store(self, m: Any, n: Any, when: Any = True) -> None:
        from ts_codegen.dsl import wgmma

        where = (self.views, self.atom, self.smem, self.gmem, self.acc.tile_mn, self.sub_tile)
        wgmma.epilogue_store(*where, m, n, self.barrier, self.is_store_warp, self.fuse, when)

    @producer_work
    def store_tile(self, stage_info: Any, *, m: Any, n: Any) -> None:
        """Write tile ``(m, n)`` from the total if ``m >= 0``.

        The running tile's first promotion then assigns the total
        (``WgmmaAccumulator.deferred``).
        """
        self.acc.deferred_total(f"{self.name}.store_tile()")
        self._store(m, n, m >= 0)

    @producer_work
    def store_tile_now(self, stage_info: Any, *, m: Any, n: Any, last: Any) -> None:
        """Write the work tile from the total where no next tile will store it.

        That is the CTA's ``last`` tile, or any tile without K blocks (no next tile's first
        block runs; the total stays zero).
        """
        self.acc.deferred_total(f"{self.name}.store_tile_now()")
        k_blocks = self.acc.k_blocks
        if callable(k_blocks):  # a per-item count
            k_blocks = k_blocks(stage_info.work_tile.tile_idx)
        self._store(m, n, last | (k_blocks == 0))

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    def drain(self, stage_info: Any) -> None:
        """Before exit: the TMA stores have finished reading SMEM."""
        from ts_codegen.dsl import wgmma

        wgmma.epilogue_drain(self.is_store_warp)
