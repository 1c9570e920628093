"""The Hopper GEMM example: the TS kernel compiles to the same code as its hand-written twin.

Covers the default configuration, the fused epilogue (``alpha``, ``beta``, ``bias``), the
MN-major operand layouts, the 64-row tiles with one consumer warpgroup and the 256-row ones
with two warpgroups of two row blocks each, the verification of
the host plan, the verifier's refusal of an MMA schedule that gives an A/B stage back
while its WGMMAs may still read it, and FP8 (e4m3 WGMMA, scales, the operand checks made
before any launch).
"""

from __future__ import annotations

import dataclasses
import importlib
import itertools
import math
import re
import shutil
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
def default(gemm: Any) -> dict[str, Any]:
    out: dict[str, Any] = gemm.compile_only(gemm.GemmConfig())
    return out


def _same(out: dict[str, Any]) -> None:
    assert out["verified"] is True
    assert out["same_counts"] is True
    assert out["ts"] == out["twin"]
    assert out["ts_total"] == out["twin_total"]


@pytest.mark.smoke
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


def test_256_row_tile_two_warpgroups_of_two_row_blocks(gemm: Any) -> None:
    """256 x 128: two consumer warpgroups, each on two 64-row blocks (two m64 WGMMAs per K
    step, 128-row epilogue sub-tiles), the same registers as 128 x 256."""
    from ts_runtime.errors import RuntimeConfigError

    cfg = gemm.GemmConfig(tile_mn=(256, 128))
    assert (cfg.consumer_wgs, cfg.block_threads, cfg.acc_values) == (2, 384, 128)
    assert cfg.epi_tile == (128, 32) and cfg.epi_subtiles == 8
    out = gemm.compile_only(cfg)
    _same(out)
    half = gemm.compile_only(gemm.GemmConfig(tile_mn=(128, 128)))
    assert out["ts"]["wgmma.mma_async"] == 2 * half["ts"]["wgmma.mma_async"]
    # FP8 two-level accumulation has no registers next to a 128-value accumulator
    assert gemm.GemmConfig(tile_mn=(256, 128), dtype="e4m3").promotion == 0
    with pytest.raises(RuntimeConfigError, match="promote_every=4"):
        gemm.GemmConfig(tile_mn=(256, 128), dtype="e4m3", promote_every=4)
    with pytest.raises(RuntimeConfigError, match="pingpong"):
        gemm.GemmConfig(tile_mn=(256, 128), kernel="pingpong")


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"alpha": 0.5, "beta": 1.0, "bias": True},
        {"dtype": "e4m3", "scale": "rowwise"},
        {"tail_split": 2},
    ],
    ids=["plain", "fused", "e4m3-rowwise", "tail2"],
)
def test_320_wide_tile_two_wgmmas_side_by_side(gemm: Any, options: dict[str, Any]) -> None:
    """128 x 320 in a 2 x 1 cluster (cuBLAS's widest Hopper tile): each consumer warpgroup
    issues two 64 x 160 WGMMAs per K step (one WGMMA is at most 256 wide), each CTA TMA-loads
    160 of B's rows (a box is at most 256) and multicasts them; ten 32-column epilogue
    sub-tiles. No promotion (160 fp32 values a thread leave no room for a second tile)."""
    cfg = gemm.GemmConfig(tile_mn=(128, 320), cluster_mn=(2, 1), epi_stages=2, **options)
    assert (cfg.mma_n, cfg.acc_values, cfg.epi_subtiles, cfg.ab_stages) == (160, 160, 10, 3)
    assert cfg.promotion == 0
    out = gemm.compile_only(cfg)
    _same(out)
    half = gemm.compile_only(gemm.GemmConfig(tile_mn=(128, 128), **options))
    assert out["ts"]["wgmma.mma_async"] == 2 * half["ts"]["wgmma.mma_async"]
    _, ptx = compile_ptx(dict(gemm.kernels(cfg))["ts"], *gemm.fake_operands(cfg))
    k = 32 if cfg.fp8 else 16
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n160k{k}\.", ptx)


@pytest.mark.parametrize("cluster", [(1, 1), (2, 1), (1, 2)])
def test_256_by_160_tile_two_row_blocks_of_160(gemm: Any, cluster: tuple[int, int]) -> None:
    """256 x 160: the same tile area and registers as 128 x 320 (two 64 x 160 WGMMAs a
    warpgroup per K step, on its two 64-row blocks), with any cluster (B's 160 rows fit one
    TMA box) and, with two epilogue buffers, a fourth A/B stage."""
    cfg = gemm.GemmConfig(tile_mn=(256, 160), cluster_mn=cluster, epi_stages=2)
    assert (cfg.mma_n, cfg.acc_values, cfg.epi_subtiles, cfg.ab_stages) == (160, 160, 10, 4)
    out = gemm.compile_only(cfg)
    _same(out)
    assert out["ts"]["wgmma.mma_async"] == 8  # 2 per warpgroup and K step, 4 K steps a block


