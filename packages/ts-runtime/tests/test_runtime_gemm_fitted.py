"""Fitted tile widths in the Hopper GEMM: 256 x 152 and epilogue sub-tiles that do not divide BN.

cuBLAS runs 3000 x 5000 x 4000 on a 152-wide tile: 12 x 33 = 396 tiles, three whole rounds
of 132 SMs. Its B stage is 19 swizzle atoms of 8 rows (the CuTe DSL aborts slicing such a
staged layout, so the TMA box's layout is cut from the plain part and composed again), its
accumulator 19 column groups a row block (``stmatrix``'s retiled view pads them to 20, so the
epilogue indexes the accumulator in its MMA layout), and its epilogue's last 32-column sub-tile
starts at column 120, overlapping the fourth. The GPU side of all of it is
``tests/test_gemm_edge_shapes.py`` (the ``256x152`` and ``epi64`` families).
"""

from __future__ import annotations

import importlib
import re
import shutil
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("cutlass")
pytest.importorskip("ts_runtime")
pytest.importorskip("ts_verify")

from ts_codegen.dsl import compile_ptx
from ts_runtime.errors import RuntimeConfigError


def _same(out: dict[str, Any]) -> None:
    assert out["verified"] is True
    assert out["same_counts"] is True
    assert out["ts"] == out["twin"]


def _sub_tiles(bn: int, en: int) -> list[int]:
    """The oracle: sub-tile starts left to right, ``en`` apart, the last moved back to end
    at ``bn`` (written out, not the kernels' formula)."""
    starts = []
    col = 0
    while col + en < bn:
        starts.append(col)
        col += en
    starts.append(bn - en)
    return starts


@pytest.mark.parametrize(
    ("tile", "epi_n"), [((256, 152), 32), ((256, 152), 48), ((256, 160), 48), ((256, 160), 64)]
)
def test_epilogue_sub_tiles_cover_the_tile_once_each_column(
    gemm: Any, tile: tuple[int, int], epi_n: int
) -> None:
    """``epi_columns`` is the oracle's count; the starts cover every column of the tile, each
    a multiple of 8 (4 accumulator values a thread per 8 columns: a run starts there)."""
    cfg = gemm.GemmConfig(tile_mn=tile, epi_n=epi_n, epi_stages=2)
    starts = _sub_tiles(tile[1], epi_n)
    assert cfg.epi_columns == len(starts)
    assert cfg.epi_subtiles == 2 * len(starts)  # two 128-row blocks of a 256-row tile
    covered = {c for s in starts for c in range(s, s + epi_n)}
    assert covered == set(range(tile[1]))
    assert all(s % 8 == 0 for s in starts)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"cluster_mn": (2, 1), "epi_stages": 5, "alpha": 0.5, "beta": 1.0, "bias": True},
        {"cluster_mn": (1, 2), "dtype": "e4m3", "scale": "rowwise", "beta": 1.0, "bias": True},
    ],
    ids=["1x1", "2x1-fused", "1x2-e4m3-rowwise-fused"],
)
def test_152_wide_tile_same_code_as_twin(gemm: Any, options: dict[str, Any]) -> None:
    """256 x 152 in every cluster (2 x 1: each CTA multicasts 76 of B's rows): one
    ``m64n152`` WGMMA per row block and K step, ten epilogue sub-tiles (two TMA stores a
    row block at the overlapped edge included), the TS kernel's PTX counts the twin's."""
    cfg = gemm.GemmConfig(tile_mn=(256, 152), **{"epi_stages": 2, **options})
    assert (cfg.mma_n, cfg.acc_values, cfg.epi_subtiles) == (152, 152, 10)
    out = gemm.compile_only(cfg)
    _same(out)
    assert out["ts"]["wgmma.mma_async"] == 8
    assert out["ts"]["stmatrix"] == 2 * cfg.epi_subtiles
    _, ptx = compile_ptx(dict(gemm.kernels(cfg))["ts"], *gemm.fake_operands(cfg))
    k = 32 if cfg.fp8 else 16
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n152k{k}\.", ptx)


def test_stage_layout_of_an_odd_count_of_swizzle_atoms(gemm: Any, steps: Any) -> None:
    """The TMA box's SMEM layout of a 152-row B stage is the 2-D layout of 19 atoms (slicing
    the staged composed layout would abort the process)."""
    import cutlass.cute as cute

    cfg = gemm.GemmConfig(tile_mn=(256, 152), epi_stages=2)
    seen: dict[str, str] = {}

    @cute.jit
    def trace() -> None:
        _, b, _ = steps.make_smem_layouts(cfg)
        seen["stage"] = str(steps.stage_layout(b))
        seen["staged"] = str(b)

    cute.compile(trace)
    assert seen["stage"].endswith("((8,19),(64,1)):((64,512),(1,0))"), seen
    assert "9728" in seen["staged"]  # 19 atoms of 512 elements a stage


