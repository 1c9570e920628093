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
* :class:`ClcTiles`: Blackwell's hardware scheduler (cluster launch control, sm_100a). The grid
  holds one cluster per tile; a CTA's first tile is its own, and each further one is a cluster
  that had not started yet, cancelled by one fetching warp (``clusterlaunchcontrol.try_cancel``)
  whose 16-byte answer lands in the queue's ``ClcFetchAsync`` ring. Every task, the fetching
  one included, reads the answer (``clusterlaunchcontrol.query_cancel``); a failed request ends
  the loop.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ts_codegen.dsl import clc as dsl_clc
from ts_codegen.dsl import tiles as dsl_tiles

__all__ = ["AtomicTiles", "ClcTiles", "StaticTiles", "TileSource"]


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

    def peek(self, cursor: Any) -> Any:
        """The tile after ``cursor``'s (``cursor`` does not move)."""
        return dsl_tiles.scheduler_tile(dsl_tiles.scheduler_next(cursor))


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
        self.last_read: Any = None

    def cursor(self) -> Any:
        """The CTA's first tile is its index; forget what an earlier task's body fetched."""
        self.last_fetched = self.last_read = None
        return super().cursor()

    def prepare(self, smem_allocator: Any, stages: int) -> None:
        """One Int32 SMEM slot per queue stage."""
        self.slots = dsl_tiles.smem_slots(smem_allocator, max(stages, 1))

    def next_cursor(self, cursor: Any, fetched: Any) -> Any:
        """The schedule positioned at the fetched (or, in the fetching task, claimed) index."""
        index = fetched
        for known in (self.last_read, self.last_fetched):
            index = known if index is None else index
        if index is None:
            raise ValueError("the work-tile loop body neither fetched nor read the next tile")
        return dsl_tiles.scheduler_at(cursor, index)

    def fetch(self, stage_idx: Any, barrier: Any = None) -> Any:
        """Claim the next tile (one warp), publish it in slot ``stage_idx``, return its index.

        A CTA that claims an index past the last tile counts itself out (it fetches no more);
        the last one resets the counters. ``barrier`` (the stage's full barrier) is not needed:
        the ring's commit publishes the slot.
        """
        del barrier
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

    def read_tile(self, stage_idx: Any) -> Any:
        """The ``WorkTileInfo`` of the index in slot ``stage_idx``; the loop moves to it."""
        self.last_read = self.read(stage_idx)
        return _tile_at(self.params, self.last_read)


class ClcTiles(StaticTiles):
    """Dynamic persistent schedule by cluster launch control (Blackwell, sm_100a).

    The grid has one cluster per work index (``TileSchedulerConfig.grid_shape``); cluster
    ``c`` starts at index ``c`` (its ``blockIdx.z``), exactly as the static schedule's first
    tile. A further tile is a cluster the fetching warp cancelled before it started: its work
    index is the z of the cancelled cluster's first CTA. A failed request (nothing left to
    cancel) reads as index ``num_tiles``, past the last tile, which ends every task's loop.

    Args:
        params: A :class:`~ts_codegen.TileRaster`, CUTLASS ``PersistentTileSchedulerParams``,
            or CUTLASS ``ClcDynamicPersistentTileSchedulerParams`` (its problem shape, cluster,
            swizzle and raster order are read).
        response_ptr: SMEM for the responses (16 bytes per queue stage, 16-byte aligned), as the
            reference's ``TileSchedulerConfig`` takes it; None: carved from the kernel's SMEM.
        fetched_output: The work queue's task-local output holding the read index.
    """

    def __init__(
        self, params: Any, response_ptr: Any = None, fetched_output: str = "next_tile"
    ) -> None:
        super().__init__(clc_raster(params))
        self.response_ptr = response_ptr
        self.fetched_output = fetched_output
        self.slots: Any = None
        self.last_read: Any = None
        # The cluster shape decides whether the answer is multicast to every CTA of it.
        cm, cn = self.params.cluster_shape_mn
        self.multicast = cm * cn > 1

    def prepare(self, smem_allocator: Any, stages: int) -> None:
        """One 16-byte response slot per queue stage."""
        self.slots = dsl_clc.response_slots(smem_allocator, stages, self.response_ptr)

    def cursor(self) -> Any:
        """The cluster's first tile is its index; forget what an earlier task's body read."""
        self.last_read = None
        return super().cursor()

    def next_cursor(self, cursor: Any, fetched: Any) -> Any:
        """The schedule at the index every task read from the answer (the fetching one too)."""
        fetched = self.last_read if fetched is None else fetched
        if fetched is None:
            raise ValueError(
                "the work-tile loop body did not read the CLC answer (read_next_tile): with "
                "cluster launch control every task, the fetching one too, reads it"
            )
        return dsl_tiles.scheduler_at(cursor, fetched)

    def fetch(self, stage_idx: Any, barrier: Any = None) -> None:
        """Ask the hardware to cancel an unstarted cluster; the answer completes ``barrier``."""
        if barrier is None:
            raise ValueError("a CLC fetch needs the stage's full barrier (stage_info.barrier)")
        dsl_clc.issue_try_cancel(self.slots, stage_idx, barrier, multicast=self.multicast)

    def read(self, stage_idx: Any) -> Any:
        """The work index of the answer in stage ``stage_idx`` (``num_tiles`` when none)."""
        index, cancelled = dsl_clc.read_response(self.slots, stage_idx)
        total = dsl_tiles.TileRaster.of(self.params).num_tiles
        return dsl_tiles.select_int(cancelled, index, total)

    def read_tile(self, stage_idx: Any) -> Any:
        """The ``WorkTileInfo`` of the answer in stage ``stage_idx``; the loop moves to it."""
        self.last_read = self.read(stage_idx)
        return _tile_at(self.params, self.last_read)


def _tile_at(params: Any, index: Any) -> Any:
    """The work tile (coordinate, validity) of linear work index ``index`` of ``params``.

    A dynamic queue's read written the reference's way (``get_and_advance_work_tile``)
    returns this, as the reference's does, where TS's ``read_next_tile`` returns the index.
    Invalid past the last tile, as the loop's own tile is.
    """
    return dsl_tiles.scheduler_tile(
        dsl_tiles.scheduler_at(dsl_tiles.static_scheduler(params), index)
    )


def clc_raster(params: Any) -> Any:
    """``params`` as a :class:`~ts_codegen.TileRaster` (CUTLASS CLC parameters are read)."""
    if isinstance(params, dsl_tiles.TileRaster) or hasattr(params, "problem_layout_ncluster_mnl"):
        return params
    try:
        shape = tuple(params.problem_shape_ntile_mnl)
        cluster = tuple(params.cluster_shape_mn)
        swizzle = int(params.swizzle_size)
        along_m = bool(getattr(params, "raster_along_m", getattr(params, "_raster_along_m", True)))
    except AttributeError as err:
        raise TypeError(
            f"tile scheduler parameters {params!r} are neither a ts_codegen.TileRaster nor "
            "CUTLASS tile scheduler parameters"
        ) from err
    return dsl_tiles.TileRaster(shape, (*cluster, 1), swizzle, along_m)
