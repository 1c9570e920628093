"""Programmatic dependent launch: the grid wait before dependent reads, the trigger once per CTA.

The kernel is the copy of the PDL pair's second half: a loader reads ``src`` (written by the
previous kernel) into ``ring`` after ``griddepcontrol.wait``; a storer drains the ring into
``dst`` and triggers the next kernel. Whether a read is ordered after the wait is written out
per case by hand (which statement runs before which on every path), not derived from the
verifier's dominance test.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from verify_testkit import Dst, RuntimeInt, Src, consume, marker_line, plan_of, ring, task

from ts_ir import KernelPlan, WorkAttr
from ts_trace import (
    MemoryResource,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    when_true,
)
from ts_verify import Severity, verify


@dataclasses.dataclass(kw_only=True)
class GridWait(MemoryResource):
    """What ``PdlWaitBarrier`` declares: one wait, ``griddepcontrol.wait``."""

    @consumer_work(work_attrs=WorkAttr.GRID_WAIT)
    def wait_griddep(self, stage_info: Any) -> None:
        """griddepcontrol.wait"""


@dataclasses.dataclass(kw_only=True)
class GridLaunch(MemoryResource):
    """What ``PdlLaunchBarrier`` declares: ``griddepcontrol.launch_dependents``."""

    @producer_work(work_attrs=WorkAttr.GRID_LAUNCH)
    def launch_griddep(self, stage_info: Any) -> None:
        """griddepcontrol.launch_dependents"""


Loader = Callable[..., None]


def _plan(loader: Loader, *, gated: bool = True, storer: Loader | None = None) -> KernelPlan:
    """The pair's second kernel with ``loader`` as the load task's schedule body."""
    src, dst, r = Src(name="src"), Dst(name="dst"), ring("ring")
    wait = GridWait(name="pdl_wait", is_barrier=True)
    launch = GridLaunch(name="pdl_launch", is_barrier=True)
    flags = Src(name="flags")  # the storer's runtime conditions
    load = schedule(loader)(src, r, wait, flags)
    if storer is None:
        store_task = task("storer", consume(r, dst), [r], [dst], warp=4)
        graph: dict[MemoryResource, list[MemoryResource]] = {dst: [r]}
    else:
        store = schedule(storer)(r, dst, launch, flags)
        store_task = task("storer", store, [r, flags], [dst, launch], warp=4)
        graph = {dst: [r, flags], launch: []}
    graph[r] = [src, wait] if gated else [src]
    loader_task = task("loader", load, [src, wait, flags], [r], warp=0)
    return plan_of(loader_task, store_task, graph=graph)


def _codes(plan: KernelPlan) -> list[str]:
    return [d.code for d in verify(plan).diagnostics]


def _fill(s: Any, r: Any) -> None:
    item = s.load()
    r.acquire()
    r.store(item=item)
    r.commit()


# -- the wait: before every dependent read, on every path -----------------------------------------
def wait_first(s: Any, r: Any, w: Any, f: Any) -> None:
    w.wait_griddep()
    with domain_loop(4):
        _fill(s, r)


def wait_in_each_iteration(s: Any, r: Any, w: Any, f: Any) -> None:
    with domain_loop(4):
        w.wait_griddep()  # runs before the read of the same iteration, on every path
        _fill(s, r)


def prefetch_then_wait(s: Any, r: Any, w: Any, f: Any) -> None:
    with domain_loop(4):
        r.acquire()  # a barrier operation reads no global memory
        r.prefetch()  # auxiliary: no payload
        w.wait_griddep()
        item = s.load()
        r.store(item=item)
        r.commit()


@pytest.mark.parametrize("loader", [wait_first, wait_in_each_iteration, prefetch_then_wait])
def test_reads_after_the_wait_verify(loader: Loader) -> None:
    report = verify(_plan(loader))
    assert report.ok and report.diagnostics == (), report.as_text()


def wait_after_loop(s: Any, r: Any, w: Any, f: Any) -> None:
    with domain_loop(4):
        _fill(s, r)
    w.wait_griddep()


def no_wait(s: Any, r: Any, w: Any, f: Any) -> None:
    with domain_loop(4):
        _fill(s, r)


def wait_under_condition(s: Any, r: Any, w: Any, f: Any) -> None:
    with when_true(f.load_flag()[1]):  # flags are not the previous kernel's output
        w.wait_griddep()
    with domain_loop(4):
        _fill(s, r)


def wait_in_earlier_loop(s: Any, r: Any, w: Any, f: Any) -> None:
    with domain_loop(RuntimeInt()):  # may run zero times
        w.wait_griddep()
    with domain_loop(4):
        _fill(s, r)


def wait_after_first_read(s: Any, r: Any, w: Any, f: Any) -> None:
    with domain_loop(4):
        item = s.load()  # V230 wait_after_first_read
        w.wait_griddep()
        r.acquire()
        r.store(item=item)
        r.commit()


@pytest.mark.parametrize(
    "loader",
    [wait_after_loop, no_wait, wait_under_condition, wait_in_earlier_loop, wait_after_first_read],
)
def test_read_not_after_the_wait_is_an_error(loader: Loader) -> None:
    report = verify(_plan(loader))
    assert not report.ok
    found = [d for d in report.diagnostics if d.code == "TS-V230"]
    assert len(found) == 1, report.as_text()
    d = found[0]
    assert d.severity is Severity.ERROR and d.task == "loader"
    assert d.resource == "src" and "src.load" in d.step
    assert d.location is not None
    if loader is wait_after_first_read:
        assert d.location.line == marker_line(__file__, "V230 wait_after_first_read")
    else:  # the read in the shared helper, `item = s.load()`
        assert d.location.line == _fill.__code__.co_firstlineno + 1
    assert "pdl_wait.wait_griddep()" in d.fix


def test_message_says_why() -> None:
    (d,) = [d for d in verify(_plan(no_wait)).diagnostics if d.code == "TS-V230"]
    assert "never runs `pdl_wait.wait_griddep()`" in d.message
    (d,) = [d for d in verify(_plan(wait_after_loop)).diagnostics if d.code == "TS-V230"]
    assert "comes after it" in d.message
    (d,) = [d for d in verify(_plan(wait_under_condition)).diagnostics if d.code == "TS-V230"]
    assert "does not run on every path" in d.message and "when(" in d.message


def test_ungated_resource_needs_no_wait() -> None:
    """Only a resource made from the wait (in the graph) depends on the previous kernel."""
    report = verify(_plan(no_wait, gated=False))
    assert "TS-V230" not in report.codes(), report.as_text()


def test_other_tasks_are_not_gated() -> None:
    """A task that produces no dependent resource may read before any wait (the B loader)."""
    src, other, dst, r, r2 = (
        Src(name="src"),
        Src(name="b"),
        Dst(name="dst"),
        ring("a"),
        ring("b_ring"),
    )
    wait = GridWait(name="pdl_wait", is_barrier=True)
    load_a = schedule(wait_first)(src, r, wait, Src(name="flags"))

    @schedule
    def load_b(s: Any, rr: Any) -> None:
        with domain_loop(4):
            _fill(s, rr)

    @schedule
    def store(a: Any, b: Any, d: Any) -> None:
        with domain_loop(4):
            a.wait()
            b.wait()
            d.write(item=a.read())
            a.release()
            b.release()

    plan = plan_of(
        task("load_a", load_a, [src, wait], [r], warp=0),
        task("load_b", load_b(other, r2), [other], [r2], warp=4),
        task("store", store(r, r2, dst), [r, r2], [dst], warp=8),
        graph={r: [src, wait], r2: [other], dst: [r, r2]},
    )
    report = verify(plan)
    assert report.ok and report.diagnostics == (), report.as_text()


# -- the trigger: once per CTA ---------------------------------------------------------------------
def store_then_trigger(r: Any, d: Any, launch: Any, f: Any) -> None:
    with domain_loop(4):
        r.wait()
        d.write(item=r.read())
        r.release()
    launch.launch_griddep()


def trigger_in_loop(r: Any, d: Any, launch: Any, f: Any) -> None:
    with domain_loop(4):
        r.wait()
        d.write(item=r.read())
        r.release()
        launch.launch_griddep()  # V231 trigger_in_loop


def trigger_twice(r: Any, d: Any, launch: Any, f: Any) -> None:
    launch.launch_griddep()
    with domain_loop(4):
        r.wait()
        d.write(item=r.read())
        r.release()
    launch.launch_griddep()  # V231 trigger_twice


def trigger_under_condition(r: Any, d: Any, launch: Any, f: Any) -> None:
    with domain_loop(4):
        r.wait()
        d.write(item=r.read())
        r.release()
    with when_true(f.load_flag()[1]):
        launch.launch_griddep()  # V231 trigger_under_condition


def test_one_trigger_at_the_top_level_verifies() -> None:
    report = verify(_plan(wait_first, storer=store_then_trigger))
    assert report.ok and report.diagnostics == (), report.as_text()


@pytest.mark.parametrize("storer", [trigger_in_loop, trigger_twice, trigger_under_condition])
def test_trigger_not_once_is_a_warning(storer: Loader) -> None:
    report = verify(_plan(wait_first, storer=storer))
    assert report.ok, report.as_text()  # a lost overlap, never a wrong result
    (d,) = [d for d in report.diagnostics if d.code == "TS-V231"]
    assert d.severity is Severity.WARNING and d.task == "storer"
    assert d.resource == "pdl_launch" and d.location is not None
    assert d.location.line == marker_line(__file__, f"V231 {storer.__name__}")


def test_plan_json_keeps_the_attributes() -> None:
    """The attributes survive serialization, so `ts verify` of a saved plan judges the same."""
    from ts_ir import from_json, to_json

    plan = _plan(wait_after_loop, storer=trigger_in_loop)
    again = from_json(to_json(plan))
    assert isinstance(again, KernelPlan)
    assert _codes(again) == _codes(plan)
    assert {"TS-V230", "TS-V231"} <= set(_codes(plan))


def test_kinds_of_resources_unchanged() -> None:
    """The PDL barriers are plain barrier resources: no pipeline, no SMEM."""
    plan = _plan(wait_first, storer=store_then_trigger)
    for name in ("pdl_wait", "pdl_launch"):
        res = plan.resource(name)
        assert res.is_barrier and res.pipeline is None and res.smem == ()
