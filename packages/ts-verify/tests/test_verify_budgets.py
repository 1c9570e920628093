"""Checks against the target (ts_verify.budgets): pipeline types per architecture, SMEM.

The oracle of each test is arithmetic written here (bytes of the regions and barriers), not the
verifier's layout.
"""

from __future__ import annotations

import dataclasses

import pytest
from broken_corpus import pair
from verify_testkit import Dst, Src, consume, produce, ring

from ts_ir import CooperativeGroupSpec, PipelineSpec, PipelineType, SmemAllocationSpec, Target
from ts_verify import verify


def _umma_ring() -> PipelineSpec:
    # The consumer releases with tcgen05.commit: one arrival per warp of the 4-warp task.
    one, four_warps = CooperativeGroupSpec("thread", 1), CooperativeGroupSpec("thread", 4)
    return PipelineSpec(PipelineType.TmaUmma, 2, 4096, one, four_warps)


def test_a_blackwell_pipeline_on_hopper_names_resource_tasks_and_alternative(
    src: Src, dst: Dst
) -> None:
    buf = ring("buf", spec=_umma_ring())
    plan = pair(src, buf, dst, produce(src, buf), consume(buf, dst))
    report = verify(plan, target=Target.of("sm_90a"))
    assert report.codes() == ["TS-V216"], report.as_text()
    d = report.errors[0]
    assert (d.task, d.resource) == ("p", "buf")
    assert "TmaUmma pipeline, which needs Blackwell" in d.message and "sm_90a" in d.message
    assert "task(s) p, c" in d.message
    assert d.fix.startswith("on Hopper use TmaAsync")
    assert d.location is not None and d.location.line > 0


def test_the_same_plan_is_fine_on_blackwell_and_without_a_target(src: Src, dst: Dst) -> None:
    buf = ring("buf", spec=_umma_ring())
    plan = pair(src, buf, dst, produce(src, buf), consume(buf, dst))
    assert "TS-V216" not in verify(plan, target=Target.of("sm_100a")).codes()
    assert "TS-V216" not in verify(plan).codes()


def test_the_target_capacity_bounds_the_plans(src: Src, dst: Dst) -> None:
    buf = ring("buf", 2, smem=64 * 1024)  # 65536 B of tiles + 2 stages x 16 B of mbarriers
    plan = pair(src, buf, dst, produce(src, buf), consume(buf, dst))
    assert verify(plan, target=Target.of("sm_90a")).ok
    small = Target.of("sm_90a", smem_capacity=65536)
    d = verify(plan, target=small).errors[0]
    assert d.code == "TS-V209" and d.resource == "buf" and d.task == "p"
    assert "needs 65568 bytes of shared memory, more than the 65536 available per CTA on " in (
        d.message
    )
    assert "(by 32 B; data 65536 B + mbarriers 32 B)" in d.message


def test_the_kernels_own_allocations_count(src: Src, dst: Dst) -> None:
    buf = ring("buf", 2, smem=200 * 1024)
    plan = pair(src, buf, dst, produce(src, buf), consume(buf, dst))
    assert verify(plan).ok
    scratch = SmemAllocationSpec("scratch", 32 * 1024, 1024)
    over = dataclasses.replace(plan, smem_extra=(scratch,))
    d = verify(over).errors[0]
    total = 200 * 1024 + 32 * 1024 + 2 * 16
    assert d.code == "TS-V209" and f"needs {total} bytes" in d.message
    # By owner, largest first: the ring (tiles and barriers), then the kernel's own region.
    assert f"(`buf` {200 * 1024 + 32} B, `scratch` {32 * 1024} B)" in d.message
    assert "largest: resource `buf` used by task(s)" in d.message and "`buf`'s stages" in d.fix


def test_a_kernels_own_allocation_as_the_largest_is_named_as_such(src: Src, dst: Dst) -> None:
    """SMEM the kernel takes itself (e.g. ``k.smem_tensor``) belongs to no resource or task."""
    buf = ring("buf", 2, smem=1024)
    plan = pair(src, buf, dst, produce(src, buf), consume(buf, dst))
    staged = SmemAllocationSpec("k.smem_tensor[0]", 240_000, 1024, "Float16", 120_000)
    d = verify(dataclasses.replace(plan, smem_extra=(staged,))).errors[0]
    assert (d.code, d.resource, d.task, d.location) == ("TS-V209", "k.smem_tensor[0]", "", None)
    assert "largest: the kernel's own allocation `k.smem_tensor[0]`" in d.message
    assert "used by task(s)" not in d.message
    assert d.fix.startswith("make `k.smem_tensor[0]` smaller")


def test_malformed_smem_is_a_malformed_declaration(src: Src, dst: Dst) -> None:
    buf = ring("buf", 2, smem=1024)
    plan = pair(src, buf, dst, produce(src, buf), consume(buf, dst))
    twice = dataclasses.replace(plan, smem_extra=(SmemAllocationSpec("buf.tiles", 64),))
    d = verify(twice).errors[0]
    assert d.code == "TS-V214" and "declared twice" in d.message


@pytest.mark.parametrize("target", [None, Target.of("sm_90a")])
def test_a_correct_plan_stays_proven(src: Src, dst: Dst, target: Target | None) -> None:
    buf = ring("buf", 2, smem=1024)
    report = verify(pair(src, buf, dst, produce(src, buf), consume(buf, dst)), target=target)
    assert report.ok and report.proven, report.as_text()
