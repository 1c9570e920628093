"""The stream-K tail in the Hopper GEMM (``GemmConfig.stream_k``).

``T`` tiles on ``P`` persistent clusters: the first ``T - r`` are work items whole, the last
``r = T mod P`` tiles' ``U = r k`` K blocks are shared out evenly, at most two pieces a cluster,
and the last piece to arrive at a tile sums its pieces in worker order. Checked on the CPU: the
option's typed errors and command line, the piece arithmetic against a brute-force deal of the
units (written here from the definition, unit by unit), the kernel raster on Python integers,
the host's sizes, the verified plan, and the TS kernel's PTX against the hand-written twin's.
The GPU runs are ``tests/test_gemm_edge_shapes.py::test_stream_k_shapes``.
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


# -- configuration ------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["on", 1, None])
def test_stream_k_is_a_bool(gemm: Any, bad: Any) -> None:
    from ts_runtime.errors import RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match=r"stream_k=.*not a bool") as err:
        gemm.GemmConfig(stream_k=bad)
    assert "True or False" in err.value.fix


@pytest.mark.parametrize(
    "options", [{"tile_mn": (64, 128), "kernel": "pingpong"}, {"scheduler": "dynamic"}]
)
def test_stream_k_needs_the_static_cooperative_kernel(gemm: Any, options: dict[str, Any]) -> None:
    from ts_runtime.errors import RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match=r"stream_k=True, .*cooperative kernel") as err:
        gemm.GemmConfig(stream_k=True, **options)
    assert "scheduler='static'" in err.value.fix


@pytest.mark.parametrize("other", [{"split_k": 2, "tile_mn": (128, 128)}, {"tail_split": 2}])
def test_stream_k_excludes_the_other_splits(gemm: Any, other: dict[str, Any]) -> None:
    from ts_runtime.errors import RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match=r"stream_k=True, split_k=\d, tail_split=\d"):
        gemm.GemmConfig(stream_k=True, **other)
    cfg = gemm.GemmConfig(stream_k=True, cluster_mn=(2, 1))
    assert cfg.split and not cfg.tail and cfg.stream_k


def test_stream_k_refuses_a_deferred_store(gemm: Any) -> None:
    from ts_runtime.errors import RuntimeConfigError

    fp8 = {"dtype": "e4m3", "scale": "tensor", "tile_mn": (128, 128)}
    with pytest.raises(RuntimeConfigError, match="defer_store=True"):
        gemm.GemmConfig(stream_k=True, defer_store=True, **fp8)


def test_cli_stream_k_on_the_table_pick(gemm: Any, capsys: pytest.CaptureFixture[str]) -> None:
    mnk = ["--mnk", "4096", "4096", "4096"]
    assert gemm.main(["--compile-only", *mnk, "--stream-k", "on"]) == 0
    out = json.loads(capsys.readouterr().out)
    cfg = out["config"]
    pick, _ = importlib.import_module("_gemm_table").pick((4096, 4096, 4096))
    assert out["config_source"].endswith("+stream_k") and out["same_counts"]
    assert cfg["stream_k"] is True and (cfg["tail_split"], cfg["split_k"]) == (1, 1)
    assert (cfg["tile_mn"], cfg["cluster_mn"]) == (list(pick.tile_mn), list(pick.cluster_mn))
    assert out["verified"] is True


def test_cli_stream_k_with_a_tail_split_is_refused(
    gemm: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        gemm.main(["--compile-only", "--tail-split", "2", "--stream-k", "on"])
    assert "stream_k=True, split_k=1, tail_split=2" in capsys.readouterr().err


# -- the pieces ---------------------------------------------------------------------------------
def _deal(ragged: int, k_blocks: int, workers: int) -> dict[tuple[int, int], list[int]]:
    """The definition, unit by unit: ``U = r k`` units (``k`` counted as 1 when 0) dealt in
    order to ``min(P, U)`` workers, worker ``w`` taking ``floor((w + 1) U / P) - floor(w U /
    P)`` of them. Returns ``(worker, tile) -> K blocks`` it holds of that tile."""
    k = max(k_blocks, 1)
    units = ragged * k
    sharers = min(workers, units)
    out: dict[tuple[int, int], list[int]] = {}
    unit = 0
    for w in range(sharers):
        share = (w + 1) * units // sharers - w * units // sharers
        for _ in range(share):
            out.setdefault((w, unit // k), []).append(unit % k)
            unit += 1
    assert unit == units
    return out


CASES = [
    (workers, ragged, k)
    for workers in (1, 2, 7, 66, 132)
    for ragged in sorted({0, 1, 2, workers // 2, workers - 1})
    if ragged < workers or ragged == 0
    for k in (0, 1, 2, 5, 64, 67)
]


@pytest.mark.parametrize("workers, ragged, k", CASES)
def test_pieces_are_the_deal(workers: int, ragged: int, k: int) -> None:
    """Every non-empty item is one worker's blocks of one tile, in order; every dealt piece is
    an item; a tile's pieces come from consecutive workers, named by each of its items."""
    from ts_codegen.tiles_raster import stream_k_piece

    deal = _deal(ragged, k, workers)
    got: dict[tuple[int, int], list[int]] = {}
    for offset in range(2 * workers):
        p = stream_k_piece(1 + offset, ragged, k, workers)
        if p.count <= 0:
            continue
        assert p.worker == offset % workers  # item T - r + offset runs on CTA offset mod P
        assert p.blocks == (p.count if k else 0)
        got[(p.worker, p.tile)] = list(range(p.first_block, p.first_block + p.count))
        holders = sorted(w for w, t in deal if t == p.tile)
        assert holders == list(range(p.first_worker, p.last_worker + 1))
    assert got == deal
    # at most two pieces a worker, in consecutive tiles
    for w in range(workers):
        tiles = sorted(t for v, t in deal if v == w)
        assert len(tiles) <= 2 and tiles == list(
            range(min(tiles, default=0), max(tiles, default=-1) + 1)
        )


