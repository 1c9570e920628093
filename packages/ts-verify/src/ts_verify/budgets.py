"""Checks against the target: the pipeline types its architecture runs, SMEM within capacity.

The plan holds every SMEM allocation (each resource's and the kernel's own, ``smem_extra``) and
every pipeline's mbarriers, so the budget is judged here once, for every front door. TMEM is
not allocated by plans yet (the runtime refuses its options); :attr:`ts_ir.Target.tmem_columns`
is where its budget will be read from.
"""

from __future__ import annotations

from collections.abc import Iterator

from ts_ir import KernelPlan, PipelineType, ResourceSpec, SmemLayoutError, Target, plan_smem_layout
from ts_verify.diagnostics import Diagnostic

__all__ = ["HOPPER_ALTERNATIVE", "check_budgets"]

HOPPER_ALTERNATIVE: dict[PipelineType, str] = {
    PipelineType.TmaUmma: "TmaAsync (TMA loads into SMEM, consumed by WGMMA warpgroups)",
    PipelineType.UmmaAsync: "AsyncAsync (WGMMA accumulators live in registers; hand results to "
    "the epilogue through an AsyncAsync pipeline or keep them in the same task)",
    PipelineType.AsyncUmma: "AsyncAsync (the consumer is a WGMMA warpgroup, not UMMA)",
    PipelineType.UmmaUmma: "AsyncAsync between WGMMA warpgroups",
    PipelineType.ClcFetchAsync: "a WorkQueue driven by a global atomic tile counter "
    "(Hopper has no cluster launch control)",
}
"""What to use before Blackwell instead of each Blackwell-only pipeline type."""


def _users(plan: KernelPlan, resource: str) -> list[str]:
    """The tasks that list ``resource`` among their sources or destinations, in plan order."""
    return [t.name for t in plan.tasks if resource in (*t.sources, *t.destinations)]


def _architecture(plan: KernelPlan, target: Target) -> Iterator[Diagnostic]:
    if target.is_blackwell_or_later:
        return
    for spec in plan.resources:
        p = spec.pipeline
        if p is None or not p.type.needs_blackwell:
            continue
        users = _users(plan, spec.name)
        alternative = HOPPER_ALTERNATIVE.get(p.type, "AsyncAsync or TmaAsync")
        yield Diagnostic(
            "TS-V216",
            f"resource `{spec.name}` (used by task(s) {', '.join(users) or 'none'}) has a "
            f"{p.type.value} pipeline, which needs Blackwell (UMMA/TMEM or CLC); the target "
            f"is {target.name}",
            task=users[0] if users else "",
            resource=spec.name,
            location=spec.location,
            fix=f"on Hopper use {alternative}; or compile for sm_100a (CUTE_DSL_ARCH=sm_100a)",
        )


def _largest_smem(plan: KernelPlan) -> ResourceSpec | None:
    """The resource with the most SMEM (the one a fix most likely shrinks)."""
    with_smem = [r for r in plan.resources if r.smem]
    return max(
        with_smem,
        key=lambda r: sum(a.size_bytes for a in r.smem if isinstance(a.size_bytes, int)),
        default=None,
    )


def _smem(plan: KernelPlan, target: Target | None) -> Iterator[Diagnostic]:
    try:
        layout = plan_smem_layout(plan)
    except SmemLayoutError as err:
        bad = _largest_smem(plan)
        yield Diagnostic(
            "TS-V214",
            str(err),
            resource="" if bad is None else bad.name,
            location=None if bad is None else bad.location,
            fix="fix the SMEM declarations",
        )
        return
    # A plan may be made for less SMEM than the hardware has, never for more.
    capacity = layout.capacity
    if target is not None:
        capacity = min(capacity, target.smem_capacity)
    if layout.total <= capacity:
        return
    # Bytes by owner: a resource's allocations and its mbarriers; the kernel's own by name.
    owner = {a.name: r.name for r in plan.resources for a in r.smem}
    by_owner: dict[str, int] = {}
    for pl in layout.placements:
        name = owner.get(pl.name, pl.name)
        by_owner[name] = by_owner.get(name, 0) + pl.size
    for spec in plan.resources:
        if spec.pipeline is not None:
            by_owner[spec.name] = by_owner.get(spec.name, 0) + spec.pipeline.barrier_bytes
    biggest = max(by_owner, key=lambda r: by_owner[r]) if by_owner else ""
    users = _users(plan, biggest)
    usage = ", ".join(f"`{r}` {n} B" for r, n in sorted(by_owner.items(), key=lambda kv: -kv[1]))
    owner_spec = next((r for r in plan.resources if r.name == biggest), None)
    where = f" on {target.name}" if target is not None else ""
    # The kernel's own allocations (smem_extra) belong to no resource and no task.
    largest = (
        f"the kernel's own allocation `{biggest}`"
        if owner_spec is None
        else f"resource `{biggest}` used by task(s) {', '.join(users) or 'none'}"
    )
    yield Diagnostic(
        "TS-V209",
        f"the kernel needs {layout.total} bytes of shared memory, more than the {capacity} "
        f"available per CTA{where} (by {layout.total - capacity} B; data {layout.data_bytes} "
        f"B + mbarriers {layout.barrier_bytes} B); largest: {largest} ({usage})\n"
        + layout.report(),
        task=users[0] if users else "",
        resource=biggest,
        location=None if owner_spec is None else owner_spec.location,
        fix=f"reduce `{biggest}`'s stages or tile size, or alias buffers that are never live "
        "together (SmemAllocator.add_alias_group)"
        if owner_spec is not None
        else f"make `{biggest}` smaller (fewer stages, a smaller tile), or free SMEM elsewhere",
    )
    # Whether aliased regions are live together is decided with the schedules' happens-before
    # relation, after the deadlock check (ts_verify.aliasing).


def check_budgets(plan: KernelPlan, target: Target | None = None) -> list[Diagnostic]:
    """Pipeline types the target cannot run (with a target) and SMEM over the capacity.

    Without a target, only the plan's own SMEM capacity is checked.
    """
    found = [] if target is None else list(_architecture(plan, target))
    found.extend(_smem(plan, target))
    return found
