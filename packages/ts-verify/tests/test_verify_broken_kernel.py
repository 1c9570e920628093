"""Broken plans, part 2: whole-kernel checks (TS-V3xx) and the report.

Same conventions as ``test_verify_broken_declarations.py``: exact codes, marked lines.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from broken_corpus import check, pair, points_at
from verify_testkit import (
    Dst,
    Queue,
    Ring,
    RuntimeInt,
    Src,
    Tasks,
    async_pipe,
    consume,
    marker_line,
    plan_of,
    produce,
    ring,
    task,
)

from ts_ir import KernelPlan
from ts_trace import domain_loop, schedule, when_true, work_tile_loop
from ts_verify import VERIFY_CATALOG, Diagnostic, Severity, VerificationError, verify


def line_of(marker: str) -> int:
    """The line of this file marked ``# marker``."""
    return marker_line(__file__, marker)


def at(d: Diagnostic, marker: str, **names: str) -> None:
    """``d`` points at the line of this file marked ``# marker``."""
    points_at(d, __file__, marker, **names)


@pytest.fixture
def buf() -> Ring:
    return ring("buf", 2)


# -- whole kernel: counts --------------------------------------------------------------------------
def test_counts_differ_under_an_opaque_condition(src: Src, buf: Ring, dst: Dst) -> None:
    """The producer fills a stage only when the flag is set; the consumer always waits."""

    @schedule
    def producer(s: Any, r: Any) -> None:
        with domain_loop(4):
            item, flag = s.load_flag()
            with when_true(flag):
                r.acquire()  # V301
                r.store(item=item)
                r.commit()

    d = check(pair(src, buf, dst, producer(src, buf), consume(buf, dst)), "TS-V301").diagnostics[0]
    at(d, "V301", task="p", resource="buf", step="buf.acquire")
    assert "is False for the kernel: p (acquires) 0x, c (waits) 4x" in d.message


def test_counts_differ_between_constant_loops(src: Src, buf: Ring, dst: Dst) -> None:
    plan = pair(src, buf, dst, produce(src, buf, 4), consume(buf, dst, 3))
    d = check(plan, "TS-V301").diagnostics[0]
    assert d.task == "p" and d.resource == "buf"
    assert "the smallest case: always: p (acquires) 4x, c (waits) 3x" in d.message


def test_counts_differ_between_unrelated_runtime_loops(src: Src, buf: Ring, dst: Dst) -> None:
    """Two different per-tile getters need not agree."""
    plan = pair(
        src, buf, dst, produce(src, buf, Tasks.get_domain), consume(buf, dst, Tasks.k_blocks)
    )
    check(plan, "TS-V301")


def test_skippable_fill_but_unconditional_drain(src: Src, dst: Dst, queue: Queue) -> None:
    buf = ring("buf")

    @schedule
    def producer(q: Any, s: Any, r: Any) -> None:
        with work_tile_loop(q, skip_if=Queue.past_end) as tiles:
            q.next_tile()
            with tiles.skippable():
                r.acquire()  # V301b
                r.store(item=s.load())
                r.commit()

    @schedule
    def consumer(q: Any, r: Any, d: Any) -> None:
        with work_tile_loop(q, skip_if=Queue.past_end):
            q.next_tile()
            r.wait()
            d.write(item=r.read())
            r.release()

    plan = plan_of(
        task("p", producer(queue, src, buf), [queue, src], [buf]),
        task("c", consumer(queue, buf, dst), [queue, buf], [dst], warp=4),
    )
    d = check(plan, "TS-V301").diagnostics[0]
    at(d, "V301b", task="p", resource="buf", step="buf.acquire")
    assert "`Queue.past_end` skips the tile" in d.message


