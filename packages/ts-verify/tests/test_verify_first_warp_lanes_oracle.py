"""Warp lanes beside a first-warp-only signal are wrong: an oracle that does not use ts-verify.

A task whose warps are lanes of an interleaved ring runs each warp at its own pace. If the same
task also fills a ring ``out`` (one stride) whose producer side only the first warp signals
(``TaskWarpLeader``, or a TMA producer that only the first warp arms), every warp takes every
stage of ``out`` but warp 0's commit alone completes it. The reference compiles such a program;
TS refuses it (TS-V214, ``ts_verify.lanes``). This file explores every interleaving of a small
model of the mbarrier protocol, written from the PTX rules (a phase completes when its pending
count reaches the barrier's count; ``try_wait.parity(p)`` succeeds once the current phase's
parity differs from ``p``; the producer's empty-barrier parity starts at 1), and shows:

* with the first warp signalling, a consumer can read a stage before warp 1 wrote it, and a
  run can end with warp 1 waiting forever on the empty barrier;
* with every warp signalling (``SignalingThreads.All``, the group counting both warps), neither
  happens: the fix TS-V214 offers.

Then the verifier agrees on both programs.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from typing import Any

import pytest
from verify_testkit import Dst, Ring, Src, async_pipe, plan_of, task

from ts_ir import SignalingThreads
from ts_trace import domain_loop, schedule
from ts_verify import verify

WARPS = 2  # producer warps of the task: the lanes of the interleaved ring


@dataclasses.dataclass(frozen=True)
class State:
    warp_pc: tuple[tuple[int, int], ...]  # per producer warp: (iteration, 0 acquire | 1 commit)
    sink_pc: int  # the consumer's iteration
    full_phase: tuple[int, ...]  # completed phases per stage
    full_count: tuple[int, ...]  # arrivals of the current phase
    empty_phase: tuple[int, ...]
    data: tuple[tuple[int, ...], ...]  # per stage, per warp: the round it last wrote (-1 none)


def _explore(stages: int, trips: int, all_signal: bool) -> tuple[bool, bool, bool]:
    """(a stale read is reachable, a deadlock is reachable, some run finishes)."""
    full_needed = WARPS if all_signal else 1
    start = State(
        warp_pc=((0, 0),) * WARPS,
        sink_pc=0,
        full_phase=(0,) * stages,
        full_count=(0,) * stages,
        empty_phase=(0,) * stages,
        data=((-1,) * WARPS,) * stages,
    )
    seen = {start}
    todo = deque([start])
    stale = deadlock = finished = False
    while todo:
        st = todo.popleft()
        succ: list[State] = []
        for w, (i, sub) in enumerate(st.warp_pc):
            if i == trips:
                continue
            s, r = i % stages, i // stages
            if sub == 0:
                # acquire: try_wait.parity(1 ^ (r & 1)) on the empty barrier, then write.
                if st.empty_phase[s] & 1 != 1 ^ (r & 1):
                    data = list(st.data)
                    row = list(data[s])
                    row[w] = r
                    data[s] = tuple(row)
                    pcs = list(st.warp_pc)
                    pcs[w] = (i, 1)
                    succ.append(dataclasses.replace(st, warp_pc=tuple(pcs), data=tuple(data)))
            else:
                # commit: only the signalling warps arrive on the full barrier.
                fph, fcnt = list(st.full_phase), list(st.full_count)
                if all_signal or w == 0:
                    fcnt[s] += 1
                    if fcnt[s] == full_needed:
                        fph[s], fcnt[s] = fph[s] + 1, 0
                pcs = list(st.warp_pc)
                pcs[w] = (i + 1, 0)
                succ.append(
                    dataclasses.replace(
                        st, warp_pc=tuple(pcs), full_phase=tuple(fph), full_count=tuple(fcnt)
                    )
                )
        j = st.sink_pc
        if j < trips:
            s, r = j % stages, j // stages
            # wait: try_wait.parity(r & 1) on the full barrier; read; release (count 1).
            if st.full_phase[s] & 1 != r & 1:
                if any(v != r for v in st.data[s]):
                    stale = True
                eph = list(st.empty_phase)
                eph[s] += 1
                succ.append(dataclasses.replace(st, sink_pc=j + 1, empty_phase=tuple(eph)))
        if not succ:
            done = j == trips and all(i == trips for i, _ in st.warp_pc)
            finished |= done
            deadlock |= not done
        for nxt in succ:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return stale, deadlock, finished


@pytest.mark.parametrize(("stages", "trips"), [(1, 2), (2, 3), (2, 4)])
def test_first_warp_signal_races_and_can_deadlock(stages: int, trips: int) -> None:
    stale, deadlock, finished = _explore(stages, trips, all_signal=False)
    assert stale and deadlock and finished


@pytest.mark.parametrize(("stages", "trips"), [(1, 2), (2, 3), (2, 4)])
def test_every_warp_signalling_is_correct(stages: int, trips: int) -> None:
    stale, deadlock, finished = _explore(stages, trips, all_signal=True)
    assert finished and not stale and not deadlock


def _plan(signaling: SignalingThreads, producers: int) -> Any:
    src, dst = Src(name="src"), Dst(name="dst")
    lanes = dataclasses.replace(async_pipe(4, 32, 32), interleave=WARPS)
    ring = Ring(name="ring", pipeline_config=lanes)
    out = Ring(
        name="out",
        pipeline_config=async_pipe(2, producers, 32, producer_signaling=signaling),
    )

    @schedule
    def fill(s: Any, r: Any) -> None:
        with domain_loop(8):
            item = s.load()
            r.acquire()
            r.store(item=item)
            r.commit()

    @schedule
    def relay(r: Any, o: Any) -> None:
        with domain_loop(8):
            r.wait()
            item = r.read()
            r.release()
            o.acquire()
            o.store(item=item)
            o.commit()

    @schedule
    def sink(o: Any, d: Any) -> None:
        with domain_loop(8):
            o.wait()
            o.read()
            o.release()
            d.write()

    return plan_of(
        task("load", fill(src, ring), [src], [ring], warp=0, warps=WARPS),
        task("store", relay(ring, out), [ring], [out], warp=4, warps=WARPS),
        task("sink", sink(out, dst), [out], [dst], warp=8, warps=1),
    )


def test_the_verifier_agrees_with_the_oracle() -> None:
    wrong = verify(_plan(SignalingThreads.TaskWarpLeader, 32))
    assert wrong.codes() == ["TS-V214"], wrong.as_text()
    assert "(a race" in wrong.errors[0].message and "(a deadlock)" in wrong.errors[0].message
    right = verify(_plan(SignalingThreads.All, 32 * WARPS))
    assert right.ok, right.as_text()
