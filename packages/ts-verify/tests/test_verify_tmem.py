"""TMEM over budget (TS-V219): the plan's TMEM layout against the SM, the plan and the target."""

from __future__ import annotations

import dataclasses

from verify_testkit import Dst, Src, consume, plan_of, produce, ring, task

from ts_ir import KernelPlan, Target, TmemAllocationSpec, from_json, to_json
from ts_verify import verify


def _plan(*blocks: tuple[int, int], capacity: int | None = None) -> KernelPlan:
    src, r, dst = Src(name="src"), ring("acc"), Dst(name="dst")
    plan = plan_of(
        task("mma", produce(src, r), [src], [r], warp=0, warps=4),
        task("store", consume(r, dst), [r], [dst], warp=4, warps=4),
    )
    tmem = tuple(
        TmemAllocationSpec(f"block{i}", cols, off, "acc") for i, (cols, off) in enumerate(blocks)
    )
    return dataclasses.replace(plan, tmem=tmem, tmem_capacity=capacity)


def test_a_full_sm_of_columns_fits() -> None:
    report = verify(_plan((256, 0), (256, 256)), target=Target.of("sm_100a"))
    assert report.ok and report.diagnostics == (), report.as_text()


def test_one_column_past_the_sm_is_reported_with_blocks_and_owner() -> None:
    report = verify(_plan((256, 0), (257, 256)), target=Target.of("sm_100a"))
    found = [d for d in report.errors if d.code == "TS-V219"]
    assert len(found) == 1, report.as_text()
    d = found[0]
    assert "spans 513 columns" in d.message and "by 1" in d.message
    assert (d.resource, d.task) == ("acc", "mma")
    assert "never returns" in d.message and "block1" in d.fix


def test_the_sm_limit_holds_without_a_target() -> None:
    assert "TS-V219" in verify(_plan((1024, 0))).codes()


def test_the_kernels_own_budget_is_a_limit_too() -> None:
    assert verify(_plan((128, 0), capacity=128)).ok
    report = verify(_plan((128, 0), (64, 128), capacity=128))
    assert "TS-V219" in report.codes() and "budget of 128" in report.as_text()


def test_hopper_has_no_tmem() -> None:
    report = verify(_plan((32, 0)), target=Target.of("sm_90a"))
    found = [d for d in report.errors if d.code == "TS-V219"]
    assert found and "no tensor memory" in found[0].message and "sm_90a" in found[0].message


def test_aliased_blocks_count_once() -> None:
    # Two 512-column phases sharing column 0: the layout spans 512, not 1024.
    assert verify(_plan((512, 0), (512, 0)), target=Target.of("sm_100a")).ok


def test_tmem_survives_the_json_round_trip() -> None:
    plan = _plan((256, 0), (128, 256), capacity=384)
    again = from_json(to_json(plan))
    assert isinstance(again, KernelPlan)
    assert again.tmem == plan.tmem and again.tmem_capacity == 384
    # A plan without TMEM keeps its JSON (no new keys).
    assert '"tmem":' not in to_json(_plan())
