"""Persistent kernels: work-tile loops compile for sm_90a and match their hand-written twins.

Covers the static scheduler with skipped tiles (``persistent_copy``), per-tile dynamic domains
and runtime conditions with the static and the atomic dynamic scheduler (``varlen_copy``), and
the lowering's refusal of a dynamic queue whose hand-off is not once per tile.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("cutlass")

from ts_codegen.dsl import compile_ptx

# The smoke subset (the oldest Python runs only it): one kernel of each kind.
pytestmark = pytest.mark.smoke


@pytest.fixture(scope="module")
def persistent(load_example: Callable[[str], Any]) -> Any:
    return load_example("persistent_copy")


@pytest.fixture(scope="module")
def varlen(load_example: Callable[[str], Any]) -> Any:
    return load_example("varlen_copy")


def test_persistent_copy_same_code_as_twin(persistent: Any) -> None:
    out = persistent.compile_only((1024, 512), 3)
    assert out["verified"] is True
    assert out["ts"] == out["twin"] and out["ts_total"] == out["twin_total"]
    ts = out["ts"]
    assert ts["cp.async.bulk.tensor"] == 2  # TMA load + TMA store
    assert ts["mbarrier.try_wait"] >= 2
    assert ts["setmaxnreg.inc"] == ts["setmaxnreg.dec"] == 0  # no register split requested


def _ts_ptx(varlen: Any, scheduler: str) -> str:
    _, ptx = compile_ptx(dict(varlen.kernels(scheduler))["ts"], *varlen.fake_args(64))
    return str(ptx)


@pytest.mark.parametrize("scheduler", ["static", "dynamic"])
def test_varlen_copy_same_code_as_twin(varlen: Any, scheduler: str) -> None:
    out = varlen.compile_only(scheduler, 64)
    assert out["verified"] is True
    assert out["ts"] == out["twin"], scheduler
    assert out["ts_total"] == out["twin_total"]


def test_static_scheduler_has_no_atomics_dynamic_has_counter_protocol(varlen: Any) -> None:
    static, dynamic = _ts_ptx(varlen, "static"), _ts_ptx(varlen, "dynamic")
    assert "atom." not in static
    atoms = re.findall(r"\batom\.global\.[\w.]+", dynamic)
    # claim the next tile, count the CTA out (acq_rel), the last CTA resets both counters
    assert any(".add." in a and "acq_rel" not in a for a in atoms)
    assert any("acq_rel" in a and ".add." in a for a in atoms)
    assert sum(".exch." in a for a in atoms) == 2
    # the hand-off through SMEM: one slot store by the fetching warp, one load by the other task
    assert len(re.findall(r"\bst\.shared\.[ub]32\b", dynamic)) == 1
    assert len(re.findall(r"\bld\.shared\.[ub]32\b", dynamic)) == 1
    assert "shfl.sync.idx" in dynamic  # the claimed index is broadcast to the warp
    # persistent loops are while loops on the tile validity: both tasks branch back
    assert dynamic.count("mbarrier.init") == static.count("mbarrier.init") + 4


@pytest.fixture
def queue_steps_in_a_block(varlen: Any) -> Iterator[None]:
    """Dynamic schedules whose queue hand-off sits inside the runtime-condition block."""
    from ts_trace import domain_loop, schedule, when_true, work_tile_loop

    @schedule
    def load(wq: Any, meta: Any, ring: Any) -> None:
        with work_tile_loop(wq):
            copy = meta.read_flag()
            with when_true(copy, key="copy"):
                wq.acquire()
                wq.fetch_next_tile()
                wq.commit()
                with domain_loop(varlen.SegmentTask.segment_chunks):
                    ring.acquire()
                    ring.load()
                    ring.commit()

    @schedule
    def store(wq: Any, meta: Any, ring: Any) -> None:
        with work_tile_loop(wq):
            copy = meta.read_flag()
            with when_true(copy, key="copy"):
                wq.wait()
                wq.read_next_tile()
                wq.release()
                with domain_loop(varlen.SegmentTask.segment_chunks):
                    ring.wait()
                    ring.store()
                    ring.store_wait()
                    ring.release()

    saved = varlen.dynamic_load, varlen.dynamic_store
    varlen.dynamic_load, varlen.dynamic_store = load, store
    try:
        yield
    finally:
        varlen.dynamic_load, varlen.dynamic_store = saved


def test_dynamic_handoff_inside_a_block_is_a_lowering_error(
    varlen: Any, queue_steps_in_a_block: None
) -> None:
    # Balanced (both tasks test the same keyed condition), so the verifier accepts it; but an
    # unflagged tile would never learn its successor, so the lowering refuses it.
    with pytest.raises(Exception, match=r"TS-C001") as info:
        _ts_ptx(varlen, "dynamic")
    text = str(info.value)
    assert "task `load`" in text and "segments" in text
    assert "fetch_next_tile()" in text and "outside any block" in text
