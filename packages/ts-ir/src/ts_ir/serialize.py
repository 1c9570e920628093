"""JSON round-trip of schedules and kernel plans with a versioned schema.

``from_json(to_json(x)) == x`` holds for every :class:`~ts_ir.schedule.Schedule` and
:class:`~ts_ir.plan.KernelPlan`, with two documented normalisations:

* ``Step.constants`` values that are JSON scalars (int, float, bool, str, None) round-trip
  exactly (non-finite floats are written as ``{"float": "inf"}`` so the output stays strict
  JSON). Any other value is written as ``{"repr": repr(value)}`` and decodes to that string:
  the IR keeps it for display and fingerprinting only.
* ``with_locations=False`` omits source locations; they decode as ``UNKNOWN_LOCATION``.

The top level written by :func:`to_json` is ``{"ir_version": 1, "kind": "schedule" |
"kernel_plan", "data": {...}}``. Bump :data:`IR_VERSION` whenever the shape of ``data``
changes.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ts_ir.enums import (
    PipelineGroupMode,
    PipelineType,
    Role,
    ScheduleStage,
    SignalingThreads,
    TileSchedulerType,
    WorkAttr,
)
from ts_ir.errors import ArgumentError
from ts_ir.groups import PipelineGroupSpec
from ts_ir.guards import (
    FIRST_ITER,
    LAST_ITER,
    SKIPPABLE,
    BlockGuard,
    Every,
    FirstIteration,
    LastIteration,
    OpaqueCondition,
    Skippable,
)
from ts_ir.plan import (
    CooperativeGroupSpec,
    DependencyEdge,
    KernelPlan,
    PipelineSpec,
    ResourceSpec,
    SmemAllocationSpec,
    TaskSpec,
    WorkMethodSpec,
)
from ts_ir.schedule import (
    UNKNOWN_LOCATION,
    Bound,
    ConditionalBlock,
    ConstBound,
    DomainLoop,
    DynamicBound,
    Node,
    Route,
    RuntimeBound,
    Schedule,
    SourceLocation,
    Step,
    WorkTileLoop,
)
from ts_ir.tmem import TmemAllocationSpec

__all__ = [
    "IR_VERSION",
    "IRFormatError",
    "from_json",
    "plan_from_dict",
    "plan_to_dict",
    "schedule_from_dict",
    "schedule_to_dict",
    "to_json",
]

IR_VERSION = 1
"""Version of the JSON schema written by this module."""

_T = TypeVar("_T")


class IRFormatError(ValueError):
    """The data is not valid IR: the message names the offending path (``$.body[2].stage``)."""


# --------------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------------


def _location_to_dict(loc: SourceLocation) -> dict[str, Any]:
    return {"file": loc.file, "line": loc.line, "text": loc.text, "function": loc.function}


def _with_location(d: dict[str, Any], loc: SourceLocation, with_locations: bool) -> dict[str, Any]:
    # Unknown locations are left out so that they cost nothing in the common synthetic case.
    if with_locations and loc != UNKNOWN_LOCATION:
        d["location"] = _location_to_dict(loc)
    return d


def _constant_to_json(value: object) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    return {"repr": repr(value)}


def _bound_to_dict(bound: Bound, path: str) -> dict[str, Any]:
    if isinstance(bound, ConstBound):
        return {"kind": "const", "value": bound.value}
    if isinstance(bound, RuntimeBound):
        return {"kind": "runtime", "name": bound.name}
    if isinstance(bound, DynamicBound):
        return {"kind": "dynamic", "getter": bound.getter}
    raise IRFormatError(f"{path}: unknown loop bound {bound!r}")


def _guard_to_dict(guard: BlockGuard, path: str) -> dict[str, Any]:
    if isinstance(guard, Every):
        return {"kind": "every", "period": guard.period, "start": guard.start}
    if isinstance(guard, FirstIteration):
        return {"kind": "first_iter"}
    if isinstance(guard, LastIteration):
        return {"kind": "last_iter"}
    if isinstance(guard, Skippable):
        return {"kind": "skippable"}
    if isinstance(guard, OpaqueCondition):
        key = guard.key
        if isinstance(key, bool) or not isinstance(key, (str, int)):
            raise IRFormatError(
                f"{path}.key: an opaque condition key must be a str or int in the IR, got "
                f"{key!r}; the tracer normalises keys before building the IR"
            )
        if guard.resource is not None and not isinstance(guard.resource, str):
            raise IRFormatError(
                f"{path}.resource: must be a resource name (str) or None in the IR, got "
                f"{guard.resource!r}"
            )
        return {
            "kind": "opaque",
            "key": key,
            "negated": guard.negated,
            "resource": guard.resource,
            "method_label": guard.method_label,
            "result_name": guard.result_name,
        }
    raise IRFormatError(f"{path}: guard {guard!r} has no IR encoding")


def _node_to_dict(node: Node, path: str, with_locations: bool) -> dict[str, Any]:
    d: dict[str, Any]
    if isinstance(node, Step):
        d = {
            "node": "step",
            "id": node.id,
            "resource": node.resource,
            "stage": node.stage.value,
            "label": node.label,
            "attrs": int(node.attrs),
            "inputs": [[r.argument, r.source_step, r.output] for r in node.inputs],
            "outputs": list(node.outputs),
            "constants": [[name, _constant_to_json(v)] for name, v in node.constants],
        }
    elif isinstance(node, DomainLoop):
        d = {
            "node": "domain_loop",
            "start": _bound_to_dict(node.start, f"{path}.start"),
            "end": _bound_to_dict(node.end, f"{path}.end"),
            "step": _bound_to_dict(node.step, f"{path}.step"),
            "unroll": node.unroll,
            "body": _body_to_list(node.body, f"{path}.body", with_locations),
        }
    elif isinstance(node, WorkTileLoop):
        d = {
            "node": "work_tile_loop",
            "work_queue": node.work_queue,
            "skip_if": node.skip_if,
            "body": _body_to_list(node.body, f"{path}.body", with_locations),
        }
    elif isinstance(node, ConditionalBlock):
        d = {
            "node": "conditional",
            "guard": _guard_to_dict(node.guard, f"{path}.guard"),
            "body": _body_to_list(node.body, f"{path}.body", with_locations),
        }
    else:
        raise IRFormatError(f"{path}: {node!r} is not a schedule node")
    return _with_location(d, node.location, with_locations)


def _body_to_list(body: tuple[Node, ...], path: str, with_locations: bool) -> list[dict[str, Any]]:
    return [_node_to_dict(n, f"{path}[{i}]", with_locations) for i, n in enumerate(body)]


def schedule_to_dict(schedule: Schedule, *, with_locations: bool = True) -> dict[str, Any]:
    """Encode a schedule as JSON-compatible data (deterministic for equal schedules).

    Args:
        schedule: The schedule.
        with_locations: Include source locations (leave them out for fingerprints).

    Raises:
        IRFormatError: The schedule holds a value the IR cannot encode (an opaque condition
            key that is not a str or int, an unknown guard or bound type).
    """
    d: dict[str, Any] = {
        "name": schedule.name,
        "resources": list(schedule.resources),
        "body": _body_to_list(schedule.body, "$.body", with_locations),
    }
    return _with_location(d, schedule.location, with_locations)


def _pipeline_to_dict(p: PipelineSpec) -> dict[str, Any]:
    return {
        "type": p.type.value,
        "stages": p.stages,
        "bytes_per_stage": p.bytes_per_stage,
        "producer_group": {"agent": p.producer_group.agent, "size": p.producer_group.size},
        "consumer_group": {"agent": p.consumer_group.agent, "size": p.consumer_group.size},
        "producer_signaling": int(p.producer_signaling),
        "consumer_signaling": int(p.consumer_signaling),
        "cluster_mn": list(p.cluster_mn),
        "interleave": p.interleave,
        **({} if p.strides is None else {"strides": list(p.strides)}),
    }


def _smem_to_dict(s: SmemAllocationSpec) -> dict[str, Any]:
    return {
        "name": s.name,
        "size_bytes": s.size_bytes,
        "alignment": s.alignment,
        "dtype_name": s.dtype_name,
        "count": s.count,
    }


def _resource_to_dict(r: ResourceSpec, with_locations: bool) -> dict[str, Any]:
    d: dict[str, Any] = {
        "name": r.name,
        "kind": r.kind,
        "pipeline": None if r.pipeline is None else _pipeline_to_dict(r.pipeline),
        "smem": [_smem_to_dict(s) for s in r.smem],
        "work": [
            {
                "label": w.label,
                "role": w.role.value,
                "attrs": int(w.attrs),
                "outputs": list(w.outputs),
                "inputs": list(w.inputs),
            }
            for w in r.work
        ],
        "is_work_queue": r.is_work_queue,
        "is_barrier": r.is_barrier,
    }
    if r.scheduler is not None:  # only when set: older plans keep their JSON and fingerprint
        d["scheduler"] = r.scheduler.value
    return _with_location(d, r.location, with_locations)


def plan_to_dict(plan: KernelPlan, *, with_locations: bool = True) -> dict[str, Any]:
    """Encode a kernel plan (including every task's schedule) as JSON-compatible data.

    Raises:
        IRFormatError: A schedule holds a value the IR cannot encode.
    """
    tasks = []
    for t in plan.tasks:
        try:
            schedule = schedule_to_dict(t.schedule, with_locations=with_locations)
        except IRFormatError as exc:
            raise IRFormatError(f"task {t.name!r}: {exc}") from None
        task: dict[str, Any] = {
            "name": t.name,
            "warp_start": t.warp_start,
            "num_warps": t.num_warps,
            "num_registers": t.num_registers,
            "sources": list(t.sources),
            "destinations": list(t.destinations),
            "schedule": schedule,
        }
        if t.cta_rank is not None:  # as with "scheduler": only when set
            task["cta_rank"] = t.cta_rank
        tasks.append(_with_location(task, t.location, with_locations))
    out: dict[str, Any] = {
        "name": plan.name,
        "resources": [_resource_to_dict(r, with_locations) for r in plan.resources],
        "tasks": tasks,
        "dependencies": [[e.upstream, e.downstream] for e in plan.dependencies],
        "smem_alias_groups": [[list(phase) for phase in g] for g in plan.smem_alias_groups],
        "smem_capacity": plan.smem_capacity,
        "block_warps": plan.block_warps,
    }
    if plan.smem_extra:
        # Only when present, so that plans without them keep their JSON (and fingerprints).
        out["smem_extra"] = [_smem_to_dict(s) for s in plan.smem_extra]
    if plan.tmem:
        out["tmem"] = [dataclasses.asdict(t) for t in plan.tmem]
    if plan.tmem_capacity is not None:
        out["tmem_capacity"] = plan.tmem_capacity
    if plan.groups:
        out["groups"] = [
            _with_location(
                {"name": g.name, "mode": g.mode.value, "members": list(g.members)},
                g.location,
                with_locations,
            )
            for g in plan.groups
        ]
    return out


def to_json(obj: Schedule | KernelPlan, *, indent: int | None = 2) -> str:
    """Serialize a schedule or kernel plan to versioned JSON.

    Raises:
        IRFormatError: ``obj`` holds a value the IR cannot encode.
        TypeError: ``obj`` is neither a Schedule nor a KernelPlan.
    """
    if isinstance(obj, Schedule):
        kind, data = "schedule", schedule_to_dict(obj)
    elif isinstance(obj, KernelPlan):
        kind, data = "kernel_plan", plan_to_dict(obj)
    else:
        raise TypeError(f"to_json expects a Schedule or KernelPlan, got {type(obj).__name__}")
    return json.dumps(
        {"ir_version": IR_VERSION, "kind": kind, "data": data}, indent=indent, allow_nan=False
    )


# --------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _check(value: object, kind: type[_T], path: str) -> _T:
    # bool is an int subclass; a JSON true where a number belongs is a format error.
    if isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool):
        return value
    raise IRFormatError(f"{path}: expected {kind.__name__}, got {_type_name(value)} {value!r}")


def _field(d: Mapping[str, Any], key: str, kind: type[_T], path: str) -> _T:
    if key not in d:
        raise IRFormatError(f"{path}.{key}: missing required field")
    return _check(d[key], kind, f"{path}.{key}")


def _opt_field(d: Mapping[str, Any], key: str, kind: type[_T], path: str) -> _T | None:
    value = d.get(key)
    return None if value is None else _check(value, kind, f"{path}.{key}")


def _obj(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise IRFormatError(f"{path}: expected an object, got {_type_name(value)}")
    return value


def _list(d: Mapping[str, Any], key: str, path: str) -> list[Any]:
    return _field(d, key, list, path)


def _str_tuple(d: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
    items = _list(d, key, path)
    return tuple(_check(v, str, f"{path}.{key}[{i}]") for i, v in enumerate(items))


def _enum(factory: Callable[[Any], _T], value: object, path: str) -> _T:
    try:
        return factory(value)
    except (ValueError, TypeError) as exc:
        raise IRFormatError(f"{path}: {value!r} is not valid ({_complaint(exc)})") from None


def _build(factory: Callable[..., _T], path: str, **kwargs: Any) -> _T:
    # Constructors validate their own invariants; report their complaint with the IR path.
    try:
        return factory(**kwargs)
    except (ValueError, TypeError) as exc:
        raise IRFormatError(f"{path}: {_complaint(exc)}") from None


def _complaint(exc: Exception) -> str:
    # A constructor's typed error carries the caller's line (here: this module); keep its text.
    return exc.detail if isinstance(exc, ArgumentError) else str(exc)


def _work_attr(value: object, path: str) -> WorkAttr:
    attr = _enum(WorkAttr, _check(value, int, path), path)
    if not WorkAttr.is_valid_combination(attr):
        raise IRFormatError(f"{path}: {int(attr)} is not a valid WorkAttr combination")
    return attr


def _signaling(value: object, path: str) -> SignalingThreads:
    flags = _enum(SignalingThreads, _check(value, int, path), path)
    if not SignalingThreads.is_valid_combination(flags):
        raise IRFormatError(f"{path}: {int(flags)} is not a valid SignalingThreads combination")
    return flags


def _location(d: Mapping[str, Any], path: str) -> SourceLocation:
    if d.get("location") is None:
        return UNKNOWN_LOCATION
    p = f"{path}.location"
    loc = _obj(d["location"], p)
    return SourceLocation(
        file=_field(loc, "file", str, p),
        line=_field(loc, "line", int, p),
        text=_field(loc, "text", str, p),
        function=_field(loc, "function", str, p),
    )


def _constant_from_json(value: object, path: str) -> object:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    obj = _obj(value, path)
    if set(obj) == {"repr"}:
        return _check(obj["repr"], str, f"{path}.repr")
    if set(obj) == {"float"}:
        text = _check(obj["float"], str, f"{path}.float")
        if text not in ("inf", "-inf", "nan"):
            raise IRFormatError(f"{path}.float: expected 'inf', '-inf' or 'nan', got {text!r}")
        return float(text)
    raise IRFormatError(f"{path}: expected a JSON scalar, {{'repr': str}} or {{'float': str}}")


def _bound_from_dict(value: object, path: str) -> Bound:
    d = _obj(value, path)
    kind = _field(d, "kind", str, path)
    if kind == "const":
        return ConstBound(_field(d, "value", int, path))
    if kind == "runtime":
        return RuntimeBound(_field(d, "name", str, path))
    if kind == "dynamic":
        return DynamicBound(_field(d, "getter", str, path))
    raise IRFormatError(f"{path}.kind: unknown bound kind {kind!r}")


def _guard_from_dict(value: object, path: str) -> BlockGuard:
    d = _obj(value, path)
    kind = _field(d, "kind", str, path)
    if kind == "every":
        return _build(
            Every, path, period=_field(d, "period", int, path), start=_field(d, "start", int, path)
        )
    if kind == "first_iter":
        return FIRST_ITER
    if kind == "last_iter":
        return LAST_ITER
    if kind == "skippable":
        return SKIPPABLE
    if kind == "opaque":
        if "key" not in d:
            raise IRFormatError(f"{path}.key: missing required field")
        key = d["key"]
        if isinstance(key, bool) or not isinstance(key, (str, int)):
            raise IRFormatError(f"{path}.key: expected str or int, got {_type_name(key)}")
        return OpaqueCondition(
            key=key,
            negated=_field(d, "negated", bool, path),
            resource=_opt_field(d, "resource", str, path),
            method_label=_opt_field(d, "method_label", str, path),
            result_name=_opt_field(d, "result_name", str, path),
        )
    raise IRFormatError(f"{path}.kind: unknown guard kind {kind!r}")


def _route_from_json(value: object, path: str) -> Route:
    items = _check(value, list, path)
    if len(items) != 3:
        raise IRFormatError(f"{path}: expected [argument, source_step, output]")
    return Route(
        argument=_check(items[0], str, f"{path}[0]"),
        source_step=_check(items[1], int, f"{path}[1]"),
        output=_check(items[2], str, f"{path}[2]"),
    )


def _step_from_dict(d: Mapping[str, Any], path: str) -> Step:
    constants = []
    for i, pair in enumerate(_list(d, "constants", path)):
        p = f"{path}.constants[{i}]"
        items = _check(pair, list, p)
        if len(items) != 2:
            raise IRFormatError(f"{p}: expected [name, value]")
        constants.append(
            (_check(items[0], str, f"{p}[0]"), _constant_from_json(items[1], f"{p}[1]"))
        )
    return Step(
        id=_field(d, "id", int, path),
        resource=_field(d, "resource", str, path),
        stage=_enum(ScheduleStage, _field(d, "stage", str, path), f"{path}.stage"),
        label=_field(d, "label", str, path),
        attrs=_work_attr(d.get("attrs", 0), f"{path}.attrs"),
        inputs=tuple(
            _route_from_json(r, f"{path}.inputs[{i}]")
            for i, r in enumerate(_list(d, "inputs", path))
        ),
        outputs=_str_tuple(d, "outputs", path),
        constants=tuple(constants),
        location=_location(d, path),
    )


def _node_from_dict(value: object, path: str) -> Node:
    d = _obj(value, path)
    kind = _field(d, "node", str, path)
    if kind == "step":
        return _step_from_dict(d, path)
    if kind == "domain_loop":
        return DomainLoop(
            start=_bound_from_dict(d.get("start"), f"{path}.start"),
            end=_bound_from_dict(d.get("end"), f"{path}.end"),
            step=_bound_from_dict(d.get("step"), f"{path}.step"),
            unroll=_opt_field(d, "unroll", int, path),
            body=_body_from_list(d, path),
            location=_location(d, path),
        )
    if kind == "work_tile_loop":
        return WorkTileLoop(
            work_queue=_field(d, "work_queue", str, path),
            skip_if=_opt_field(d, "skip_if", str, path),
            body=_body_from_list(d, path),
            location=_location(d, path),
        )
    if kind == "conditional":
        return ConditionalBlock(
            guard=_guard_from_dict(d.get("guard"), f"{path}.guard"),
            body=_body_from_list(d, path),
            location=_location(d, path),
        )
    raise IRFormatError(f"{path}.node: unknown node kind {kind!r}")


def _body_from_list(d: Mapping[str, Any], path: str) -> tuple[Node, ...]:
    return tuple(
        _node_from_dict(n, f"{path}.body[{i}]") for i, n in enumerate(_list(d, "body", path))
    )


def _schedule_from(value: object, path: str) -> Schedule:
    d = _obj(value, path)
    return Schedule(
        name=_field(d, "name", str, path),
        resources=_str_tuple(d, "resources", path),
        body=_body_from_list(d, path),
        location=_location(d, path),
    )


def schedule_from_dict(data: Mapping[str, Any]) -> Schedule:
    """Decode the output of :func:`schedule_to_dict`.

    Raises:
        IRFormatError: A field is missing, has the wrong type or an invalid value.
    """
    return _schedule_from(data, "$")


def _group_from_dict(value: object, path: str) -> CooperativeGroupSpec:
    d = _obj(value, path)
    return _build(
        CooperativeGroupSpec,
        path,
        agent=_field(d, "agent", str, path),
        size=_field(d, "size", int, path),
    )


def _pipeline_from_dict(value: object, path: str) -> PipelineSpec:
    d = _obj(value, path)
    return _build(
        PipelineSpec,
        path,
        type=_enum(PipelineType, _field(d, "type", str, path), f"{path}.type"),
        stages=_field(d, "stages", int, path),
        bytes_per_stage=_field(d, "bytes_per_stage", int, path),
        producer_group=_group_from_dict(d.get("producer_group"), f"{path}.producer_group"),
        consumer_group=_group_from_dict(d.get("consumer_group"), f"{path}.consumer_group"),
        producer_signaling=_signaling(d.get("producer_signaling", 1), f"{path}.producer_signaling"),
        consumer_signaling=_signaling(d.get("consumer_signaling", 1), f"{path}.consumer_signaling"),
        cluster_mn=_cluster(d.get("cluster_mn", [1, 1]), f"{path}.cluster_mn"),
        interleave=_field(d, "interleave", int, path) if "interleave" in d else 1,
        strides=_strides(d.get("strides"), f"{path}.strides"),
    )


def _strides(value: object, path: str) -> tuple[int, int, int, int] | None:
    """Per-role strides: absent (None) or a list of four ints."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 4:
        raise IRFormatError(f"{path}: expected a list of four strides")
    a, b, c, d = (_check(v, int, f"{path}[{i}]") for i, v in enumerate(value))
    return (a, b, c, d)


def _cluster(value: object, path: str) -> tuple[int, int]:
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise IRFormatError(f"{path}: expected two ints, got {value!r}")
    return (value[0], value[1])


def _smem_from_dict(value: object, path: str) -> SmemAllocationSpec:
    d = _obj(value, path)
    return _build(
        SmemAllocationSpec,
        path,
        name=_field(d, "name", str, path),
        size_bytes=_field(d, "size_bytes", int, path),
        alignment=_field(d, "alignment", int, path),
        dtype_name=_field(d, "dtype_name", str, path),
        count=_field(d, "count", int, path),
    )


def _tmem_from_dict(value: object, path: str) -> TmemAllocationSpec:
    d = _obj(value, path)
    return _build(
        TmemAllocationSpec,
        path,
        name=_field(d, "name", str, path),
        columns=_field(d, "columns", int, path),
        offset=_field(d, "offset", int, path),
        owner=_field(d, "owner", str, path),
    )


def _work_from_dict(value: object, path: str) -> WorkMethodSpec:
    d = _obj(value, path)
    return WorkMethodSpec(
        label=_field(d, "label", str, path),
        role=_enum(Role, _field(d, "role", str, path), f"{path}.role"),
        attrs=_work_attr(d.get("attrs", 0), f"{path}.attrs"),
        outputs=_str_tuple(d, "outputs", path),
        inputs=_str_tuple(d, "inputs", path),
    )


def _resource_from_dict(value: object, path: str) -> ResourceSpec:
    d = _obj(value, path)
    pipeline = d.get("pipeline")
    return ResourceSpec(
        name=_field(d, "name", str, path),
        kind=_field(d, "kind", str, path),
        pipeline=None if pipeline is None else _pipeline_from_dict(pipeline, f"{path}.pipeline"),
        smem=tuple(
            _smem_from_dict(s, f"{path}.smem[{i}]") for i, s in enumerate(_list(d, "smem", path))
        ),
        work=tuple(
            _work_from_dict(w, f"{path}.work[{i}]") for i, w in enumerate(_list(d, "work", path))
        ),
        is_work_queue=_field(d, "is_work_queue", bool, path),
        is_barrier=_field(d, "is_barrier", bool, path),
        location=_location(d, path),
        scheduler=None
        if d.get("scheduler") is None
        else _enum(TileSchedulerType, _field(d, "scheduler", str, path), f"{path}.scheduler"),
    )


def _task_from_dict(value: object, path: str) -> TaskSpec:
    d = _obj(value, path)
    return TaskSpec(
        name=_field(d, "name", str, path),
        warp_start=_field(d, "warp_start", int, path),
        num_warps=_field(d, "num_warps", int, path),
        num_registers=_opt_field(d, "num_registers", int, path),
        sources=_str_tuple(d, "sources", path),
        destinations=_str_tuple(d, "destinations", path),
        schedule=_schedule_from(d.get("schedule"), f"{path}.schedule"),
        location=_location(d, path),
        cta_rank=_opt_field(d, "cta_rank", int, path),
    )


def _edge_from_json(value: object, path: str) -> DependencyEdge:
    items = _check(value, list, path)
    if len(items) != 2:
        raise IRFormatError(f"{path}: expected [upstream, downstream]")
    return DependencyEdge(_check(items[0], str, f"{path}[0]"), _check(items[1], str, f"{path}[1]"))


def _alias_groups(d: Mapping[str, Any], path: str) -> tuple[tuple[tuple[str, ...], ...], ...]:
    groups = []
    for g, group in enumerate(_list(d, "smem_alias_groups", path)):
        gp = f"{path}.smem_alias_groups[{g}]"
        phases = []
        for p, phase in enumerate(_check(group, list, gp)):
            pp = f"{gp}[{p}]"
            items = _check(phase, list, pp)
            phases.append(tuple(_check(n, str, f"{pp}[{i}]") for i, n in enumerate(items)))
        groups.append(tuple(phases))
    return tuple(groups)


def plan_from_dict(data: Mapping[str, Any]) -> KernelPlan:
    """Decode the output of :func:`plan_to_dict`.

    Raises:
        IRFormatError: A field is missing, has the wrong type or an invalid value.
    """
    return _plan_from(data, "$")


def _plan_from(value: object, path: str) -> KernelPlan:
    d = _obj(value, path)
    return KernelPlan(
        name=_field(d, "name", str, path),
        resources=tuple(
            _resource_from_dict(r, f"{path}.resources[{i}]")
            for i, r in enumerate(_list(d, "resources", path))
        ),
        tasks=tuple(
            _task_from_dict(t, f"{path}.tasks[{i}]") for i, t in enumerate(_list(d, "tasks", path))
        ),
        dependencies=tuple(
            _edge_from_json(e, f"{path}.dependencies[{i}]")
            for i, e in enumerate(_list(d, "dependencies", path))
        ),
        smem_alias_groups=_alias_groups(d, path),
        smem_capacity=_field(d, "smem_capacity", int, path),
        block_warps=_opt_field(d, "block_warps", int, path),
        smem_extra=tuple(
            _smem_from_dict(s, f"{path}.smem_extra[{i}]")
            for i, s in enumerate(_check(d.get("smem_extra", []), list, f"{path}.smem_extra"))
        ),
        tmem=tuple(
            _tmem_from_dict(t, f"{path}.tmem[{i}]")
            for i, t in enumerate(_check(d.get("tmem", []), list, f"{path}.tmem"))
        ),
        tmem_capacity=_opt_field(d, "tmem_capacity", int, path),
        groups=tuple(
            _pipeline_group_from_dict(g, f"{path}.groups[{i}]")
            for i, g in enumerate(_check(d.get("groups", []), list, f"{path}.groups"))
        ),
    )


def _pipeline_group_from_dict(value: object, path: str) -> PipelineGroupSpec:
    d = _obj(value, path)
    return PipelineGroupSpec(
        name=_field(d, "name", str, path),
        mode=_enum(PipelineGroupMode, _field(d, "mode", str, path), f"{path}.mode"),
        members=_str_tuple(d, "members", path),
        location=_location(d, path),
    )


def from_json(text: str) -> Schedule | KernelPlan:
    """Parse JSON written by :func:`to_json`.

    Raises:
        IRFormatError: The text is not JSON, its ``ir_version`` differs from
            :data:`IR_VERSION`, its ``kind`` is unknown, or its data is malformed.
    """
    try:
        top = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IRFormatError(f"not valid JSON: {exc}") from None
    d = _obj(top, "$")
    if "ir_version" not in d:
        raise IRFormatError("$.ir_version: missing; this does not look like TS IR JSON")
    version = d["ir_version"]
    if version != IR_VERSION or type(version) is not int:
        raise IRFormatError(
            f"$.ir_version: the data is IR version {version!r} but this ts-ir reads IR version "
            f"{IR_VERSION}; regenerate it with a matching ts-ir"
        )
    kind = _field(d, "kind", str, "$")
    if kind == "schedule":
        return _schedule_from(d.get("data"), "$.data")
    if kind == "kernel_plan":
        return _plan_from(d.get("data"), "$.data")
    raise IRFormatError(f"$.kind: expected 'schedule' or 'kernel_plan', got {kind!r}")
