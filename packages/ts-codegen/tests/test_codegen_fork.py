"""Fork group (one TMA load into two consumer tasks): one shared full barrier, same code as twin."""

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
    return load_example("fork")


@pytest.fixture(scope="module")
def result(example: Any) -> dict[str, Any]:
    out: dict[str, Any] = example.compile_only(SHAPE, ops=True)
    return out


def test_plan_verifies(result: dict[str, Any]) -> None:
    pytest.importorskip("ts_verify")
    assert result["verified"] is True


def test_members_share_the_first_members_full_barrier(example: Any) -> None:
    from ts_codegen.groups import fork_shared_full, fork_tx_bytes

    assert fork_shared_full(example.PLAN) == {"x_square": "x_double"}
    assert fork_tx_bytes(example.PLAN) == {"x_double": example.TILE_BYTES}  # the one load


def test_expected_instructions(example: Any, result: dict[str, Any]) -> None:
    ts, ops = result["ts"], result["ts_ops"]
    per_thread = example.TILE_M * example.TILE_N // (8 * example.USE_THREADS)
    assert ts["cp.async.bulk.tensor"] == 1  # one load for both consumers
    # Armed once, by the first member's acquire: a second arm (per-member lowering) would
    # expect bytes that no load brings.
    assert ts["mbarrier.arrive.expect_tx"] == 1
    assert ts["mbarrier.try_wait"] == 4  # two empty waits (producer), one full wait per task
    assert ops.get("mbarrier.arrive.shared.b64") == 2  # each task releases its own member
    assert ops.get("ld.shared.v4.b32") == 2 * per_thread  # each task reads the stage
    assert ops.get("st.global.v4.b32") == 2 * per_thread


def test_same_counts_per_kind_as_twin(result: dict[str, Any]) -> None:
    assert result["ts"] == result["twin"]
    assert result["ts_total"] == result["twin_total"]
    assert result["ts_ops"] == result["twin_ops"]


def test_translation_validation_reads_the_shared_full_barrier(example: Any) -> None:
    import cutlass

    from task_scheduling.harness import fake_tensor

    args = [fake_tensor(cutlass.Float16, SHAPE, row_major=True, align=16) for _ in range(3)]
    compiled = example.KERNEL.compile(*args)
    report = compiled.check()
    assert report.ok, report.as_text()
    text = report.as_text()
    assert "ring `x_square`: a TMA Fork member, it uses the full barriers of `x_double`" in text
    assert "task `square` waits on ring `x_square` (full)" in text
