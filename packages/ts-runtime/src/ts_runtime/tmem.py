"""Tensor memory (TMEM, Blackwell): named column blocks and their declarative layout.

A Blackwell SM has 512 TMEM columns of 128 lanes x 32 bits; UMMA accumulators live there. As
with SMEM, resources declare what they need (``get_tmem_requirements()`` returning
:class:`TmemAllocation` s) and a :class:`TmemAllocator` lays the blocks out once, giving each its
column ``offset``::

    tmem = TmemAllocator()
    tmem.add_resource(accumulator)     # TmemAllocation("acc", 256 * stages)
    tmem.compute_layout()
    TaskManager(tasks, graph, smem_allocator=smem, tmem_allocator=tmem)

The layout is host-side bookkeeping (no CuTe DSL). The ``TaskManager`` records it in the plan
(:attr:`ts_ir.KernelPlan.tmem`), where ts-verify judges it against the target's columns
(TS-V219). As in the reference, the in-kernel ``tcgen05.alloc`` / ``relinquish_alloc_permit`` /
``dealloc`` are the kernel author's code around ``TaskManager.run()``; the address the
allocation writes to the SMEM slot of ``SmemAllocator.add_tmem_ptr`` is every work call's
``stage_info.context.tmem_ptr_i32``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ts_ir import TmemAllocationSpec
from ts_ir.errors import describe_value, is_int
from ts_runtime._arguments import argument_error

__all__ = ["TMEM_COLUMNS", "TmemAllocation", "TmemAllocator", "TmemDeclaration"]

TMEM_COLUMNS = 512
"""TMEM columns per SM on sm_100a (the default capacity)."""


@dataclasses.dataclass
class TmemAllocation:
    """A named block of TMEM columns.

    Attributes:
        name: Unique name within the kernel.
        num_columns: Columns (each 128 lanes x 32 bits), at least 1.
        offset: First column of the block (set by :meth:`TmemAllocator.compute_layout`).
    """

    name: str
    num_columns: int
    offset: int = dataclasses.field(default=0, init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise argument_error(
                f"TmemAllocation needs a non-empty name, got {describe_value(self.name)}",
                fix="name it after its use, e.g. TmemAllocation('tmem_acc', 256)",
            )
        if not is_int(self.num_columns) or not 1 <= self.num_columns <= 2**16:
            raise argument_error(
                f"TmemAllocation {self.name!r}: num_columns must be an int in [1, 65536], got "
                f"{describe_value(self.num_columns)}",
                fix="pass the accumulator's columns, e.g. tile N x stages for fp32",
            )


def _as_allocation(alloc: object, where: str) -> TmemAllocation:
    if isinstance(alloc, TmemAllocation):
        return alloc
    raise argument_error(
        f"TmemAllocator.{where}: expected a TmemAllocation, got {describe_value(alloc)}",
        fix="pass TmemAllocation('name', num_columns)",
    )


class TmemAllocator:
    """Declarative bump allocator of TMEM columns (the layout; the kernel allocates).

    ``compute_layout`` may run once; afterwards every allocation has its ``offset`` and no more
    can be added. Alias-group phases share their first column (their region is the widest
    phase). Whether the whole layout fits the target's columns is checked by ts-verify
    (TS-V219) when the ``TaskManager`` is built.
    """

    def __init__(self) -> None:
        self._allocs: list[TmemAllocation] = []
        self._resources: list[Any] = []
        self._owner: dict[str, str] = {}
        self._alias_groups: list[list[list[TmemAllocation]]] = []
        self._total: int | None = None

    # -- declaration ---------------------------------------------------------------------------

    def _check_open(self, what: str) -> None:
        if self._total is not None:
            raise RuntimeError(f"TmemAllocator.{what}: compute_layout() has already run")

    def _register(self, alloc: object, where: str, owner: str = "") -> TmemAllocation:
        a = _as_allocation(alloc, where)
        if any(a is b for b in self._allocs):
            return a
        if any(a.name == b.name for b in self._allocs):
            raise argument_error(
                f"TMEM allocation {a.name!r} is declared twice",
                fix="give each TMEM allocation a unique name",
            )
        self._allocs.append(a)
        if owner:
            self._owner[a.name] = owner
        return a

    def add(self, alloc: TmemAllocation) -> TmemAllocation:
        """Add one allocation; returns it (its ``offset`` is set by ``compute_layout``)."""
        self._check_open("add")
        return self._register(alloc, "add")

    def add_resource(self, resource: Any) -> Any:
        """Add a resource's ``get_tmem_requirements()`` (the resource owns those columns)."""
        self._check_open("add_resource")
        if any(resource is r for r in self._resources):
            return resource
        requirements = getattr(resource, "get_tmem_requirements", None)
        if not callable(requirements):
            raise argument_error(
                f"TmemAllocator.add_resource: {describe_value(resource)} has no "
                "get_tmem_requirements()",
                fix="define get_tmem_requirements(self) -> list[TmemAllocation] on the resource "
                "(or add single allocations with add())",
            )
        self._resources.append(resource)
        owner = str(getattr(resource, "name", "") or type(resource).__name__)
        for alloc in list(requirements() or ()):
            self._register(alloc, "add_resource", owner)
        return resource

    def add_alias_group(self, phases: Sequence[Sequence[TmemAllocation]]) -> None:
        """Let the phases (lists of allocations) share columns: they are never live together."""
        self._check_open("add_alias_group")
        if (
            not isinstance(phases, (list, tuple))
            or len(phases) < 2
            or not all(isinstance(p, (list, tuple)) for p in phases)
        ):
            raise argument_error(
                f"a TMEM alias group needs at least two phases (lists of allocations), got "
                f"{phases!r:.60}",
                fix="pass [[alloc_a], [alloc_b]]: the phases never live together",
            )
        self._alias_groups.append(
            [[self._register(a, "add_alias_group") for a in phase] for phase in phases]
        )

    def compute_layout(self) -> int:
        """Give every allocation its first column; returns the columns the layout spans.

        Blocks outside alias groups are placed one after another in declaration order; each
        alias group takes a region as wide as its widest phase, after them.
        """
        self._check_open("compute_layout")
        grouped = {id(a) for g in self._alias_groups for p in g for a in p}
        cursor = 0
        for a in self._allocs:
            if id(a) not in grouped:
                a.offset = cursor
                cursor += a.num_columns
        for group in self._alias_groups:
            widest = 0
            for phase in group:
                col = cursor
                for a in phase:
                    a.offset = col
                    col += a.num_columns
                widest = max(widest, col - cursor)
            cursor += widest
        self._total = cursor
        return cursor

    # -- queries -------------------------------------------------------------------------------

    @property
    def allocations(self) -> tuple[TmemAllocation, ...]:
        """Every allocation, in declaration order."""
        return tuple(self._allocs)

    @property
    def resources(self) -> tuple[Any, ...]:
        """The resources added with :meth:`add_resource`."""
        return tuple(self._resources)

    def owner_of(self, alloc: TmemAllocation) -> str:
        """The name of the resource that declared ``alloc`` ("" for one added directly)."""
        return self._owner.get(alloc.name, "")

    @property
    def is_laid_out(self) -> bool:
        """True once :meth:`compute_layout` has run."""
        return self._total is not None

    @property
    def total(self) -> int:
        """Columns the layout spans (computed now if needed)."""
        if self._total is None:
            return self.compute_layout()
        return self._total

    @property
    def total_tmem_columns(self) -> int:
        """Same as :attr:`total`."""
        return self.total

    def print_usage_report(self) -> None:
        """Print one line per allocation and the total."""
        total = self.total
        for a in self._allocs:
            owner = self._owner.get(a.name, "")
            print(
                f"  {a.name:<24} cols {a.offset:>4} .. {a.offset + a.num_columns - 1:>4}"
                f"  ({a.num_columns}){f'  [{owner}]' if owner else ''}"
            )
        print(f"  TMEM total: {total} of {TMEM_COLUMNS} columns")


