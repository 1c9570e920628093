"""TS-V224 with several TMEM alloc / dealloc steps, and a wait-all outside the part.

The kernel's TMEM is one allocation at a time: ``TensorMemory`` keeps its address in one SMEM
word, which ``tcgen05.alloc`` writes and ``tcgen05.dealloc`` frees. So the allocs and
deallocs of a run must alternate in happens-before (program order and barrier phases), and
every use must lie in the lifetime that contains it. The old check paired the i-th alloc with
the i-th dealloc *of the run's interleaving*, which is one of many: the simulator runs a task
until it blocks, so two tasks that each allocate, use and free with nothing between them
looked like two lifetimes one after the other. Every verdict below is decided by hand from
that semantics (the reason sits with each plan), never by re-running the verifier.

The plans: ``left`` fills ring ``x`` (which owns a TMEM block: its work is a TMEM use),
``right`` drains it; ring ``y`` (no TMEM) can carry ``right``'s word back to ``left``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from test_verify_tmem_order import Ring, Tmem, _threads

from ts_ir import KernelPlan, PipelineSpec, PipelineType, TmemAllocationSpec, WorkAttr
from ts_trace import MemoryResource, TaskDeclaration, build_plan, producer_work, schedule
from ts_trace import consumer_work as consumer
from ts_verify import verify
from ts_verify.diagnostics import Diagnostic
from ts_verify.tmem_lifetime import check_tmem_order


@dataclasses.dataclass(kw_only=True)
class Umma(MemoryResource):
    """A ring whose fill is an UMMA left in flight (an asynchronous TMEM use)."""

    @producer_work(work_attrs=WorkAttr.ASYNC_READ)
    def fill(self, stage_info: Any) -> None: ...

    @consumer
    def drain(self, stage_info: Any) -> None: ...


@dataclasses.dataclass(kw_only=True)
class Fence(MemoryResource):
    """No ring and no TMEM: its one work waits for every asynchronous operation of the task."""

    @consumer(work_attrs=WorkAttr.ASYNC_WAIT_ALL)
    def wait_all(self, stage_info: Any) -> None: ...


Body = Callable[[Any, Any, Any, Any, Any], None]


def _ring(name: str, kind: PipelineType, cls: type[MemoryResource] = Ring) -> Any:
    return cls(name=name, pipeline_config=PipelineSpec(kind, 1, 0, _threads(32), _threads(32)))


def plan_of(left: Body, right: Body, *, umma: bool = False, back: bool = True) -> KernelPlan:
    """``left`` and ``right`` (one warp each) over ``x`` (TMEM), ``y`` and the TMEM words.

    Each body is called with ``(tl, tr, x, y, fence)``: ``tl`` / ``tr`` are the TMEM handles
    of ``left`` / ``right`` (two resources, so each task may keep its own alloc and dealloc
    steps). ``umma``: ``x``'s fill is asynchronous (:class:`Umma`). ``back``: the bodies use
    ``y`` (a ring no task uses is an error of its own).
    """
    tl, tr, fence = Tmem(name="tl"), Tmem(name="tr"), Fence(name="fence")
    x = _ring("x", PipelineType.AsyncAsync, Umma if umma else Ring)
    y = _ring("y", PipelineType.AsyncAsync)

    @schedule
    def left_s(tl: Any, tr: Any, x: Any, y: Any, fence: Any) -> None:
        left(tl, tr, x, y, fence)

    @schedule
    def right_s(tl: Any, tr: Any, x: Any, y: Any, fence: Any) -> None:
        right(tl, tr, x, y, fence)

    ys = [y] if back else []
    tasks = [
        TaskDeclaration([tl, *ys, fence], [x], 0, 1, left_s(tl, tr, x, y, fence), name="left"),
        TaskDeclaration([tr, x], ys, 1, 1, right_s(tl, tr, x, y, fence), name="right"),
    ]
    plan = build_plan(tasks, {x: ys}, name="tmem_pairs")
    return dataclasses.replace(plan, tmem=(TmemAllocationSpec("x", 128, 0, "x"),))


def _fill(x: Any) -> None:
    x.acquire()
    x.fill()
    x.commit()


def _drain(x: Any) -> None:
    x.wait()
    x.drain()
    x.release()


def _pass(y: Any, back: bool) -> None:
    """``right`` tells ``left`` (``back``) or ``left`` hears it, through ``y``."""
    if back:
        y.acquire()
        y.fill()
        y.commit()
    else:
        y.wait()
        y.drain()
        y.release()


def _verdict(plan: KernelPlan) -> list[Diagnostic]:
    # The other checks pass on every plan here: the verdict is TS-V224's alone.
    others = [c for c in verify(plan).codes() if c != "TS-V224"]
    assert not others, others
    found, runs = check_tmem_order(plan)
    assert runs >= 1
    return found


def _one(found: list[Diagnostic]) -> Diagnostic:
    assert [d.code for d in found] == ["TS-V224"], [d.message for d in found]
    return found[0]


def test_two_tasks_each_with_its_own_lifetime_is_a_fault() -> None:
    # Hand verdict: at fault. `left` allocates, fills `x` and frees; `right` allocates, drains
    # `x` and frees; nothing orders either free after the other's alloc. Both allocations
    # may be live at once (the second overwrites the address word), and `left`'s free may
    # come before `right`'s drain of what `left` filled. The old pairing took the run's
    # order (all of `left`, then `right`) as two lifetimes in a row and passed it.
    def left(tl: Any, tr: Any, x: Any, y: Any, fence: Any) -> None:
        tl.allocate()
        _fill(x)
        tl.free()

    def right(tl: Any, tr: Any, x: Any, y: Any, fence: Any) -> None:
        tr.allocate()
        _drain(x)
        tr.free()

    d = _one(_verdict(plan_of(left, right, back=False)))
    assert (d.task, d.resource) == ("right", "tr") and d.step.endswith("tr.allocate")
    assert "after `tl.allocate`" in d.message and "of task `left`" in d.message
    assert "no free ordered between" in d.message and d.fix and d.trace is not None


def test_one_task_allocating_twice_is_a_fault() -> None:
    # Hand verdict: at fault. `left` allocates twice with no free between (the first
    # allocation is never freed: the CTA exits holding it); `right` frees once after its
    # drain, which is otherwise well ordered. The old pairing met every use in the first
    # lifetime and passed it (TS-V222 does not see it: a task frees once after the uses).
    def left(tl: Any, tr: Any, x: Any, y: Any, fence: Any) -> None:
        tl.allocate()
        tl.allocate()
        _fill(x)

    def right(tl: Any, tr: Any, x: Any, y: Any, fence: Any) -> None:
        _drain(x)
        tr.free()

    d = _one(_verdict(plan_of(left, right, back=False)))
    assert (d.task, d.resource) == ("left", "tl") and d.step.endswith("tl.allocate")
    assert "of task" not in d.message  # both in `left`


def test_two_frees_of_one_allocation_is_a_fault() -> None:
    # Hand verdict: at fault (a double free). `left` allocates once; `right` frees after its
    # drain and `left` frees again after `right` hands `y` back: both frees are ordered after
    # every use, but no alloc lies between them. The old pairing met the uses in the first
    # lifetime (alloc, `right`'s free) and passed it.
    def left(tl: Any, tr: Any, x: Any, y: Any, fence: Any) -> None:
        tl.allocate()
        _fill(x)
        _pass(y, back=False)
        tl.free()

    def right(tl: Any, tr: Any, x: Any, y: Any, fence: Any) -> None:
        _drain(x)
        tr.free()
        _pass(y, back=True)

    d = _one(_verdict(plan_of(left, right)))
    assert (d.task, d.resource) == ("left", "tl") and "frees TMEM" in d.message
    assert "no allocation ordered between" in d.message


def test_two_lifetimes_one_after_the_other_allocate_twice() -> None:
    # Hand verdict: at fault, for one reason only. Lifetime 1: `left` allocates and fills,
    # `right` drains and frees. `right` allocates again (lifetime 2) before it hands `y` back,
    # and `left` fills again only after waiting on `y`; `right` drains and frees a second
    # time. The allocs and frees are ordered and alternate, and each use lies in its own
    # lifetime, but the first alloc relinquished the CTA's allocation permit: the PTX ISA
    # makes the second tcgen05.alloc illegal. (`right` allocates the second time: a task that
    # frees and uses TMEM again without allocating in between is TS-V223, whoever allocates.)
    def left(tl: Any, tr: Any, x: Any, y: Any, fence: Any) -> None:
        tl.allocate()
        _fill(x)
        _pass(y, back=False)
        _fill(x)

    def right(tl: Any, tr: Any, x: Any, y: Any, fence: Any) -> None:
        _drain(x)
        tr.free()
        tr.allocate()
        _pass(y, back=True)
        _drain(x)
        tr.free()

    d = _one(_verdict(plan_of(left, right)))
    assert (d.task, d.resource) == ("right", "tr") and d.step.endswith("tr.allocate")
    assert "relinquish_alloc_permit" in d.message and "once per CTA" in d.fix


def test_a_use_in_the_gap_between_two_lifetimes_is_a_fault() -> None:
    # Hand verdict: at fault. As above, but `right` hands `y` back *before* it allocates
    # again: `left`'s second fill happens after the first free and nothing orders the
    # second alloc before it, so it may run in no lifetime.
    def left(tl: Any, tr: Any, x: Any, y: Any, fence: Any) -> None:
        tl.allocate()
        _fill(x)
        _pass(y, back=False)
        _fill(x)

    def right(tl: Any, tr: Any, x: Any, y: Any, fence: Any) -> None:
        _drain(x)
        tr.free()
        _pass(y, back=True)
        tr.allocate()
        _drain(x)
        tr.free()

    d = _one(_verdict(plan_of(left, right)))
    assert (d.task, d.resource) == ("right", "tr") and "x.fill` of task `left`" in d.message


def test_a_wait_all_on_a_resource_outside_the_part_retires_the_use() -> None:
    # Hand verdict: right. `left`'s fill of `x` is an UMMA left in flight; `left` waits for
    # all of its asynchronous work (on `fence`: no ring, no TMEM) before it commits, and
    # frees only after `right` has drained `x` and handed `y` back. The old check dropped
    # `fence`'s wait from its runs (not a ring, not a TMEM owner) and reported the fill as
    # still in flight at the free.
    def left(tl: Any, tr: Any, x: Any, y: Any, fence: Any) -> None:
        tl.allocate()
        x.acquire()
        x.fill()
        fence.wait_all()
        x.commit()
        _pass(y, back=False)
        tl.free()

    def right(tl: Any, tr: Any, x: Any, y: Any, fence: Any) -> None:
        _drain(x)
        _pass(y, back=True)

    assert _verdict(plan_of(left, right, umma=True)) == []


def test_without_the_wait_all_the_use_is_still_in_flight() -> None:
    # Hand verdict: at fault. The same plan with the wait after the free instead: the UMMA
    # may still run on the columns when they are freed (the commit's arrival does not wait
    # for it here: `x` is an async-async ring).
    def left(tl: Any, tr: Any, x: Any, y: Any, fence: Any) -> None:
        tl.allocate()
        x.acquire()
        x.fill()
        x.commit()
        _pass(y, back=False)
        tl.free()
        fence.wait_all()

    def right(tl: Any, tr: Any, x: Any, y: Any, fence: Any) -> None:
        _drain(x)
        _pass(y, back=True)

    found, _ = check_tmem_order(plan_of(left, right, umma=True))
    d = _one(found)
    assert (d.task, d.resource) == ("left", "tl") and "not retired" in d.message
