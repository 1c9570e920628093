"""The schedule tree: what one task does, in order, as frozen data.

A :class:`Schedule` is a tree of :data:`Node` values. Leaves are :class:`Step` s (a pipeline
operation or a work call on one resource). Inner nodes are :class:`DomainLoop` (a ``range``-like
loop over the work tile's iteration space), :class:`WorkTileLoop` (the persistent loop over work
tiles) and :class:`ConditionalBlock` (a guarded region). Resources are referred to by name, so a
schedule is plain data: it can be compared, hashed, serialized and drawn without any resource
object or GPU library.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator

from ts_ir.enums import ScheduleStage, WorkAttr
from ts_ir.errors import ArgumentError, describe_value, is_int
from ts_ir.guards import BlockGuard, OpaqueCondition

__all__ = [
    "UNKNOWN_LOCATION",
    "Bound",
    "ConditionalBlock",
    "ConstBound",
    "DomainLoop",
    "DynamicBound",
    "Node",
    "Route",
    "RuntimeBound",
    "Schedule",
    "ScheduleVisitor",
    "SourceLocation",
    "Step",
    "WorkTileLoop",
    "iter_nodes",
    "iter_steps",
]


@dataclasses.dataclass(frozen=True)
class SourceLocation:
    """Where in the user's code something was written.

    Attributes:
        file: Path of the source file.
        line: 1-based line number.
        text: The stripped text of that line ("" when unavailable).
        function: Name of the enclosing function ("" when unknown).
    """

    file: str
    line: int
    text: str = ""
    function: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    def frame(self) -> str:
        """``file:line`` followed by the line's text, for error messages."""
        head = f'File "{self.file}", line {self.line}'
        if self.function:
            head += f", in {self.function}"
        return f"{head}\n    {self.text}" if self.text else head


UNKNOWN_LOCATION = SourceLocation(file="<unknown>", line=0)
"""The location of things whose source is not known (hand-built IR, decoded JSON)."""


@dataclasses.dataclass(frozen=True)
class Route:
    """A data-flow edge into a step: one keyword argument filled by an earlier step's output.

    Attributes:
        argument: Name of the destination work method's parameter.
        source_step: ``Step.id`` of the work call that produced the value.
        output: Name of the producing call's output (a task-local variable slot).
    """

    argument: str
    source_step: int
    output: str


@dataclasses.dataclass(frozen=True)
class Step:
    """One pipeline operation or work call on one resource.

    Attributes:
        id: Unique, increasing index of the step within its schedule (program order).
        resource: Name of the resource acted on.
        stage: The operation.
        label: The work method's name for work steps; the reserved op name otherwise.
        attrs: Work attributes of the called method.
        inputs: Routed inputs, each from an earlier step's output.
        outputs: Names of the task-local outputs this call writes, in return order.
        constants: Compile-time keyword arguments passed at the call, sorted by name.
        location: Where the call was written.
    """

    id: int
    resource: str
    stage: ScheduleStage
    label: str
    attrs: WorkAttr = WorkAttr.NONE
    inputs: tuple[Route, ...] = ()
    outputs: tuple[str, ...] = ()
    constants: tuple[tuple[str, object], ...] = ()
    location: SourceLocation = UNKNOWN_LOCATION

    @property
    def is_work(self) -> bool:
        """True for work calls."""
        return self.stage.is_work

    @property
    def is_auxiliary(self) -> bool:
        """True for work that carries no payload (exempt from bracket rules)."""
        return self.stage.is_aux_work or self.attrs.is_auxiliary()

    def describe(self) -> str:
        """``resource.label`` for work, ``resource.op`` for pipeline operations."""
        return f"{self.resource}.{self.label}"


@dataclasses.dataclass(frozen=True)
class ConstBound:
    """A loop bound known at trace time."""

    value: int

    def __post_init__(self) -> None:
        if not is_int(self.value):
            raise ArgumentError(
                "ConstBound.value",
                f"ConstBound.value must be an int, got {describe_value(self.value)}",
                fix="pass an int; a runtime value is a RuntimeBound",
            )

    def describe(self) -> str:
        """A short rendering for tables and messages."""
        return str(self.value)


