"""Pipeline groups in the runtime: lowered as verified, one case refused with a typed error.

A ``PipelineGroup`` (``ts_trace.PipelineGroup``, the reference's ``pipeline_group`` module)
is planned and verified like any kernel: ts-verify checks the declaration and where the
collapsed operations are written (TS-V240, TS-V241) and then every member as a ring of its own
(:mod:`ts_verify.groups`). The lowering emits that same expansion, every member on its own
barriers (:mod:`ts_codegen.groups`). A Fork whose producer fills a member by TMA but never
loads into it cannot be lowered that way (the member's full barrier waits for bytes no load
brings), so it stops here, before any code is generated, with a typed error and a fix.
"""

from __future__ import annotations

from ts_ir import KernelPlan
from ts_runtime.errors import UnsupportedFeatureError

__all__ = ["check_lowerable_groups"]


def check_lowerable_groups(plan: KernelPlan) -> None:
    """Refuse a TMA-fed Fork member its producer never loads into.

    Raises:
        UnsupportedFeatureError: For such a member (TS-R001), naming the group and the member.
    """
    from ts_codegen.groups import unfilled_fork_members

    unfilled = unfilled_fork_members(plan)
    if not unfilled:
        return
    group, member = unfilled[0]
    raise UnsupportedFeatureError(
        f"kernel `{plan.name}`: PipelineGroup `{group}` (Fork): member `{member}` is TMA-fed "
        "but its producer never loads into it; a TMA load completes only the full barrier of "
        "the member it loads into, so this member's consumer would wait forever (a shared full "
        "barrier for a TMA Fork is not lowered)",
        resource=member,
        fix=f"load into `{member}` too (a load on each member), or give `{member}` a pipeline "
        "with a thread producer (AsyncAsync: the group commit arrives on its full barrier "
        "once the producer's own stores are done)",
    )
