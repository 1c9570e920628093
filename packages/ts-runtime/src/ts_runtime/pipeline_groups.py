"""Pipeline groups in the runtime: lowered as verified, the unlowered TMA Forks refused.

A ``PipelineGroup`` (``ts_trace.PipelineGroup``, the reference's ``pipeline_group`` module)
is planned and verified like any kernel: ts-verify checks the declaration and where the
collapsed operations are written (TS-V240, TS-V241) and then every member as a ring of its own
(:mod:`ts_verify.groups`). The lowering emits that same expansion (:mod:`ts_codegen.groups`);
a Fork fed by TMA shares its first member's full barriers, which is lowered for TMA-fed
members on one CTA. Any other TMA Fork stops here, before any code is generated, with a typed
error and a fix.
"""

from __future__ import annotations

from ts_ir import KernelPlan
from ts_runtime.errors import UnsupportedFeatureError

__all__ = ["check_lowerable_groups", "translation_plan"]


def check_lowerable_groups(plan: KernelPlan) -> None:
    """Refuse a TMA Fork whose shared full barrier is not lowered.

    Raises:
        UnsupportedFeatureError: For such a Fork (TS-R001), naming the group and the member.
    """
    from ts_codegen.groups import unlowered_forks

    unlowered = unlowered_forks(plan)
    if not unlowered:
        return
    group, member, why = unlowered[0]
    raise UnsupportedFeatureError(
        f"kernel `{plan.name}`: PipelineGroup `{group}` (Fork): member `{member}` is {why}; "
        "a TMA Fork's members share the first member's full barriers, which is lowered for "
        "TMA-fed members on one CTA only",
        resource=member,
        fix="drop the group and give each member its own load, acquire, commit (per-member "
        "rings are correct), or use TMA-fed members only, on a 1 x 1 cluster",
    )


def translation_plan(plan: KernelPlan) -> KernelPlan:
    """The plan translation validation compares a compiled kernel's PTX with: ``plan`` itself.

    :func:`ts_runtime.ptx_check.check_ptx` writes the group steps out per member as the
    lowering does, and reads a TMA Fork's shared full barriers as every member's.
    """
    return plan