@pytest.mark.parametrize("workers, ragged, k", [c for c in CASES if c[1] and c[2]])
def test_every_worker_ends_within_one_unit(workers: int, ragged: int, k: int) -> None:
    """The point of it: no worker holds more than ``ceil(r k / P)`` K blocks of the tail, where
    a whole tile each would leave ``P - r`` workers idle for ``k`` blocks."""
    from ts_codegen.tiles_raster import stream_k_piece

    loads = [0] * workers
    for offset in range(2 * workers):  # the implementation's pieces, not the oracle's deal
        p = stream_k_piece(1 + offset, ragged, k, workers)
        loads[p.worker] += max(p.count, 0)
    assert sum(loads) == ragged * k
    assert max(loads) == -(-ragged * k // workers)


@pytest.mark.parametrize("along_m", [True, False])
@pytest.mark.parametrize("swizzle", [1, 2, 4])
def test_kernel_raster_deals_the_tail(along_m: bool, swizzle: int) -> None:
    """``TileRaster(stream_k=True)``'s kernel arithmetic on Python integers: whole tiles in the
    plain raster's order, then two items a worker, each on its piece's tile; empty pieces and
    indices past the items invalid; the grid is the ``workers`` clusters."""
    from ts_codegen import TileRaster
    from ts_codegen.tiles_raster import raster_order

    for shape in ((5, 7, 1), (24, 20, 1), (3, 3, 1), (12, 11, 1)):
        for k in (0, 3, 16):
            raster = TileRaster(
                shape, (1, 1, 1), swizzle, along_m, stream_k=True, workers=13, k_blocks=k
            )
            order = list(raster_order(shape, (1, 1), swizzle, along_m))
            first = len(order) - len(order) % 13
            assert (raster.tail_first, raster.ragged) == (first, len(order) % 13)
            deal = _deal(len(order) % 13, k, 13)
            seen = {}
            for i in range(raster.num_tiles + 13):
                valid = raster.valid(i)
                if i < first:
                    assert valid and raster.cluster_coord(i) == (*order[i][:2], 0)
                    continue
                if not valid:
                    assert i >= raster.num_tiles or raster.piece(i - first + 1).count <= 0
                    continue
                m, n, l_coord = raster.cluster_coord(i)
                p = raster.piece(l_coord)
                assert l_coord == i - first + 1 and (m, n) == order[first + p.tile][:2]
                seen[(p.worker, p.tile)] = list(range(p.first_block, p.first_block + p.count))
            assert seen == deal
            assert raster.get_grid_shape(13) == (1, 1, 13)


def test_kernel_raster_deals_cluster_tiles() -> None:
    from ts_codegen import TileRaster
    from ts_codegen.tiles_raster import raster_order

    raster = TileRaster((24, 40, 1), (2, 1, 1), 4, True, stream_k=True, workers=66, k_blocks=32)
    order = list(raster_order((24, 40, 1), (2, 1), 4, True))
    assert len(order) == 480 and (raster.tail_first, raster.ragged) == (462, 18)
    assert raster.num_tiles == 462 + 2 * 66 and raster.get_grid_shape(66) == (2, 1, 66)
    tiles = {raster.cluster_coord(i)[:2] for i in range(462, 594) if raster.valid(i)}
    assert tiles == {o[:2] for o in order[462:]}


def test_stream_raster_refuses_bad_arguments() -> None:
    from ts_codegen import TileRaster

    with pytest.raises(ValueError, match="one batch"):
        TileRaster((4, 4, 2), stream_k=True, workers=132, k_blocks=4)
    with pytest.raises(ValueError, match="k_blocks"):
        TileRaster((4, 4, 1), stream_k=True, workers=132)
    with pytest.raises(ValueError, match="pick one"):
        TileRaster((4, 4, 1), tail_split=2, stream_k=True, workers=132, k_blocks=4)
    with pytest.raises(ValueError, match="this raster has none"):
        TileRaster((4, 4, 1)).piece(1)


# -- host sizes -----------------------------------------------------------------------------------
def test_stream_sizes(gemm: Any) -> None:
    """3000 x 5000 in 128 x 256 tiles: 480 on 132 CTAs leave 84 in the tail; its workspace is
    a slot per (worker + tail tile), ``(132 + 84) x 128 x 256``. 4096^3 in 256 x 128, 1 x 2:
    256 cluster tiles on 66 clusters leave 58, 116 CTA tiles (counters), ``66 x 2 + 116`` slots.
    No tail, no workspace."""
    split = importlib.import_module("_gemm_split")
    host = importlib.import_module("_gemm_host")
    fit = importlib.import_module("_gemm_config").fit_swizzle
    cfg = fit(gemm.GemmConfig(stream_k=True), 5000, 3000)
    assert split.tail_tiles(cfg, 3000, 5000) == 84
    assert host.workspace_elements(cfg, 3000, 5000) == (132 + 84) * 128 * 256
    pair = fit(gemm.GemmConfig(stream_k=True, tile_mn=(256, 128), cluster_mn=(1, 2)), 4096, 4096)
    assert split.tail_tiles(pair, 4096, 4096) == 116
    assert host.workspace_elements(pair, 4096, 4096) == (66 * 2 + 116) * 256 * 128
    whole = fit(gemm.GemmConfig(stream_k=True, tile_mn=(128, 128)), 1408, 1536)
    assert split.tail_tiles(whole, 1536, 1408) == 0 == host.workspace_elements(whole, 1536, 1408)


# -- the plan and the PTX ------------------------------------------------------------------------
def test_plan_loops_run_the_items_own_count(gemm: Any) -> None:
    plan = gemm.make_plan(gemm.GemmConfig(stream_k=True, cluster_mn=(2, 1)))
    for name in ("load", "mma"):
        (task,) = [t for t in plan.tasks if t.name == name]
        loops = [n for n, _ in iter_nodes(task.schedule.body) if isinstance(n, DomainLoop)]
        assert [loop.end for loop in loops] == [DynamicBound("GemmTask.item_blocks")]
    (task,) = [t for t in plan.tasks if t.name == "mma"]
    (tiles,) = [n for n in task.schedule.body if isinstance(n, WorkTileLoop)]
    (guarded,) = [n for n in tiles.body if isinstance(n, ConditionalBlock)]
    assert isinstance(guarded.guard, OpaqueCondition) and guarded.guard.key == "last"


STREAM: list[dict[str, Any]] = [
    {"stream_k": True},
    {"tile_mn": (256, 128), "cluster_mn": (1, 2), "stream_k": True},
    {"dtype": "e4m3", "tile_mn": (128, 128), "cluster_mn": (2, 1), "stream_k": True},
    {"dtype": "e4m3", "tile_mn": (128, 192), "epi_stages": 3, "stream_k": True}
    | {"scale": "rowwise", "cluster_mn": (1, 2)},
    {"dtype": "e4m3", "tile_mn": (128, 192), "epi_stages": 3, "stream_k": True}
    | {"cluster_mn": (2, 1), "promote_stagger": True},
    {"tile_mn": (128, 128), "stream_k": True, "alpha": 0.5, "beta": 1.0, "bias": True},
    {"tile_mn": (64, 128), "stream_k": True, "layout": "nt"},
]


@pytest.mark.parametrize("options", STREAM, ids=lambda o: "-".join(map(str, o.values())))
def test_stream_same_code_as_twin(gemm: Any, options: dict[str, Any]) -> None:
    out = gemm.compile_only(gemm.GemmConfig(**options))
    assert out["verified"] is True and out["same_counts"] is True
    assert out["ts"] == out["twin"] and out["ts_total"] == out["twin_total"]


@pytest.mark.parametrize("name", ["ts", "twin"])
def test_stream_in_the_ptx(gemm: Any, name: str) -> None:
    """A 128 x 128 tile (64 fp32 values a consumer thread) hands over in 16-byte accesses: 16
    vector stores, and 16 vector loads in each of the two loops over the other pieces (those
    before the CTA's own piece, which it adds from its registers, and those after); one atomic
    add and reset, two GPU fences, and no more WGMMAs than the plain kernel."""

    def ptx(**options: Any) -> str:
        cfg = gemm.GemmConfig(tile_mn=(128, 128), **options)
        return str(compile_ptx(dict(gemm.kernels(cfg))[name], *gemm.fake_operands(cfg))[1])

    plain, stream = ptx(), ptx(stream_k=True)

    def count(text: str, pattern: str) -> int:
        return len(re.findall(pattern, text))

    assert count(stream, r"st\.global\.v4\.b32") == 16
    assert count(stream, r"ld\.global[.\w]*\.v4\.b32") == 2 * 16
    assert count(stream, r"st\.global\.b32") == count(plain, r"st\.global\.b32")
    assert count(stream, r"atom\.global\.acq_rel\.add") == 1
    assert count(stream, r"atom\.global\.exch") == 1
    assert count(stream, r"fence\.acq_rel\.gpu") == 2
    assert count(stream, r"wgmma\.mma_async") == count(plain, r"wgmma\.mma_async")


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas (CUDA toolkit)")
@pytest.mark.parametrize("options", STREAM[:3], ids=lambda o: "-".join(map(str, o.values())))
def test_ptxas_no_spills_no_serialized_wgmma(
    gemm: Any, options: dict[str, Any], ptxas_log: Callable[..., str]
) -> None:
    cfg = gemm.GemmConfig(**options)
    for name, fn in gemm.kernels(cfg):
        _, ptx = compile_ptx(fn, *gemm.fake_operands(cfg))
        log = ptxas_log(ptx, name)
        assert "0 bytes spill stores, 0 bytes spill loads" in log, (name, log)
        assert "C7514" not in log, (name, log)


def test_stream_ptx_passes_translation_validation(gemm: Any) -> None:
    cfg = gemm.GemmConfig(tile_mn=(128, 128), stream_k=True, dtype="e4m3", scale="tensor")
    report = gemm.gemm_kernel(cfg).compile(*gemm.fake_operands(cfg)).check()
    assert report.ok, report.as_text()


def test_default_is_unchanged(gemm: Any) -> None:
    cfg = gemm.GemmConfig()
    assert cfg.stream_k is False and not cfg.split
    assert dataclasses.replace(cfg, stream_k=False) == cfg


@pytest.mark.parametrize(
    ("mnk", "tried"),
    [((8192, 8192, 8192), True), ((4096, 4096, 4096), False), ((16384, 16384, 1024), False)],
    ids=["idle62", "idle8", "idle15"],
)
def test_tuner_tries_stream_k_only_where_the_last_round_idles_long(
    tune: Any, gemm: Any, mnk: tuple[int, int, int], tried: bool
) -> None:
    """128 x 256 in 2 x 1 on 66 clusters: 8192^3 is 1,024 cluster tiles, 34 in the last round,
    which leaves each cluster idle for 32 / 66 of its 128 K blocks (62 >= 48); 4096^3 is 256,
    58 left, 8 / 66 of 64 (8); 16384 x 16384 x 1024 is 4,096, 4 left, 62 / 66 of 16 (15)."""
    cands = tune.candidates(mnk, gemm.GemmConfig())
    template = {"tile_mn": (128, 256), "cluster_mn": (2, 1), "stream_k": True}
    assert any(all(c.get(k) == v for k, v in template.items()) for c in cands) == tried
