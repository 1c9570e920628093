"""FP8 two-level accumulation in the Hopper GEMM (``GemmConfig.promote_every``).

The WGMMAs sum groups of ``promote_every`` K blocks; at each group's end (after its WGMMAs
retired) the group goes into a second fp32 register tile, and the next group's first WGMMA
overwrites the WGMMA registers. Checked on the CPU: the option's defaults and its typed errors,
the TS kernel's PTX against the hand-written twin's in every family, what the promotion adds to
the PTX, and - walking the verified plan's schedule with an independent model of the
registers - that every K block reaches the total exactly once for every K block count, for
both warpgroups when their groups are staggered (``promote_stagger``).
"""

from __future__ import annotations

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
from ts_ir import ConditionalBlock, DomainLoop, IterationPredicate, Step, WorkTileLoop


def test_default_is_on_for_fp8_tiles_with_room(gemm: Any) -> None:
    cfg = gemm.GemmConfig
    assert cfg(dtype="e4m3", tile_mn=(128, 128)).promotion == 4
    assert cfg(dtype="e4m3", tile_mn=(64, 128), kernel="pingpong").promotion == 4
    assert cfg(dtype="e4m3", tile_mn=(128, 192), epi_stages=3).promotion == 4  # 96 + 96
    # BN = 256 or 256 x 128: no room for a second 128-value tile per thread: off there
    assert cfg(dtype="e4m3").promotion == 0
    assert cfg(dtype="e4m3", tile_mn=(256, 128)).promotion == 0
    assert cfg(dtype="bf16", tile_mn=(128, 128)).promotion == 0  # 16-bit: fp32 already
    assert cfg(dtype="bf16", tile_mn=(128, 128), promote_every=2).promotion == 2  # allowed
    assert cfg(dtype="e4m3", tile_mn=(128, 128), promote_every=0).promotion == 0


@pytest.mark.parametrize("bad", [-1, True, 1.5, "4"])
def test_bad_interval_is_a_typed_error(gemm: Any, bad: Any) -> None:
    from ts_runtime.errors import RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match=r"promote_every=.*an int >= 1") as err:
        gemm.GemmConfig(dtype="e4m3", tile_mn=(128, 128), promote_every=bad)
    assert "promote_every=4" in err.value.fix


def test_wide_tile_is_a_typed_error(gemm: Any) -> None:
    from ts_runtime.errors import RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match=r"second fp32 tile of 128 registers") as err:
        gemm.GemmConfig(dtype="e4m3", promote_every=4)  # 128 x 256
    assert "128x192" in err.value.fix


def test_fp8_rule_picks_a_tile_with_promotion(gemm: Any) -> None:
    table = importlib.import_module("_gemm_table")  # beside gemm.py, already on sys.path
    for mnk in ((8192, 8192, 8192), (4096, 4096, 14336), (128, 8192, 8192), (2048, 2048, 2048)):
        cfg = table.rule_config(mnk, gemm.GemmConfig(dtype="e4m3"))
        assert cfg.promotion == 4, mnk
    # Promotion turned off by the caller: FP8 keeps the 16-bit rule's 128 x 256 tiles.
    off = table.rule_config((8192, 8192, 8192), gemm.GemmConfig(dtype="e4m3", promote_every=0))
    assert off.tile_mn == (128, 256)


PROMOTED: list[dict[str, Any]] = [
    {"tile_mn": (128, 128)},
    {"tile_mn": (128, 128), "cluster_mn": (2, 1), "promote_every": 1, "scale": "tensor"},
    {"tile_mn": (64, 128)},
    {"tile_mn": (64, 128), "kernel": "pingpong", "scale": "rowwise"},
    {"tile_mn": (128, 128), "scheduler": "dynamic", "promote_every": 3},
    {"tile_mn": (128, 128), "alpha": 0.5, "beta": 1.0, "bias": True, "promote_every": 2},
    {"tile_mn": (128, 192), "epi_stages": 3, "cluster_mn": (2, 1), "scale": "tensor"},
    {"tile_mn": (128, 160), "epi_stages": 5, "cluster_mn": (2, 1), "scale": "tensor"},
    {"tile_mn": (64, 192), "kernel": "pingpong", "epi_stages": 3, "cluster_mn": (2, 1)},
    {"tile_mn": (64, 192), "epi_stages": 3},  # cooperative: one consumer warpgroup
    # staggered groups (the second warpgroup's half a group later), with a tail split too
    {"tile_mn": (128, 128), "cluster_mn": (1, 2), "promote_stagger": True},
    {"tile_mn": (128, 192), "epi_stages": 3, "cluster_mn": (2, 1), "promote_stagger": True}
    | {"scale": "tensor", "tail_split": 3},
]

