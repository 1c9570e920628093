"""The stages both front doors run: plan the tasks, verify the plan, lower it in the kernel.

:class:`~ts_runtime.staged.Kernel` (TS's staged API) and :class:`~ts_runtime.TaskManager` (the
reference's API) are two ways to call the same three functions:

* :func:`plan_tasks` — the tasks, the dependency graph and the SMEM allocator become a
  :class:`ts_ir.KernelPlan` (every allocation recorded, so the verifier sees the whole SMEM
  budget);
* :func:`verify_plan` — :func:`ts_verify.verify` against the :class:`ts_ir.Target`, with the
  findings a user fixes in the declaration raised as the runtime's typed errors;
* :func:`lower_plan` — ``ts_codegen.emit_tasks`` inside the ``@cute.kernel``.

Every check of the plan is ts-verify's: what the checks need of the Python objects (a task's CTA
gate, a work queue's scheduler) is recorded in the plan by ``ts_trace.build_plan``.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ts_ir import (
    KernelPlan,
    Role,
    SmemAllocationSpec,
    SourceLocation,
    Target,
    TaskSpec,
)
from ts_runtime._arguments import at_line
from ts_runtime.errors import (
    GroupSizeError,
    RuntimeConfigError,
    SmemBudgetError,
    UnsupportedFeatureError,
    UnsupportedOnTarget,
)
from ts_runtime.memory import ResourceContext, SmemAllocation, SmemAllocator
from ts_runtime.pipeline_groups import check_lowerable_groups
from ts_runtime.target import current_target
from ts_runtime.task import Task
from ts_runtime.tmem import TmemDeclaration
from ts_trace import MemoryResource, build_plan, resource_name
from ts_verify import Diagnostic, Report, VerificationError, per_warp_consumer_group, verify

__all__ = [
    "collect_resources",
    "lower_plan",
    "plan_tasks",
    "setup_context",
    "target_of",
    "verify_plan",
]


def target_of(name: str | None = None, smem_capacity: int | None = None) -> Target:
    """The :class:`ts_ir.Target` for ``name`` (default: ``CUTE_DSL_ARCH``, else ``sm_90a``).

    ``smem_capacity`` replaces the hardware's SMEM per CTA (a kernel planned for less).
    """
    return Target.of(name or current_target(), smem_capacity=smem_capacity)


# -- plan ------------------------------------------------------------------------------------------
def collect_resources(
    tasks: Sequence[Task], graph: Mapping[MemoryResource, Sequence[MemoryResource]]
) -> list[MemoryResource]:
    """Every resource of the tasks and the graph, once each, in first-use order."""
    seen: dict[int, MemoryResource] = {}
    for t in tasks:
        for r in t.resources:
            seen.setdefault(id(r), r)
    for down, ups in graph.items():
        for r in (down, *ups):
            seen.setdefault(id(r), r)
    return list(seen.values())


def _uses_side(task: TaskSpec, resource: str, role: Role) -> bool:
    return any(
        s.resource == resource and s.stage.is_pipeline_op and s.stage.role is role
        for s in task.schedule.steps()
    )


def _per_warp_tma_groups(plan: KernelPlan) -> KernelPlan:
    """Read a TMA ring's consumer group counted per warp as the thread count it stands for.

    ``PipelineTmaAsync`` arrives on the empty barrier once per consumer warp and per CTA that
    multicast into the stage, so reference programs size its consumer group as warps x peers
    (4 for a 4-warp consumer, 8 on a 2-CTA cluster); the plan counts threads. Which sizes are
    that spelling is ts-verify's rule (:func:`ts_verify.per_warp_consumer_group`).
    """
    resources = []
    for spec in plan.resources:
        p = spec.pipeline
        if p is not None:
            users = [t for t in plan.tasks if _uses_side(t, spec.name, Role.CONSUMER)]
            group = per_warp_consumer_group(p, users, spec.name)
            if group is not None:
                spec = dataclasses.replace(
                    spec, pipeline=dataclasses.replace(p, consumer_group=group)
                )
        resources.append(spec)
    return dataclasses.replace(plan, resources=tuple(resources))


def plan_tasks(
    tasks: Sequence[Task],
    graph: Mapping[MemoryResource, Sequence[MemoryResource]],
    *,
    target: Target,
    smem_allocator: Any = None,
    name: str = "kernel",
    block_warps: int | None = None,
    tmem: TmemDeclaration | None = None,
    carved: Sequence[SmemAllocationSpec] = (),
) -> KernelPlan:
    """The kernel plan of ``tasks``: schedules, resources, graph, SMEM, TMEM (stage 1).

    An :class:`~ts_runtime.SmemAllocator` is laid out now if needed; its alias groups and the
    allocations no resource declares go into the plan, and so do ``carved`` (SMEM the kernel
    takes itself, e.g. ``KernelContext.smem_tensor``), so that ts-verify judges the whole
    SMEM budget.

    Raises:
        RuntimeConfigError: No tasks, a non-Task or an empty graph.
        ts_trace.PlanError: Inconsistent tasks or graph (duplicate names, unlisted resources).
    """
    tasks = list(tasks)
    if not tasks:
        raise RuntimeConfigError("a kernel needs at least one task")
    for t in tasks:
        if not isinstance(t, Task):
            raise RuntimeConfigError(f"{t!r:.60} is not a Task", fix="build it with Task(...)")
    if not graph:
        raise RuntimeConfigError(
            "the resource dependency graph is empty",
            fix="pass {downstream: [upstreams...]} listing every resource of the tasks",
        )
    alias_groups: tuple[tuple[tuple[str, ...], ...], ...] = ()
    allocations: tuple[SmemAllocation, ...] = ()
    if isinstance(smem_allocator, SmemAllocator):
        if not smem_allocator.is_laid_out:
            smem_allocator.compute_layout(target.smem_capacity)
        alias_groups = smem_allocator.alias_groups_by_name()
        allocations = smem_allocator.allocations
    plan = build_plan(
        [t.declaration() for t in tasks],
        graph,
        name=name,
        smem_alias_groups=alias_groups,
        smem_capacity=target.smem_capacity,
        block_warps=block_warps,
    )
    declared = {a.name for a in plan.iter_smem()}
    extra = (*(a.to_spec() for a in allocations if a.name not in declared), *carved)
    plan = _per_warp_tma_groups(dataclasses.replace(plan, smem_extra=extra))
    if tmem is not None:
        plan = dataclasses.replace(plan, tmem=tmem.specs(), tmem_capacity=tmem.capacity)
    return plan


# -- verify ----------------------------------------------------------------------------------------
def _typed_error(
    plan: KernelPlan,
    d: Diagnostic,
    target: Target,
    lines: Mapping[str, SourceLocation],
    capacity_at: SourceLocation | None = None,
) -> RuntimeConfigError:
    """The runtime's typed error for a finding the user fixes in the declaration."""
    at: SourceLocation | None = d.location or lines.get(d.resource)
    if d.code == "TS-V216":
        pipeline = plan.resource(d.resource).pipeline
        return UnsupportedOnTarget(
            at_line(d.message, at) if at is not None else d.message,
            pipeline_type="" if pipeline is None else pipeline.type.value,
            target=target.name,
            task=d.task,
            resource=d.resource,
            fix=d.fix,
        )
    if d.code == "TS-V203":
        return GroupSizeError(
            at_line(d.message, at) if at is not None else d.message,
            task=d.task,
            resource=d.resource,
            fix=d.fix,
        )
    if d.code in _REFUSED:
        cls = UnsupportedFeatureError if d.code == "TS-V250" else RuntimeConfigError
        return cls(
            at_line(d.message, at) if at is not None else d.message,
            task=d.task,
            resource=d.resource,
            fix=d.fix,
        )
    # TS-V209: the whole kernel is over budget; the user's line is that of the largest
    # allocation where known, else where the kernel is put together. A capacity the caller
    # gave (smem_capacity_bytes) is a number of the user's too, and may be the one to change:
    # its line comes first.
    if capacity_at is not None:
        message = at_line(
            d.message + f"\n  the capacity ({plan.smem_capacity} B) is set at", capacity_at
        )
        if at is not None:
            message = at_line(message + "\n  the largest allocation is declared at", at)
        fix = f"{d.fix}; or pass a larger smem_capacity_bytes"
        return SmemBudgetError(message, task=d.task, resource=d.resource, fix=fix)
    return SmemBudgetError(at_line(d.message, at), task=d.task, resource=d.resource, fix=d.fix)


