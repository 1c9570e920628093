"""The blocks a schedule opens: ``domain_loop``, ``work_tile_loop``, ``when_true`` / ``when_false``.

Each is a context manager that pushes a scope on the active trace (see ``schedule_builder``);
the scope becomes a loop or condition node of the :class:`ts_ir.Schedule` when it closes.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Hashable, Iterator
from typing import Any

from ts_ir import (
    FIRST_ITER,
    LAST_ITER,
    SKIPPABLE,
    Bound,
    ConstBound,
    DomainLoop,
    DynamicBound,
    Every,
    IterationPredicate,
    Node,
    OpaqueCondition,
    RuntimeBound,
    SourceLocation,
    WorkTileLoop,
)
from ts_trace._internal.builder import (
    ScheduleBuilder,
    Scope,
    active_builder,
    condition_node,
    is_plain_condition,
)
from ts_trace._internal.source import user_location
from ts_trace.errors import ScheduleError
from ts_trace.tokens import INT32_MAX, Boolean, DataFlowToken, check_token, schedule_name

__all__ = [
    "DomainLoopProxy",
    "WorkTileLoopProxy",
    "domain_loop",
    "skip_predicate",
    "when_false",
    "when_true",
    "work_tile_loop",
]


def _reject_plain_non_int(value: object, what: str, common: dict[str, Any]) -> None:
    """TS-T012 for plain Python values that are not integers (2.5, None, [4], "8").

    A runtime bound is a DSL integer or a named placeholder; a float, None, a container or a
    string holding a number is a mistake the kernel would otherwise trace silently.
    """
    numeric_text = isinstance(value, str) and not value.isidentifier()
    plain = (float, complex, bytes, bytearray, list, tuple, dict, set, frozenset, range)
    if value is None or numeric_text or isinstance(value, plain):
        raise ScheduleError(
            "TS-T012",
            f"domain_loop {what} bound is {value!r} ({type(value).__name__}); bounds are ints, "
            "runtime integers or a Task method",
            **common,
            fix="pass an int (e.g. domain_loop(8)), a runtime integer or MyTask.get_domain",
        )


def _bound(value: object, what: str, builder: ScheduleBuilder, loc: SourceLocation) -> Bound:
    common: dict[str, Any] = {"schedule": builder.name, "location": loc}
    if isinstance(value, (bool, DataFlowToken)):
        raise ScheduleError(
            "TS-T012",
            f"domain_loop {what} bound is {value!r}; bounds are ints, runtime integers or a "
            "Task method",
            **common,
            fix="compute per-tile bounds in a Task method and pass MyTask.get_domain",
        )
    if isinstance(value, int):
        if not -INT32_MAX - 1 <= value <= INT32_MAX:
            raise ScheduleError(
                "TS-T012",
                f"domain_loop {what} bound {value} does not fit in int32 (the loop counter's type)",
                **common,
                fix=f"use bounds in [{-INT32_MAX - 1}, {INT32_MAX}]",
            )
        return ConstBound(value)
    _reject_plain_non_int(value, what, common)
    if callable(value):
        qualname = getattr(value, "__qualname__", "")
        parts = qualname.split(".")
        params = []
        if inspect.isfunction(value):
            params = list(inspect.signature(value).parameters)
        ok = (
            inspect.isfunction(value)
            and len(parts) >= 2
            and parts[-2] != "<locals>"
            and parts[-1] != "<lambda>"
            and params[:1] == ["self"]
            and len(params) == 2
        )
        if not ok:
            raise ScheduleError(
                "TS-T013",
                f"domain_loop {what} bound {qualname or value!r} is not a method accessed on "
                "its class (expected `def get_domain(self, work_tile_coord)` passed as "
                "MyTask.get_domain)",
                **common,
            )
        return DynamicBound(qualname)
    return RuntimeBound(type(value).__name__, value)


class DomainLoopProxy:
    """What ``with domain_loop(...) as loop`` yields: opens iteration-predicate blocks."""

    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    def first_iter(self) -> contextlib.AbstractContextManager[None]:
        """A block that runs on the loop's first iteration only."""
        return self._predicate(FIRST_ITER, "first_iter()")

    def last_iter(self) -> contextlib.AbstractContextManager[None]:
        """A block that runs on the loop's last iteration only."""
        return self._predicate(LAST_ITER, "last_iter()")

    def every(self, period: int, *, start: int = 0) -> contextlib.AbstractContextManager[None]:
        """A block that runs on iterations ``start, start + period, ...``.

        Raises:
            ScheduleError: ``TS-T021`` when ``period`` is not an int >= 1 or ``start`` not an
                int >= 0 (a bool is not an int here), or either exceeds int32.
        """
        for name, value, low in (("period", period, 1), ("start", start, 0)):
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not low <= value <= INT32_MAX
            ):
                loc = user_location()
                raise ScheduleError(
                    "TS-T021",
                    f"loop.every({period!r:.40}, start={start!r:.40}): {name} must be an int in "
                    f"[{low}, {INT32_MAX}], got {value!r:.40} ({type(value).__name__})",
                    schedule=schedule_name(),
                    location=loc,
                )
        return self._predicate(Every(period, start), f"every({period}, start={start})")

    @contextlib.contextmanager
    def _predicate(self, guard: IterationPredicate, what: str) -> Iterator[None]:
        loc = user_location()
        builder = active_builder(f"loop.{what}", loc)
        if builder.innermost("domain") is not self._scope:
            raise ScheduleError(
                "TS-T008",
                f"loop.{what} was used outside its own domain loop (or inside a nested one)",
                schedule=builder.name,
                location=loc,
            )
        with _condition(builder, guard, loc):
            yield


