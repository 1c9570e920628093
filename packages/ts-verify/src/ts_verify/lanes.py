"""Interleaved rings, checked as one ring per lane.

A ring with interleave stride ``s`` deals its ``S`` stages out to ``s`` lanes: lane ``l`` owns
stages ``l, l + s, ...``, and a cursor on lane ``l`` starts at stage ``l`` and moves ``s``
stages at a time. Which lane a task works on is the reference's rule
(:func:`ts_ir.plan.interleave_warp_lanes`):

* a *domain lane*: a task whose steps on the ring run in a ``domain_loop(l, end, s)`` (and
  whose warp count is not ``s``) works on lane ``l`` with all its warps;
* *warp lanes*: otherwise each warp of the task is a lane of its own (warp ``w`` of the task on
  lane ``w``), and every warp runs the whole schedule on its lane, at its own pace.

A stage is only ever touched by its lane's cursors, and its barrier's phase flips each time the
lane's cursor wraps, so lane ``l`` behaves exactly like a ring of ``S / s`` stages of its own
between the lane's producers and consumers. :func:`split_lanes` rewrites the plan that way (a
task with warp lanes becomes one single-warp task per warp, each on its lane's ring, which is
what the warps are: independent programs), and every other check then applies unchanged.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator

from ts_ir import (
    DependencyEdge,
    KernelPlan,
    ResourceSpec,
    Role,
    Step,
    TaskSpec,
    iter_nodes,
)
from ts_ir.plan import interleave_warp_lanes
from ts_ir.schedule import Container, Node
from ts_verify.diagnostics import Diagnostic
from ts_verify.strides import Cursor, expand_fine_lanes

__all__ = ["lane_count", "lane_name", "split_lanes", "warp_task_name"]


def lane_name(resource: str, lane: int) -> str:
    """The name of ``resource``'s lane ``lane`` in the split plan (``ring@1``)."""
    return f"{resource}@{lane}"


def warp_task_name(task: str, warp: int) -> str:
    """The name of warp ``warp`` (counted in the task) of a task with warp lanes."""
    return f"{task}/warp{warp}"


def _rename(body: tuple[Node, ...], names: dict[str, str]) -> tuple[Node, ...]:
    out: list[Node] = []
    for node in body:
        if isinstance(node, Step):
            out.append(dataclasses.replace(node, resource=names.get(node.resource, node.resource)))
        else:
            assert isinstance(node, Container)
            out.append(dataclasses.replace(node, body=_rename(node.body, names)))
    return tuple(out)


def _runs_pipeline(task: TaskSpec, resource: str) -> set[Role]:
    """The sides of ``resource``'s pipeline that ``task`` runs operations of."""
    return {
        n.stage.role
        for n, _ in iter_nodes(task.schedule.body)
        if isinstance(n, Step) and n.resource == resource and n.stage.is_pipeline_op
    }


def _renamed(task: TaskSpec, names: dict[str, str]) -> TaskSpec:
    return dataclasses.replace(
        task,
        schedule=dataclasses.replace(
            task.schedule,
            body=_rename(task.schedule.body, names),
            resources=tuple(names.get(r, r) for r in task.schedule.resources),
        ),
        sources=tuple(names.get(s, s) for s in task.sources),
        destinations=tuple(names.get(d, d) for d in task.destinations),
    )


def _first_warp_signals(
    plan: KernelPlan, task: TaskSpec, split: set[str]
) -> Iterator[tuple[str, bool]]:
    """The rings outside ``split`` that only ``task``'s first warp signals (or arms, True)."""
    for res in plan.resources:
        p = res.pipeline
        if p is None or res.name in split:
            continue
        for role in _runs_pipeline(task, res.name):
            signaling = p.producer_signaling if role is Role.PRODUCER else p.consumer_signaling
            tma = role is Role.PRODUCER and p.type.producer_is_tma
            if tma or signaling.has_task_warp_leader():
                yield res.name, tma


def lane_count(res: ResourceSpec) -> int:
    """How many rings an interleaved ring is checked as: its stride, or the lcm of its sides'."""
    p = res.pipeline
    assert p is not None
    return math.lcm(p.side_stride(True), p.side_stride(False))


def _side_lanes(task: TaskSpec, res: ResourceSpec, role: Role) -> tuple[int, ...] | None:
    """Per warp of ``task``, the lane its cursors of one side of ``res`` start on."""
    assert res.pipeline is not None
    stride = res.pipeline.side_stride(role is Role.PRODUCER)
    if stride == 1:
        return (0,) * task.num_warps  # not interleaved on this side: every cursor from stage 0
    return interleave_warp_lanes(task, res.name, stride)


_Lanes = tuple[dict[str, str], dict[tuple[str, Role], Cursor]]
"""One warp's lanes: renamed rings (one stride), cursors on rings with a stride per side."""


