"""The TS GEMM on empty and tiny problems (GPU): every shape is right or never launched.

An empty M or N once killed the process (a fast-divmod divisor of 0 built on the host);
K = 0 must give C = beta * C (+ bias), here 0. The same shapes in FP8 (e4m3 -> bf16, per-tensor
and rowwise scales, two-level accumulation; a ragged K on a 16-byte padded pitch), ping-pong
with 128-row tiles (1 x 1 and 2 x 1 clusters, a fused epilogue), 256 x 128 tiles, split-K and
the tail split (bf16, and FP8 with promotion; with and without clusters) on shapes of their
own, 128 x 192 along N, whole-tile epilogue buffers, 128 x 320 and 256 x 160 tiles, the
fitted widths 256 x 152 and 128 x 152 (an epilogue sub-tile overlapping the one before),
2 x 2 clusters, staggered promotion groups, deferred stores, and the operands FP8 cannot take
(K-contiguous rows not a multiple of 16 bytes, an N-major operand) refused with a typed error
before any launch.
Runs where torch, the CuTe DSL and a CUDA GPU are; skipped elsewhere.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("cutlass")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "hopper"
SHAPES = [
    (0, 1501, 707),
    (1003, 0, 707),
    (0, 0, 0),
    (1003, 1501, 0),
    (1, 1, 1),
    (1, 8, 8),
    (7, 9, 13),
    (128, 256, 64),
    (129, 257, 65),
    (4096, 1, 64),
    (1, 4096, 64),
    (64, 64, 4096),
]

# FP8 with per-row / column scales on 128 x 128 (promoted: the FP8 default on this tile)
_FP8_ROWWISE: dict[str, Any] = {"dtype": "e4m3", "scale": "rowwise", "tile_mn": (128, 128)}
_FP8_128X192 = {"dtype": "e4m3", "scale": "rowwise", "tile_mn": (128, 192), "epi_stages": 3}

CONFIGS: dict[str, dict[str, Any]] = {
    "bf16": {},
    "e4m3-tensor": {"dtype": "e4m3", "scale": "tensor"},
    "e4m3-rowwise": {"dtype": "e4m3", "scale": "rowwise"},
    # two-level accumulation (the FP8 default on 128 x 128 tiles: promote every 4 K blocks)
    "e4m3-promoted": _FP8_ROWWISE,
    # ping-pong, a warpgroup alone on a 128-row tile (64-row epilogue sub-tiles); in a 2 x 1
    # cluster (B multicast, both CTAs' turns in lockstep); 128 x 192 with the fused epilogue
    "bf16-pingpong128": {"kernel": "pingpong", "tile_mn": (128, 128)},
    "bf16-pingpong128-2x1": {"kernel": "pingpong", "tile_mn": (128, 128), "cluster_mn": (2, 1)},
    "bf16-pingpong128x192-fused": {
        "kernel": "pingpong",
        "tile_mn": (128, 192),
        "alpha": 0.5,
        "beta": 1.0,
        "bias": True,
    },
    # ping-pong skipping the other warpgroup's stages in math order (the two tuner templates),
    # and 64 x 128 FP8 promoted
    "bf16-pingpong-skip128-1x2": {
        "kernel": "pingpong-skip",
        "tile_mn": (128, 128),
        "cluster_mn": (1, 2),
    },
    "bf16-pingpong-skip128x192-2x1-fused": {
        "kernel": "pingpong-skip",
        "tile_mn": (128, 192),
        "cluster_mn": (2, 1),
        "beta": 1.0,
        "bias": True,
    },
    "e4m3-pingpong-skip64x128": {"kernel": "pingpong-skip", "tile_mn": (64, 128)}
    | {"dtype": "e4m3", "scale": "rowwise"},
    # 256-byte K blocks (two TMA boxes per operand and stage); 128 x 192 cooperative
    "bf16-k256": {"tile_mn": (128, 128), "k_block_bytes": 256},
    "e4m3-k256-promoted": {
        "dtype": "e4m3",
        "scale": "tensor",
        "tile_mn": (128, 128),
        "k_block_bytes": 256,
    },
    "bf16-128x192-2x1": {"tile_mn": (128, 192), "cluster_mn": (2, 1), "epi_stages": 3},
    # FP8 128 x 192 promoted: 96 + 96 fp32 registers a consumer thread, 2 x 1 cluster
    "e4m3-128x192-promoted-2x1": {
        "dtype": "e4m3",
        "scale": "rowwise",
        "tile_mn": (128, 192),
        "cluster_mn": (2, 1),
        "epi_stages": 3,
    },
    # 64 x 192 ping-pong, FP8 promoted (96 + 96 registers a thread), 2 x 1 cluster, fused
    "e4m3-pingpong64x192-promoted-2x1": {
        "dtype": "e4m3",
        "scale": "rowwise",
        "tile_mn": (64, 192),
        "kernel": "pingpong",
        "cluster_mn": (2, 1),
        "epi_stages": 3,
        "beta": 1.0,
    },
    # 128 x 192 along N (raster n: swizzle groups of tile rows, padded ones on these shapes),
    # FP8 promoted, 1 x 1 and 2 x 1 clusters
    "e4m3-128x192-raster-n": _FP8_128X192 | {"scale": "tensor", "raster": "n"},
    "e4m3-128x192-raster-n-2x1": _FP8_128X192 | {"raster": "n", "cluster_mn": (2, 1)},
    # the whole tile's epilogue buffered (8 and 6 sub-tiles: no TMA-store wait inside a tile),
    # bf16 reading C for beta, with a bias; FP8 promoted
    "bf16-128x256-2x1-epi8-fused": {"cluster_mn": (2, 1), "epi_stages": 8, "beta": 1.0}
    | {"bias": True},
    "e4m3-128x192-2x1-epi6": _FP8_128X192
    | {"scale": "tensor", "cluster_mn": (2, 1), "epi_stages": 6},
    # 256 x 128: each consumer warpgroup on two 64-row blocks; FP8 unpromoted (no registers),
    # the fused epilogue reading C, the bias and both scale vectors by those rows
    "bf16-256x128-2x1": {"tile_mn": (256, 128), "cluster_mn": (2, 1)},
    # 128 x 320 (two 64 x 160 WGMMAs a warpgroup, B split over the 2 x 1 cluster, ten
    # 32-column sub-tiles): plain, and FP8 with the fused epilogue reading C, bias and scales;
    # 256 x 160 (the same WGMMAs on two row blocks a warpgroup)
    "bf16-128x320-2x1": {"tile_mn": (128, 320), "cluster_mn": (2, 1), "epi_stages": 5},
    "e4m3-128x320-2x1-rowwise-fused": _FP8_ROWWISE
    | {"tile_mn": (128, 320), "cluster_mn": (2, 1), "epi_stages": 2, "beta": 1.0, "bias": True},
    "bf16-256x160-1x2": {"tile_mn": (256, 160), "cluster_mn": (1, 2), "epi_stages": 2},
    # 128 x 160 (five 32-column sub-tiles): FP8 promoted (80 + 80 registers) in a 2 x 1
    # cluster with the fused epilogue; bf16 with two 80-column buffers in a 1 x 2 cluster
    "e4m3-128x160-2x1-promoted-fused": _FP8_ROWWISE
    | {"tile_mn": (128, 160), "cluster_mn": (2, 1), "epi_stages": 5, "beta": 1.0, "bias": True},
    "bf16-128x160-1x2-epi80": {"tile_mn": (128, 160), "cluster_mn": (1, 2)}
    | {"epi_n": 80, "epi_stages": 2},
    # Fitted widths: 256 x 152 (19 swizzle atoms of B rows a stage; five 32-column sub-tiles
    # a row block, the last at columns 120-151 overlapping the fourth); in a 2 x 1 cluster
    # (each CTA multicasts 76 rows of B) with the fused epilogue; FP8 rowwise in a 1 x 2
    # cluster; and 256 x 160 in 64-column sub-tiles (the third at columns 96-159)
    "bf16-256x152": {"tile_mn": (256, 152), "epi_stages": 2},
    "bf16-256x152-2x1-fused": {"tile_mn": (256, 152), "cluster_mn": (2, 1), "epi_stages": 5}
    | {"alpha": 0.5, "beta": 1.0, "bias": True},
    "e4m3-256x152-1x2-rowwise-fused": {"dtype": "e4m3", "scale": "rowwise", "beta": 1.0}
    | {"tile_mn": (256, 152), "cluster_mn": (1, 2), "epi_stages": 2, "bias": True},
    "bf16-256x160-1x2-epi64": {"tile_mn": (256, 160), "cluster_mn": (1, 2), "epi_n": 64}
    | {"epi_stages": 2},
    # 128 x 152: bf16; FP8 promoted (76 + 76 values a thread) in a 2 x 1 cluster; FP8 rowwise
    # with the fused epilogue in four 48-column sub-tiles (the fourth at columns 104-151)
    "bf16-128x152": {"tile_mn": (128, 152), "epi_stages": 5},
    "e4m3-128x152-2x1-promoted": {"dtype": "e4m3", "scale": "tensor", "tile_mn": (128, 152)}
    | {"cluster_mn": (2, 1), "epi_stages": 5},
    "e4m3-128x152-rowwise-fused-epi48": _FP8_ROWWISE
    | {"tile_mn": (128, 152), "epi_n": 48, "epi_stages": 2, "beta": 1.0, "bias": True},
    # 2 x 2 clusters (A and B both multicast; 3 CTAs release each stage), FP8 promoted too
    "bf16-2x2": {"cluster_mn": (2, 2)},
    "e4m3-128x128-2x2-promoted": _FP8_ROWWISE | {"cluster_mn": (2, 2)},
    "e4m3-256x128-rowwise-fused": {
        "dtype": "e4m3",
        "scale": "rowwise",
        "tile_mn": (256, 128),
        "cluster_mn": (1, 2),
        "beta": 1.0,
        "bias": True,
    },
}
# Split-K: shapes with at least split_k K blocks (fewer is refused before launch) or K = 0.
# 320 = 5 blocks of 64 in 4 chunks of 2: the last chunk reads only blocks past K (zero-filled);
# FP8 896 = 7 blocks of 128 in 2 chunks of 4 (the second a short promotion group).
SPLIT_CONFIGS: dict[str, tuple[dict[str, Any], list[tuple[int, int, int]]]] = {
    "bf16-split4": (
        {"tile_mn": (128, 128), "split_k": 4},
        [(1003, 1501, 0), (128, 1024, 320), (129, 257, 257), (7, 9, 512), (300, 200, 4096)],
    ),
    "e4m3-split2-promoted": (
        {"dtype": "e4m3", "scale": "tensor", "tile_mn": (128, 128), "split_k": 2},
        [(1003, 1501, 0), (129, 257, 896), (128, 1024, 1664), (1, 1, 256)],
    ),
    # 256-byte K blocks: 3 blocks of 128 in 2 chunks (the second one's last block past K)
    "bf16-k256-split2": (
        {"tile_mn": (128, 128), "split_k": 2, "k_block_bytes": 256},
        [(1003, 1501, 0), (129, 257, 300), (128, 1024, 2048), (7, 9, 256)],
    ),
    "bf16-256x128-split2": (
        {"tile_mn": (256, 128), "split_k": 2},
        [(1003, 1501, 0), (257, 129, 193), (300, 200, 4096), (7, 9, 256)],
    ),
    "bf16-128x192-split3": (
        {"tile_mn": (128, 192), "split_k": 3, "epi_stages": 3},
        [(1003, 1501, 0), (129, 385, 193), (128, 1024, 4096)],
    ),
}


# Tail split: every tile of the last, ragged round of 132 in that many K chunks. Shapes with
# r = T mod 132 tiles in the tail (swizzle 1: T = the tiles), none (r == 0: 12 x 11 tiles), all
# (T < 132), K = 0, K shorter than the chunks (a chunk of zero-filled blocks), M = 0; with the
# default swizzle 8 the padded tile indices count too (3000 x 5000: 576 indices, 48 in the tail).
TAIL_CONFIGS: dict[str, tuple[dict[str, Any], list[tuple[int, int, int]]]] = {
    "bf16-tail2": (
        {"tail_split": 2, "swizzle": 1},
        [(3000, 5000, 1000), (1500, 2600, 512), (1003, 1501, 0), (129, 257, 65), (0, 1501, 707)],
    ),
    "bf16-tail3-swizzle8": (
        {"tail_split": 3},
        [(3000, 5000, 704), (129, 257, 65), (7, 9, 13), (1003, 1501, 0)],
    ),
    "e4m3-tail2-promoted": (
        {"dtype": "e4m3", "scale": "tensor", "tile_mn": (128, 128), "tail_split": 2, "swizzle": 1},
        [(3000, 5000, 896), (1536, 1408, 512), (1003, 1501, 0), (129, 257, 128), (1, 1, 256)],
    ),
    "bf16-tail4-fused": (
        {"tile_mn": (128, 128), "tail_split": 4, "beta": 1.0, "bias": True, "swizzle": 1},
        [(1003, 1501, 300), (2000, 1800, 256), (1, 4096, 64)],
    ),
    # Clusters: the tail's items are cluster tiles (66 clusters of two), one slot per CTA
    # tile; a cluster tile half past the problem (one tile row or column) hands over only
    # its tile inside; 1536 x 1408 is 66 cluster tiles, no tail.
    "e4m3-tail3-c2x1": (
        {"dtype": "e4m3", "scale": "tensor", "tile_mn": (128, 128), "cluster_mn": (2, 1)}
        | {"tail_split": 3},
        [(3000, 5000, 896), (1536, 1408, 512), (1003, 1501, 0), (129, 257, 128), (1, 1, 256)],
    ),
    "e4m3-128x192-tail2-promoted": (
        {"dtype": "e4m3", "scale": "tensor", "tile_mn": (128, 192), "epi_stages": 3}
        | {"tail_split": 2},
        [(3000, 5000, 896), (256, 28672, 512), (1003, 1501, 0), (129, 257, 128), (1, 1, 256)],
    ),
    # 4096 x 4096: 16 x 22 cluster tiles of 256 x 192, 5 rounds of 66 and 22 left, 66 chunks
    "e4m3-128x192-tail3-c2x1-promoted": (
        {"dtype": "e4m3", "scale": "rowwise", "tile_mn": (128, 192), "cluster_mn": (2, 1)}
        | {"epi_stages": 3, "tail_split": 3},
        [(4096, 4096, 1536), (3000, 5000, 896), (1003, 1501, 0), (129, 257, 128), (1, 1, 256)],
    ),
    # 256 x 28672: 2 x 180 tiles of 128 x 160, 180 cluster tiles, 2 rounds of 66 and 48 left
    "e4m3-128x160-tail2-c2x1-promoted": (
        {"dtype": "e4m3", "scale": "tensor", "tile_mn": (128, 160), "cluster_mn": (2, 1)}
        | {"epi_stages": 5, "tail_split": 2},
        [(256, 28672, 1024), (3000, 5000, 896), (1003, 1501, 0), (129, 257, 128), (1, 1, 256)],
    ),
    # 128 x 152: 3000 x 5000 is 396 cluster tiles of 2 x 1, six rounds, no tail; 256 x 28672
    # is 189, two rounds of 66 and 57 left
    "e4m3-128x152-tail2-c2x1-promoted": (
        {"dtype": "e4m3", "scale": "tensor", "tile_mn": (128, 152), "cluster_mn": (2, 1)}
        | {"epi_stages": 5, "tail_split": 2},
        [(256, 28672, 1024), (3000, 5000, 896), (1003, 1501, 0), (129, 257, 128), (1, 1, 256)],
    ),
    "bf16-256x128-tail2-c2x1": (
        {"tile_mn": (256, 128), "cluster_mn": (2, 1), "tail_split": 2},
        [(3000, 5000, 1000), (129, 257, 65), (1003, 1501, 0), (0, 1501, 707)],
    ),
    "bf16-128x320-tail2-c2x1": (
        {"tile_mn": (128, 320), "cluster_mn": (2, 1), "epi_stages": 5, "tail_split": 2},
        [(3000, 5000, 1000), (129, 330, 65), (1003, 1501, 0), (0, 1501, 707)],
    ),
    "bf16-tail2-c1x2": (
        {"cluster_mn": (1, 2), "tail_split": 2},
        [(3000, 5000, 1000), (129, 257, 65), (7, 9, 13), (1003, 1501, 0), (0, 1501, 707)],
    ),
}


# Stream-K tail: the last round's r tiles of k K blocks as r k units shared by the 132 CTAs (66
# clusters of two), at most two pieces each. 3000 x 5000: 84 tail tiles of 16 blocks (about 10
# units a CTA); 4096^3: 116 of 64; 129 x 257: 4 tiles of 2 blocks, 8 units on 8 of the CTAs (the
# others idle), 2 pieces a tile; K = 0: one piece a tile, no blocks, stored as zeros; K shorter
# than a block; M = 0; the default swizzle's padded indices; a tile of a single piece.
STREAM_CONFIGS: dict[str, tuple[dict[str, Any], list[tuple[int, int, int]]]] = {
    "bf16-stream": (
        {"stream_k": True, "swizzle": 1},
        [
            *[(3000, 5000, 1000), (4096, 4096, 4096), (129, 257, 65), (1003, 1501, 0)],
            *[(7, 9, 13), (0, 1501, 707), (1500, 2600, 512)],
        ],
    ),
    "bf16-128x128-stream-swizzle8-fused": (
        {"tile_mn": (128, 128), "stream_k": True, "beta": 1.0, "bias": True},
        [(3000, 5000, 704), (1003, 1501, 300), (129, 257, 65), (1, 4096, 64), (2000, 1800, 256)],
    ),
    "e4m3-stream-c2x1-promoted": (
        {"dtype": "e4m3", "scale": "tensor", "tile_mn": (128, 128), "cluster_mn": (2, 1)}
        | {"stream_k": True},
        [
            *[(3000, 5000, 896), (1536, 1408, 512), (1003, 1501, 0), (129, 257, 128)],
            *[(1, 1, 256), (4096, 4096, 14336)],
        ],
    ),
    "e4m3-128x192-stream-c2x1-rowwise": (
        {"dtype": "e4m3", "scale": "rowwise", "tile_mn": (128, 192), "cluster_mn": (2, 1)}
        | {"epi_stages": 3, "stream_k": True},
        [(4096, 4096, 1536), (3000, 5000, 896), (129, 257, 128), (1003, 1501, 0)],
    ),
    "bf16-256x128-stream-c1x2": (
        {"tile_mn": (256, 128), "cluster_mn": (1, 2), "stream_k": True},
        [(4096, 4096, 4096), (3000, 5000, 1000), (129, 257, 65), (1003, 1501, 0), (0, 1501, 7)],
    ),
}


# Staggered promotion groups (the second consumer warpgroup's start half a group later): every
# K block count from 0 to 7 (FP8 blocks of 128; 64 for bf16 promoted every 4), a fused
# epilogue, a 1 x 2 cluster, and a tail split whose chunks are short groups of their own.
STAGGER_CONFIGS: dict[str, tuple[dict[str, Any], list[tuple[int, int, int]]]] = {
    "e4m3-128x128-1x2-stagger-fused": (
        _FP8_ROWWISE | {"cluster_mn": (1, 2), "promote_stagger": True, "beta": 1.0, "bias": True},
        [
            *[(1003, 1501, 0), (129, 257, 128), (129, 257, 256), (129, 257, 384)],
            *[(300, 200, 512), (1003, 1501, 640), (1003, 1501, 768), (129, 257, 896)],
            (7, 9, 4096),
        ],
    ),
    "e4m3-128x192-2x1-stagger-tail3": (
        {"dtype": "e4m3", "scale": "tensor", "tile_mn": (128, 192), "cluster_mn": (2, 1)}
        | {"epi_stages": 3, "tail_split": 3, "promote_stagger": True},
        [(4096, 4096, 1536), (3000, 5000, 896), (1003, 1501, 0), (129, 257, 128), (1, 1, 256)],
    ),
    "bf16-128x128-promote4-stagger": (
        {"tile_mn": (128, 128), "promote_every": 4, "promote_stagger": True},
        [(1003, 1501, 0), (129, 257, 64), (129, 257, 192), (300, 200, 320), (1003, 1501, 707)],
    ),
}


# Deferred stores (GemmConfig.defer_store: a tile goes out from its fp32 total under the next
# tile's first K block of WGMMAs; the CTA's last tile at once): CTAs of one tile, of one or two,
# of many; K = 0 (no first block: every tile stores itself); K blocks not a multiple of the
# promotion interval; a fused epilogue, a 1 x 2 cluster, bf16 promoted, 64-row tiles.
_DEFER_SHAPES = [
    *[(1003, 1501, 0), (1, 1, 1), (129, 257, 65), (2048, 1024, 256), (2048, 1152, 384)],
    *[(4096, 4096, 512), (3000, 5000, 896), (7, 9, 4096), (300, 200, 640)],
]
DEFER_CONFIGS: dict[str, tuple[dict[str, Any], list[tuple[int, int, int]]]] = {
    "e4m3-128x128-2x1-defer": (
        {"dtype": "e4m3", "scale": "tensor", "cluster_mn": (2, 1), "defer_store": True}
        | {"tile_mn": (128, 128)},
        _DEFER_SHAPES,
    ),
    "e4m3-128x128-1x2-defer-rowwise-fused": (
        _FP8_ROWWISE | {"cluster_mn": (1, 2), "defer_store": True, "beta": 1.0, "bias": True},
        _DEFER_SHAPES,
    ),
    "e4m3-64x128-2x1-defer-kb256": (
        {"dtype": "e4m3", "scale": "tensor", "tile_mn": (64, 128), "cluster_mn": (2, 1)}
        | {"k_block_bytes": 256, "defer_store": True},
        _DEFER_SHAPES,
    ),
    "bf16-128x128-promote4-defer": (
        {"tile_mn": (128, 128), "promote_every": 4, "defer_store": True},
        _DEFER_SHAPES,
    ),
}


def _module() -> Any:
    sys.path.insert(0, str(EXAMPLES))  # the example imports its sibling modules
    return importlib.import_module("gemm")


@pytest.fixture(scope="module", params=list(CONFIGS))
def gemm(request: pytest.FixtureRequest) -> Any:
    module = _module()
    cfg = module.GemmConfig(**CONFIGS[request.param])
    return module, cfg, module.compile_for_gpu(cfg)


@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gemm_shape(gemm: Any, mnk: tuple[int, int, int]) -> None:
    module, cfg, compiled = gemm
    result = module.run_case(cfg, compiled, mnk, iters=1, timed=False)
    for name in compiled:
        assert result[name]["ok"], (name, mnk, result[name])


def _twice_each(name: str, options: dict[str, Any], shapes: Any) -> None:
    """Every kernel right on every shape, twice each (a split tile's last item zeroes its
    counter for the next launch)."""
    module = _module()
    cfg = module.GemmConfig(**options)
    compiled = module.compile_for_gpu(cfg)
    for mnk in shapes:
        for _ in range(2):
            result = module.run_case(cfg, compiled, mnk, iters=1, timed=False)
            for kernel in compiled:
                assert result[kernel]["ok"], (name, kernel, mnk, result[kernel])


@pytest.mark.parametrize("name", list(SPLIT_CONFIGS))
def test_split_k_shapes(name: str) -> None:
    """Every chunk count, ragged K, a chunk of zero-filled blocks, K = 0."""
    _twice_each(name, *SPLIT_CONFIGS[name])


@pytest.mark.parametrize("name", list(TAIL_CONFIGS))
def test_tail_split_shapes(name: str) -> None:
    """Whole tiles and tail chunks in one launch."""
    _twice_each(name, *TAIL_CONFIGS[name])


@pytest.mark.parametrize("name", list(STREAM_CONFIGS))
def test_stream_k_shapes(name: str) -> None:
    """Whole tiles and stream-K pieces in one launch."""
    _twice_each(name, *STREAM_CONFIGS[name])


@pytest.mark.parametrize("name", list(STAGGER_CONFIGS))
def test_staggered_promotion_shapes(name: str) -> None:
    """Each warpgroup's groups, their short first and last ones included, reach the total."""
    _twice_each(name, *STAGGER_CONFIGS[name])


