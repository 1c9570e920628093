"""Cluster launch control (CLC): the request / answer protocol of a Blackwell work queue.

A work queue whose pipeline is ``ClcFetchAsync`` is driven by the hardware scheduler. The model
the whole-kernel checks rely on:

* one *fetching* task issues one request per tile (``clusterlaunchcontrol.try_cancel``, its
  ``acquire / fetch / commit`` directly in the work-tile loop's body); its 16-byte answer
  completes the stage's full barrier;
* every task of the loop, the fetching one too, reads every answer (``wait / read / release``
  directly in the body): the answer is the only place the next tile comes from;
* the loop ends at the first answer that cancelled nothing ("no more work").

Every task therefore reads the same answers in the same order and leaves the loop after the same
number of tiles: the tile count is one symbol shared by every task, as the ring checks assume.
Two things break that model and are reported here:

* ``TS-V220``: a task iterates the queue but reads no answer once per tile (it would not know
  its next tile, and its loop would not end with the others');
* ``TS-V221``: the fetching task's request is not exactly one per tile, issued before it reads
  that tile's answer. A request issued before the previous answer is read (a prefetch before
  the loop, a second request per tile) is still in flight when a failed answer ends the loop:
  a request after a failed one is undefined behaviour, and one that succeeds cancels a cluster
  whose tile then nobody runs.

The arrival side of the ring (one thread arms, 16 bytes) is :mod:`ts_verify.blackwell`.
"""

from __future__ import annotations

from collections.abc import Iterator

from ts_ir import (
    ConditionalBlock,
    DomainLoop,
    KernelPlan,
    PipelineType,
    Role,
    ScheduleStage,
    Step,
    TaskSpec,
    WorkTileLoop,
    iter_steps,
)
from ts_verify.diagnostics import Diagnostic

__all__ = ["check_clc", "clc_queues"]


def clc_queues(plan: KernelPlan) -> frozenset[str]:
    """The work queues driven by cluster launch control (their pipeline is ``ClcFetchAsync``)."""
    return frozenset(
        r.name
        for r in plan.resources
        if r.is_work_queue and r.pipeline is not None
        if r.pipeline.type is PipelineType.ClcFetchAsync
    )


def _loops(task: TaskSpec, queue: str) -> Iterator[WorkTileLoop]:
    for node, _parents in task.schedule.walk():
        if isinstance(node, WorkTileLoop) and node.work_queue == queue:
            yield node


def _nested(loop: WorkTileLoop, queue: str) -> list[Step]:
    """Steps on ``queue`` inside a block or loop of the body (run zero or many times a tile)."""
    return [
        s
        for n in loop.body
        if isinstance(n, (DomainLoop, ConditionalBlock, WorkTileLoop))
        for s in iter_steps(n.body)
        if s.resource == queue
    ]


def _direct(loop: WorkTileLoop, queue: str, stage: ScheduleStage) -> list[Step]:
    return [
        n for n in loop.body if isinstance(n, Step) and n.resource == queue and n.stage is stage
    ]


def check_clc(plan: KernelPlan) -> Iterator[Diagnostic]:
    """TS-V220 and TS-V221 for every CLC work queue of the plan."""
    for queue in sorted(clc_queues(plan)):
        for task in plan.tasks:
            for loop in _loops(task, queue):
                yield from _check_loop(task, loop, queue)


def _check_loop(task: TaskSpec, loop: WorkTileLoop, queue: str) -> Iterator[Diagnostic]:
    where = f"task `{task.name}`: {loop.describe()}"
    nested = _nested(loop, queue)
    if nested:
        s = nested[0]
        yield Diagnostic(
            "TS-V221",
            f"{where}: `{s.describe()}` sits inside a block or loop of the tile's body, so the "
            "CLC queue's requests and answers are not one per tile; the tasks would disagree "
            "on their next tile",
            task=task.name,
            resource=queue,
            step=f"#{s.id} {s.describe()}",
            location=s.location,
            fix=f"call {queue}.acquire() / fetch / commit() and {queue}.wait() / read / "
            "release() once per tile, directly in the work_tile_loop body",
        )
        return
    waits = _direct(loop, queue, ScheduleStage.ConsumerWait)
    if not waits:
        yield Diagnostic(
            "TS-V220",
            f"{where} reads no answer of the CLC queue `{queue}` in its body: the next tile "
            "comes only from the answer, which every task of the loop must read (the fetching "
            "task too), and its loop would not end with the others'",
            task=task.name,
            resource=queue,
            step=loop.describe(),
            location=loop.location,
            fix=f"add {queue}.wait(); {queue}.read_next_tile(); {queue}.release() once per "
            "tile in the loop body, and count this task's threads in the queue's consumer group",
        )
        return
    acquires = _direct(loop, queue, ScheduleStage.ProducerAcquire)
    outside = [
        s
        for s in task.schedule.steps()
        if s.resource == queue and s.stage.role is Role.PRODUCER
        if not any(s is n for n in loop.body)
    ]
    if not acquires and not outside:
        return  # a reading task
    commits = _direct(loop, queue, ScheduleStage.ProducerCommit)
    problem = None
    if outside:
        s = outside[0]
        problem = (s, "is issued outside the tile's body (a request ahead of its tile)")
    elif len(acquires) != 1:
        problem = (acquires[1], f"is the tile's request number 2 of {len(acquires)}")
    elif not commits or waits[0].id < commits[0].id:
        problem = (waits[0], "reads an answer before this tile's request is committed")
    if problem is None:
        return
    s, what = problem
    yield Diagnostic(
        "TS-V221",
        f"{where}: `{s.describe()}` {what}: a request must be issued once per tile, before "
        "the task reads that tile's answer; a request still in flight when a failed answer "
        "ends the loop is undefined behaviour (issued after a failure) or loses the tile of "
        "the cluster it cancels",
        task=task.name,
        resource=queue,
        step=f"#{s.id} {s.describe()}",
        location=s.location,
        fix=f"in the fetching task's loop body: {queue}.acquire(); {queue}.fetch_next_tile(); "
        f"{queue}.commit(); then {queue}.wait(); {queue}.read_next_tile(); {queue}.release()",
    )
