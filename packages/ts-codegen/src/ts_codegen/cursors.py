"""Interleaved rings in the lowering: the lane each warp of a task starts its cursors on.

A ring with interleave stride ``s`` deals its stages out to ``s`` lanes; a cursor on lane ``l``
starts at stage ``l`` and moves ``s`` stages at a time (:mod:`ts_codegen.lower` advances it;
with ``interleave_stride=(p, p, c, c)`` the producers' cursors by ``p``, the consumers' by ``c``).
The lane of a task follows the reference's rule (:func:`ts_ir.plan.interleave_warp_lanes`): one
constant lane for the whole task (a *domain lane*: its loop is ``domain_loop(l, end, s)``), or
one lane per warp (*warp lanes*: warp ``w`` of the task on lane ``w``, read at run time from
the warp index). ts-verify checks each lane as a ring of its own (``ts_verify.lanes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ts_codegen import dsl
from ts_ir import ResourceSpec, Role, Step, TaskSpec, iter_nodes
from ts_ir.plan import interleave_warp_lanes

__all__ = ["fresh_state", "side_stride", "task_lanes", "warp_lane_rings"]


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