# The widest promoted tiles, the fused epilogue and the tail split included: 96 + 96 fp32
# registers per consumer thread must stay in registers under setmaxnreg 232.
WIDE: dict[str, dict[str, Any]] = {
    "128x192": {"tile_mn": (128, 192), "epi_stages": 3, "scale": "tensor"},
    "128x192-fused": {
        "tile_mn": (128, 192),
        "epi_stages": 3,
        "scale": "rowwise",
        "alpha": 0.5,
        "beta": 1.0,
        "bias": True,
    },
    "128x192-tail": {"tile_mn": (128, 192), "epi_stages": 3, "scale": "tensor", "tail_split": 2},
    "128x160-2x1-tail": {
        "tile_mn": (128, 160),
        "epi_stages": 5,
        "cluster_mn": (2, 1),
        "scale": "tensor",
        "tail_split": 2,
    },
    "128x192-2x1-stagger-tail-fused": {
        "tile_mn": (128, 192),
        "epi_stages": 3,
        "cluster_mn": (2, 1),
        "scale": "rowwise",
        "beta": 1.0,
        "tail_split": 3,
        "promote_stagger": True,
    },
    # (with beta and a bias on top, ptxas spills 16 bytes here: the fused epilogue's pointers)
    "pingpong-64x192-rowwise": {
        "tile_mn": (64, 192),
        "kernel": "pingpong",
        "cluster_mn": (2, 1),
        "epi_stages": 3,
        "scale": "rowwise",
    },
}


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas (CUDA toolkit)")
@pytest.mark.parametrize("family", sorted(WIDE))
def test_ptxas_keeps_the_wide_promoted_tiles_in_registers(
    gemm: Any, family: str, ptxas_log: Callable[..., str]
) -> None:
    """No spill, and one WGMMA chain per K block: ptxas injects at most one
    ``warpgroup.arrive`` per K loop (C7519; a branch between a group's first WGMMA and its
    twin with the accumulate flag on made it two, and split the chain)."""
    cfg = gemm.GemmConfig(dtype="e4m3", **WIDE[family])
    assert cfg.promotion == 4
    _, ptx = compile_ptx(dict(gemm.kernels(cfg))["ts"], *gemm.fake_operands(cfg))
    log = ptxas_log(ptx, "ts")
    assert "0 bytes spill stores, 0 bytes spill loads" in log, log
    # (a ping-pong kernel has two math warpgroups' K loops: one each)
    assert log.count("C7519") <= (2 if cfg.pingpong else 1) and "C7514" not in log, log


@pytest.mark.parametrize("options", PROMOTED, ids=lambda o: "-".join(map(str, o.values())))
def test_promoted_same_code_as_twin(gemm: Any, options: dict[str, Any]) -> None:
    cfg = gemm.GemmConfig(dtype="e4m3", **options)
    assert cfg.promotion > 0
    out = gemm.compile_only(cfg)
    assert out["verified"] is True and out["same_counts"] is True
    assert out["ts"] == out["twin"] and out["ts_total"] == out["twin_total"]


def test_bf16_promotion_same_code_as_twin(gemm: Any) -> None:
    out = gemm.compile_only(gemm.GemmConfig(tile_mn=(128, 128), promote_every=2))
    assert out["verified"] is True and out["same_counts"] is True


def _scale_d(ptx: str) -> list[str]:
    """Each WGMMA's scale-d input: the value its predicate register is moved from, or "k" when
    it is selected from a runtime predicate (``selp``: a group's first block or not)."""
    movs = dict(re.findall(r"mov\.b32\s+(%r\d+),\s*(\d+);", ptx))
    movs.update(dict.fromkeys(re.findall(r"selp\.b32\s+(%r\d+),\s*1,\s*0,", ptx), "k"))
    regs = re.findall(r"setp\.ne\.b32 p, (%r\d+), 0;\s*wgmma\.mma_async", ptx)
    return [movs.get(r, "?") for r in regs]