@dataclasses.dataclass(frozen=True)
class RuntimeBound:
    """A loop bound that is a runtime value (for example a DSL integer computed in the kernel).

    Attributes:
        name: A readable name of the value (its type name at trace time).
        value: The value itself, kept for lowering; ignored by equality and JSON.
    """

    name: str
    # Not compared, hashed or serialized: a plan means the same whatever the value is.
    value: object = dataclasses.field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        _require_name(self.name, "RuntimeBound.name")

    def describe(self) -> str:
        """A short rendering for tables and messages."""
        return f"<{self.name}>"


@dataclasses.dataclass(frozen=True)
class DynamicBound:
    """A bound computed per work tile by a task method ``(self, work_tile_coord) -> bound``.

    Attributes:
        getter: Qualified name of the method, e.g. ``"VarlenTask.get_domain"``.
    """

    getter: str

    def __post_init__(self) -> None:
        _require_name(self.getter, "DynamicBound.getter")

    def describe(self) -> str:
        """A short rendering for tables and messages."""
        return f"{self.getter}(tile)"


def _require_name(value: object, argument: str) -> None:
    if not isinstance(value, str) or not value:
        raise ArgumentError(
            argument,
            f"{argument} must be a non-empty str, got {describe_value(value)}",
            fix="name the value (a runtime bound: its type name; a getter: 'MyTask.get_domain')",
        )


Bound = ConstBound | RuntimeBound | DynamicBound
"""Any bound of a domain loop (a constant, a runtime value or a per-tile getter)."""


@dataclasses.dataclass(frozen=True)
class DomainLoop:
    """A ``range(start, end, step)`` loop over the work tile's iteration space.

    Attributes:
        start: First index.
        end: Exclusive end.
        step: Increment (never zero).
        unroll: Unroll count, or None (the loop stays rolled, as with 1).
        body: The loop body.
        location: Where the ``with domain_loop(...)`` was written.
    """

    start: Bound
    end: Bound
    step: Bound
    unroll: int | None
    body: tuple[Node, ...]
    location: SourceLocation = UNKNOWN_LOCATION

    @property
    def is_static(self) -> bool:
        """True when every bound is a trace-time constant."""
        return all(isinstance(b, ConstBound) for b in (self.start, self.end, self.step))

    def static_trip_count(self) -> int | None:
        """The number of iterations when all bounds are constants, else None."""
        if not (
            isinstance(self.start, ConstBound)
            and isinstance(self.end, ConstBound)
            and isinstance(self.step, ConstBound)
        ):
            return None
        return len(range(self.start.value, self.end.value, self.step.value))

    def describe(self) -> str:
        """A short rendering for tables and messages."""
        bounds = ", ".join(b.describe() for b in (self.start, self.end, self.step))
        unroll = "" if self.unroll is None else f", unroll={self.unroll}"
        return f"domain_loop({bounds}{unroll})"


@dataclasses.dataclass(frozen=True)
class WorkTileLoop:
    """The persistent loop over the work tiles handed out by a work queue.

    Attributes:
        work_queue: Name of the work-queue resource.
        skip_if: Qualified name of the skip predicate, or None.
        body: The loop body.
        location: Where the ``with work_tile_loop(...)`` was written.
    """

    work_queue: str
    skip_if: str | None
    body: tuple[Node, ...]
    location: SourceLocation = UNKNOWN_LOCATION

    def describe(self) -> str:
        """A short rendering for tables and messages."""
        skip = f", skip_if={self.skip_if}" if self.skip_if else ""
        return f"work_tile_loop({self.work_queue}{skip})"


