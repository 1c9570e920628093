"""The ``@producer_work`` and ``@consumer_work`` decorators.

They mark resource methods as named work. They stack outside ``@cute.jit`` and on plain Python
methods alike: the decorated method stays callable exactly as before and only gains a
:class:`WorkInfo` record that the resource class collects into its work registry.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Union, cast

from ts_ir import Role, WorkAttr
from ts_ir.errors import ArgumentError
from ts_trace._internal.source import user_location
from ts_trace.errors import ResourceDeclarationError
from ts_trace.task_local import TaskLocalVariable

__all__ = ["WorkInfo", "consumer_work", "get_work_info", "producer_work"]

ReturnSpec = Union[str, "dataclasses.Field[Any]"]

_ATTR = "__ts_work__"


@dataclasses.dataclass(frozen=True)
class WorkInfo:
    """What a work decorator recorded about one method.

    Attributes:
        role: Producer (writes into the resource) or consumer (reads out of it).
        attrs: Verification-visible attributes.
        returns: Declared outputs as given (slot names or dataclass fields), in order.
        parameters: Keyword parameters of the method after ``self`` and ``stage_info``.
        accepts_any_keyword: True when the method takes ``**kwargs``.
        function: The decorated callable (for example the ``@cute.jit`` object).
        positional: The parameters a schedule may pass positionally, in order (those of
            ``parameters`` before any keyword-only one).
    """

    role: Role
    attrs: WorkAttr
    returns: tuple[ReturnSpec, ...]
    parameters: tuple[str, ...]
    accepts_any_keyword: bool
    function: Callable[..., Any]
    positional: tuple[str, ...] = ()


def get_work_info(obj: object) -> WorkInfo | None:
    """The :class:`WorkInfo` of a decorated method, or None."""
    info = getattr(obj, _ATTR, None)
    return info if isinstance(info, WorkInfo) else None


def _parameters(fn: Callable[..., Any]) -> tuple[tuple[str, ...], bool, tuple[str, ...]]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return (), True, ()
    params = list(sig.parameters.values())
    # Drop self and stage_info: TS supplies both.
    rest = params[2:] if len(params) >= 2 else []
    names = tuple(p.name for p in rest if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
    positional = tuple(p.name for p in rest if p.kind is p.POSITIONAL_OR_KEYWORD)
    any_kw = any(p.kind is p.VAR_KEYWORD for p in params)
    return names, any_kw, positional


def _declaration_error(role: Role, detail: str, fix: str) -> ResourceDeclarationError:
    prefix = "" if detail.startswith("@") else f"@{role.value}_work: "
    return ResourceDeclarationError("TS-T019", prefix + detail, location=user_location(), fix=fix)


def _normalize_returns(returns: object) -> tuple[ReturnSpec, ...]:
    if returns is None:
        return ()
    raw = tuple(returns) if isinstance(returns, (tuple, list)) else (returns,)
    items: list[ReturnSpec] = []
    for item in raw:
        if not isinstance(item, (str, dataclasses.Field)) or item == "":
            raise _declaration_error(
                Role.CONSUMER,
                "returns= takes task-local slot names or fields declared with "
                f"TaskLocalVariable.uninitialized(), got {item!r:.60} ({type(item).__name__})",
                "pass returns=slot (a field `slot: TaskLocalVariable = "
                "TaskLocalVariable.uninitialized()` of the class) or returns=(a, b)",
            )
        items.append(item)
    return tuple(items)


def _check_attrs(attrs: object, role: Role) -> WorkAttr:
    try:
        WorkAttr.validate(attrs, "work_attrs")  # type: ignore[arg-type]
    except ArgumentError as err:
        raise _declaration_error(role, err.detail, err.fix) from None
    return WorkAttr(cast(int, attrs))


def _check_method(method: object, role: Role) -> None:
    if not callable(method) or isinstance(method, type):
        raise _declaration_error(
            role,
            f"@{role.value}_work decorates a method, got {method!r:.60} ({type(method).__name__})",
            f"write @{role.value}_work on the line above `def label(self, stage_info, ...):`, "
            f"or @{role.value}_work(work_attrs=...)",
        )


def _decorate(
    method: Callable[..., Any], role: Role, attrs: WorkAttr, returns: tuple[ReturnSpec, ...]
) -> Callable[..., Any]:
    attrs = _check_attrs(attrs, role)
    _check_method(method, role)
    params, any_kw, positional = _parameters(method)

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return method(*args, **kwargs)

    info = WorkInfo(role, WorkAttr(attrs), returns, params, any_kw, method, positional)
    setattr(wrapper, _ATTR, info)
    return wrapper


# Static checkers see a slot declared in a class body as `x: TaskLocalVariable = ...` even though
# at run time the name holds its dataclasses.Field; the checked signature admits both, while the
# run-time signature stays exactly the documented one.
_TypedReturns = Union[
    str,
    "dataclasses.Field[Any]",
    TaskLocalVariable,
    "tuple[str | dataclasses.Field[Any] | TaskLocalVariable, ...]",
    "list[str | dataclasses.Field[Any] | TaskLocalVariable]",
    None,
]

if TYPE_CHECKING:

    def consumer_work(
        method: Callable[..., Any] | None = None,
        *,
        work_attrs: WorkAttr = WorkAttr.NONE,
        returns: _TypedReturns = None,
    ) -> Callable[..., Any]:
        """Register a method as named consumer work (see the run-time definition)."""
        return _consumer_work(method, work_attrs, returns)

else:

    def consumer_work(
        method: Callable[..., Any] | None = None,
        *,
        work_attrs: WorkAttr = WorkAttr.NONE,
        returns: str
        | dataclasses.Field[Any]
        | tuple[str | dataclasses.Field[Any], ...]
        | list[str | dataclasses.Field[Any]]
        | None = None,
    ) -> Callable[..., Any]:
        """Register a method as named consumer work: it reads data out of its resource.

        The method's Python name is its label. In a schedule, calling it on the resource returns
        data-flow tokens for the declared outputs, which later work calls take as arguments
        (by keyword, or positionally in the order of the method's parameters).

        Args:
            method: The method (bare decorator form); omitted in the factory form.
            work_attrs: Verification-visible attributes; ``WorkAttr.AUXILIARY`` for helper work
                that moves no payload.
            returns: Task-local output slot(s) written by the call, as slot names or the fields
                declared with ``TaskLocalVariable.uninitialized()``, in return order.

        Returns:
            The decorated method, or a decorator in the factory form.

        Example:
            >>> from ts_trace import MemoryResource, consumer_work
            >>> class Gmem(MemoryResource):
            ...     @consumer_work
            ...     def load(self, stage_info):
            ...         return 0
        """
        return _consumer_work(method, work_attrs, returns)


def _consumer_work(
    method: Callable[..., Any] | None, work_attrs: WorkAttr, returns: object
) -> Callable[..., Any]:
    outs = _normalize_returns(returns)
    attrs = _check_attrs(work_attrs, Role.CONSUMER)

    def deco(m: Callable[..., Any]) -> Callable[..., Any]:
        return _decorate(m, Role.CONSUMER, attrs, outs)

    return deco if method is None else deco(method)


def producer_work(
    method: Callable[..., Any] | None = None,
    *,
    work_attrs: WorkAttr = WorkAttr.NONE,
) -> Callable[..., Any]:
    """Register a method as named producer work: it writes data into its resource.

    Producer work has no outputs. Data-flow tokens from earlier consumer work arrive as arguments
    bound to the method's parameters (by keyword, or positionally in parameter order).

    Args:
        method: The method (bare decorator form); omitted in the factory form.
        work_attrs: Verification-visible attributes; ``WorkAttr.AUXILIARY`` for helper work
            that moves no payload.

    Returns:
        The decorated method, or a decorator in the factory form.
    """
    attrs = _check_attrs(work_attrs, Role.PRODUCER)

    def deco(m: Callable[..., Any]) -> Callable[..., Any]:
        return _decorate(m, Role.PRODUCER, attrs, ())

    return deco if method is None else deco(method)
