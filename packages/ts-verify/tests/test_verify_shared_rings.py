"""Rings read by two consumer tasks at once (one arrival count over both): the whole-kernel parts.

Two consumer tasks that both read every stage of rings ``a`` and ``b`` put the producer in two
biconnected blocks of the task graph (producer - first reader, producer - second reader) over
the same rings. A cross-ring part built from one block alone would lack the other reader's
releases, so no stage would ever be freed in it: every such part holds every task of its rings
(``ts_verify.systems``).
"""

from __future__ import annotations

from typing import Any

from verify_testkit import Dst, Src, async_pipe, plan_of, ring, task

from ts_ir import Schedule
from ts_trace import domain_loop, schedule
from ts_verify import verify
from ts_verify.systems import systems

STAGES = 2


def _load(src: Src, a: Any, b: Any) -> Schedule:
    @schedule
    def load(s: Any, a_: Any, b_: Any) -> None:
        with domain_loop("n"):
            item = s.load()
            a_.acquire()
            a_.store(item=item)
            a_.commit()
            b_.acquire()
            b_.store(item=item)
            b_.commit()

    return load(src, a, b)


def _read(a: Any, b: Any, dst: Dst, *, b_first: bool = False) -> Schedule:
    @schedule
    def read(a_: Any, b_: Any, d: Any) -> None:
        with domain_loop("n"):
            first, second = (b_, a_) if b_first else (a_, b_)
            first.wait()
            second.wait()
            d.write(item=a_.read())
            b_.read()
            a_.release()
            b_.release()

    return read(a, b, dst)


def _plan(*, b_first: bool = False, consumers: int = 64) -> Any:
    src, dst = Src(name="src"), Dst(name="dst")
    # Both readers release every stage: 64 arrivals (two 1-warp tasks) free it.
    a, b = (ring(n, spec=async_pipe(STAGES, 32, consumers)) for n in "ab")
    return plan_of(
        task("load", _load(src, a, b), [src], [a, b], warp=0, warps=1),
        task("read0", _read(a, b, dst), [a, b], [dst], warp=1, warps=1),
        task("read1", _read(a, b, dst, b_first=b_first), [a, b], [dst], warp=2, warps=1),
    )


def test_cross_ring_part_holds_every_reader() -> None:
    parts = [s for s, _ in systems(_plan()) if s.cycle]
    assert [(p.rings, p.tasks) for p in parts] == [(("a", "b"), ("load", "read0", "read1"))]


def test_two_readers_of_shared_rings_verify() -> None:
    report = verify(_plan())
    assert report.ok, report.as_text()


def test_a_reader_waiting_in_the_other_order_still_verifies() -> None:
    """``read1`` waits on ``b`` before ``a``: the producer fills ``a`` first and both stages
    before either is waited on, so no order of the waits blocks (the runs prove it)."""
    report = verify(_plan(b_first=True))
    assert report.ok, report.as_text()


def test_an_arrival_count_of_one_reader_is_refused() -> None:
    """Stages freed after one reader's 32 arrivals are refilled while the other still reads."""
    report = verify(_plan(consumers=32))
    assert "TS-V203" in report.codes(), report.as_text()  # the count is refused first
