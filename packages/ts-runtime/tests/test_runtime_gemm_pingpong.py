"""Ping-pong with 128-row tiles in the Hopper GEMM (``GemmConfig(kernel="pingpong")``).

Each of the two math warpgroups holds a whole ``128 x BN`` tile (two m64 WGMMAs per K step)
and the two take the CTA's tiles in turns, so one's epilogue runs under the other's main
loop; both read the one A/B ring. Checked on the CPU: the configuration's limits, the TS
kernel's PTX against the hand-written twin's per family (128 x 128, also in a 2 x 1 cluster,
and 128 x 192), ptxas's verdict on it (no spills, no serialized WGMMAs), the verifier's refusal
of a schedule in which both warpgroups take the same turn and of a ring whose consumer group
counts one warpgroup, the tuner's templates and the fallback rule's flag.
"""

from __future__ import annotations

import argparse
import dataclasses
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

# The families the tuner generates: a warpgroup alone on a 128-row tile, two epilogue buffers.
FAMILIES = {
    "128x128": {"tile_mn": (128, 128)},
    "128x128-2x1": {"tile_mn": (128, 128), "cluster_mn": (2, 1)},
    "128x192": {"tile_mn": (128, 192)},
}


def _cfg(gemm: Any, family: str, **extra: Any) -> Any:
    return gemm.GemmConfig(kernel="pingpong", **FAMILIES[family], **extra)


def test_a_warpgroup_holds_the_whole_tile(gemm: Any, config: Any) -> None:
    cfg = _cfg(gemm, "128x128")
    assert (cfg.math_wgs, cfg.consumer_wgs, cfg.consumer_threads) == (2, 1, 128)
    assert (cfg.block_threads, cfg.consumer_regs, cfg.acc_values) == (384, 232, 128)
    # 64-row epilogue sub-tiles (one WGMMA block), 8 per tile, 4 buffers of 4 KB per warpgroup
    assert (cfg.epi_tile, cfg.epi_subtiles, cfg.epi_stages) == ((64, 32), 8, 4)
    # one ring both read: 6 x 32 KB + 2 x 4 x 4 KB fits 227 KB, 7 stages do not
    assert (cfg.ab_stages, cfg.ring_threads) == (6, 256)
    assert _cfg(gemm, "128x192").acc_values == config.PINGPONG_MAX_ACC == 192
    with pytest.raises(ValueError, match="256 fp32 accumulator registers"):
        gemm.GemmConfig(kernel="pingpong", tile_mn=(128, 256))
    with pytest.raises(ValueError, match="static scheduler"):
        gemm.GemmConfig(kernel="pingpong", tile_mn=(128, 128), scheduler="dynamic")


@pytest.mark.parametrize(
    "options",
    [
        {"kernel": "pingpong", "tile_mn": (128, 128)},
        {"kernel": "pingpong", "tile_mn": (128, 192)},
        {"kernel": "pingpong", "tile_mn": (64, 128)},
        {"tile_mn": (128, 256)},
        {"tile_mn": (128, 128), "epi_n": 64, "epi_stages": 2},
    ],
    ids=str,
)
def test_epilogue_sub_tile_is_one_run_of_the_accumulator(
    gemm: Any, steps: Any, options: dict[str, Any]
) -> None:
    """The epilogue copies run ``j`` of a thread's (retiled) accumulator into the registers of
    sub-tile ``j``: that is right only if a sub-tile's registers hold one 64-row WGMMA block
    of the thread (a 128 x 32 sub-tile of a warpgroup alone on 128 rows held two, 64 rows
    apart in the accumulator)."""
    from runtime_gemm_views import epilogue_view_sizes

    cfg = gemm.GemmConfig(**options)
    seen = epilogue_view_sizes(cfg, steps)
    assert seen["frag_m"] == 1
    assert seen["frag"] * cfg.epi_subtiles == seen["acc"] == cfg.acc_values


