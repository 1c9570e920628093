"""Rings whose producers and consumers move by different strides, checked as fine lanes.

``interleave_stride=(p, p, c, c)``: every producer cursor moves ``p`` stages at a time from its
lane, every consumer cursor ``c`` stages (:attr:`ts_ir.PipelineSpec.strides`). With
``L = lcm(p, c)`` (it divides the ``S`` stages, as ``p`` and ``c`` do) stage ``i`` belongs to
*fine lane* ``i % L``, and a cursor on lane ``l`` with stride ``s`` visits the fine lanes
``l, l + s, ... (mod L)`` in turn, and the stages of each fine lane in their ring order (it
reaches stage ``i + L`` of a fine lane ``L / s`` steps after stage ``i``). So fine lane ``f`` is
a ring of ``S / L`` stages of its own, and the ring is exactly those ``L`` rings, each cursor
operation landing on the fine lane its running count gives: the ``k``-th acquire of a producer
on lane ``l`` on fine lane ``(l + k p) % L``.

A cursor whose stride is ``L`` stays on one fine lane: its steps are renamed and its loops
stay loops. A cursor of a smaller stride changes fine lane from one operation to the next, so
its task's schedule is *expanded*: the loops around those operations with constant bounds are
unrolled, iteration predicates are decided per iteration, and each operation is renamed to its
fine lane. Work calls go to the fine lane of their side's latest ``acquire`` / ``wait`` (the
stage the cursor just opened).

A loop with run-time bounds around such operations stays a loop, *rolled by residue*: its body
runs the same operations in every iteration (no condition, no work-tile loop and no run-time
loop inside), so iteration ``i`` moves each cursor by ``i * d`` operations, and the fine lane
of an operation depends on ``i`` modulo ``P = lcm(L / stride)`` only (``P d stride`` is a
multiple of ``L``). The body is written ``P`` times, copy ``j`` renamed for iterations
``i = j (mod P)`` and guarded by ``every(P, start=j)``: exactly one copy runs per iteration, on
the stages the cursor really reaches, and the symbolic counts of ``every`` are exact for every
trip count; they equal those of lane loops over the same end (``every(2, start=1)`` of
``domain_loop(n)`` fires as often as ``domain_loop(1, n, 2)`` runs), which
:func:`ts_verify.counting.loop_base` relates. After such a loop the count is ``d`` times the
trip count: a later operation of a cursor the loop moved (unless by whole turns of ``L``)
lands on a run-time fine lane. That, run-time conditions, skipped tiles and work-tile loops
around such operations, and run-time loops whose bodies branch are TS-V214 (not supported
yet).
"""

from __future__ import annotations

import dataclasses
import math

from ts_ir import (
    ConditionalBlock,
    ConstBound,
    DomainLoop,
    Every,
    IterationPredicate,
    Node,
    Role,
    ScheduleStage,
    Step,
    TaskSpec,
    WorkTileLoop,
    iter_nodes,
)
from ts_ir.schedule import Container
from ts_verify.diagnostics import Diagnostic

__all__ = ["MAX_EXPANDED_STEPS", "Cursor", "expand_fine_lanes"]

MAX_EXPANDED_STEPS = 1 << 16
"""The most steps an expanded schedule may have (larger loops are TS-V214)."""

_BLOCKING = {
    ScheduleStage.ProducerTryAcquire: ScheduleStage.ProducerAcquire,
    ScheduleStage.ConsumerTryWait: ScheduleStage.ConsumerWait,
}
_OPENS = (ScheduleStage.ProducerAcquire, ScheduleStage.ConsumerWait)
_COUNTED = (*_OPENS, ScheduleStage.ProducerCommit, ScheduleStage.ConsumerRelease)