@pytest.mark.parametrize("tile", [(128, 256), (128, 320)])
def test_2x2_cluster_multicasts_both_operands(gemm: Any, tile: tuple[int, int]) -> None:
    """A 2 x 2 cluster: A multicast along the cluster row, B along the column (both loads
    ``.multicast::cluster``), and each consumer warp releases a stage in the 3 CTAs that
    multicast into it: the empty barriers count 8 warps x 3."""
    cfg = gemm.GemmConfig(tile_mn=tile, cluster_mn=(2, 2), epi_stages=5 if tile[1] == 320 else 4)
    _same(gemm.compile_only(cfg))
    _, ptx = compile_ptx(dict(gemm.kernels(cfg))["ts"], *gemm.fake_operands(cfg))
    loads = re.findall(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\S*", ptx)
    assert len(loads) >= 2 and all("multicast::cluster" in op for op in loads)
    init = r"mov\.b32\s+(%r\d+), 24;\s+mbarrier\.init\.shared\.b64\s+\[[^]]+\], \1;"
    assert re.search(init, ptx), "no empty barrier counting 8 warps x 3 CTAs"


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas (CUDA toolkit)")
def test_ptxas_keeps_the_320_wide_tile_in_registers(
    gemm: Any, ptxas_log: Callable[..., str]
) -> None:
    """160 fp32 accumulator values a consumer thread and the fused epilogue's pointers: no
    spill under setmaxnreg 232, and the two WGMMAs of a K step stay one chain (C7514 would
    say ptxas serialized them)."""
    cfg = gemm.GemmConfig(
        tile_mn=(128, 320), cluster_mn=(2, 1), epi_stages=2, alpha=0.5, beta=1.0, bias=True
    )
    _, ptx = compile_ptx(dict(gemm.kernels(cfg))["ts"], *gemm.fake_operands(cfg))
    log = ptxas_log(ptx, "ts")
    assert "0 bytes spill stores, 0 bytes spill loads" in log, log
    assert log.count("C7519") <= 1 and "C7514" not in log, log


def test_320_wide_tile_needs_b_split_over_the_cluster(gemm: Any) -> None:
    """Without a 2 x 1 cluster one CTA would load all 320 rows of B in one TMA box; an
    N-major B is read in 64-column atoms, which 160 is not whole of."""
    from ts_runtime.errors import RuntimeConfigError

    for cluster in ((1, 1), (1, 2)):
        with pytest.raises(RuntimeConfigError, match="at most 256") as err:
            gemm.GemmConfig(tile_mn=(128, 320), cluster_mn=cluster, epi_stages=2)
        assert "cluster_mn=(2, 1)" in err.value.fix
    with pytest.raises(RuntimeConfigError, match="64-column"):
        gemm.GemmConfig(tile_mn=(128, 320), cluster_mn=(2, 1), epi_stages=2, layout="nt")
    with pytest.raises(RuntimeConfigError, match="at most 192"):
        gemm.GemmConfig(tile_mn=(128, 320), cluster_mn=(2, 1), kernel="pingpong")


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
    assert {r.name for r in plan.resources if r.pipeline} == {"ab"}  # both math tasks read it
    # each math warpgroup: its own epilogue barrier (ids 1 and 2)
    _, ptx = compile_ptx(dict(gemm.kernels(cfg))["ts"], *gemm.fake_operands(cfg))
    assert set(re.findall(r"bar\.sync\s+(\d+),\s*128;", ptx)) == {"1", "2"}


# -- FP8 (e4m3 x e4m3 -> bf16) ------------------------------------------------------------------
# One configuration per family: every tile, both cluster shapes, the dynamic scheduler, ping-pong
# and the fused epilogue, each with a scale mode (make_plan verifies each one in compile_only).
FP8_CONFIGS: list[dict[str, Any]] = [
    {"scale": "none"},
    {"scale": "tensor", "tile_mn": (128, 128)},
    {"scale": "rowwise", "tile_mn": (64, 256)},
    {"scale": "tensor", "tile_mn": (64, 128)},
    {"scale": "rowwise", "cluster_mn": (2, 1)},
    {"scale": "tensor", "cluster_mn": (1, 2)},
    {"scale": "tensor", "scheduler": "dynamic"},
    {"scale": "rowwise", "kernel": "pingpong", "tile_mn": (64, 128)},
    {"scale": "rowwise", "alpha": 0.5, "beta": 1.0, "bias": True},
]


@pytest.mark.parametrize("options", FP8_CONFIGS, ids=lambda o: "-".join(map(str, o.values())))
def test_fp8_same_code_as_twin(gemm: Any, options: dict[str, Any]) -> None:
    cfg = gemm.GemmConfig(dtype="e4m3", **options)
    out = gemm.compile_only(cfg)
    _same(out)
    assert all(out["ts"][kind] > 0 for kind in NEEDED)


def test_fp8_every_configuration_verifies(gemm: Any) -> None:
    """Every valid FP8 tile x cluster x scheduler x kernel x scale plan passes ts-verify."""
    steps = importlib.import_module("_gemm_config")  # beside gemm.py, already on sys.path
    options = itertools.product(
        steps.TILES, steps.CLUSTERS, steps.SCHEDULERS, steps.KERNELS, steps.SCALES
    )
    verified = 0
    for tile, cluster, scheduler, kernel, scale in options:
        try:
            cfg = gemm.GemmConfig(
                dtype="e4m3",
                tile_mn=tile,
                cluster_mn=cluster,
                scheduler=scheduler,
                kernel=kernel,
                scale=scale,
            )
        except ValueError:
            continue  # e.g. ping-pong on 128 x 256, dynamic with a cluster, cooperative
            # 128 x 192 (6 epilogue sub-tiles, the default 4 buffers)
        assert gemm.make_plan(cfg).name in ("gemm", "gemm_pingpong")
        verified += 1
    # 5 tiles x 4 clusters x 3 scales (static cooperative: 128 x 256, 256 x 128, 128 x 128 and
    # the 64-row tiles; 128 x 192, 128 x 320 and 256 x 160 need other epilogue buffers than the
    # default 4) + 5 x 3 (dynamic, 1x1) + 4 x 4 x 3 (ping-pong: 128 x 192, 128 x 128 and the
    # 64-row tiles, every cluster, static), twice: waiting for the other's stages and skipping
    # them (pingpong-skip)
    assert verified == 60 + 15 + 48 + 48


def _ptx(gemm: Any, cfg: Any, name: str = "ts") -> str:
    _, ptx = compile_ptx(dict(gemm.kernels(cfg))[name], *gemm.fake_operands(cfg))
    return str(ptx)


def test_fp8_wgmma_is_e4m3_k32_with_tma_loads(gemm: Any) -> None:
    cfg = gemm.GemmConfig(dtype="e4m3")
    assert (cfg.tile_k, cfg.stage_bytes) == (128, (128 + 256) * 128)  # 128 bytes of K per row
    ptx = _ptx(gemm, cfg)
    shapes = set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.(\w+)\.f32\.(\w+)\.(\w+)", ptx))
    assert shapes == {("m64n256k32", "e4m3", "e4m3")}
    # A 128-deep K block is four k32 WGMMAs per warpgroup (one issue site in the K loop).
    assert len(re.findall(r"wgmma\.mma_async", ptx)) == 4
    assert "cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx" in ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx  # the bf16 C store
    assert "stmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx  # 16-bit C through SMEM
    assert "cvt.rn.bf16x2.f32" in ptx  # the fp32 accumulator rounded to bf16


def test_fp8_scales_read_once_per_row_and_column(gemm: Any) -> None:
    """Per-tensor scales: two loads a tile; rowwise: one per row and column a thread holds.

    A 64 x 256 WGMMA gives each thread 2 rows (r, r + 8) and 256 / 4 = 64 columns (two of
    every eight), so 2 + 64 distinct scale loads, however many accumulator values share them.
    """
    tensor = _ptx(gemm, gemm.GemmConfig(dtype="e4m3", scale="tensor"))
    rowwise = _ptx(gemm, gemm.GemmConfig(dtype="e4m3", scale="rowwise"))
    plain = _ptx(gemm, gemm.GemmConfig(dtype="e4m3"))
    loads = [len(re.findall(r"ld\.global", p)) for p in (plain, tensor, rowwise)]
    assert loads == [0, 2, 2 + 64]


def test_fp8_plan_arms_the_stage_bytes(gemm: Any) -> None:
    cfg = gemm.GemmConfig(dtype="e4m3", tile_mn=(128, 128), scale="rowwise")
    plan = gemm.make_plan(cfg)
    (ring,) = [r for r in plan.resources if r.name == "ab"]
    assert ring.pipeline is not None
    assert ring.pipeline.bytes_per_stage == (128 + 128) * 128
    assert ring.pipeline.stages == cfg.ab_stages


@pytest.mark.parametrize("layout", ["nn", "tt", "nt"])
def test_fp8_mn_major_is_a_typed_error(gemm: Any, layout: str) -> None:
    from ts_runtime.errors import UnsupportedOnTarget

    with pytest.raises(UnsupportedOnTarget, match="K-major only") as err:
        gemm.GemmConfig(dtype="e4m3", layout=layout)
    assert err.value.target == "sm_90a" and "layout='tn'" in err.value.fix


def test_bad_scale_mode_is_rejected(gemm: Any) -> None:
    with pytest.raises(ValueError, match="scale='channel'"):
        gemm.GemmConfig(dtype="e4m3", scale="channel")


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"tile_mn": (96, 96)}, "tile_mn=(96, 96)"),
        ({"cluster_mn": (4, 1)}, "cluster_mn=(4, 1)"),
        ({"dtype": "int8"}, "dtype='int8'"),
        ({"epi_stages": 3}, "epi_stages=3"),
        ({"k_block_bytes": 64}, "k_block_bytes=64"),
        ({"stages": 1}, "it needs at least 2"),
        ({"layout": "xx"}, "layout='xx'"),
        ({"scheduler": "greedy"}, "scheduler='greedy'"),
        ({"kernel": "split"}, "kernel='split'"),
        ({"raster": "z"}, "raster='z'"),
        ({"scheduler": "dynamic", "cluster_mn": (2, 1)}, "single-CTA tiles"),
        ({"kernel": "pingpong", "scheduler": "dynamic", "tile_mn": (64, 128)}, "static scheduler"),
    ],
)
def test_every_refused_configuration_is_a_typed_error_with_a_fix(
    gemm: Any, options: dict[str, Any], words: str
) -> None:
    """Bad input never passes and never crashes: a ``RuntimeConfigError`` (still a
    ``ValueError``) naming the field, with a fix."""
    from ts_runtime.errors import RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match=re.escape(words)) as err:
        gemm.GemmConfig(**options)
    assert err.value.fix and err.value.resource == "gemm"