@contextlib.contextmanager
def domain_loop(
    *bounds: object | Callable[..., object],
    unroll: int | None = None,
) -> Iterator[DomainLoopProxy]:
    """Open a ``range``-like loop over the work tile's iteration space.

    ``domain_loop(end)``, ``domain_loop(start, end)`` or ``domain_loop(start, end, step)``.
    A bound is an int, a runtime integer (a DSL value computed in the kernel), or a task method
    accessed on the class (``MyTask.get_domain``) that the runtime calls as
    ``(self, work_tile_coord)`` for every work tile.

    Args:
        *bounds: 1 to 3 range-style bounds.
        unroll: Unroll count (an int >= 1); None keeps the loop rolled (as 1 does).

    Yields:
        A :class:`DomainLoopProxy` with ``first_iter()``, ``last_iter()`` and ``every()``.
    """
    loc = user_location()
    builder = active_builder("domain_loop()", loc)
    if not 1 <= len(bounds) <= 3:
        raise ScheduleError(
            "TS-T012",
            f"domain_loop takes 1 to 3 bounds, got {len(bounds)}",
            schedule=builder.name,
            location=loc,
        )
    if unroll is not None and (
        isinstance(unroll, bool) or not isinstance(unroll, int) or not 1 <= unroll <= INT32_MAX
    ):
        raise ScheduleError(
            "TS-T012",
            f"domain_loop unroll={unroll!r:.40} must be an int in [1, {INT32_MAX}] or None",
            schedule=builder.name,
            location=loc,
        )
    raw = (0, bounds[0], 1) if len(bounds) == 1 else (*bounds, 1)[:3]
    names = ("start", "end", "step")
    start, end, step = (_bound(v, n, builder, loc) for v, n in zip(raw, names, strict=True))
    if isinstance(step, ConstBound) and step.value == 0:
        raise ScheduleError(
            "TS-T012", "domain_loop step must not be 0", schedule=builder.name, location=loc
        )

    def make(body: tuple[Node, ...]) -> Node:
        return DomainLoop(start, end, step, unroll, body, loc)

    scope = Scope("domain", loc, make)
    builder.push(scope)
    yield DomainLoopProxy(scope)
    builder.pop(scope)


class WorkTileLoopProxy:
    """What ``with work_tile_loop(...) as tiles`` yields: opens ``skippable()`` regions."""

    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    @contextlib.contextmanager
    def skippable(self) -> Iterator[None]:
        """A region omitted for work tiles that the loop's ``skip_if`` rejects."""
        loc = user_location()
        builder = active_builder("skippable()", loc)
        if self._scope not in builder.scopes or self._scope.data.get("skip_if") is None:
            why = (
                "outside its work_tile_loop"
                if self._scope not in builder.scopes
                else "in a work_tile_loop without skip_if"
            )
            raise ScheduleError(
                "TS-T011", f"skippable() was used {why}", schedule=builder.name, location=loc
            )
        with _condition(builder, SKIPPABLE, loc):
            yield


_SKIP_PREDICATES: dict[str, Callable[..., Any]] = {}


def skip_predicate(name: str) -> Callable[..., Any] | None:
    """The ``skip_if`` callable last traced under the qualified name ``name`` (or None).

    The IR keeps only the name of a skip predicate; the lowering gets the function back here
    when it is not a method of the work-queue resource.
    """
    return _SKIP_PREDICATES.get(name)


