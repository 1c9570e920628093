"""Assemble a :class:`ts_ir.KernelPlan` from tasks, resources and the dependency graph.

This is what the runtime's ``TaskManager`` does before lowering, minus everything that needs
the CuTe DSL: a kernel can be planned, verified and drawn on a laptop.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from ts_ir import (
    UNKNOWN_LOCATION,
    CooperativeGroupSpec,
    DependencyEdge,
    KernelPlan,
    PipelineGroupSpec,
    PipelineSpec,
    PipelineType,
    ResourceSpec,
    Schedule,
    SignalingThreads,
    SmemAllocationSpec,
    SourceLocation,
    TaskSpec,
    TileSchedulerType,
    WorkMethodSpec,
)
from ts_ir.errors import ArgumentError
from ts_trace._internal.source import definition_location, user_location
from ts_trace.errors import PlanError
from ts_trace.groups import group_of, group_spec
from ts_trace.resources import MemoryResource, effective_outputs, resource_name

__all__ = ["TaskDeclaration", "build_plan", "pipeline_spec_of", "resource_spec_of"]


@dataclasses.dataclass(frozen=True)
class TaskDeclaration:
    """A task as the kernel author declares it, before it becomes a :class:`ts_ir.TaskSpec`.

    Attributes:
        src_resources: Resources the task consumes from.
        dst_resources: Resources the task produces into.
        warp_idx: First warp of the task.
        num_warps: Number of warps.
        schedule: The traced schedule.
        num_registers: ``setmaxnreg`` target, or None.
        name: Task name ("" means: the schedule's name).
        location: Where the declaration was written (filled in automatically).
        run_only_on_cta_id: The CTA rank within its cluster the task runs on (None: every CTA).
    """

    src_resources: Sequence[MemoryResource]
    dst_resources: Sequence[MemoryResource]
    warp_idx: int
    num_warps: int
    schedule: Schedule
    num_registers: int | None = None
    name: str = ""
    location: SourceLocation = dataclasses.field(default_factory=user_location)
    run_only_on_cta_id: int | None = None

    def __post_init__(self) -> None:
        what = f"TaskDeclaration `{self.name}`" if isinstance(self.name, str) else "TaskDeclaration"
        if not isinstance(self.schedule, Schedule):
            raise PlanError(
                "TS-T020",
                f"{what}: schedule={self.schedule!r:.60} is not a traced schedule"
                + _uncalled_hint(self.schedule),
                location=self.location,
                fix="pass the result of calling the @schedule function with the task's "
                "resources: my_schedule(res_a, res_b)",
            )
        for field, value in (("warp_idx", self.warp_idx), ("num_warps", self.num_warps)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise PlanError(
                    "TS-T020",
                    f"{what}: {field}={value!r:.40} must be an int, got {type(value).__name__}",
                    location=self.location,
                    fix=f"pass {field} as a Python int (warp ranges are fixed at compile time)",
                )
        regs = self.num_registers
        if regs is not None and (isinstance(regs, bool) or not isinstance(regs, int)):
            raise PlanError(
                "TS-T020",
                f"{what}: num_registers={regs!r:.40} must be an int or None, got "
                f"{type(regs).__name__}",
                location=self.location,
                fix="pass a multiple of 8 in [24, 256], or None",
            )
        rank = self.run_only_on_cta_id
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 0):
            raise PlanError(
                "TS-T020",
                f"{what}: run_only_on_cta_id={rank!r:.40} must be None or a CTA rank (an int >= 0)",
                location=self.location,
                fix="pass the rank within the cluster, e.g. run_only_on_cta_id=0, or None",
            )
        if not isinstance(self.name, str):
            raise PlanError(
                "TS-T020",
                f"TaskDeclaration: name={self.name!r:.40} must be a str, got "
                f"{type(self.name).__name__}",
                location=self.location,
                fix="pass name='loader' (or '' for the schedule's name)",
            )
        for side in ("src_resources", "dst_resources"):
            value = getattr(self, side)
            if not isinstance(value, (list, tuple)):
                raise PlanError(
                    "TS-T020",
                    f"{what}: {side}={value!r:.40} must be a list of resources, got "
                    f"{type(value).__name__}",
                    location=self.location,
                    fix=f"pass {side}=[res_a, ...] (or [])",
                )


def _uncalled_hint(value: object) -> str:
    """What to say when a schedule function is passed where its traced result belongs."""
    if callable(value) and hasattr(value, "__wrapped__"):
        name = getattr(value, "__name__", "the schedule")
        return f": `{name}` is the @schedule function itself, passed without calling it"
    return f" ({type(value).__name__})"


def _check_build_arguments(
    tasks: object,
    graph: object,
    name: object,
    smem_capacity: object,
    block_warps: object,
) -> None:
    """TS-T020 at the user's line for arguments of the wrong type (before reading them)."""
    problems: list[tuple[str, str]] = []
    if not isinstance(tasks, (list, tuple)):
        problems.append((f"tasks={tasks!r:.40}", "a list of TaskDeclaration"))
    else:
        bad = [t for t in tasks if not isinstance(t, TaskDeclaration)]
        if bad:
            problems.append((f"tasks lists {bad[0]!r:.40}", "a list of TaskDeclaration"))
    if not isinstance(graph, Mapping):
        problems.append(
            (f"resource_dependency_graph={graph!r:.40}", "a dict {downstream: [upstreams...]}")
        )
    else:
        for down, ups in graph.items():
            if not isinstance(ups, (list, tuple, set, frozenset)):
                problems.append(
                    (
                        f"resource_dependency_graph[{down!r:.30}]={ups!r:.30}",
                        "a list of upstream resources",
                    )
                )
                break
    if not isinstance(name, str) or not name:
        problems.append((f"name={name!r:.40}", "a non-empty str"))
    if isinstance(smem_capacity, bool) or not isinstance(smem_capacity, int) or smem_capacity < 0:
        problems.append((f"smem_capacity={smem_capacity!r:.40}", "an int >= 0 (bytes per CTA)"))
    if block_warps is not None and (
        isinstance(block_warps, bool)
        or not isinstance(block_warps, int)
        or not 1 <= block_warps <= MAX_WARPS
    ):
        problems.append((f"block_warps={block_warps!r:.40}", f"None or an int in [1, {MAX_WARPS}]"))
    if problems:
        what, expected = problems[0]
        raise PlanError(
            "TS-T020",
            f"build_plan({what}): expected {expected}",
            location=user_location(),
            fix=f"pass {expected}",
        )


MAX_WARPS = 32
"""Warps in a CTA at most (1024 threads)."""


def _group(group: object, side: str, resource: str) -> CooperativeGroupSpec:
    if isinstance(group, CooperativeGroupSpec):
        return group
    size = getattr(group, "size", None)
    agent = str(getattr(group, "agent", "thread")).lower()
    if not isinstance(size, int):
        raise PlanError(
            "TS-T020",
            f"the {side} group of `{resource}`'s pipeline has no integer size ({group!r})",
            resource=resource,
            fix="build the group as cutlass.pipeline.CooperativeGroup(Agent.Thread, n)",
        )
    return CooperativeGroupSpec("warp" if "warp" in agent else "thread", size)


def pipeline_spec_of(resource: MemoryResource) -> PipelineSpec | None:
    """The resource's pipeline as IR, from a :class:`ts_ir.PipelineSpec` or a PipelineConfig.

    An object with ``to_spec()`` (``ts_runtime.PipelineConfig``) gives its own IR; anything else
    is read by the documented fields (``pipeline_type``, ``num_stages``, ``num_bytes``,
    ``producer_group``, ``consumer_group`` and the signaling fields), so this layer needs no
    CuTe DSL.
    """
    cfg = resource.pipeline_config
    name = resource_name(resource)
    if cfg is None or isinstance(cfg, PipelineSpec):
        return cfg
    to_spec = getattr(cfg, "to_spec", None)
    if callable(to_spec):
        # A ts_runtime.PipelineConfig knows its own IR (e.g. the cluster of its layout).
        spec = to_spec()
        if isinstance(spec, PipelineSpec):
            return spec
    try:
        ptype = cfg.pipeline_type
        ptype = ptype if isinstance(ptype, PipelineType) else PipelineType(str(ptype))
        return PipelineSpec(
            type=ptype,
            stages=int(cfg.num_stages),
            bytes_per_stage=int(cfg.num_bytes),
            producer_group=_group(cfg.producer_group, "producer", name),
            consumer_group=_group(cfg.consumer_group, "consumer", name),
            producer_signaling=getattr(cfg, "producer_signaling_threads", SignalingThreads.All),
            consumer_signaling=getattr(cfg, "consumer_signaling_threads", SignalingThreads.All),
        )
    except PlanError:
        raise
    except (AttributeError, ValueError, TypeError) as err:
        raise PlanError(
            "TS-T020",
            f"the pipeline_config of `{name}` cannot be read: "
            f"{err.detail if isinstance(err, ArgumentError) else err}",
            resource=name,
            fix="build it with a PipelineConfig factory or as a ts_ir.PipelineSpec",
        ) from None


def _smem_specs(resource: MemoryResource) -> tuple[SmemAllocationSpec, ...]:
    specs = []
    for alloc in resource.get_smem_requirements():
        if isinstance(alloc, SmemAllocationSpec):
            specs.append(alloc)
            continue
        dtype = getattr(alloc, "dtype", None)
        count = int(getattr(alloc, "count", 1))
        size = int(getattr(alloc, "size_bytes", 0))
        if size == 0 and dtype is not None and hasattr(dtype, "width"):
            size = count * int(dtype.width) // 8
        dtype_name = "" if dtype is None else getattr(dtype, "__name__", str(dtype))
        specs.append(
            SmemAllocationSpec(
                alloc.name, size, int(getattr(alloc, "alignment", 128)), dtype_name, count
            )
        )
    return tuple(specs)


def resource_spec_of(resource: MemoryResource) -> ResourceSpec:
    """The IR description of a resource."""
    cls = type(resource)
    work = tuple(
        WorkMethodSpec(m.label, m.role, m.attrs, effective_outputs(resource, m), m.info.parameters)
        for m in cls.work_methods().values()
    )
    return ResourceSpec(
        name=resource_name(resource),
        kind=cls.__name__,
        pipeline=pipeline_spec_of(resource),
        smem=_smem_specs(resource),
        work=work,
        is_work_queue=cls.is_work_queue,
        is_barrier=bool(resource.is_barrier),
        location=definition_location(cls),
        scheduler=_scheduler_of(resource) if cls.is_work_queue else None,
    )


def _scheduler_of(queue: MemoryResource) -> TileSchedulerType | None:
    """A work queue's scheduler, read from its ``tile_scheduler_config`` (None: not known).

    Read by duck typing, like ``pipeline_config``: the runtime's ``WorkQueue`` holds a config
    whose ``tile_scheduler_type`` says it; a declaration without the runtime may hold the
    :class:`ts_ir.TileSchedulerType` itself.
    """
    cfg = getattr(queue, "tile_scheduler_config", None)
    kind = cfg if isinstance(cfg, TileSchedulerType) else getattr(cfg, "tile_scheduler_type", None)
    return kind if isinstance(kind, TileSchedulerType) else None


def _collect_resources(
    tasks: Sequence[TaskDeclaration],
    graph: Mapping[MemoryResource, Sequence[MemoryResource]],
    extra: Iterable[MemoryResource],
) -> dict[str, MemoryResource]:
    found: dict[str, MemoryResource] = {}

    def add(res: object, where: str, loc: SourceLocation) -> None:
        if not isinstance(res, MemoryResource):
            raise PlanError(
                "TS-T020", f"{where} lists {res!r}, which is not a MemoryResource", location=loc
            )
        name = resource_name(res)
        if found.setdefault(name, res) is not res:
            raise PlanError(
                "TS-T020",
                f"two different resources are named `{name}` ({where})",
                resource=name,
                location=loc,
                fix="give every resource a unique name=...",
            )

    for t in tasks:
        for res in (*t.src_resources, *t.dst_resources):
            add(res, f"task `{t.name or t.schedule.name}`", t.location)
    for down, ups in graph.items():
        for res in (down, *ups):
            add(res, "the dependency graph", UNKNOWN_LOCATION)
    for res in extra:
        add(res, "extra_resources", UNKNOWN_LOCATION)
    return found


def build_plan(
    tasks: Sequence[TaskDeclaration],
    resource_dependency_graph: Mapping[MemoryResource, Sequence[MemoryResource]],
    *,
    name: str = "kernel",
    extra_resources: Iterable[MemoryResource] = (),
    smem_alias_groups: Sequence[Sequence[Sequence[str]]] = (),
    smem_capacity: int = 232448,
    block_warps: int | None = None,
    smem_extra: Sequence[SmemAllocationSpec] = (),
) -> KernelPlan:
    """Assemble the kernel plan.

    Args:
        tasks: The task declarations.
        resource_dependency_graph: ``{downstream: [upstreams...]}``.
        name: Kernel name.
        extra_resources: Resources used by no task (kept in the plan for drawing).
        smem_alias_groups: SMEM alias groups (phases of allocation names).
        smem_capacity: SMEM bytes per CTA.
        block_warps: Warps launched per CTA, when fixed by the caller.
        smem_extra: SMEM allocations no resource declares (they count against the capacity).

    Raises:
        PlanError: Duplicate task or resource names, a schedule that uses a resource the task
            does not list, or a dependency graph or extra_resources entry that is not a
            resource.
    """
    _check_build_arguments(tasks, resource_dependency_graph, name, smem_capacity, block_warps)
    resources = _collect_resources(tasks, resource_dependency_graph, extra_resources)
    groups = _collect_groups(resources)
    task_specs: list[TaskSpec] = []
    seen: set[str] = set()
    for t in tasks:
        tname = t.name or t.schedule.name
        if tname in seen:
            raise PlanError(
                "TS-T020",
                f"two tasks are named `{tname}`",
                location=t.location,
                fix="pass a unique name=... to every task",
            )
        seen.add(tname)
        listed = {resource_name(r) for r in (*t.src_resources, *t.dst_resources)}
        # A group's collapsed steps belong to the tasks that list its members.
        listed |= {g.name for g in groups.values() if listed & set(g.members)}
        for step in t.schedule.steps():
            if step.resource not in listed:
                raise PlanError(
                    "TS-T020",
                    f"task `{tname}` runs {step.describe()} but does not list `{step.resource}` "
                    "among its src_resources or dst_resources",
                    schedule=t.schedule.name,
                    resource=step.resource,
                    step=step.describe(),
                    location=step.location,
                    fix=f"add {step.resource} to the task's src_resources (if it reads it) or "
                    "dst_resources (if it writes it)",
                )
        task_specs.append(
            TaskSpec(
                name=tname,
                warp_start=t.warp_idx,
                num_warps=t.num_warps,
                num_registers=t.num_registers,
                sources=tuple(resource_name(r) for r in t.src_resources),
                destinations=tuple(resource_name(r) for r in t.dst_resources),
                schedule=t.schedule,
                location=t.location,
                cta_rank=t.run_only_on_cta_id,
            )
        )
    edges = tuple(
        DependencyEdge(resource_name(up), resource_name(down))
        for down, ups in resource_dependency_graph.items()
        for up in ups
    )
    return KernelPlan(
        name=name,
        resources=tuple(resource_spec_of(r) for r in resources.values()),
        tasks=tuple(task_specs),
        dependencies=edges,
        smem_alias_groups=tuple(tuple(tuple(p) for p in g) for g in smem_alias_groups),
        smem_capacity=smem_capacity,
        block_warps=block_warps,
        smem_extra=tuple(smem_extra),
        groups=tuple(groups.values()),
    )


def _collect_groups(resources: Mapping[str, MemoryResource]) -> dict[str, PipelineGroupSpec]:
    """The pipeline groups of the plan's resources, by name, in first-member order."""
    found: dict[str, PipelineGroupSpec] = {}
    for res in resources.values():
        group = group_of(res)
        if group is not None and resource_name(group) not in found:
            spec = group_spec(group)
            if spec.name in resources:
                raise PlanError(
                    "TS-T020",
                    f"PipelineGroup `{spec.name}` has the name of a resource",
                    resource=spec.name,
                    location=spec.location,
                    fix="give the group a name of its own",
                )
            found[spec.name] = spec
    return found
