"""TMEM lifetime: allocated, used, then freed on every path, after the last use (TS-V222-V224).

The plans are a Blackwell GEMM's protocol: ``load`` (warp 4) fills the operand ring
(``AsyncUmma``), ``mma`` (warp 5) allocates TMEM and accumulates into ``acc`` (``UmmaAsync``,
which owns the TMEM block), ``epilogue`` (warps 0-3) reads ``acc`` and frees TMEM. What is
right or wrong follows from the hardware: a use must come after the ``tcgen05.alloc`` it reads
the address of, and before the ``tcgen05.dealloc`` that gives the columns away; a CTA must free
what it allocated before it exits.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

from ts_ir import (
    CooperativeGroupSpec,
    KernelPlan,
    PipelineSpec,
    PipelineType,
    TmemAllocationSpec,
    WorkAttr,
)
from ts_trace import (
    MemoryResource,
    TaskDeclaration,
    TaskLocalVariable,
    build_plan,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    when_true,
    work_tile_loop,
)
from ts_verify import Diagnostic, verify


@dataclasses.dataclass(kw_only=True)
class Tmem(MemoryResource):
    @consumer_work(work_attrs=WorkAttr.TMEM_ALLOC)
    def allocate(self, stage_info: Any) -> None: ...

    @consumer_work(work_attrs=WorkAttr.TMEM_DEALLOC)
    def free(self, stage_info: Any) -> None: ...


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    @producer_work
    def fill(self, stage_info: Any) -> None: ...

    @consumer_work
    def drain(self, stage_info: Any) -> None: ...


@dataclasses.dataclass(kw_only=True)
class Flags(MemoryResource):
    last: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.last = TaskLocalVariable(dtype="Boolean", default=False)

    @consumer_work(returns=last)
    def read(self, stage_info: Any) -> Any: ...


def _threads(n: int) -> CooperativeGroupSpec:
    return CooperativeGroupSpec("thread", n)


@schedule
def load(operands: Any) -> None:
    with domain_loop(4):
        operands.acquire()
        operands.fill()
        operands.commit()


@schedule
def mma_ok(tmem: Any, operands: Any, acc: Any) -> None:
    tmem.allocate()
    acc.acquire()
    with domain_loop(4):
        operands.wait()
        acc.fill()
        operands.release()
    acc.commit()


@schedule
def epilogue_ok(tmem: Any, acc: Any, flags: Any) -> None:
    acc.wait()
    acc.drain()
    acc.release()
    tmem.free()


def plan_of(
    mma: Callable[..., Any] = mma_ok, epilogue: Callable[..., Any] = epilogue_ok
) -> KernelPlan:
    tmem, flags = Tmem(name="tmem"), Flags(name="flags")
    operands = Ring(
        name="operands",
        pipeline_config=PipelineSpec(PipelineType.AsyncUmma, 2, 0, _threads(32), _threads(1)),
    )
    acc = Ring(
        name="acc",
        pipeline_config=PipelineSpec(PipelineType.UmmaAsync, 1, 0, _threads(1), _threads(128)),
    )
    plan = build_plan(
        [
            TaskDeclaration(
                [tmem, acc, flags], [], 0, 4, epilogue(tmem, acc, flags), name="epilogue"
            ),
            TaskDeclaration([], [operands], 4, 1, load(operands), name="load"),
            TaskDeclaration([tmem, operands], [acc], 5, 1, mma(tmem, operands, acc), name="mma"),
        ],
        {acc: [operands]},
        name="tmem_gemm",
    )
    return dataclasses.replace(plan, tmem=(TmemAllocationSpec("acc", 256, 0, "acc"),))


def first(plan: KernelPlan, code: str) -> Diagnostic:
    report = verify(plan)
    found = [d for d in report.diagnostics if d.code == code]
    assert found, report.as_text()
    return found[0]


def test_the_gemm_lifetime_verifies() -> None:
    report = verify(plan_of())
    assert report.ok and report.diagnostics == (), report.as_text()


def test_a_persistent_lifetime_around_the_tile_loops_verifies() -> None:
    # Allocated once before the MMA's tile loop, freed once after the epilogue's.
    report = verify(_persistent_plan())
    assert report.ok and report.diagnostics == (), report.as_text()


def _persistent_plan() -> KernelPlan:
    @dataclasses.dataclass(kw_only=True)
    class Queue(MemoryResource):
        is_work_queue: ClassVar[bool] = True

    wq, tmem = Queue(name="tiles"), Tmem(name="tmem")
    operands = Ring(
        name="operands",
        pipeline_config=PipelineSpec(PipelineType.AsyncUmma, 2, 0, _threads(32), _threads(1)),
    )
    acc = Ring(
        name="acc",
        pipeline_config=PipelineSpec(PipelineType.UmmaAsync, 2, 0, _threads(1), _threads(128)),
    )

    @schedule
    def loader(wq: Any, operands: Any) -> None:
        with work_tile_loop(wq), domain_loop(4):
            operands.acquire()
            operands.fill()
            operands.commit()

    @schedule
    def mma(wq: Any, tmem: Any, operands: Any, acc: Any) -> None:
        tmem.allocate()
        with work_tile_loop(wq):
            acc.acquire()
            with domain_loop(4):
                operands.wait()
                acc.fill()
                operands.release()
            acc.commit()

    @schedule
    def epilogue(wq: Any, tmem: Any, acc: Any) -> None:
        with work_tile_loop(wq):
            acc.wait()
            acc.drain()
            acc.release()
        tmem.free()

    plan = build_plan(
        [
            TaskDeclaration([wq, tmem, acc], [], 0, 4, epilogue(wq, tmem, acc), name="epilogue"),
            TaskDeclaration([wq], [operands], 4, 1, loader(wq, operands), name="load"),
            TaskDeclaration(
                [wq, tmem, operands], [acc], 5, 1, mma(wq, tmem, operands, acc), name="mma"
            ),
        ],
        {acc: [operands, wq], operands: [wq]},
        name="tmem_persistent",
    )
    return dataclasses.replace(plan, tmem=(TmemAllocationSpec("acc", 512, 0, "acc"),))


def test_no_task_frees_is_v222() -> None:
    @schedule
    def epilogue(tmem: Any, acc: Any, flags: Any) -> None:
        acc.wait()
        acc.drain()
        acc.release()

    d = first(plan_of(epilogue=epilogue), "TS-V222")
    assert (d.task, d.resource) == ("mma", "tmem")
    assert d.step.endswith("tmem.allocate") and "no task frees it" in d.message
    assert d.location is not None and d.location.text == "tmem.allocate()"


def test_a_free_under_a_condition_is_v222() -> None:
    @schedule
    def epilogue(tmem: Any, acc: Any, flags: Any) -> None:
        last = flags.read()
        acc.wait()
        acc.drain()
        acc.release()
        with when_true(last):
            tmem.free()  # only when flagged

    d = first(plan_of(epilogue=epilogue), "TS-V222")
    assert (d.task, d.resource) == ("epilogue", "tmem")
    assert "only under" in d.message
    assert d.location is not None and d.location.text == "tmem.free()  # only when flagged"


def test_a_use_after_the_own_free_is_v223() -> None:
    @schedule
    def epilogue(tmem: Any, acc: Any, flags: Any) -> None:
        acc.wait()
        tmem.free()
        acc.drain()
        acc.release()

    d = first(plan_of(epilogue=epilogue), "TS-V223")
    assert (d.task, d.resource) == ("epilogue", "acc")
    assert d.step.endswith("acc.drain") and "after freeing it" in d.message


def test_the_mma_freeing_while_the_epilogue_reads_is_v224() -> None:
    @schedule
    def mma(tmem: Any, operands: Any, acc: Any) -> None:
        tmem.allocate()
        acc.acquire()
        with domain_loop(4):
            operands.wait()
            acc.fill()
            operands.release()
        acc.commit()
        tmem.free()  # the epilogue may still be reading

    @schedule
    def epilogue(tmem: Any, acc: Any, flags: Any) -> None:
        acc.wait()
        acc.drain()
        acc.release()

    d = first(plan_of(mma=mma, epilogue=epilogue), "TS-V224")
    assert (d.task, d.resource) == ("mma", "tmem")
    assert "acc.drain` of task `epilogue`" in d.message
    assert "nothing orders task `epilogue`'s use before it" in d.message
    assert d.trace is not None


def test_an_allocation_nothing_orders_before_the_mma_is_v224() -> None:
    @schedule
    def mma(tmem: Any, operands: Any, acc: Any) -> None:
        acc.acquire()
        with domain_loop(4):
            operands.wait()
            acc.fill()
            operands.release()
        acc.commit()

    @schedule
    def epilogue(tmem: Any, acc: Any, flags: Any) -> None:
        tmem.allocate()
        acc.wait()
        acc.drain()
        acc.release()
        tmem.free()

    d = first(plan_of(mma=mma, epilogue=epilogue), "TS-V224")
    assert (d.task, d.resource) == ("epilogue", "tmem")
    assert "nothing orders the allocation before task `mma`'s use" in d.message


def test_plans_without_lifetime_steps_are_not_judged() -> None:
    @schedule
    def mma(tmem: Any, operands: Any, acc: Any) -> None:
        acc.acquire()
        with domain_loop(4):
            operands.wait()
            acc.fill()
            operands.release()
        acc.commit()

    @schedule
    def epilogue(tmem: Any, acc: Any, flags: Any) -> None:
        acc.wait()
        acc.drain()
        acc.release()

    # The kernel's own code allocates and frees around the tasks (the reference's way).
    report = verify(plan_of(mma=mma, epilogue=epilogue))
    assert report.ok, report.as_text()
