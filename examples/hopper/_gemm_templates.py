"""The Hopper GEMM tuner's schedule templates: what ``gemm_tune.py`` may try for a shape.

Each template is a dict of ``_gemm_table.TUNED_FIELDS`` values (``_gemm_table.apply_fields``
puts one on a base ``GemmConfig``). ``TEMPLATES`` is the common family; ``STAGGER_TEMPLATES``
and ``DEFER_TEMPLATES`` are tried on promoted (FP8) problems only, ``STREAM_TEMPLATES`` only
where the last round leaves clusters idle long enough (``gemm_tune.candidates`` decides). The
comments next to each group say why it is there and what it measured. ``gemm_tune`` re-exports
all of them (``gemm_tune.TEMPLATES`` and so on).
"""

from __future__ import annotations

from typing import Any

from _gemm_config import PROMOTE_MAX_ACC, WARPGROUP, consumer_warpgroups

# The twelve sweep shapes: eight benchmark shapes and four LLM layers (bench/gemm_sweep.SHAPES).
SWEEP: tuple[tuple[int, int, int], ...] = (
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (4096, 4096, 14336),
    (8192, 1024, 8192),
    (1024, 8192, 8192),
    (16384, 16384, 1024),
    (3000, 5000, 4000),
    (8192, 28672, 8192),
    (8192, 8192, 28672),
    (128, 8192, 8192),
    (256, 28672, 8192),
)

