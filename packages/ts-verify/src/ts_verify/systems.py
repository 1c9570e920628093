"""The parts of a kernel that can deadlock on their own: single rings and multi-ring cycles.

A deadlock is a set of blocked tasks each waiting for another one of the set, so its wait-for
relation holds a cycle. Every edge of that cycle is a ring (a task waits on a ring only for the
tasks on the ring's other side). Either the cycle runs over one ring (a producer and a consumer
of that ring wait for each other) or it runs over at least two distinct rings, and then it lies
in one *block* (biconnected component) of the multigraph whose nodes are tasks and whose edges
are the rings between their producers and consumers. So it is enough to check

* every ring on its own, with the tasks that use it and only its operations, and
* every block that holds two or more distinct rings, with every task of its rings (a ring that
  two consumer tasks read at once joins two blocks at its producer, and each reader's releases
  are needed for a stage to be freed) and only its rings' ops.

Leaving out the other rings' operations only removes waits, so every state the whole kernel
reaches is reached by such a part too, and a blocked cycle of the kernel is a blocked cycle of
the part (a Kahn network cannot pass a set of tasks that block each other). A part has few
symbols (only those around its own operations), which keeps the whole check polynomial in the
kernel's size: a chain of n tasks is n rings of two tasks each, whatever n is.
"""

from __future__ import annotations

import dataclasses

from ts_ir import KernelPlan, Role
from ts_verify.kernel_checks import steps_by_resource, tasks_touching

__all__ = ["System", "systems"]


@dataclasses.dataclass(frozen=True)
class System:
    """Tasks and rings checked together.

    Attributes:
        rings: The rings (resource names) whose operations run.
        tasks: The tasks that use them, in plan order.
        cycle: True for a block of several rings (a cross-ring cycle), False for one ring.
    """

    rings: tuple[str, ...]
    tasks: tuple[str, ...]
    cycle: bool = False


def _sides(plan: KernelPlan, ring: str) -> tuple[list[str], list[str]]:
    producers, consumers = [], []
    for t in tasks_touching(plan).get(ring, ()):
        steps = steps_by_resource(t).get(ring, ())
        if any(s.stage.role is Role.PRODUCER and s.stage.is_pipeline_op for s in steps):
            producers.append(t.name)
        if any(s.stage.role is Role.CONSUMER and s.stage.is_pipeline_op for s in steps):
            consumers.append(t.name)
    return producers, consumers


def _blocks(nodes: list[str], edges: list[tuple[str, str, str]]) -> list[list[int]]:
    """Biconnected components (as lists of edge indices) of a multigraph; Tarjan, iterative."""
    adjacent: dict[str, list[tuple[int, str]]] = {n: [] for n in nodes}
    for i, (a, b, _) in enumerate(edges):
        adjacent[a].append((i, b))
        if a != b:
            adjacent[b].append((i, a))
    depth: dict[str, int] = {}
    low: dict[str, int] = {}
    out: list[list[int]] = []
    stack: list[int] = []
    for root in nodes:
        if root in depth:
            continue
        depth[root] = low[root] = 0
        # Frames: (node, edge used to enter it, iterator position).
        frames: list[tuple[str, int, int]] = [(root, -1, 0)]
        while frames:
            node, via, pos = frames[-1]
            if pos < len(adjacent[node]):
                frames[-1] = (node, via, pos + 1)
                edge, other = adjacent[node][pos]
                if edge == via:
                    continue
                if other not in depth:
                    stack.append(edge)
                    depth[other] = low[other] = depth[node] + 1
                    frames.append((other, edge, 0))
                elif depth[other] < depth[node]:
                    stack.append(edge)
                    low[node] = min(low[node], depth[other])
                continue
            frames.pop()
            if frames:
                parent = frames[-1][0]
                low[parent] = min(low[parent], low[node])
                if low[node] >= depth[parent]:
                    block = []
                    while stack:
                        e = stack.pop()
                        block.append(e)
                        if e == via:
                            break
                    out.append(block)
    return out


def systems(plan: KernelPlan) -> list[tuple[System, int]]:
    """Every part to check, with its slack (its rings' stages plus its tasks)."""
    stages = {r.name: r.pipeline.stages for r in plan.resources if r.pipeline is not None}
    order = {t.name: i for i, t in enumerate(plan.tasks)}
    out: list[tuple[System, int]] = []
    edges: list[tuple[str, str, str]] = []
    users_of: dict[str, set[str]] = {}
    for ring in stages:
        producers, consumers = _sides(plan, ring)
        users = sorted(set(producers) | set(consumers), key=order.__getitem__)
        if not users:
            continue
        users_of[ring] = set(users)
        out.append((System((ring,), tuple(users)), stages[ring] + len(users)))
        edges.extend((p, c, ring) for p in producers for c in consumers if p != c)
    for block in _blocks([t.name for t in plan.tasks], edges):
        rings = sorted({edges[e][2] for e in block})
        if len(rings) < 2:
            continue
        # Every task of the block's rings, not only the block's: a ring read by two consumer
        # tasks (one arrival count over both) lies in two blocks that meet at its producer,
        # and a part without the other consumer's releases would never see a stage freed.
        tasks = sorted(set().union(*(users_of[r] for r in rings)), key=order.__getitem__)
        slack = sum(stages[r] for r in rings) + len(tasks)
        part = (System(tuple(rings), tuple(tasks), cycle=True), slack)
        if part not in out:  # the two blocks of such a ring give the same part
            out.append(part)
    return out
