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

Skips (``skip_stage()``): a consumer's cursors move on one stage without a barrier operation;
:func:`refused_skips` names those the lowering refuses (no pipeline, interleaved lanes, or a
stage still held: :func:`held_skips`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
    "held_skips",
    "lagged_sides",
    "refused_skips",
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
    keep one state, as hand-written code does. Found by ``_held_walk``.
    """
    closing = (
        ScheduleStage.ConsumerRelease if role is Role.CONSUMER else ScheduleStage.ProducerCommit
    )
    lagged: set[str] = set()

    def visit(step: Step, held: Mapping[str, int]) -> None:
        if step.stage is closing and held.get(step.resource, 0) >= 2:
            lagged.add(step.resource)

    _held_walk(body, role, visit)
    return lagged


def held_skips(body: Sequence[Node]) -> set[int]:
    """Ids of the ``skip_stage()`` steps that may run while the task holds a stage of their ring.

    A skip moves the wait and the release cursor on together: a stage waited and not yet
    released would then be released one stage too late (ts-verify's TS-V115 refuses it too).
    """
    found: set[int] = set()

    def visit(step: Step, held: Mapping[str, int]) -> None:
        if step.stage.is_skip and held.get(step.resource, 0) > 0:
            found.add(step.id)

    _held_walk(body, Role.CONSUMER, visit)
    return found


def refused_skips(task: TaskSpec, specs: Mapping[str, ResourceSpec]) -> list[tuple[Step, str]]:
    """The ``skip_stage()`` steps of ``task`` that are not lowered, each with why.

    A skip moves the consumer's cursors by one stage: it needs a pipeline, a consumer side
    that visits every stage (no interleaved lanes) and no stage held (:func:`held_skips`).
    ts-verify refuses these too (TS-V115).
    """
    held = held_skips(task.schedule.body)
    out: list[tuple[Step, str]] = []
    for step in task.schedule.steps():
        if not step.stage.is_skip:
            continue
        spec = specs[step.resource]
        stride = side_stride(spec, Role.CONSUMER)
        if spec.pipeline is None:
            why = "on a resource without a pipeline"
        elif stride != 1:
            why = f"on a ring whose consumers move {stride} stages at a time (interleaved lanes)"
        elif step.id in held:
            why = f"while the task holds a stage of `{step.resource}` (release it first)"
        else:
            continue
        out.append((step, f"{why} is not lowered"))
    return out


def _held_walk(
    body: Sequence[Node], role: Role, visit: Callable[[Step, Mapping[str, int]], None]
) -> None:
    """Call ``visit(step, held)`` for each step, ``held`` counting the stages of ``role`` open.

    A stage is open from its wait (acquire) to its release (commit). Each loop is walked for
    its first, a middle and its last iteration with the blocks that fire there (the verifier
    has checked that the brackets balance); runtime conditions and skippable regions are
    assumed to run, a work-tile loop's body is walked twice.
    """
    if role is Role.CONSUMER:
        opening, closing = ScheduleStage.ConsumerWait, ScheduleStage.ConsumerRelease
    else:
        opening, closing = ScheduleStage.ProducerAcquire, ScheduleStage.ProducerCommit

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
                visit(node, open_)
                if node.stage is opening:
                    open_[node.resource] = open_.get(node.resource, 0) + 1
                elif node.stage is closing:
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
