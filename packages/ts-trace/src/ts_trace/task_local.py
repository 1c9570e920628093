"""Task-local variables: named values owned by a resource that flow between work calls.

A resource declares a slot as a dataclass field::

    @dataclasses.dataclass(kw_only=True)
    class Smem(MemoryResource):
        tile: TaskLocalVariable = TaskLocalVariable.uninitialized()

        def __post_init__(self) -> None:
            self.tile = TaskLocalVariable(dtype="Int32", default=0)

A ``@consumer_work(returns=Smem.tile)`` method then writes the slot, and the schedule routes
the value to later work calls as a data-flow token.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ts_trace._internal.source import user_location
from ts_trace.errors import ResourceDeclarationError

__all__ = ["TaskLocalVariable", "bind_task_local_variables", "is_task_local_field"]

_MARK = "ts_task_local"


class _Missing:
    def __repr__(self) -> str:
        return "<required>"


_MISSING: Any = _Missing()


class TaskLocalVariable:
    """Identity, type and initial value of a value a task carries between work calls.

    Args:
        dtype: Element type of the value (a CuTe DSL numeric type, or its name).
        default: Initial value at the start of every task.
        default_factory: Zero-argument callable giving the initial value (instead of
            ``default``).
        docs: What the value means, for rendering.
        runtime_slot_name: Name of the runtime slot, when it must differ from the field name.

    Raises:
        ResourceDeclarationError: ``TS-T018`` (also a ``TypeError``): ``dtype`` is missing or
            not a type or type name, not exactly one of ``default`` and ``default_factory``
            is given, ``default_factory`` is not callable, or ``docs`` /
            ``runtime_slot_name`` is not a str.
    """

    def __init__(
        self,
        dtype: Any = _MISSING,
        default: Any = _MISSING,
        default_factory: Callable[[], Any] | None = None,
        docs: str | None = None,
        runtime_slot_name: str | None = None,
    ) -> None:
        if dtype is _MISSING:
            _reject("TaskLocalVariable needs dtype=... (the value's element type)")
        if not _is_dtype(dtype):
            _reject(
                f"TaskLocalVariable(dtype={dtype!r:.40}): dtype must be a type (e.g. "
                f"cutlass.Int32) or a type name, got {type(dtype).__name__}"
            )
        has_default = default is not _MISSING
        if has_default == (default_factory is not None):
            _reject("TaskLocalVariable needs exactly one of default=... and default_factory=...")
        if default_factory is not None and not callable(default_factory):
            _reject(
                f"TaskLocalVariable(default_factory={default_factory!r:.40}): default_factory "
                f"must be a zero-argument callable, got {type(default_factory).__name__}"
            )
        for name, value in (("docs", docs), ("runtime_slot_name", runtime_slot_name)):
            if value is not None and (not isinstance(value, str) or not value):
                _reject(
                    f"TaskLocalVariable({name}={value!r:.40}): {name} must be a non-empty str "
                    f"or None, got {type(value).__name__}"
                )
        self.dtype = dtype
        self.default = default
        self.default_factory = default_factory
        self.docs = docs
        self.runtime_slot_name = runtime_slot_name
        self._owner: object | None = None
        self._field_name: str | None = None

    @staticmethod
    def uninitialized() -> Any:
        """The field marker for a task-local slot, assigned a value in ``__post_init__``.

        Returns:
            A :func:`dataclasses.field` that takes no constructor argument. Reading the
            attribute on the resource class returns this field, which ``returns=`` accepts.
        """
        return dataclasses.field(init=False, repr=False, compare=False, metadata={_MARK: True})

    @property
    def owner(self) -> object | None:
        """The resource this variable is bound to (None before binding)."""
        return self._owner

    @property
    def field_name(self) -> str | None:
        """The attribute name on the owner (None before binding)."""
        return self._field_name

    @property
    def slot_name(self) -> str | None:
        """The runtime slot name, which is ``runtime_slot_name`` or else the field name."""
        return self.runtime_slot_name or self._field_name

    def initial_value(self) -> Any:
        """The value the slot holds before any work call writes it."""
        return self.default_factory() if self.default_factory is not None else self.default

    def __repr__(self) -> str:
        name = f"{self._field_name}, " if self._field_name else ""
        return f"TaskLocalVariable({name}dtype={self.dtype!r})"


def _is_dtype(dtype: object) -> bool:
    """A DSL numeric type (a class), a type name, or a DSL type object with a name."""
    if isinstance(dtype, str):
        return bool(dtype.strip())
    if isinstance(dtype, type):
        return True
    if dtype is None or isinstance(dtype, (int, float, complex, bytes, list, tuple, dict, set)):
        return False
    if callable(dtype):  # a function is not a type
        return False
    return hasattr(dtype, "__name__") or hasattr(dtype, "width")


def _reject(detail: str) -> None:
    raise ResourceDeclarationError(
        "TS-T018",
        detail,
        location=user_location(),
        fix="TaskLocalVariable(dtype=cutlass.Int32, default=0) (or dtype='Int32'), assigned in "
        "__post_init__",
    )


def is_task_local_field(f: dataclasses.Field[Any]) -> bool:
    """True for fields declared with :meth:`TaskLocalVariable.uninitialized` or annotated so."""
    if f.metadata.get(_MARK):
        return True
    annotation = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
    return annotation.split(".")[-1] == "TaskLocalVariable"


def bind_task_local_variables(resource: object) -> dict[str, TaskLocalVariable]:
    """Find, check and bind the task-local variables of ``resource``.

    Declared dataclass fields come first (in declaration order), then extra instance
    attributes that hold a :class:`TaskLocalVariable`.

    Returns:
        The variables by field name.

    Raises:
        ResourceDeclarationError: A declared slot was never assigned, or one variable object is
            bound to two fields or two resources.
    """
    found: dict[str, TaskLocalVariable] = {}
    rname = getattr(resource, "name", "") or type(resource).__name__
    fields = dataclasses.fields(resource) if dataclasses.is_dataclass(resource) else ()
    for f in fields:
        if not is_task_local_field(f):
            continue
        value = resource.__dict__.get(f.name, _MISSING)
        if not isinstance(value, TaskLocalVariable):
            raise ResourceDeclarationError(
                "TS-T018",
                f"task-local slot `{f.name}` of {type(resource).__name__} was declared but not "
                f"assigned a TaskLocalVariable (it holds {value!r})",
                resource=rname,
                fix=f"assign it in __post_init__: self.{f.name} = "
                "TaskLocalVariable(dtype=..., default=...)",
            )
        found[f.name] = value
    for attr, value in vars(resource).items():
        if isinstance(value, TaskLocalVariable) and attr not in found:
            found[attr] = value
    for attr, var in found.items():
        if var._owner is not None and (var._owner is not resource or var._field_name != attr):
            raise ResourceDeclarationError(
                "TS-T018",
                f"one TaskLocalVariable object is bound to `{attr}` here and to "
                f"`{var._field_name}` of another resource or field",
                resource=rname,
                fix="create a new TaskLocalVariable(...) for every slot",
            )
        var._owner = resource
        var._field_name = attr
    return found
