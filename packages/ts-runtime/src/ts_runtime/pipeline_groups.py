"""Pipeline groups in the runtime: verified on every target, not lowered yet.

A ``PipelineGroup`` (``ts_trace.PipelineGroup``, the reference's ``pipeline_group`` module)
is planned and verified like any kernel: ts-verify checks the declaration and where the
collapsed operations are written (TS-V240, TS-V241) and then every member as a ring of its own
(:mod:`ts_verify.groups`). Lowering a group onto shared ``cutlass.pipeline`` barriers is not
done yet, so a kernel with a group stops at the lowering with a typed error that says so,
before any code is generated.
"""

from __future__ import annotations

from ts_ir import KernelPlan
from ts_runtime.errors import UnsupportedFeatureError

__all__ = ["check_lowerable_groups"]


def check_lowerable_groups(plan: KernelPlan) -> None:
    """Refuse a plan with pipeline groups at the lowering.

    Raises:
        UnsupportedFeatureError: When ``plan`` has a group (TS-R001), naming it and its members.
    """
    if not plan.groups:
        return
    g = plan.groups[0]
    raise UnsupportedFeatureError(
        f"kernel `{plan.name}`: PipelineGroup `{g.name}` ({g.mode.value} of "
        f"{', '.join(g.members)}) is verified but not lowered yet",
        resource=g.name,
        fix="drop the group and write each member's own operations (member.release() / "
        "member.commit() for the collapsed one): per-member barriers are correct, the group "
        "only saves arrivals",
    )
