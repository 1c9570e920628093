"""``MemoryResource``: the declaration side of a TS resource.

A resource is a named piece of memory (global tensor, SMEM stage buffer, accumulator, work
queue) with named producer and consumer work methods and, optionally, a pipeline. This module
holds only what tracing and planning need; the pipeline objects and runtime state live in the
code generator.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Protocol

from ts_ir import RESERVED_OP_NAMES, PipelineSpec, Role, SourceLocation, WorkAttr
from ts_trace._internal.source import definition_location, user_location
from ts_trace.errors import ResourceDeclarationError
from ts_trace.task_local import TaskLocalVariable, bind_task_local_variables, is_task_local_field
from ts_trace.work import WorkInfo, get_work_info

__all__ = [
    "RESERVED_WORK_NAMES",
    "MemoryResource",
    "ValueTree",
    "WorkMethod",
    "effective_outputs",
    "register_value_tree",
    "resource_name",
]

RESERVED_WORK_NAMES: frozenset[str] = RESERVED_OP_NAMES | frozenset(
    {"producer_work", "consumer_work", "producer_aux_work", "consumer_aux_work"}
)
"""Names a work method cannot have, i.e. the pipeline operations and the default work hooks."""


class ValueTree(Protocol):
    """How a resource's runtime fields become DSL values and back (the code generator's adapter).

    The CuTe DSL carries an object through a runtime ``if`` or loop inside a work method (e.g.
    ``if cond: self.acc = ...``) by flattening it to MLIR values and rebuilding it after the
    region. Tracing knows nothing about the DSL, so the code generator registers this adapter.
    """

    def extract(self, resource: MemoryResource) -> list[Any]:
        """The MLIR values of ``resource``'s runtime fields, in field order."""
        ...

    def rebuild(self, resource: MemoryResource, values: list[Any]) -> MemoryResource:
        """Set ``resource``'s runtime fields from ``values`` (in place) and return it."""
        ...


_value_tree: list[ValueTree] = []


def register_value_tree(tree: ValueTree) -> None:
    """Install the DSL adapter that flattens resources (called by the code generator)."""
    _value_tree[:] = [tree]


def _tree(resource: MemoryResource) -> ValueTree:
    if not _value_tree:
        raise TypeError(
            f"resource `{resource_name(resource)}` is used as a DSL value, but no code "
            "generator is loaded (import ts_codegen first)"
        )
    return _value_tree[0]


@dataclasses.dataclass(frozen=True)
class WorkMethod:
    """A named work method of a resource class, with its outputs resolved to slot names.

    Attributes:
        label: The method name.
        info: What the decorator recorded.
        outputs: Names of the task-local fields the method writes, in return order.
        location: Where the method is defined.
    """

    label: str
    info: WorkInfo
    outputs: tuple[str, ...]
    location: SourceLocation

    @property
    def role(self) -> Role:
        """Producer or consumer side."""
        return self.info.role

    @property
    def attrs(self) -> WorkAttr:
        """Verification-visible attributes."""
        return self.info.attrs


def _resolve_output(
    cls_name: str, label: str, spec: object, namespace: Mapping[str, Any], inherited: set[str]
) -> str:
    if isinstance(spec, str):
        return spec
    assert isinstance(spec, dataclasses.Field)
    if spec.name:
        return spec.name
    for attr, value in namespace.items():
        if value is spec:
            return attr
    raise ResourceDeclarationError(
        "TS-T019",
        f"{cls_name}.{label}: returns= names a field that is not declared on {cls_name}",
        resource=cls_name,
        fix="declare the slot on the class as `x: TaskLocalVariable = "
        "TaskLocalVariable.uninitialized()` and pass returns=x"
        + (f" (known slots: {', '.join(sorted(inherited))})" if inherited else ""),
    )


