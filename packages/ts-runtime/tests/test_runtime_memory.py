"""SmemAllocation / SmemAllocator layout on the host."""

from __future__ import annotations

import pytest

from ts_ir import CooperativeGroupSpec as G
from ts_runtime import PipelineConfig, ResourceContext, SmemAllocation, SmemAllocator
from ts_trace import MemoryResource


class _Width16:
    width = 16


def test_size_from_dtype() -> None:
    a = SmemAllocation("a", dtype=_Width16, count=10)
    assert a.size_bytes == 20 and a.alignment == 128 and a.offset == 0
    assert SmemAllocation("b", 7).size_bytes == 7


def test_bad_alignment() -> None:
    with pytest.raises(ValueError, match="power of 2"):
        SmemAllocation("a", 8, alignment=48)


def test_layout_offsets_alignment_and_barriers() -> None:
    class Ring(MemoryResource):
        def get_smem_requirements(self) -> list[SmemAllocation]:
            return [SmemAllocation("ring.tiles", 1000, 1024)]

    ring = Ring(
        name="ring",
        pipeline_config=PipelineConfig.create_async_async_pipeline_cfg(
            3, G("thread", 32), G("thread", 32)
        ),
    )
    alloc = SmemAllocator()
    small = alloc.add(SmemAllocation("small", 16, 16))
    alloc.add_resource(ring)
    layout = alloc.compute_layout()
    assert layout.placement("ring.tiles").offset == 0  # largest alignment first
    assert small.offset == 1008  # 1000 rounded up to 16
    assert alloc.barrier_smem_bytes == 48
    assert alloc.total == layout.total == 1024 + 48
    with pytest.raises(RuntimeError, match="already"):
        alloc.compute_layout()
    with pytest.raises(RuntimeError, match="already"):
        alloc.add(SmemAllocation("late", 8))


def test_alias_group_shares_storage(capsys: pytest.CaptureFixture[str]) -> None:
    alloc = SmemAllocator()
    a, b, c = SmemAllocation("a", 256), SmemAllocation("b", 512), SmemAllocation("c", 128)
    alloc.add_alias_group([[a], [b, c]])
    layout = alloc.compute_layout()
    assert a.offset == b.offset == 0 and c.offset == 512
    assert layout.data_bytes == 640
    assert alloc.alias_groups_by_name() == ((("a",), ("b", "c")),)
    alloc.print_usage_report()
    assert "capacity" in capsys.readouterr().out
    with pytest.raises(ValueError, match="two phases"):
        SmemAllocator().add_alias_group([[a]])


def test_duplicate_names() -> None:
    alloc = SmemAllocator()
    alloc.add(SmemAllocation("x", 8))
    with pytest.raises(ValueError, match="twice"):
        alloc.add(SmemAllocation("x", 8))


def test_resource_context_defaults() -> None:
    ctx = ResourceContext()
    assert ctx.smem_base is None and ctx.tmem_ptr_i32 is None


def test_in_kernel_views_need_allocate() -> None:
    with pytest.raises(RuntimeError, match="allocate"):
        _ = SmemAllocator().smem_base
