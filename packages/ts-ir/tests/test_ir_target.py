"""Tests of ts_ir.target: the compilation target the checks read."""

from __future__ import annotations

import pytest

from ts_ir import TMEM_COLUMNS, Target
from ts_ir.errors import ArgumentError


@pytest.mark.parametrize(
    ("name", "sm", "family", "tmem"),
    [
        ("sm_90a", 90, "hopper", 0),
        ("sm_90", 90, "hopper", 0),
        ("sm_80", 80, "older", 0),
        ("sm_100a", 100, "blackwell", 512),
        ("sm_120a", 120, "blackwell", 512),
    ],
)
def test_known_targets(name: str, sm: int, family: str, tmem: int) -> None:
    target = Target.of(name)
    assert (target.sm, target.family, target.tmem_columns) == (sm, family, tmem)
    assert target.is_blackwell_or_later is (sm >= 100)
    assert target.smem_capacity == 232448
    assert TMEM_COLUMNS == 512


def test_capacity_override_and_default() -> None:
    assert Target.of("sm_90a", smem_capacity=1024).smem_capacity == 1024
    assert Target() == Target.of("sm_90a")
    # Frozen: a target keys caches.
    assert {Target(): 1}[Target.of("sm_90a")] == 1


@pytest.mark.parametrize("name", ["hopper", "sm90", "", 90, "sm_90a "])
def test_bad_name_is_a_typed_error(name: object) -> None:
    with pytest.raises(ArgumentError, match="architecture like 'sm_90a'") as info:
        Target(name)  # type: ignore[arg-type]
    assert "Target.of('sm_90a')" in str(info.value)


def test_bad_capacity_is_a_typed_error() -> None:
    with pytest.raises(ArgumentError, match="smem_capacity"):
        Target("sm_90a", smem_capacity=0)
