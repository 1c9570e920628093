"""Deferred stores in the Hopper GEMM (``GemmConfig.defer_store``), on the CPU.

With two-level accumulation the tile's product ends in a second register tile (the fp32
total), so the tile's epilogue can run once the next tile's first K block of WGMMAs is issued:
those write the other register tile while the consumer warpgroups convert and store this one.
The CTA's last tile, and every tile of a problem without K blocks, is stored at once. The GPU
side is ``tests/test_gemm_edge_shapes.py`` (``test_deferred_store_shapes``).
"""

from __future__ import annotations

import dataclasses
import importlib
import shutil
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("cutlass")
pytest.importorskip("ts_runtime")
pytest.importorskip("ts_verify")

from ts_codegen.dsl import compile_ptx
from ts_runtime.errors import RuntimeConfigError

FP8: dict[str, Any] = {"dtype": "e4m3", "scale": "tensor", "tile_mn": (128, 128)}
FP8["cluster_mn"] = (2, 1)
CASES: dict[str, dict[str, Any]] = {
    "e4m3-128x128-2x1": FP8,
    "e4m3-128x128-1x2-rowwise-fused": FP8
    | {"scale": "rowwise", "cluster_mn": (1, 2), "beta": 1.0, "bias": True},
    "e4m3-64x128-kb256": FP8 | {"tile_mn": (64, 128), "k_block_bytes": 256},
    "bf16-128x128-promote4": {"tile_mn": (128, 128), "promote_every": 4},
}


def _wgmma_before(lines: list[str], at: int) -> str:
    """The oracle: the last ``wgmma`` instruction (mnemonic and operand) above line ``at``."""
    for line in reversed(lines[:at]):
        words = line.split()
        if words and words[0].startswith("wgmma."):
            name = ".".join(words[0].split(".")[:2])  # wgmma.wait_group.sync.aligned: the op
            return f"{name} {words[1].rstrip(';')}" if name == "wgmma.wait_group" else name
    return ""


def _epilogue_entries(ptx: str) -> list[str]:
    """For each run of ``stmatrix`` (an epilogue copy), the WGMMA instruction before it."""
    lines = ptx.splitlines()
    out, inside = [], False
    for i, line in enumerate(lines):
        if "stmatrix" in line and not inside:
            out.append(_wgmma_before(lines, i))
        if "stmatrix" in line:
            inside = True
        elif line.split() and line.split()[0].startswith("wgmma."):
            inside = False
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_deferred_store_same_code_as_twin(gemm: Any, name: str) -> None:
    """TS and the twin emit the same instructions, and the plan verifies; the epilogue is
    written twice (under the next tile's WGMMAs, and at once for the CTA's last tile)."""
    cfg = gemm.GemmConfig(**CASES[name], defer_store=True)
    out = gemm.compile_only(cfg)
    assert out["verified"] is True and out["same_counts"] is True
    plain = gemm.compile_only(dataclasses.replace(cfg, defer_store=False))
    assert out["ts"]["stmatrix"] == 2 * plain["ts"]["stmatrix"]
    assert out["ts"]["wgmma.mma_async"] == plain["ts"]["wgmma.mma_async"]


def test_the_deferred_store_runs_under_issued_wgmmas(gemm: Any) -> None:
    """In the PTX, one epilogue copy follows a ``wgmma.commit_group`` (WGMMAs issued, not
    waited for) and the other a ``wgmma.wait_group 0``; without ``defer_store`` the only one
    follows a wait for every WGMMA."""
    cfg = gemm.GemmConfig(**FP8, defer_store=True)
    plain = dataclasses.replace(cfg, defer_store=False)
    entries = {}
    for one in (cfg, plain):
        _, ptx = compile_ptx(dict(gemm.kernels(one))["ts"], *gemm.fake_operands(one))
        entries[one.defer_store] = _epilogue_entries(ptx)
    assert entries[False] == ["wgmma.wait_group 0"]
    assert sorted(entries[True]) == ["wgmma.commit_group", "wgmma.wait_group 0"]


def _k_loop(ptx: str) -> list[str]:
    """The oracle's K loop: from the last label above the first ``wgmma.mma_async`` that a
    branch below it jumps back to, through that branch."""
    lines = ptx.splitlines()
    first = next(i for i, line in enumerate(lines) if "wgmma.mma_async" in line)
    for top in range(first, -1, -1):
        label = lines[top].strip()
        if label.startswith("$L") and label.endswith(":"):
            back = [i for i in range(first, len(lines)) if f"bra \t{label[:-1]};" in lines[i]]
            if back:
                return lines[top : back[-1] + 1]
    return []