@dataclasses.dataclass(frozen=True)
class Cursor:
    """One side's cursors of one task on a ring with per-side strides.

    Attributes:
        ring: The ring's name.
        stages: Its stages ``S``.
        fine: Its fine lanes ``L`` (the lcm of the two strides).
        stride: This side's stride.
        lane: The lane the cursors start on (their first stage).
    """

    ring: str
    stages: int
    fine: int
    stride: int
    lane: int

    def fine_lane(self, k: int) -> int:
        """The fine lane of this cursor's ``k``-th operation."""
        return (self.lane + k * self.stride) % self.stages % self.fine


def fine_name(ring: str, lane: int) -> str:
    """The name of a fine lane (the same spelling as an interleaved ring's lanes)."""
    return f"{ring}@{lane}"


class _Expansion:
    def __init__(self, task: TaskSpec, cursors: dict[tuple[str, Role], Cursor]) -> None:
        self.task = task
        self.cursors = cursors
        self.counts: dict[tuple[str, ScheduleStage], int] = {}
        self.opened: dict[tuple[str, Role], int] = {}
        self.errors: list[Diagnostic] = []
        self.size = 0
        # After a rolled loop: counts (ring, kind) and open sides whose lane is a run-time value.
        self.unknown: dict[tuple[str, ScheduleStage], DomainLoop] = {}
        self.unknown_open: dict[tuple[str, Role], DomainLoop] = {}

    def _stepping(self, step: Step) -> bool:
        """A step whose fine lane changes along the schedule (its cursor's stride < L)."""
        c = self.cursors.get((step.resource, step.stage.role))
        return c is not None and c.stride < c.fine

    def _touches(self, node: Node) -> bool:
        if isinstance(node, Step):
            return self._stepping(node)
        assert isinstance(node, Container)
        return any(self._touches(n) for n in node.body)

    def _refuse(self, node: Node, what: str) -> None:
        # The first operation whose fine lane would depend on the run.
        step = next(n for n in _steps(node) if self._stepping(n))
        cursor = self.cursors[(step.resource, step.stage.role)]
        self.errors.append(
            Diagnostic(
                "TS-V214",
                f"task `{self.task.name}` moves its cursor on `{cursor.ring}` by "
                f"{cursor.stride} stage(s) while the other side moves by another stride; "
                f"{what} around {step.describe()} makes the stage it lands on a run-time "
                "value, which is not supported yet (a loop around it needs constant bounds, or "
                "a body that runs the same steps in every iteration)",
                task=self.task.name,
                resource=cursor.ring,
                step=f"#{step.id} {step.describe()}",
                location=step.location,
                fix="give the ring one stride for every role, or run these steps outside "
                "runtime conditions, in domain_loop()s with constant bounds or with bodies "
                "that do not branch",
            )
        )

    def _refuse_after(self, step: Step, loop: DomainLoop) -> None:
        cursor = self.cursors[(step.resource, step.stage.role)]
        self.errors.append(
            Diagnostic(
                "TS-V214",
                f"task `{self.task.name}` moves its cursor on `{cursor.ring}` by "
                f"{cursor.stride} stage(s) while the other side moves by another stride, in "
                f"{loop.describe()} with run-time bounds; after that loop, the stage "
                f"{step.describe()} lands on depends on the loop's trip count, which is not "
                "supported yet",
                task=self.task.name,
                resource=cursor.ring,
                step=f"#{step.id} {step.describe()}",
                location=step.location,
                fix="give the ring one stride for every role, or keep this ring's steps of that "
                "side inside the loop",
            )
        )

    def step(self, step: Step) -> Step:
        self.size += 1
        key = (step.resource, step.stage.role)
        cursor = self.cursors.get(key)
        if cursor is None:
            return step
        if step.stage in _COUNTED or step.stage.is_try:
            kind = _BLOCKING.get(step.stage, step.stage)
            after = self.unknown.get((step.resource, kind))
            if after is not None and cursor.stride < cursor.fine:
                self._refuse_after(step, after)
                return step
            k = self.counts.get((step.resource, kind), 0)
            lane = cursor.fine_lane(k)
            if not step.stage.is_try:
                self.counts[(step.resource, kind)] = k + 1
            if step.stage in _OPENS:
                self.opened[key] = lane
        else:  # work: on the stage the side opened last
            after = self.unknown_open.get(key)
            if after is not None and cursor.stride < cursor.fine:
                self._refuse_after(step, after)
                return step
            lane = self.opened.get(key, cursor.fine_lane(0))
        return dataclasses.replace(step, resource=fine_name(step.resource, lane))

    def _rollable(self, loop: DomainLoop) -> bool:
        """Whether every iteration of ``loop`` runs the same operations (see the module)."""
        for node, _ in iter_nodes(loop.body):
            if isinstance(node, (ConditionalBlock, WorkTileLoop)):
                return False
            if isinstance(node, DomainLoop) and node.static_trip_count() is None:
                return False
        return True

    def rolled(self, loop: DomainLoop) -> DomainLoop:
        """``loop`` (run-time bounds) with its body written once per residue (the module)."""
        moved = {
            (s.resource, s.stage.role): self.cursors[(s.resource, s.stage.role)]
            for s in _steps(loop)
            if self._stepping(s)
        }
        period = math.lcm(*(c.fine // c.stride for c in moved.values()))
        counts, opened = dict(self.counts), dict(self.opened)
        bodies = [self.body(loop.body, None) for _ in range(period)]
        shifted = False
        for (ring, role), c in moved.items():
            for kind in _COUNTED:
                if kind.role is not role:
                    continue
                per_iteration = (
                    self.counts.get((ring, kind), 0) - counts.get((ring, kind), 0)
                ) // period
                if per_iteration * c.stride % c.fine:
                    shifted = True
                    self.unknown[(ring, kind)] = loop  # the lane after the loop is a run value
                else:
                    self.counts[(ring, kind)] = counts.get((ring, kind), 0)
            if self.opened.get((ring, role)) != opened.get((ring, role)):
                self.unknown_open[(ring, role)] = loop  # opened in the loop, or not if no trips
        if not shifted:
            # Every iteration starts on the same fine lanes: one copy is the whole body.
            return dataclasses.replace(loop, body=bodies[0])
        copies = tuple(
            ConditionalBlock(Every(period, j), body, loop.location) for j, body in enumerate(bodies)
        )
        return dataclasses.replace(loop, body=copies)

    def body(self, nodes: tuple[Node, ...], loop: tuple[int, int] | None) -> tuple[Node, ...]:
        """``nodes`` expanded; ``loop`` is (iteration, trips) of an unrolled innermost loop."""
        out: list[Node] = []
        for node in nodes:
            if self.errors or self.size > MAX_EXPANDED_STEPS:
                break
            if isinstance(node, Step):
                out.append(self.step(node))
            elif isinstance(node, DomainLoop):
                if not self._touches(node):
                    out.append(dataclasses.replace(node, body=self.body(node.body, None)))
                    continue
                trips = node.static_trip_count()
                if trips is None:
                    if self._rollable(node):
                        out.append(self.rolled(node))
                    else:
                        why = "with run-time bounds whose body branches or loops at run time"
                        self._refuse(node, f"{node.describe()} {why}")
                    continue
                for i in range(trips):
                    out.extend(self.body(node.body, (i, trips)))
            elif isinstance(node, ConditionalBlock):
                guard = node.guard
                if isinstance(guard, IterationPredicate) and loop is not None:
                    # The block's loop is unrolled: decided for this iteration.
                    if guard.fires(*loop):
                        out.extend(self.body(node.body, loop))
                    continue
                if self._touches(node):
                    self._refuse(node, f"the runtime condition {node.describe()}")
                    continue
                out.append(dataclasses.replace(node, body=self.body(node.body, loop)))
            else:
                assert isinstance(node, WorkTileLoop)
                if self._touches(node):
                    self._refuse(node, "a work_tile_loop")
                    continue
                out.append(dataclasses.replace(node, body=self.body(node.body, None)))
        return tuple(out)


def _steps(node: Node) -> list[Step]:
    if isinstance(node, Step):
        return [node]
    assert isinstance(node, Container)
    return [s for n in node.body for s in _steps(n)]


def expand_fine_lanes(
    task: TaskSpec, cursors: dict[tuple[str, Role], Cursor]
) -> tuple[TaskSpec, list[Diagnostic]]:
    """``task`` with its steps on the rings of ``cursors`` on their fine lanes, or errors.

    ``cursors`` holds, per ``(ring, side)`` the task runs, where its cursors start and how far
    they move. The task's sources, destinations and schedule resources list the fine lanes it
    touches instead of the rings.
    """
    if not cursors:
        return task, []
    run = _Expansion(task, cursors)
    body = run.body(task.schedule.body, None)
    if run.size > MAX_EXPANDED_STEPS:
        ring = next(iter(cursors))[0]
        run.errors.append(
            Diagnostic(
                "TS-V214",
                f"task `{task.name}`: the loops around its steps on `{ring}` (whose sides move "
                f"by different strides) unroll to more than {MAX_EXPANDED_STEPS} steps",
                task=task.name,
                resource=ring,
                location=task.location,
                fix="give the ring one stride for every role, or use shorter loops",
            )
        )
    if run.errors:
        return task, run.errors
    body = (*body, *_unvisited(task, cursors, body))
    touched: dict[str, list[str]] = {}
    for s in (step for node in body for step in _steps(node)):
        ring, sep, _ = s.resource.rpartition("@")
        if sep and any(ring == c.ring for c in cursors.values()):
            names = touched.setdefault(ring, [])
            if s.resource not in names:
                names.append(s.resource)

    def lanes(names: tuple[str, ...]) -> tuple[str, ...]:
        out: list[str] = []
        for n in names:
            out.extend(sorted(touched.get(n, [n])) if n in _rings(cursors) else [n])
        return tuple(out)

    return (
        dataclasses.replace(
            task,
            schedule=dataclasses.replace(
                task.schedule, body=body, resources=lanes(task.schedule.resources)
            ),
            sources=lanes(task.sources),
            destinations=lanes(task.destinations),
        ),
        [],
    )


def _unvisited(
    task: TaskSpec, cursors: dict[tuple[str, Role], Cursor], body: tuple[Node, ...]
) -> tuple[Node, ...]:
    """Loops that never run, holding a side's operations on each fine lane it did not reach.

    A task takes part in every fine lane its cursors can visit, whatever its trip counts (as
    a task whose loop runs zero times takes part in its ring): it is counted there, with zero
    operations, and a fine lane visited by nobody on one side is not mistaken for one that
    lacks that side.
    """
    reached = {s.resource for node in body for s in _steps(node)}
    original = [s for node in task.schedule.body for s in _steps(node)]
    out: list[Node] = []
    for (ring, role), c in sorted(cursors.items(), key=lambda kv: (kv[0][0], kv[0][1].value)):
        ops: list[Step] = []
        for stage in _COUNTED:
            first = next((s for s in original if s.resource == ring and s.stage is stage), None)
            if first is not None and stage.role is role:
                ops.append(first)
        for lane in sorted({c.fine_lane(k) for k in range(c.fine)}):
            name = fine_name(ring, lane)
            if name in reached or not ops:
                continue
            zero = ConstBound(0)
            out.append(
                DomainLoop(
                    zero,
                    zero,
                    ConstBound(1),
                    None,
                    tuple(dataclasses.replace(s, resource=name) for s in ops),
                    ops[0].location,
                )
            )
    return tuple(out)


def _rings(cursors: dict[tuple[str, Role], Cursor]) -> set[str]:
    return {c.ring for c in cursors.values()}