_COOP = {"kernel": "cooperative", "scheduler": "static", "raster": "m", "swizzle": 8}
_PLAIN = {"stages": 0, "epi_n": 32, "epi_stages": 4}
TEMPLATES: tuple[dict[str, Any], ...] = tuple(
    {**_COOP, **_PLAIN, **t}
    for t in (
        # 128 x 256, two cooperative consumer warpgroups: the clusters, raster and swizzle
        {"tile_mn": (128, 256), "cluster_mn": (1, 1)},
        {"tile_mn": (128, 256), "cluster_mn": (2, 1)},
        {"tile_mn": (128, 256), "cluster_mn": (1, 2)},
        {"tile_mn": (128, 256), "cluster_mn": (2, 1), "raster": "n"},
        {"tile_mn": (128, 256), "cluster_mn": (2, 1), "swizzle": 1},
        {"tile_mn": (128, 256), "cluster_mn": (2, 1), "stages": 3},
        {"tile_mn": (128, 256), "cluster_mn": (2, 1), "epi_n": 64, "epi_stages": 2},
        {"tile_mn": (128, 256), "cluster_mn": (1, 1), "scheduler": "dynamic"},
        # 256 x 128: the same tile area and registers, each consumer warpgroup on two 64-row
        # blocks (two m64 x 128 WGMMAs per K step); B's row of tiles is half as long
        {"tile_mn": (256, 128), "cluster_mn": (1, 1)},
        {"tile_mn": (256, 128), "cluster_mn": (2, 1)},
        {"tile_mn": (256, 128), "cluster_mn": (1, 2)},
        {"tile_mn": (256, 128), "cluster_mn": (1, 1), "scheduler": "dynamic"},
        # 128 x 128: twice the tiles
        {"tile_mn": (128, 128), "cluster_mn": (1, 1)},
        {"tile_mn": (128, 128), "cluster_mn": (2, 1)},
        {"tile_mn": (128, 128), "cluster_mn": (1, 2)},
        {"tile_mn": (128, 128), "cluster_mn": (1, 1), "scheduler": "dynamic"},
        # 64-row tiles: one consumer warpgroup, or two taking tiles in turns
        {"tile_mn": (64, 256), "cluster_mn": (1, 1)},
        {"tile_mn": (64, 256), "cluster_mn": (1, 1), "kernel": "pingpong"},
        {"tile_mn": (64, 128), "cluster_mn": (1, 1), "kernel": "pingpong"},
        {"tile_mn": (64, 256), "cluster_mn": (1, 2)},
        # ping-pong, a warpgroup alone on a 128-row tile (two m64 WGMMAs per K step); the A/B
        # ring both read keeps 6 stages (128 x 128) / 4 (128 x 192) next to the epilogues'
        {"tile_mn": (128, 128), "cluster_mn": (1, 1), "kernel": "pingpong"},
        {"tile_mn": (128, 128), "cluster_mn": (2, 1), "kernel": "pingpong"},
        {"tile_mn": (128, 192), "cluster_mn": (1, 1), "kernel": "pingpong"},
        # the best ping-pongs in same-run A/Bs on 2048^3 - 8192^3 / 3000 x 5000
        {"tile_mn": (128, 128), "cluster_mn": (1, 2), "kernel": "pingpong"},
        {"tile_mn": (128, 192), "cluster_mn": (2, 1), "kernel": "pingpong"},
        # the same two, skipping the other warpgroup's stages in math order (a stage goes back
        # to the producer when the warpgroup computing on it is done; 0.4-6 % ahead of waiting)
        {"tile_mn": (128, 128), "cluster_mn": (1, 2), "kernel": "pingpong-skip"},
        {"tile_mn": (128, 192), "cluster_mn": (2, 1), "kernel": "pingpong-skip"},
        # split-K (few output tiles): a tile's K chunks are work items of their own
        {"tile_mn": (128, 128), "cluster_mn": (1, 1), "split_k": 2},
        {"tile_mn": (128, 128), "cluster_mn": (1, 1), "split_k": 4},
        {"tile_mn": (128, 256), "cluster_mn": (1, 1), "split_k": 2},
        {"tile_mn": (64, 256), "cluster_mn": (1, 1), "split_k": 2},
        # 128 x 192 (three epilogue buffers of its six sub-tiles): tile counts that fill the
        # last wave where 128 x 256 leaves it part idle (3000 x 5000: 648 tiles, 4.9 waves,
        # against 480, 3.6), and 3 x 43 = 129 split-K items on 128 x 8192
        {"tile_mn": (128, 192), "cluster_mn": (1, 1), "epi_stages": 3},
        {"tile_mn": (128, 192), "cluster_mn": (2, 1), "epi_stages": 3},
        {"tile_mn": (128, 192), "cluster_mn": (1, 2), "epi_stages": 3},
        {"tile_mn": (128, 192), "cluster_mn": (1, 1), "epi_stages": 3, "scheduler": "dynamic"},
        {"tile_mn": (128, 192), "cluster_mn": (1, 1), "epi_stages": 3, "split_k": 3},
        {"tile_mn": (128, 256), "cluster_mn": (1, 1), "split_k": 4},
        # 256-byte K blocks (two TMA boxes per operand and stage, half the stages): each load
        # reads twice as long a run of every row, for the shapes that stream B from HBM once
        {"tile_mn": (128, 128), "cluster_mn": (1, 1), "split_k": 2, "k_block_bytes": 256},
        {"tile_mn": (128, 128), "cluster_mn": (1, 1), "k_block_bytes": 256},
        {"tile_mn": (128, 256), "cluster_mn": (1, 1), "split_k": 4, "k_block_bytes": 256},
        # 64 x 128, one consumer warpgroup: M = 128 gives 2 x 64 tiles on N = 8192, one wave
        # without split-K's partial tiles; a 2 x 1 cluster multicasts each B stage to both
        # row tiles, so B still crosses from L2 once
        {"tile_mn": (64, 128), "cluster_mn": (2, 1)},
        {"tile_mn": (64, 128), "cluster_mn": (2, 1), "k_block_bytes": 256},
        {"tile_mn": (64, 128), "cluster_mn": (1, 1)},
        # tail split (a ragged last round: its tiles cut into K chunks, the rest whole)
        {"tile_mn": (128, 256), "cluster_mn": (1, 1), "tail_split": 2},
        {"tile_mn": (128, 256), "cluster_mn": (1, 1), "tail_split": 3},
        {"tile_mn": (128, 128), "cluster_mn": (1, 1), "tail_split": 2},
        {"tile_mn": (128, 128), "cluster_mn": (1, 1), "tail_split": 3},
        # ... with a cluster (the tail's items are cluster tiles: multicast kept)
        {"tile_mn": (128, 128), "cluster_mn": (2, 1), "tail_split": 2},
        {"tile_mn": (128, 128), "cluster_mn": (2, 1), "tail_split": 3},
        {"tile_mn": (128, 128), "cluster_mn": (1, 2), "tail_split": 2},
        {"tile_mn": (128, 128), "cluster_mn": (1, 2), "tail_split": 3},
        {"tile_mn": (128, 256), "cluster_mn": (2, 1), "tail_split": 2},
        {"tile_mn": (128, 256), "cluster_mn": (2, 1), "tail_split": 3},
        # ... and 128 x 192 (the promoted FP8 tile with the fewest tiles)
        {"tile_mn": (128, 192), "cluster_mn": (1, 1), "epi_stages": 3, "tail_split": 2},
        # (4096 x 4096: 704 tiles, 5 rounds and 44 left, which a split in 3 deals to all 132)
        {"tile_mn": (128, 192), "cluster_mn": (1, 1), "epi_stages": 3, "tail_split": 3},
        {"tile_mn": (128, 192), "cluster_mn": (2, 1), "epi_stages": 3, "tail_split": 2},
        {"tile_mn": (128, 192), "cluster_mn": (2, 1), "epi_stages": 3, "tail_split": 3},
        {"tile_mn": (128, 192), "cluster_mn": (1, 2), "epi_stages": 3, "tail_split": 3},
        # 128 x 160 (80 + 80 promoted FP8 values a thread; five 32-column sub-tiles): 28672
        # is 179.2 columns of it, so 256 x 28672 in 2 x 1 has 180 cluster tiles, 3 rounds of
        # 66 clusters, as long as 3.75 rounds of 128 x 128, whose 224 take 4
        {"tile_mn": (128, 160), "cluster_mn": (2, 1), "epi_stages": 5},
        {"tile_mn": (128, 160), "cluster_mn": (1, 1), "epi_stages": 5},
        # ... along N: 8192 / 192 gives 43 tile columns, which no swizzle > 1 divides, so
        # raster m walks whole columns of M (each wave re-reads A from HBM); raster n groups
        # 8 tile rows (FP8 8192^3: 0.93 -> 1.00 of cuBLAS in the sweep's same-run A/B)
        {"tile_mn": (128, 192), "cluster_mn": (1, 1), "epi_stages": 3, "raster": "n"},
        {"tile_mn": (128, 192), "cluster_mn": (2, 1), "epi_stages": 3, "raster": "n"},
        # the whole tile's epilogue buffered (one A/B stage less): the consumers store every
        # sub-tile without waiting for an earlier TMA store, for short K loops (K = 1024:
        # 16 blocks a tile) where the epilogue is a large share of a tile's time
        {"tile_mn": (128, 256), "cluster_mn": (2, 1), "epi_stages": 8},
        {"tile_mn": (128, 192), "cluster_mn": (2, 1), "epi_stages": 6},
        # 128 x 320, cuBLAS's widest Hopper tile (its bf16 kernel on 8192^3 and 3072 x 5120 x
        # 4096): more tile per loaded byte than 128 x 256, two 64 x 160 WGMMAs a warpgroup;
        # 3000 x 5000 gives 384 tiles, three rounds as long as 128 x 192's five (five epilogue
        # buffers of its ten sub-tiles leave the three A/B stages that two would)
        {"tile_mn": (128, 320), "cluster_mn": (2, 1), "epi_stages": 5},
        # ... and its transpose in area, 256 x 160 (the same WGMMAs on two 64-row blocks a
        # warpgroup, any cluster; two epilogue buffers leave a fourth A/B stage)
        {"tile_mn": (256, 160), "cluster_mn": (1, 2), "epi_stages": 2},
        # ... 8 columns narrower, cuBLAS's pick for 3000 x 5000: 396 tiles, three whole rounds
        # (B's 19 swizzle atoms a stage, the last 32-column epilogue sub-tile overlapping the
        # one before); a table entry of either width is fitted per problem (fit_width)
        {"tile_mn": (256, 152), "cluster_mn": (2, 1), "epi_stages": 2},
        # (no 2 x 2 clusters: the driver runs 30 clusters of 4 on 132 SMs, and on an H100 SXM
        # they lose 2-22 % to 2 x 1 on the shapes tried, bench/RESULTS.md)
    )
)
"""The schedule templates, as ``_gemm_table.TUNED_FIELDS`` values (67 of them; ``split_k``
``k_block_bytes`` and ``tail_split`` only where they are not 1, 128 and 1)."""
# Promoted problems only (FP8 by default): staggered promotion groups on the widest promoted
# tiles, whose drains are the longest (96 and 80 values a thread to add). On an H100 SXM they
# lead the same schedules in step by 1-3 % on average, but not the table's entries: an A/B of
# each FP8 entry against itself staggered changes sign with the shape and the timing (-4.4 to
# +4.3 %). Timed here; they win only where they lead.
STAGGER_TEMPLATES: tuple[dict[str, Any], ...] = tuple(
    {**_COOP, **_PLAIN, **t, "promote_stagger": True}
    for t in (
        {"tile_mn": (128, 192), "cluster_mn": (2, 1), "epi_stages": 3},
        {"tile_mn": (128, 192), "cluster_mn": (1, 1), "epi_stages": 3},
        {"tile_mn": (128, 160), "cluster_mn": (2, 1), "epi_stages": 5},
    )
)


