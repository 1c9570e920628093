"""``@schedule`` and the constructs used inside a schedule function.

A schedule function receives one proxy per resource. Calling ``res.acquire()`` or a work method
on a proxy records a step; ``with domain_loop(...)``, ``with work_tile_loop(...)``,
``with when_true(...)`` and ``with when_false(...)`` open blocks. Plain Python control flow runs
at trace time, so a Python ``for`` loop unrolls into repeated steps. The result is a
:class:`ts_ir.Schedule`.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable
from typing import Any

from ts_ir import (
    RESERVED_OP_NAMES,
    SKIP_OP_NAME,
    Role,
    Route,
    Schedule,
    ScheduleStage,
    SourceLocation,
    Step,
)
from ts_trace._internal.builder import (
    ScheduleBuilder,
    activated,
)
from ts_trace._internal.source import definition_location, user_location

# The blocks live in their own module; their names stay importable from here (the
# reference's ``schedule_builder`` exports them).
from ts_trace.blocks import (
    DomainLoopProxy,
    WorkTileLoopProxy,
    domain_loop,
    skip_predicate,
    when_false,
    when_true,
    work_tile_loop,
)
from ts_trace.errors import ScheduleError, TraceError
from ts_trace.groups import PipelineGroup
from ts_trace.resources import MemoryResource, WorkMethod, effective_outputs, resource_name
from ts_trace.tokens import Boolean, DataFlowToken, check_token

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
        if resource.is_work_queue and resource.pipeline_config is None and not stage.is_skip:
            # A work queue without a pipeline (the static scheduler) hands out tiles without
            # barriers: its wait / release around the per-tile step are bookkeeping, as in the
            # reference's schedules, and stand for no barrier operation. A skip (TS's own, not
            # a reference spelling) is recorded, and the verifier refuses it (TS-V108).
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
                output = check_token(builder, value, use, location)
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
        path = builder.scope_path()
        if info.role is Role.PRODUCER:
            # Nothing to route, but a token all the same: passed into another call, it is a
            # typed error at this line rather than a None the DSL refuses in the kernel.
            return DataFlowToken(name, method.label, None, step.id, path, builder.uid, True)
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
    ``try_wait``, ``release``, and TS's ``skip_stage``) and the resource's named work methods
    are available; every call records a step.
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
        if attr == SKIP_OP_NAME:  # not reserved: a work method of that name came first
            return _PipelineOp(self, ScheduleStage.ConsumerSkip)
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
