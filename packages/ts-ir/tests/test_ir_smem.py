"""Tests of ts_ir.smem."""

from __future__ import annotations

import dataclasses

import pytest

from ts_ir import (
    KernelPlan,
    SmemAllocationSpec,
    SmemLayout,
    SmemLayoutError,
    compute_smem_layout,
    plan_smem_layout,
)

A = SmemAllocationSpec


def _offsets(layout: SmemLayout) -> dict[str, int]:
    return {p.name: p.offset for p in layout.placements}


def test_empty_layout() -> None:
    layout = compute_smem_layout([])
    assert layout.placements == ()
    assert (layout.data_bytes, layout.barrier_offset, layout.total) == (0, 0, 0)
    assert layout.capacity == 232448
    assert layout.fits


def test_offsets_are_aligned_and_consecutive() -> None:
    layout = compute_smem_layout([A("x", 100, 16), A("y", 10, 16), A("z", 3, 16)])
    assert _offsets(layout) == {"x": 0, "y": 112, "z": 128}
    assert layout.placement("y").size == 10
    assert layout.placement("y").alignment == 16
    assert layout.placement("y").alias_group is None
    assert layout.data_bytes == 136  # 131 rounded up to 8


def test_sorted_by_alignment_descending_stable() -> None:
    allocs = [A("small", 4, 4), A("big1", 100, 128), A("mid", 8, 16), A("big2", 1, 128)]
    layout = compute_smem_layout(allocs)
    assert [p.name for p in layout.placements] == ["big1", "big2", "mid", "small"]
    assert _offsets(layout) == {"big1": 0, "big2": 128, "mid": 144, "small": 152}
    for p in layout.placements:
        assert p.offset % p.alignment == 0


def test_alias_group_shares_base_and_takes_largest_phase() -> None:
    allocs = [
        A("solo", 64, 1024),
        A("p0a", 100, 128),
        A("p0b", 100, 128),
        A("p1", 1000, 16),
        A("tail", 8, 8),
    ]
    layout = compute_smem_layout(allocs, alias_groups=[[["p0a", "p0b"], ["p1"]]])
    offs = _offsets(layout)
    # The group's alignment (128) places it after "solo" (1024) and before "tail" (8).
    assert offs["solo"] == 0
    assert offs["p0a"] == offs["p1"] == 128
    assert offs["p0b"] == 128 + 128  # phase members are consecutive, each aligned
    # Region size: max(128 + 100, 1000) = 1000.
    assert offs["tail"] == 128 + 1000
    for name in ("p0a", "p0b", "p1"):
        assert layout.placement(name).alias_group == 0
    assert layout.placement("tail").alias_group is None
    assert layout.data_bytes == 1136


def test_alias_group_alignment_is_max_of_members() -> None:
    allocs = [A("first", 8, 8), A("g1", 8, 8), A("g2", 8, 256)]
    layout = compute_smem_layout(allocs, alias_groups=[[["g1"], ["g2"]]])
    assert _offsets(layout) == {"g1": 0, "g2": 0, "first": 8}
    assert layout.placement("g1").alignment == 8


def test_barriers_follow_data_8_aligned() -> None:
    layout = compute_smem_layout([A("x", 13, 1)], barrier_bytes=64, capacity=1000)
    assert layout.data_bytes == 16
    assert layout.barrier_offset == 16
    assert layout.barrier_bytes == 64
    assert layout.total == 80
    assert layout.fits


def test_over_capacity_does_not_raise() -> None:
    layout = compute_smem_layout([A("x", 1024, 128)], barrier_bytes=16, capacity=1024)
    assert layout.total == 1040
    assert not layout.fits
    assert "OVER CAPACITY by 16 B" in layout.report()
    assert compute_smem_layout([A("x", 1024, 128)], capacity=1024).fits


def test_placement_unknown_name() -> None:
    with pytest.raises(KeyError):
        compute_smem_layout([A("x", 1)]).placement("y")


def test_report_lists_everything() -> None:
    layout = compute_smem_layout(
        [A("ab.a", 4096, 1024), A("p", 10, 16), A("q", 20, 16)],
        alias_groups=[[["p"], ["q"]]],
        barrier_bytes=32,
        capacity=8192,
    )
    report = layout.report()
    lines = report.splitlines()
    assert lines[0].split() == ["name", "offset", "size", "align", "alias"]
    assert lines[2].split() == ["ab.a", "0", "4096", "1024", "-"]
    assert lines[3].split() == ["p", "4096", "10", "16", "0"]
    assert lines[4].split() == ["q", "4096", "20", "16", "0"]
    assert "data:     4120 B" in report
    assert "barriers: 32 B at offset 4120" in report
    assert "total:    4152 B" in report
    assert "capacity: 8192 B (50.7% used)" in report
    assert "OVER" not in report


@pytest.mark.parametrize(
    ("allocs", "groups", "message"),
    [
        ([A("x", 1), A("x", 2)], [], r"'x' is declared twice"),
        ([A("x", 1)], [[["x"]]], r"alias group 0 has 1 phase\(s\).*at least two phases"),
        ([A("x", 1)], [[]], r"alias group 0 has 0 phase"),
        ([A("x", 1)], [[["x"], ["nope"]]], r"names 'nope', which is not an allocation"),
        (
            [A("x", 1), A("y", 1), A("z", 1)],
            [[["x"], ["y"]], [["z"], ["x"]]],
            r"'x' appears in alias group 0 and alias group 1",
        ),
        ([A("x", 1), A("y", 1)], [[["x"], ["y", "x"]]], r"'x' appears twice in alias group 0"),
        ([A("x", 1), A("y", 1)], [[["x"], "y"]], r"phase 'y' must be a sequence.*\('y',\)"),
    ],
)
def test_layout_errors(
    allocs: list[SmemAllocationSpec], groups: list[list[list[str]]], message: str
) -> None:
    with pytest.raises(SmemLayoutError, match=message):
        compute_smem_layout(allocs, alias_groups=groups)


def test_negative_barrier_bytes() -> None:
    with pytest.raises(SmemLayoutError, match="barrier_bytes must be >= 0, got -8"):
        compute_smem_layout([], barrier_bytes=-8)


def test_layout_error_is_value_error() -> None:
    assert issubclass(SmemLayoutError, ValueError)


def test_plan_smem_layout(sample_plan: KernelPlan) -> None:
    layout = plan_smem_layout(sample_plan)
    assert _offsets(layout) == {"ab.a": 0, "ab.b": 16384, "acc.out": 32768}
    assert layout.data_bytes == 33768
    assert layout.barrier_bytes == 4 * 16  # the only pipeline: 4 stages, full + empty
    assert layout.total == 33768 + 64
    assert layout.capacity == sample_plan.smem_capacity


def test_plan_smem_layout_uses_alias_groups_and_capacity(sample_plan: KernelPlan) -> None:
    plan = dataclasses.replace(
        sample_plan, smem_alias_groups=((("ab.a",), ("acc.out",)),), smem_capacity=20000
    )
    layout = plan_smem_layout(plan)
    assert layout.placement("ab.a").offset == layout.placement("acc.out").offset == 0
    assert layout.placement("ab.b").offset == 16384
    assert layout.total == 32768 + 64
    assert not layout.fits


def test_plan_layout_counts_the_kernels_own_allocations() -> None:
    own = A("scratch", 1000, 16)
    plan = KernelPlan("k", (), (), smem_extra=(own,), smem_capacity=512)
    layout = plan_smem_layout(plan)
    assert _offsets(layout) == {"scratch": 0}
    assert layout.total == 1000 and not layout.fits