_REFUSED = ("TS-V250", "TS-V251")
"""What the runtime cannot lower whatever the options: a ring shared across CTA gates (TS-R001,
not lowered), a dynamic queue read with the static step (TS-R005)."""

_TYPED = (*_REFUSED, "TS-V216", "TS-V203", "TS-V209")
"""Codes raised as typed runtime errors, in this order (what cannot be lowered first)."""


_REPORTS: collections.OrderedDict[tuple[Any, KernelPlan, Target], Report] = (
    collections.OrderedDict()
)
_REPORTS_LOCK = threading.Lock()
_REPORTS_KEPT = 64


def _report(plan: KernelPlan, target: Target) -> Report:
    """``verify(plan, target=target)``, once per process for equal plans.

    A kernel's plan is verified when it is planned on the host and again when it is lowered
    (the same plan), and configurations that differ only in what the schedule does not see
    (dtype, a mask, a group size) plan equal kernels: verification is a pure function of the
    plan and the target, so the report is shared. The key holds the verifier function too, so
    a substitute verifier (a test's spy) is always called.
    """
    try:
        key = (verify, plan, target)
        hash(key)
    except TypeError:  # a plan holding an unhashable constant: verified every time
        return verify(plan, target=target)
    with _REPORTS_LOCK:
        hit = _REPORTS.get(key)
        if hit is not None:
            _REPORTS.move_to_end(key)
            return hit
    report = verify(plan, target=target)
    with _REPORTS_LOCK:
        _REPORTS[key] = report
        while len(_REPORTS) > _REPORTS_KEPT:
            _REPORTS.popitem(last=False)
    return report


