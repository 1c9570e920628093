"""Interleaved rings: each lane is checked as a ring of its own (``ts_verify.lanes``)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from verify_testkit import (
    Dst,
    Ring,
    RuntimeInt,
    Src,
    async_pipe,
    consume,
    plan_of,
    produce,
    task,
    tma_pipe,
)

from ts_ir import Schedule, SignalingThreads
from ts_trace import domain_loop, schedule, when_true
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


def test_a_one_warp_task_outside_a_lane_loop_works_on_lane_zero() -> None:
    # The reference's rule: no lane loop, so each warp is its own lane; a one-warp task is on
    # lane 0. Both loaders fill lane 0 and nobody fills lane 1, whose reader waits forever.
    plan, errors = split_lanes(_plan(_ring(), fill_step=1))
    assert not errors
    loads = [t for t in plan.tasks if t.name.startswith("load")]
    assert {s.resource for t in loads for s in t.schedule.steps() if s.stage.is_pipeline_op} == {
        "ring@0"
    }
    report = verify(_plan(_ring(), fill_step=1))
    assert not report.ok


def _warp_fill(src: Src, r: Ring) -> Schedule:
    @schedule
    def fill(s: Any, ring_: Any) -> None:
        with domain_loop(TRIPS):
            item = s.load()
            ring_.acquire()
            ring_.store(item=item)
            ring_.commit()

    return fill(src, r)


def _warp_drain(r: Ring, dst: Dst, trips: int = TRIPS) -> Schedule:
    @schedule
    def drain(ring_: Any, d: Any) -> None:
        with domain_loop(trips):
            ring_.wait()
            ring_.read()
            ring_.release()
            d.write()

    return drain(r, dst)


def _warp_plan(r: Ring, *, load_warps: int = STRIDE, store_trips: int = TRIPS) -> Any:
    src, dst = Src(name="src"), Dst(name="dst")
    return plan_of(
        task("load", _warp_fill(src, r), [src], [r], warp=0, warps=load_warps),
        task("store", _warp_drain(r, dst, store_trips), [r], [dst], warp=4, warps=STRIDE),
    )


def test_warp_lanes_split_a_task_into_one_task_per_warp() -> None:
    # Tasks of `stride` warps outside a lane loop: warp w of each task works on lane w.
    plan, errors = split_lanes(_warp_plan(_ring()))
    assert not errors
    by_name = {t.name: t for t in plan.tasks}
    assert set(by_name) == {"load/warp0", "load/warp1", "store/warp0", "store/warp1"}
    assert (by_name["load/warp1"].warp_start, by_name["load/warp1"].num_warps) == (1, 1)
    assert (by_name["store/warp1"].warp_start, by_name["store/warp1"].num_warps) == (5, 1)
    for name, lane in (("load/warp0", 0), ("load/warp1", 1), ("store/warp1", 1)):
        steps = {s.resource for s in by_name[name].schedule.steps() if s.stage.is_pipeline_op}
        assert steps == {f"ring@{lane}"}, name
    # Each lane's stage is signalled by one warp: the groups of 32 are right.
    report = verify(_warp_plan(_ring()))
    assert report.ok, report.as_text()


def test_warp_lanes_against_domain_lanes_that_run_fewer_iterations_are_caught() -> None:
    # Each store warp reads all TRIPS stages of its lane, the loaders fill TRIPS / 2 each.
    src, dst = Src(name="src"), Dst(name="dst")
    r = _ring()
    plan = plan_of(
        task("load0", _fill(src, r, 0), [src], [r], warp=0, warps=1),
        task("load1", _fill(src, r, 1), [src], [r], warp=1, warps=1),
        task("store", _warp_drain(r, dst), [r], [dst], warp=4, warps=STRIDE),
    )
    report = verify(plan)
    assert not report.ok
    assert any(d.code == "TS-V301" and "store/warp" in d.message for d in report.errors)


def test_more_warps_than_lanes_outside_a_lane_loop_is_reported() -> None:
    report = verify(_warp_plan(_ring(), load_warps=2 * STRIDE))
    assert not report.ok
    assert any(
        d.code == "TS-V214" and d.task == "load" and "more warps than lanes" in d.message
        for d in report.errors
    )


@pytest.mark.parametrize("kind", ["tma", "task_warp_leader"])
def test_warp_lanes_with_a_first_warp_signal_elsewhere_are_reported(kind: str) -> None:
    # The store task's warps are lanes of `ring`, and it also fills a ring that only its first
    # warp signals (a TMA ring it arms, or TaskWarpLeader): warp 1 runs at its own pace on
    # stages that warp 0's signal alone completes, a race and a possible deadlock
    # (test_verify_first_warp_lanes_oracle.py shows both), so it is refused as wrong.
    src, dst = Src(name="src"), Dst(name="dst")
    r = _ring()
    spec = (
        tma_pipe(2, 4096, 32)
        if kind == "tma"
        else async_pipe(2, 32, 32, producer_signaling=SignalingThreads.TaskWarpLeader)
    )
    out = Ring(name="out", pipeline_config=spec)

    @schedule
    def drain(ring_: Any, o: Any) -> None:
        with domain_loop(TRIPS):
            ring_.wait()
            item = ring_.read()
            ring_.release()
            o.acquire()
            o.store(item=item)
            o.commit()

    @schedule
    def sink(o: Any, d: Any) -> None:
        with domain_loop(TRIPS):
            o.wait()
            o.read()
            o.release()
            d.write()

    plan = plan_of(
        task("load", _warp_fill(src, r), [src], [r], warp=0, warps=STRIDE),
        task("store", drain(r, out), [r], [out], warp=4, warps=STRIDE),
        task("sink", sink(out, dst), [out], [dst], warp=8, warps=1),
    )
    report = verify(plan)
    assert report.codes() == ["TS-V214"], report.as_text()
    d = report.errors[0]
    assert (d.task, d.resource) == ("store", "out") and "first warp" in d.message
    assert "(a race" in d.message and "(a deadlock)" in d.message
    assert "split the task" in d.fix
    # Every warp signalling fixes a thread-signalled ring; a TMA stage is armed once.
    assert ("SignalingThreads.All" in d.fix) == (kind == "task_warp_leader")
    assert d.location is not None and d.location.function == (
        "test_warp_lanes_with_a_first_warp_signal_elsewhere_are_reported"
    )


def test_a_broken_lane_is_still_caught() -> None:
    # store0 releases twice per wait: its lane's ring breaks (the other lane is fine).
    report = verify(_plan(_ring(), releases=2))
    assert not report.ok
    assert any("ring@0" in d.message or d.resource == "ring@0" for d in report.errors)


# -- a stride per side: interleave_stride=(p, p, c, c) --------------------------------------------
def _sided(strides: tuple[int, int, int, int], stages: int = STAGES) -> Ring:
    spec = dataclasses.replace(async_pipe(stages, 32, 32), interleave=max(strides), strides=strides)
    return Ring(name="ring", pipeline_config=spec)


def _two_loaders_one_reader(r: Ring, *, reader_trips: int = TRIPS) -> Any:
    # Two one-warp loaders on lanes 0 and 1 (stride 2), one one-warp reader of every stage.
    src, dst = Src(name="src"), Dst(name="dst")
    return plan_of(
        task("load0", _fill(src, r, 0), [src], [r], warp=0, warps=1),
        task("load1", _fill(src, r, 1), [src], [r], warp=1, warps=1),
        task("store", _warp_drain(r, dst, reader_trips), [r], [dst], warp=2, warps=1),
    )


def test_producer_lanes_and_one_reader_of_every_stage_verify() -> None:
    plan, errors = split_lanes(_two_loaders_one_reader(_sided((2, 2, 1, 1))))
    assert not errors
    lanes = {r.name: r.pipeline for r in plan.resources if r.name.startswith("ring")}
    assert set(lanes) == {"ring@0", "ring@1"}
    assert all(p is not None and p.stages == 2 and p.strides is None for p in lanes.values())
    store = plan.task("store")
    waits = [s.resource for s in store.schedule.steps() if s.stage.value == "ConsumerWait"]
    # The reader's k-th wait is on stage k % 4, i.e. fine lane k % 2: the loop is unrolled.
    assert waits == [f"ring@{k % 2}" for k in range(TRIPS)]
    reads = [s.resource for s in store.schedule.steps() if s.label == "read"]
    assert reads == waits  # each read is of the stage its wait opened
    report = verify(_two_loaders_one_reader(_sided((2, 2, 1, 1))))
    assert report.ok, report.as_text()


def test_one_writer_and_reader_lanes_verify() -> None:
    src, dst = Src(name="src"), Dst(name="dst")
    r = _sided((1, 1, 2, 2))
    plan = plan_of(
        task("load", _warp_fill(src, r), [src], [r], warp=0, warps=1),
        task("store0", _drain(r, dst, 0), [r], [dst], warp=2, warps=1),
        task("store1", _drain(r, dst, 1), [r], [dst], warp=3, warps=1),
    )
    report = verify(plan)
    assert report.ok, report.as_text()


def test_a_reader_that_reads_fewer_stages_than_the_lanes_fill_is_caught() -> None:
    report = verify(_two_loaders_one_reader(_sided((2, 2, 1, 1)), reader_trips=TRIPS - 1))
    assert not report.ok
    assert any(d.resource.startswith("ring@") for d in report.errors), report.as_text()


def test_a_reader_stride_that_skips_a_lane_is_caught() -> None:
    # The reader moves by 4 from stage 0: it only ever reads lane 0's stages; lane 1's loader
    # fills its two stages and waits forever for their release.
    report = verify(_two_loaders_one_reader(_sided((2, 2, 4, 4)), reader_trips=TRIPS // 2))
    assert not report.ok
    assert any(d.resource in ("ring@1", "ring@3") for d in report.errors), report.as_text()


def test_runtime_bounds_around_a_stepping_cursor_are_counted() -> None:
    """A reader of run-time length beside loaders of constant length: the real difference."""
    src, dst = Src(name="src"), Dst(name="dst")
    r = _sided((2, 2, 1, 1))
    n = RuntimeInt()
    plan = plan_of(
        task("load0", _fill(src, r, 0), [src], [r], warp=0, warps=1),
        task("load1", _fill(src, r, 1), [src], [r], warp=1, warps=1),
        task("store", consume(r, dst, n), [r], [dst], warp=2, warps=1),
    )
    report = verify(plan)
    assert set(report.codes()) == {"TS-V301"}, report.as_text()
    assert {d.resource for d in report.errors} == {"ring@0", "ring@1"}
    assert "runs 0 time(s)" in report.errors[0].message  # the smallest counterexample


def _lane_warps_and_reader(n: object, m: object, reads: int) -> Any:
    """Two producer lanes as the warps of one task in domain_loop(n); a one-warp reader of
    ``reads`` stages per iteration of domain_loop(m)."""
    src, dst, r = Src(name="src"), Dst(name="dst"), _sided((2, 2, 1, 1))

    @schedule
    def reader(ring_: Any, d: Any) -> None:
        with domain_loop(m):  # reader loop
            for _ in range(reads):
                ring_.wait()
                d.write(item=ring_.read())
                ring_.release()

    return plan_of(
        task("load", produce(src, r, n), [src], [r], warp=0, warps=2),
        task("store", reader(r, dst), [r], [dst], warp=2, warps=1),
    )


def test_a_reader_of_every_lane_per_iteration_is_proven_for_run_time_bounds() -> None:
    n = RuntimeInt()
    plan, errors = split_lanes(_lane_warps_and_reader(n, n, 2))
    assert not errors
    # Each iteration starts on fine lane 0: the loop stays one loop, its body on both lanes.
    waits = [s.resource for s in plan.task("store").schedule.steps() if s.label == "wait"]
    assert waits == ["ring@0", "ring@1"]
    report = verify(_lane_warps_and_reader(n, n, 2))
    assert report.ok, report.as_text()
    # One read per iteration reads half of what the lanes fill: caught, for every n.
    assert not verify(_lane_warps_and_reader(n, n, 1)).ok
    # Two run-time values that the program does not relate: caught.
    assert not verify(_lane_warps_and_reader("n", "m", 2)).ok


def _split_end_plan(reader_start: int) -> Any:
    """Lane loops domain_loop(l, n, 2) filling; a reader of every stage in domain_loop(s, n)."""
    src, dst = Src(name="src"), Dst(name="dst")
    r = _sided((2, 2, 1, 1))

    def fill_lane(lane: int) -> Schedule:
        @schedule
        def fill(s: Any, ring_: Any) -> None:
            with domain_loop(lane, "n", 2):
                item = s.load()
                ring_.acquire()
                ring_.store(item=item)
                ring_.commit()

        return fill(src, r)

    @schedule
    def read_all(ring_: Any, d: Any) -> None:
        with domain_loop(reader_start, "n"):
            ring_.wait()
            d.write(item=ring_.read())
            ring_.release()

    return plan_of(
        task("load0", fill_lane(0), [src], [r], warp=0, warps=1),
        task("load1", fill_lane(1), [src], [r], warp=1, warps=1),
        task("store", read_all(r, dst), [r], [dst], warp=2, warps=1),
    )


def test_one_run_time_end_split_in_lane_loops_and_a_reader_is_proven() -> None:
    """The reader's every(2, start=j) copies count as domain_loop(j, n, 2): equal to the lane
    loops' trips for every n (ts_verify.counting.loop_base)."""
    report = verify(_split_end_plan(0))
    assert report.ok, report.as_text()
    # A reader that starts one tile late reads one stage less than the lanes fill: caught.
    report = verify(_split_end_plan(1))
    assert set(report.codes()) == {"TS-V301"}, report.as_text()