# Promoted problems only: deferred stores (a tile's epilogue from the fp32 total under the
# next tile's first K block of WGMMAs; GemmConfig.defer_store) on 128 x 128, in cuBLAS's FP8
# cluster and the other. On an H100 SXM they run at par with the same tile without them,
# from -3 to +4 % by shape. Timed here; they win only where they lead.
DEFER_TEMPLATES: tuple[dict[str, Any], ...] = tuple(
    {**_COOP, **_PLAIN, "tile_mn": (128, 128), "cluster_mn": c, "defer_store": True}
    for c in ((2, 1), (1, 2))
)


# Stream-K tails (GemmConfig.stream_k) on the table's long-shape tiles. In unit order (H100
# SXM) the tail's CTAs would each read other K blocks and run from HBM: 0.82-0.91 of the same
# tile on 4096-wide shapes, 1.01 on bf16 8192^3. With each worker's next-tile start first
# (H200): 0.94-1.01 there and 1.021 on bf16 8192 x 8192 x 28672, whose class takes it. Kept
# only where the last round's idle time is long (candidates).
STREAM_TEMPLATES: tuple[dict[str, Any], ...] = tuple(
    {**_COOP, **_PLAIN, **t, "stream_k": True}
    for t in (
        {"tile_mn": (128, 256), "cluster_mn": (2, 1)},
        {"tile_mn": (256, 128), "cluster_mn": (1, 2)},
        {"tile_mn": (128, 192), "cluster_mn": (2, 1), "epi_stages": 3},
        {"tile_mn": (128, 128), "cluster_mn": (2, 1)},
    )
)
STREAM_MIN_IDLE = 48
"""K blocks a cluster must otherwise idle in the last round (``(W - r) k / W``) for a stream-K
template to be a candidate: about twice its measured fix-up (a 128 x 256 tile's K block takes
about 0.75 us, the fix-up 10-23 us)."""


def can_promote(fields: dict[str, Any]) -> bool:
    """Whether a template's tile has registers for FP8 two-level accumulation: at most
    ``PROMOTE_MAX_ACC`` accumulator values per consumer thread (``GemmConfig.acc_values``)."""
    bm, bn = fields["tile_mn"]
    warpgroups = consumer_warpgroups(fields["tile_mn"], fields["kernel"].startswith("pingpong"))
    return bool(bm * bn // (warpgroups * WARPGROUP) <= PROMOTE_MAX_ACC)


DEFAULTS: dict[str, Any] = {
    **_COOP,
    **_PLAIN,
    **{"split_k": 1, "k_block_bytes": 128, "tail_split": 1},
    **{"promote_stagger": False, "defer_store": False, "stream_k": False},
}
"""Every field a template may leave out, with the value it then takes (``Candidate.key``
names only the fields that differ from these)."""
