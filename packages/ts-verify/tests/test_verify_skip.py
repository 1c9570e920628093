"""Consumers that take turns on one ring (``skip_stage()``): proven, or rejected with a reason.

The kernel is the ping-pong GEMM's skeleton: a loader fills ``ab`` with ``K`` stages per work
tile, and two math tasks take the tiles in turns (a per-tile condition with one key): the
owner waits for and releases the tile's stages, the other skips them. Parity tells phases
apart only modulo 2, so the owner of a tile must not reach its first wait before the
previous owner's waits of the fill one ring-length earlier; the order tokens ``t0`` / ``t1``
give it that. Without them a skipping task can wait on a stage whose older fill has not
landed, and the wait passes on that older phase: a race no single run of the greedy model
shows, which the happens-before check finds.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from verify_testkit import (
    Dst,
    Queue,
    Ring,
    RuntimeInt,
    Src,
    async_pipe,
    plan_of,
    task,
    tma_pipe,
)

from ts_ir import CooperativeGroupSpec, KernelPlan
from ts_trace import domain_loop, schedule, when_false, when_true, work_tile_loop
from ts_verify import Report, per_warp_consumer_group, verify


def pingpong(
    tokens: str = "after",
    stages: int = 2,
    consumers: int = 128,
    skips: int = 0,
    hold: bool = False,
) -> KernelPlan:
    """The skeleton; ``tokens``: "after" (right), "none", or "before" (passed too early).

    ``consumers``: the ring's consumer group; ``skips``: extra skips in task 1's turns;
    ``hold``: task 0 skips while it holds a stage.
    """
    k = RuntimeInt()
    q, src, dst = Queue(name="q"), Src(name="src"), Dst(name="dst")
    ab = Ring(name="ab", pipeline_config=async_pipe(stages, consumers=consumers))
    t0 = Ring(name="t0", pipeline_config=async_pipe(1))
    t1 = Ring(name="t1", pipeline_config=async_pipe(1))

    @schedule
    def loader(q_: Any, src_: Any, ab_: Any) -> None:
        with work_tile_loop(q_), domain_loop(k):
            item = src_.load()
            ab_.acquire()
            ab_.store(item=item)
            ab_.commit()

    def math(me: int) -> Any:
        mine, theirs = (when_false, when_true) if me == 0 else (when_true, when_false)

        @schedule
        def turns(q_: Any, src_: Any, ab_: Any, dst_: Any, *tok: Any) -> None:
            t_in, t_out = tok if tok else (None, None)
            with work_tile_loop(q_):
                _, odd = src_.load_flag()
                with mine(odd, key="odd"):
                    if t_out is not None and tokens == "before":
                        t_out.acquire()  # passes the turn before its own waits: too early
                        t_out.commit()
                    with domain_loop(k):
                        ab_.wait()
                        ab_.read()
                        if hold and me == 0:
                            ab_.skip_stage()  # marker: skip-while-held
                        ab_.release()
                    if t_out is not None and tokens == "after":
                        t_out.acquire()  # the next owner may wait now
                        t_out.commit()
                    dst_.write()
                with theirs(odd, key="odd"):
                    with domain_loop(k):
                        ab_.skip_stage()
                    for _ in range(skips if me == 1 else 0):
                        ab_.skip_stage()
                    if t_in is not None:
                        t_in.wait()  # the owner's waits are done
                        t_in.release()

        return turns

    ins, outs = (t1, t0), (t0, t1)
    graph: dict[Any, list[Any]] = {ab: [src], dst: [ab]}
    if tokens != "none":
        graph |= {t0: [ab], t1: [ab]}

    def decl(i: int) -> Any:
        tok = [ins[i], outs[i]] if tokens != "none" else []
        sched = math(i)(q, src, ab, dst, *tok)
        return task(f"math{i}", sched, [q, src, ab, *tok[:1]], [*tok[1:], dst], warp=4 + 4 * i)

    return plan_of(
        task("loader", loader(q, src, ab), [q, src], [ab], warp=0),
        decl(0),
        decl(1),
        graph=graph,
    )


def codes(report: Report) -> set[str]:
    return set(report.codes())


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_turns_passed_after_the_waits_are_proven(stages: int) -> None:
    report = verify(pingpong(stages=stages))
    assert codes(report) == set(), report


@pytest.mark.parametrize("tokens", ["none", "before"])
def test_a_wait_that_can_pass_on_an_older_phase_is_a_race(tokens: str) -> None:
    report = verify(pingpong(tokens, stages=2))
    assert codes(report) == {"TS-V303"}, report
    (diag,) = report.errors
    assert "older phase" in diag.message
    assert diag.resource == "ab"
    assert diag.trace is not None  # the run that shows it


def test_a_group_that_counts_both_readers_is_refused() -> None:
    report = verify(pingpong(consumers=256))
    assert "TS-V203" in codes(report)
    assert "released by one task alone" in " ".join(d.message for d in report.errors)


def test_skip_counts_must_match_the_fills() -> None:
    assert "TS-V301" in codes(verify(pingpong(skips=1)))


def test_skipping_while_holding_a_stage_is_refused() -> None:
    report = verify(pingpong(hold=True))
    assert "TS-V115" in codes(report)
    diag = next(d for d in report.errors if d.code == "TS-V115")
    assert diag.location is not None and "skip-while-held" in diag.location.text


def test_too_many_tile_sequences_to_run_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from ts_verify import runs

    monkeypatch.setattr(runs, "MAX_SEQUENCES", 6)  # 2 per-tile values: 1 + 2 + 4 + ... tried
    report = verify(pingpong(stages=2))
    assert codes(report) == {"TS-V115"}
    assert "more than the 6 sequences" in report.errors[0].message


def test_a_skip_on_a_queue_without_a_pipeline_is_refused() -> None:
    # The static queue's wait / release are bookkeeping and vanish; a skip must not.
    q, src, ring_ = Queue(name="q"), Src(name="src"), Ring(name="ab", pipeline_config=async_pipe())

    @schedule
    def reader(q_: Any, src_: Any) -> None:
        with work_tile_loop(q_):
            src_.load()
            q_.skip_stage()  # marker: queue-skip

    report = verify(plan_of(task("reader", reader(q, src), [q, src], [ring_])))
    diag = next(d for d in report.errors if d.code == "TS-V108")
    assert diag.resource == "q" and diag.location is not None
    assert "queue-skip" in diag.location.text


@pytest.mark.parametrize(("cluster", "size"), [((1, 1), 4), ((2, 1), 8)])
def test_a_per_warp_group_of_turn_takers_stands_for_one_task(
    cluster: tuple[int, int], size: int
) -> None:
    # Each stage is released by the one 4-warp task whose turn it is: 4 warps (x 2 CTAs
    # multicasting into the stage on a 2 x 1 cluster), written out by hand; 128 threads.
    spec = dataclasses.replace(tma_pipe(2, 4096, size), cluster_mn=cluster)
    plan = pingpong()
    readers = [plan.task("math0"), plan.task("math1")]
    assert per_warp_consumer_group(spec, readers, "ab") == CooperativeGroupSpec("thread", 128)
    # Counted as if both released every stage (8 or 16 warps), the size is not per-warp.
    assert per_warp_consumer_group(spec, readers) is None