def test_fp8_pingpong_128_does_not_promote(gemm: Any, config: Any) -> None:
    """The second fp32 tile of two-level accumulation has no registers next to 128 values."""
    cfg = gemm.GemmConfig(kernel="pingpong", tile_mn=(128, 128), dtype="e4m3")
    assert cfg.promotion == 0
    assert gemm.GemmConfig(kernel="pingpong", tile_mn=(64, 128), dtype="e4m3").promotion == 4
    with pytest.raises(config.RuntimeConfigError, match="128 registers per consumer thread"):
        gemm.GemmConfig(kernel="pingpong", tile_mn=(128, 128), promote_every=4)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_compiles_to_the_twins_code(gemm: Any, family: str) -> None:
    cfg = _cfg(gemm, family)
    out = gemm.compile_only(cfg)
    assert out["verified"] is True and out["same_counts"] is True
    assert out["ts"] == out["twin"] and out["ts_total"] == out["twin_total"]
    ts = out["ts"]
    assert ts["cp.async.bulk.tensor"] > 0
    assert ts["setmaxnreg.dec"] == 1 and ts["setmaxnreg.inc"] == 2  # producer, two math WGs
    # Per warpgroup and K block: 4 k16 steps x 2 m64 halves of the 128-row tile.
    assert ts["wgmma.mma_async"] == 2 * 4 * 2
    plan = gemm.make_plan(cfg)
    assert {t.name for t in plan.tasks} == {"load", "mma0", "mma1"}
    assert {r.name for r in plan.resources if r.pipeline} == {"ab"}  # one ring, both read it
    _, ptx = compile_ptx(dict(gemm.kernels(cfg))["ts"], *gemm.fake_operands(cfg))
    # each math warpgroup: its own 128-thread epilogue barrier (ids 1 and 2)
    assert set(re.findall(r"bar\.sync\s+(\d+),\s*128;", ptx)) == {"1", "2"}
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{cfg.tile_mn[1]}k16", ptx)
    if cfg.cluster_size > 1:
        assert "multicast::cluster" in ptx  # B multicast along the cluster's M
        assert "barrier.cluster.arrive" in ptx and "mapa.shared" in ptx  # init; peer release


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas (CUDA toolkit)")
@pytest.mark.parametrize("family", [*sorted(FAMILIES), "cooperative"])
def test_ptxas_no_spills_no_serialized_wgmma(
    gemm: Any, family: str, ptxas_log: Callable[..., str]
) -> None:
    """ptxas keeps the 128 / 192 accumulator registers and the WGMMA pipeline.

    Before the unconditional ``wgmma.wait_group 0`` after the K loop, ptxas saw a path from the
    loop to the epilogue with WGMMAs in flight and serialized them all (warning C7514), in the
    cooperative kernel (the default 128 x 256) too.
    """
    cfg = gemm.GemmConfig() if family == "cooperative" else _cfg(gemm, family)
    for name, fn in gemm.kernels(cfg):
        _, ptx = compile_ptx(fn, *gemm.fake_operands(cfg))
        log = ptxas_log(ptx, name)
        assert "0 bytes spill stores, 0 bytes spill loads" in log, (name, log)
        assert "C7514" not in log, (name, log)


def test_both_warpgroups_on_the_same_turn_is_rejected(gemm: Any) -> None:
    """If the odd tiles' warpgroup also takes the even turns, both read the even tiles' stages
    twice (their own and the other's turn) and the odd tiles' not at all: the producer waits
    for releases that never come, and the verifier finds the deadlock (TS-V301)."""
    from ts_trace import when_false
    from ts_verify import VerificationError

    with pytest.raises(VerificationError) as err:
        gemm.make_plan(_cfg(gemm, "128x128"), turns_of=(when_false, when_false))
    assert "TS-V301" in err.value.report.codes()


