"""The tail split in the Hopper GEMM (``GemmConfig.tail_split``).

``T`` tiles on ``P`` persistent CTAs: the first ``T - T mod P`` are work items whole, the last
``T mod P`` are each cut into ``s`` K chunks reduced as split-K's. Checked on the CPU: the
option's typed errors, the item -> (tile, chunk, chunk count) mapping (the raster's own
arithmetic, and the kernel raster run on Python integers) against a plain enumeration, the
host's sizes, the verified plan (both K loops bound by the item's own count), and the TS
kernel's PTX against the hand-written twin's.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
import shutil
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("cutlass")
pytest.importorskip("ts_runtime")
pytest.importorskip("ts_verify")

from ts_codegen.dsl import compile_ptx
from ts_ir import (
    ConditionalBlock,
    DomainLoop,
    DynamicBound,
    OpaqueCondition,
    WorkTileLoop,
    iter_nodes,
)


@pytest.fixture(scope="module")
def split(gemm: Any) -> Any:
    return importlib.import_module("_gemm_split")  # beside gemm.py, already on sys.path


# -- configuration ------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [0, -1, True, 17, "2", 2.0])
def test_bad_tail_split_is_a_typed_error(gemm: Any, bad: Any) -> None:
    from ts_runtime.errors import RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match=r"tail_split=.*an int in \[1, 16\]") as err:
        gemm.GemmConfig(tail_split=bad)
    assert "tail_split=1" in err.value.fix


@pytest.mark.parametrize(
    "options",
    [
        {"tile_mn": (64, 128), "kernel": "pingpong"},
        {"scheduler": "dynamic"},
    ],
)
def test_tail_split_needs_the_static_cooperative_kernel(gemm: Any, options: dict[str, Any]) -> None:
    from ts_runtime.errors import RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match=r"tail_split=2, .*cooperative kernel") as err:
        gemm.GemmConfig(tail_split=2, **options)
    assert "scheduler='static'" in err.value.fix and "cluster_mn" not in err.value.fix


@pytest.mark.parametrize("cluster", [(2, 1), (1, 2)])
def test_tail_split_takes_clusters_split_k_does_not(gemm: Any, cluster: tuple[int, int]) -> None:
    from ts_runtime.errors import RuntimeConfigError

    assert gemm.GemmConfig(tail_split=2, cluster_mn=cluster).tail
    with pytest.raises(RuntimeConfigError, match=r"split_k=2, .*1 x 1 clusters") as err:
        gemm.GemmConfig(tile_mn=(128, 128), split_k=2, cluster_mn=cluster)
    assert "cluster_mn=(1, 1)" in err.value.fix


def test_tail_split_and_split_k_exclude_each_other(gemm: Any) -> None:
    from ts_runtime.errors import RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match=r"split_k=2, tail_split=3") as err:
        gemm.GemmConfig(tile_mn=(128, 128), split_k=2, tail_split=3)
    assert "split_k=1 with tail_split" in err.value.fix
    cfg = gemm.GemmConfig(tail_split=16)
    assert cfg.split and cfg.tail and cfg.split_k == 1
    assert not gemm.GemmConfig().tail and not gemm.GemmConfig(split_k=2).tail


def test_cli_takes_tail_split(gemm: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        gemm.main(
            ["--config", "default", "--scheduler", "dynamic", "--tail-split", "2", "--compile-only"]
        )
    assert "tail_split=2" in capsys.readouterr().err


def test_cli_tail_split_on_the_table_pick(gemm: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """``--config auto``: the pick's tiles and cluster, with cooperative, static and no
    split-K where the command line leaves them to the pick."""
    mnk = ["--mnk", "3000", "5000", "4000"]
    assert gemm.main(["--compile-only", *mnk, "--tail-split", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    cfg = out["config"]
    pick, _ = importlib.import_module("_gemm_table").pick((3000, 5000, 4000))
    assert out["config_source"].endswith("+tail_split") and out["same_counts"]
    assert (cfg["tail_split"], cfg["split_k"]) == (2, 1)
    assert (cfg["tile_mn"], cfg["cluster_mn"]) == (list(pick.tile_mn), list(pick.cluster_mn))
    assert (cfg["kernel"], cfg["scheduler"]) == ("cooperative", "static")


def test_cli_tail_split_on_a_ping_pong_pick_fits_the_epilogue_buffers(
    gemm: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ping-pong pick's 4 buffers divide its 12 sub-tiles of 64 x 32 (128 x 192), not the
    cooperative kernel's 6: the tail split keeps 3 of them."""
    table = importlib.import_module("_gemm_table")
    pick = gemm.GemmConfig(tile_mn=(128, 192), cluster_mn=(2, 1), kernel="pingpong-skip")
    monkeypatch.setattr(table, "pick", lambda *_a, **_k: (pick, "table:test"))
    assert gemm.main(["--compile-only", "--mnk", "3000", "5000", "4000", "--tail-split", "2"]) == 0
    cfg = json.loads(capsys.readouterr().out)["config"]
    assert (cfg["kernel"], cfg["epi_stages"], cfg["tail_split"]) == ("cooperative", 3, 2)


