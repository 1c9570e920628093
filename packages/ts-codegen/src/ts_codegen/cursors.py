"""A task's pipeline cursors: where each starts, how far it moves, and which ones lag.

Interleaved rings: the lane each warp of a task starts its cursors on.

A ring with interleave stride ``s`` deals its stages out to ``s`` lanes; a cursor on lane ``l``
starts at stage ``l`` and moves ``s`` stages at a time (:mod:`ts_codegen.lower` advances it;
with ``interleave_stride=(p, p, c, c)`` the producers' cursors by ``p``, the consumers' by ``c``).
The lane of a task follows the reference's rule (:func:`ts_ir.plan.interleave_warp_lanes`): one
constant lane for the whole task (a *domain lane*: its loop is ``domain_loop(l, end, s)``), or
one lane per warp (*warp lanes*: warp ``w`` of the task on lane ``w``, read at run time from
the warp index). ts-verify checks each lane as a ring of its own (``ts_verify.lanes``).

Lagged sides (:func:`lagged_sides`): a side that opens a second stage before it closes the
first gets separate open and close cursors (:func:`release_key`, :func:`commit_key`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ts_codegen import dsl
from ts_ir import (
    DomainLoop,
    Every,
    FirstIteration,
    LastIteration,
    Node,
    ResourceSpec,
    Role,
    ScheduleStage,
    Step,
    TaskSpec,
    WorkTileLoop,
    iter_nodes,
)
from ts_ir.plan import interleave_warp_lanes

__all__ = [
    "commit_key",
    "fresh_state",
    "lagged_sides",
    "release_key",
    "side_stride",
    "task_lanes",
    "warp_lane_rings",
]


def side_stride(spec: ResourceSpec, role: Role) -> int:
    """How many stages one side's cursors move at a time (1 without a pipeline)."""
    p = spec.pipeline
    return 1 if p is None else p.side_stride(role is Role.PRODUCER)


def task_lanes(task: TaskSpec, spec: ResourceSpec, role: Role) -> tuple[int, ...] | None:
    """Per warp of ``task``, its lane of one side of ``spec``'s ring (0 when not interleaved).

    Each side has its own stride (``interleave_stride=(p, p, c, c)``), so its own lane. None
    when the task has more warps than lanes outside a lane loop (ts-verify's TS-V214).
    """
    stride = side_stride(spec, role)
    if stride == 1:
        return (0,) * task.num_warps
    return interleave_warp_lanes(task, spec.name, stride)


def warp_lane_rings(task: TaskSpec, specs: Mapping[str, ResourceSpec]) -> set[tuple[str, Role]]:
    """The ring sides on which each warp of ``task`` works on a lane of its own."""
    out: set[tuple[str, Role]] = set()
    for node, _ in iter_nodes(task.schedule.body):
        if not isinstance(node, Step) or not node.stage.is_pipeline_op:
            continue
        key = (node.resource, node.stage.role)
        if key not in out:
            lanes = task_lanes(task, specs[node.resource], node.stage.role)
            if lanes is not None and len(set(lanes)) > 1:
                out.add(key)
    return out


def fresh_state(producer: bool, stages: int, lane: Any) -> Any:
    """A fresh pipeline state on ``lane``: a constant, or a warp's lane read at run time."""
    if isinstance(lane, int):
        return dsl.make_state(producer, stages, start=lane)
    # A lane is below the stage count: advancing a fresh state by it flips no phase.
    return dsl.state_advance(dsl.make_state(producer, stages), lane)


_RELEASE = "\x00release"
_COMMIT = "\x00commit"


StateKey = tuple[str, Role]
"""A pipeline state: (resource name, role)."""


def release_key(resource: str) -> StateKey:
    """The separate release state of a lagged consumer of ``resource``."""
    return (resource + _RELEASE, Role.CONSUMER)


def commit_key(resource: str) -> StateKey:
    """The separate commit state of a lagged producer of ``resource``."""
    return (resource + _COMMIT, Role.PRODUCER)


def lagged_sides(body: Sequence[Node], role: Role) -> set[str]:
    """Resources whose signals (release / commit) lag behind the waits / acquires of ``role``.

    A release that runs while two or more stages of the resource are waited and not released
    frees an older stage than the newest wait (a software-pipelined WGMMA main loop releases
    the previous stage after waiting on the next): such a consumer needs separate wait and
    release states (the reference's ``advance_on_wait``). Likewise a producer that acquires a
    second stage before committing the first needs separate acquire and commit states
    (``advance_on_acquire``). Schedules that signal each stage before the next wait / acquire
    keep one state, as hand-written code does. Found by walking each loop's first, a middle
    and its last iteration with the blocks that fire there (the verifier has checked that the
    brackets balance).
    """
    if role is Role.CONSUMER:
        opening, closing = ScheduleStage.ConsumerWait, ScheduleStage.ConsumerRelease
    else:
        opening, closing = ScheduleStage.ProducerAcquire, ScheduleStage.ProducerCommit
    lagged: set[str] = set()

    def fires(guard: object, position: str) -> bool:
        if isinstance(guard, FirstIteration):
            return position == "first"
        if isinstance(guard, LastIteration):
            return position == "last"
        if isinstance(guard, Every):
            return guard.fires(0 if position == "first" else guard.start, guard.start + 1)
        return True  # runtime conditions and skippable regions: assume they run

    def walk(nodes: Sequence[Node], open_: dict[str, int], position: str) -> None:
        for node in nodes:
            if isinstance(node, Step):
                if node.stage is opening:
                    open_[node.resource] = open_.get(node.resource, 0) + 1
                elif node.stage is closing:
                    if open_.get(node.resource, 0) >= 2:
                        lagged.add(node.resource)
                    open_[node.resource] = max(open_.get(node.resource, 0) - 1, 0)
            elif isinstance(node, DomainLoop):
                for pos in ("first", "middle", "last"):
                    walk(node.body, open_, pos)
            elif isinstance(node, WorkTileLoop):
                walk(node.body, open_, position)
                walk(node.body, open_, position)
            elif fires(node.guard, position):
                walk(node.body, open_, position)

    walk(body, {}, "")
    return lagged
