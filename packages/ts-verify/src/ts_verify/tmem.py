"""Tensor memory (TMEM) against the target: the columns the kernel allocates must exist.

``tcgen05.alloc`` of more columns than the SM has (512 on sm_100a) never returns: the
allocating warp waits for columns that will not be freed, and the kernel hangs before any task
starts. A kernel that allocates TMEM on a target without TMEM (Hopper) cannot be compiled at
all. Both are judged from the plan's laid-out blocks (:attr:`ts_ir.KernelPlan.tmem`), against
the plan's own budget (``tmem_capacity``) and the target's columns.
"""

from __future__ import annotations

from collections.abc import Iterator

from ts_ir import TMEM_COLUMNS, KernelPlan, Target
from ts_verify.diagnostics import Diagnostic

__all__ = ["check_tmem", "tmem_columns"]


def tmem_columns(plan: KernelPlan) -> int:
    """Columns the plan's TMEM layout spans (the end of its last block)."""
    return max((t.end for t in plan.tmem), default=0)


def _capacity(plan: KernelPlan, target: Target | None) -> tuple[int, str]:
    """The columns the kernel may use, and where that limit comes from."""
    limits = [(TMEM_COLUMNS, f"the {TMEM_COLUMNS} columns of an SM")]
    if plan.tmem_capacity is not None:
        limits.append((plan.tmem_capacity, f"the kernel's budget of {plan.tmem_capacity}"))
    if target is not None:
        limits.append((target.tmem_columns, f"the {target.tmem_columns} of {target.name}"))
    return min(limits)


def check_tmem(plan: KernelPlan, target: Target | None = None) -> Iterator[Diagnostic]:
    """TS-V219: the TMEM layout over the columns the target (or the plan's budget) has."""
    used = tmem_columns(plan)
    if not used:
        return
    capacity, why = _capacity(plan, target)
    if used <= capacity:
        return
    largest = max(plan.tmem, key=lambda t: t.columns)
    owners = {t.owner for t in plan.tmem if t.owner}
    users = [t.name for t in plan.tasks if set(t.sources + t.destinations) & owners]
    blocks = ", ".join(
        f"`{t.name}` {t.columns}" + (f" ({t.owner})" if t.owner else "") for t in plan.tmem
    )
    if capacity == 0:
        effect = "the target has no tensor memory, so the kernel cannot be compiled for it"
        fix = "compile for sm_100a (CUTE_DSL_ARCH=sm_100a), or keep the accumulators in registers"
    else:
        effect = "tcgen05.alloc of the excess never returns (the kernel hangs before any task)"
        fix = (
            f"shrink `{largest.name}` (fewer accumulator stages or a narrower tile), or alias "
            "blocks that are never live together (TmemAllocator.add_alias_group)"
        )
    yield Diagnostic(
        "TS-V219",
        f"the kernel's TMEM layout spans {used} columns, more than {why} (by {used - capacity}); "
        f"blocks: {blocks}; {effect}",
        task=users[0] if users else "",
        resource=largest.owner,
        location=next((r.location for r in plan.resources if r.name == largest.owner), None),
        fix=fix,
    )