def verify_plan(
    plan: KernelPlan,
    target: Target,
    *,
    skip_validation: bool = False,
    raise_verification: bool = True,
    stacklevel: int = 2,
    lines: Mapping[str, SourceLocation] | None = None,
    capacity_at: SourceLocation | None = None,
) -> Report:
    """Verify ``plan`` for ``target`` (stage 2): ts-verify's report, typed where it can be.

    A ring shared across CTA gates (TS-V250) raises :class:`UnsupportedFeatureError`; a
    dynamic queue read with the static queue's step (TS-V251) :class:`RuntimeConfigError`; a
    pipeline type the target cannot run (TS-V216) :class:`UnsupportedOnTarget`; a group size
    that contradicts the tasks (TS-V203) :class:`GroupSizeError`; SMEM over budget (TS-V209)
    :class:`SmemBudgetError`. With ``skip_validation`` the last two, and the
    verification errors, are warnings (stacklevel counted from the caller). Any other error
    raises :class:`ts_verify.VerificationError` when ``raise_verification``; otherwise it stays
    in the returned report. ``lines`` gives the user's line of allocations the plan cannot
    locate (the kernel's own SMEM, by name), for the typed errors about them;
    ``capacity_at`` the line that set the SMEM capacity explicitly, which an over-budget
    error names first.
    """
    report = _report(plan, target)
    for code in _TYPED:
        for d in report.errors:
            if d.code != code:
                continue
            err = _typed_error(plan, d, target, lines or {}, capacity_at)
            if not skip_validation or code not in ("TS-V203", "TS-V209"):  # cannot be lowered
                raise err
            warnings.warn(str(err), stacklevel=stacklevel + 1)
            break
    if not report.ok:
        if skip_validation:
            warnings.warn(report.as_text(errors_only=True), stacklevel=stacklevel + 1)
        elif raise_verification:
            raise VerificationError(report)
    return report


# -- lower (inside the kernel) ---------------------------------------------------------------------
def setup_context(smem_allocator: Any, tmem_ptr_i32: Any = None) -> ResourceContext:
    """Allocate the SMEM block (an :class:`SmemAllocator`'s) and build the work calls' context.

    ``context.tmem_ptr_i32`` is ``tmem_ptr_i32`` when given, else the allocator's
    ``add_tmem_ptr`` slot (Blackwell: the SMEM word ``tcgen05.alloc`` writes the address to).
    """
    base = None
    if isinstance(smem_allocator, SmemAllocator):
        smem_allocator.allocate()
        base = smem_allocator.smem_base
        slot = smem_allocator.tmem_ptr_alloc
        if tmem_ptr_i32 is None and slot is not None:
            tmem_ptr_i32 = smem_allocator.get(slot)
    return ResourceContext(smem_base=base, tmem_ptr_i32=tmem_ptr_i32, smem_allocator=smem_allocator)


def lower_plan(
    plan: KernelPlan,
    tasks: Sequence[Task],
    resources: Sequence[MemoryResource],
    *,
    smem_allocator: Any,
    context: ResourceContext | None,
    debug_bounded_waits: bool = False,
) -> dict[str, Any]:
    """Emit every task at this point of the ``@cute.kernel`` (stage 3).

    Returns:
        The ``cutlass.pipeline`` objects by resource name.
    """
    import ts_codegen

    check_lowerable_groups(plan)
    bounds: dict[str, list[tuple[Any, Any, Any] | None]] = {}
    for t in tasks:
        if t.debug_print:
            print(f"task {t.name}:\n{t.schedule.as_text()}")
        if t.has_runtime_bounds():
            # Per-tile bounds come as the task's methods; the lowering calls them with each
            # work tile's coordinate.
            bounds[t.name] = t.loop_bounds()
    return ts_codegen.emit_tasks(
        plan,
        {resource_name(r): r for r in resources},
        bounds=bounds,
        smem_allocator=smem_allocator,
        context=context,
        debug=[t.name for t in tasks if t.debug_print or debug_bounded_waits],
        task_caches={t.name: t.make_task_cache for t in tasks},
        cta_gates={t.name: t.cta_rank for t in plan.tasks if t.cta_rank is not None},
    )
