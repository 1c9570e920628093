"""The state machine behind ``@schedule``: open scopes, recorded steps, latest tokens."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ts_ir import (
    UNKNOWN_LOCATION,
    ConditionalBlock,
    Node,
    Schedule,
    Skippable,
    SourceLocation,
    Step,
)
from ts_trace.errors import ScheduleError

_builder_ids = itertools.count(1)
_scope_ids = itertools.count(1)


@dataclasses.dataclass
class Scope:
    """One open block of the schedule being traced.

    Attributes:
        kind: ``root``, ``domain``, ``worktile`` or ``cond``.
        location: Where the block was opened.
        make: Builds the frozen node from the collected body (None for the root).
        data: Kind-specific facts (the guard of a condition, ``skip_if`` of a work-tile loop).
    """

    kind: str
    location: SourceLocation
    make: Callable[[tuple[Node, ...]], Node] | None = None
    data: dict[str, Any] = dataclasses.field(default_factory=dict)
    body: list[Node] = dataclasses.field(default_factory=list)
    uid: int = dataclasses.field(default_factory=lambda: next(_scope_ids))


class ScheduleBuilder:
    """Collects the steps and blocks of one schedule function while it runs."""

    def __init__(self, name: str, resources: tuple[str, ...], location: SourceLocation) -> None:
        self.name = name
        self.resources = resources
        self.location = location
        self.uid = next(_builder_ids)
        self.scopes: list[Scope] = [Scope("root", location)]
        self.latest: dict[tuple[str, str], int] = {}
        self.work_tile_loops = 0
        self._next_step = 0

    # -- scopes -------------------------------------------------------------------------
    @property
    def current(self) -> Scope:
        """The innermost open block."""
        return self.scopes[-1]

    def scope_path(self) -> tuple[int, ...]:
        """Ids of the open blocks, outermost first."""
        return tuple(s.uid for s in self.scopes)

    def innermost(self, kind: str) -> Scope | None:
        """The innermost open block of ``kind``, or None."""
        for scope in reversed(self.scopes):
            if scope.kind == kind:
                return scope
        return None

    def open_conditions(self) -> list[Scope]:
        """Open condition blocks of the innermost open loop body, outermost first.

        A block opened inside a domain loop that itself sits in a block guards that loop's
        iterations only: the two conditions apply at different levels and do not nest.
        """
        inner: list[Scope] = []
        for scope in self.scopes:
            if scope.kind == "domain":
                inner = []
            elif scope.kind == "cond":
                inner.append(scope)
        return inner

    def push(self, scope: Scope) -> None:
        """Open a block."""
        self.scopes.append(scope)

    def pop(self, scope: Scope) -> None:
        """Close ``scope`` (the innermost block) and append its node to the parent."""
        if self.scopes[-1] is not scope:
            raise ScheduleError(
                "TS-T015",
                "blocks were closed out of order",
                schedule=self.name,
                location=scope.location,
                fix="open blocks only with `with` statements",
            )
        self.scopes.pop()
        assert scope.make is not None
        self.current.body.append(scope.make(tuple(scope.body)))

    # -- steps --------------------------------------------------------------------------
    def record(self, make: Callable[[int], Step]) -> Step:
        """Append a step built by ``make(step_id)`` to the current block."""
        step = make(self._next_step)
        self._next_step += 1
        self.current.body.append(step)
        for out in step.outputs:
            self.latest[(step.resource, out)] = step.id
        return step

    def finalize(self) -> Schedule:
        """The traced schedule (every block must be closed)."""
        if len(self.scopes) != 1:
            raise ScheduleError(
                "TS-T015",
                "the schedule ended with a block still open",
                schedule=self.name,
                location=self.scopes[-1].location,
            )
        return Schedule(self.name, self.resources, tuple(self.scopes[0].body), self.location)


def is_plain_condition(scope: Scope) -> bool:
    """True for condition blocks other than ``skippable()``."""
    return scope.kind == "cond" and not isinstance(scope.data.get("guard"), Skippable)


def condition_node(guard: Any, location: SourceLocation) -> Callable[[tuple[Node, ...]], Node]:
    """A ``make`` function for a condition block."""
    return lambda body: ConditionalBlock(guard, body, location)


_local = threading.local()


def active_stack() -> list[ScheduleBuilder]:
    """Builders of the schedules being traced on this thread, innermost last."""
    stack: list[ScheduleBuilder] | None = getattr(_local, "stack", None)
    if stack is None:
        stack = []
        _local.stack = stack
    return stack


def active_builder(construct: str, location: SourceLocation = UNKNOWN_LOCATION) -> ScheduleBuilder:
    """The innermost active builder; raise TS-T015 when ``construct`` is used outside one."""
    stack = active_stack()
    if not stack:
        raise ScheduleError(
            "TS-T015",
            f"{construct} was used outside a @schedule function",
            location=location,
        )
    return stack[-1]


@contextlib.contextmanager
def activated(builder: ScheduleBuilder) -> Iterator[None]:
    """Make ``builder`` the active one for the duration of a trace."""
    stack = active_stack()
    stack.append(builder)
    try:
        yield
    finally:
        stack.pop()