# -- the item mapping ---------------------------------------------------------------------------
def _expected(tiles: int, workers: int, chunks: int) -> list[tuple[int, int, int]]:
    """Items in order as ``(tile, chunk, chunk count)``, written out from the definition."""
    ragged = tiles % workers
    whole = [(t, 0, 1) for t in range(tiles - ragged)]
    tail = [(t, c, chunks) for t in range(tiles - ragged, tiles) for c in range(chunks)]
    return whole + tail


def _items(tiles: int, workers: int, chunks: int) -> list[tuple[int, int, int]]:
    """The same from the raster's arithmetic (``tail_split_item`` / ``tail_split_parts``)."""
    from ts_codegen.tiles_raster import tail_split_item, tail_split_parts, tail_split_shape

    first, count = tail_split_shape(tiles, workers, chunks)
    out = []
    for i in range(count):
        tile, l_coord = tail_split_item(i, first, chunks)
        whole, slot, chunk = tail_split_parts(l_coord, chunks)
        if whole:
            assert (l_coord, slot, chunk) == (0, -1, 0)  # a whole tile's K starts at block 0
        else:
            assert tile == first + slot  # workspace slot / counter = tail tile number
        out.append((tile, chunk, 1 if whole else chunks))
    return out


CASES = [
    (tiles, workers, chunks)
    for workers in (1, 3, 7, 132)
    for tiles in (0, 1, 2, workers - 1, workers, workers + 1, 2 * workers + 5, 480, 960)
    for chunks in (2, 3, 4)
    if tiles >= 0
]


