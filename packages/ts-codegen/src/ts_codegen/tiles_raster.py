"""Persistent tile rasterization: the order in which a persistent kernel visits its output tiles.

A persistent kernel numbers its work linearly: CTA (cluster) ``c`` of ``G`` runs the work
indices ``c, c + G, c + 2G, ...``, or the indices an atomic counter hands out. This module maps a
linear work index to the ``(m, n, l)`` coordinate of a cluster tile. It is plain arithmetic, the
same code for Python integers (host side, tests) and for CuTe DSL values (kernel side, through
:mod:`ts_codegen.dsl.tiles`, which passes its own ``divmod``).

The order, the usual one of persistent Hopper GEMMs:

* The tile grid ``tiles_m x tiles_n x tiles_l`` is cut into clusters of ``cm x cn`` tiles:
  ``ceil(tiles_m / cm) x ceil(tiles_n / cn) x tiles_l`` cluster tiles.
* *Raster along M* (the default): consecutive indices walk down a column of cluster tiles (M
  varies fastest), then move one column to the right. *Along N*: they walk along a row.
* *Swizzle* ``s`` (1, 2, 4, 8, ...): the other dimension is cut into groups of ``s`` cluster
  columns (rows, when rastering along N). Inside a group, consecutive indices visit the ``s``
  tiles of one row of the group, then the next row, down the whole raster dimension; then the
  next group follows. Neighbouring CTAs thus share both A rows and B columns in L2. The swizzled
  dimension is padded up to a multiple of ``s``: the padding's indices are valid work indices
  whose coordinates lie past the problem (kernels clip them), so ``s`` should divide it.
* ``l`` (the batch) varies slowest.

With ``s == 1`` and rastering along M this is the column-major order ``m + M * (n + N * l)``.

Example: 4 x 4 cluster tiles, swizzle 2, along M visits (m, n)::

    (0,0) (0,1) (1,0) (1,1) (2,0) (2,1) (3,0) (3,1) (0,2) (0,3) (1,2) (1,3) ...

*Tail split* (:func:`tail_split_shape`, :func:`tail_split_item`): ``T`` tile indices on ``P``
persistent CTAs run in ``ceil(T / P)`` rounds, the last one ragged when ``r = T mod P > 0``.
The work items are then the first ``T - r`` tiles whole (a multiple of ``P``: every CTA gets as
many), followed by the last ``r`` tiles cut into ``s`` K chunks each, tail tile ``j``'s chunk
``c`` at item ``T - r + j * s + c``. An item's L coordinate says which: ``0`` for a whole tile,
``s * (1 + j) + c`` for a chunk (:func:`tail_split_parts` reads it back).

*Stream-K tail* (:func:`stream_k_shape`, :func:`stream_k_piece`): the last ``r`` tiles of
``k`` K blocks each are ``U = r k`` units shared out evenly: worker ``w`` of ``P`` takes units
``[floor(w U / P), floor((w + 1) U / P))`` (with ``U < P``: ``P = U``, the other workers idle),
at most ``k`` of them (``r < P``), so pieces of at most two tiles. A range inside one tile is
its *part 0*, item ``T - r + w``. A range across a tile boundary runs the next tile's start as
part 0 and the end of its first tile as *part 1*, item ``T - r + P + w``: the start (K block
0) first, so that every such worker reads the same K blocks as the others at the same time, as
the CTAs of a plain round do, and they share them in L2 (in unit order the tail's CTAs each
read other K blocks, and on long K the tail ran from HBM). Both are dealt to worker ``w``
(item ``i`` runs on CTA ``i mod P``). An empty part is an invalid item. The L coordinate is
``0`` for a whole tile and ``1 + i - (T - r)`` for item ``i`` of the tail. Tile ``j``'s pieces
come from workers ``floor(((j k + 1) P - 1) / U)`` to ``floor(((j + 1) k P - 1) / U)`` (the
worker of unit ``x`` is ``floor(((x + 1) P - 1) / U)``), consecutive: every worker's range is
non-empty.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

__all__ = [
    "RasterShape",
    "StreamPiece",
    "ceil_div",
    "raster_coord",
    "raster_order",
    "raster_shape",
    "stream_k_piece",
    "stream_k_shape",
    "tail_split_item",
    "tail_split_parts",
    "tail_split_shape",
]

DivMod = Callable[[Any, Any], tuple[Any, Any]]


def ceil_div(a: Any, b: int) -> Any:
    """``ceil(a / b)`` for a non-negative ``a`` (a Python or a DSL integer) and ``b >= 1``."""
    return a if b == 1 else (a + (b - 1)) // b


class RasterShape:
    """The cluster-tile grid as the raster walks it.

    Attributes:
        major: Cluster tiles along the raster dimension (M when rastering along M).
        groups: Swizzle groups across it: ``ceil(minor / swizzle)`` for ``minor`` cluster tiles
            along the other dimension.
        tiles_l: The batch count.
        swizzle: The swizzle group size ``s`` (1: no swizzle).
        along_m: True when the raster walks along M first.
    """

    __slots__ = ("along_m", "groups", "major", "swizzle", "tiles_l")

    def __init__(self, major: Any, groups: Any, tiles_l: Any, swizzle: int, along_m: bool) -> None:
        self.major = major
        self.groups = groups
        self.tiles_l = tiles_l
        self.swizzle = swizzle
        self.along_m = along_m

    def num_tiles(self) -> Any:
        """How many work indices the raster has (swizzle padding included)."""
        return self.major * (self.groups * self.swizzle) * self.tiles_l


def raster_shape(
    tiles_mnl: tuple[Any, Any, Any],
    cluster_mn: tuple[int, int] = (1, 1),
    swizzle: int = 1,
    along_m: bool = True,
) -> RasterShape:
    """The :class:`RasterShape` of a ``tiles_m x tiles_n x tiles_l`` tile grid.

    Args:
        tiles_mnl: Tiles along M, N and L (Python or DSL integers).
        cluster_mn: The cluster shape in tiles (static).
        swizzle: The swizzle group size, ``>= 1`` (static).
        along_m: Raster along M (True) or along N.

    Raises:
        ValueError: For a swizzle or cluster extent below 1.
    """
    if swizzle < 1:
        raise ValueError(f"swizzle must be >= 1, got {swizzle}")
    if min(cluster_mn) < 1:
        raise ValueError(f"cluster shape must be >= 1 in M and N, got {cluster_mn}")
    clusters_m = ceil_div(tiles_mnl[0], cluster_mn[0])
    clusters_n = ceil_div(tiles_mnl[1], cluster_mn[1])
    major, minor = (clusters_m, clusters_n) if along_m else (clusters_n, clusters_m)
    return RasterShape(major, ceil_div(minor, swizzle), tiles_mnl[2], swizzle, along_m)


def raster_coord(
    index: Any,
    shape: RasterShape,
    divmod_: DivMod = divmod,
    *,
    single_batch: bool = False,
) -> tuple[Any, Any, Any]:
    """The ``(m, n, l)`` cluster-tile coordinate of work index ``index``.

    Args:
        index: A work index in ``[0, shape.num_tiles())`` (Python or DSL integer).
        shape: The raster.
        divmod_: ``divmod`` for the values involved: the builtin for Python integers, a DSL
            one (fast divmod divisors, signed division) in a kernel. It is called with
            ``shape.major`` and ``shape.groups`` as divisors (and the static ``swizzle``).
        single_batch: True when ``tiles_l`` is known to be 1: saves the last division (``l`` is
            then 0 for every valid index).

    Returns:
        ``(m, n, l)`` in cluster tiles; meaningless for an index past the end.
    """
    s = shape.swizzle
    lane: Any = 0
    if s > 1:
        index, lane = divmod_(index, s)
    rest, along = divmod_(index, shape.major)
    if single_batch:
        group, batch = rest, 0
    else:
        batch, group = divmod_(rest, shape.groups)
    across = group * s + lane if s > 1 else group
    return (along, across, batch) if shape.along_m else (across, along, batch)


def raster_order(
    tiles_mnl: tuple[int, int, int],
    cluster_mn: tuple[int, int] = (1, 1),
    swizzle: int = 1,
    along_m: bool = True,
) -> Iterator[tuple[int, int, int]]:
    """Every work index's cluster-tile coordinate, in order (host side, Python integers)."""
    shape = raster_shape(tiles_mnl, cluster_mn, swizzle, along_m)
    for index in range(shape.num_tiles()):
        yield raster_coord(index, shape)


