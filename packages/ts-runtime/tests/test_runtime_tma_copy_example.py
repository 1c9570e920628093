"""The 2D TMA copy (staged front door) compiles for sm_90a and matches its twin in every variant."""

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
    return load_example("tma_copy")


@pytest.fixture(scope="module")
def result(example: Any) -> dict[str, Any]:
    """The default variant (what ``bench/copy_speed.py`` runs)."""
    out: dict[str, Any] = example.compile_only(SHAPE)
    return out


@pytest.fixture(scope="module")
def tma_store(example: Any) -> dict[str, Any]:
    out: dict[str, Any] = example.compile_only(SHAPE, "tma_store")
    return out


def test_plan_verifies(example: Any, result: dict[str, Any]) -> None:
    pytest.importorskip("ts_verify")
    assert result["verified"] is True
    assert result["variant"] == example.DEFAULT_VARIANT


def test_same_counts_per_kind_as_twin(result: dict[str, Any]) -> None:
    assert result["ts"] == result["twin"]
    assert result["ts_total"] == result["twin_total"]


def test_tma_store_path(example: Any, tma_store: dict[str, Any]) -> None:
    v = example.VARIANTS["tma_store"]
    assert v.tma_store and v.smem_bytes <= 227 * 1024
    ts = tma_store["ts"]
    assert ts == tma_store["twin"] and tma_store["ts_total"] == tma_store["twin_total"]
    assert ts["cp.async.bulk.tensor"] == 2  # TMA load + TMA store
    assert ts["cp.async.bulk.commit_group"] == 1
    assert ts["cp.async.bulk.wait_group"] == 1  # .read 0 before the release
    assert ts["fence"] == 2  # mbarrier init fence + fence.proxy.async before the store
    assert ts["mbarrier.try_wait"] >= 2  # producer acquire + consumer wait
    assert ts["mbarrier.arrive.expect_tx"] >= 1
    assert ts["mbarrier.init"] == 2 * v.stages  # full + empty barrier per stage
    assert ts["setmaxnreg.dec"] == 1
    assert ts["setmaxnreg.inc"] == 1
    assert ts["st.global"] == 0 and ts["ld.shared"] == 0  # no register round trip


@pytest.mark.parametrize("variant", ["regs", "baseline"])
def test_register_store_variants(example: Any, variant: str) -> None:
    out = example.compile_only(SHAPE, variant)
    v = example.VARIANTS[variant]
    ts = out["ts"]
    assert ts == out["twin"] and out["ts_total"] == out["twin_total"]
    assert ts["cp.async.bulk.tensor"] == 1 and ts["cp.async.bulk.wait_group"] == 0
    assert ts["mbarrier.init"] == 2 * v.stages
    per_thread = v.tile_m * v.tile_n // (8 * example.STORE_THREADS)  # 16-byte accesses
    assert ts["ld.shared"] == per_thread and ts["st.global"] == per_thread


def test_store_released_before_its_read_retires_is_rejected(example: Any) -> None:
    """ts-verify sees the TMA store's asynchronous SMEM read (WorkAttr.ASYNC_READ)."""
    ts_verify = pytest.importorskip("ts_verify")
    from ts_ir import CooperativeGroupSpec, PipelineSpec, PipelineType
    from ts_trace import TaskDeclaration, build_plan, domain_loop, schedule

    tiles = type("num_tiles", (), {})()  # a runtime bound, as on the host

    @schedule
    def load(smem: Any) -> None:
        with domain_loop(tiles):
            smem.acquire()
            smem.load()
            smem.commit()

    @schedule
    def racy_store(smem: Any, dst: Any) -> None:
        with domain_loop(tiles):
            smem.wait()
            smem.store()
            smem.release()

    v = example.VARIANTS["tma_store"]
    pipeline = PipelineSpec(
        PipelineType.TmaAsync,
        stages=v.stages,
        bytes_per_stage=v.tile_bytes,
        producer_group=CooperativeGroupSpec("thread", 1),
        consumer_group=CooperativeGroupSpec("thread", example.STORE_THREADS),
    )
    from ts_runtime.blocks import TmaRing

    smem = TmaRing(name="smem", pipeline_config=pipeline)
    dst = example.GlobalOut(name="dst")
    plan = build_plan(
        [
            TaskDeclaration([], [smem], 0, 1, load(smem), 40, name="load"),
            TaskDeclaration([smem], [dst], 4, 8, racy_store(smem, dst), 232, name="store"),
        ],
        {dst: [smem]},
        name="racy_tma_copy",
        block_warps=12,
    )
    assert "TS-V113" in ts_verify.verify(plan).codes()