@pytest.mark.parametrize("name", ["ts", "twin"])
def test_promotion_in_the_ptx(gemm: Any, name: str) -> None:
    """Promoted: as many WGMMA issue sites, the first of a block on a runtime scale-d (0 when
    the block starts a group; a branch between two WGMMAs there made ptxas break the WGMMA
    chain in every block), one more wait_group 0 and fence (the promotion), and 2 x 64 fp32
    adds (64 values per thread of a 64 x 128 warpgroup tile, once at a group's end and once
    for a short last group)."""

    def ptx(every: int) -> str:
        cfg = gemm.GemmConfig(dtype="e4m3", tile_mn=(128, 128), promote_every=every)
        return str(compile_ptx(dict(gemm.kernels(cfg))[name], *gemm.fake_operands(cfg))[1])

    plain, promoted, each = ptx(0), ptx(4), ptx(1)
    assert sorted(_scale_d(plain)) == ["1"] * 4
    assert sorted(_scale_d(promoted)) == ["1", "1", "1", "k"]
    assert sorted(_scale_d(each)) == ["0", "1", "1", "1"]  # every block starts a group

    def count(text: str, op: str) -> int:
        return len(re.findall(rf"\b{re.escape(op)}\b", text))

    assert count(promoted, "add.f32") - count(plain, "add.f32") == 2 * 64
    assert count(each, "add.f32") - count(plain, "add.f32") == 64  # no short last group
    for op in ("wgmma.wait_group.sync.aligned", "wgmma.fence.sync.aligned"):
        assert count(promoted, op) == count(plain, op) + 1


# -- every K block reaches the total once, for every K block count ------------------------------
def _math_loop(plan: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The mma task's K loop body and what follows the loop in its tile loop."""
    (task,) = [t for t in plan.tasks if t.name == "mma"]
    (tiles,) = [n for n in task.schedule.body if isinstance(n, WorkTileLoop)]
    body = tiles.body
    i = next(i for i, n in enumerate(body) if isinstance(n, DomainLoop))
    loop = body[i]
    assert isinstance(loop, DomainLoop)
    return loop.body, body[i + 1 :]


def _labels(nodes: tuple[Any, ...]) -> list[str]:
    return [n.describe() for n in nodes if isinstance(n, Step)]


def _blocks_in_total(plan: Any, n: int, every: int, shift: int | None = None) -> list[int]:
    """Run the schedule's K loop over ``n`` blocks on a model of the registers.

    The model is the kernel's arithmetic written out: ``acc.zero`` empties the total, a
    block's WGMMAs overwrite the WGMMA registers when ``k % every == 0`` (the block starts a
    group) and add to them otherwise; ``acc.promote`` adds them into the total;
    ``acc.promote_rest`` does when ``n % every != 0``. Which steps run when comes from the
    plan's guards (``fires``), not from the model.

    With ``shift`` (staggered groups, a warpgroup's ``w * every / 2``): a group starts at block
    0 and where ``(k + shift) % every == 0``, ``acc.promote`` adds only where
    ``(k + 1 + shift) % every == 0``, and ``acc.promote_rest`` when ``n > 0`` and
    ``(n + shift) % every != 0``. No promoted group is longer than ``every`` blocks.
    """
    loop, after = _math_loop(plan)
    regs: list[int] = []
    total: list[int] = []
    s = 0 if shift is None else shift
    for k in range(n):
        for node in loop:
            steps = _labels((node,))
            if isinstance(node, ConditionalBlock):
                assert isinstance(node.guard, IterationPredicate)
                steps = _labels(node.body) if node.guard.fires(k, n) else []
            for label in steps:
                if label == "ab.mma":
                    regs = [k] if k == 0 or (k + s) % every == 0 else [*regs, k]
                elif label == "acc.promote" and (shift is None or (k + 1 + s) % every == 0):
                    assert len(regs) <= every, (k, regs)
                    total += regs
    for label in _labels(after):
        if label == "acc.promote_rest" and n > 0 and (n + s) % every:
            assert len(regs) <= every, (n, regs)
            total += regs
    return total


@pytest.mark.parametrize("every", [1, 2, 3, 4, 5])
def test_every_block_is_promoted_once(gemm: Any, every: int) -> None:
    plan = gemm.make_plan(gemm.GemmConfig(dtype="e4m3", tile_mn=(128, 128), promote_every=every))
    _, after = _math_loop(plan)
    assert "acc.promote_rest" in _labels(after)
    for n in range(0, 4 * every + 3):  # K = 0, shorter than a group, ragged, whole groups
        assert sorted(_blocks_in_total(plan, n, every)) == list(range(n)), n


@pytest.mark.parametrize("every", [2, 4, 6])
def test_staggered_groups_promote_every_block_once(gemm: Any, every: int) -> None:
    """Both warpgroups' groups (shift 0 and every / 2) on the plan's own guards."""
    cfg = gemm.GemmConfig(dtype="e4m3", tile_mn=(128, 128), promote_every=every)
    plan = gemm.make_plan(dataclasses.replace(cfg, promote_stagger=True))
    for shift in (0, every // 2):
        for n in range(0, 4 * every + 3):
            assert sorted(_blocks_in_total(plan, n, every, shift)) == list(range(n)), (shift, n)


@pytest.mark.parametrize(
    "options",
    [
        {"tile_mn": (128, 128), "kernel": "pingpong"},  # a warpgroup alone on its tile
        {"tile_mn": (64, 128)},  # one consumer warpgroup
        {"tile_mn": (128, 128), "promote_every": 3},  # no half group
        {"tile_mn": (128, 128), "promote_every": 0},  # no groups
        {"tile_mn": (128, 256)},  # FP8 unpromoted there
    ],
    ids=lambda o: "-".join(map(str, o.values())),
)
def test_stagger_where_it_cannot_be_is_a_typed_error(gemm: Any, options: dict[str, Any]) -> None:
    from ts_runtime.errors import RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match="staggered groups") as err:
        gemm.GemmConfig(dtype="e4m3", promote_stagger=True, **options)
    assert "promote_stagger=False" in err.value.fix


def test_stagger_not_a_bool_and_odd_accumulator_group_are_typed_errors(gemm: Any) -> None:
    from ts_runtime.blocks import WgmmaAccumulator
    from ts_runtime.errors import RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match="not a bool"):
        gemm.GemmConfig(dtype="e4m3", tile_mn=(128, 128), promote_stagger="yes")

    def accumulator(every: int, stagger: object) -> WgmmaAccumulator:
        return WgmmaAccumulator(
            name="acc",
            tiled_mma=None,
            tile_mn=(128, 128),
            smem_a=None,
            smem_b=None,
            promote_every=every,
            k_blocks=8,
            fresh_mma=object(),
            promote_stagger=stagger,  # type: ignore[arg-type]
        )

    with pytest.raises(RuntimeConfigError, match="even count of K blocks") as err:
        accumulator(3, True)
    assert "promote_stagger=False" in err.value.fix
    with pytest.raises(RuntimeConfigError, match="not a bool"):
        accumulator(4, "off")


