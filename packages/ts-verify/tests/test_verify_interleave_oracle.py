"""Interleaved rings against an independent oracle: one ring, real stage indices, every order.

The verifier checks an interleaved ring as rings of its own per lane (``ts_verify.lanes``,
``ts_verify.strides``). This oracle does not: it runs the tasks on the *whole* ring, each
cursor at stage ``(lane + k * stride) % S`` in round ``(lane + k * stride) // S`` for its
``k``-th operation, mbarrier parity waits, and searches every interleaving for a deadlock, a
race (a wait that parity lets through before its phase really completed) or a stage filled and
never read. Every plan of a small family (stages, a stride per side, which lanes have a task,
trip counts) must get the same verdict from ``verify``.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from typing import Any

import pytest
from verify_testkit import Dst, Ring, Src, async_pipe, plan_of, task

from ts_ir import KernelPlan
from ts_trace import domain_loop, schedule
from ts_verify import verify

# -- the oracle -----------------------------------------------------------------------------------

Side = tuple[str, int, int, int]
"""A single-warp task: ("P" or "C", lane, stride, trips)."""


def oracle_ok(stages: int, tasks: tuple[Side, ...]) -> bool:
    """True when every interleaving finishes with no race and every filled stage read."""
    ops = {"P": ("acq", "com"), "C": ("wait", "rel")}

    def stage(t: Side, k: int) -> tuple[int, int]:
        pos = t[1] + k * t[2]
        return pos % stages, pos // stages

    @functools.cache
    def search(pcs: tuple[int, ...], full: tuple[int, ...], empty: tuple[int, ...]) -> bool:
        moved = False
        for i, t in enumerate(tasks):
            n = pcs[i]
            if n == 2 * t[3]:
                continue
            k, op = n // 2, ops[t[0]][n % 2]
            s, rnd = stage(t, k)
            f, e = list(full), list(empty)
            if op == "acq":
                if e[s] % 2 != rnd % 2:
                    continue  # parity says the stage of this round is not free yet
                if e[s] < rnd:
                    return False  # passed on parity two phases early: a race
            elif op == "wait":
                if f[s] % 2 == rnd % 2:
                    continue
                if f[s] < rnd + 1:
                    return False
            elif op == "com":
                f[s] += 1
            else:
                e[s] += 1
            moved = True
            nxt = (*pcs[:i], n + 1, *pcs[i + 1 :])
            if not search(nxt, tuple(f), tuple(e)):
                return False
        if moved:
            return True
        if any(pcs[i] != 2 * t[3] for i, t in enumerate(tasks)):
            return False  # deadlock
        # Finished: each stage was read, by every reader whose lane holds it, once per fill.
        for s in range(stages):
            readers = [t for t in tasks if t[0] == "C" and (s - t[1]) % t[2] == 0]
            if full[s] and not readers:
                return False
            if any(sum(stage(t, k)[0] == s for k in range(t[3])) != full[s] for t in readers):
                return False
        return True

    return search(tuple(0 for _ in tasks), (0,) * stages, (0,) * stages)


# -- the same kernels as TS plans ----------------------------------------------------------------


def _loop(lane: int, stride: int, trips: int) -> tuple[int, int, int]:
    # Stride 1: a plain loop (lane 0). Otherwise a lane loop with exactly `trips` iterations.
    if stride == 1:
        return (0, trips, 1)
    return (lane, lane + trips * stride, stride)


def _producer(src: Src, r: Ring, bounds: tuple[int, int | str, int]) -> Any:
    @schedule
    def fill(s: Any, ring_: Any) -> None:
        with domain_loop(*bounds):
            item = s.load()
            ring_.acquire()
            ring_.store(item=item)
            ring_.commit()

    return fill(src, r)


def _consumer(r: Ring, dst: Dst, bounds: tuple[int, int | str, int]) -> Any:
    @schedule
    def drain(ring_: Any, d: Any) -> None:
        with domain_loop(*bounds):
            ring_.wait()
            ring_.read()
            ring_.release()
            d.write()

    return drain(r, dst)


def ts_plan(
    stages: int, p: int, c: int, tasks: tuple[Side, ...], *, warp_lanes: str = ""
) -> KernelPlan:
    """The kernel of ``tasks``; the side named by ``warp_lanes`` as one task, a warp per lane.

    Its lanes must all run the same trip count: every warp of a task runs the whole schedule.
    """
    strides = None if p == c else (p, p, c, c)
    spec = dataclasses.replace(async_pipe(stages, 32, 32), interleave=max(p, c), strides=strides)
    src, r, dst = Src(name="src"), Ring(name="ring", pipeline_config=spec), Dst(name="dst")
    decls = []
    warp = 0
    for side in ("P", "C"):
        mine = [t for t in tasks if t[0] == side]
        if side == warp_lanes:
            # One task of `stride` warps in a plain loop: warp w works on lane w.
            assert len({t[3] for t in mine}) == 1 and len(mine) == mine[0][2] > 1
            bounds, n, mine = (0, mine[0][3], 1), len(mine), []
            if side == "P":
                decls.append(task("P", _producer(src, r, bounds), [src], [r], warp=warp, warps=n))
            else:
                decls.append(task("C", _consumer(r, dst, bounds), [r], [dst], warp=warp, warps=n))
            warp += n
        for _, lane, stride, trips in mine:
            bounds = _loop(lane, stride, trips)
            name = f"{side.lower()}{warp}"
            if side == "P":
                decls.append(task(name, _producer(src, r, bounds), [src], [r], warp=warp, warps=1))
            else:
                decls.append(task(name, _consumer(r, dst, bounds), [r], [dst], warp=warp, warps=1))
            warp += 1
    return plan_of(*decls)


def _family() -> list[tuple[int, int, int, tuple[Side, ...]]]:
    """Stages 2 or 4; a stride per side; one task per lane of each side; 0-3 trips each."""
    out = []
    for stages in (2, 4):
        divisors = [d for d in (1, 2, 4) if stages % d == 0]
        for p, c in itertools.product(divisors, divisors):
            sides = [("P", lane, p) for lane in range(p)] + [("C", lane, c) for lane in range(c)]
            if (p, c) == (1, 1) or len(sides) > 4:
                continue
            for trips in itertools.product(range(4 if len(sides) < 4 else 3), repeat=len(sides)):
                tasks = tuple(
                    (s, lane, st, n) for (s, lane, st), n in zip(sides, trips, strict=True)
                )
                out.append((stages, p, c, tasks))
    return out


FAMILY = _family()


def test_the_family_is_large_and_mixed() -> None:
    assert len(FAMILY) > 300
    verdicts = {oracle_ok(stages, tasks) for stages, _, _, tasks in FAMILY}
    assert verdicts == {True, False}


def test_the_oracle_on_hand_decided_cases() -> None:
    # Two producer lanes (stride 2), one reader of every stage: fine when the counts match.
    assert oracle_ok(4, (("P", 0, 2, 2), ("P", 1, 2, 2), ("C", 0, 1, 4)))
    # The reader reads one stage less than was filled: the last fill is never read.
    assert not oracle_ok(4, (("P", 0, 2, 2), ("P", 1, 2, 2), ("C", 0, 1, 3)))
    # A lane nobody fills: its reader waits forever.
    assert not oracle_ok(4, (("P", 0, 2, 2), ("P", 1, 2, 0), ("C", 0, 2, 2), ("C", 1, 2, 1)))
    # A producer three rounds ahead of a one-stage lane: it refills before the read.
    assert not oracle_ok(2, (("P", 0, 2, 2), ("C", 0, 2, 0)))


@pytest.mark.parametrize("case", range(0, len(FAMILY), max(1, len(FAMILY) // 400)))
def test_verify_agrees_with_the_oracle(case: int) -> None:
    stages, p, c, tasks = FAMILY[case]
    expected = oracle_ok(stages, tasks)
    report = verify(ts_plan(stages, p, c, tasks))
    assert report.ok == expected, (stages, p, c, tasks, report.as_text())


def _warp_lane_cases() -> list[tuple[str, int]]:
    """Family members whose one side has several lanes, all with the same trip count."""
    out = []
    for i, (_, p, c, tasks) in enumerate(FAMILY):
        for side, stride in (("P", p), ("C", c)):
            trips = {t[3] for t in tasks if t[0] == side}
            if stride > 1 and len(trips) == 1:
                out.append((side, i))
    return out


WARP_LANE_CASES = _warp_lane_cases()


@pytest.mark.parametrize(("side", "case"), WARP_LANE_CASES[:: max(1, len(WARP_LANE_CASES) // 120)])
def test_verify_agrees_with_the_oracle_with_warp_lanes(side: str, case: int) -> None:
    stages, p, c, tasks = FAMILY[case]
    report = verify(ts_plan(stages, p, c, tasks, warp_lanes=side))
    assert report.ok == oracle_ok(stages, tasks), (side, stages, p, c, tasks, report.as_text())


# -- run-time bounds around a cursor that visits the fine lanes in turn --------------------------
#
# Each side is one task: the side of the larger stride has a warp per lane (warp lanes, every
# warp one operation per iteration), the other side's warps (one per lane of its stride) run
# `reads` operations per iteration, so their cursors visit the fine lanes in turn. Each task's
# loop is domain_loop(end) with `end` a run-time value ("n", "m") or a constant; the verifier
# proves the plan for every value, the oracle runs it for every value up to RUNTIME_MAX.

RUNTIME_MAX = 5
End = str | int


def _side_schedule(side: str, ring_: Ring, other: Any, end: End, per_iteration: int) -> Any:
    @schedule
    def fill(s: Any, r: Any) -> None:
        with domain_loop(end):
            for _ in range(per_iteration):
                item = s.load()
                r.acquire()
                r.store(item=item)
                r.commit()

    @schedule
    def drain(r: Any, d: Any) -> None:
        with domain_loop(end):
            for _ in range(per_iteration):
                r.wait()
                r.read()
                r.release()
            d.write()

    return fill(other, ring_) if side == "P" else drain(ring_, other)


def lane_loop_plan(stages: int, p: int, c: int, ends: tuple[End, End]) -> KernelPlan:
    """One single-warp task per lane of each side in domain_loop(lane, end, stride)."""
    spec = dataclasses.replace(
        async_pipe(stages, 32, 32), interleave=max(p, c), strides=(p, p, c, c)
    )
    src, r, dst = Src(name="src"), Ring(name="ring", pipeline_config=spec), Dst(name="dst")
    decls = [
        task(f"p{lane}", _producer(src, r, (lane, ends[0], p)), [src], [r], warp=lane, warps=1)
        for lane in range(p)
    ]
    decls += [
        task(f"c{lane}", _consumer(r, dst, (lane, ends[1], c)), [r], [dst], warp=p + lane, warps=1)
        for lane in range(c)
    ]
    return plan_of(*decls)


def lane_loop_oracle_ok(stages: int, p: int, c: int, ends: tuple[End, End]) -> bool:
    names = sorted({e for e in ends if isinstance(e, str)})
    for values in itertools.product(range(RUNTIME_MAX + 1), repeat=len(names)):
        value = dict(zip(names, values, strict=True))
        end_p, end_c = (value[e] if isinstance(e, str) else e for e in ends)
        tasks = [("P", w, p, max(0, -(-(end_p - w) // p))) for w in range(p)]
        tasks += [("C", w, c, max(0, -(-(end_c - w) // c))) for w in range(c)]
        if not oracle_ok(stages, tuple(tasks)):
            return False
    return True


LANE_LOOP_FAMILY = [
    (stages, p, c, ends)
    for stages, p, c in (
        (2, 1, 2),
        (2, 2, 1),
        (4, 1, 2),
        (4, 2, 1),
        (4, 1, 4),
        (4, 2, 4),
        (4, 4, 2),
    )
    for ends in (("n", "n"), ("n", "m"), ("n", 3), (4, "n"), (4, 4), (4, 3))
]


@pytest.mark.parametrize("case", LANE_LOOP_FAMILY, ids=str)
def test_verify_agrees_with_the_oracle_for_lane_loops_of_one_run_time_end(
    case: tuple[int, int, int, tuple[End, End]],
) -> None:
    """domain_loop(l, n, stride) lanes on both sides: the counts relate loops of one end."""
    report = verify(lane_loop_plan(*case))
    assert "TS-V214" not in report.codes(), report.as_text()
    assert report.ok == lane_loop_oracle_ok(*case), (case, report.as_text())


def test_the_lane_loop_family_is_mixed() -> None:
    verdicts = {lane_loop_oracle_ok(*case) for case in LANE_LOOP_FAMILY}
    assert verdicts == {True, False}


def runtime_plan(stages: int, p: int, c: int, ends: tuple[End, End], reads: int) -> KernelPlan:
    """Producer task (p warps, one lane each) and consumer task (c warps); see above."""
    spec = dataclasses.replace(
        async_pipe(stages, 32, 32), interleave=max(p, c), strides=(p, p, c, c)
    )
    src, r, dst = Src(name="src"), Ring(name="ring", pipeline_config=spec), Dst(name="dst")
    small = "P" if p < c else "C"
    n_p, n_c = (reads if small == "P" else 1), (reads if small == "C" else 1)
    fill = _side_schedule("P", r, src, ends[0], n_p)
    drain = _side_schedule("C", r, dst, ends[1], n_c)
    return plan_of(
        task("P", fill, [src], [r], warp=0, warps=p),
        task("C", drain, [r], [dst], warp=p, warps=c),
    )


def runtime_oracle_ok(stages: int, p: int, c: int, ends: tuple[End, End], reads: int) -> bool:
    """The oracle for every value of the run-time ends up to RUNTIME_MAX."""
    small = "P" if p < c else "C"
    names = sorted({e for e in ends if isinstance(e, str)})
    for values in itertools.product(range(RUNTIME_MAX + 1), repeat=len(names)):
        value = dict(zip(names, values, strict=True))
        trips = [value[e] if isinstance(e, str) else e for e in ends]
        tasks = [("P", w, p, trips[0] * (reads if small == "P" else 1)) for w in range(p)]
        tasks += [("C", w, c, trips[1] * (reads if small == "C" else 1)) for w in range(c)]
        if not oracle_ok(stages, tuple(tasks)):
            return False
    return True


RuntimeCase = tuple[int, int, int, tuple[End, End], int]
"""(stages, producer stride, consumer stride, (producer end, consumer end), reads)."""


def _runtime_family() -> list[RuntimeCase]:
    out: list[RuntimeCase] = []
    for stages, p, c in (
        (2, 1, 2),
        (2, 2, 1),
        (4, 1, 2),
        (4, 2, 1),
        (4, 1, 4),
        (4, 2, 4),
        (4, 4, 2),
    ):
        fine = max(p, c)
        for reads in range(1, fine + 1):
            for ends in (("n", "n"), ("n", "m"), ("n", 2), (3, "n")):
                out.append((stages, p, c, ends, reads))
    return out


RUNTIME_FAMILY = _runtime_family()


def test_the_runtime_family_is_mixed() -> None:
    verdicts = [runtime_oracle_ok(*case) for case in RUNTIME_FAMILY[::7]]
    assert True in verdicts and False in verdicts


@pytest.mark.parametrize("case", RUNTIME_FAMILY, ids=str)
def test_verify_agrees_with_the_oracle_for_run_time_bounds(case: RuntimeCase) -> None:
    report = verify(runtime_plan(*case))
    assert "TS-V214" not in report.codes(), report.as_text()
    assert report.ok == runtime_oracle_ok(*case), (case, report.as_text())
