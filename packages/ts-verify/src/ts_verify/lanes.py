"""Interleaved rings, checked as one ring per lane.

A ring with interleave stride ``s`` deals its ``S`` stages out to ``s`` lanes: lane ``l`` owns
stages ``l, l + s, ...`` and each task works on one lane (:func:`ts_ir.interleave_lane`: its
steps on the ring run in a ``domain_loop(l, end, s)``), its cursor moving ``s`` stages at a
time. A stage is only ever touched by its lane's tasks, and its barrier's phase flips each time
the lane's cursor wraps, so lane ``l`` behaves exactly like a ring of ``S / s`` stages of its
own between the lane's producers and consumers. :func:`split_lanes` rewrites the plan that way,
and every other check then applies unchanged, per lane.
"""

from __future__ import annotations

import dataclasses

from ts_ir import (
    DependencyEdge,
    KernelPlan,
    ResourceSpec,
    Step,
    TaskSpec,
    interleave_lane,
    iter_nodes,
)
from ts_ir.schedule import Container, Node
from ts_verify.diagnostics import Diagnostic

__all__ = ["lane_name", "split_lanes"]


def lane_name(resource: str, lane: int) -> str:
    """The name of ``resource``'s lane ``lane`` in the split plan (``ring@1``)."""
    return f"{resource}@{lane}"


def _rename(body: tuple[Node, ...], names: dict[str, str]) -> tuple[Node, ...]:
    out: list[Node] = []
    for node in body:
        if isinstance(node, Step):
            out.append(dataclasses.replace(node, resource=names.get(node.resource, node.resource)))
        else:
            assert isinstance(node, Container)
            out.append(dataclasses.replace(node, body=_rename(node.body, names)))
    return tuple(out)


def split_lanes(plan: KernelPlan) -> tuple[KernelPlan, list[Diagnostic]]:
    """The plan with every interleaved ring replaced by one ring per lane, or the errors.

    A task that runs steps on an interleaved ring but has no lane (its steps are not in a
    ``domain_loop(l, end, s)`` with a constant start and step ``s``) is an error (TS-V214).
    """
    rings = {
        r.name: r for r in plan.resources if r.pipeline is not None and r.pipeline.interleave > 1
    }
    if not rings:
        return plan, []
    errors: list[Diagnostic] = []
    tasks: list[TaskSpec] = []
    for task in plan.tasks:
        names: dict[str, str] = {}
        for name, res in rings.items():
            assert res.pipeline is not None
            stride = res.pipeline.interleave
            if not any(
                isinstance(n, Step) and n.resource == name and n.stage.is_pipeline_op
                for n, _ in iter_nodes(task.schedule.body)
            ):
                continue
            lane = interleave_lane(task, name, stride)
            if lane is None:
                errors.append(
                    Diagnostic(
                        "TS-V214",
                        f"`{name}` is interleaved with stride {stride}, but task `{task.name}` "
                        f"does not run its steps on it in one lane: they must sit in a "
                        f"domain_loop(lane, end, {stride}) with a constant lane",
                        task=task.name,
                        resource=name,
                        location=task.location,
                        fix=f"run the task's loop as domain_loop(l, end, {stride}) for its lane "
                        f"l in 0..{stride - 1}, or build the ring without interleave_stride",
                    )
                )
                continue
            names[name] = lane_name(name, lane)
        if names:
            task = dataclasses.replace(
                task,
                schedule=dataclasses.replace(
                    task.schedule,
                    body=_rename(task.schedule.body, names),
                    resources=tuple(names.get(r, r) for r in task.schedule.resources),
                ),
                sources=tuple(names.get(s, s) for s in task.sources),
                destinations=tuple(names.get(d, d) for d in task.destinations),
            )
        tasks.append(task)
    if errors:
        return plan, errors
    resources: list[ResourceSpec] = []
    for res in plan.resources:
        if res.name not in rings or res.pipeline is None:
            resources.append(res)
            continue
        stride = res.pipeline.interleave
        pipe = dataclasses.replace(res.pipeline, stages=res.pipeline.stages // stride, interleave=1)
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
    pipe = rings[name].pipeline
    assert pipe is not None
    return pipe.interleave
