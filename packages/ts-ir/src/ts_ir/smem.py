"""Static shared-memory layout of a kernel.

The layout is a declarative bump allocator. Every allocation, or every alias-group region, is
placed once at a fixed offset; the mbarriers of every pipeline follow the data. Nothing is
freed at run time, so the layout is fully known before the kernel is compiled and the verifier
can check it against the CTA's SMEM capacity.

An *alias group* lets allocations that are never live at the same time share storage. It is a
sequence of at least two *phases*; every phase starts at the group's base and lays out its
allocations back to back, so the region is as large as the largest phase.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ts_ir.plan import KernelPlan, SmemAllocationSpec

__all__ = [
    "DEFAULT_SMEM_CAPACITY",
    "SmemLayout",
    "SmemLayoutError",
    "SmemPlacement",
    "compute_smem_layout",
    "plan_smem_layout",
]

DEFAULT_SMEM_CAPACITY = 232448
"""Opt-in SMEM bytes per CTA on sm_90 / sm_100 (227 KiB)."""

_BARRIER_ALIGNMENT = 8


class SmemLayoutError(ValueError):
    """The SMEM declarations cannot be laid out (duplicate names, malformed alias groups...)."""


@dataclasses.dataclass(frozen=True)
class SmemPlacement:
    """Where one allocation lives.

    Attributes:
        name: The allocation's name.
        offset: Byte offset from the start of dynamic SMEM.
        size: Size in bytes.
        alignment: Byte alignment the offset satisfies.
        alias_group: Index of the alias group sharing this storage, or None.
    """

    name: str
    offset: int
    size: int
    alignment: int
    alias_group: int | None = None

    @property
    def end(self) -> int:
        """One past the last byte of the allocation."""
        return self.offset + self.size


@dataclasses.dataclass(frozen=True)
class SmemLayout:
    """The complete SMEM layout of a kernel.

    Attributes:
        placements: Every allocation, in address order (aliased allocations in phase order).
        data_bytes: Bytes used by the allocations, rounded up to 8.
        barrier_offset: Offset of the first mbarrier.
        barrier_bytes: Bytes of mbarriers.
        total: Bytes used in all: ``barrier_offset + barrier_bytes``.
        capacity: Bytes available per CTA.
    """

    placements: tuple[SmemPlacement, ...]
    data_bytes: int
    barrier_offset: int
    barrier_bytes: int
    total: int
    capacity: int

    @property
    def fits(self) -> bool:
        """True when the layout fits into the capacity."""
        return self.total <= self.capacity

    def placement(self, name: str) -> SmemPlacement:
        """The placement of the allocation ``name``.

        Raises:
            KeyError: No allocation has that name.
        """
        for p in self.placements:
            if p.name == name:
                return p
        raise KeyError(name)

    def report(self) -> str:
        """A readable usage table followed by the data / barrier / total / capacity summary."""
        header = ("name", "offset", "size", "align", "alias")
        rows = [
            (
                p.name,
                str(p.offset),
                str(p.size),
                str(p.alignment),
                "-" if p.alias_group is None else str(p.alias_group),
            )
            for p in self.placements
        ]
        widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]

        def fmt(row: tuple[str, ...]) -> str:
            # Name left-aligned, numbers right-aligned so digits line up.
            cells = [row[0].ljust(widths[0])]
            cells += [cell.rjust(w) for cell, w in zip(row[1:], widths[1:], strict=True)]
            return "  ".join(cells).rstrip()

        lines = [fmt(header), fmt(tuple("-" * w for w in widths))]
        lines += [fmt(r) for r in rows]
        percent = 100.0 * self.total / self.capacity if self.capacity > 0 else float("inf")
        lines += [
            "",
            f"data:     {self.data_bytes} B",
            f"barriers: {self.barrier_bytes} B at offset {self.barrier_offset}",
            f"total:    {self.total} B",
            f"capacity: {self.capacity} B ({percent:.1f}% used)",
        ]
        if not self.fits:
            lines.append(f"OVER CAPACITY by {self.total - self.capacity} B")
        return "\n".join(lines)


def _align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


@dataclasses.dataclass(frozen=True)
class _Block:
    """A unit the bump allocator places: one allocation or one alias-group region."""

    order: int
    alignment: int
    size: int
    # (name, offset relative to the block's base, size, alignment) of each member.
    members: tuple[tuple[str, int, int, int], ...]
    alias_group: int | None


def _group_block(
    index: int,
    phases: Sequence[Sequence[str]],
    specs: dict[str, SmemAllocationSpec],
    order: dict[str, int],
    owner: dict[str, int],
) -> _Block:
    if isinstance(phases, str) or len(phases) < 2:
        raise SmemLayoutError(
            f"SMEM alias group {index} has {len(phases)} phase(s); an alias group needs at "
            "least two phases (sequences of allocation names) that share storage"
        )
    members: list[tuple[str, int, int, int]] = []
    size = 0
    alignment = 1
    for phase in phases:
        if isinstance(phase, str):
            # A bare string would be split into one-letter names; say what was meant instead.
            raise SmemLayoutError(
                f"SMEM alias group {index}: phase {phase!r} must be a sequence of allocation "
                f"names, write ({phase!r},)"
            )
        cursor = 0
        for name in phase:
            spec = specs.get(name)
            if spec is None:
                raise SmemLayoutError(
                    f"SMEM alias group {index} names {name!r}, which is not an allocation; "
                    "declare it on a resource or fix the name"
                )
            if name in owner:
                where = "twice in" if owner[name] == index else f"in alias group {owner[name]} and"
                raise SmemLayoutError(
                    f"SMEM allocation {name!r} appears {where} alias group {index}; an "
                    "allocation can belong to one phase of one alias group only"
                )
            owner[name] = index
            cursor = _align_up(cursor, spec.alignment)
            members.append((name, cursor, spec.size_bytes, spec.alignment))
            cursor += spec.size_bytes
            alignment = max(alignment, spec.alignment)
        size = max(size, cursor)
    first = min((order[m[0]] for m in members), default=len(order) + index)
    return _Block(first, alignment, size, tuple(members), index)


def compute_smem_layout(
    allocations: Sequence[SmemAllocationSpec],
    alias_groups: Sequence[Sequence[Sequence[str]]] = (),
    barrier_bytes: int = 0,
    capacity: int = DEFAULT_SMEM_CAPACITY,
) -> SmemLayout:
    """Lay out SMEM allocations, alias groups and mbarriers.

    Non-aliased allocations and alias-group regions are placed by alignment, largest first
    (ties keep declaration order; a group's position is that of its first-declared member), so
    padding between them is minimal. All phases of an alias group start at the group's base,
    which is aligned to the largest alignment among its members. The data size is rounded up to
    8 and the mbarriers follow. Exceeding ``capacity`` is not an error: check
    :attr:`SmemLayout.fits`.

    Args:
        allocations: Every allocation, in declaration order.
        alias_groups: Groups of phases; each phase is a sequence of allocation names.
        barrier_bytes: Bytes of mbarriers to place after the data.
        capacity: SMEM bytes available per CTA.

    Returns:
        The layout.

    Raises:
        SmemLayoutError: Duplicate allocation names, an alias group with fewer than two phases,
            an unknown name in an alias group, an allocation in more than one alias-group slot,
            or negative ``barrier_bytes``.
    """
    if barrier_bytes < 0:
        raise SmemLayoutError(
            f"barrier_bytes must be >= 0, got {barrier_bytes}; pass the mbarrier bytes of every "
            "pipeline (16 per stage)"
        )
    specs: dict[str, SmemAllocationSpec] = {}
    order: dict[str, int] = {}
    for i, spec in enumerate(allocations):
        if spec.name in specs:
            raise SmemLayoutError(
                f"SMEM allocation {spec.name!r} is declared twice; give each allocation a "
                "unique name (by convention 'resource.region')"
            )
        specs[spec.name] = spec
        order[spec.name] = i

    owner: dict[str, int] = {}
    blocks = [_group_block(g, phases, specs, order, owner) for g, phases in enumerate(alias_groups)]
    for s in allocations:
        if s.name not in owner:
            member = (s.name, 0, s.size_bytes, s.alignment)
            blocks.append(_Block(order[s.name], s.alignment, s.size_bytes, (member,), None))
    # sorted() is stable; the explicit order key makes groups slot in among single allocations.
    blocks.sort(key=lambda b: (-b.alignment, b.order))

    placements: list[SmemPlacement] = []
    cursor = 0
    for block in blocks:
        base = _align_up(cursor, block.alignment)
        for name, rel, size, alignment in block.members:
            placements.append(SmemPlacement(name, base + rel, size, alignment, block.alias_group))
        cursor = base + block.size

    data_bytes = _align_up(cursor, _BARRIER_ALIGNMENT)
    return SmemLayout(
        placements=tuple(placements),
        data_bytes=data_bytes,
        barrier_offset=data_bytes,
        barrier_bytes=barrier_bytes,
        total=data_bytes + barrier_bytes,
        capacity=capacity,
    )


def plan_smem_layout(plan: KernelPlan) -> SmemLayout:
    """Lay out the SMEM of a kernel plan (allocations, alias groups, pipeline mbarriers).

    Raises:
        SmemLayoutError: See :func:`compute_smem_layout`.
    """
    barrier_bytes = sum(r.pipeline.barrier_bytes for r in plan.resources if r.pipeline is not None)
    return compute_smem_layout(
        tuple(plan.iter_smem()),
        plan.smem_alias_groups,
        barrier_bytes=barrier_bytes,
        capacity=plan.smem_capacity,
    )