def test_release_once_per_tile_with_a_dynamic_domain(src: Src, dst: Dst, queue: Queue) -> None:
    """NVIDIA's checker runs dynamic domains about once and passes this with a warning."""
    buf = ring("buf")

    @schedule
    def consumer(q: Any, r: Any, d: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            with domain_loop(Tasks.get_domain):
                r.wait()  # gap-wait
                d.write(item=r.read())
            r.release()  # gap-release

    plan = plan_of(
        task("p", _persistent_producer(queue, src, buf), [queue, src], [buf]),
        task("c", consumer(queue, buf, dst), [queue, buf], [dst], warp=4),
    )
    report = check(plan, "TS-V104", "TS-V102")
    at(report.diagnostics[0], "gap-wait", task="c", resource="buf", step="buf.wait")
    at(report.diagnostics[1], "gap-release", task="c", resource="buf", step="buf.release")


def test_wait_and_release_once_per_tile_with_a_dynamic_domain(
    src: Src, dst: Dst, queue: Queue
) -> None:
    """Balanced per tile, but the producer fills a stage per iteration: a hang beyond 1."""
    buf = ring("buf")

    @schedule
    def consumer(q: Any, r: Any, d: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            r.wait()
            with domain_loop(Tasks.get_domain):
                d.write(item=r.read())
            r.release()

    plan = plan_of(
        task("p", _persistent_producer(queue, src, buf), [queue, src], [buf]),
        task("c", consumer(queue, buf, dst), [queue, buf], [dst], warp=4),
    )
    d = check(plan, "TS-V301").diagnostics[0]
    assert d.severity is Severity.ERROR
    assert "p (acquires) 0x, c (waits) 1x" in d.message


def _persistent_producer(queue: Queue, src: Src, buf: Ring) -> Any:
    @schedule
    def producer(q: Any, s: Any, r: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            with domain_loop(Tasks.get_domain):
                r.acquire()
                r.store(item=s.load())
                r.commit()

    return producer(queue, src, buf)


def test_every_2_drains_fewer_stages_than_produced(src: Src, buf: Ring, dst: Dst) -> None:
    """An `every(2)` block in a loop of 8 runs 4 times, not 8 x 4 (and not 3)."""

    @schedule
    def consumer(r: Any, d: Any) -> None:
        with domain_loop(8) as loop, loop.every(2):
            r.wait()
            d.write(item=r.read())
            r.release()

    plan = pair(src, buf, dst, produce(src, buf, 3), consumer(buf, dst))
    d = check(plan, "TS-V301").diagnostics[0]
    assert "the smallest case: always: p (acquires) 3x, c (waits) 4x" in d.message


def test_lagged_consumer_against_a_plain_producer(src: Src, buf: Ring, dst: Dst) -> None:
    """The first_iter() wait is one stage more than a dynamic loop of the producer fills."""

    @schedule
    def consumer(r: Any, d: Any) -> None:
        with domain_loop(Tasks.get_domain) as loop:
            with loop.first_iter():
                r.wait()
            d.write(item=r.read())
            r.wait()
            r.release()
            with loop.last_iter():
                d.write(item=r.read())
                r.release()

    plan = pair(src, buf, dst, produce(src, buf, Tasks.get_domain), consumer(buf, dst))
    d = check(plan, "TS-V301").diagnostics[0]
    assert "runs 1 time(s): p (acquires) 1x, c (waits) 2x" in (d.message)


# -- whole kernel: deadlocks and races -------------------------------------------------------------
def test_two_tasks_wait_on_each_other_through_two_pipelines(src: Src, dst: Dst) -> None:
    x, y = ring("x"), ring("y")

    @schedule
    def left(s: Any, a: Any, b: Any) -> None:
        with domain_loop(4):
            b.wait()  # V302-left
            b.read()
            b.release()
            a.acquire()
            a.store(item=s.load())
            a.commit()

    @schedule
    def right(a: Any, b: Any, d: Any) -> None:
        with domain_loop(4):
            a.wait()  # V302-right
            d.write(item=a.read())
            a.release()
            b.acquire()
            b.store()
            b.commit()

    plan = plan_of(
        task("left", left(src, x, y), [src, y], [x]),
        task("right", right(x, y, dst), [x], [y, dst], warp=4),
    )
    report = check(plan, "TS-V302")
    assert report.codes() == ["TS-V215", "TS-V302"]  # the rings form a dependency cycle too
    d = report.errors[0]
    at(d, "V302-left", task="left", resource="y", step="y.wait")
    assert d.trace is not None
    assert d.trace.events == ()
    assert [t for t, _ in d.trace.blocked] == ["left", "right"]
    assert "y.wait (stage 0, round 0) needs the producers to fill stage 0" in d.trace.blocked[0][1]
    assert "x.wait (stage 0, round 0)" in d.trace.blocked[1][1]
    text = d.as_text()
    assert "  blocked: left: waits at y.wait" in text
    assert "  blocked: right: waits at x.wait" in text


def _fill_then_signal(n: object, x: Ring, y: Ring, src: Src, dst: Dst) -> KernelPlan:
    """The producer fills ``n`` stages of ``x`` and then one of ``y``; the consumer drains ``y``
    first. Fine while ``n`` fits into ``x``'s stages, a deadlock beyond."""

    @schedule
    def producer(s: Any, a: Any, b: Any) -> None:
        with domain_loop(n):
            a.acquire()  # capacity
            a.store(item=s.load())
            a.commit()
        b.acquire()
        b.store()
        b.commit()

    @schedule
    def consumer(a: Any, b: Any, d: Any) -> None:
        b.wait()
        b.read()
        b.release()
        with domain_loop(n):
            a.wait()
            d.write(item=a.read())
            a.release()

    return plan_of(
        task("p", producer(src, x, y), [src], [x, y]),
        task("c", consumer(x, y, dst), [x, y], [dst], warp=4),
    )


def test_capacity_deadlock_beyond_the_stage_count(src: Src, dst: Dst) -> None:
    """A runtime trip count larger than the ring hangs; the counterexample shows it."""
    x, y = ring("x", 2), ring("y", 1)
    report = check(_fill_then_signal(RuntimeInt(), x, y, src, dst), "TS-V302")
    d = report.diagnostics[0]
    at(d, "capacity", task="p", resource="x", step="x.acquire")
    assert d.trace is not None
    (name, value), *_ = d.trace.valuation
    assert name == "trips of domain_loop(0, <RuntimeInt>, 1)"
    assert int(value) > 2
    assert int(value) == 3  # the smallest counterexample
    assert [t for t, _ in d.trace.blocked] == ["p", "c"]
    assert (
        "x.acquire (stage 0, round 1) needs the consumers to release stage 0"
        in (d.trace.blocked[0][1])
    )
    filled = [e for e in d.trace.events if e.text.startswith("#") and ".commit" in e.text]
    assert len(filled) == 2


@pytest.mark.parametrize("n", [0, 1, 2])
def test_the_same_schedule_fits_with_few_iterations(src: Src, dst: Dst, n: int) -> None:
    report = verify(_fill_then_signal(n, ring("x", 2), ring("y", 1), src, dst))
    assert report.ok and report.diagnostics == (), report.as_text()


def test_constant_trip_count_beyond_the_stage_count(src: Src, dst: Dst) -> None:
    report = check(_fill_then_signal(3, ring("x", 2), ring("y", 1), src, dst), "TS-V302")
    assert report.diagnostics[0].trace is not None
    assert report.diagnostics[0].trace.valuation == ()


def test_capacity_deadlock_of_a_per_tile_domain(src: Src, dst: Dst, queue: Queue) -> None:
    x, y = ring("x", 3), ring("y", 1)

    @schedule
    def producer(q: Any, s: Any, a: Any, b: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            with domain_loop(Tasks.get_domain):
                a.acquire()  # tile-capacity
                a.store(item=s.load())
                a.commit()
            b.acquire()
            b.store()
            b.commit()

    @schedule
    def consumer(q: Any, a: Any, b: Any, d: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            b.wait()
            b.read()
            b.release()
            with domain_loop(Tasks.get_domain):
                a.wait()
                d.write(item=a.read())
                a.release()

    plan = plan_of(
        task("p", producer(queue, src, x, y), [queue, src], [x, y]),
        task("c", consumer(queue, x, y, dst), [queue, x, y], [dst], warp=4),
    )
    report = check(plan, "TS-V302")
    d = report.errors[0]
    at(d, "tile-capacity", task="p", resource="x", step="x.acquire")
    assert d.trace is not None
    trips = dict(d.trace.valuation)["trips of domain_loop(0, Tasks.get_domain(tile), 1)"]
    assert trips == "tile 0: 4"


def test_task_waits_on_itself(src: Src, dst: Dst) -> None:
    loop_ring = ring("loop")

    @schedule
    def selfish(s: Any, r: Any, d: Any) -> None:
        with domain_loop(2):
            r.wait()  # self
            d.write(item=r.read())
            r.release()
            r.acquire()
            r.store(item=s.load())
            r.commit()

    plan = plan_of(task("t", selfish(src, loop_ring, dst), [src, loop_ring], [loop_ring, dst]))
    report = check(plan, "TS-V302")
    d = report.errors[0]
    at(d, "self", task="t", resource="loop", step="loop.wait")


def test_lagged_release_needs_two_stages(src: Src, dst: Dst) -> None:
    """Waiting for stage i + 1 before releasing stage i holds two stages: one is not enough."""
    buf = ring("buf", 1)

    @schedule
    def consumer(r: Any, d: Any) -> None:
        with domain_loop(8) as loop:
            with loop.first_iter():
                r.wait()
            d.write(item=r.read())
            r.wait()  # lagged
            r.release()
            with loop.last_iter():
                d.write(item=r.read())
                r.release()

    report = check(pair(src, buf, dst, produce(src, buf, 9), consumer(buf, dst)), "TS-V302")
    d = report.diagnostics[0]
    assert (d.task, d.resource) == ("p", "buf")
    assert d.trace is not None
    assert [t for t, _ in d.trace.blocked] == ["p", "c"]
    assert d.trace.blocked[0][1].startswith("waits at buf.acquire (stage 0, round 1)")
    assert d.trace.blocked[1][1].startswith("waits at buf.wait (stage 0, round 1)")
    last = [e for e in d.trace.events if e.task == "c"][-1]
    assert last.location.line == line_of("lagged") - 1  # read; the next wait blocks


def test_race_from_a_too_small_consumer_group(src: Src, dst: Dst) -> None:
    """Two consumer tasks, a group sized for one: the first release completes the empty barrier,
    and the producer refills the stage while the second consumer still reads it."""
    buf, sig = ring("buf", 1, async_pipe(1, 128, 128)), ring("sig", 1)

    @schedule
    def producer(s: Any, r: Any, g: Any) -> None:
        r.acquire()
        r.store(item=s.load())
        r.commit()
        r.acquire()  # V303
        r.store(item=s.load())
        r.commit()
        g.acquire()
        g.store()
        g.commit()

    @schedule
    def fast(r: Any, d: Any) -> None:
        for _ in range(2):
            r.wait()
            d.write(item=r.read())
            r.release()  # V303-static

    @schedule
    def slow(r: Any, g: Any, d: Any) -> None:
        r.wait()
        g.wait()
        g.read()
        d.write(item=r.read())
        g.release()
        r.release()
        r.wait()
        d.write(item=r.read())
        r.release()

    plan = plan_of(
        task("p", producer(src, buf, sig), [src], [buf, sig]),
        task("fast", fast(buf, dst), [buf], [dst], warp=4),
        task("slow", slow(buf, sig, dst), [buf, sig], [dst], warp=8),
    )
    static, race = check(plan, "TS-V203", "TS-V303").diagnostics
    at(static, "V303-static", task="fast", resource="buf", step="buf.release")
    assert "arrive 256 times per phase (task `fast` (4 warps) 128, task `slow` (4 warps) 128)" in (
        static.message
    )
    at(race, "V303", task="p", resource="buf", step="buf.acquire")
    assert "stage 0 is refilled while slow still reads it" in race.message
    assert race.trace is not None
    tasks = [e.task for e in race.trace.events]
    assert tasks[-1] == "p" and "slow" in tasks and "fast" in tasks
    assert race.trace.events[-1].text.endswith("buf.acquire -> stage 0, round 1")


# -- the report ------------------------------------------------------------------------------------
def _missing_commit_plan(src: Src, buf: Ring, dst: Dst) -> KernelPlan:
    @schedule
    def producer(s: Any, r: Any) -> None:
        with domain_loop(4):
            r.acquire()  # report
            r.store(item=s.load())

    return pair(src, buf, dst, producer(src, buf), consume(buf, dst), name="leaky")


def test_report_text(src: Src, buf: Ring, dst: Dst) -> None:
    text = verify(_missing_commit_plan(src, buf, dst)).as_text()
    lines = text.splitlines()
    assert lines[0] == "leaky: 1 error(s)"
    assert lines[1].startswith("error TS-V103 (acquire never committed): ")
    assert "  in task `p`, resource `buf`, step `#0 buf.acquire`" in lines
    assert f'  File "{__file__}", line {line_of("report")}, in producer' in lines
    assert "      r.acquire()  # report" in lines
    assert "  fix: call buf.commit() before the end of one loop iteration" in lines
    assert lines[-1] == "  see: ts explain TS-V103"


def test_report_json(src: Src, buf: Ring, dst: Dst) -> None:
    data = json.loads(verify(_missing_commit_plan(src, buf, dst)).to_json())
    assert data["plan"] == "leaky"
    assert data["ok"] is False
    assert [d["code"] for d in data["diagnostics"]] == ["TS-V103"]
    (d,) = data["diagnostics"]
    assert d["task"] == "p" and d["resource"] == "buf" and d["severity"] == "error"
    assert d["location"]["line"] == line_of("report")
    assert d["title"] == "acquire never committed"
    assert data["proven"] == []
    assert "seconds" in data["stats"]


def test_raise_for_errors(src: Src, buf: Ring, dst: Dst) -> None:
    report = verify(_missing_commit_plan(src, buf, dst))
    with pytest.raises(VerificationError) as err:
        report.raise_for_errors()
    assert err.value.report is report
    assert report.diagnostics[0].as_text() in str(err.value)
    assert str(err.value).startswith("leaky: 1 error(s)\nerror TS-V103")


def test_raise_for_errors_passes_a_valid_plan(src: Src, buf: Ring, dst: Dst) -> None:
    verify(pair(src, buf, dst, produce(src, buf), consume(buf, dst))).raise_for_errors()


def test_deadlock_text_names_file_and_line(src: Src, dst: Dst) -> None:
    report = verify(_fill_then_signal(3, ring("x", 2), ring("y", 1), src, dst))
    text = report.as_text()
    assert (
        "error TS-V302 (deadlock): the kernel deadlocks (a cycle through `x`, `y`): "
        "no task can make progress" in text
    )
    assert f"({__file__}:{line_of('capacity')})" in text
    assert "  fix: reorder the schedules" in text


def test_every_code_is_in_this_corpus() -> None:
    # Asynchronous-read cases (TS-V113), aliasing (TS-V210), the target's checks (TS-V216) and
    # Blackwell's (TS-V217/218 arrivals, TS-V219 TMEM, TS-V220/221 CLC, TS-V222-224 TMEM
    # lifetime), PDL's (TS-V23x), pipeline groups' (TS-V24x) and CTA gates' and queue steps'
    # (TS-V25x) and consumers taking turns (TS-V115) live in their own modules.
    here = Path(__file__).parent
    names = (
        "test_verify_broken_declarations.py",
        "test_verify_budgets.py",
        "test_verify_blackwell.py",
        "test_verify_tmem.py",
        "test_verify_tmem_lifetime.py",
        "test_verify_clc.py",
        "test_verify_pdl.py",
        "test_verify_groups.py",
        "test_verify_launch.py",
        "test_verify_broken_kernel.py",
        "test_verify_async.py",
        "test_verify_aliasing.py",
        "test_verify_malformed.py",
        "test_verify_skip.py",
    )
    source = "".join((here / name).read_text() for name in names)
    used = set(re.findall(r'"(TS-V\d{3})"', source))
    assert used >= set(VERIFY_CATALOG), sorted(set(VERIFY_CATALOG) - used)


def test_huge_every_period_on_one_ring_is_proven_from_depths(src: Src, dst: Dst) -> None:
    """Balanced every(2**31 - 1) blocks on one ring need no runs (ts_verify.depth): proven."""
    buf = ring("buf", 2)
    n = RuntimeInt()

    @schedule
    def producer(s: Any, r: Any) -> None:
        with domain_loop(n) as k, k.every(2**31 - 1):
            r.acquire()
            r.store(item=s.load())
            r.commit()

    @schedule
    def consumer(r: Any, d: Any) -> None:
        with domain_loop(n) as k, k.every(2**31 - 1):
            r.wait()
            d.write(item=r.read())
            r.release()

    start = time.perf_counter()
    report = verify(pair(src, buf, dst, producer(src, buf), consumer(buf, dst)))
    assert report.ok, report.as_text()
    assert time.perf_counter() - start < 5.0


def test_huge_every_period_in_a_ring_cycle_is_rejected_not_run(src: Src, dst: Dst) -> None:
    """every(2**31 - 1) in a runtime loop of a ring cycle (which runs): TS-V114, fast."""
    up, side, down = ring("up", 2), ring("side", 2), ring("down", 2)
    n = RuntimeInt()

    @schedule
    def head(s: Any, u: Any, w: Any) -> None:
        with domain_loop(n) as k, k.every(2**31 - 1):
            item = s.load()
            u.acquire()
            u.store(item=item)
            u.commit()
            w.acquire()
            w.store(item=item)
            w.commit()

    @schedule
    def middle(u: Any, v: Any) -> None:
        with domain_loop(n) as k, k.every(2**31 - 1):
            u.wait()
            v.acquire()
            v.store(item=u.read())
            v.commit()
            u.release()

    @schedule
    def tail(v: Any, w: Any, d: Any) -> None:
        with domain_loop(n) as k, k.every(2**31 - 1):  # V114
            v.wait()
            w.wait()
            d.write(item=v.read())
            w.release()
            v.release()

    start = time.perf_counter()
    plan = plan_of(
        task("h", head(src, up, side), [src], [up, side]),
        task("m", middle(up, down), [up], [down], warp=4),
        task("t", tail(down, side, dst), [down, side], [dst], warp=8),
    )
    report = check(plan, "TS-V114")
    assert time.perf_counter() - start < 5.0
    d = report.diagnostics[0]
    assert d.location is not None and d.location.line > 0
    assert "2147483647" in d.message


def test_every_inside_skippable_counts_over_the_loop(src: Src, dst: Dst, queue: Queue) -> None:
    """every(2) inside skippable() inside a constant loop of 2 fires once per tile, not twice.

    The count once took such a block per iteration of the loop (2 fills), equal to the
    writer's 2 waits, and the depth proof then "proved" a kernel whose writer waits for a
    second fill that never comes: unsound (found from a false alarm of the random-plan oracle
    on the same counting path).
    """
    buf = ring("buf", 2)

    @schedule
    def loader(q: Any, s: Any, r: Any) -> None:
        with work_tile_loop(q, skip_if=Queue.past_end) as tiles:
            q.next_tile()
            with domain_loop(2) as k, tiles.skippable(), k.every(2):
                r.acquire()  # every-in-skippable
                r.store(item=s.load())
                r.commit()

    @schedule
    def writer(q: Any, r: Any, d: Any) -> None:
        with work_tile_loop(q, skip_if=Queue.past_end) as tiles:
            q.next_tile()
            with domain_loop(2), tiles.skippable():
                r.wait()
                d.write(item=r.read())
                r.release()

    plan = plan_of(
        task("l", loader(queue, src, buf), [queue, src], [buf]),
        task("w", writer(queue, buf, dst), [queue, buf], [dst], warp=4),
    )
    d = check(plan, "TS-V301").diagnostics[0]
    at(d, "every-in-skippable", task="l", resource="buf", step="buf.acquire")
    assert "l (acquires) 1x, w (waits) 2x" in d.message


def test_a_dependency_cycle_is_a_warning(src: Src, dst: Dst) -> None:
    """A cycle in the declared graph is reported on its own; the schedules decide the rest."""
    import dataclasses

    from ts_ir import DependencyEdge

    buf = ring("buf", 2)
    plan = plan_of(
        task("p", produce(src, buf, 4), [src], [buf]),
        task("c", consume(buf, dst, 4), [buf], [dst], warp=4),
    )
    plan = dataclasses.replace(
        plan, dependencies=(*plan.dependencies, DependencyEdge(dst.name, buf.name))
    )
    report = verify(plan)
    assert report.codes() == ["TS-V215"] and report.ok, report.as_text()
    (d,) = report.diagnostics
    assert d.severity is Severity.WARNING and "`buf` <- `dst` <- `buf`" in d.message
