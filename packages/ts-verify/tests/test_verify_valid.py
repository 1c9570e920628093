"""Valid plans that must verify with zero diagnostics: no false positives.

Each test asserts ``report.ok``, ``report.diagnostics == ()`` and a non-empty ``report.proven``.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
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
    persistent_relay,
    plan_of,
    produce,
    relay,
    ring,
    task,
    tma_pipe,
)

from ts_ir import KernelPlan
from ts_trace import domain_loop, schedule, when_false, when_true, work_tile_loop
from ts_verify import Report, verify
from ts_verify.whole_kernel import valuations

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "schedules"


def clean(plan: KernelPlan) -> Report:
    """``verify(plan)`` proves the plan and reports nothing."""
    report = verify(plan)
    assert report.ok, report.as_text()
    assert report.diagnostics == (), report.as_text()
    assert report.proven, report.as_text()
    assert any(p.startswith("no deadlock and no race") for p in report.proven)
    return report


def _load_example(path: Path) -> ModuleType:
    name = f"ts_verify_example_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["grid_stride_copy", "tma_copy", "varlen_copy", "ws_gemm"])
def test_example_schedules(name: str) -> None:
    path = EXAMPLES / f"{name}.py"
    if not path.exists():
        pytest.skip("examples/schedules is not next to this layer (layer-alone run)")
    pytest.importorskip(
        "task_scheduling", reason="the examples import the task_scheduling facade (tests all)"
    )
    kernel: Callable[[], KernelPlan] = _load_example(path).kernel
    report = clean(kernel())
    assert report.plan == name


def test_plain_copy(src: Src, dst: Dst) -> None:
    buf = ring("buf", 2)
    clean(
        plan_of(
            task("p", produce(src, buf), [src], [buf]),
            task("c", consume(buf, dst), [buf], [dst], warp=4),
        )
    )


def test_single_task_copy_without_pipeline(src: Src, dst: Dst) -> None:
    @schedule
    def copy(s: Any, d: Any) -> None:
        with domain_loop(0, RuntimeInt(), 4096):
            d.write(item=s.load())

    clean(plan_of(task("copy", copy(src, dst), [src], [dst])))


@pytest.mark.parametrize("stages", [1, 2, 4, 7])
def test_multi_stage_tma_copy(src: Src, dst: Dst, stages: int) -> None:
    """One elected producer thread arms each stage with its transaction bytes."""
    smem = ring("smem", spec=tma_pipe(stages, 16384), smem=stages * 16384)
    clean(
        plan_of(
            task("tma_load", produce(src, smem, 64), [src], [smem], warps=1, regs=40),
            task("store", consume(smem, dst, 64), [smem], [dst], warp=4, regs=232),
        )
    )


def _gemm(src: Src, dst: Dst, k: object, queue: Queue | None) -> KernelPlan:
    ab = ring("ab", spec=tma_pipe(4, 49152), smem=4 * 49152)
    acc = ring("acc", 1)

    @schedule
    def load(s: Any, r: Any) -> None:
        with domain_loop(k):
            item = s.load()
            r.prefetch()
            r.acquire()
            r.store(item=item)
            r.commit()

    @schedule
    def mma(r: Any, a: Any) -> None:
        a.acquire()
        a.prefetch()  # zero the accumulator (auxiliary)
        with domain_loop(k):
            r.wait()
            r.read()
            a.store()  # WGMMA into the accumulator
            r.release()
        a.commit()

    @schedule
    def epilogue(a: Any, d: Any) -> None:
        a.wait()
        d.write(item=a.read())
        a.release()

    @schedule
    def persistent_load(q: Any, s: Any, r: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            with domain_loop(k):
                r.acquire()
                r.store(item=s.load())
                r.commit()

    @schedule
    def persistent_mma(q: Any, r: Any, a: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            a.acquire()
            a.prefetch()
            with domain_loop(k):
                r.wait()
                r.read()
                a.store()
                r.release()
            a.commit()

    @schedule
    def persistent_epilogue(q: Any, a: Any, d: Any) -> None:
        with work_tile_loop(q):
            tile = q.next_tile()
            a.wait()
            a.read()
            d.write(item=tile)
            a.release()

    if queue is None:
        return plan_of(
            task("load", load(src, ab), [src], [ab], regs=40),
            task("mma", mma(ab, acc), [ab], [acc], warp=4, regs=232),
            task("epilogue", epilogue(acc, dst), [acc], [dst], warp=8, regs=232),
        )
    return plan_of(
        task("load", persistent_load(queue, src, ab), [queue, src], [ab], regs=40),
        task("mma", persistent_mma(queue, ab, acc), [queue, ab], [acc], warp=4, regs=232),
        task("epilogue", persistent_epilogue(queue, acc, dst), [queue, acc], [dst], warp=8),
    )


@pytest.mark.parametrize("k", [1, 16, RuntimeInt()], ids=["k1", "k16", "runtime-k"])
def test_warp_specialized_gemm(src: Src, dst: Dst, k: object) -> None:
    """Load / MMA / epilogue tasks; the accumulator is handed over through a 1-stage pipeline."""
    clean(_gemm(src, dst, k, None))


def test_persistent_warp_specialized_gemm(src: Src, dst: Dst, queue: Queue) -> None:
    report = clean(_gemm(src, dst, Tasks.get_domain, queue))
    # Every ring keeps its brackets inside one iteration: proven from depths, no runs.
    assert dict(report.stats)["by_depth"] == dict(report.stats)["parts"] >= 1
    assert dict(report.stats)["runs"] == 0


def test_persistent_loop_with_skipped_tiles(src: Src, dst: Dst, queue: Queue) -> None:
    buf = ring("buf", 2)

    @schedule
    def loader(q: Any, s: Any, r: Any) -> None:
        with work_tile_loop(q, skip_if=Queue.past_end) as tiles:
            q.next_tile()
            with tiles.skippable(), domain_loop(Tasks.get_domain):
                r.acquire()
                r.store(item=s.load())
                r.commit()

    @schedule
    def writer(q: Any, r: Any, d: Any) -> None:
        with work_tile_loop(q, skip_if=Queue.past_end) as tiles:
            tile = q.next_tile()
            with tiles.skippable():
                with domain_loop(Tasks.get_domain):
                    r.wait()
                    d.write(item=r.read())
                    r.release()
                d.write(item=tile)

    clean(
        plan_of(
            task("loader", loader(queue, src, buf), [queue, src], [buf]),
            task("writer", writer(queue, buf, dst), [queue, buf], [dst], warp=4),
        )
    )


@pytest.mark.parametrize("trips", [Tasks.get_domain, RuntimeInt()], ids=["per-tile", "runtime"])
def test_dynamic_domain_including_zero(src: Src, dst: Dst, trips: object) -> None:
    buf = ring("buf", 3)
    plan = plan_of(
        task("p", produce(src, buf, trips), [src], [buf]),
        task("c", consume(buf, dst, trips), [buf], [dst], warp=4),
    )
    report = clean(plan)
    assert dict(report.stats)["by_depth"] == 1 and dict(report.stats)["runs"] == 0
    # Run instead, it would take every trip count from 0 to the cut-off (3 + 2 + 2 = 7).
    assert len(list(valuations(plan))) == 8


def test_merge_two_producers_into_one_ring(src: Src, dst: Dst) -> None:
    buf = ring("buf", 2, async_pipe(2, producers=256))
    clean(
        plan_of(
            task("p0", produce(src, buf), [src], [buf]),
            task("p1", produce(src, buf), [src], [buf], warp=4),
            task("c", consume(buf, dst), [buf], [dst], warp=8),
        )
    )


def test_fork_one_ring_to_two_consumers(src: Src, dst: Dst) -> None:
    buf = ring("buf", 2, async_pipe(2, consumers=256))
    clean(
        plan_of(
            task("p", produce(src, buf), [src], [buf]),
            task("c0", consume(buf, dst), [buf], [dst], warp=4),
            task("c1", consume(buf, dst), [buf], [dst], warp=8),
        )
    )


def test_fork_with_warp_leader_signaling(src: Src, dst: Dst) -> None:
    """Only the first warp of each consumer task arrives: 2 x 32 arrivals per phase."""
    buf = ring("buf", 2, async_pipe(2, consumers=64, consumer_signaling=_leader()))
    clean(
        plan_of(
            task("p", produce(src, buf), [src], [buf]),
            task("c0", consume(buf, dst), [buf], [dst], warp=4),
            task("c1", consume(buf, dst), [buf], [dst], warp=8, warps=8),
        )
    )


def _leader() -> Any:
    from ts_ir import SignalingThreads

    return SignalingThreads.TaskWarpLeader


def _lagged_consumer(r: Ring, dst: Dst, trips: object) -> Any:
    """Wait for the next stage before releasing the current one."""

    @schedule
    def lagged(ring_: Any, d: Any) -> None:
        with domain_loop(trips) as loop:
            with loop.first_iter():
                ring_.wait()  # stage 0
            d.write(item=ring_.read())  # stage i
            ring_.wait()  # stage i + 1
            ring_.release()  # stage i
            with loop.last_iter():
                d.write(item=ring_.read())
                ring_.release()  # the last stage

    return lagged(r, dst)


@pytest.mark.parametrize("stages", [2, 3])
def test_lagged_release_consumer(src: Src, dst: Dst, stages: int) -> None:
    buf = ring("buf", stages)
    clean(
        plan_of(
            task("p", produce(src, buf, 9), [src], [buf]),
            task("c", _lagged_consumer(buf, dst, 8), [buf], [dst], warp=4),
        )
    )


def test_lagged_release_consumer_with_a_dynamic_domain(src: Src, dst: Dst) -> None:
    """The producer mirrors the consumer's shape: one extra stage in the first iteration."""
    buf = ring("buf", 2)

    @schedule
    def producer(s: Any, r: Any) -> None:
        with domain_loop(Tasks.get_domain) as loop:
            with loop.first_iter():
                r.acquire()
                r.store(item=s.load())
                r.commit()
            r.acquire()
            r.store(item=s.load())
            r.commit()

    clean(
        plan_of(
            task("p", producer(src, buf), [src], [buf]),
            task("c", _lagged_consumer(buf, dst, Tasks.get_domain), [buf], [dst], warp=4),
        )
    )