def _select(cond: Any, a: Any, b: Any) -> Any:
    return a if cond else b


def tail_split_shape(num_tiles: Any, workers: int, chunks: int) -> tuple[Any, Any]:
    """``(tail_first, num_items)`` of a tail split of ``num_tiles`` tile indices.

    Args:
        num_tiles: The raster's tile indices ``T`` (Python or DSL integer, ``>= 0``).
        workers: The persistent CTAs ``P`` the items are dealt to (static, ``>= 1``).
        chunks: K chunks ``s`` per tail tile (static, ``>= 1``).

    Returns:
        The first tail tile ``T - (T mod P)`` (also the number of whole-tile items) and the
        item count ``T - r + r * s``.
    """
    ragged = num_tiles % workers
    first = num_tiles - ragged
    return first, first + ragged * chunks


def tail_split_item(
    index: Any,
    tail_first: Any,
    chunks: int,
    divmod_: DivMod = divmod,
    select: Callable[[Any, Any, Any], Any] = _select,
) -> tuple[Any, Any]:
    """``(tile_index, l)`` of work item ``index`` of a tail split (see the module docstring).

    ``select(cond, a, b)`` is ``a if cond else b`` (a branch-free select in a kernel: both
    sides are computed, the tail side's division is meaningless for a whole tile and unused).
    """
    offset = index - tail_first
    tile, _ = divmod_(offset, chunks)
    tail = index >= tail_first
    return select(tail, tail_first + tile, index), select(tail, offset + chunks, 0)