@dataclasses.dataclass(frozen=True)
class TmemDeclaration:
    """What a ``TaskManager`` was told about tensor memory.

    Attributes:
        allocator: The :class:`TmemAllocator` (None: the kernel declares no TMEM).
        capacity: Columns the kernel may use (None: the target's).
        ptr_i32: The SMEM word holding the TMEM base address, when given explicitly (else the
            SMEM allocator's ``add_tmem_ptr`` slot).
    """

    allocator: TmemAllocator | None = None
    capacity: int | None = None
    ptr_i32: Any = None

    @staticmethod
    def of(allocator: Any, capacity: Any, ptr_i32: Any) -> TmemDeclaration:
        """Check the ``TaskManager``'s TMEM arguments and bundle them."""
        if allocator is not None and not isinstance(allocator, TmemAllocator):
            raise argument_error(
                f"TaskManager(tmem_allocator=...) must be a TmemAllocator, got "
                f"{describe_value(allocator)}",
                fix="build it with TmemAllocator(), add_resource(...) and compute_layout()",
            )
        if capacity is not None and (not is_int(capacity) or not 1 <= capacity <= 2**16):
            raise argument_error(
                f"TaskManager(tmem_capacity_columns=...) must be an int in [1, 65536], got "
                f"{describe_value(capacity)}",
                fix="leave it None (the target's 512 columns) or pass a smaller budget",
            )
        if allocator is not None and not allocator.is_laid_out:
            allocator.compute_layout()
        return TmemDeclaration(allocator, capacity, ptr_i32)

    def specs(self) -> tuple[TmemAllocationSpec, ...]:
        """The laid-out blocks as IR (what ts-verify judges against the target, TS-V219)."""
        if self.allocator is None:
            return ()
        return tuple(
            TmemAllocationSpec(a.name, a.num_columns, a.offset, self.allocator.owner_of(a))
            for a in self.allocator.allocations
        )