def test_opaque_conditions_correlated_by_key(src: Src, dst: Dst) -> None:
    buf = ring("buf", 2)

    @schedule
    def producer(s: Any, r: Any) -> None:
        with domain_loop(RuntimeInt()):
            item, flag = s.load_flag()
            with when_true(flag, key="k"):
                r.acquire()
                r.store(item=item)
                r.commit()

    @schedule
    def consumer(s: Any, r: Any, d: Any) -> None:
        with domain_loop(RuntimeInt()):
            _, flag = s.load_flag()
            with when_true(flag, key="k"):
                r.wait()
                d.write(item=r.read())
                r.release()
            with when_false(flag, key="k"):
                d.write()

    clean(
        plan_of(
            task("p", producer(src, buf), [src], [buf]),
            task("c", consumer(src, buf, dst), [src, buf], [dst], warp=4),
        )
    )


def test_try_calls_followed_by_their_blocking_calls(src: Src, dst: Dst) -> None:
    buf = ring("buf", 2)

    @schedule
    def producer(s: Any, r: Any) -> None:
        with domain_loop(6):
            item = s.load()
            r.try_acquire()
            r.acquire()
            r.store(item=item)
            r.commit()

    @schedule
    def consumer(r: Any, d: Any) -> None:
        with domain_loop(6):
            r.try_wait()
            r.wait()
            d.write(item=r.read())
            r.release()

    clean(
        plan_of(
            task("p", producer(src, buf), [src], [buf]),
            task("c", consumer(buf, dst), [buf], [dst], warp=4),
        )
    )