class _ResourceMeta(type):
    """Collects work methods at class creation and keeps resource identity hashing.

    Resources are dictionary keys in the dependency graph, so every subclass gets identity
    ``__eq__``/``__hash__`` injected before ``@dataclass`` runs (which would otherwise make
    them unhashable).
    """

    def __new__(
        mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any
    ) -> _ResourceMeta:
        namespace.setdefault("__eq__", object.__eq__)
        namespace.setdefault("__hash__", object.__hash__)
        cls = super().__new__(mcls, name, bases, namespace, **kwargs)
        registry: dict[str, WorkMethod] = {}
        for base in reversed(cls.__mro__[1:]):
            # Follow the MRO attribute by attribute: a plain override in a base removes the
            # work that the base's own bases declared under that name.
            own = base.__dict__.get("_ts_work_registry", {})
            for attr in vars(base):
                if attr in own:
                    registry[attr] = own[attr]
                else:
                    registry.pop(attr, None)
        inherited = {k for b in cls.__mro__[1:] for k in getattr(b, "__dataclass_fields__", {})}
        for attr, value in namespace.items():
            info = get_work_info(value)
            if info is None:
                registry.pop(attr, None)
                continue
            location = definition_location(info.function)
            if attr in RESERVED_WORK_NAMES:
                raise ResourceDeclarationError(
                    "TS-T001",
                    f"{name}.{attr} uses a reserved name as a work method",
                    resource=name,
                    location=location,
                    fix=f"rename {attr}; {', '.join(sorted(RESERVED_WORK_NAMES))} are "
                    "pipeline operations or default hooks",
                )
            outputs = tuple(
                _resolve_output(name, attr, spec, namespace, inherited) for spec in info.returns
            )
            if outputs and info.role is Role.PRODUCER:
                raise ResourceDeclarationError(
                    "TS-T019",
                    f"producer work {name}.{attr} cannot declare outputs",
                    resource=name,
                    location=location,
                )
            registry[attr] = WorkMethod(attr, info, outputs, location)
        cls._ts_work_registry = MappingProxyType(registry)  # type: ignore[attr-defined]
        return cls

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        # Every resource is created here: check the arguments against the constructor and the
        # base fields' types, at the user's line (TS-T022), before the plan carries them on.
        sig = _init_signature(cls)
        if sig is not None:
            try:
                sig.bind(None, *args, **kwargs)
            except TypeError as err:
                raise ResourceDeclarationError(
                    "TS-T022",
                    f"{cls.__name__}(...): {err}",
                    resource=cls.__name__,
                    location=user_location(),
                    fix=f"create it with the fields {cls.__name__} declares, by keyword: "
                    f"{cls.__name__}{_shown(sig)}",
                ) from None
        resource = super().__call__(*args, **kwargs)
        _check_base_fields(resource)
        return resource

    def __getattr__(cls, attr: str) -> Any:
        # Task-local fields have no class attribute (no default); return the Field so that
        # `returns=MyResource.slot` works after the class body too.
        for klass in cls.__mro__:
            fields = getattr(klass, "__dataclass_fields__", None) or {}
            if attr in fields and is_task_local_field(fields[attr]):
                return fields[attr]
        raise AttributeError(f"type object {cls.__name__!r} has no attribute {attr!r}")


_SIGNATURES: dict[type, inspect.Signature | None] = {}


def _init_signature(cls: type) -> inspect.Signature | None:
    """The signature of ``cls.__init__`` (with ``self``), or None when it cannot be read."""
    if cls not in _SIGNATURES:
        try:
            _SIGNATURES[cls] = inspect.signature(cls.__init__)  # type: ignore[misc]
        except (TypeError, ValueError):
            _SIGNATURES[cls] = None
    return _SIGNATURES[cls]


def _shown(sig: inspect.Signature) -> str:
    params = [p for p in list(sig.parameters.values())[1:] if p.kind is not p.VAR_KEYWORD]
    return (
        "(" + ", ".join(p.name + ("=..." if p.kind is p.KEYWORD_ONLY else "") for p in params) + ")"
    )


def _is_pipeline(value: object) -> bool:
    """A pipeline description: None, a PipelineSpec, or a PipelineConfig-like object."""
    if value is None or isinstance(value, PipelineSpec):
        return True
    if callable(getattr(value, "to_spec", None)):
        return True
    # Read field by field when the plan is built (TS-T020 names a missing or wrong field).
    return any(hasattr(value, f) for f in ("pipeline_type", "num_stages", "num_bytes"))


