"""Pipeline groups: several rings that synchronize together, and what they mean per ring.

A :class:`PipelineGroupSpec` names member resources (each with its own ring) that share one
side's synchronization (the reference's ``PipelineGroup``):

* ``Merge`` — N producers into one consumer: each producer fills and commits its own member;
  the consumer waits on every member and frees all of them with one ``group.release()``.
* ``Fork`` — one producer into N consumers: the producer acquires every member and publishes all
  of them with one ``group.commit()``; each consumer waits on and releases its own member.
* ``FusedMerge`` — a Merge whose consumer also waits once, ``group.wait()`` (and
  ``group.try_wait()``), on all members.

In a schedule the collapsed operation is a step on the group's name. Its meaning is the same
operation on every member, in member order, at that point: a group release frees each member's
stage, a group commit publishes each member's stage, a group wait waits for each member's. That
is what :func:`ts_ir.group_expansion.expand_groups` writes out, and both the verifier (which then
counts each member's arrivals and phases as any ring's) and the lowering start from the expanded
plan.
"""

from __future__ import annotations

import dataclasses

from ts_ir.enums import PipelineGroupMode, ScheduleStage
from ts_ir.schedule import UNKNOWN_LOCATION, SourceLocation

__all__ = ["GROUP_OPS", "PipelineGroupSpec"]

GROUP_OPS: dict[PipelineGroupMode, frozenset[ScheduleStage]] = {
    PipelineGroupMode.Merge: frozenset({ScheduleStage.ConsumerRelease}),
    PipelineGroupMode.Fork: frozenset({ScheduleStage.ProducerCommit}),
    PipelineGroupMode.FusedMerge: frozenset(
        {ScheduleStage.ConsumerTryWait, ScheduleStage.ConsumerWait, ScheduleStage.ConsumerRelease}
    ),
}
"""The operations written on the group itself in each mode (the collapsed side's)."""


@dataclasses.dataclass(frozen=True)
class PipelineGroupSpec:
    """Member rings that share one side's synchronization.

    Attributes:
        name: The group's name (what its collapsed steps are on).
        mode: Merge, Fork or FusedMerge.
        members: The member resources' names, in declaration order.
        location: Where the group was declared.
    """

    name: str
    mode: PipelineGroupMode
    members: tuple[str, ...]
    location: SourceLocation = UNKNOWN_LOCATION

    @property
    def collapsed_ops(self) -> frozenset[ScheduleStage]:
        """The operations a schedule writes on the group rather than on a member."""
        return GROUP_OPS[self.mode]
