"""The Hopper GEMM example: the TS kernel compiles to the same code as its hand-written twin.

Covers the default configuration, the fused epilogue (``alpha``, ``beta``, ``bias``), the
MN-major operand layouts, the 64-row tiles with one consumer warpgroup, the verification of
the host plan, and the verifier's refusal of an MMA schedule that gives an A/B stage back
while its WGMMAs may still read it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("cutlass")
pytest.importorskip("ts_runtime")
pytest.importorskip("ts_verify")

from ts_codegen.dsl import compile_ptx
from ts_trace import ResourceProxy, domain_loop, schedule, work_tile_loop

NEEDED = ("wgmma.mma_async", "cp.async.bulk.tensor", "setmaxnreg")


@pytest.fixture(scope="module")
def gemm(load_example: Callable[[str], Any]) -> Any:
    return load_example("gemm")


@pytest.fixture(scope="module")
def default(gemm: Any) -> dict[str, Any]:
    out: dict[str, Any] = gemm.compile_only(gemm.GemmConfig())
    return out


def _same(out: dict[str, Any]) -> None:
    assert out["verified"] is True
    assert out["same_counts"] is True
    assert out["ts"] == out["twin"]
    assert out["ts_total"] == out["twin_total"]


def test_default_same_code_as_twin(default: dict[str, Any]) -> None:
    _same(default)
    ts = default["ts"]
    assert all(ts[kind] > 0 for kind in NEEDED)
    assert ts["setmaxnreg.dec"] == ts["setmaxnreg.inc"] == 1  # producer gives, consumers take
    assert ts["ld.global"] == 0  # the plain epilogue reads nothing from global memory


def test_fused_epilogue_same_code_as_twin(gemm: Any, default: dict[str, Any]) -> None:
    out = gemm.compile_only(gemm.GemmConfig(alpha=0.5, beta=1.0, bias=True))
    _same(out)
    assert out["ts"]["ld.global"] > 0  # the old C and the bias
    assert out["ts"]["wgmma.mma_async"] == default["ts"]["wgmma.mma_async"]
    assert out["ts_total"] > default["ts_total"]


def test_mn_major_layout_same_code_as_twin(gemm: Any) -> None:
    out = gemm.compile_only(gemm.GemmConfig(layout="nt"))
    _same(out)
    assert all(out["ts"][kind] > 0 for kind in NEEDED)


@pytest.mark.parametrize(("layout", "trans"), [("tn", (0, 0)), ("nn", (1, 0)), ("tt", (0, 1))])
def test_layout_sets_wgmma_transpose_flags(gemm: Any, layout: str, trans: tuple[int, int]) -> None:
    cfg = gemm.GemmConfig(tile_mn=(128, 128), layout=layout)
    _, ptx = compile_ptx(dict(gemm.kernels(cfg))["twin"], *gemm.fake_operands(cfg))
    # wgmma.mma_async ... descA, descB, scale-d, imm-scale-a, imm-scale-b, tnspA, tnspB;
    flags = set(re.findall(r"wgmma\.mma_async[^;]*?,\s*(\d),\s*(\d);", str(ptx)))
    assert flags == {(str(trans[0]), str(trans[1]))}


def test_64_row_tile_one_consumer_warpgroup(gemm: Any) -> None:
    cfg = gemm.GemmConfig(tile_mn=(64, 256))
    assert (cfg.consumer_wgs, cfg.block_threads, cfg.consumer_regs) == (1, 256, None)
    out = gemm.compile_only(cfg)
    _same(out)
    ts = out["ts"]
    assert ts["wgmma.mma_async"] > 0 and ts["cp.async.bulk.tensor"] > 0
    assert ts["setmaxnreg.dec"] == 1 and ts["setmaxnreg.inc"] == 0  # only the producer


def test_plan_verifies(gemm: Any) -> None:
    for cfg in (gemm.GemmConfig(), gemm.GemmConfig(tile_mn=(64, 128))):
        plan = gemm.make_plan(cfg)
        assert plan.name == "gemm"
        assert {t.name for t in plan.tasks} == {"load", "mma"}


def test_release_before_mma_wait_is_rejected(gemm: Any) -> None:
    """Releasing the stage right after issuing its WGMMAs races with them: TS-V113."""
    from ts_verify import VerificationError

    @schedule
    def early_release(
        wq: ResourceProxy, ab: ResourceProxy, acc: ResourceProxy, c: ResourceProxy
    ) -> None:
        acc.setup()
        c.setup()
        with work_tile_loop(wq):
            acc.zero()
            with domain_loop("k_tiles", unroll=1):
                ab.wait()
                ab.mma()
                ab.release()  # the WGMMAs of this stage may still be reading it
                ab.mma_wait_all()
            c.store()
        c.drain()

    with pytest.raises(VerificationError) as err:
        gemm.make_plan(gemm.GemmConfig(), mma=early_release)
    assert "TS-V113" in err.value.report.codes()


def test_dynamic_scheduler_same_code_as_twin(gemm: Any, default: dict[str, Any]) -> None:
    out = gemm.compile_only(gemm.GemmConfig(scheduler="dynamic"))
    _same(out)
    # the hand-off ring's barriers come on top of the A/B ring's
    assert out["ts"]["mbarrier.init"] > default["ts"]["mbarrier.init"]


def test_cluster_multicast_same_code_as_twin(gemm: Any, default: dict[str, Any]) -> None:
    cfg = gemm.GemmConfig(cluster_mn=(2, 1))
    out = gemm.compile_only(cfg)
    _same(out)
    _, ptx = compile_ptx(dict(gemm.kernels(cfg))["ts"], *gemm.fake_operands(cfg))
    assert "multicast::cluster" in ptx  # TMA multicast of B along the cluster's M
    assert "barrier.cluster.arrive" in ptx and "barrier.cluster.wait" in ptx  # init
    assert "mapa.shared" in ptx  # consumers release the stage in the peer CTA too


def test_pingpong_same_code_as_twin(gemm: Any) -> None:
    cfg = gemm.GemmConfig(tile_mn=(64, 128), kernel="pingpong")
    assert (cfg.math_wgs, cfg.block_threads, cfg.consumer_regs) == (2, 384, 232)
    out = gemm.compile_only(cfg)
    _same(out)
    plan = gemm.make_plan(cfg)
    assert {t.name for t in plan.tasks} == {"load", "mma0", "mma1"}
    assert {r.name for r in plan.resources if r.pipeline} == {"ab0", "ab1"}
    # each math warpgroup: its own epilogue barrier (ids 1 and 2)
    _, ptx = compile_ptx(dict(gemm.kernels(cfg))["ts"], *gemm.fake_operands(cfg))
    assert set(re.findall(r"bar\.sync\s+(\d+),\s*128;", ptx)) == {"1", "2"}
