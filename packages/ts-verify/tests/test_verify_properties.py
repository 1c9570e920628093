"""Property-based tests: random valid kernels verify clean; random single mutations are caught.

The kernels come from ``verify_oracle.kernels``: 2-4 tasks as a chain, a fork, a merge, a
diamond or a ring over 1-3 AsyncAsync pipelines, every loop with the same (constant, runtime or
per-tile) bound, optionally inside a work-tile loop.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from verify_oracle import (
    TOPOLOGIES,
    barrier_programs,
    bracket_errors,
    explore,
    kernels,
    loop,
    make_plan,
    renumber,
    small_valuations,
)

from ts_ir import (
    Bound,
    ConstBound,
    DomainLoop,
    DynamicBound,
    KernelPlan,
    Node,
    RuntimeBound,
    ScheduleStage,
    Step,
    TaskSpec,
    WorkTileLoop,
)
from ts_verify import Report, verify

# Up to three resources keep the search of the swap property fast.
SMALL = tuple(name for name, edges in TOPOLOGIES.items() if len(edges) <= 3)
PLANS = kernels(valid=True, topologies=SMALL)
# Topologies where some task runs two resources (a swap needs two).
TWO_RESOURCE_TASKS = tuple(
    name
    for name in SMALL
    if any(
        sum(t in producers + consumers for producers, consumers, _ in TOPOLOGIES[name]) > 1
        for t in range(4)
    )
)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))

BRACKET_CODES = {f"TS-V10{i}" for i in range(1, 8)} | {"TS-V111"}

Path_ = tuple[int, ...]
"""Where a node sits in a schedule: indices into nested bodies."""


# ---------------------------------------------------------------------------------------------
# Editing schedule trees
# ---------------------------------------------------------------------------------------------


def _steps(body: tuple[Node, ...], where: Path_ = ()) -> list[tuple[Path_, Step]]:
    out: list[tuple[Path_, Step]] = []
    for i, node in enumerate(body):
        if isinstance(node, Step):
            out.append(((*where, i), node))
        else:
            out.extend(_steps(node.body, (*where, i)))
    return out


def _replace(body: tuple[Node, ...], where: Path_, new: tuple[Node, ...]) -> tuple[Node, ...]:
    """``body`` with the node at ``where`` replaced by ``new`` (zero or more nodes)."""
    head, rest = where[0], where[1:]
    if not rest:
        return (*body[:head], *new, *body[head + 1 :])
    node = body[head]
    assert not isinstance(node, Step)
    inner = dataclasses.replace(node, body=_replace(node.body, rest, new))
    return (*body[:head], inner, *body[head + 1 :])


def _node(body: tuple[Node, ...], where: Path_) -> Node:
    node = body[where[0]]
    for i in where[1:]:
        assert not isinstance(node, Step)
        node = node.body[i]
    return node


def _with_body(plan: KernelPlan, task: TaskSpec, body: tuple[Node, ...]) -> KernelPlan:
    schedule = dataclasses.replace(task.schedule, body=renumber(body))
    new = dataclasses.replace(task, schedule=schedule)
    return dataclasses.replace(plan, tasks=tuple(new if t is task else t for t in plan.tasks))


def _pipeline_steps(task: TaskSpec) -> list[tuple[Path_, Step]]:
    return [(p, s) for p, s in _steps(task.schedule.body) if s.stage.is_pipeline_op]


def _errors(report: Report) -> set[str]:
    return {d.code for d in report.errors}


def _deadlocks_somewhere(plan: KernelPlan) -> bool:
    total = sum(r.pipeline.stages for r in plan.resources if r.pipeline is not None)
    for val in small_valuations(plan, total + len(plan.tasks) + 2):
        ex = explore(plan, val, programs=barrier_programs, stop_early=True)
        if ex.deadlocks or ex.races:
            return True
    return False


# ---------------------------------------------------------------------------------------------
# (a) valid kernels verify clean
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(plan=PLANS)
def test_valid_kernels_verify_clean(plan: KernelPlan) -> None:
    for task in plan.tasks:
        assert bracket_errors(task.schedule) == []
    report = verify(plan)
    assert report.ok and not report.diagnostics, report.as_text()
    # The generator's claim, checked independently for the shortest runs.
    for val in small_valuations(plan, 2, pairs_up_to=1):
        ex = explore(plan, val, programs=barrier_programs, stop_early=True)
        assert not ex.deadlocks and not ex.races, val.describe()


# ---------------------------------------------------------------------------------------------
# (b) single mutations are caught
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(plan=PLANS, data=st.data())
def test_deleting_a_pipeline_op_is_caught(plan: KernelPlan, data: st.DataObject) -> None:
    task = data.draw(st.sampled_from(plan.tasks))
    where, step = data.draw(st.sampled_from(_pipeline_steps(task)))
    report = verify(_with_body(plan, task, _replace(task.schedule.body, where, ())))
    if step.stage.is_try:  # a probe is optional
        assert report.ok, report.as_text()
        return
    # Reported as the broken bracket it is, not as the deadlock it causes.
    assert _errors(report) and _errors(report) <= BRACKET_CODES, report.as_text()


@SETTINGS
@given(plan=PLANS, data=st.data())
def test_duplicating_a_release_or_commit_is_caught(plan: KernelPlan, data: st.DataObject) -> None:
    task = data.draw(st.sampled_from(plan.tasks))
    closes = [
        (p, s)
        for p, s in _pipeline_steps(task)
        if s.stage in (ScheduleStage.ProducerCommit, ScheduleStage.ConsumerRelease)
    ]
    where, step = data.draw(st.sampled_from(closes))
    report = verify(_with_body(plan, task, _replace(task.schedule.body, where, (step, step))))
    code = "TS-V101" if step.stage is ScheduleStage.ProducerCommit else "TS-V102"
    assert code in _errors(report), report.as_text()


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(plan=kernels(valid=True, topologies=TWO_RESOURCE_TASKS, max_stages=2), data=st.data())
def test_swapping_two_ops_is_caught_exactly_when_broken(
    plan: KernelPlan, data: st.DataObject
) -> None:
    # Half of the time two neighbouring pipeline ops (the likeliest reordering), else any two.
    adjacent = data.draw(st.booleans())

    def pairs(task: TaskSpec) -> list[tuple[tuple[Path_, Step], tuple[Path_, Step]]]:
        steps = _pipeline_steps(task)
        return [
            (a, b)
            for i, a in enumerate(steps)
            for b in steps[i + 1 : i + 2 if adjacent else None]
            if a[1].resource != b[1].resource
        ]

    candidates = [t for t in plan.tasks if pairs(t)]
    if not candidates:
        return
    task = data.draw(st.sampled_from(candidates))
    (wa, a), (wb, b) = data.draw(st.sampled_from(pairs(task)))
    body = _replace(_replace(task.schedule.body, wa, (b,)), wb, (a,))
    mutant = _with_body(plan, task, body)
    report = verify(mutant)
    if bracket_errors(mutant.task(task.name).schedule):
        event("swap breaks a bracket")
        assert _errors(report) and _errors(report) <= BRACKET_CODES, report.as_text()
    elif _deadlocks_somewhere(mutant):
        event("swap deadlocks")
        assert _errors(report) == {"TS-V302"}, report.as_text()
    else:
        event("swap is harmless")
        assert report.ok and not report.diagnostics, report.as_text()


@SETTINGS
@given(plan=PLANS, data=st.data())
def test_changing_a_group_size_is_caught(plan: KernelPlan, data: st.DataObject) -> None:
    res = data.draw(st.sampled_from([r for r in plan.resources if r.pipeline is not None]))
    assert res.pipeline is not None
    producer = data.draw(st.booleans())
    group = res.pipeline.producer_group if producer else res.pipeline.consumer_group
    size = data.draw(st.sampled_from([group.size + 1, group.size * 2, max(group.size - 1, 1)]))
    if size == group.size:
        size += 32
    changed = dataclasses.replace(group, size=size)
    pipeline = (
        dataclasses.replace(res.pipeline, producer_group=changed)
        if producer
        else dataclasses.replace(res.pipeline, consumer_group=changed)
    )
    mutant = dataclasses.replace(
        plan,
        resources=tuple(
            dataclasses.replace(r, pipeline=pipeline) if r is res else r for r in plan.resources
        ),
    )
    assert "TS-V203" in _errors(verify(mutant))


@SETTINGS
@given(plan=PLANS, data=st.data())
def test_overlapping_warp_ranges_are_caught(plan: KernelPlan, data: st.DataObject) -> None:
    a, b = data.draw(st.permutations(plan.tasks))[:2]
    start = data.draw(st.integers(a.warp_start - b.num_warps + 1, a.warp_end - 1))
    moved = dataclasses.replace(b, warp_start=max(start, 0))
    mutant = dataclasses.replace(plan, tasks=tuple(moved if t is b else t for t in plan.tasks))
    assert "TS-V204" in _errors(verify(mutant))


@SETTINGS
@given(plan=PLANS, data=st.data())
def test_work_outside_its_bracket_is_caught(plan: KernelPlan, data: st.DataObject) -> None:
    task = data.draw(st.sampled_from(plan.tasks))
    works = [(p, s) for p, s in _steps(task.schedule.body) if s.is_work]
    where, step = data.draw(st.sampled_from(works))
    # Move the work to the start or the end of the block that holds it: at both places no
    # stage of its resource is open.
    holder = _node(task.schedule.body, where[:-1])
    assert isinstance(holder, (DomainLoop, WorkTileLoop))
    siblings = [n for i, n in enumerate(holder.body) if i != where[-1]]
    block = (step, *siblings) if data.draw(st.booleans()) else (*siblings, step)
    body = _replace(task.schedule.body, where[:-1], (dataclasses.replace(holder, body=block),))
    code = "TS-V106" if step.stage is ScheduleStage.ProducerWork else "TS-V107"
    assert code in _errors(verify(_with_body(plan, task, body)))


@SETTINGS
@given(plan=PLANS, data=st.data())
def test_changing_one_loop_bound_class_is_caught(plan: KernelPlan, data: st.DataObject) -> None:
    looped = [
        (t, p)
        for t in plan.tasks
        for p, _ in _steps(t.schedule.body)
        if len(p) >= 2 and isinstance(_node(t.schedule.body, p[:-1]), DomainLoop)
    ]
    if not looped:  # every resource is opened once per tile, outside any loop
        return
    task, step_where = data.draw(st.sampled_from(looped))
    where = step_where[:-1]
    node = _node(task.schedule.body, where)
    assert isinstance(node, DomainLoop)
    persistent = any(isinstance(n, WorkTileLoop) for n in task.schedule.body)
    choices: list[Bound] = [ConstBound(0), ConstBound(1), ConstBound(2), RuntimeBound("m")]
    if persistent:
        choices.append(DynamicBound("Other.get_m"))
    new = data.draw(st.sampled_from([b for b in choices if b != node.end]))
    body = _replace(task.schedule.body, where, (dataclasses.replace(node, end=new),))
    assert "TS-V301" in _errors(verify(_with_body(plan, task, body)))


# ---------------------------------------------------------------------------------------------
# Pinned cases the properties found
# ---------------------------------------------------------------------------------------------


def test_a_loop_of_zero_iterations_still_counts() -> None:
    # The producer's loop never runs, so nobody consumes; the counts differ (0 vs 2), which
    # used to pass unnoticed because an all-zero count was left out of the comparison.
    plan = make_plan(
        "zero",
        {"P": 3},
        [
            ("load", 1, [loop(0, "P.acquire P.load P.commit")]),
            ("store", 1, [loop(2, "P.wait P.use P.release")]),
        ],
    )
    assert verify(plan).codes() == ["TS-V301"]
    backwards = make_plan(
        "zero_consumer",
        {"P": 3},
        [
            ("load", 1, [loop(2, "P.acquire P.load P.commit")]),
            ("store", 1, [loop(0, "P.wait P.use P.release")]),
        ],
    )
    assert verify(backwards).codes() == ["TS-V301"]


def test_a_missing_release_in_a_fork_is_not_a_group_size_error() -> None:
    plan = make_plan(
        "fork",
        {"P": 2},
        [
            ("load", 1, [loop("n", "P.acquire P.load P.commit")]),
            ("c1", 1, [loop("n", "P.wait P.use P.release")]),
            ("c2", 1, [loop("n", "P.wait P.use")]),
        ],
    )
    assert verify(plan).codes() == ["TS-V104"]