def test_runs_give_loops_of_one_end_the_trips_its_value_implies() -> None:
    """The whole-kernel runs (for parts no depth argument proves) value domain_loop(l, n, 2)
    from domain_loop(n)'s trips, never independently, and far enough for each to pass its
    cut-off."""
    from ts_verify.systems import systems
    from ts_verify.whole_kernel import make_part, part_valuations

    plan, errors = split_lanes(_split_end_plan(0))
    assert not errors
    system, slack = next((s, k) for s, k in systems(plan) if s.rings == ("ring@1",))
    part = make_part(plan, system, slack)
    base, lane1 = "0, <n>, 1", "1, <n>, 2"
    assert part.sym.derived == {lane1: (base, 1, 2)}
    assert part.reach[base] >= 1 + 2 * part.reach[lane1]
    seen = set()
    for val in part_valuations(part):
        n = val.trips[(base, -1)]
        assert val.trips[(lane1, -1)] == max(0, (n - 1 + 1) // 2)  # iterations 1, 3, ... < n
        seen.add(n)
    assert seen == set(range(part.reach[base] + 1))


def test_a_stepping_cursor_after_a_run_time_loop_is_refused() -> None:
    src, dst = Src(name="src"), Dst(name="dst")
    r = _sided((2, 2, 1, 1))

    @schedule
    def reader(ring_: Any, d: Any) -> None:
        with domain_loop("n"):
            ring_.wait()
            d.write(item=ring_.read())
            ring_.release()
        ring_.wait()  # after the loop
        ring_.release()

    plan = plan_of(
        task("load", produce(src, r, "n"), [src], [r], warp=0, warps=2),
        task("store", reader(r, dst), [r], [dst], warp=2, warps=1),
    )
    report = verify(plan)
    assert report.codes() == ["TS-V214"], report.as_text()
    d = report.errors[0]
    assert d.task == "store" and "after that loop" in d.message
    assert d.location is not None and d.location.text.endswith("# after the loop")


def test_a_run_time_loop_whose_body_branches_is_refused() -> None:
    src, dst = Src(name="src"), Dst(name="dst")
    r = _sided((2, 2, 1, 1))

    @schedule
    def reader(s: Any, ring_: Any, d: Any) -> None:
        with domain_loop("n"):
            _, flag = s.load_flag()
            with when_true(flag):
                ring_.wait()
                d.write(item=ring_.read())
                ring_.release()

    plan = plan_of(
        task("load", produce(src, r, "n"), [src], [r], warp=0, warps=2),
        task("store", reader(src, r, dst), [src, r], [dst], warp=2, warps=1),
    )
    report = verify(plan)
    assert report.codes() == ["TS-V214"], report.as_text()
    assert "whose body branches" in report.errors[0].message
