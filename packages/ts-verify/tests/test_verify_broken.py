"""A corpus of deliberately broken plans: every diagnostic code, the exact codes, the exact line.

Every test builds a plan whose schedules are written in this file, runs ``verify`` and asserts
the list of codes (so an extra or a missing diagnostic fails), and, where the diagnostic has a
location, that it points at the line marked ``# <marker>`` here, with the task, resource and
step it names.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
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
    relay,
    ring,
    task,
)

from ts_ir import DependencyEdge, KernelPlan, SignalingThreads
from ts_trace import domain_loop, schedule, when_false, when_true, work_tile_loop
from ts_verify import VERIFY_CATALOG, Diagnostic, Report, Severity, VerificationError, verify
from ts_verify.diagnostics import DOCS_URL


def line_of(marker: str) -> int:
    """The line of this file marked ``# marker``."""
    return marker_line(__file__, marker)


def check(plan: KernelPlan, *codes: str) -> Report:
    """``verify(plan)`` reports exactly ``codes``, in order, all errors."""
    report = verify(plan)
    assert report.codes() == list(codes), report.as_text()
    assert not report.ok
    assert not any(p.startswith("no deadlock") for p in report.proven)
    assert all(d.severity is Severity.ERROR for d in report.diagnostics)
    return report


def at(
    d: Diagnostic,
    marker: str,
    *,
    task: str,
    resource: str = "",
    step: str = "",
) -> None:
    """``d`` points at the marked line of this file and names ``task``/``resource``/``step``."""
    assert d.location is not None, d.as_text()
    assert d.location.file == __file__
    assert d.location.line == line_of(marker), d.as_text()
    assert d.task == task
    assert d.resource == resource
    if step:
        assert re.fullmatch(rf"#\d+ {re.escape(step)}", d.step), d.step
    text = d.as_text()
    assert text.startswith(f"error {d.code} ({VERIFY_CATALOG[d.code][0]}): ")
    assert f'File "{__file__}", line {line_of(marker)}' in text
    assert f"see: {DOCS_URL}/{d.code}" in text


@pytest.fixture
def buf() -> Ring:
    return ring("buf", 2)


def pair(src: Src, buf: Ring, dst: Dst, producer: Any, consumer: Any, **options: Any) -> KernelPlan:
    """A two-task plan: ``producer`` fills ``buf`` from ``src``, ``consumer`` drains it."""
    return plan_of(
        task("p", producer, [src], [buf]),
        task("c", consumer, [buf], [dst], warp=4),
        **options,
    )


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
    assert "expects 256 arrivals per phase, but the tasks that signal make 128" in static.message
    assert "never completes (deadlock)" in static.message
    assert static.fix == "set the consumer group size to 128, or change which threads signal"
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
    assert "makes 128" not in d.message and "make 128" in d.message
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
    assert "the producer group of `buf` expects 256" in d.message


def test_arrival_count_with_warp_leader_signaling(src: Src, dst: Dst) -> None:
    """Only the first warp signals (32 arrivals), but the group counts all 128 threads."""
    buf = ring("buf", 2, async_pipe(2, consumer_signaling=SignalingThreads.TaskWarpLeader))
    report = check(pair(src, buf, dst, produce(src, buf), consume(buf, dst)), "TS-V203", "TS-V302")
    assert "make 32" in report.diagnostics[0].message


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
    assert (d.task, d.resource, d.location) == ("", "", None)
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


def test_shared_memory_of_a_small_capacity(src: Src, dst: Dst) -> None:
    buf = ring("buf", 2, smem=4096)
    plan = pair(src, buf, dst, produce(src, buf), consume(buf, dst), smem_capacity=2048)
    assert "more than the 2048 available" in check(plan, "TS-V209").diagnostics[0].message


def test_aliased_smem_live_together(src: Src, dst: Dst) -> None:
    """Both rings are filled and drained in the same iteration: they cannot share storage."""
    a, b = ring("a", smem=8192), ring("b", smem=8192)

    @schedule
    def producer(s: Any, x: Any, y: Any) -> None:
        with domain_loop(4):
            for r in (x, y):
                r.acquire()
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
        smem_alias_groups=[[["a.tiles"], ["b.tiles"]]],
    )
    d = check(plan, "TS-V210").diagnostics[0]
    assert d.resource == "a"
    assert "the dependency graph does not order them" in d.message


def test_aliased_smem_of_persistent_tasks(src: Src, dst: Dst, queue: Queue) -> None:
    """Ordered by the graph, but a persistent relay overlaps tile t's `b` with tile t+1's `a`."""
    a, b = ring("a", smem=8192), ring("b", smem=8192)

    @schedule
    def producer(q: Any, s: Any, r: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            r.acquire()
            r.store(item=s.load())
            r.commit()

    @schedule
    def relay_(q: Any, x: Any, y: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            x.wait()
            y.acquire()
            y.store(item=x.read())
            y.commit()
            x.release()

    @schedule
    def consumer(q: Any, r: Any, d: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            r.wait()
            d.write(item=r.read())
            r.release()

    plan = plan_of(
        task("p", producer(queue, src, a), [queue, src], [a]),
        task("r", relay_(queue, a, b), [queue, a], [b], warp=4),
        task("c", consumer(queue, b, dst), [queue, b], [dst], warp=8),
        smem_alias_groups=[[["a.tiles"], ["b.tiles"]]],
    )
    d = check(plan, "TS-V210").diagnostics[0]
    assert "persistent tasks overlap" in d.message


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
    assert "when every condition is False: p (producer) 0x, c (consumer) 4x" in d.message


def test_counts_differ_between_constant_loops(src: Src, buf: Ring, dst: Dst) -> None:
    plan = pair(src, buf, dst, produce(src, buf, 4), consume(buf, dst, 3))
    d = check(plan, "TS-V301").diagnostics[0]
    assert d.task == "p" and d.resource == "buf"
    assert "when always: p (producer) 4x, c (consumer) 3x" in d.message


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
    assert "tiles are skipped" in d.message


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
    assert "p (producer) 0x, c (consumer) 1x" in d.message


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
    assert "when always: p (producer) 3x, c (consumer) 4x" in d.message


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
    assert "when every non-constant loop runs 1 times: p (producer) 1x, c (consumer) 2x" in (
        d.message
    )


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
    d = check(plan, "TS-V302").diagnostics[0]
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
    d = check(plan, "TS-V302").diagnostics[0]
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
    d = check(plan, "TS-V302").diagnostics[0]
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
    assert "make 256 (fast (4 warps) 128, slow (4 warps) 128)" in static.message
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
    assert lines[-1] == "  see: https://ts-kernels.dev/errors/TS-V103.html"


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
    assert "error TS-V302 (deadlock): the kernel deadlocks: no task can make progress" in text
    assert f"({__file__}:{line_of('capacity')})" in text
    assert "  fix: reorder the schedules" in text


def test_every_code_is_in_this_corpus() -> None:
    # Asynchronous-read cases (TS-V113) live in their own module.
    here = Path(__file__)
    source = here.read_text() + (here.parent / "test_verify_async.py").read_text()
    used = set(re.findall(r'"(TS-V\d{3})"', source))
    assert used >= set(VERIFY_CATALOG), sorted(set(VERIFY_CATALOG) - used)