def test_auxiliary_work_outside_brackets(src: Src, dst: Dst) -> None:
    buf = ring("buf", 2)

    @schedule
    def producer(s: Any, r: Any) -> None:
        with domain_loop(4):
            r.prefetch()
            r.acquire()
            r.store(item=s.load())
            r.commit()

    @schedule
    def consumer(r: Any, d: Any) -> None:
        with domain_loop(4):
            r.peek()
            r.wait()
            d.write(item=r.read())
            r.release()
            r.peek()

    clean(
        plan_of(
            task("p", producer(src, buf), [src], [buf]),
            task("c", consumer(buf, dst), [buf], [dst], warp=4),
        )
    )


def test_every_2_blocks_with_balanced_brackets(src: Src, dst: Dst) -> None:
    """The consumer drains a stage every other iteration of 8: 4 stages, as produced."""
    buf = ring("buf", 2)

    @schedule
    def consumer(r: Any, d: Any) -> None:
        with domain_loop(8) as loop, loop.every(2):
            r.wait()
            d.write(item=r.read())
            r.release()

    clean(
        plan_of(
            task("p", produce(src, buf, 4), [src], [buf]),
            task("c", consumer(buf, dst), [buf], [dst], warp=4),
        )
    )


def test_every_2_blocks_on_both_sides_of_a_dynamic_loop(src: Src, dst: Dst) -> None:
    buf = ring("buf", 2)

    @schedule
    def producer(s: Any, r: Any) -> None:
        with domain_loop(Tasks.get_domain) as loop, loop.every(2, start=1):
            r.acquire()
            r.store(item=s.load())
            r.commit()

    @schedule
    def consumer(r: Any, d: Any) -> None:
        with domain_loop(Tasks.get_domain) as loop:
            d.write()
            with loop.every(2, start=1):
                r.wait()
                d.write(item=r.read())
                r.release()

    clean(
        plan_of(
            task("p", producer(src, buf), [src], [buf]),
            task("c", consumer(buf, dst), [buf], [dst], warp=4),
        )
    )