@pytest.mark.parametrize("name", list(DEFER_CONFIGS))
def test_deferred_store_shapes(name: str) -> None:
    """Every tile reaches C: stored by the CTA's next tile, or at once where none follows."""
    _twice_each(name, *DEFER_CONFIGS[name])


def test_fp8_operands_fp8_cannot_take_are_refused_before_launch() -> None:
    """A contiguous FP8 operand with K = 13 (13-byte rows) and an N-major FP8 B."""
    from ts_runtime.errors import RuntimeConfigError, UnsupportedOnTarget

    cfg = _module().GemmConfig(dtype="e4m3", scale="tensor")
    host = importlib.import_module("_gemm_host")  # beside gemm.py
    fp8 = torch.float8_e4m3fn
    scales = host.make_scales(cfg, 7, 9)
    c = host.make_output(cfg, 7, 9)
    a = torch.randn(7, 13, device="cuda").to(fp8)
    b = torch.randn(9, 13, device="cuda").to(fp8)
    with pytest.raises(RuntimeConfigError, match="multiple of 16"):
        host.check_operands(cfg, a, b, c, None, *scales)
    a = torch.zeros(7, 32, device="cuda", dtype=fp8)
    b_n_major = torch.zeros(32, 9, device="cuda", dtype=fp8).t()  # 9 x 32, strides (1, 9)
    with pytest.raises(UnsupportedOnTarget, match="K-major"):
        host.check_operands(cfg, a, b_n_major, c, None, *scales)
