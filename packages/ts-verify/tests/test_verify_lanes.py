"""Interleaved rings: each lane is checked as a ring of its own (``ts_verify.lanes``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from verify_testkit import Dst, Ring, Src, async_pipe, plan_of, task

from ts_ir import Schedule
from ts_trace import domain_loop, schedule
from ts_verify import split_lanes, verify

STAGES, STRIDE, TRIPS = 4, 2, 16


def _ring(stride: int = STRIDE) -> Ring:
    # Each lane's stage is signalled by one 1-warp task: 32 arrivals.
    spec = dataclasses.replace(async_pipe(STAGES, 32, 32), interleave=stride)
    return Ring(name="ring", pipeline_config=spec)


def _fill(src: Src, r: Ring, lane: int, step: int = STRIDE) -> Schedule:
    @schedule
    def fill(s: Any, ring_: Any) -> None:
        with domain_loop(lane, TRIPS, step):
            item = s.load()
            ring_.acquire()
            ring_.store(item=item)
            ring_.commit()

    return fill(src, r)


def _drain(r: Ring, dst: Dst, lane: int, *, releases: int = 1) -> Schedule:
    @schedule
    def drain(ring_: Any, d: Any) -> None:
        with domain_loop(lane, TRIPS, STRIDE):
            ring_.wait()
            ring_.read()
            for _ in range(releases):
                ring_.release()
            d.write()

    return drain(r, dst)


def _plan(r: Ring, *, fill_step: int = STRIDE, releases: int = 1) -> Any:
    src, dst = Src(name="src"), Dst(name="dst")
    return plan_of(
        task("load0", _fill(src, r, 0, fill_step), [src], [r], warp=0, warps=1),
        task("load1", _fill(src, r, 1, fill_step), [src], [r], warp=1, warps=1),
        task("store0", _drain(r, dst, 0, releases=releases), [r], [dst], warp=2, warps=1),
        task("store1", _drain(r, dst, 1), [r], [dst], warp=3, warps=1),
    )


def test_lanes_become_rings_of_their_own() -> None:
    plan, errors = split_lanes(_plan(_ring()))
    assert not errors
    lanes = {r.name: r.pipeline for r in plan.resources if r.name.startswith("ring")}
    assert set(lanes) == {"ring@0", "ring@1"}
    assert all(p is not None and p.stages == STAGES // STRIDE for p in lanes.values())
    steps = {s.resource for t in plan.tasks for s in t.schedule.steps()}
    assert "ring" not in steps and {"ring@0", "ring@1"} <= steps


def test_interleaved_lane_tasks_verify() -> None:
    report = verify(_plan(_ring()))
    assert report.ok, report.as_text()


def test_a_task_outside_a_lane_loop_is_reported() -> None:
    report = verify(_plan(_ring(), fill_step=1))
    assert not report.ok
    assert any(d.code == "TS-V214" and "one lane" in d.message for d in report.errors)


def test_a_broken_lane_is_still_caught() -> None:
    # store0 releases twice per wait: its lane's ring breaks (the other lane is fine).
    report = verify(_plan(_ring(), releases=2))
    assert not report.ok
    assert any("ring@0" in d.message or d.resource == "ring@0" for d in report.errors)
