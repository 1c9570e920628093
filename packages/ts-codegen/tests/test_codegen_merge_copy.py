"""Merge group (two TMA rings into one store task): lowered as verified, same code as its twin."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

# The smoke subset (the oldest Python runs only it): one kernel of each kind.
pytestmark = pytest.mark.smoke

pytest.importorskip("cutlass")

SHAPE = (1024, 512)


@pytest.fixture(scope="module")
def example(load_example: Callable[[str], Any]) -> Any:
    return load_example("merge_copy")


@pytest.fixture(scope="module")
def result(example: Any) -> dict[str, Any]:
    out: dict[str, Any] = example.compile_only(SHAPE, ops=True)
    return out


def test_plan_verifies(result: dict[str, Any]) -> None:
    pytest.importorskip("ts_verify")
    assert result["verified"] is True


def test_group_release_is_a_release_of_each_member(example: Any) -> None:
    """The plan the lowering emits: the group's release written out on smem_a, then smem_b."""
    from ts_codegen.groups import lowered_plan
    from ts_ir import ScheduleStage

    (group,) = example.PLAN.groups
    store = next(t for t in lowered_plan(example.PLAN).tasks if t.name == "store")
    releases = [
        s.resource for s in store.schedule.steps() if s.stage is ScheduleStage.ConsumerRelease
    ]
    assert releases == ["smem_a", "smem_b"] == list(group.members)
    assert not lowered_plan(example.PLAN).groups


def test_expected_instructions(example: Any, result: dict[str, Any]) -> None:
    ts, ops = result["ts"], result["ts_ops"]
    per_thread = example.TILE_M * example.TILE_N // (8 * example.STORE_THREADS)
    assert ts["cp.async.bulk.tensor"] == 2  # one TMA load per ring
    assert ts["mbarrier.arrive.expect_tx"] == 2  # each producer arms its own full barrier
    # Two producer acquires and two consumer waits; the consumer's one group release is an
    # arrival on each member's empty barrier.
    assert ts["mbarrier.try_wait"] == 4
    assert ops.get("mbarrier.arrive.shared.b64") == 2
    assert ts["mbarrier.init"] == 2 * 2 * example.STAGES  # full + empty per member
    assert ops.get("ld.shared.v4.b32") == 2 * per_thread  # both stages read
    assert ops.get("st.global.v4.b32") == per_thread  # one sum stored
    assert ops.get("add.f16x2", 0) == 4 * per_thread  # 8 halves per 16-byte chunk


def test_same_counts_per_kind_as_twin(result: dict[str, Any]) -> None:
    assert result["ts"] == result["twin"]
    assert result["ts_total"] == result["twin_total"]
    assert result["ts_ops"] == result["twin_ops"]


def test_ptx_protocol_is_the_lowered_plans(example: Any) -> None:
    """Translation validation: the PTX's barriers are the per-member rings of the expansion."""
    import cutlass

    from task_scheduling.harness import fake_tensor

    args = [fake_tensor(cutlass.Float16, SHAPE, row_major=True, align=16) for _ in range(3)]
    report = example.KERNEL.compile(*args).check()
    assert report.ok, report.errors


def test_fused_merge_is_the_same_code(example: Any, result: dict[str, Any]) -> None:
    """A FusedMerge's ``ab.wait()`` is a wait on each member in order: the Merge's PTX."""
    import cutlass

    from task_scheduling.harness import compile_only, fake_tensor

    fused = example.ts_kernel(fused=True)
    assert fused.verify().ok, fused.verify().as_text()
    (group,) = fused.plan().plan.groups
    assert group.mode.value == "FusedMerge"
    args = [fake_tensor(cutlass.Float16, SHAPE, row_major=True, align=16) for _ in range(3)]
    out = compile_only("merge_copy", {"ts": fused.jit_launcher}, args, ops=True)
    assert out["ts_ops"] == result["twin_ops"]
    assert fused.compile(*args).check().ok
