"""The persistent tile raster: linear work index -> (m, n, l) cluster tile.

The expected orders are written out by hand from the description in
:mod:`ts_codegen.tiles_raster` (the order of persistent Hopper GEMMs that the GEMM example was
tuned with): column-major without swizzle, groups of ``s`` columns walked row by row with one.
"""

from __future__ import annotations

import itertools

import pytest

from ts_codegen.tiles_raster import raster_coord, raster_order, raster_shape

# The smoke subset (the oldest Python runs only it): one kernel of each kind.
pytestmark = pytest.mark.smoke


def _mn(order: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    return [(m, n) for m, n, _ in order]


def test_no_swizzle_along_m_is_column_major() -> None:
    order = list(raster_order((3, 2, 2)))
    assert order == [(m, n, b) for b in range(2) for n in range(2) for m in range(3)]


def test_no_swizzle_along_n_is_row_major() -> None:
    order = list(raster_order((3, 2, 1), along_m=False))
    assert _mn(order) == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]


def test_swizzle_two_along_m() -> None:
    order = list(raster_order((4, 4, 1), swizzle=2))
    assert _mn(order) == [
        (0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (3, 1),
        (0, 2), (0, 3), (1, 2), (1, 3), (2, 2), (2, 3), (3, 2), (3, 3),
    ]  # fmt: skip


def test_swizzle_two_along_n() -> None:
    order = list(raster_order((4, 3, 1), swizzle=2, along_m=False))
    assert _mn(order) == [
        (0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2),
        (2, 0), (3, 0), (2, 1), (3, 1), (2, 2), (3, 2),
    ]  # fmt: skip


def test_swizzle_pads_the_swizzled_dimension() -> None:
    """3 columns in groups of 2: the fourth column is padding, past the problem."""
    shape = raster_shape((2, 3, 1), swizzle=2)
    assert shape.num_tiles() == 2 * 4
    order = list(raster_order((2, 3, 1), swizzle=2))
    assert _mn(order) == [(0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (0, 3), (1, 2), (1, 3)]


def test_clusters_count_cluster_tiles() -> None:
    """5 x 4 tiles in 2 x 1 clusters: 3 x 4 cluster tiles (the last cluster row is partial)."""
    shape = raster_shape((5, 4, 1), cluster_mn=(2, 1))
    assert (shape.major, shape.groups, shape.num_tiles()) == (3, 4, 12)
    assert list(raster_order((5, 4, 1), (2, 1)))[:4] == [(0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 1, 0)]


@pytest.mark.parametrize(
    ("tiles", "cluster", "swizzle", "along_m"),
    list(
        itertools.product(
            [(1, 1, 1), (5, 12, 2), (7, 9, 1), (16, 3, 3)],
            [(1, 1), (2, 1), (1, 2)],
            [1, 2, 4, 8],
            [True, False],
        )
    ),
)
def test_every_cluster_tile_once_batches_in_order(
    tiles: tuple[int, int, int], cluster: tuple[int, int], swizzle: int, along_m: bool
) -> None:
    order = list(raster_order(tiles, cluster, swizzle, along_m))
    cm = -(-tiles[0] // cluster[0])
    cn = -(-tiles[1] // cluster[1])
    inside = [c for c in order if c[0] < cm and c[1] < cn]
    assert sorted(inside) == sorted(itertools.product(range(cm), range(cn), range(tiles[2])))
    assert len(set(order)) == len(order)
    assert [b for _, _, b in order] == sorted(b for _, _, b in order)
    # Only the swizzled dimension is padded, by less than one group.
    across, along = (cn, cm) if along_m else (cm, cn)
    padded_across = -(-across // swizzle) * swizzle
    assert len(order) == along * padded_across * tiles[2]


def test_single_batch_shortcut_agrees_for_valid_indices() -> None:
    shape = raster_shape((6, 10, 1), swizzle=4)
    for i in range(shape.num_tiles()):
        assert raster_coord(i, shape, single_batch=True) == raster_coord(i, shape)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="swizzle"):
        raster_shape((4, 4, 1), swizzle=0)
    with pytest.raises(ValueError, match="cluster"):
        raster_shape((4, 4, 1), cluster_mn=(0, 1))


# -- stream-K tail ------------------------------------------------------------------------------
def _stream_deal(ragged: int, k: int, workers: int) -> list[list[tuple[int, int]]]:
    """Oracle: the tail's ``U = r k`` units handed out in order, worker ``w`` taking the next
    ``floor((w + 1) U / P) - floor(w U / P)`` (``P`` capped at ``U``); per worker, its
    ``(tile, block)`` units in order."""
    units = ragged * k
    sharers = min(workers, units)
    out: list[list[tuple[int, int]]] = [[] for _ in range(workers)]
    units_left = iter(range(units))
    for w in range(sharers):
        for _ in range((w + 1) * units // sharers - w * units // sharers):
            out[w].append(divmod(next(units_left), k))
    assert next(units_left, None) is None
    return out


@pytest.mark.parametrize(
    ("workers", "ragged", "k"),
    [
        (w, r, k)
        for w in (1, 3, 13, 66)
        for r in (1, 2, w // 2, w - 1)
        if 0 < r < w
        for k in (1, 2, 7, 64)
    ],
)
def test_stream_k_pieces_cover_the_tail_evenly(workers: int, ragged: int, k: int) -> None:
    from ts_codegen.tiles_raster import stream_k_piece, stream_k_shape

    assert stream_k_shape(5 * workers + ragged, workers) == (
        5 * workers,
        ragged,
        5 * workers + 2 * workers,
    )
    deal = _stream_deal(ragged, k, workers)
    for w in range(workers):
        mine: list[tuple[int, int]] = []
        pieces = [stream_k_piece(1 + part * workers + w, ragged, k, workers) for part in (0, 1)]
        for p in pieces:
            if p.count > 0:
                assert p.worker == w and p.first_worker <= w <= p.last_worker
                mine += [(p.tile, b) for b in range(p.first_block, p.first_block + p.count)]
        assert sorted(mine) == deal[w]
        assert len(mine) <= -(-ragged * k // workers)
        # part 0 never empty where part 1 is not (an empty item ends the worker's loop), and a
        # worker with two pieces starts the later tile (K block 0) before it ends the earlier
        assert pieces[0].count > 0 or pieces[1].count <= 0
        if pieces[1].count > 0:
            assert pieces[0].first_block == 0 and pieces[0].tile == pieces[1].tile + 1
            assert pieces[1].first_block + pieces[1].count == k
