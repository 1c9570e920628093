"""Guards of conditional blocks in a schedule tree.

Two families exist. An :class:`IterationPredicate` is decided from the zero-based iteration
count of the enclosing domain loop, so the verifier and the code generator know exactly when it
fires. An :class:`OpaqueCondition` is a runtime boolean produced by a work call; the verifier
explores both of its values.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Hashable, Mapping

from ts_ir.errors import INT32_MAX, ArgumentError, describe_value

__all__ = [
    "FIRST_ITER",
    "LAST_ITER",
    "SKIPPABLE",
    "BlockGuard",
    "Every",
    "FirstIteration",
    "IterationPredicate",
    "LastIteration",
    "OpaqueCondition",
    "Skippable",
    "guard_fires",
    "is_iteration_predicate",
    "is_loop_guard",
    "is_skippable_guard",
]


class BlockGuard:
    """Base class of every guard that can open a conditional block."""

    __slots__ = ()

    def describe(self) -> str:
        """A short human-readable rendering used in tables and messages."""
        return type(self).__name__


class IterationPredicate(BlockGuard, abc.ABC):
    """A guard decidable from the zero-based iteration count of the enclosing domain loop."""

    __slots__ = ()

    @abc.abstractmethod
    def fires(self, iter_idx: int, num_iters: int) -> bool:
        """Return whether the guarded block runs on iteration ``iter_idx`` of ``num_iters``."""


@dataclasses.dataclass(frozen=True)
class Every(IterationPredicate):
    """Fires on iteration counts ``start, start + period, start + 2 * period, ...``.

    Args:
        period: Distance between firing iterations, an int of at least 1.
        start: First firing iteration, an int of at least 0.

    Raises:
        ArgumentError: ``period`` or ``start`` is not an int (a bool is not), ``period < 1``,
            ``start < 0`` or either does not fit in int32 (``TS-I001``; also a ``TypeError``).
    """

    period: int
    start: int = 0

    def __post_init__(self) -> None:
        for field_name, value, low in (("period", self.period, 1), ("start", self.start, 0)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise ArgumentError(
                    f"Every.{field_name}",
                    f"Every.{field_name} must be an int, got {describe_value(value)}",
                    fix=f"pass an int in [{low}, {INT32_MAX}], e.g. Every(2) or Every(2, start=1)",
                )
            if value < low or value > INT32_MAX:
                raise ArgumentError(
                    f"Every.{field_name}",
                    f"Every.{field_name} must be in [{low}, {INT32_MAX}], got {value}",
                    fix=f"pass an int in [{low}, {INT32_MAX}]",
                )

    def fires(self, iter_idx: int, num_iters: int) -> bool:
        """Return whether the guarded block runs on iteration ``iter_idx``."""
        if iter_idx < self.start or iter_idx >= num_iters:
            return False
        return (iter_idx - self.start) % self.period == 0

    def describe(self) -> str:
        """A short rendering for tables and messages."""
        return f"every({self.period}, start={self.start})"


@dataclasses.dataclass(frozen=True)
class FirstIteration(IterationPredicate):
    """Fires on the first iteration only (never when the loop runs zero times)."""

    def fires(self, iter_idx: int, num_iters: int) -> bool:
        """Return whether ``iter_idx`` is the first of ``num_iters`` iterations."""
        return num_iters > 0 and iter_idx == 0

    def describe(self) -> str:
        """A short rendering for tables and messages."""
        return "first_iter"


@dataclasses.dataclass(frozen=True)
class LastIteration(IterationPredicate):
    """Fires on the last iteration only (never when the loop runs zero times)."""

    def fires(self, iter_idx: int, num_iters: int) -> bool:
        """Return whether ``iter_idx`` is the last of ``num_iters`` iterations."""
        return num_iters > 0 and iter_idx == num_iters - 1

    def describe(self) -> str:
        """A short rendering for tables and messages."""
        return "last_iter"


FIRST_ITER = FirstIteration()
"""Guard of a ``first_iter()`` block."""

LAST_ITER = LastIteration()
"""Guard of a ``last_iter()`` block."""


@dataclasses.dataclass(frozen=True)
class Skippable(BlockGuard):
    """Guard of a ``skippable()`` region: omitted for work tiles the ``skip_if`` rejects."""

    def describe(self) -> str:
        """A short rendering for tables and messages."""
        return "skippable"


SKIPPABLE = Skippable()
"""The guard of every ``skippable()`` region."""


@dataclasses.dataclass(frozen=True)
class OpaqueCondition(BlockGuard):
    """A guard backed by a runtime value produced by a work call.

    Args:
        key: Correlates the same runtime boolean across blocks and tasks.
        negated: True for ``when_false`` blocks.
        resource: The resource (in the IR: its name) whose work call produced the value.
        method_label: The producing work method's label.
        result_name: The task-local output of that call holding the value.
    """

    key: Hashable
    negated: bool = False
    resource: object | None = None
    method_label: str | None = None
    result_name: str | None = None

    def __post_init__(self) -> None:
        try:
            hash(self.key)
        except TypeError:
            raise ArgumentError(
                "OpaqueCondition.key",
                f"the key must be hashable, got {describe_value(self.key)}",
                fix="name the condition with a str or an int",
            ) from None
        if not isinstance(self.negated, bool):
            raise ArgumentError(
                "OpaqueCondition.negated",
                f"negated must be a bool, got {describe_value(self.negated)}",
                fix="pass negated=True or False",
            )
        for name in ("method_label", "result_name"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ArgumentError(
                    f"OpaqueCondition.{name}",
                    f"{name} must be a str or None, got {describe_value(value)}",
                    fix=f"pass {name} as the name of the work method / output, or leave it None",
                )

    def describe(self) -> str:
        """A short rendering for tables and messages."""
        prefix = "not " if self.negated else ""
        if self.method_label is None:
            return f"{prefix}{self.key}"
        res = getattr(self.resource, "name", self.resource)
        result = "" if self.result_name is None else f"[{self.result_name}]"
        return f"{prefix}{res}.{self.method_label}{result}"


def is_iteration_predicate(guard: object) -> bool:
    """Return True when ``guard`` is decided by the iteration count."""
    return isinstance(guard, IterationPredicate)


def guard_fires(
    guard: BlockGuard,
    iter_idx: int,
    num_iters: int,
    *,
    opaque_assignment: Mapping[Hashable, bool] | None = None,
    skipped: bool = False,
) -> bool:
    """Evaluate any guard at one iteration.

    Args:
        guard: The guard to evaluate.
        iter_idx: Zero-based iteration count of the enclosing domain loop.
        num_iters: Trip count of that loop.
        opaque_assignment: Values of opaque conditions by key (missing keys read False).
        skipped: Whether the current work tile is skipped (for :data:`SKIPPABLE`).
    """
    if isinstance(guard, IterationPredicate):
        return guard.fires(iter_idx, num_iters)
    if isinstance(guard, OpaqueCondition):
        value = bool((opaque_assignment or {}).get(guard.key, False))
        return value != guard.negated
    if isinstance(guard, Skippable):
        return not skipped
    raise TypeError(f"unknown guard {guard!r}")


def is_skippable_guard(guard: object) -> bool:
    """Return True for the guard of a ``skippable()`` region."""
    return isinstance(guard, Skippable)


def is_loop_guard(guard: object) -> bool:
    """Return True for guards that can open a block inside a loop (predicates, conditions)."""
    return isinstance(guard, (IterationPredicate, OpaqueCondition))
