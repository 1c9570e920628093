"""Broken plans, part 1: per-task and cross-task checks (TS-V1xx, TS-V2xx).

Every test builds a plan whose schedules are written in this file, runs ``verify`` and asserts
the list of codes (so an extra or a missing diagnostic fails), and, where the diagnostic has a
location, that it points at the line marked ``# <marker>`` here, with the task, resource and
step it names.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from broken_corpus import check, pair, points_at
from verify_testkit import (
    Dst,
    Queue,
    Ring,
    Src,
    async_pipe,
    consume,
    marker_line,
    plan_of,
    produce,
    relay,
    ring,
    task,
)

from ts_ir import DependencyEdge, SignalingThreads
from ts_trace import domain_loop, schedule, when_false, when_true, work_tile_loop
from ts_verify import Diagnostic


def line_of(marker: str) -> int:
    """The line of this file marked ``# marker``."""
    return marker_line(__file__, marker)


def at(d: Diagnostic, marker: str, **names: str) -> None:
    """``d`` points at the line of this file marked ``# marker``."""
    points_at(d, __file__, marker, **names)


@pytest.fixture
def buf() -> Ring:
    return ring("buf", 2)


# -- per task: brackets ----------------------------------------------------------------------------
def test_commit_without_acquire(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def producer(s: Any, r: Any) -> None:
        with domain_loop(4):
            s.load()
            r.commit()  # V101

    report = check(pair(src, buf, dst, producer(src, buf), consume(buf, dst)), "TS-V101")
    d = report.diagnostics[0]
    at(d, "V101", task="p", resource="buf", step="buf.commit")
    assert "did not acquire" in d.message


def test_second_commit_of_one_acquire(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def producer(s: Any, r: Any) -> None:
        with domain_loop(4):
            r.acquire()
            r.store(item=s.load())
            r.commit()
            r.commit()  # V101b

    report = check(pair(src, buf, dst, producer(src, buf), consume(buf, dst)), "TS-V101")
    at(report.diagnostics[0], "V101b", task="p", resource="buf", step="buf.commit")


def test_consumer_releases_twice(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def consumer(r: Any, d: Any) -> None:
        with domain_loop(4):
            r.wait()
            d.write(item=r.read())
            r.release()
            r.release()  # V102

    report = check(pair(src, buf, dst, produce(src, buf), consumer(buf, dst)), "TS-V102")
    d = report.diagnostics[0]
    at(d, "V102", task="c", resource="buf", step="buf.release")
    assert "already released" in d.message


def test_release_without_wait(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def consumer(r: Any, d: Any) -> None:
        r.release()  # V102b
        with domain_loop(4):
            r.wait()
            d.write(item=r.read())
            r.release()

    report = check(pair(src, buf, dst, produce(src, buf), consumer(buf, dst)), "TS-V102")
    at(report.diagnostics[0], "V102b", task="c", resource="buf", step="buf.release")


def test_missing_commit_is_not_a_deadlock(src: Src, buf: Ring, dst: Dst) -> None:
    """NVIDIA's checker reports a generic "schedule is blocked"; we name the missing commit."""

    @schedule
    def producer(s: Any, r: Any) -> None:
        with domain_loop(4):
            r.acquire()  # V103
            r.store(item=s.load())

    report = check(pair(src, buf, dst, producer(src, buf), consume(buf, dst)), "TS-V103")
    d = report.diagnostics[0]
    at(d, "V103", task="p", resource="buf", step="buf.acquire")
    assert d.trace is None
    assert "not committed by the end of one loop iteration" in d.message
    assert "call buf.commit()" in d.fix


def test_missing_commit_at_the_end_of_the_schedule(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def producer(s: Any, r: Any) -> None:
        with domain_loop(3):
            r.acquire()
            r.store(item=s.load())
            r.commit()
        r.acquire()  # V103b
        r.store(item=s.load())

    report = check(pair(src, buf, dst, producer(src, buf), consume(buf, dst, 4)), "TS-V103")
    d = report.diagnostics[0]
    at(d, "V103b", task="p", resource="buf", step="buf.acquire")
    assert "never committed before the schedule ends" in d.message


def test_missing_release(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def consumer(r: Any, d: Any) -> None:
        with domain_loop(4):
            r.wait()  # V104
            d.write(item=r.read())

    report = check(pair(src, buf, dst, produce(src, buf), consumer(buf, dst)), "TS-V104")
    at(report.diagnostics[0], "V104", task="c", resource="buf", step="buf.wait")


def test_missing_release_at_the_end_of_the_schedule(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def consumer(r: Any, d: Any) -> None:
        r.wait()  # V104b
        d.write(item=r.read())

    report = check(pair(src, buf, dst, produce(src, buf, 1), consumer(buf, dst)), "TS-V104")
    d = report.diagnostics[0]
    at(d, "V104b", task="c", resource="buf", step="buf.wait")
    assert "never released before the schedule ends" in d.message


def test_try_wait_whose_wait_is_in_another_block(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def consumer(s: Any, r: Any, d: Any) -> None:
        with domain_loop(4):
            _, flag = s.load_flag()
            with when_true(flag):
                r.try_wait()  # V105
            r.wait()
            d.write(item=r.read())
            r.release()

    plan = plan_of(
        task("p", produce(src, buf), [src], [buf]),
        task("c", consumer(src, buf, dst), [src, buf], [dst], warp=4),
    )
    d = check(plan, "TS-V105").diagnostics[0]
    at(d, "V105", task="c", resource="buf", step="buf.try_wait")
    assert "the block ends first" in d.message


def test_stale_try_wait_reused_by_a_later_wait(src: Src, buf: Ring, dst: Dst) -> None:
    """The probe for the next stage is taken before the release, so the next wait reuses it."""

    @schedule
    def consumer(r: Any, d: Any) -> None:
        with domain_loop(4):
            r.wait()
            d.write(item=r.read())
            r.try_wait()  # V105b
            r.release()

    report = check(pair(src, buf, dst, produce(src, buf), consumer(buf, dst)), "TS-V105")
    d = report.diagnostics[0]
    at(d, "V105b", task="c", resource="buf", step="buf.try_wait")
    assert "buf.release comes first" in d.message and "stale" in d.message


def test_try_acquire_left_at_the_end_of_the_iteration(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def producer(s: Any, r: Any) -> None:
        with domain_loop(4):
            r.acquire()
            r.store(item=s.load())
            r.commit()
            r.try_acquire()  # V105c

    report = check(pair(src, buf, dst, producer(src, buf), consume(buf, dst)), "TS-V105")
    at(report.diagnostics[0], "V105c", task="p", resource="buf", step="buf.try_acquire")


def test_producer_work_outside_acquire_commit(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def producer(s: Any, r: Any) -> None:
        with domain_loop(4):
            item = s.load()
            r.acquire()
            r.commit()
            r.store(item=item)  # V106

    report = check(pair(src, buf, dst, producer(src, buf), consume(buf, dst)), "TS-V106")
    d = report.diagnostics[0]
    at(d, "V106", task="p", resource="buf", step="buf.store")
    assert "outside a acquire()/commit() bracket" in d.message


def test_consumer_work_outside_wait_release(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def consumer(r: Any, d: Any) -> None:
        with domain_loop(4):
            r.wait()
            r.release()
            d.write(item=r.read())  # V107

    report = check(pair(src, buf, dst, produce(src, buf), consumer(buf, dst)), "TS-V107")
    at(report.diagnostics[0], "V107", task="c", resource="buf", step="buf.read")


def test_pipeline_operation_on_a_resource_without_pipeline(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def producer(s: Any, r: Any) -> None:
        with domain_loop(4):
            s.wait()  # V108
            item = s.load()
            s.release()  # V108b
            r.acquire()
            r.store(item=item)
            r.commit()

    report = check(pair(src, buf, dst, producer(src, buf), consume(buf, dst)), "TS-V108", "TS-V108")
    at(report.diagnostics[0], "V108", task="p", resource="src", step="src.wait")
    at(report.diagnostics[1], "V108b", task="p", resource="src", step="src.release")
    assert "has no pipeline" in report.diagnostics[0].message


def test_producer_operation_on_a_source(src: Src, buf: Ring, dst: Dst) -> None:
    """The producer lists the ring among its sources instead of its destinations."""
    plan = plan_of(
        task("p", produce(src, buf), [src, buf], []),
        task("c", consume(buf, dst), [buf], [dst], warp=4),
        graph={buf: [src], dst: [buf]},
    )
    report = check(plan, "TS-V109", "TS-V109", "TS-V109")
    steps = [d.step.split(" ")[1] for d in report.diagnostics]
    assert steps == ["buf.acquire", "buf.store", "buf.commit"]
    assert all(d.task == "p" and d.resource == "buf" for d in report.diagnostics)
    assert "not among its dst_resources" in report.diagnostics[0].message


def test_consumer_operation_on_a_destination(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def consumer(r: Any, d: Any) -> None:
        with domain_loop(4):
            r.wait()  # V110
            d.write(item=r.read())
            r.release()

    plan = plan_of(
        task("p", produce(src, buf), [src], [buf]),
        task("c", consumer(buf, dst), [], [buf, dst], warp=4),
        graph={buf: [src], dst: [buf]},
    )
    report = check(plan, "TS-V110", "TS-V110", "TS-V110")
    at(report.diagnostics[0], "V110", task="c", resource="buf", step="buf.wait")
    assert "not among its src_resources" in report.diagnostics[0].message


def test_missing_release_on_one_branch_of_when_true(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def consumer(s: Any, r: Any, d: Any) -> None:
        with domain_loop(4):
            _, flag = s.load_flag()
            with when_true(flag):
                r.wait()
                d.write(item=r.read())
                r.release()
            with when_false(flag):
                r.wait()  # V111
                d.write(item=r.read())

    plan = plan_of(
        task("p", produce(src, buf), [src], [buf]),
        task("c", consumer(src, buf, dst), [src, buf], [dst], warp=4),
    )
    d = check(plan, "TS-V111").diagnostics[0]
    at(d, "V111", task="c", resource="buf", step="buf.wait")
    assert "the `not src.load_flag[flag]` block" in d.message


def test_release_only_when_true(src: Src, buf: Ring, dst: Dst) -> None:
    """The stage stays open when the flag is false (TS-V104) and the block releases (TS-V111)."""

    @schedule
    def consumer(s: Any, r: Any, d: Any) -> None:
        with domain_loop(4):
            _, flag = s.load_flag()
            r.wait()  # V111b-wait
            d.write(item=r.read())
            with when_true(flag):
                r.release()  # V111b

    plan = plan_of(
        task("p", produce(src, buf), [src], [buf]),
        task("c", consumer(src, buf, dst), [src, buf], [dst], warp=4),
    )
    report = check(plan, "TS-V104", "TS-V111")
    at(report.diagnostics[0], "V111b-wait", task="c", resource="buf", step="buf.wait")
    at(report.diagnostics[1], "V111b", task="c", resource="buf", step="buf.release")
    assert "releases more stages of `buf` than it opens" in report.diagnostics[1].message


def test_commit_under_every_block(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def producer(s: Any, r: Any) -> None:
        with domain_loop(4) as loop:
            r.acquire()  # V111c-acquire
            r.store(item=s.load())
            with loop.every(2):
                r.commit()  # V111c

    report = check(pair(src, buf, dst, producer(src, buf), consume(buf, dst)), "TS-V103", "TS-V111")
    at(report.diagnostics[0], "V111c-acquire", task="p", resource="buf", step="buf.acquire")
    at(report.diagnostics[1], "V111c", task="p", resource="buf", step="buf.commit")


def test_first_iter_wait_never_released(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def consumer(r: Any, d: Any) -> None:
        with domain_loop(4) as loop:
            with loop.first_iter():
                r.wait()  # V112
            d.write(item=r.read())

    report = check(pair(src, buf, dst, produce(src, buf, 1), consumer(buf, dst)), "TS-V112")
    d = report.diagnostics[0]
    at(d, "V112", task="c", resource="buf", step="buf.wait")
    assert "a loop that runs once" in d.message


def test_lagged_release_without_its_last_iter_release(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def consumer(r: Any, d: Any) -> None:
        with domain_loop(4) as loop:
            with loop.first_iter():
                r.wait()
            d.write(item=r.read())
            r.wait()  # V112b
            r.release()

    report = check(pair(src, buf, dst, produce(src, buf, 5), consumer(buf, dst)), "TS-V112")
    at(report.diagnostics[0], "V112b", task="c", resource="buf", step="buf.wait")


# -- across tasks ----------------------------------------------------------------------------------
def test_pipelined_resource_without_producer(src: Src, buf: Ring, dst: Dst) -> None:
    plan = plan_of(task("c", consume(buf, dst), [buf], [dst]))
    d = check(plan, "TS-V201").diagnostics[0]
    assert (d.task, d.resource) == ("", "buf")
    assert d.location is not None and d.location.file.endswith("verify_testkit.py")
    assert d.location.text == "class Ring(MemoryResource):"


def test_pipelined_resource_without_consumer(src: Src, buf: Ring) -> None:
    plan = plan_of(task("p", produce(src, buf), [src], [buf]))
    d = check(plan, "TS-V202").diagnostics[0]
    assert (d.task, d.resource) == ("", "buf")
    assert "no task runs wait()/release()" in d.message


def test_arrival_count_too_few(src: Src, dst: Dst) -> None:
    """256 consumer arrivals expected, one 4-warp task makes 128: the empty barrier never flips."""
    buf = ring("buf", 2, async_pipe(2, consumers=256))

    @schedule
    def consumer(r: Any, d: Any) -> None:
        with domain_loop(4):
            r.wait()
            d.write(item=r.read())
            r.release()  # V203

    report = check(pair(src, buf, dst, produce(src, buf), consumer(buf, dst)), "TS-V203", "TS-V302")
    static, run = report.diagnostics
    at(static, "V203", task="c", resource="buf", step="buf.release")
    assert (
        "expects 256 arrivals per phase, but the tasks that signal on it arrive 128"
        in static.message
    )
    assert "never completes (deadlock)" in static.message
    assert static.fix.startswith("build the consumer group as CooperativeGroup(Agent.Thread, 128)")
    assert run.trace is not None
    assert any(
        b.describe().startswith("buf.empty[0]: phase 0 (0 done), arrivals 128/256")
        for b in run.trace.barriers
    )


def test_arrival_count_too_many(src: Src, dst: Dst) -> None:
    buf = ring("buf", 2, async_pipe(2, consumers=64))

    @schedule
    def consumer(r: Any, d: Any) -> None:
        with domain_loop(4):
            r.wait()
            d.write(item=r.read())
            r.release()  # V203b

    report = check(pair(src, buf, dst, produce(src, buf), consumer(buf, dst)), "TS-V203", "TS-V302")
    d = report.diagnostics[0]
    at(d, "V203b", task="c", resource="buf", step="buf.release")
    assert "arrive 128 times per phase" in d.message
    assert "completes early" in d.message


def test_arrival_count_of_the_producer_side(src: Src, dst: Dst) -> None:
    buf = ring("buf", 2, async_pipe(2, producers=256))

    @schedule
    def producer(s: Any, r: Any) -> None:
        with domain_loop(4):
            r.acquire()
            r.store(item=s.load())
            r.commit()  # V203c

    report = check(pair(src, buf, dst, producer(src, buf), consume(buf, dst)), "TS-V203", "TS-V302")
    d = report.diagnostics[0]
    at(d, "V203c", task="p", resource="buf", step="buf.commit")
    assert "resource `buf`: the producer group has 256 thread(s) and expects 256" in d.message


def test_arrival_count_with_warp_leader_signaling(src: Src, dst: Dst) -> None:
    """Only the first warp signals (32 arrivals), but the group counts all 128 threads."""
    buf = ring("buf", 2, async_pipe(2, consumer_signaling=SignalingThreads.TaskWarpLeader))
    report = check(pair(src, buf, dst, produce(src, buf), consume(buf, dst)), "TS-V203", "TS-V302")
    assert "arrive 32 times per phase" in report.diagnostics[0].message


def test_overlapping_warp_ranges(src: Src, buf: Ring, dst: Dst) -> None:
    """NVIDIA's checker lets overlapping warp ranges pass."""
    plan = plan_of(
        task("p", produce(src, buf), [src], [buf]),
        task("c", consume(buf, dst), [buf], [dst], warp=2),  # V204
    )
    d = check(plan, "TS-V204").diagnostics[0]
    at(d, "V204", task="c")
    assert "share warps [2, 3]" in d.message


def test_task_outside_the_block(src: Src, buf: Ring, dst: Dst) -> None:
    plan = plan_of(
        task("p", produce(src, buf), [src], [buf]),
        task("c", consume(buf, dst), [buf], [dst], warp=4),  # V205
        block_warps=4,
    )
    d = check(plan, "TS-V205").diagnostics[0]
    at(d, "V205", task="c")
    assert "the block has 4 warps" in d.message


def test_negative_warp_index(src: Src, buf: Ring, dst: Dst) -> None:
    plan = plan_of(
        task("p", produce(src, buf), [src], [buf], warp=-4),  # V205b
        task("c", consume(buf, dst), [buf], [dst], warp=4),
    )
    at(check(plan, "TS-V205").diagnostics[0], "V205b", task="p")


def test_registers_differ_within_a_warpgroup(src: Src, dst: Dst) -> None:
    buf = ring("buf", 2, async_pipe(2, 64, 64))
    plan = plan_of(
        task("p", produce(src, buf), [src], [buf], warps=2, regs=40),  # V206
        task("c", consume(buf, dst), [buf], [dst], warp=2, warps=2, regs=232),
    )
    d = check(plan, "TS-V206").diagnostics[0]
    at(d, "V206", task="p")
    assert "warpgroup 0 (warps 0..3) mixes register budgets (p: 40; c: 232)" in d.message


def test_register_file_exceeded(src: Src, dst: Dst) -> None:
    a, b = ring("a"), ring("b")
    plan = plan_of(
        task("p", produce(src, a), [src], [a], regs=232),
        task("r", relay(a, b), [a], [b], warp=4, regs=232),
        task("c", consume(b, dst), [b], [dst], warp=8, regs=232),
    )
    d = check(plan, "TS-V207").diagnostics[0]
    # The task with the largest budget (the first of equals), at its declaration.
    assert d.task == "p" and d.location is not None and d.location.line > 0
    assert "89088 registers" in d.message


@pytest.mark.parametrize("regs", [100, 16, 252])
def test_bad_register_count(src: Src, buf: Ring, dst: Dst, regs: int) -> None:
    plan = plan_of(
        task("p", produce(src, buf), [src], [buf], regs=regs),  # V208
        task("c", consume(buf, dst), [buf], [dst], warp=4),
    )
    d = check(plan, "TS-V208").diagnostics[0]
    at(d, "V208", task="p")
    assert f"asks for {regs} registers" in d.message


def test_shared_memory_exceeded(src: Src, dst: Dst) -> None:
    buf = ring("buf", 4, smem=4 * 64 * 1024)
    plan = pair(src, buf, dst, produce(src, buf), consume(buf, dst))
    d = check(plan, "TS-V209").diagnostics[0]
    assert "the kernel needs 262208 bytes of shared memory, more than the 232448" in d.message
    assert "buf.tiles" in d.message
    assert d.resource == "buf" and d.location is not None and d.location.line > 0


def test_shared_memory_of_a_small_capacity(src: Src, dst: Dst) -> None:
    buf = ring("buf", 2, smem=4096)
    plan = pair(src, buf, dst, produce(src, buf), consume(buf, dst), smem_capacity=2048)
    assert "more than the 2048 available" in check(plan, "TS-V209").diagnostics[0].message


def test_dependency_graph_violated(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def producer(s: Any, r: Any) -> None:
        with domain_loop(4):
            item = s.load()
            r.acquire()
            r.store(item=item)  # V211
            r.commit()

    plan = pair(src, buf, dst, producer(src, buf), consume(buf, dst), graph={dst: [buf]})
    d = check(plan, "TS-V211").diagnostics[0]
    at(d, "V211", task="p", resource="buf", step="buf.store")
    assert "does not list `src` as an upstream of `buf`" in d.message
    assert d.fix == "add src to resource_dependency_graph[buf]"


def test_unknown_resource_in_the_dependency_graph(src: Src, buf: Ring, dst: Dst) -> None:
    plan = pair(src, buf, dst, produce(src, buf), consume(buf, dst))
    plan = dataclasses.replace(
        plan, dependencies=(*plan.dependencies, DependencyEdge("ghost", "buf"))
    )
    d = check(plan, "TS-V212").diagnostics[0]
    assert (d.resource, d.location) == ("ghost", None)
    assert "names unknown `ghost`" in d.message


def test_unknown_resource_in_a_schedule(src: Src, buf: Ring, dst: Dst) -> None:
    @schedule
    def consumer(r: Any, d: Any) -> None:
        with domain_loop(4):
            r.wait()
            d.write(item=r.read())  # V212
            r.release()

    plan = pair(src, buf, dst, produce(src, buf), consumer(buf, dst))
    plan = dataclasses.replace(plan, resources=tuple(r for r in plan.resources if r.name != "dst"))
    report = check(plan, "TS-V212", "TS-V212")
    at(report.diagnostics[0], "V212", task="c", resource="dst", step="dst.write")
    assert report.diagnostics[1].message == "the dependency graph names unknown `dst`"


def test_work_tile_loops_over_different_queues(src: Src, dst: Dst) -> None:
    q1, q2 = Queue(name="q1"), Queue(name="q2")
    buf = ring("buf")

    @schedule
    def producer(q: Any, s: Any, r: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            r.acquire()
            r.store(item=s.load())
            r.commit()

    @schedule
    def consumer(q: Any, r: Any, d: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            r.wait()
            d.write(item=r.read())
            r.release()

    plan = plan_of(
        task("p", producer(q1, src, buf), [q1, src], [buf]),
        task("c", consumer(q2, buf, dst), [q2, buf], [dst], warp=4),
    )
    d = check(plan, "TS-V213").diagnostics[0]
    assert "(q1: p; q2: c)" in d.message
    assert (d.task, d.resource) == ("c", "q2") and d.location is not None
    assert d.location.text == "with work_tile_loop(q):" and d.location.function == "consumer"