def test_the_deferred_k_loop_selects_nothing(gemm: Any) -> None:
    """No value of the total is selected in the K loop, TS or twin: zeroing the total after
    the deferred store (in the loop's first block) compiled to 64 ``selp.f32`` and 128 more
    ``mov`` per thread in every block (0.58-0.75 of the plain kernel on an H100);
    the tile's first promotion assigns the total instead, in a branch of its own."""
    cfg = gemm.GemmConfig(**FP8, defer_store=True)
    for who, kernel in gemm.kernels(cfg):
        _, ptx = compile_ptx(kernel, *gemm.fake_operands(cfg))
        loop = _k_loop(ptx)
        assert sum("wgmma.mma_async" in line for line in loop) == 4, who
        assert not [line for line in loop if "selp.f32" in line], who


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas (CUDA toolkit)")
def test_ptxas_keeps_both_register_tiles_and_the_epilogue(
    gemm: Any, ptxas_log: Callable[..., str]
) -> None:
    """64 + 64 fp32 values a thread live across the epilogue: no spill, one WGMMA chain."""
    for name in ("e4m3-128x128-2x1", "e4m3-128x128-1x2-rowwise-fused"):
        cfg = gemm.GemmConfig(**CASES[name], defer_store=True)
        _, ptx = compile_ptx(dict(gemm.kernels(cfg))["ts"], *gemm.fake_operands(cfg))
        log = ptxas_log(ptx, name)
        assert "0 bytes spill stores, 0 bytes spill loads" in log, log
        assert log.count("C7519") <= 1 and "C7514" not in log, log


@pytest.mark.parametrize(
    "options",
    [
        {"tile_mn": (128, 256)},  # bf16: no two-level accumulation, no second register tile
        FP8 | {"tile_mn": (128, 192), "epi_stages": 3},  # 96 + 96 values: spills
        FP8 | {"kernel": "pingpong", "tile_mn": (64, 128), "cluster_mn": (1, 1)},
        FP8 | {"split_k": 2, "cluster_mn": (1, 1)},
        FP8 | {"tail_split": 2},
        FP8 | {"promote_stagger": True},
        FP8 | {"scheduler": "dynamic", "cluster_mn": (1, 1)},
    ],
    ids=["bf16-unpromoted", "128x192", "pingpong", "split", "tail", "stagger", "dynamic"],
)
def test_deferred_store_refused_where_it_cannot_run(gemm: Any, options: dict[str, Any]) -> None:
    with pytest.raises(RuntimeConfigError, match=r"defer_store=True") as info:
        gemm.GemmConfig(**options, defer_store=True)
    assert info.value.resource == "c" and "defer_store=False" in info.value.fix


def test_defer_store_must_be_a_bool(gemm: Any) -> None:
    with pytest.raises(RuntimeConfigError, match="defer_store='on'"):
        gemm.GemmConfig(**FP8, defer_store="on")


def test_command_line_and_versus_take_defer_store(gemm: Any, table: Any) -> None:
    """``--defer-store on`` on the command line and in a sweep's ``--versus``; the table
    leaves the field out when off."""
    cli = importlib.import_module("_gemm_cli")  # beside gemm.py, which put it on the path
    problem = gemm.GemmConfig(dtype="e4m3", scale="tensor")
    words = ["--tile", "128x128", "--cluster", "2x1", "--defer-store", "on"]
    other = cli.versus_config(problem, words, (4096, 4096, 4096))
    assert other.defer_store is True and other.tile_mn == (128, 128)
    assert "defer_store" not in table.tuned_fields(dataclasses.replace(other, defer_store=False))
    assert table.tuned_fields(other)["defer_store"] is True


def test_a_deferred_store_needs_a_total() -> None:
    """An accumulator without two-level accumulation has no total to store from: the deferred
    store's works refuse it with a typed error instead of storing the WGMMA registers."""
    from ts_runtime.blocks import WgmmaAccumulator

    acc = WgmmaAccumulator(name="acc", tiled_mma=None, tile_mn=(128, 128), smem_a=None, smem_b=None)
    with pytest.raises(RuntimeConfigError, match=r"c.store_tile_now\(\) is a deferred") as info:
        acc.deferred_total("c.store_tile_now()")
    assert info.value.resource == "acc" and "promote_every" in info.value.fix


@pytest.mark.parametrize(
    "options",
    [{}, {"promote_every": 4, "promote_stagger": True}],
    ids=["no-total", "staggered"],
)
def test_a_deferred_accumulator_promotes_unstaggered_groups(options: dict[str, Any]) -> None:
    """``deferred=True`` (the tile's first group assigns the total) needs two-level
    accumulation whose groups start at the tile's first K block."""
    from ts_runtime.blocks import WgmmaAccumulator

    k: dict[str, Any] = {"fresh_mma": object(), "k_blocks": 8}
    with pytest.raises(RuntimeConfigError, match=r"deferred=True") as info:
        WgmmaAccumulator(
            name="acc",
            tiled_mma=None,
            tile_mn=(128, 128),
            smem_a=None,
            smem_b=None,
            deferred=True,
            **(k if options else {}),
            **options,
        )
    assert info.value.resource == "acc" and "deferred=False" in info.value.fix


def test_a_total_not_declared_deferred_is_no_deferred_store_s() -> None:
    """A promoting accumulator not declared ``deferred`` zeroes its total per tile and adds
    every group: a deferred store from it would write zeros, so it is a typed error."""
    from ts_runtime.blocks import WgmmaAccumulator

    acc = WgmmaAccumulator(
        name="acc",
        tiled_mma=None,
        tile_mn=(128, 128),
        smem_a=None,
        smem_b=None,
        promote_every=4,
        fresh_mma=object(),
        k_blocks=8,
    )
    acc.total = object()  # what setup makes
    with pytest.raises(RuntimeConfigError, match=r"begin\(\) .* not declared deferred") as info:
        acc.deferred_total("begin()")
    assert "deferred=True" in info.value.fix