def _lanes_of(
    plan: KernelPlan, task: TaskSpec, rings: dict[str, ResourceSpec]
) -> tuple[list[_Lanes], list[Diagnostic]]:
    """Per warp of ``task``: its lane of each interleaved ring it runs; or errors."""
    per_warp: list[_Lanes] = [({}, {}) for _ in range(task.num_warps)]
    errors: list[Diagnostic] = []
    split: set[str] = set()
    for name, res in rings.items():
        assert res.pipeline is not None
        for role in sorted(_runs_pipeline(task, name), key=lambda r: r.value):
            stride = res.pipeline.side_stride(role is Role.PRODUCER)
            lanes = _side_lanes(task, res, role)
            if lanes is None:
                errors.append(
                    Diagnostic(
                        "TS-V214",
                        f"`{name}` is interleaved with stride {stride}, but task `{task.name}` "
                        f"has {task.num_warps} warps and does not run its steps on it in one "
                        "lane: with more warps than lanes, two warps would start on the same "
                        "lane",
                        task=task.name,
                        resource=name,
                        location=task.location,
                        fix=f"run the task's steps on `{name}` in a domain_loop(l, end, "
                        f"{stride}) (lane l in 0..{stride - 1}), or give it at most {stride} "
                        "warps (one lane each)",
                    )
                )
                continue
            if len(set(lanes)) > 1:
                split.add(name)
            for w, lane in enumerate(lanes):
                if res.pipeline.strides is None:
                    per_warp[w][0][name] = lane_name(name, lane)
                else:
                    per_warp[w][1][(name, role)] = Cursor(
                        name, res.pipeline.stages, lane_count(res), stride, lane
                    )
    if split and not errors:
        # Refused as wrong, not as unsupported: the warps run their lanes at their own pace,
        # and on `other` (one stride) they all take the same stages, which only the first
        # warp signals. docs/migrating.rst ("Deliberately stricter") has the minimal program.
        lane_ring = sorted(split)[0]
        for other, tma in _first_warp_signals(plan, task, split):
            # A TMA stage is armed once for its bytes: every warp arming it is no fix there.
            every_warp = (
                ""
                if tma
                else f"signal `{other}` from every warp of the task (SignalingThreads.All, "
                "its group sized for all of them, so a stage completes when every warp has "
                "written it), or "
            )
            errors.append(
                Diagnostic(
                    "TS-V214",
                    f"task `{task.name}` runs `{lane_ring}` on one lane per warp (its warps "
                    "run their lanes at their own pace, with no barrier between them), and "
                    f"only its first warp signals `{other}` (a TMA producer or "
                    "TaskWarpLeader), whose stages all its warps take too: warp 0's signal "
                    f"alone completes a stage of `{other}`, so the other side may read it "
                    "before warp 1's work on it has run (a race wherever warp 1 writes it), "
                    "and warp 1, whose progress nothing waits for, can fall a phase behind "
                    f"`{other}`'s barrier and then wait on it forever (a deadlock)",
                    task=task.name,
                    resource=other,
                    location=task.location,
                    fix=f"{every_warp}split the task: give `{other}` a task of its own, "
                    f"or run `{lane_ring}` in a domain_loop(lane, end, stride) per task",
                )
            )
    return per_warp, errors


def split_lanes(plan: KernelPlan) -> tuple[KernelPlan, list[Diagnostic]]:
    """The plan with every interleaved ring replaced by one ring per lane, or the errors.

    A task with warp lanes on some ring becomes one single-warp task per warp
    (:func:`warp_task_name`). A task with more warps than lanes that is not in a lane loop
    (TS-V214), or one with warp lanes whose first warp alone signals another ring (TS-V214:
    a race and a possible deadlock), is an error.
    """
    rings = {
        r.name: r for r in plan.resources if r.pipeline is not None and r.pipeline.interleave > 1
    }
    if not rings:
        return plan, []
    errors: list[Diagnostic] = []
    tasks: list[TaskSpec] = []
    for task in plan.tasks:
        per_warp, problems = _lanes_of(plan, task, rings)
        errors.extend(problems)
        if problems:
            continue
        if all(lanes == per_warp[0] for lanes in per_warp):
            parts = [(task, per_warp[0])]
        else:
            # Warp lanes: each warp is a program of its own, on its own lane.
            parts = [
                (
                    dataclasses.replace(
                        task,
                        name=warp_task_name(task.name, w),
                        warp_start=task.warp_start + w,
                        num_warps=1,
                    ),
                    lanes,
                )
                for w, lanes in enumerate(per_warp)
            ]
        for part, (names, cursors) in parts:
            renamed = _renamed(part, names) if names else part
            expanded, problems = expand_fine_lanes(renamed, cursors)
            errors.extend(problems)
            tasks.append(expanded)
    if errors:
        return plan, errors
    resources: list[ResourceSpec] = []
    for res in plan.resources:
        if res.name not in rings or res.pipeline is None:
            resources.append(res)
            continue
        stride = lane_count(res)
        pipe = dataclasses.replace(
            res.pipeline, stages=res.pipeline.stages // stride, interleave=1, strides=None
        )
        # The lanes share the ring's storage (each uses its own stages of it): lane 0 keeps
        # the SMEM allocations, so the layout and alias checks see them once.
        resources.extend(
            dataclasses.replace(
                res,
                name=lane_name(res.name, lane),
                pipeline=pipe,
                smem=res.smem if lane == 0 else (),
            )
            for lane in range(stride)
        )
    edges: list[DependencyEdge] = []
    for edge in plan.dependencies:
        ups = (
            [edge.upstream]
            if edge.upstream not in rings
            else [lane_name(edge.upstream, lane) for lane in range(_stride(rings, edge.upstream))]
        )
        downs = (
            [edge.downstream]
            if edge.downstream not in rings
            else [
                lane_name(edge.downstream, lane) for lane in range(_stride(rings, edge.downstream))
            ]
        )
        edges.extend(
            dataclasses.replace(edge, upstream=u, downstream=d) for u in ups for d in downs
        )
    return (
        dataclasses.replace(
            plan, resources=tuple(resources), tasks=tuple(tasks), dependencies=tuple(edges)
        ),
        [],
    )


def _stride(rings: dict[str, ResourceSpec], name: str) -> int:
    return lane_count(rings[name])