def _check_base_fields(resource: MemoryResource) -> None:
    cls_name = type(resource).__name__
    name = resource.__dict__.get("name", "")
    problems = []
    if not isinstance(name, str):
        problems.append(("name", name, "a str (unique in the kernel; '' means the class name)"))
    barrier = resource.__dict__.get("is_barrier", False)
    if not isinstance(barrier, bool):
        problems.append(("is_barrier", barrier, "a bool"))
    pipeline = resource.__dict__.get("pipeline_config")
    if not _is_pipeline(pipeline):
        problems.append(
            (
                "pipeline_config",
                pipeline,
                "a PipelineConfig (from a factory), a PipelineSpec or None",
            )
        )
    if problems:
        field, value, expected = problems[0]
        raise ResourceDeclarationError(
            "TS-T022",
            f"{cls_name}({field}={value!r:.60}): {field} must be {expected}, got "
            f"{type(value).__name__}",
            resource=name if isinstance(name, str) and name else cls_name,
            location=user_location(),
            fix=f"pass {field}= {expected}",
        )


@dataclasses.dataclass(kw_only=True)
class MemoryResource(metaclass=_ResourceMeta):
    """Base class of every TS resource.

    Subclass it (usually as a ``@dataclasses.dataclass(kw_only=True)``), add fields for the
    tensors or buffers the resource wraps, and decorate methods with ``@producer_work`` /
    ``@consumer_work``. Instances hash and compare by identity.

    Attributes:
        name: Unique name within the kernel ("" means: the class name).
        is_barrier: True for pure barrier resources that carry no payload.
        pipeline_config: The resource's pipeline (a ``PipelineConfig`` of the runtime, or a
            :class:`ts_ir.PipelineSpec`), or None for a resource without barriers.
    """

    name: str = ""
    is_barrier: bool = False
    pipeline_config: Any = None

    is_work_queue: ClassVar[bool] = False
    """True on work-queue resources (usable in ``work_tile_loop``)."""

    _ts_work_registry: ClassVar[Mapping[str, WorkMethod]] = MappingProxyType({})

    @classmethod
    def work_methods(cls) -> Mapping[str, WorkMethod]:
        """The named work methods of this class, by label."""
        return cls._ts_work_registry

    @classmethod
    def suggest_work(cls, label: str) -> str | None:
        """The closest known work label to ``label``, for did-you-mean hints."""
        match = difflib.get_close_matches(label, list(cls._ts_work_registry), n=1)
        return match[0] if match else None

    def task_local_variables(self) -> dict[str, TaskLocalVariable]:
        """Bind and return this resource's task-local variables by field name."""
        return bind_task_local_variables(self)

    def get_smem_requirements(self) -> list[Any]:
        """SMEM regions this resource needs (objects with name, size_bytes, alignment...)."""
        return []

    def get_tmem_requirements(self) -> list[Any]:
        """TMEM blocks this resource owns (``TmemAllocation`` objects); none unless overridden.

        As in the reference, ``TmemAllocator.add_resource`` of a resource without TMEM adds
        nothing (a program may add every resource to both allocators).
        """
        return []

    def ts_work_label(self, attr: str) -> str:
        """The work method a schedule's ``resource.<attr>(...)`` records: ``attr`` itself.

        A resource whose step under one name depends on its configuration overrides it (a
        dynamic work queue reads the reference's ``get_and_advance_work_tile`` as its
        ``read_next_tile``): the step is then recorded, verified and lowered as that method.
        """
        return attr

    # A resource is a DSL value inside its work methods: the DSL carries ``self`` through a
    # runtime ``if`` or loop that assigns to its fields. Fields annotated ``Constexpr``, the TS
    # fields above and values without MLIR values (strings, configs, Python objects) stay as they
    # are; everything else (tensors, pointers, arrays, DSL numbers) is carried.
    def __extract_mlir_values__(self) -> list[Any]:
        return _tree(self).extract(self)

    def __new_from_mlir_values__(self, values: list[Any]) -> MemoryResource:
        return _tree(self).rebuild(self, list(values))


def resource_name(resource: MemoryResource) -> str:
    """The resource's name, or its class name when the name is empty."""
    return resource.name or type(resource).__name__


def effective_outputs(resource: MemoryResource, method: WorkMethod) -> tuple[str, ...]:
    """The task-local outputs a call of ``method`` on ``resource`` writes.

    The declared ``returns=``; a consumer without it, on a resource with exactly one task-local
    variable, writes that variable.
    """
    if method.outputs or method.role is not Role.CONSUMER:
        return method.outputs
    slots = resource.task_local_variables()
    return (next(iter(slots)),) if len(slots) == 1 else ()