def test_a_ring_counting_one_warpgroup_is_rejected(
    gemm: Any, config: Any, monkeypatch: Any
) -> None:
    """Both warpgroups release every stage of the one ring: a consumer group sized for one
    would complete a phase at half the releases and refill a stage still read (TS-R003)."""
    from ts_runtime.errors import GroupSizeError

    monkeypatch.setattr(config.GemmConfig, "ring_threads", property(lambda c: c.consumer_threads))
    with pytest.raises(GroupSizeError, match=r"TS-R003: resource `ab`.* 256 times per phase"):
        gemm.make_plan(_cfg(gemm, "128x128"))


def test_tuner_generates_the_families(tune: Any, gemm: Any) -> None:
    keys = [f for f in tune.TEMPLATES if f["kernel"] == "pingpong" and f["tile_mn"][0] == 128]
    assert [(f["tile_mn"], f["cluster_mn"]) for f in keys] == [
        ((128, 128), (1, 1)),
        ((128, 128), (2, 1)),
        ((128, 192), (1, 1)),
        ((128, 128), (1, 2)),
        ((128, 192), (2, 1)),
    ]
    screened = tune.screen(keys, gemm.GemmConfig())
    assert [c.reason for c in screened] == [""] * 5
    assert [c.cfg.ab_stages for c in screened] == [6, 6, 4, 6, 4]  # the stages that fit SMEM
    assert len({c.key for c in screened}) == 5
    big = tune.candidates((8192, 8192, 8192), gemm.GemmConfig())
    assert all(f in big for f in keys)
    fp8 = tune.candidates((8192, 8192, 8192), gemm.GemmConfig(dtype="e4m3"))
    assert not any(f in fp8 for f in keys)  # FP8 promotes by default: no room for it


def test_rule_takes_pingpong_128_only_when_flagged(table: Any, gemm: Any) -> None:
    assert table.RULE_PINGPONG128 is False  # not until it has been timed on the H200
    base, mnk = gemm.GemmConfig(), (8192, 8192, 8192)
    assert table.rule_config(mnk, base).kernel == "cooperative"
    cfg = table.rule_config(mnk, base, pingpong128=True)
    assert (cfg.kernel, cfg.tile_mn, cfg.ab_stages) == ("pingpong", (128, 128), 6)
    gemm.make_plan(cfg)  # verifies
    fp8 = table.rule_config(mnk, gemm.GemmConfig(dtype="e4m3"), pingpong128=True)
    assert fp8.kernel == "cooperative"  # promoted FP8 keeps its cooperative 128 x 128
    plain = dataclasses.replace(fp8, promote_every=0)
    assert table.rule_config(mnk, plain, pingpong128=True).kernel == "pingpong"


def test_cli_takes_pingpong_128_only_when_asked(gemm: Any, table: Any, monkeypatch: Any) -> None:
    """``--tile 128x128`` on a 64-row ping-pong pick stays cooperative (as tools/gpu_batch.sh
    expects); ``--kernel pingpong`` asks for the 128-row ping-pong."""
    cli: Any = importlib.import_module("_gemm_cli")

    def rule_pick(mnk: Any, base: Any) -> Any:
        return table.rule_config(mnk, base), "rule:test"

    monkeypatch.setattr(table, "pick", rule_pick)
    parser = argparse.ArgumentParser()
    cli.add_config_args(parser)
    odd = (1003, 1501, 707)
    assert rule_pick(odd, gemm.GemmConfig())[0].tile_mn == (64, 128)  # a 64-row ping-pong pick
    cfg, source = cli.config_for(parser.parse_args(["--tile", "128x128"]), odd)
    assert (cfg.kernel, cfg.tile_mn) == ("cooperative", (128, 128))
    assert source.startswith("default+flags")
    asked = ["--tile", "128x128", "--kernel", "pingpong"]
    cfg, source = cli.config_for(parser.parse_args(asked), odd)
    assert (cfg.kernel, cfg.tile_mn, cfg.ab_stages) == ("pingpong", (128, 128), 6)
    assert source == "rule:test+flags"