def test_long_tightly_coupled_static_schedule(src: Src, dst: Dst) -> None:
    """1 stage, 1000 iterations: NVIDIA's checker reports false "not matched" errors here."""
    buf = ring("buf", 1)
    plan = plan_of(
        task("p", produce(src, buf, 1000), [src], [buf]),
        task("c", consume(buf, dst, 1000), [buf], [dst], warp=4),
    )
    start = time.perf_counter()
    report = clean(plan)
    assert time.perf_counter() - start < 2.0
    # Brackets within each iteration: depth 0 + 0 < 1 stage proves it without a run.
    assert dict(report.stats)["by_depth"] == 1 and dict(report.stats)["events"] == 0


def _head(queue: Queue, src: Src, r: Ring, trips: object) -> Any:
    @schedule
    def head(q: Any, s: Any, ring_: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            with domain_loop(trips):
                ring_.acquire()
                ring_.store(item=s.load())
                ring_.commit()

    return head(queue, src, r)


def _tail(queue: Queue, r: Ring, dst: Dst, trips: object) -> Any:
    @schedule
    def tail(q: Any, ring_: Any, d: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            with domain_loop(trips):
                ring_.wait()
                d.write(item=ring_.read())
                ring_.release()

    return tail(queue, r, dst)


def _chain(src: Src, dst: Dst, trips: object, queue: Queue | None = None) -> KernelPlan:
    """Six tasks, five rings: task i drains ring i - 1 into ring i."""
    rings = [ring(f"r{i}", 2) for i in range(5)]
    if queue is None:
        tasks = [task("t0", produce(src, rings[0], trips), [src], [rings[0]])]
        tasks += [
            task(
                f"t{i}",
                relay(rings[i - 1], rings[i], trips),
                [rings[i - 1]],
                [rings[i]],
                warp=4 * i,
            )
            for i in range(1, 5)
        ]
        tasks.append(task("t5", consume(rings[4], dst, trips), [rings[4]], [dst], warp=20))
    else:
        tasks = [task("t0", _head(queue, src, rings[0], trips), [queue, src], [rings[0]])]
        tasks += [
            task(
                f"t{i}",
                persistent_relay(queue, rings[i - 1], rings[i], trips),
                [queue, rings[i - 1]],
                [rings[i]],
                warp=4 * i,
            )
            for i in range(1, 5)
        ]
        tasks.append(
            task("t5", _tail(queue, rings[4], dst, trips), [queue, rings[4]], [dst], warp=20)
        )
    return plan_of(*tasks, name="chain")


def test_six_task_chain_of_eight_iterations(src: Src, dst: Dst) -> None:
    """NVIDIA's checker stops at its 1M-state cap here without a proof."""
    start = time.perf_counter()
    clean(_chain(src, dst, 8))
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("persistent", [False, True])
def test_six_task_chain_with_a_dynamic_domain(
    src: Src, dst: Dst, queue: Queue, persistent: bool
) -> None:
    start = time.perf_counter()
    clean(_chain(src, dst, Tasks.get_domain, queue if persistent else None))
    assert time.perf_counter() - start < 2.0


def test_persistent_relay_with_a_dynamic_domain(src: Src, dst: Dst, queue: Queue) -> None:
    a, b = ring("a", 2), ring("b", 3)
    clean(
        plan_of(
            task("head", _head(queue, src, a, Tasks.get_domain), [queue, src], [a]),
            task("mid", persistent_relay(queue, a, b), [queue, a], [b], warp=4),
            task("tail", _tail(queue, b, dst, Tasks.get_domain), [queue, b], [dst], warp=8),
        )
    )


def _lag2_consumer(r: Ring, d: Dst) -> Any:
    @schedule
    def consumer(ring_: Any, out: Any) -> None:
        with domain_loop(8) as k:
            ring_.wait()
            out.write(item=ring_.read())
            with k.every(1, start=2):
                ring_.release()  # the stage of two iterations ago
        ring_.release()
        ring_.release()

    return consumer(r, d)


def test_release_lagging_two_stages_on_three(src: Src, dst: Dst) -> None:
    """every(1, start=2) in a constant loop, the last two released after it: checked exactly."""
    buf = ring("buf", 3)
    clean(
        plan_of(
            task("p", produce(src, buf, 8), [src], [buf]),
            task("c", _lag2_consumer(buf, dst), [buf], [dst], warp=4),
        )
    )


def test_release_lagging_one_stage_with_the_tail_after_the_loop(src: Src, dst: Dst) -> None:
    """every(1, start=1) in a constant loop and the last stage released after it.

    Right (the oracle of ring_oracle passes it), but rejected before as TS-V112 + TS-V102:
    the first/last-iteration edge check expected the last release inside a last_iter().
    """

    @schedule
    def consumer(ring_: Any, out: Any) -> None:
        with domain_loop(8) as k:
            ring_.wait()
            out.write(item=ring_.read())
            with k.every(1, start=1):
                ring_.release()  # the previous iteration's stage
        ring_.release()

    buf = ring("buf", 2)
    clean(
        plan_of(
            task("p", produce(src, buf, 8), [src], [buf]),
            task("c", consumer(buf, dst), [buf], [dst], warp=4),
        )
    )


def test_release_lagging_two_stages_on_two_deadlocks(src: Src, dst: Dst) -> None:
    buf = ring("buf", 2)
    report = verify(
        plan_of(
            task("p", produce(src, buf, 8), [src], [buf]),
            task("c", _lag2_consumer(buf, dst), [buf], [dst], warp=4),
        )
    )
    assert report.codes() == ["TS-V302"], report.as_text()


def test_skippable_inside_the_domain_loop(src: Src, dst: Dst, queue: Queue) -> None:
    """skippable() inside the K loop (not around it) in one task, around it in the other."""
    buf = ring("buf", 2)

    @schedule
    def loader(q: Any, s: Any, r: Any) -> None:
        with work_tile_loop(q, skip_if=Queue.past_end) as tiles:
            q.next_tile()
            with domain_loop(Tasks.get_domain), tiles.skippable():
                r.acquire()
                r.store(item=s.load())
                r.commit()

    @schedule
    def writer(q: Any, r: Any, d: Any) -> None:
        with work_tile_loop(q, skip_if=Queue.past_end) as tiles:
            q.next_tile()
            with tiles.skippable(), domain_loop(Tasks.get_domain):
                r.wait()
                d.write(item=r.read())
                r.release()

    clean(
        plan_of(
            task("l", loader(queue, src, buf), [queue, src], [buf]),
            task("w", writer(queue, buf, dst), [queue, buf], [dst], warp=4),
        )
    )


def test_every_inside_skippable_inside_a_constant_loop(src: Src, dst: Dst, queue: Queue) -> None:
    """every(2) + every(2, start=1) inside skippable() inside a constant loop: 2 per tile.

    The counts used to take the every() blocks once per iteration *and* over the whole loop
    (4 per tile; TS-V301 against a consumer that runs 2): a false alarm the random-plan oracle
    found. Only direct children of the loop were counted over the loop.
    """
    buf = ring("buf", 2)

    @schedule
    def loader(q: Any, s: Any, r: Any) -> None:
        with work_tile_loop(q, skip_if=Queue.past_end) as tiles:
            q.next_tile()
            with domain_loop(2) as k, tiles.skippable():
                with k.every(2):
                    r.acquire()
                    r.store(item=s.load())
                    r.commit()
                with k.every(2, start=1):
                    r.acquire()
                    r.store(item=s.load())
                    r.commit()

    @schedule
    def writer(q: Any, r: Any, d: Any) -> None:
        with work_tile_loop(q, skip_if=Queue.past_end) as tiles:
            q.next_tile()
            with tiles.skippable(), domain_loop(2):
                r.wait()
                d.write(item=r.read())
                r.release()

    clean(
        plan_of(
            task("l", loader(queue, src, buf), [queue, src], [buf]),
            task("w", writer(queue, buf, dst), [queue, buf], [dst], warp=4),
        )
    )