def test_unpromoted_plan_has_no_promotion(gemm: Any) -> None:
    plan = gemm.make_plan(gemm.GemmConfig(dtype="e4m3"))
    loop, after = _math_loop(plan)
    nested = [s for n in loop if isinstance(n, ConditionalBlock) for s in _labels(n.body)]
    assert not {"acc.promote", "acc.promote_rest"} & {*_labels(loop), *nested, *_labels(after)}


def test_promoted_ptx_passes_translation_validation(gemm: Any) -> None:
    """The compiled TS kernel's barrier protocol is the verified plan's (``Compiled.check``)."""
    cfg = gemm.GemmConfig(dtype="e4m3", tile_mn=(64, 128), kernel="pingpong", promote_every=3)
    report = gemm.gemm_kernel(cfg).compile(*gemm.fake_operands(cfg)).check()
    assert report.ok, report.as_text()


def test_accumulator_promotion_arguments_are_checked() -> None:
    from ts_runtime.blocks import WgmmaAccumulator
    from ts_runtime.errors import RuntimeConfigError

    common: dict[str, Any] = {"tiled_mma": None, "tile_mn": (128, 128), "smem_a": 0, "smem_b": 0}
    with pytest.raises(RuntimeConfigError, match="needs fresh_mma") as err:
        WgmmaAccumulator(name="acc", promote_every=4, **common)
    assert err.value.resource == "acc"
    with pytest.raises(RuntimeConfigError, match=r"promote_every=-1\): a count of K blocks"):
        WgmmaAccumulator(name="acc", promote_every=-1, **common)
    ok = WgmmaAccumulator(name="acc", promote_every=2, fresh_mma=1, k_blocks=8, **common)
    assert ok.promote_every == 2
    assert WgmmaAccumulator(name="acc", **common).promote_every == 0


def test_fp8_tuner_candidates_can_promote(gemm: Any, load_example: Any) -> None:
    tune = load_example("gemm_tune")
    for mnk in ((4096, 4096, 14336), (128, 8192, 8192), (8192, 8192, 8192)):
        promoted = tune.candidates(mnk, gemm.GemmConfig(dtype="e4m3"))
        assert promoted and all(tune.can_promote(c) for c in promoted), mnk
        assert any(c["tile_mn"] == (128, 192) for c in promoted), mnk  # 96 + 96 registers
        assert all(tune.apply_fields(gemm.GemmConfig(dtype="e4m3"), c).promotion for c in promoted)
        fast = tune.candidates(mnk, gemm.GemmConfig(dtype="e4m3", promote_every=0))
        assert any(c["tile_mn"][1] == 256 for c in fast)