@dataclasses.dataclass(frozen=True)
class ConditionalBlock:
    """A region that runs only when its guard fires.

    Attributes:
        guard: The guard (iteration predicate, opaque condition or skippable marker).
        body: The guarded region.
        location: Where the block was opened.
    """

    guard: BlockGuard
    body: tuple[Node, ...]
    location: SourceLocation = UNKNOWN_LOCATION

    @property
    def negated(self) -> bool:
        """True for ``when_false`` blocks."""
        return isinstance(self.guard, OpaqueCondition) and self.guard.negated

    def describe(self) -> str:
        """A short rendering for tables and messages."""
        return f"when({self.guard.describe()})"


Node = Step | DomainLoop | WorkTileLoop | ConditionalBlock
"""Any node of a schedule tree."""

Container = DomainLoop | WorkTileLoop | ConditionalBlock


@dataclasses.dataclass(frozen=True)
class Schedule:
    """The traced schedule of one task.

    Attributes:
        name: Name of the schedule function.
        resources: Names of the resources the schedule function took, in parameter order.
        body: Top-level nodes.
        location: Where the schedule function is defined.
    """

    name: str
    resources: tuple[str, ...]
    body: tuple[Node, ...]
    location: SourceLocation = UNKNOWN_LOCATION

    def steps(self) -> tuple[Step, ...]:
        """Every step in program order."""
        return tuple(iter_steps(self.body))

    def step(self, step_id: int) -> Step:
        """The step with the given id."""
        for s in iter_steps(self.body):
            if s.id == step_id:
                return s
        raise KeyError(step_id)

    def walk(self) -> Iterator[tuple[Node, tuple[Container, ...]]]:
        """Every node in program order with the chain of enclosing containers."""
        return iter_nodes(self.body)

    def accept(self, visitor: ScheduleVisitor) -> None:
        """Visit the tree depth first in program order."""
        for node in self.body:
            visitor.visit(node)

    def as_text(self) -> str:
        """The traced stage, readable: the schedule tree with steps, routes and locations."""
        # Imported here: render depends on this module.
        from ts_ir.render import render_schedule

        return render_schedule(self)

    def fingerprint(self) -> str:
        """A stable hash of the schedule's structure (locations excluded)."""
        # Imported here: serialize depends on this module.
        from ts_ir.serialize import schedule_to_dict

        data = schedule_to_dict(self, with_locations=False)
        return hashlib.sha256(repr(data).encode()).hexdigest()[:16]


def iter_nodes(
    body: tuple[Node, ...], parents: tuple[Container, ...] = ()
) -> Iterator[tuple[Node, tuple[Container, ...]]]:
    """Yield ``(node, enclosing containers)`` for every node of ``body`` in program order."""
    for node in body:
        yield node, parents
        if not isinstance(node, Step):
            yield from iter_nodes(node.body, (*parents, node))


def iter_steps(body: tuple[Node, ...]) -> Iterator[Step]:
    """Yield every step of ``body`` in program order."""
    for node, _ in iter_nodes(body):
        if isinstance(node, Step):
            yield node


class ScheduleVisitor:
    """Depth-first visitor over a schedule tree.

    Override the ``visit_*`` methods you need; the container visitors recurse into their body
    by default through :meth:`generic_visit`.
    """

    def visit(self, node: Node) -> None:
        """Dispatch ``node`` to its ``visit_*`` method."""
        if isinstance(node, Step):
            self.visit_step(node)
        elif isinstance(node, DomainLoop):
            self.visit_domain_loop(node)
        elif isinstance(node, WorkTileLoop):
            self.visit_work_tile_loop(node)
        else:
            self.visit_conditional(node)

    def generic_visit(self, node: Container) -> None:
        """Visit the children of a container."""
        for child in node.body:
            self.visit(child)

    def visit_step(self, node: Step) -> None:
        """Called for every step."""

    def visit_domain_loop(self, node: DomainLoop) -> None:
        """Called for every domain loop."""
        self.generic_visit(node)

    def visit_work_tile_loop(self, node: WorkTileLoop) -> None:
        """Called for every work-tile loop."""
        self.generic_visit(node)

    def visit_conditional(self, node: ConditionalBlock) -> None:
        """Called for every conditional block."""
        self.generic_visit(node)
