"""Where tasks run and which tiles they read: CTA gates (TS-V250) and queue steps (TS-V251).

The plans are built here without the runtime: by ``ts_trace.build_plan`` from declarations, or
by replacing the IR fields (:attr:`ts_ir.TaskSpec.cta_rank`, :attr:`ts_ir.ResourceSpec.scheduler`)
of a plan directly, so the checks are seen to read the plan and nothing else.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from verify_testkit import Dst, Queue, Src, Tasks, consume, marker_line, plan_of, produce, ring

from ts_ir import KernelPlan, TileSchedulerType, WorkAttr
from ts_trace import (
    PlanError,
    TaskDeclaration,
    consumer_work,
    domain_loop,
    schedule,
    work_tile_loop,
)
from ts_verify import verify


def _copy(loader_rank: int | None, storer_rank: int | None) -> KernelPlan:
    src, dst, r = Src(name="src"), Dst(name="dst"), ring("r")
    loader = TaskDeclaration(  # loader declared
        [src], [r], 0, 4, produce(src, r), name="loader", run_only_on_cta_id=loader_rank
    )
    storer = TaskDeclaration(
        [r], [dst], 4, 4, consume(r, dst), name="storer", run_only_on_cta_id=storer_rank
    )
    return plan_of(loader, storer)


@pytest.mark.parametrize(("loader", "storer"), [(0, None), (1, 0), (0, 1)])
def test_a_ring_between_differently_gated_tasks_is_reported(
    loader: int, storer: int | None
) -> None:
    report = verify(_copy(loader, storer))
    assert report.codes() == ["TS-V250"], report.as_text()
    d = report.errors[0]
    assert (d.task, d.resource) == ("loader", "r")
    assert f"CTA {loader}" in d.message and f"run_only_on_cta_id={storer}" in d.message
    assert d.location is not None and d.location.line == marker_line(__file__, "loader declared")
    assert f"run_only_on_cta_id={loader}" in d.fix


@pytest.mark.parametrize(("loader", "storer"), [(None, None), (0, 0), (3, 3)])
def test_tasks_gated_alike_verify(loader: int | None, storer: int | None) -> None:
    report = verify(_copy(loader, storer))
    assert report.ok, report.as_text()


def test_the_check_reads_the_plan_field() -> None:
    """An ungated plan, gated by replacing the IR field: the verifier sees the gate."""
    plan = _copy(None, None)
    assert verify(plan).ok and all(t.cta_rank is None for t in plan.tasks)
    storer = dataclasses.replace(plan.tasks[1], cta_rank=2)
    report = verify(dataclasses.replace(plan, tasks=(plan.tasks[0], storer)))
    assert report.codes() == ["TS-V250"]
    assert report.errors[0].task == "storer" and "`loader`" in report.errors[0].message


def test_a_gated_task_without_shared_rings_is_free() -> None:
    """Only rings tie tasks together: a gated task on resources without pipelines is fine."""
    src, dst, r, out = Src(name="src"), Dst(name="dst"), ring("r"), Dst(name="out")

    @schedule
    def side(s: Any, o: Any) -> None:
        with domain_loop(4):
            o.write(item=s.load())

    plan = plan_of(
        TaskDeclaration([src], [r], 0, 4, produce(src, r), name="loader"),
        TaskDeclaration([r], [dst], 4, 4, consume(r, dst), name="storer"),
        TaskDeclaration([src], [out], 8, 1, side(src, out), name="side", run_only_on_cta_id=0),
    )
    assert verify(plan).ok


def test_a_bad_gate_is_a_declaration_error() -> None:
    src, r = Src(name="src"), ring("r")
    for bad in (-1, 1.0, True):
        with pytest.raises(PlanError, match="run_only_on_cta_id"):
            TaskDeclaration([src], [r], 0, 4, produce(src, r), run_only_on_cta_id=bad)  # type: ignore[arg-type]


# -- queue steps ---------------------------------------------------------------------------------
@dataclasses.dataclass(kw_only=True)
class StepQueue(Queue):
    """A queue with the reference's static step and a scheduler as the runtime records it."""

    tile_scheduler_config: Any = None

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def get_and_advance_work_tile(self, stage_info: Any) -> None:
        """The current tile."""


def _persistent(scheduler: Any) -> KernelPlan:
    src, dst, r = Src(name="src"), Dst(name="dst"), ring("r")
    wq = StepQueue(name="tiles", tile_scheduler_config=scheduler)

    @schedule
    def loader(q: Any, s: Any, ring_: Any) -> None:
        with work_tile_loop(q):
            q.get_and_advance_work_tile()  # static step
            with domain_loop(Tasks.get_domain):
                item = s.load()
                ring_.acquire()
                ring_.store(item=item)
                ring_.commit()

    @schedule
    def storer(q: Any, ring_: Any, d: Any) -> None:
        with work_tile_loop(q):
            q.next_tile()
            with domain_loop(Tasks.get_domain):
                ring_.wait()
                d.write(item=ring_.read())
                ring_.release()

    return plan_of(
        TaskDeclaration([wq, src], [r], 0, 4, loader(wq, src, r), name="loader"),
        TaskDeclaration([wq, r], [dst], 4, 4, storer(wq, r, dst), name="storer"),
    )


class _Config:
    """What the runtime's TileSchedulerConfig offers the plan builder: its scheduler type."""

    def __init__(self, kind: TileSchedulerType) -> None:
        self.tile_scheduler_type = kind


@pytest.mark.parametrize(
    "scheduler",
    [
        TileSchedulerType.AtomicDynamicPersistent,
        TileSchedulerType.ClcDynamicPersistent,
        _Config(TileSchedulerType.AtomicDynamicPersistent),
    ],
    ids=["atomic", "clc", "config"],
)
def test_the_static_step_on_a_dynamic_queue_is_reported_at_its_line(scheduler: Any) -> None:
    plan = _persistent(scheduler)
    assert plan.resource("tiles").scheduler in (
        TileSchedulerType.AtomicDynamicPersistent,
        TileSchedulerType.ClcDynamicPersistent,
    )
    report = verify(plan)
    assert report.codes() == ["TS-V251"], report.as_text()
    d = report.errors[0]
    assert (d.task, d.resource) == ("loader", "tiles")
    assert "get_and_advance_work_tile" in d.step and "scheduler" in d.message
    assert d.location is not None and d.location.line == marker_line(__file__, "static step")
    assert "read_next_tile" in d.fix


@pytest.mark.parametrize(
    "scheduler",
    [None, TileSchedulerType.StaticPersistent, _Config(TileSchedulerType.StaticPersistent), "x"],
)
def test_the_static_step_on_a_static_or_unknown_queue_verifies(scheduler: Any) -> None:
    plan = _persistent(scheduler)
    assert plan.resource("tiles").scheduler in (None, TileSchedulerType.StaticPersistent)
    assert verify(plan).ok


def test_the_queue_check_reads_the_plan_field() -> None:
    plan = _persistent(None)
    queue = dataclasses.replace(
        plan.resource("tiles"), scheduler=TileSchedulerType.AtomicDynamicPersistent
    )
    resources = tuple(queue if r.name == "tiles" else r for r in plan.resources)
    assert verify(dataclasses.replace(plan, resources=resources)).codes() == ["TS-V251"]
    # Only work queues are read: the same scheduler on a plain resource means nothing.
    plain = dataclasses.replace(queue, is_work_queue=False)
    resources = tuple(plain if r.name == "tiles" else r for r in plan.resources)
    assert "TS-V251" not in verify(dataclasses.replace(plan, resources=resources)).codes()
