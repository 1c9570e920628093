"""``PipelineGroup``: member resources whose rings synchronize together (declaration side).

Declare the members as usual, each with its own pipeline, then group them::

    ab = PipelineGroup(name="ab", members=[smem_a, smem_b], mode=PipelineGroupMode.Merge)

In a schedule that takes the group, ``ab.smem_a`` is the member (its own acquire / wait / work,
and the side that is not collapsed) and ``ab`` itself runs the collapsed operation: ``release``
in a Merge, ``commit`` in a Fork, ``wait`` / ``try_wait`` / ``release`` in a FusedMerge (see
:mod:`ts_ir.groups` for what they mean). Tasks keep listing the bare members in their
``src_resources`` / ``dst_resources``; the group is in no task and not in the dependency graph.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ts_ir import UNKNOWN_LOCATION, PipelineGroupMode, PipelineGroupSpec
from ts_trace._internal.source import user_location
from ts_trace.errors import ResourceDeclarationError
from ts_trace.resources import MemoryResource, resource_name

__all__ = ["PipelineGroup", "group_of", "group_spec"]


@dataclasses.dataclass(kw_only=True)
class PipelineGroup(MemoryResource):
    """Rings that share one side's synchronization (Merge, Fork or FusedMerge).

    Attributes:
        members: The member resources (each pipelined), at least two.
        mode: The topology (default Merge: N producers into one consumer).
    """

    members: list[MemoryResource] = dataclasses.field(default_factory=list)
    mode: PipelineGroupMode = PipelineGroupMode.Merge
    is_barrier: bool = True

    def __post_init__(self) -> None:
        where = user_location()
        name = self.name or "PipelineGroup"
        if not isinstance(self.mode, PipelineGroupMode):
            raise ResourceDeclarationError(
                "TS-T022",
                f"PipelineGroup `{name}`: mode={self.mode!r:.40} is not a PipelineGroupMode",
                resource=name,
                location=where,
                fix="pass mode=PipelineGroupMode.Merge, Fork or FusedMerge",
            )
        members = list(self.members) if isinstance(self.members, (list, tuple)) else None
        if (
            members is None
            or len(members) < 2
            or not all(isinstance(m, MemoryResource) for m in members)
        ):
            raise ResourceDeclarationError(
                "TS-T022",
                f"PipelineGroup `{name}`: members={self.members!r:.60} must be a list of at "
                "least two resources",
                resource=name,
                location=where,
                fix="pass members=[smem_a, smem_b] (each with its own pipeline_config)",
            )
        for m in members:
            other = getattr(m, "_ts_group", None)
            if other is not None and other is not self:
                raise ResourceDeclarationError(
                    "TS-T022",
                    f"`{resource_name(m)}` is a member of PipelineGroup `{resource_name(other)}` "
                    f"and of `{name}`; a ring shares its barriers with one group",
                    resource=resource_name(m),
                    location=where,
                    fix="put each resource in at most one group",
                )
            m._ts_group = self  # type: ignore[attr-defined]
        self.members = members
        self._ts_location = where

    def member(self, name: str) -> MemoryResource | None:
        """The member called ``name``, or None."""
        return next((m for m in self.members if resource_name(m) == name), None)

    def __getattr__(self, attr: str) -> Any:
        # ``group.smem_a`` outside a schedule: the member itself (in a schedule the proxy
        # answers it).
        if not attr.startswith("_"):
            found = self.member(attr) if "members" in self.__dict__ else None
            if found is not None:
                return found
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {attr!r}")


def group_of(resource: MemoryResource) -> PipelineGroup | None:
    """The group ``resource`` is a member of, or None."""
    group = resource.__dict__.get("_ts_group")
    return group if isinstance(group, PipelineGroup) else None


def group_spec(group: PipelineGroup) -> PipelineGroupSpec:
    """The group as IR."""
    return PipelineGroupSpec(
        resource_name(group),
        group.mode,
        tuple(resource_name(m) for m in group.members),
        group.__dict__.get("_ts_location", UNKNOWN_LOCATION),
    )
