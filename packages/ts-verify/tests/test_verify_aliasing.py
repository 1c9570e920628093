"""Aliased SMEM (TS-V210) by happens-before: the schedules decide, not the declared graph.

Two aliased resources conflict when some use of one can overlap some use of the other in an
execution the barriers allow. Some of these plans are the shapes the random-plan oracle
(``ring_oracle``) found the verifier wrong on while it still trusted the dependency graph:
a declared order that the schedules do not keep was accepted, and hand-offs that the
schedules do order (a relay that drains before it fills, a ping-pong through two rings) were
rejected.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from broken_corpus import check, points_at
from verify_testkit import (
    Dst,
    Queue,
    Ring,
    Src,
    Tasks,
    consume,
    plan_of,
    produce,
    ring,
    task,
)

from ts_ir import DependencyEdge, KernelPlan, SmemAllocationSpec, WorkAttr
from ts_trace import MemoryResource, domain_loop, producer_work, schedule, work_tile_loop
from ts_verify import Diagnostic, verify

ALIAS = [[["a.tiles"], ["b.tiles"]]]


def at(d: Diagnostic, marker: str, **names: str) -> None:
    """``d`` points at the line of this file marked ``# marker``."""
    points_at(d, __file__, marker, **names)


def rings(a_stages: int = 2, b_stages: int = 2) -> tuple[Ring, Ring]:
    return ring("a", a_stages, smem=8192), ring("b", b_stages, smem=8192)


def clean(plan: KernelPlan) -> None:
    report = verify(plan)
    assert report.ok, report.as_text()
    assert any(p.startswith("no deadlock") for p in report.proven)


# -- conflicts ------------------------------------------------------------------------------------
def test_rings_filled_in_one_iteration(src: Src, dst: Dst) -> None:
    """Both rings are filled and drained in every iteration: they cannot share storage."""
    a, b = rings()

    @schedule
    def producer(s: Any, x: Any, y: Any) -> None:
        with domain_loop(4):
            for r in (x, y):
                r.acquire()  # V210-fill
                r.store(item=s.load())
                r.commit()

    @schedule
    def consumer(x: Any, y: Any, d: Any) -> None:
        with domain_loop(4):
            for r in (x, y):
                r.wait()
                d.write(item=r.read())
                r.release()

    plan = plan_of(
        task("p", producer(src, a, b), [src], [a, b]),
        task("c", consumer(a, b, dst), [a, b], [dst], warp=4),
        smem_alias_groups=ALIAS,
    )
    d = check(plan, "TS-V210").diagnostics[0]
    at(d, "V210-fill", task="p", resource="b", step="b.acquire")
    assert "`a` stage 0 round 0 (from p #" in d.message
    assert "`b` stage 0 round 0 (from p #" in d.message
    assert d.trace is not None and d.trace.events


def test_relay_holding_one_ring_while_filling_the_other(src: Src, dst: Dst) -> None:
    """The relay fills `b` while it still holds the stage of `a` it reads from."""
    a, b = rings()

    @schedule
    def relay(up: Any, down: Any) -> None:
        with domain_loop(4):
            up.wait()
            view = up.read()
            down.acquire()  # V210-relay
            down.store(item=view)
            down.commit()
            up.release()

    plan = plan_of(
        task("p", produce(src, a), [src], [a]),
        task("r", relay(a, b), [a], [b], warp=4),
        task("c", consume(b, dst), [b], [dst], warp=8),
        smem_alias_groups=ALIAS,
    )
    at(check(plan, "TS-V210").diagnostics[0], "V210-relay", task="r", resource="b")


def test_a_declared_dependency_does_not_order_the_rings(src: Src, dst: Dst) -> None:
    """The graph says `b` comes from `a`, but the loader fills `b` while `a` is still read.

    The verifier used to trust the graph and accept this plan (the random-plan oracle found a
    plan of this shape: an unsound "verified").
    """
    a, b = rings()

    @schedule
    def loader(s: Any, x: Any, y: Any) -> None:
        with domain_loop(4):
            x.acquire()
            x.store(item=s.load())
            x.commit()
        with domain_loop(4):
            y.acquire()  # V210-declared
            y.store(item=s.load())
            y.commit()

    plan = plan_of(
        task("p", loader(src, a, b), [src], [a, b]),
        task("c1", consume(a, dst), [a], [dst], warp=4),
        task("c2", consume(b, dst), [b], [dst], warp=8),
        graph={a: [src], b: [src, a], dst: [a, b]},
        smem_alias_groups=ALIAS,
    )
    d = check(plan, "TS-V210").diagnostics[0]
    at(d, "V210-declared", task="p", resource="b", step="b.acquire")
    # A cycle in the graph neither hides nor causes the error: the schedules decide.
    cyclic = dataclasses.replace(plan, dependencies=(*plan.dependencies, DependencyEdge("a", "b")))
    assert verify(cyclic).codes() == ["TS-V210"]


