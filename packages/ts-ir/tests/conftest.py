"""Shared fixtures of the ts-ir tests: a small hand-built two-task GEMM-like plan."""

from __future__ import annotations

import pytest

from ts_ir import (
    FIRST_ITER,
    LAST_ITER,
    ConditionalBlock,
    ConstBound,
    CooperativeGroupSpec,
    DependencyEdge,
    DomainLoop,
    KernelPlan,
    PipelineSpec,
    PipelineType,
    ResourceSpec,
    Role,
    Route,
    RuntimeBound,
    Schedule,
    ScheduleStage,
    SmemAllocationSpec,
    SourceLocation,
    Step,
    TaskSpec,
    WorkAttr,
    WorkMethodSpec,
    WorkTileLoop,
)

S = ScheduleStage


def _loc(line: int) -> SourceLocation:
    return SourceLocation(file="gemm.py", line=line, text=f"line {line}", function="schedule")


@pytest.fixture
def producer_schedule() -> Schedule:
    """``load``: per tile, for k: acquire ab, copy, commit."""
    return Schedule(
        name="load_schedule",
        resources=("wq", "ab"),
        body=(
            WorkTileLoop(
                work_queue="wq",
                skip_if=None,
                body=(
                    DomainLoop(
                        start=ConstBound(0),
                        end=RuntimeBound("K"),
                        step=ConstBound(1),
                        unroll=None,
                        body=(
                            Step(0, "ab", S.ProducerAcquire, "acquire", location=_loc(10)),
                            Step(1, "ab", S.ProducerWork, "copy", location=_loc(11)),
                            Step(2, "ab", S.ProducerCommit, "commit", location=_loc(12)),
                        ),
                        location=_loc(9),
                    ),
                ),
                location=_loc(8),
            ),
        ),
        location=_loc(7),
    )


@pytest.fixture
def consumer_schedule() -> Schedule:
    """``mma``: per tile, zero acc on the first k, wait/mma/release, store on the last k."""
    return Schedule(
        name="mma_schedule",
        resources=("wq", "ab", "acc"),
        body=(
            WorkTileLoop(
                work_queue="wq",
                skip_if=None,
                body=(
                    DomainLoop(
                        start=ConstBound(0),
                        end=ConstBound(8),
                        step=ConstBound(1),
                        unroll=2,
                        body=(
                            ConditionalBlock(
                                FIRST_ITER,
                                (Step(3, "acc", S.ProducerAuxWork, "zero", WorkAttr.AUXILIARY),),
                            ),
                            Step(4, "ab", S.ConsumerWait, "wait", location=_loc(21)),
                            Step(5, "ab", S.ConsumerWork, "fetch", outputs=("tile",)),
                            Step(
                                6,
                                "acc",
                                S.ProducerWork,
                                "mma",
                                inputs=(Route("a", 5, "tile"),),
                                constants=(("scale", 1.5),),
                            ),
                            Step(7, "ab", S.ConsumerRelease, "release"),
                            ConditionalBlock(LAST_ITER, (Step(8, "acc", S.ProducerWork, "store"),)),
                        ),
                    ),
                ),
            ),
        ),
    )


@pytest.fixture
def sample_plan(producer_schedule: Schedule, consumer_schedule: Schedule) -> KernelPlan:
    """Two tasks (``load`` on warp 4, ``mma`` on warps 0-3) over a pipelined ``ab`` buffer."""
    pipeline = PipelineSpec(
        type=PipelineType.TmaAsync,
        stages=4,
        bytes_per_stage=32768,
        producer_group=CooperativeGroupSpec("thread", 1),
        consumer_group=CooperativeGroupSpec("warp", 4),
    )
    resources = (
        ResourceSpec(name="wq", kind="WorkQueue", is_work_queue=True),
        ResourceSpec(
            name="ab",
            kind="SmemBuffer",
            pipeline=pipeline,
            smem=(
                SmemAllocationSpec("ab.a", 16384, 1024, "bf16", 8192),
                SmemAllocationSpec("ab.b", 16384, 1024, "bf16", 8192),
            ),
            work=(
                WorkMethodSpec("copy", Role.PRODUCER),
                WorkMethodSpec("fetch", Role.CONSUMER, outputs=("tile",)),
            ),
            location=_loc(1),
        ),
        ResourceSpec(
            name="acc",
            kind="Accumulator",
            smem=(SmemAllocationSpec("acc.out", 1000, 16),),
            work=(
                WorkMethodSpec("zero", Role.PRODUCER, WorkAttr.AUXILIARY),
                WorkMethodSpec("mma", Role.PRODUCER, inputs=("a",)),
                WorkMethodSpec("store", Role.PRODUCER),
            ),
        ),
    )
    tasks = (
        TaskSpec("load", 4, 1, 40, ("wq",), ("ab",), producer_schedule, _loc(30)),
        TaskSpec("mma", 0, 4, 232, ("wq", "ab"), ("acc",), consumer_schedule),
    )
    return KernelPlan(
        name="gemm",
        resources=resources,
        tasks=tasks,
        dependencies=(DependencyEdge("ab", "acc"),),
    )