def test_epilogue_buffer_fix_names_counts_that_divide_the_sub_tiles(gemm: Any) -> None:
    """A 192-wide tile has 6 sub-tiles of 32 columns: 4 buffers do not divide them."""
    from ts_runtime.errors import RuntimeConfigError

    for tile in ((128, 192), (64, 192)):
        with pytest.raises(RuntimeConfigError, match="epi_stages=4") as err:
            gemm.GemmConfig(tile_mn=tile, epi_stages=4)
        assert "[2, 3, 6]" in str(err.value.fix)
        gemm.GemmConfig(tile_mn=tile, epi_stages=3)  # what the fix says works


@dataclasses.dataclass
class _Tensor:
    """What ``check_operands`` reads of a torch tensor (no torch on the CPU runners)."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str
    itemsize: int
    ptr: int = 256

    def stride(self, dim: int | None = None) -> Any:
        return self.strides if dim is None else self.strides[dim]

    def element_size(self) -> int:
        return self.itemsize

    def data_ptr(self) -> int:
        return self.ptr

    def numel(self) -> int:
        return math.prod(self.shape)


def _rows(rows: int, cols: int, dtype: str, pitch: int | None = None) -> _Tensor:
    size = {"torch.float8_e4m3fn": 1, "torch.float32": 4}.get(dtype, 2)
    return _Tensor((rows, cols), (pitch or cols, 1), dtype, size)


FP8, BF16, F32 = "torch.float8_e4m3fn", "torch.bfloat16", "torch.float32"


def _fp8_problem(m: int, n: int, k: int) -> dict[str, Any]:
    return {
        "a": _rows(m, k, FP8),
        "b": _rows(n, k, FP8),
        "c": _rows(m, n, BF16, pitch=-(-n // 8) * 8),
        "scale_a": _rows(m, 1, F32),
        "scale_b": _rows(1, n, F32),
    }


def test_fp8_operands_accepted(gemm: Any, host: Any) -> None:
    cfg = gemm.GemmConfig(dtype="e4m3", scale="rowwise")
    host.check_operands(cfg, **_fp8_problem(1000, 1500, 704))
    # Empty operands: nothing to refuse (torch strides a 1003 x 0 tensor (1, 1), a 2-byte pitch).
    host.check_operands(cfg, **_fp8_problem(0, 1500, 704))
    empty_k = {"a": _Tensor((1003, 0), (1, 1), FP8, 1), "b": _Tensor((1501, 0), (1, 1), FP8, 1)}
    host.check_operands(cfg, **_fp8_problem(1003, 1501, 0) | empty_k)
    empty_n = {"c": _Tensor((1003, 0), (1, 1), BF16, 2), "b": _Tensor((0, 704), (1, 1), FP8, 1)}
    host.check_operands(cfg, **_fp8_problem(1003, 0, 704) | empty_n)
    tensor = gemm.GemmConfig(dtype="e4m3", scale="tensor")
    one = _Tensor((1,), (1,), F32, 4)
    host.check_operands(tensor, **{**_fp8_problem(64, 64, 64), "scale_a": one, "scale_b": one})
    # A ragged K is fine when the row pitch is padded to 16 bytes (TMA zero-fills the rest).
    padded = {**_fp8_problem(7, 9, 13), "a": _rows(7, 13, FP8, 16), "b": _rows(9, 13, FP8, 16)}
    host.check_operands(cfg, **padded)


def test_fp8_k_not_16_byte_aligned_is_refused(gemm: Any, host: Any) -> None:
    from ts_runtime.errors import RuntimeConfigError

    cfg = gemm.GemmConfig(dtype="e4m3", scale="rowwise")
    with pytest.raises(RuntimeConfigError, match=r"pitch of 13 bytes.*FP8 K must be a multiple"):
        host.check_operands(cfg, **_fp8_problem(7, 9, 13))
    bf16 = _fp8_problem(7, 9, 13) | {"a": _rows(7, 13, BF16), "b": _rows(9, 13, BF16, 16)}
    with pytest.raises(RuntimeConfigError, match="pitch of 26 bytes"):
        host.check_operands(gemm.GemmConfig(), **bf16 | {"scale_a": None, "scale_b": None})


def test_fp8_n_major_operand_is_refused(gemm: Any, host: Any) -> None:
    from ts_runtime.errors import UnsupportedOnTarget

    cfg = gemm.GemmConfig(dtype="e4m3", scale="rowwise")
    n_major_b = _Tensor((96, 64), (1, 96), FP8, 1)  # the transpose of a K x N buffer
    with pytest.raises(UnsupportedOnTarget, match="FP8 B is not K-major"):
        host.check_operands(cfg, **_fp8_problem(64, 96, 64) | {"b": n_major_b})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"scale_a": _rows(63, 1, F32)}, "scale_a must be a contiguous fp32 tensor of 64"),
        ({"scale_b": _rows(1, 96, BF16)}, "scale_b must be a contiguous fp32 tensor of 96"),
        ({"scale_b": None}, "scale_b .* got None"),
        ({"a": _rows(64, 64, BF16)}, "A is torch.bfloat16, GemmConfig.*takes float8_e4m3fn"),
        ({"c": _rows(64, 96, FP8)}, "C is torch.float8_e4m3fn.*takes bfloat16"),
        ({"b": _rows(96, 32, FP8)}, "not M x K, N x K, M x N"),
    ],
)
def test_fp8_bad_operands_are_refused(
    gemm: Any, host: Any, change: dict[str, Any], message: str
) -> None:
    from ts_runtime.errors import RuntimeConfigError

    cfg = gemm.GemmConfig(dtype="e4m3", scale="rowwise")
    with pytest.raises(RuntimeConfigError, match=message):
        host.check_operands(cfg, **_fp8_problem(64, 96, 64) | change)


def test_scales_without_scale_mode_are_refused(gemm: Any, host: Any) -> None:
    from ts_runtime.errors import RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match="takes none"):
        host.check_operands(gemm.GemmConfig(dtype="e4m3"), **_fp8_problem(64, 96, 64))


def test_a_launch_with_the_wrong_operands_is_refused(gemm: Any) -> None:
    """The compiled launcher takes only the operands its configuration uses; the old call with
    every operand (Nones included) is a typed error, not extra auxiliary arguments."""
    from ts_runtime.errors import RuntimeConfigError

    cfg = gemm.GemmConfig()
    operands = gemm.used_operands(cfg)
    assert operands == ("a", "b", "c", "stream")
    launch = gemm.CheckedLaunch(cfg, lambda *args: len(args), operands)
    assert launch("a", "b", "c", "stream") == 4
    with pytest.raises(RuntimeConfigError, match=r"takes 4 arguments \(a, b, c, stream\), given 6"):
        launch("a", "b", "c", None, None, "stream")