def tail_split_parts(l_coord: Any, chunks: int) -> tuple[Any, Any, Any]:
    """``(whole, tail_tile, chunk)`` of an item's L coordinate (:func:`tail_split_item`).

    A whole tile (``l = 0``) reads as chunk 0 of tail tile ``-1``: its K blocks start at 0.
    """
    return l_coord < chunks, l_coord // chunks - 1, l_coord % chunks


def stream_k_shape(num_tiles: Any, workers: int) -> tuple[Any, Any, Any]:
    """``(tail_first, ragged, num_items)`` of a stream-K tail.

    For ``num_tiles`` tile indices on ``workers`` persistent CTAs: ``T - r``, ``r = T mod P``
    and ``T - r + 2 P`` (two items per worker, invalid where empty: none has work when
    ``r == 0``).
    """
    ragged = num_tiles % workers
    first = num_tiles - ragged
    return first, ragged, first + 2 * workers


class StreamPiece(NamedTuple):
    """One stream-K tail item: a piece of a tail tile's K blocks (:func:`stream_k_piece`).

    ``tile`` is the tail tile ``j`` (tile index ``T - r + j``); ``first_block`` and ``count``
    its K blocks (``count <= 0``: an empty part, an invalid item; with ``k == 0`` a tail tile
    is one piece of ``count`` 1); ``blocks`` the K blocks its loop runs (``count``, or 0 when
    ``k == 0``); ``worker`` the worker ``w`` that runs it; ``first_worker`` and
    ``last_worker`` the workers of the tile's first and last pieces (``last - first + 1``
    pieces; the piece of worker ``w`` is number ``w - first``).
    """

    tile: Any
    first_block: Any
    count: Any
    blocks: Any
    worker: Any
    first_worker: Any
    last_worker: Any


def stream_k_piece(
    l_coord: Any,
    ragged: Any,
    k_blocks: Any,
    workers: int,
    divmod_: DivMod = divmod,
    select: Callable[[Any, Any, Any], Any] = _select,
) -> StreamPiece:
    """The stream-K piece of the tail item with L coordinate ``l_coord >= 1``.

    See the module docstring: ``ragged`` tail tiles of ``k_blocks`` K blocks on ``workers``
    CTAs.

    ``divmod_`` and ``select`` as :func:`tail_split_item`'s (every value is non-negative where
    it is divided; branch-free: a whole tile's ``l = 0`` gives a meaningless piece). ``k == 0``
    is partitioned as ``k == 1``, so every tail tile still has one worker (which stores it).
    """
    k = select(k_blocks < 1, 1, k_blocks)
    units = ragged * k
    # Fewer units than workers: the first U workers take one each (every range non-empty, so
    # a tile's pieces come from consecutive workers).
    per = select(units < 1, 1, units)
    sharers = select(units < workers, per, workers)
    part, worker = divmod_(l_coord - 1, workers)
    start, _ = divmod_(worker * units, sharers)
    end, _ = divmod_((worker + 1) * units, sharers)
    home, _ = divmod_(start, k)  # the tile of the worker's first unit
    home_end = (home + 1) * k
    # A range across a tile boundary runs the next tile's start (K block 0) first, then the
    # end of its first tile: every such worker is at K block t, then at t + k - L, at once,
    # so the tail's CTAs read the same K slabs together and share them in L2 as a plain
    # round does (in unit order each would read its own, and the tail ran from HBM).
    across = end > home_end
    second = part > 0
    begin = select(second, start, select(across, home_end, start))
    stop = select(second, select(across, home_end, start), end)
    tile = select(second, home, select(across, home + 1, home))
    count = select(worker < sharers, stop - begin, 0)
    first_worker, _ = divmod_((tile * k + 1) * sharers - 1, per)
    last_worker, _ = divmod_((tile + 1) * k * sharers - 1, per)
    blocks = select(k_blocks < 1, 0, count)
    return StreamPiece(tile, begin - tile * k, count, blocks, worker, first_worker, last_worker)
