"""Work-tile sources: what the lowering of ``work_tile_loop`` asks a work-queue resource for.

A work-queue resource (``ts_runtime.WorkQueue``, or any resource with ``is_work_queue``)
returns a :class:`TileSource` from ``ts_tile_source()``. The lowering emits::

    cursor = source.cursor();  tile = source.tile(cursor)
    while tile.is_valid_tile:
        <loop body; stage_info.work_tile = tile>
        cursor = source.next_cursor(cursor, fetched);  tile = source.tile(cursor)

``fetched`` is the value of the task-local output :attr:`TileSource.fetched_output` after the
body (the next tile index a dynamic queue handed over through its SMEM pipeline), or None for a
static queue, which strides by the grid, and for the task that fetched the index itself
(producer work has no outputs; the source remembers what it fetched in this task's body).

Two sources are provided:

* :class:`StaticTiles`: the static persistent schedule over a :class:`~ts_codegen.TileRaster`
  (rasterization along M or N, swizzle for L2 reuse, clusters; see
  :mod:`ts_codegen.tiles_raster`); CTA ``c`` runs tiles ``c, c + G, c + 2G, ...``.
* :class:`AtomicTiles`: a Hopper dynamic scheduler. A CTA's first tile is its index; each
  further tile comes from a global atomic counter (``next = atomicAdd(&counters[0], 1) + G``),
  claimed by one fetching warp and handed to the CTA's other tasks through a small SMEM queue
  (an AsyncAsync pipeline plus one Int32 slot per stage). The last CTA to run out of tiles
  zeroes the counters, so no host memset is needed between launches.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ts_codegen.dsl import tiles as dsl_tiles

__all__ = ["AtomicTiles", "StaticTiles", "TileSource"]


@runtime_checkable
class TileSource(Protocol):
    """The tile sequence of one work queue, as DSL values (kernel trace time)."""

    fetched_output: str | None
    """Task-local output whose value after the body is the next tile index (dynamic queues)."""

    def prepare(self, smem_allocator: Any, stages: int) -> None:
        """Once per kernel, before any task: allocate what the queue needs in SMEM."""

    def cursor(self) -> Any:
        """The cursor of the CTA's first tile (flattenable DSL value)."""

    def tile(self, cursor: Any) -> Any:
        """The ``WorkTileInfo`` at ``cursor`` (``tile_idx``, ``is_valid_tile``)."""

    def next_cursor(self, cursor: Any, fetched: Any) -> Any:
        """The cursor of the next tile; ``fetched`` is the fetched index or None."""


class StaticTiles:
    """Static persistent schedule over a :class:`~ts_codegen.TileRaster`.

    CUTLASS's ``PersistentTileSchedulerParams`` are accepted too (read by
    :meth:`~ts_codegen.TileRaster.of`).
    """

    fetched_output: str | None = None

    def __init__(self, params: Any) -> None:
        self.params = params

    def prepare(self, smem_allocator: Any, stages: int) -> None:
        """Nothing to allocate."""
        del smem_allocator, stages

    def cursor(self) -> Any:
        """The CTA's schedule (its first tile is the CTA's cluster index)."""
        return dsl_tiles.static_scheduler(self.params)

    def tile(self, cursor: Any) -> Any:
        """The schedule's current tile."""
        return dsl_tiles.scheduler_tile(cursor)

    def next_cursor(self, cursor: Any, fetched: Any) -> Any:
        """Stride by the number of persistent clusters."""
        del fetched
        return dsl_tiles.scheduler_advance(cursor)


class AtomicTiles(StaticTiles):
    """Dynamic persistent schedule: a global atomic counter pair ``counters = [next, done]``.

    Args:
        params: A :class:`~ts_codegen.TileRaster` (or CUTLASS ``PersistentTileSchedulerParams``)
            with cluster shape 1 x 1.
        counters: A global Int32 tensor of 2 elements, zero before the first launch.
        fetched_output: The work queue's task-local output holding the fetched index.
    """

    def __init__(self, params: Any, counters: Any, fetched_output: str = "next_tile") -> None:
        super().__init__(params)
        self.counters = counters
        self.fetched_output = fetched_output
        self.slots: Any = None
        self.last_fetched: Any = None

    def cursor(self) -> Any:
        """The CTA's first tile is its index; forget what an earlier task's body fetched."""
        self.last_fetched = None
        return super().cursor()

    def prepare(self, smem_allocator: Any, stages: int) -> None:
        """One Int32 SMEM slot per queue stage."""
        self.slots = dsl_tiles.smem_slots(smem_allocator, max(stages, 1))

    def next_cursor(self, cursor: Any, fetched: Any) -> Any:
        """The schedule positioned at the fetched (or, in the fetching task, claimed) index."""
        index = fetched if fetched is not None else self.last_fetched
        if index is None:
            raise ValueError("the work-tile loop body neither fetched nor read the next tile")
        return dsl_tiles.scheduler_at(cursor, index)

    def fetch(self, stage_idx: Any) -> Any:
        """Claim the next tile (one warp), publish it in slot ``stage_idx``, return its index.

        A CTA that claims an index past the last tile counts itself out (it fetches no more);
        the last one resets the counters.
        """
        sched = dsl_tiles.static_scheduler(self.params)
        ctas = dsl_tiles.scheduler_num_ctas(sched)
        idx = dsl_tiles.counter_fetch(self.counters) + ctas
        dsl_tiles.slot_write(self.slots, stage_idx, idx)
        total = dsl_tiles.num_tiles(sched)
        active = dsl_tiles.min_int(ctas, total)
        dsl_tiles.when(idx >= total, lambda: dsl_tiles.counter_finish(self.counters, active))
        self.last_fetched = idx
        return idx

    def read(self, stage_idx: Any) -> Any:
        """The index the fetching warp published in slot ``stage_idx``."""
        return dsl_tiles.slot_read(self.slots, stage_idx)