def test_persistent_relay_overlaps_tiles(src: Src, dst: Dst, queue: Queue) -> None:
    """Within a tile `a` is done before `b` starts, but the next tile refills `a` while the
    consumer still reads `b`: a conflict that needs two tiles."""
    a, b = rings()

    @schedule
    def producer(q: Any, s: Any, r: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            r.acquire()
            r.store(item=s.load())
            r.commit()

    @schedule
    def relay(q: Any, x: Any, y: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            x.wait()
            view = x.read()
            x.release()
            y.acquire()  # V210-next-tile
            y.store(item=view)
            y.commit()

    @schedule
    def consumer(q: Any, r: Any, d: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            r.wait()
            d.write(item=r.read())
            r.release()

    plan = plan_of(
        task("p", producer(queue, src, a), [queue, src], [a]),
        task("r", relay(queue, a, b), [queue, a], [b], warp=4),
        task("c", consumer(queue, b, dst), [queue, b], [dst], warp=8),
        smem_alias_groups=ALIAS,
    )
    d = check(plan, "TS-V210").diagnostics[0]
    # The location is the opening step of the use that starts later in the execution found.
    at(d, "V210-next-tile", task="r", resource="b", step="b.acquire")
    assert d.trace is not None and ("work tiles", "2") in d.trace.valuation
    assert "`a` stage 1 round 0" in d.message and "`b` stage 0 round 0" in d.message


# -- hand-offs the schedules order ---------------------------------------------------------------
def test_relay_that_drains_before_it_fills_is_clean(src: Src, dst: Dst) -> None:
    """Every stage of `a` is released before the relay acquires `b`; no graph edge needed.

    Rejected before ("the dependency graph does not order them"): a false alarm.
    """
    a, b = rings()

    @schedule
    def relay(up: Any, down: Any) -> None:
        with domain_loop(4):
            up.wait()
            up.read()
            up.release()
        with domain_loop(4):
            down.acquire()
            down.store()
            down.commit()

    clean(
        plan_of(
            task("p", produce(src, a), [src], [a]),
            task("r", relay(a, b), [a], [b], warp=4),
            task("c", consume(b, dst), [b], [dst], warp=8),
            graph={a: [src], dst: [b]},
            smem_alias_groups=ALIAS,
        )
    )


def test_ping_pong_through_two_rings_is_clean(queue: Queue) -> None:
    """Persistent tasks that hand the storage back and forth: each waits for the other's last
    use before its own first one, in every tile. Rejected before (a false alarm)."""
    a, b = rings(a_stages=2, b_stages=1)

    @schedule
    def ping(q: Any, x: Any, y: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            with domain_loop(Tasks.get_domain):
                x.acquire()
                x.store()
                x.commit()
            y.wait()
            y.read()
            y.release()

    @schedule
    def pong(q: Any, x: Any, y: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            with domain_loop(Tasks.get_domain):
                x.wait()
                x.read()
                x.release()
            y.acquire()
            y.store()
            y.commit()

    clean(
        plan_of(
            task("ping", ping(queue, a, b), [queue, b], [a]),
            task("pong", pong(queue, a, b), [queue, a], [b], warp=4),
            graph={a: [], b: []},
            smem_alias_groups=ALIAS,
        )
    )


# -- a buffer without a pipeline, read by a TMA store ---------------------------------------------
@dataclasses.dataclass(kw_only=True)
class Epilogue(MemoryResource):
    """Epilogue SMEM without a pipeline, written by the threads and read by a TMA store."""

    def get_smem_requirements(self) -> list[Any]:
        return [SmemAllocationSpec("b.tiles", 8192, 1024, "Float16")]

    @producer_work
    def write(self, stage_info: Any) -> None:
        """Registers to SMEM."""

    @producer_work(work_attrs=WorkAttr.ASYNC_READ)
    def tma_store(self, stage_info: Any) -> None:
        """Start the TMA store (reads SMEM asynchronously)."""

    @producer_work(work_attrs=WorkAttr.ASYNC_WAIT_ALL)
    def store_wait(self, stage_info: Any) -> None:
        """cp.async.bulk.wait_group.read 0."""


def _epilogue_then_ring(waits: bool) -> KernelPlan:
    a = ring("a", 2, smem=8192)
    epi = Epilogue(name="b")

    @schedule
    def head(e: Any, x: Any) -> None:
        e.write()
        e.tma_store()
        if waits:
            e.store_wait()
        with domain_loop(4):
            x.acquire()  # V210-tma-store
            x.store()
            x.commit()

    @schedule
    def tail(x: Any) -> None:
        with domain_loop(4):
            x.wait()
            x.read()
            x.release()

    return plan_of(
        task("head", head(epi, a), [], [epi, a]),
        task("tail", tail(a), [a], [], warp=4),
        graph={a: [], epi: []},
        smem_alias_groups=[[["b.tiles"], ["a.tiles"]]],
    )


def test_ring_reuses_an_epilogue_buffer_its_tma_store_still_reads() -> None:
    d = check(_epilogue_then_ring(waits=False), "TS-V210").diagnostics[0]
    at(d, "V210-tma-store", task="head", resource="a", step="a.acquire")
    assert "never retired" in d.message


def test_ring_after_the_tma_store_has_retired_is_clean() -> None:
    clean(_epilogue_then_ring(waits=True))