def test_epilogue_reads_the_accumulator_unpadded(gemm: Any, steps: Any) -> None:
    """The epilogue's view of a 152-wide accumulator has its 152 values a thread (the
    ``stmatrix`` retile would have 160, and its second row block would start at 80)."""
    from runtime_gemm_views import epilogue_view_sizes

    cfg = gemm.GemmConfig(tile_mn=(256, 152), epi_stages=2)
    seen = epilogue_view_sizes(cfg, steps)
    assert seen["acc"] == cfg.acc_values == 152
    assert seen["retiled"] == 160
    assert seen["frag"] == 16  # 128 x 32 over 256 threads


@pytest.mark.parametrize("epi_n", [8, 20, 0, 160, True, 32.0])
def test_epilogue_widths_the_store_cannot_take_are_refused(gemm: Any, epi_n: Any) -> None:
    """``stmatrix`` x4 stores 16 columns: an 8-wide sub-tile ran and wrote wrong values on the
    GPU before this check; wider than the tile, or not an int, is refused too."""
    with pytest.raises(RuntimeConfigError, match="multiple of 16") as err:
        gemm.GemmConfig(tile_mn=(256, 152), epi_n=epi_n, epi_stages=2)
    assert "epi_n=32" in err.value.fix


def test_tma_epilogue_refuses_a_sub_tile_the_store_cannot_take() -> None:
    """The runtime block checks what it is given, whatever builds it."""
    from ts_runtime.blocks import TmaEpilogue

    class Acc:
        tile_mn = (256, 152)

    acc: Any = Acc()  # only its tile is read

    with pytest.raises(RuntimeConfigError, match="multiple of 16"):
        TmaEpilogue(
            name="c", acc=acc, atom=None, gmem=None, smem=None, sub_tile=(128, 8), barrier_id=1
        )
    ok = TmaEpilogue(
        name="c", acc=acc, atom=None, gmem=None, smem=None, sub_tile=(128, 32), barrier_id=1
    )
    assert ok.sub_tile == (128, 32)


@pytest.mark.parametrize(
    "options",
    [
        {"epi_stages": 5},
        {"dtype": "e4m3", "scale": "tensor", "cluster_mn": (2, 1), "epi_stages": 5},
        {"dtype": "e4m3", "scale": "rowwise", "beta": 1.0, "bias": True, "epi_n": 48}
        | {"epi_stages": 2, "tail_split": 2},
    ],
    ids=["bf16", "e4m3-2x1", "e4m3-rowwise-fused-epi48-tail2"],
)
def test_128_by_152_tile_promotes_fp8_same_code_as_twin(gemm: Any, options: dict[str, Any]) -> None:
    """128 x 152: one m64n152 WGMMA a warpgroup and K step; FP8 promotes its 76 values a
    thread (a wait for the group's WGMMAs every 4 blocks: one more ``wgmma.wait_group``);
    five 32-column sub-tiles (the fifth at 120) or four of 48 (the fourth at 104)."""
    cfg = gemm.GemmConfig(tile_mn=(128, 152), **options)
    assert (cfg.mma_n, cfg.acc_values) == (152, 76)
    assert cfg.promotion == (4 if cfg.fp8 else 0)
    assert cfg.epi_subtiles == (4 if cfg.epi_n == 48 else 5)
    out = gemm.compile_only(cfg)
    _same(out)
    assert out["ts"]["wgmma.mma_async"] == 4
    assert out["ts"]["wgmma.wait_group"] == (4 if cfg.fp8 else 3)


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas (CUDA toolkit)")
def test_ptxas_keeps_the_152_wide_tile_in_registers(
    gemm: Any, ptxas_log: Callable[..., str]
) -> None:
    """152 fp32 values a consumer thread with the fused epilogue (256 x 152), and FP8's
    76 + 76 promoted ones (128 x 152): no spill, one WGMMA chain."""
    cfg = gemm.GemmConfig(
        tile_mn=(256, 152), cluster_mn=(2, 1), epi_stages=2, alpha=0.5, beta=1.0, bias=True
    )
    fp8 = gemm.GemmConfig(
        tile_mn=(128, 152), dtype="e4m3", scale="rowwise", beta=1.0, bias=True, epi_stages=5
    )  # 76 + 76 promoted values a thread
    for one, name in ((cfg, "ts"), (fp8, "ts_fp8")):
        _, ptx = compile_ptx(dict(gemm.kernels(one))["ts"], *gemm.fake_operands(one))
        log = ptxas_log(ptx, name)
        assert "0 bytes spill stores, 0 bytes spill loads" in log, log
        assert log.count("C7519") <= 1 and "C7514" not in log, log


