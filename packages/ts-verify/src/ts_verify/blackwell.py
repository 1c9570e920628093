"""Blackwell barrier semantics: UMMA commit arrivals and CLC responses.

Blackwell pipelines signal their barriers in two ways Hopper ones do not:

* **UMMA sides** (the producer of ``UmmaAsync`` / ``UmmaUmma``, the consumer of ``TmaUmma`` /
  ``AsyncUmma`` / ``UmmaUmma``) signal with ``tcgen05.commit``: one elected thread of each warp
  that executes the commit arrives once on the barrier, when the MMAs issued before it have
  completed. A signal of a task of ``w`` warps is therefore ``w`` arrivals (one with
  ``TaskWarpLeader``), whatever the warps' thread count. The barrier is initialised with the
  group's thread count (``CooperativeGroup(Agent.Thread, n)``: ``n``; ``Agent.Warp``: ``32 n``),
  so a UMMA side must be counted in threads, one per signaling warp.
* **CLC producers** (``ClcFetchAsync``) arm the full barrier with one elected thread's
  ``arrive.expect_tx`` of the response size; the cluster launch controller's 16-byte answer
  completes the phase, exactly as TMA bytes complete a ``TmaAsync`` phase. Any other byte
  count never completes the phase (more) or completes it before the answer landed (fewer).

:func:`umma_arrivals` is what :func:`ts_verify.kernel_checks.arrivals_per_signal` (and so the
group-size check, TS-V203, and the whole-kernel runs) counts for a UMMA side;
:func:`check_blackwell_rings` reports the declarations that no group size can repair.
"""

from __future__ import annotations

from collections.abc import Iterator

from ts_ir import KernelPlan, PipelineSpec, PipelineType, Role, TaskSpec
from ts_verify.diagnostics import Diagnostic

__all__ = ["CLC_RESPONSE_BYTES", "check_blackwell_rings", "signals_with_umma", "umma_arrivals"]

CLC_RESPONSE_BYTES = 16
"""Bytes of one cluster-launch-control response (what completes a ``ClcFetchAsync`` phase)."""


def signals_with_umma(pipeline: PipelineSpec, role: Role) -> bool:
    """True when ``role``'s signal on ``pipeline`` is a ``tcgen05.commit``."""
    if role is Role.PRODUCER:
        return pipeline.type.producer_is_umma
    return pipeline.type.consumer_is_umma


def umma_arrivals(task: TaskSpec, pipeline: PipelineSpec, role: Role) -> int | None:
    """Arrivals one commit / release of ``task`` makes on a UMMA side (None: not a UMMA side).

    One per warp that executes the ``tcgen05.commit`` (an elected thread of each): the task's
    first warp alone with ``TaskWarpLeader``, else every warp of the task.
    """
    if not signals_with_umma(pipeline, role):
        return None
    signaling = (
        pipeline.producer_signaling if role is Role.PRODUCER else pipeline.consumer_signaling
    )
    return 1 if signaling.has_task_warp_leader() else task.num_warps


def check_blackwell_rings(plan: KernelPlan) -> Iterator[Diagnostic]:
    """UMMA sides counted in warps (TS-V217) and CLC rings of the wrong byte count (TS-V218)."""
    for res in plan.resources:
        p = res.pipeline
        if p is None:
            continue
        for role, group in ((Role.PRODUCER, p.producer_group), (Role.CONSUMER, p.consumer_group)):
            if not signals_with_umma(p, role) or group.agent != "warp":
                continue
            side = "producer" if role is Role.PRODUCER else "consumer"
            yield Diagnostic(
                "TS-V217",
                f"resource `{res.name}`: the {side} side of its {p.type.value} pipeline signals "
                f"with tcgen05.commit (one arrival per warp, from an elected thread), but its "
                f"{side} group is counted in warps (CooperativeGroup(Agent.Warp, {group.size}) "
                f"expects {group.size * 32} thread arrivals per phase): the phase never completes",
                resource=res.name,
                location=res.location,
                fix=f"count the {side} group in threads, one per signaling warp: "
                f"CooperativeGroup(Agent.Thread, <warps that commit>)",
            )
        if p.type is PipelineType.ClcFetchAsync and p.bytes_per_stage != CLC_RESPONSE_BYTES:
            effect = (
                "the phase completes before the response has landed (a race)"
                if p.bytes_per_stage < CLC_RESPONSE_BYTES
                else "the phase never completes (a deadlock)"
            )
            yield Diagnostic(
                "TS-V218",
                f"resource `{res.name}`: its ClcFetchAsync pipeline expects "
                f"{p.bytes_per_stage} bytes per stage, but a cluster-launch-control response "
                f"is {CLC_RESPONSE_BYTES} bytes; {effect}",
                resource=res.name,
                location=res.location,
                fix=f"pass num_bytes={CLC_RESPONSE_BYTES} to create_clc_fetch_async_pipeline_cfg",
            )
