"""Thin adapters for persistent kernels: while loops, CUTLASS tile schedulers, tile counters.

Like :mod:`ts_codegen.dsl` (whose flattening helpers it shares) this module runs at kernel trace
time and is one of the two ts-codegen modules that import ``cutlass``. It wraps:

* ``scf.while`` with explicit carried values (the persistent loop runs while the current work
  tile is valid);
* ``cutlass.utils.StaticPersistentTileScheduler`` (rasterization along M or N, swizzle,
  clusters): the static scheduler is used as is, and the atomic dynamic scheduler reuses its
  linear-index -> tile mapping by building a scheduler positioned at a fetched index;
* a global tile counter pair ``(next, done)`` bumped with GPU-scope atomics, and an SMEM slot
  per queue stage that carries a fetched tile index from the fetching warp to the other tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import cutlass
import cutlass.cute as cute
import cutlass.utils as cutils
from cutlass._mlir import ir as _ir
from cutlass._mlir.dialects import scf as _scf

from ts_codegen.dsl import _D, Boolean, _flatten, _unflatten, if_then, yield_out

ir: Any = _ir
scf: Any = _scf
Int32: Any = cutlass.Int32

__all__ = [
    "block_index",
    "broadcast_lane0",
    "counter_fetch",
    "counter_finish",
    "lane_index",
    "min_int",
    "num_tiles",
    "scheduler_advance",
    "scheduler_at",
    "scheduler_linear_index",
    "scheduler_num_ctas",
    "scheduler_tile",
    "slot_read",
    "slot_write",
    "smem_slots",
    "static_scheduler",
    "tile_coord",
    "tile_valid",
    "when",
    "while_loop",
]


def while_loop(
    carried: Sequence[Any],
    cond: Callable[[list[Any]], Any],
    body: Callable[[list[Any]], Sequence[Any]],
) -> list[Any]:
    """Emit ``scf.while`` carrying ``carried``: ``while cond(vals): vals = body(vals)``.

    ``cond`` and ``body`` are called once each at trace time with the rebuilt carried objects
    (pipeline states, schedulers, work tiles, DSL numerics). Returns the values after the loop.
    """
    args = list(carried)
    flat, sizes = _flatten(args)
    types = [v.type for v in flat]
    op = scf.WhileOp(types, flat)
    before = op.before.blocks.append(*types)
    after = op.after.blocks.append(*types)
    with ir.InsertionPoint(before):
        c = cond(_unflatten(args, sizes, list(before.arguments)))
        scf.ConditionOp(Boolean(c).ir_value(), list(before.arguments))
    with ir.InsertionPoint(after):
        new = body(_unflatten(args, sizes, list(after.arguments)))
        yield_out(_flatten(list(new))[0])
    return _unflatten(args, sizes, list(op.results))


# ---------------------------------------------------------------------------------------------
# schedulers
# ---------------------------------------------------------------------------------------------


def block_index() -> tuple[Any, Any, Any]:
    """``blockIdx`` as three DSL integers."""
    x, y, z = cute.arch.block_idx()
    return x, y, z


def block_work_tile() -> Any:
    """``WorkTileInfo(block_idx, True)``: the work tile of a task outside a work-tile loop."""
    return cutils.WorkTileInfo(cute.arch.block_idx(), cutlass.Boolean(True))


def static_scheduler(params: Any) -> Any:
    """A ``StaticPersistentTileScheduler`` for this CTA (first tile: the CTA's cluster index)."""
    return cutils.StaticPersistentTileScheduler.create(
        params, cute.arch.block_idx(), cute.arch.grid_dim()
    )


def scheduler_tile(sched: Any) -> Any:
    """The scheduler's current ``WorkTileInfo`` (coordinates and validity)."""
    return sched.get_current_work()


def scheduler_advance(sched: Any) -> Any:
    """The scheduler one step on (by the number of persistent clusters)."""
    sched.advance_to_next_work()
    return sched


def scheduler_num_ctas(sched: Any) -> Any:
    """How many persistent clusters the grid holds (the static stride)."""
    return sched.num_persistent_clusters


def scheduler_linear_index(sched: Any) -> Any:
    """The linear index of the scheduler's current work."""
    return sched._current_work_linear_idx


def scheduler_at(sched: Any, linear_idx: Any) -> Any:
    """A scheduler like ``sched`` whose current work is ``linear_idx`` (for fetched tiles)."""
    return cutils.StaticPersistentTileScheduler(
        sched.params,
        sched.num_persistent_clusters,
        Int32(linear_idx),
        sched.cta_id_in_cluster,
        sched._num_tiles_executed + Int32(1),
    )


def tile_valid(tile: Any) -> Any:
    """The work tile's validity flag."""
    return tile.is_valid_tile


def tile_coord(tile: Any) -> Any:
    """The work tile's ``(m, n, l)`` coordinate."""
    return tile.tile_idx


def min_int(a: Any, b: Any) -> Any:
    """``min(a, b)`` of two DSL integers."""
    return _D.min(Int32(a), Int32(b))


def when(cond: Any, then: Callable[[], None]) -> None:
    """Emit ``if cond: then()`` (no carried values)."""

    def region(carried: list[Any]) -> list[Any]:
        then()
        return carried

    if_then(cond, [], region)


def num_tiles(params: Any) -> Any:
    """How many cluster tiles the scheduler parameters describe."""
    return cute.size(params.problem_layout_ncluster_mnl)


# ---------------------------------------------------------------------------------------------
# the atomic tile counter and the SMEM hand-off slots
# ---------------------------------------------------------------------------------------------


def lane_index() -> Any:
    """The lane of the calling thread."""
    return cute.arch.lane_idx()


def broadcast_lane0(value: Any) -> Any:
    """``value`` of lane 0, in every lane of the warp."""
    return cute.arch.shuffle_sync(Int32(value), 0)


def counter_fetch(counters: Any) -> Any:
    """Lane 0 claims the next tile: ``atomicAdd(&counters[0], 1)``; every lane gets the result."""

    def claim(carried: list[Any]) -> list[Any]:
        del carried
        old = cute.arch.atomic_add(counters.iterator, Int32(1), sem="relaxed", scope="gpu")
        return [Int32(old)]

    got = if_then(lane_index() == 0, [Int32(0)], claim)[0]
    return broadcast_lane0(got)


def counter_finish(counters: Any, num_ctas: Any) -> None:
    """Lane 0: count this CTA out; the last CTA resets both counters for the next launch.

    Every CTA calls this once, after its last fetch. The ``acq_rel`` increment orders the CTA's
    fetches before its count; the CTA that sees ``num_ctas - 1`` therefore runs after every fetch
    of the launch, and may zero the counters without a host memset.
    """

    def count(carried: list[Any]) -> list[Any]:
        done = cute.arch.atomic_add(counters.iterator + 1, Int32(1), sem="acq_rel", scope="gpu")

        def reset(c: list[Any]) -> list[Any]:
            cute.arch.atomic_exch(counters.iterator, Int32(0), sem="relaxed", scope="gpu")
            cute.arch.atomic_exch(counters.iterator + 1, Int32(0), sem="relaxed", scope="gpu")
            return c

        if_then(Int32(done) == num_ctas - 1, [], reset)
        return carried

    if_then(lane_index() == 0, [], count)


def smem_slots(allocator: Any, count: int) -> Any:
    """``count`` Int32 slots in SMEM (one per queue stage)."""
    ptr = allocator.allocate_array(Int32, num_elems=count, byte_alignment=4)
    return cute.make_tensor(ptr, cute.make_layout(count))


def slot_write(slots: Any, index: Any, value: Any) -> None:
    """Lane 0 stores ``value`` into ``slots[index]``."""

    def store(carried: list[Any]) -> list[Any]:
        slots[index] = Int32(value)
        return carried

    if_then(lane_index() == 0, [], store)


def slot_read(slots: Any, index: Any) -> Any:
    """``slots[index]`` (every thread reads it)."""
    return Int32(slots[index])
