"""Tensor memory declarations: TmemAllocation, TmemAllocator, and what TaskManager accepts."""

from __future__ import annotations

from typing import Any

import pytest

from ts_runtime import RuntimeConfigError
from ts_runtime.memory import SmemAllocation, SmemAllocator
from ts_runtime.tmem import TmemAllocation, TmemAllocator, TmemDeclaration


class _Accumulator:
    """A resource that declares TMEM the way the reference's resources do."""

    name = "acc"

    def __init__(self, *allocs: TmemAllocation) -> None:
        self.allocs = list(allocs)

    def get_tmem_requirements(self) -> list[TmemAllocation]:
        return self.allocs


def test_blocks_are_laid_out_one_after_another() -> None:
    a, b = TmemAllocation("acc", 256), TmemAllocation("scale", 4)
    tmem = TmemAllocator()
    tmem.add_resource(_Accumulator(a))
    tmem.add(b)
    assert tmem.compute_layout() == 260
    assert (a.offset, b.offset) == (0, 256)
    assert tmem.total_tmem_columns == 260
    assert tmem.owner_of(a) == "acc" and tmem.owner_of(b) == ""


def test_alias_group_phases_share_their_first_column() -> None:
    a, b, c = TmemAllocation("a", 128), TmemAllocation("b", 64), TmemAllocation("c", 256)
    fixed = TmemAllocation("fixed", 32)
    tmem = TmemAllocator()
    tmem.add(fixed)
    tmem.add_alias_group([[a, b], [c]])
    assert tmem.compute_layout() == 32 + 256
    assert (a.offset, b.offset, c.offset) == (32, 160, 32)


def test_layout_runs_once_and_then_refuses_additions() -> None:
    tmem = TmemAllocator()
    tmem.add(TmemAllocation("acc", 8))
    tmem.compute_layout()
    with pytest.raises(RuntimeError, match="compute_layout"):
        tmem.add(TmemAllocation("late", 8))
    with pytest.raises(RuntimeError, match="compute_layout"):
        tmem.compute_layout()


@pytest.mark.parametrize("columns", [0, -1, 1.5, True, 2**17])
def test_bad_column_counts_are_typed_errors(columns: Any) -> None:
    with pytest.raises(RuntimeConfigError, match="num_columns"):
        TmemAllocation("acc", columns)


def test_duplicate_names_and_foreign_objects_are_refused() -> None:
    tmem = TmemAllocator()
    tmem.add(TmemAllocation("acc", 8))
    with pytest.raises(RuntimeConfigError, match="declared twice"):
        tmem.add(TmemAllocation("acc", 8))
    with pytest.raises(RuntimeConfigError, match="get_tmem_requirements"):
        tmem.add_resource(object())
    with pytest.raises(RuntimeConfigError, match="at least two phases"):
        tmem.add_alias_group([[TmemAllocation("x", 8)]])


def test_declaration_lays_out_and_checks_the_task_manager_arguments() -> None:
    tmem = TmemAllocator()
    tmem.add(TmemAllocation("acc", 64))
    decl = TmemDeclaration.of(tmem, None, None)
    assert tmem.is_laid_out and decl.allocator is tmem
    with pytest.raises(RuntimeConfigError, match="must be a TmemAllocator"):
        TmemDeclaration.of(object(), None, None)
    with pytest.raises(RuntimeConfigError, match="tmem_capacity_columns"):
        TmemDeclaration.of(None, 0, None)


def test_smem_allocator_keeps_the_tmem_address_slot() -> None:
    smem = SmemAllocator()
    assert smem.tmem_ptr_alloc is None
    slot = smem.add_tmem_ptr(SmemAllocation("tmem_ptr", size_bytes=4, alignment=4))
    assert smem.tmem_ptr_alloc is slot
    smem.compute_layout()
    assert slot in smem.allocations


def _manager(columns: int, target: str, **options: Any) -> Any:
    from runtime_host_kernels import build

    tmem = TmemAllocator()
    tmem.add(TmemAllocation("acc", columns))
    return build(tmem_allocator=tmem, target=target, **options)


def test_task_manager_records_the_tmem_layout_in_the_plan() -> None:
    tm = _manager(256, "sm_100a")
    assert [(t.name, t.columns, t.offset) for t in tm.plan.tmem] == [("acc", 256, 0)]
    assert tm.report.ok and tm.tmem_allocator is not None


def test_tmem_over_the_sm_is_refused_at_construction() -> None:
    from ts_verify import VerificationError

    with pytest.raises(VerificationError, match="TS-V219"):
        _manager(640, "sm_100a")
    with pytest.raises(VerificationError, match="budget of 128"):
        _manager(256, "sm_100a", tmem_capacity_columns=128)
    with pytest.raises(VerificationError, match="no tensor memory"):
        _manager(32, "sm_90a")