@pytest.mark.parametrize("tiles, workers, chunks", CASES)
def test_items_cover_every_k_block_once(tiles: int, workers: int, chunks: int) -> None:
    items = _items(tiles, workers, chunks)
    assert items == _expected(tiles, workers, chunks)
    for k_blocks in (0, 1, chunks - 1, chunks, 7, 64):
        part = -(-k_blocks // chunks)
        seen: dict[int, list[int]] = {}
        for tile, chunk, count in items:
            blocks = k_blocks if count == 1 else part  # item_blocks
            first = chunk * part  # WgmmaRing.load: (l mod s) * tail chunk blocks
            seen.setdefault(tile, []).extend(
                b for b in range(first, first + blocks) if b < k_blocks
            )
        assert sorted(seen) == list(range(tiles))
        assert all(sorted(v) == list(range(k_blocks)) for v in seen.values())


@pytest.mark.parametrize("tiles, workers, chunks", CASES)
def test_every_cta_gets_the_same_work(tiles: int, workers: int, chunks: int) -> None:
    """Item ``i`` runs on CTA ``i mod G`` (``G``: the launch grid, at most ``workers``): as many
    whole tiles on every CTA, tail chunks spread to within one."""
    items = _items(tiles, workers, chunks)
    grid = max(1, min(len(items), workers))
    whole = [0] * grid
    parts = [0] * grid
    for i, (_, _, count) in enumerate(items):
        (whole if count == 1 else parts)[i % grid] += 1
    assert max(whole) == min(whole) == (tiles - tiles % workers) // grid
    assert max(parts) - min(parts) <= 1
    assert len(items) == tiles + (tiles % workers) * (chunks - 1)


@pytest.mark.parametrize("along_m", [True, False])
@pytest.mark.parametrize("swizzle", [1, 2, 4])
def test_kernel_raster_deals_the_tail(along_m: bool, swizzle: int) -> None:
    """``TileRaster(tail_split=...)``'s kernel arithmetic on Python integers: whole tiles in
    the plain raster's order, then the last ones' chunks, the padding of a swizzle counted."""
    from ts_codegen import TileRaster
    from ts_codegen.tiles_raster import raster_order, raster_shape

    for shape in ((5, 7, 1), (24, 20, 1), (3, 3, 1), (12, 11, 1)):
        for chunks in (2, 3):
            raster = TileRaster(shape, (1, 1, 1), swizzle, along_m, tail_split=chunks, workers=13)
            order = list(raster_order(shape, (1, 1), swizzle, along_m))
            assert len(order) == raster_shape(shape, (1, 1), swizzle, along_m).num_tiles()
            want = [
                (*order[t][:2], 0 if n == 1 else chunks * (1 + t - raster.tail_first) + c)
                for t, c, n in _expected(len(order), 13, chunks)
            ]
            got = [raster.cluster_coord(i) for i in range(raster.num_tiles)]
            assert got == want
            grid = raster.get_grid_shape(13)
            assert grid == (1, 1, min(13, max(1, len(want))))


@pytest.mark.parametrize("cluster", [(2, 1), (1, 2), (2, 2)])
def test_kernel_raster_deals_cluster_tiles(cluster: tuple[int, int]) -> None:
    """With clusters the items are cluster tiles: the plain raster's cluster tiles whole, then
    the last round's (of ``workers`` clusters) in chunks; every CTA of a cluster gets the same
    item, on its own tile of the cluster tile (``PersistentTiles.tile``: ``c * cm + rank``)."""
    from ts_codegen import TileRaster
    from ts_codegen.tiles_raster import raster_order

    shape = (24, 40, 1)  # 3000 x 5000 in 128 x 128 tiles
    workers = 132 // (cluster[0] * cluster[1])
    raster = TileRaster(shape, (*cluster, 1), 4, True, tail_split=3, workers=workers)
    order = list(raster_order(shape, cluster, 4, True))  # cluster tiles
    assert len(order) == (24 // cluster[0]) * (40 // cluster[1])
    want = [
        (*order[t][:2], 0 if n == 1 else 3 * (1 + t - raster.tail_first) + c)
        for t, c, n in _expected(len(order), workers, 3)
    ]
    assert [raster.cluster_coord(i) for i in range(raster.num_tiles)] == want
    assert raster.get_grid_shape(workers) == (*cluster, workers)


def test_tail_raster_refuses_batches() -> None:
    from ts_codegen import TileRaster

    with pytest.raises(ValueError, match="one batch"):
        TileRaster((4, 4, 2), tail_split=2, workers=132)
    with pytest.raises(ValueError, match="workers >= 1"):
        TileRaster((4, 4, 1), tail_split=2)


# -- host sizes -----------------------------------------------------------------------------------
def test_tail_sizes(gemm: Any, split: Any) -> None:
    """3000 x 5000: 24 x 20 tiles of 128 x 256 are 3 rounds of 132 and 84; 24 x 40 of
    128 x 128 are 7 and 36 (swizzles fitted: no padding); 12 x 11 are one round, no tail."""
    fit = importlib.import_module("_gemm_config").fit_swizzle
    bf16 = fit(gemm.GemmConfig(tail_split=2), 5000, 3000)
    assert split.tail_tiles(bf16, 3000, 5000) == 84
    assert split.tail_workspace_elements(bf16, 3000, 5000) == 84 * 2 * 128 * 256
    fp8 = gemm.GemmConfig(dtype="e4m3", tile_mn=(128, 128), tail_split=3)
    fp8 = fit(fp8, 5000, 3000)
    assert split.tail_tiles(fp8, 3000, 5000) == 36
    assert split.tail_workspace_elements(fp8, 3000, 5000) == 36 * 3 * 128 * 128
    square = fit(gemm.GemmConfig(tile_mn=(128, 128), tail_split=2), 1400, 1500)
    assert split.tail_tiles(square, 1500, 1400) == 0  # 132 tiles: nothing changes
    assert split.tail_tiles(gemm.GemmConfig(tail_split=2), 0, 5000) == 0
    one = gemm.GemmConfig(tail_split=2, swizzle=1)
    assert split.tail_tiles(one, 100, 100) == 1  # under one round: every tile is in the tail
    assert split.tail_tiles(dataclasses.replace(one, swizzle=8), 100, 100) == 8  # 7 padded
    # an unfitted swizzle pads 20 tile columns to 24: 576 indices, 48 in the tail
    assert split.tail_tiles(gemm.GemmConfig(tail_split=2, swizzle=8), 3000, 5000) == 48
    assert split.tail_tiles(gemm.GemmConfig(), 3000, 5000) == 0
    # clusters of two: 480 cluster tiles on 66 clusters leave 18, two CTA tiles each
    for cluster in ((2, 1), (1, 2)):
        pair = fit(dataclasses.replace(fp8, cluster_mn=cluster), 5000, 3000)
        assert split.tail_tiles(pair, 3000, 5000) == 36
        assert split.tail_workspace_elements(pair, 3000, 5000) == 36 * 3 * 128 * 128


# -- the plan and the PTX ------------------------------------------------------------------------
def test_plan_loops_run_the_items_own_count(gemm: Any) -> None:
    plan = gemm.make_plan(gemm.GemmConfig(tile_mn=(128, 128), tail_split=2))
    for name in ("load", "mma"):
        (task,) = [t for t in plan.tasks if t.name == name]
        loops = [n for n, _ in iter_nodes(task.schedule.body) if isinstance(n, DomainLoop)]
        assert [loop.end for loop in loops] == [DynamicBound("GemmTask.item_blocks")]
    (task,) = [t for t in plan.tasks if t.name == "mma"]
    (tiles,) = [n for n in task.schedule.body if isinstance(n, WorkTileLoop)]
    (guarded,) = [n for n in tiles.body if isinstance(n, ConditionalBlock)]
    assert isinstance(guarded.guard, OpaqueCondition) and guarded.guard.key == "last"


TAIL: list[dict[str, Any]] = [
    {"tail_split": 2},
    {"tail_split": 3},
    {"dtype": "e4m3", "tile_mn": (128, 128), "tail_split": 2},  # + promotion (per-item rest)
    {"dtype": "e4m3", "tile_mn": (128, 128), "tail_split": 3, "scale": "rowwise"},
    {"tile_mn": (128, 128), "tail_split": 4, "alpha": 0.5, "beta": 1.0, "bias": True},
    {"tile_mn": (64, 256), "tail_split": 2},  # one consumer warpgroup
    {"tile_mn": (64, 128), "tail_split": 3, "layout": "nt"},  # MN-major operands
    {"tile_mn": (128, 192), "epi_stages": 3, "tail_split": 2},
    {"tile_mn": (128, 128), "k_block_bytes": 256, "tail_split": 2, "dtype": "e4m3"},
    {"tile_mn": (128, 128), "cluster_mn": (2, 1), "tail_split": 3, "dtype": "e4m3"},  # clusters
    {"cluster_mn": (1, 2), "tail_split": 2},
]


@pytest.mark.parametrize("options", TAIL, ids=lambda o: "-".join(map(str, o.values())))
def test_tail_same_code_as_twin(gemm: Any, options: dict[str, Any]) -> None:
    out = gemm.compile_only(gemm.GemmConfig(**options))
    assert out["verified"] is True and out["same_counts"] is True
    assert out["ts"] == out["twin"] and out["ts_total"] == out["twin_total"]


@pytest.mark.parametrize("name", ["ts", "twin"])
def test_tail_in_the_ptx(gemm: Any, name: str) -> None:
    """A 128 x 128 tile (64 fp32 values per consumer thread), 3 chunks: split-K's hand-over
    (one store per value, three loads, one atomic add and reset, two GPU fences), and no more
    WGMMAs than the plain kernel (one K loop, its bound per item)."""

    def ptx(**options: Any) -> str:
        cfg = gemm.GemmConfig(tile_mn=(128, 128), **options)
        return str(compile_ptx(dict(gemm.kernels(cfg))[name], *gemm.fake_operands(cfg))[1])

    plain, tail = ptx(), ptx(tail_split=3)

    def count(text: str, pattern: str) -> int:
        return len(re.findall(pattern, text))

    assert count(tail, r"st\.global\.b32") - count(plain, r"st\.global\.b32") == 64
    assert count(tail, r"ld\.global[.\w]*\.b32") - count(plain, r"ld\.global[.\w]*\.b32") == 3 * 64
    assert count(tail, r"atom\.global\.acq_rel\.add") == 1
    assert count(tail, r"atom\.global\.exch") == 1
    assert count(tail, r"fence\.acq_rel\.gpu") == 2
    assert count(tail, r"wgmma\.mma_async") == count(plain, r"wgmma\.mma_async")


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas (CUDA toolkit)")
@pytest.mark.parametrize("options", TAIL[:3], ids=lambda o: "-".join(map(str, o.values())))
def test_ptxas_no_spills_no_serialized_wgmma(
    gemm: Any, options: dict[str, Any], ptxas_log: Callable[..., str]
) -> None:
    """The per-item K loop keeps the 128-value accumulator (128 x 256) and the promoted
    total (FP8 128 x 128) in registers, and the WGMMAs unserialized (no C7514)."""
    cfg = gemm.GemmConfig(**options)
    for name, fn in gemm.kernels(cfg):
        _, ptx = compile_ptx(fn, *gemm.fake_operands(cfg))
        log = ptxas_log(ptx, name)
        assert "0 bytes spill stores, 0 bytes spill loads" in log, (name, log)
        assert "C7514" not in log, (name, log)


def test_tail_ptx_passes_translation_validation(gemm: Any) -> None:
    cfg = gemm.GemmConfig(tile_mn=(128, 128), tail_split=2, dtype="e4m3", scale="tensor")
    report = gemm.gemm_kernel(cfg).compile(*gemm.fake_operands(cfg)).check()
    assert report.ok, report.as_text()


def test_default_is_unchanged(gemm: Any) -> None:
    """Off by default: ``tail_split=1`` is the plain configuration."""
    cfg = gemm.GemmConfig()
    assert cfg.tail_split == 1 and not cfg.split
    assert dataclasses.replace(cfg, tail_split=1) == cfg


def _chunk_rounds(ragged: int, chunks: int, workers: int) -> int:
    """Rounds the tail's chunks take, dealt round-robin one by one (the oracle: no formula)."""
    per_worker = [0] * workers
    for item in range(ragged * chunks):
        per_worker[item % workers] += 1
    return max(per_worker)


@pytest.mark.parametrize(
    ("mnk", "ragged"),
    [((640, 4736, 4096), 53), ((512, 6784, 4096), 80), ((1920, 1920, 4096), 93)],
    ids=["r=0.40", "r=0.61", "r=0.70"],
)
def test_tuner_tries_a_tail_split_only_where_it_shortens_the_last_round(
    tune: Any, gemm: Any, mnk: tuple[int, int, int], ragged: int
) -> None:
    """128 x 128 tiles on 132 CTAs with ``ragged`` tiles in the last round: a tail split in
    ``s`` is a candidate exactly where its chunks take fewer than ``s`` rounds of chunks (0.40
    of a round: 2 and 3; 0.61: only 3; 0.70: neither, as 2 and 3 chunks both take a round)."""
    m, n, _ = mnk
    assert (m // 128) * (n // 128) % 132 == ragged
    cands = tune.candidates(mnk, gemm.GemmConfig())
    for chunks in (2, 3):
        template = {"tile_mn": (128, 128), "cluster_mn": (1, 1), "tail_split": chunks}
        tried = any(all(c.get(k) == v for k, v in template.items()) for c in cands)
        assert tried == (_chunk_rounds(ragged, chunks, 132) < chunks), chunks