def _rounds_x_width(mnk: tuple[int, int, int], tile: tuple[int, int], cluster: Any) -> int:
    """The oracle: deal the cluster tiles to 132 / cluster-size clusters, one at a time."""
    m, n, _ = mnk
    cells = [
        (i, j) for i in range(0, m, tile[0] * cluster[0]) for j in range(0, n, tile[1] * cluster[1])
    ]
    workers = 132 // (cluster[0] * cluster[1])
    rounds = 0
    while cells:
        cells = cells[workers:]
        rounds += 1
    return rounds * tile[1]


@pytest.mark.parametrize("cluster", [(1, 1), (2, 1), (1, 2)])
@pytest.mark.parametrize(
    "mnk", [(3000, 5000, 4000), (4096, 4096, 4096), (8192, 8192, 8192), (6000, 7000, 64)]
)
def test_fit_width_takes_the_fewest_rounds_x_width(
    gemm: Any, table: Any, mnk: tuple[int, int, int], cluster: tuple[int, int]
) -> None:
    """A 256 x 160 or 256 x 152 entry becomes the width the oracle says does least work (its
    own on a tie); 3000 x 5000 takes 152 unless a 1 x 2 cluster pads its 33 tile columns."""
    for tile in ((256, 160), (256, 152)):
        cfg = gemm.GemmConfig(tile_mn=tile, cluster_mn=cluster, epi_stages=2)
        fitted = table.fit_width(cfg, mnk).tile_mn
        costs = {t: _rounds_x_width(mnk, t, cluster) for t in ((256, 160), (256, 152))}
        best = min(costs.values())
        assert costs[fitted] == best
        if costs[tile] == best:
            assert fitted == tile
    wide = gemm.GemmConfig(tile_mn=(256, 160), cluster_mn=cluster, epi_stages=2)
    fitted = table.fit_width(wide, mnk)
    if mnk[:2] == (3000, 5000):
        assert fitted.tile_mn == ((256, 160) if cluster == (1, 2) else (256, 152))


def test_fit_width_leaves_other_tiles_and_empty_problems(gemm: Any, table: Any) -> None:
    cfg = gemm.GemmConfig()
    assert table.fit_width(cfg, (3000, 5000, 4000)) is cfg
    wide = gemm.GemmConfig(tile_mn=(256, 160), epi_stages=2)
    assert table.fit_width(wide, (0, 5000, 64)).tile_mn == (256, 160)


def test_the_table_runs_3000_by_5000_on_the_fitted_width(table: Any) -> None:
    """The shipped table's ragged class and the pick on its sweep shape."""
    cfg, source = table.pick((3000, 5000, 4000))
    assert source == "table:Ml-Nl-Km-W1r"
    assert (cfg.tile_mn, cfg.cluster_mn, cfg.epi_stages) == ((256, 152), (2, 1), 2)


def test_from_sweep_leaves_out_a_width_the_table_would_refit(
    gemm: Any, table: Any, tune: Any, tmp_path: Any, capsys: Any
) -> None:
    """A 256 x 152 timed on 8192^3 would run as 256 x 160 from the table: not its timing."""
    import dataclasses
    import json

    plain = gemm.GemmConfig(tile_mn=(128, 256), cluster_mn=(2, 1))
    narrow = gemm.GemmConfig(tile_mn=(256, 152), cluster_mn=(2, 1), epi_stages=2)
    row: dict[str, Any] = {"bench": "gemm_sweep", "mnk": [8192, 8192, 8192]}
    row["config"] = dataclasses.asdict(plain)
    row["ts"] = {"ok": True, "tflops": 700.0, "graph_tflops": 700.0}
    row["vs:narrow"] = {"ok": True, "tflops": 900.0, "graph_tflops": 900.0}
    row["vs:narrow"]["config"] = dataclasses.asdict(narrow)
    log = tmp_path / "ab.log"
    log.write_text(json.dumps(row) + "\n")
    out = tmp_path / "t.json"
    assert tune.main(["--from-sweep", str(log), "--margin", "0", "-o", str(out)]) == 0
    (entry,) = table.load_table(out)["entries"]
    assert entry["config"]["tile_mn"] == [128, 256]
    assert "fits (256, 152) to (256, 160)" in capsys.readouterr().out


def test_the_command_line_refits_the_width_it_does_not_set(gemm: Any) -> None:
    """``--cluster 1x2`` on the table's 256 x 152 for 3000 x 5000 pads its 33 tile columns
    to 34 (four rounds): the width is fitted again, to 160; ``--tile`` is taken as given."""
    import argparse

    cli = importlib.import_module("_gemm_cli")

    def config(*words: str) -> Any:
        parser = argparse.ArgumentParser()
        cli.add_config_args(parser)
        return cli.config_for(parser.parse_args(list(words)), (3000, 5000, 4000))[0]

    assert config().tile_mn == (256, 152)
    assert config("--cluster", "1x2").tile_mn == (256, 160)
    assert config("--cluster", "1x2", "--tile", "256x152").tile_mn == (256, 152)
