"""``@schedule`` and the constructs used inside a schedule function.

A schedule function receives one proxy per resource. Calling ``res.acquire()`` or a work method
on a proxy records a step; ``with domain_loop(...)``, ``with work_tile_loop(...)``,
``with when_true(...)`` and ``with when_false(...)`` open blocks. Plain Python control flow runs
at trace time, so a Python ``for`` loop unrolls into repeated steps. The result is a
:class:`ts_ir.Schedule`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import functools
import inspect
from collections.abc import Callable, Hashable, Iterator
from typing import Any, TypeAlias

from ts_ir import (
    FIRST_ITER,
    LAST_ITER,
    RESERVED_OP_NAMES,
    SKIPPABLE,
    Bound,
    ConstBound,
    DomainLoop,
    DynamicBound,
    Every,
    IterationPredicate,
    Node,
    OpaqueCondition,
    Role,
    Route,
    RuntimeBound,
    Schedule,
    ScheduleStage,
    SourceLocation,
    Step,
    WorkTileLoop,
)
from ts_trace._internal.builder import (
    ScheduleBuilder,
    Scope,
    activated,
    active_builder,
    active_stack,
    condition_node,
    is_plain_condition,
)
from ts_trace._internal.source import definition_location, user_location
from ts_trace.errors import ScheduleError, TraceError
from ts_trace.groups import PipelineGroup
from ts_trace.resources import MemoryResource, WorkMethod, effective_outputs, resource_name

__all__ = [
    "Boolean",
    "DataFlowToken",
    "DomainLoopProxy",
    "ResourceProxy",
    "WorkTileLoopProxy",
    "domain_loop",
    "schedule",
    "skip_predicate",
    "when_false",
    "when_true",
    "work_tile_loop",
]


_I32 = 2**31 - 1  # loop counters, periods and unroll counts are int32 on the GPU


def _schedule_name() -> str:
    stack = active_stack()
    return stack[-1].name if stack else ""


Boolean: TypeAlias = Any
"""A runtime boolean (a CuTe DSL ``Boolean`` when lowered, a Python bool in CPU models)."""


@dataclasses.dataclass(frozen=True, eq=False)
class DataFlowToken:
    """The value a consumer work call returns while tracing.

    Pass it to a later work call (by keyword or positionally) to route the value, or to
    :func:`when_true` / :func:`when_false` to guard a block with it.

    Attributes:
        resource: Name of the resource whose work produced it.
        label: The producing work method.
        output: The task-local output it stands for (None when the call declares none).
        step_id: Id of the producing step.
        scope_path: Blocks open when it was produced.
        builder_id: Identity of the schedule trace that produced it.
    """

    resource: str
    label: str
    output: str | None
    step_id: int
    scope_path: tuple[int, ...]
    builder_id: int

    def __bool__(self) -> bool:
        raise ScheduleError(
            "TS-T014",
            f"the output of {self.resource}.{self.label} is a runtime value; Python `if` cannot "
            "test it while tracing",
            resource=self.resource,
            location=user_location(),
            fix="guard the block with `with when_true(token):` instead of `if token:`",
        )

    def __iter__(self) -> Iterator[Any]:
        raise ScheduleError(
            "TS-T006",
            f"{self.resource}.{self.label} returns a single output; it cannot be unpacked",
            resource=self.resource,
            location=user_location(),
            fix="declare several outputs with returns=(a, b) to get a tuple of tokens",
        )

    def describe(self) -> str:
        """``resource.label[output]``."""
        return f"{self.resource}.{self.label}[{self.output}]"


def _check_token(
    builder: ScheduleBuilder, token: DataFlowToken, use: str, location: SourceLocation
) -> str:
    """Validate a token at a use site and return its output name."""
    common: dict[str, Any] = {
        "schedule": builder.name,
        "resource": token.resource,
        "step": use,
        "location": location,
    }
    if token.builder_id != builder.uid:
        raise ScheduleError(
            "TS-T005",
            f"{use} uses the output of {token.resource}.{token.label} from a different "
            "schedule trace; it is not produced in this schedule",
            **common,
        )
    if token.output is None:
        raise ScheduleError(
            "TS-T006",
            f"{use} uses the result of {token.resource}.{token.label}, which declares no output",
            **common,
            fix=f"declare it: @consumer_work(returns=...) on {token.label}",
        )
    if builder.latest.get((token.resource, token.output)) != token.step_id:
        raise ScheduleError(
            "TS-T003",
            f"{use} uses `{token.output}` from {token.resource}.{token.label} (step "
            f"#{token.step_id}), but a later call overwrote that output before this use",
            **common,
        )
    path = builder.scope_path()
    if path[: len(token.scope_path)] != token.scope_path:
        raise ScheduleError(
            "TS-T004",
            f"{use} uses `{token.output}` from {token.resource}.{token.label}, which was "
            "produced inside a block that has ended (it may not have run)",
            **common,
        )
    return token.output


class _PipelineOp:
    __slots__ = ("_proxy", "_stage")

    def __init__(self, proxy: ResourceProxy, stage: ScheduleStage) -> None:
        self._proxy = proxy
        self._stage = stage

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        builder, name = self._proxy._ts_builder, self._proxy._ts_name
        location = user_location()
        if args or kwargs:
            raise ScheduleError(
                "TS-T017",
                f"{name}.{self._stage.op_name}() takes no arguments",
                schedule=builder.name,
                resource=name,
                location=location,
                fix=f"call {name}.{self._stage.op_name}()",
            )
        stage = self._stage
        resource = self._proxy._ts_resource
        if resource.is_work_queue and resource.pipeline_config is None:
            # A work queue without a pipeline (the static scheduler) hands out tiles without
            # barriers: its wait / release around the per-tile step are bookkeeping, as in the
            # reference's schedules, and stand for no barrier operation.
            return
        builder.record(lambda i: Step(i, name, stage, stage.op_name, location=location))


class _WorkCall:
    __slots__ = ("_method", "_proxy")

    def __init__(self, proxy: ResourceProxy, method: WorkMethod) -> None:
        self._proxy = proxy
        self._method = method

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        proxy, method = self._proxy, self._method
        builder, name = proxy._ts_builder, proxy._ts_name
        location = user_location()
        use = f"{name}.{method.label}(...)"
        common: dict[str, Any] = {"schedule": builder.name, "resource": name, "location": location}
        info = method.info
        kwargs = self._bind_positional(args, kwargs, use, common)
        inputs: list[Route] = []
        constants: list[tuple[str, object]] = []
        for arg, value in sorted(kwargs.items()):
            if not info.accepts_any_keyword and arg not in info.parameters:
                close = difflib.get_close_matches(arg, info.parameters, n=1)
                hint = f"; did you mean `{close[0]}`?" if close else ""
                raise ScheduleError(
                    "TS-T017",
                    f"{use} has no parameter `{arg}`{hint}",
                    step=use,
                    **common,
                    fix=f"{method.label} takes: {', '.join(info.parameters) or 'no arguments'}",
                )
            if isinstance(value, DataFlowToken):
                output = _check_token(builder, value, use, location)
                inputs.append(Route(arg, value.step_id, output))
            elif isinstance(value, (tuple, list)) and any(
                isinstance(v, DataFlowToken) for v in value
            ):
                raise ScheduleError(
                    "TS-T006",
                    f"{use}: `{arg}` holds several tokens; route each output to its own parameter",
                    step=use,
                    **common,
                )
            else:
                constants.append((arg, value))
        outputs = self._outputs(builder, location)
        role_aux = info.attrs.is_auxiliary()
        if info.role is Role.PRODUCER:
            stage = ScheduleStage.ProducerAuxWork if role_aux else ScheduleStage.ProducerWork
        else:
            stage = ScheduleStage.ConsumerAuxWork if role_aux else ScheduleStage.ConsumerWork
        step = builder.record(
            lambda i: Step(
                i,
                name,
                stage,
                method.label,
                info.attrs,
                tuple(inputs),
                outputs,
                tuple(constants),
                location,
            )
        )
        if info.role is Role.PRODUCER:
            return None
        path = builder.scope_path()
        tokens = [
            DataFlowToken(name, method.label, out, step.id, path, builder.uid) for out in outputs
        ]
        if not tokens:
            return DataFlowToken(name, method.label, None, step.id, path, builder.uid)
        return tokens[0] if len(tokens) == 1 else tuple(tokens)

    def _bind_positional(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], use: str, common: dict[str, Any]
    ) -> dict[str, Any]:
        """Bind positional arguments to the method's parameters after ``stage_info``, in order.

        As a Python call would: ``ring.write(x, scale=2)`` passes ``x`` as the first parameter.
        """
        if not args:
            return kwargs
        positional = self._method.info.positional
        label = self._method.label
        if len(args) > len(positional):
            raise ScheduleError(
                "TS-T017",
                f"{use} takes {len(positional)} positional argument"
                f"{'' if len(positional) == 1 else 's'} after stage_info but {len(args)} "
                f"{'was' if len(args) == 1 else 'were'} given",
                step=use,
                **common,
                fix=f"{label} takes: {', '.join(self._method.info.parameters) or 'no arguments'}"
                " (TS supplies stage_info)",
            )
        bound = dict(zip(positional, args, strict=False))
        twice = sorted(set(bound) & set(kwargs))
        if twice:
            raise ScheduleError(
                "TS-T017",
                f"{use} got multiple values for `{twice[0]}` (positionally and by keyword)",
                step=use,
                **common,
                fix=f"pass `{twice[0]}` once",
            )
        return {**bound, **kwargs}

    def _outputs(self, builder: ScheduleBuilder, location: SourceLocation) -> tuple[str, ...]:
        method, resource = self._method, self._proxy._ts_resource
        slots = resource.task_local_variables()
        for out in method.outputs:
            if out not in slots:
                known = ", ".join(sorted(slots)) or "none"
                raise ScheduleError(
                    "TS-T019",
                    f"{type(resource).__name__}.{method.label} declares returns={out!r}, but "
                    f"the resource has no task-local variable `{out}` (it has: {known})",
                    schedule=builder.name,
                    resource=self._proxy._ts_name,
                    location=method.location,
                )
        return effective_outputs(resource, method)


class ResourceProxy:
    """The stand-in for a resource inside a schedule function.

    Only pipeline operations (``acquire``, ``try_acquire``, ``commit``, ``wait``,
    ``try_wait``, ``release``) and the resource's named work methods are available; every
    call records a step.
    """

    __slots__ = ("_ts_builder", "_ts_name", "_ts_resource")

    def __init__(self, resource: MemoryResource, builder: ScheduleBuilder) -> None:
        self._ts_resource = resource
        self._ts_builder = builder
        self._ts_name = resource_name(resource)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        if attr in RESERVED_OP_NAMES:
            return _PipelineOp(self, ScheduleStage.from_op_name(attr))
        if isinstance(self._ts_resource, PipelineGroup):  # `group.member` is the member
            member = self._ts_resource.member(attr)
            if member is not None:
                return ResourceProxy(member, self._ts_builder)
        cls = type(self._ts_resource)
        label = getattr(self._ts_resource, "ts_work_label", lambda a: a)(attr)
        method = cls.work_methods().get(label)
        if method is not None:
            return _WorkCall(self, method)
        close = cls.suggest_work(attr)
        hint = f"; did you mean `{close}`?" if close else ""
        known = ", ".join(sorted(cls.work_methods())) or "none"
        raise ScheduleError(
            "TS-T002",
            f"{cls.__name__} has no work method `{attr}`{hint}",
            schedule=self._ts_builder.name,
            resource=self._ts_name,
            location=user_location(),
            fix=f"work methods of {cls.__name__}: {known}; pipeline operations: "
            + ", ".join(sorted(RESERVED_OP_NAMES)),
        )

    def __repr__(self) -> str:
        return f"<ResourceProxy {self._ts_name}>"


def schedule(fn: Callable[..., None]) -> Callable[..., Schedule]:
    """Decorate a schedule function; calling the result traces it into a :class:`Schedule`.

    Args:
        fn: A function whose parameters are resources. Its body calls pipeline operations and
            work methods on them inside ``domain_loop`` / ``work_tile_loop`` / condition blocks.

    Returns:
        A function that takes the resources (``MemoryResource`` instances) and returns the
        traced :class:`ts_ir.Schedule`.

    Example:
        >>> from ts_trace import MemoryResource, producer_work, schedule, domain_loop
        >>> class Out(MemoryResource):
        ...     @producer_work
        ...     def store(self, stage_info):
        ...         pass
        >>> @schedule
        ... def writer(out):
        ...     with domain_loop(4):
        ...         out.store()
        >>> [s.label for s in writer(Out(name="out")).steps()]
        ['store']
    """
    if not callable(fn) or isinstance(fn, type):
        raise ScheduleError(
            "TS-T022",
            f"@schedule decorates a function, got {fn!r:.60} ({type(fn).__name__})",
            location=user_location(),
            fix="write `@schedule` on the line above `def my_schedule(res_a, res_b):`",
        )
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        raise ScheduleError(
            "TS-T022",
            f"@schedule cannot read the parameters of {fn!r:.60}",
            location=user_location(),
            fix="decorate a plain Python function whose parameters are the resources",
        ) from None
    location = definition_location(fn)
    fn_name = getattr(fn, "__name__", type(fn).__name__)
    stars: dict[Any, str] = {
        inspect.Parameter.VAR_POSITIONAL: "*",
        inspect.Parameter.VAR_KEYWORD: "**",
    }
    shown = (
        f"{fn_name}({', '.join(stars.get(p.kind, '') + p.name for p in sig.parameters.values())})"
    )

    @functools.wraps(fn)
    def trace(*args: Any, **kwargs: Any) -> Schedule:
        call_site = user_location()
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as err:
            raise ScheduleError(
                "TS-T016",
                f"schedule `{shown}` cannot be called with these arguments: {err}",
                schedule=fn_name,
                location=call_site,
                fix=f"pass one MemoryResource per parameter: {shown}",
            ) from None
        # (parameter label, resource) in call order; *args / **kwargs parameters contribute
        # one entry per resource they collect.
        flat: list[tuple[str, object]] = []
        for param, value in bound.arguments.items():
            kind = sig.parameters[param].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                flat.extend((f"{param}[{i}]", v) for i, v in enumerate(value))
            elif kind is inspect.Parameter.VAR_KEYWORD:
                flat.extend((f"{param}[{k!r}]", v) for k, v in value.items())
            else:
                flat.append((param, value))
        names: dict[str, MemoryResource] = {}
        for label, value in flat:
            if not isinstance(value, MemoryResource):
                raise ScheduleError(
                    "TS-T016",
                    f"argument `{label}` of schedule `{fn_name}` is {value!r:.60}, not a "
                    "MemoryResource",
                    schedule=fn_name,
                    location=call_site,
                )
            rname = resource_name(value)
            if names.get(rname, value) is not value:
                raise ScheduleError(
                    "TS-T016",
                    f"two different resources passed to `{fn_name}` are both named `{rname}`",
                    schedule=fn_name,
                    resource=rname,
                    location=call_site,
                    fix="give every resource a unique name=...",
                )
            names[rname] = value
        order = tuple(resource_name(v) for _, v in flat if isinstance(v, MemoryResource))
        builder = ScheduleBuilder(fn_name, order, location)

        def proxy(value: Any, kind: Any) -> Any:
            if kind is inspect.Parameter.VAR_POSITIONAL:
                return tuple(ResourceProxy(v, builder) for v in value)
            if kind is inspect.Parameter.VAR_KEYWORD:
                return {k: ResourceProxy(v, builder) for k, v in value.items()}
            return ResourceProxy(value, builder)

        for param, value in list(bound.arguments.items()):
            bound.arguments[param] = proxy(value, sig.parameters[param].kind)
        try:
            with activated(builder):
                fn(*bound.args, **bound.kwargs)
        except TraceError as err:
            # The message carries the user's line; internal frames only add noise.
            raise err.with_traceback(None) from None
        return builder.finalize()

    return trace


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
        if not -_I32 - 1 <= value <= _I32:
            raise ScheduleError(
                "TS-T012",
                f"domain_loop {what} bound {value} does not fit in int32 (the loop counter's type)",
                **common,
                fix=f"use bounds in [{-_I32 - 1}, {_I32}]",
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
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= _I32:
                loc = user_location()
                raise ScheduleError(
                    "TS-T021",
                    f"loop.every({period!r:.40}, start={start!r:.40}): {name} must be an int in "
                    f"[{low}, {_I32}], got {value!r:.40} ({type(value).__name__})",
                    schedule=_schedule_name(),
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
        isinstance(unroll, bool) or not isinstance(unroll, int) or not 1 <= unroll <= _I32
    ):
        raise ScheduleError(
            "TS-T012",
            f"domain_loop unroll={unroll!r:.40} must be an int in [1, {_I32}] or None",
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
    output = _check_token(builder, cond, use, loc)
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