@contextlib.contextmanager
def work_tile_loop(
    wq: object,
    *,
    skip_if: Callable[..., Boolean] | None = None,
) -> Iterator[WorkTileLoopProxy]:
    """Open the persistent loop over the work tiles of the work queue ``wq``.

    Args:
        wq: The work-queue resource (a schedule argument).
        skip_if: Optional predicate ``(work_queue, work_tile) -> Boolean``; tiles it accepts
            skip the ``skippable()`` regions of the body while the queue bookkeeping still runs.

    Yields:
        A :class:`WorkTileLoopProxy` with ``skippable()``.
    """
    # schedule_builder imports this module for its re-exports: import the proxy class late.
    from ts_trace.schedule_builder import ResourceProxy

    loc = user_location()
    builder = active_builder("work_tile_loop()", loc)
    common: dict[str, Any] = {"schedule": builder.name, "location": loc}
    if not isinstance(wq, ResourceProxy) or not type(wq._ts_resource).is_work_queue:
        raise ScheduleError(
            "TS-T007",
            f"work_tile_loop needs a work-queue resource of this schedule, got {wq!r}",
            **common,
            fix="pass the WorkQueue argument of the schedule function",
        )
    if builder.work_tile_loops or len(builder.scopes) != 1:
        why = "a second time" if builder.work_tile_loops else "inside another block"
        raise ScheduleError(
            "TS-T007", f"work_tile_loop was opened {why}", resource=wq._ts_name, **common
        )
    if skip_if is not None and not callable(skip_if):
        raise ScheduleError(
            "TS-T007",
            f"skip_if={skip_if!r} is not callable",
            resource=wq._ts_name,
            **common,
            fix="pass a function (work_queue, work_tile) -> Boolean",
        )
    skip_name = None if skip_if is None else getattr(skip_if, "__qualname__", repr(skip_if))
    if skip_if is not None and skip_name is not None:
        _SKIP_PREDICATES[skip_name] = skip_if
    queue = wq._ts_name

    def make(body: tuple[Node, ...]) -> Node:
        return WorkTileLoop(queue, skip_name, body, loc)

    scope = Scope("worktile", loc, make, {"skip_if": skip_if})
    builder.work_tile_loops += 1
    builder.push(scope)
    yield WorkTileLoopProxy(scope)
    builder.pop(scope)


@contextlib.contextmanager
def _condition(builder: ScheduleBuilder, guard: Any, loc: SourceLocation) -> Iterator[None]:
    outer = builder.open_conditions()
    if outer and (guard is SKIPPABLE or any(is_plain_condition(s) for s in outer)):
        raise ScheduleError(
            "TS-T010",
            f"a `{guard.describe()}` block was opened inside the "
            f"`{outer[-1].data['guard'].describe()}` block opened at line "
            f"{outer[-1].location.line}",
            schedule=builder.name,
            location=loc,
        )
    scope = Scope("cond", loc, condition_node(guard, loc), {"guard": guard})
    builder.push(scope)
    yield
    builder.pop(scope)


def _opaque(
    builder: ScheduleBuilder,
    cond: DataFlowToken,
    key: Hashable | None,
    negated: bool,
    loc: SourceLocation,
) -> OpaqueCondition:
    use = f"{'when_false' if negated else 'when_true'}({cond.describe()})"
    output = check_token(builder, cond, use, loc)
    if key is None:
        key = f"{cond.resource}.{cond.label}.{output}#{cond.step_id}"
    elif not isinstance(key, (str, int)) or isinstance(key, bool):
        key = repr(key)
    return OpaqueCondition(key, negated, cond.resource, cond.label, output)


def _guard_of(cond: object, key: Hashable | None, negated: bool) -> tuple[Any, ScheduleBuilder]:
    loc = user_location()
    name = "when_false" if negated else "when_true"
    builder = active_builder(f"{name}()", loc)
    if isinstance(cond, DataFlowToken):
        return _opaque(builder, cond, key, negated, loc), builder
    if isinstance(cond, IterationPredicate):
        if key is not None:
            raise ScheduleError(
                "TS-T014",
                f"{name}({cond.describe()}, key={key!r}): key= names a runtime condition; an "
                "iteration predicate is decided by the loop count and takes no key",
                schedule=builder.name,
                location=loc,
                fix=f"drop key=: {name}({cond.describe()})",
            )
        if negated:
            raise ScheduleError(
                "TS-T009",
                f"when_false({cond.describe()}): iteration predicates cannot be negated",
                schedule=builder.name,
                location=loc,
            )
        if builder.innermost("domain") is None:
            raise ScheduleError(
                "TS-T008",
                f"when_true({cond.describe()}) is outside every domain_loop",
                schedule=builder.name,
                location=loc,
            )
        return cond, builder
    raise ScheduleError(
        "TS-T014",
        f"{name}({cond!r}): the condition is neither a work-call output nor an iteration "
        "predicate, so it would not be evaluated at run time",
        schedule=builder.name,
        location=loc,
    )


@contextlib.contextmanager
def when_true(cond: object, *, key: Hashable | None = None) -> Iterator[None]:
    """Open a block that runs when ``cond`` is true.

    Args:
        cond: A data-flow token returned by a consumer work call (a runtime condition; the
            stored value is read, the method is not called again), or an iteration predicate
            such as ``Every(2)`` (only inside ``domain_loop``).
        key: Names the runtime condition so blocks (also in other tasks) that test the same
            value are correlated by the verifier. Defaults to the producing call.
    """
    guard, builder = _guard_of(cond, key, negated=False)
    with _condition(builder, guard, user_location()):
        yield


@contextlib.contextmanager
def when_false(cond: object, *, key: Hashable | None = None) -> Iterator[None]:
    """Open a block that runs when the runtime condition ``cond`` is false.

    Only work-call outputs are accepted: the complement of an iteration predicate may not be
    contiguous in the lowered loop.

    Args:
        cond: A data-flow token returned by a consumer work call.
        key: Names the runtime condition (see :func:`when_true`).
    """
    guard, builder = _guard_of(cond, key, negated=True)
    with _condition(builder, guard, user_location()):
        yield
