"""Thin adapters for persistent kernels: while loops, the tile raster, tile counters.

Part of the DSL adapter :mod:`ts_codegen.dsl` (whose flattening helpers it shares), this module
runs at kernel trace time. It provides:

* ``scf.while`` with explicit carried values (the persistent loop runs while the current work
  tile is valid);
* :class:`TileRaster`, the kernel-side form of :mod:`ts_codegen.tiles_raster` (rasterization
  along M or N, swizzle, clusters; built on the host and passed to the kernel), and
  :class:`PersistentTiles`, a CTA's position in the static persistent schedule (the atomic
  dynamic scheduler reuses its index -> tile mapping at a fetched index);
* a global tile counter pair ``(next, done)`` bumped with GPU-scope atomics, and an SMEM slot
  per queue stage that carries a fetched tile index from the fetching warp to the other tasks.

CUTLASS's ``PersistentTileSchedulerParams`` (the reference's tutorials pass it to
``create_static_persistent_tile_scheduler_params``) is still accepted: :meth:`TileRaster.of`
reads its fields and never builds a CUTLASS scheduler object (those are deprecated in 4.8).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass._mlir import ir as _ir
from cutlass._mlir.dialects import arith as _arith
from cutlass._mlir.dialects import scf as _scf

from ts_codegen.dsl import (
    _D,
    Boolean,
    _flatten,
    _unflatten,
    extract_mlir_values,
    if_then,
    new_from_mlir_values,
    yield_out,
)
from ts_codegen.tiles_raster import (
    RasterShape,
    StreamPiece,
    raster_coord,
    raster_shape,
    stream_k_piece,
    stream_k_shape,
    tail_split_item,
    tail_split_shape,
)

ir: Any = _ir
scf: Any = _scf
arith: Any = _arith
Int32: Any = cutlass.Int32
FastDivmod: Any = cute.FastDivmodDivisor

__all__ = [
    "PersistentTiles",
    "TileRaster",
    "WorkTile",
    "block_index",
    "block_work_tile",
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
    "select_int",
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
# the tile raster and the static persistent schedule
# ---------------------------------------------------------------------------------------------


def _is_static(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _divisor(count: Any, swizzle: int) -> Any:
    """A divisor for :func:`_divmod`, built once where the raster is (on the host).

    A static count stays an int (the compiler divides by a constant). A dynamic one becomes a
    fast divmod divisor without a swizzle; with one, the kernel divides (fewer PTX
    instructions than fast divmod there, where the index is first split by the swizzle).
    """
    if _is_static(count) or swizzle > 1:
        return count
    # An empty problem (M or N = 0) has a count of 0, and building a divisor of 0 divides by
    # zero on the host (SIGFPE); the raster then has no tiles, so the divisor is never used.
    return cute.fast_divmod_create_divisor_v2(_D.max(Int32(count), Int32(1)))


def _select(cond: Any, a: Any, b: Any) -> Any:
    """``a if cond else b``.

    In Python for a Python condition (a raster of static counts), else a branch-free select in
    the kernel.
    """
    if isinstance(cond, bool):
        return a if cond else b
    return select_int(cond, a, b)


def _divmod(a: Any, b: Any) -> tuple[Any, Any]:
    """``divmod`` of a non-negative index by a raster divisor, in the kernel.

    Fast divmod for a fast divmod divisor; otherwise unsigned division (``arith.divui`` /
    ``remui``): work indices and tile counts are never negative, so neither Python's floor
    fix-ups nor signed division's are needed.
    """
    if _is_static(a) and _is_static(b):
        return (a // b, a % b)
    if isinstance(b, FastDivmod):
        q, r = divmod(Int32(a), b)
        return Int32(q), Int32(r)
    x, y = Int32(a).ir_value(), Int32(b).ir_value()
    return Int32(arith.divui(x, y)), Int32(arith.remui(x, y))


class TileRaster:
    """Which cluster tile each linear work index is (:mod:`ts_codegen.tiles_raster`, in kernels).

    Build it on the host (inside the ``@cute.jit`` function) and pass it to the kernel, or to
    ``TileSchedulerConfig.create_static_persistent_tile_scheduler_params``. The divisors the
    kernel needs are computed on the host: the kernel only divides.

    Args:
        problem_shape_ntile_mnl: Tiles along M, N and L (Python or DSL integers).
        cluster_shape_mnk: The cluster shape in CTAs, ``(cm, cn, 1)``.
        swizzle_size: Swizzle group size in cluster tiles (1: none); see
            :mod:`ts_codegen.tiles_raster`.
        raster_along_m: Walk along M first (True) or along N.
        tail_split: K chunks per tile of the last, ragged round (1: off). The work indices
            are then items: the first ``T - r`` tiles whole, the last ``r = T mod workers``
            in ``tail_split`` chunks each (:func:`ts_codegen.tiles_raster.tail_split_item`;
            the L coordinate says which, :func:`ts_codegen.tiles_raster.tail_split_parts`).
            One batch. With clusters the tiles are cluster tiles: every CTA of a cluster runs
            the same item on its own tile (the same K chunk, so multicast loads still match).
        workers: With ``tail_split`` or ``stream_k``: the persistent clusters ``P`` the grid
            holds (static).
        stream_k: A stream-K tail: the last ``r = T mod workers`` tiles' K blocks shared out
            evenly, two items per worker (:func:`ts_codegen.tiles_raster.stream_k_piece`;
            the L coordinate is 0 for a whole tile, else ``1 +`` the item's place in the
            tail). Empty pieces are invalid items. One batch; clusters as ``tail_split``.
        k_blocks: With ``stream_k``: a tile's K blocks (a DSL or Python integer).

    Attributes:
        num_tiles: How many work indices there are (cluster tiles, swizzle padding included;
            with a tail split or stream-K, the items).
        tail_first: With a tail split or stream-K, the first tail tile ``T - r`` (else None).
        ragged: With stream-K, the tail's tiles ``r`` (else None).
        k_blocks: With stream-K, a tile's K blocks (else None).
    """

    def __init__(
        self,
        problem_shape_ntile_mnl: Sequence[Any],
        cluster_shape_mnk: Sequence[int] = (1, 1, 1),
        swizzle_size: int = 1,
        raster_along_m: bool = True,
        *,
        tail_split: int = 1,
        workers: int = 0,
        stream_k: bool = False,
        k_blocks: Any = None,
    ) -> None:
        if len(cluster_shape_mnk) > 2 and cluster_shape_mnk[2] != 1:
            raise ValueError(f"the cluster's K extent must be 1, got {cluster_shape_mnk[2]}")
        tiles = tuple(problem_shape_ntile_mnl)
        if len(tiles) != 3:
            raise ValueError(f"problem_shape_ntile_mnl must be (m, n, l), got {tiles!r}")
        cluster = (int(cluster_shape_mnk[0]), int(cluster_shape_mnk[1]))
        shape = raster_shape((tiles[0], tiles[1], tiles[2]), cluster, swizzle_size, raster_along_m)
        self.problem_shape_ntile_mnl = tiles
        self.cluster_shape_mn = cluster
        self.swizzle_size = swizzle_size
        self.raster_along_m = raster_along_m
        self.num_tiles: Any = shape.num_tiles()
        self.tail_split = tail_split
        self.stream_k = stream_k
        self.workers = workers
        self.tail_first: Any = None
        self.ragged: Any = None
        self.k_blocks: Any = None
        if tail_split > 1 or stream_k:
            # The L coordinate carries the chunk, so there is no room for a batch.
            what = f"tail_split={tail_split}" if tail_split > 1 else "stream_k"
            if not (_is_static(tiles[2]) and tiles[2] == 1) or workers < 1:
                raise ValueError(
                    f"{what} needs one batch and workers >= 1 "
                    f"(got l {tiles[2]!r}, workers {workers})"
                )
            if tail_split > 1 and stream_k:
                raise ValueError("a tail split and stream-K are two ways to cut the tail: pick one")
        if tail_split > 1:
            self.tail_first, self.num_tiles = tail_split_shape(self.num_tiles, workers, tail_split)
        elif stream_k:
            if k_blocks is None:
                raise ValueError("stream_k needs k_blocks, a tile's K block count")
            self.k_blocks = k_blocks
            self.tail_first, self.ragged, self.num_tiles = stream_k_shape(self.num_tiles, workers)
        self._shape = RasterShape(
            _divisor(shape.major, swizzle_size),
            _divisor(shape.groups, swizzle_size),
            shape.tiles_l,
            swizzle_size,
            raster_along_m,
        )

    @staticmethod
    def of(params: Any) -> TileRaster:
        """``params`` as a raster (a :class:`TileRaster`, or CUTLASS's scheduler parameters).

        CUTLASS's ``PersistentTileSchedulerParams`` (the reference's API) is read field by
        field; no CUTLASS scheduler object is built. Call it in the kernel: the raster's
        values then live in the kernel's region.
        """
        if isinstance(params, TileRaster):
            return params
        try:
            layout = params.problem_layout_ncluster_mnl
            cluster = tuple(params.cluster_shape_mn)
            swizzle = int(params.swizzle_size)
            along_m = bool(params.raster_along_m)
        except AttributeError as err:
            raise TypeError(
                f"tile scheduler parameters {params!r} are neither a ts_codegen.TileRaster nor "
                "CUTLASS PersistentTileSchedulerParams"
            ) from err
        raster = object.__new__(TileRaster)
        raster.problem_shape_ntile_mnl = tuple(params.problem_shape_ntile_mnl)
        raster.cluster_shape_mn = (int(cluster[0]), int(cluster[1]))
        raster.swizzle_size = swizzle
        raster.raster_along_m = along_m
        raster.num_tiles = cute.size(layout)
        raster.tail_split, raster.tail_first = 1, None
        raster.stream_k, raster.workers, raster.ragged, raster.k_blocks = False, 0, None, None
        # The cluster grid as CUTLASS laid it out: (M, N, L) clusters; with a swizzle the
        # swizzled mode is (swizzle, groups). Without one it carries the two divisors.
        shape = layout.shape
        if swizzle == 1:
            major = getattr(params, "cluster_shape_major_fdd", None)
            groups = getattr(params, "cluster_shape_minor_fdd", None)
            m_count, n_count = shape[0], shape[1]
            if major is None or groups is None:
                major, groups = (m_count, n_count) if along_m else (n_count, m_count)
        elif along_m:
            major, groups = shape[0], shape[1][1]
        else:
            major, groups = shape[1], shape[0][1]
        raster._shape = RasterShape(major, groups, shape[2], swizzle, along_m)
        return raster

    def cluster_coord(self, index: Any) -> tuple[Any, Any, Any]:
        """The ``(m, n, l)`` cluster-tile coordinate of work index ``index`` (kernel side).

        With a tail split: the item's tile ``(m, n)`` and its L coordinate (0: the whole
        tile; ``tail_split * (1 + j) + c``: chunk ``c`` of tail tile ``j``).
        """
        single = _is_static(self._shape.tiles_l) and self._shape.tiles_l == 1
        if self.stream_k:
            tail = index >= self.tail_first
            l_coord = _select(tail, index - self.tail_first + 1, 0)
            tile = _select(tail, self.tail_first + self.piece(l_coord).tile, index)
        elif self.tail_split > 1:
            tile, l_coord = tail_split_item(
                index, self.tail_first, self.tail_split, _divmod, _select
            )
        else:
            return raster_coord(index, self._shape, _divmod, single_batch=single)
        m, n, _ = raster_coord(tile, self._shape, _divmod, single_batch=True)
        return m, n, l_coord

    def valid(self, index: Any) -> Any:
        """Whether work index ``index`` has work.

        It is below ``num_tiles`` (and, in a stream-K tail, its piece is not empty).
        """
        below = index < self.num_tiles
        if not self.stream_k:
            return below
        whole = index < self.tail_first
        return below & (whole | (self.piece(index - self.tail_first + 1).count > 0))

    def piece(self, l_coord: Any) -> StreamPiece:
        """The stream-K piece of a tail item's L coordinate ``l >= 1``.

        Kernel or host side (:func:`ts_codegen.tiles_raster.stream_k_piece`); meaningless
        for ``l = 0``.
        """
        if not self.stream_k:
            raise ValueError("piece() reads a stream-K tail's items; this raster has none")
        return stream_k_piece(l_coord, self.ragged, self.k_blocks, self.workers, _divmod, _select)

    def get_grid_shape(self, max_active_clusters: Any) -> tuple[Any, Any, Any]:
        """The persistent launch grid ``(cm, cn, clusters)`` (host side).

        One cluster per cluster tile, at most ``max_active_clusters`` of them and at least one.
        """
        cm, cn = self.cluster_shape_mn
        per_wave = max_active_clusters * (cm * cn)
        total = self.num_tiles * (cm * cn)
        # At least one cluster: CUDA refuses a grid of 0, and an empty problem (no tiles) is
        # then one cluster that finds no work.
        if _is_static(total) and _is_static(per_wave):
            ctas = max(min(total, per_wave), cm * cn)
        else:
            ctas = _D.max(_D.min(Int32(total), Int32(per_wave)), Int32(cm * cn))
        return (cm, cn, ctas // (cm * cn))

    def _parts(self) -> list[Any]:
        s = self._shape
        tail = [] if self.tail_first is None else [self.tail_first]
        if self.stream_k:
            tail += [self.ragged, self.k_blocks]
        return [self.problem_shape_ntile_mnl, self.num_tiles, s.major, s.groups, s.tiles_l, *tail]

    def __extract_mlir_values__(self) -> list[Any]:
        flat: list[Any] = []
        sizes: list[int] = []
        for part in self._parts():
            values = list(extract_mlir_values(part))
            flat.extend(values)
            sizes.append(len(values))
        self._sizes = sizes
        return flat

    def __new_from_mlir_values__(self, values: list[Any]) -> TileRaster:
        rebuilt: list[Any] = []
        pos = 0
        for part, n in zip(self._parts(), self._sizes, strict=True):
            rebuilt.append(new_from_mlir_values(part, list(values[pos : pos + n])))
            pos += n
        shape_mnl, num_tiles, major, groups, tiles_l, *tail = rebuilt
        raster = object.__new__(TileRaster)
        raster.problem_shape_ntile_mnl = tuple(shape_mnl)
        raster.cluster_shape_mn = self.cluster_shape_mn
        raster.swizzle_size = self.swizzle_size
        raster.raster_along_m = self.raster_along_m
        raster.num_tiles = num_tiles
        raster.tail_split = self.tail_split
        raster.tail_first = tail[0] if tail else None
        raster.stream_k, raster.workers = self.stream_k, self.workers
        raster.ragged, raster.k_blocks = (tail[1], tail[2]) if self.stream_k else (None, None)
        raster._shape = RasterShape(major, groups, tiles_l, self.swizzle_size, self.raster_along_m)
        return raster


class WorkTile:
    """A work tile: its ``(m, n, l)`` tile coordinate and whether it exists.

    Attributes:
        tile_idx: The tile coordinate (DSL integers).
        is_valid_tile: False past the last tile (the persistent loop ends there).
    """

    def __init__(self, tile_idx: Sequence[Any], is_valid_tile: Any) -> None:
        self.tile_idx = tuple(tile_idx)
        self.is_valid_tile = cutlass.Boolean(is_valid_tile)

    def update_from(self, other: Any) -> None:
        """Take ``other``'s coordinate and validity (the reference's ``WorkTileInfo`` method).

        Any object with ``tile_idx`` and ``is_valid_tile`` will do (CUTLASS's work tiles too).
        """
        self.tile_idx = tuple(other.tile_idx)
        self.is_valid_tile = cutlass.Boolean(other.is_valid_tile)

    def __extract_mlir_values__(self) -> list[Any]:
        return [*extract_mlir_values(self.tile_idx), *extract_mlir_values(self.is_valid_tile)]

    def __new_from_mlir_values__(self, values: list[Any]) -> WorkTile:
        n = len(values) - 1
        return WorkTile(
            new_from_mlir_values(self.tile_idx, list(values[:n])),
            new_from_mlir_values(self.is_valid_tile, list(values[n:])),
        )


class PersistentTiles:
    """A CTA's position in a static persistent schedule over a :class:`TileRaster`.

    Cluster ``c`` of ``G`` persistent clusters visits the work indices ``c, c + G, c + 2G, ...``;
    :meth:`at` moves to any index (a tile claimed from an atomic counter).

    Attributes:
        raster: The raster.
        linear: The current work index.
        num_ctas: ``G``, the persistent clusters of the grid.
        cta_in_cluster: This CTA's ``(m, n, 0)`` position inside its cluster.
    """

    def __init__(
        self, raster: TileRaster, linear: Any, num_ctas: Any, cta_in_cluster: Sequence[Any]
    ) -> None:
        self.raster = raster
        self.linear = linear
        self.num_ctas = num_ctas
        self.cta_in_cluster = tuple(cta_in_cluster)

    @staticmethod
    def create(params: Any) -> PersistentTiles:
        """This CTA's schedule: its first work index is its cluster's index in the grid."""
        raster = TileRaster.of(params)
        bidx, bidy, bidz = cute.arch.block_idx()
        cm, cn = raster.cluster_shape_mn
        num_ctas = cute.size(cute.arch.grid_dim()) // (cm * cn)
        cta = (Int32(bidx % cm), Int32(bidy % cn), Int32(0))
        return PersistentTiles(raster, Int32(bidz), num_ctas, cta)

    def tile(self) -> WorkTile:
        """The current work tile (this CTA's tile of the current cluster tile)."""
        valid = self.raster.valid(self.linear)
        cluster = self.raster.cluster_coord(self.linear)
        cm, cn = self.raster.cluster_shape_mn
        coord = tuple(
            cute.arch.make_warp_uniform(Int32(c) * Int32(k) + Int32(o))
            for c, o, k in zip(cluster, self.cta_in_cluster, (cm, cn, 1), strict=True)
        )
        return WorkTile(coord, cute.arch.make_warp_uniform(valid))

    def advance(self) -> PersistentTiles:
        """Move ``G`` work indices on (in place; returns ``self``)."""
        self.linear = self.linear + Int32(self.num_ctas)
        return self

    def at(self, linear: Any) -> PersistentTiles:
        """The same schedule positioned at work index ``linear``."""
        return PersistentTiles(self.raster, Int32(linear), self.num_ctas, self.cta_in_cluster)

    def __extract_mlir_values__(self) -> list[Any]:
        return [
            *extract_mlir_values(self.num_ctas),
            *extract_mlir_values(self.linear),
            *extract_mlir_values(self.cta_in_cluster),
        ]

    def __new_from_mlir_values__(self, values: list[Any]) -> PersistentTiles:
        n = len(extract_mlir_values(self.num_ctas))
        return PersistentTiles(
            self.raster,
            new_from_mlir_values(self.linear, list(values[n : n + 1])),
            new_from_mlir_values(self.num_ctas, list(values[:n])),
            new_from_mlir_values(self.cta_in_cluster, list(values[n + 1 :])),
        )


# ---------------------------------------------------------------------------------------------
# schedulers (the lowering's view)
# ---------------------------------------------------------------------------------------------


def block_index() -> tuple[Any, Any, Any]:
    """``blockIdx`` as three DSL integers."""
    x, y, z = cute.arch.block_idx()
    return x, y, z


def block_work_tile() -> Any:
    """``WorkTile(block_idx, True)``: the work tile of a task outside a work-tile loop."""
    return WorkTile(cute.arch.block_idx(), cutlass.Boolean(True))


def static_scheduler(params: Any) -> PersistentTiles:
    """This CTA's static persistent schedule (first tile: the CTA's cluster index)."""
    return PersistentTiles.create(params)


def scheduler_tile(sched: PersistentTiles) -> WorkTile:
    """The schedule's current work tile (coordinates and validity)."""
    return sched.tile()


def scheduler_advance(sched: PersistentTiles) -> PersistentTiles:
    """The schedule one step on (by the number of persistent clusters)."""
    return sched.advance()


def scheduler_next(sched: PersistentTiles) -> PersistentTiles:
    """The schedule one step on as a new schedule (``sched`` stays where it is)."""
    return sched.at(sched.linear + Int32(sched.num_ctas))


def scheduler_num_ctas(sched: PersistentTiles) -> Any:
    """How many persistent clusters the grid holds (the static stride)."""
    return sched.num_ctas


def scheduler_linear_index(sched: PersistentTiles) -> Any:
    """The linear index of the schedule's current work."""
    return sched.linear


def scheduler_at(sched: PersistentTiles, linear_idx: Any) -> PersistentTiles:
    """A schedule like ``sched`` whose current work is ``linear_idx`` (for fetched tiles)."""
    return sched.at(linear_idx)


def tile_valid(tile: Any) -> Any:
    """The work tile's validity flag."""
    return tile.is_valid_tile


def tile_coord(tile: Any) -> Any:
    """The work tile's ``(m, n, l)`` coordinate."""
    return tile.tile_idx


def min_int(a: Any, b: Any) -> Any:
    """``min(a, b)`` of two DSL integers."""
    return _D.min(Int32(a), Int32(b))


def select_int(cond: Any, a: Any, b: Any) -> Any:
    """``a if cond else b`` of two DSL integers, without a branch."""
    return Int32(arith.select(Boolean(cond).ir_value(), Int32(a).ir_value(), Int32(b).ir_value()))


def when(cond: Any, then: Callable[[], None]) -> None:
    """Emit ``if cond: then()`` (no carried values)."""

    def region(carried: list[Any]) -> list[Any]:
        then()
        return carried

    if_then(cond, [], region)


def num_tiles(sched: PersistentTiles) -> Any:
    """How many work indices (cluster tiles) the schedule's raster has."""
    return sched.raster.num_tiles


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
