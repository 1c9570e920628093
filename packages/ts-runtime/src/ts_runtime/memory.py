"""Shared memory: named allocations, a declarative layout, and typed views inside the kernel.

On the host (or at kernel trace time, before any SMEM is touched) an :class:`SmemAllocator`
collects :class:`SmemAllocation` s, from resources (``add_resource``) or directly (``add``), and
alias groups whose phases share storage, then lays them out once (``compute_layout``, built on
:func:`ts_ir.compute_smem_layout`; the mbarriers of every pipelined resource follow the data).

Inside the ``@cute.kernel``, ``allocate()`` reserves the laid-out data block in SMEM with the
CuTe DSL's ``cutlass.memory.SmemAllocator`` and ``get(alloc)`` returns a typed view of one
allocation. The pipelines' mbarriers are carved after the data, from the same allocator
(:meth:`SmemAllocator.allocate_array`, which the code generator calls).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ts_ir import SmemAllocationSpec, SmemLayout, compute_smem_layout
from ts_ir.errors import INT32_MAX, describe_value, is_int
from ts_ir.smem import DEFAULT_SMEM_CAPACITY
from ts_runtime._arguments import argument_error, require_int

__all__ = ["ResourceContext", "SmemAllocation", "SmemAllocator"]


def _dtype_name(dtype: Any) -> str:
    return "" if dtype is None else str(getattr(dtype, "__name__", dtype))


@dataclasses.dataclass
class SmemAllocation:
    """A named SMEM byte region.

    If ``dtype`` is given and ``size_bytes`` is 0, the size is ``count * dtype.width // 8``.
    ``offset`` is filled in by :meth:`SmemAllocator.compute_layout`.

    Attributes:
        name: Unique name within the kernel (``resource.region`` by convention).
        size_bytes: Size in bytes.
        alignment: Byte alignment, a power of two.
        dtype: Element type of the typed view (a CuTe DSL numeric type), or None for bytes.
        count: Number of elements of ``dtype``.
        offset: Byte offset from the start of the SMEM block (after ``compute_layout``).
    """

    name: str
    size_bytes: int = 0
    alignment: int = 128
    dtype: Any = None
    count: int = 1
    offset: int = dataclasses.field(default=0, init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise argument_error(
                f"SmemAllocation needs a non-empty name, got {describe_value(self.name)}",
                fix="name it 'resource.region', e.g. SmemAllocation('ring.tiles', 32768)",
            )
        require_int(
            self.size_bytes, f"SmemAllocation {self.name!r}: size_bytes", low=0, high=INT32_MAX
        )
        a = self.alignment
        if not is_int(a) or not 1 <= a <= INT32_MAX or a & (a - 1):
            raise argument_error(
                f"SmemAllocation {self.name!r}: alignment {a!r:.40} is not a power of 2",
                fix="use a power of two such as 16, 128 or 1024",
            )
        require_int(self.count, f"SmemAllocation {self.name!r}: count", low=0, high=INT32_MAX)
        if self.size_bytes == 0 and self.dtype is not None:
            width = getattr(self.dtype, "width", None)
            if not is_int(width) or width < 1:
                raise argument_error(
                    f"SmemAllocation {self.name!r}: dtype {self.dtype!r:.40} has no integer bit "
                    "width; pass size_bytes",
                    fix="pass dtype=cutlass.Float16 (a DSL numeric type) or size_bytes=...",
                )
            self.size_bytes = self.count * width // 8

    def to_spec(self) -> SmemAllocationSpec:
        """The allocation as IR."""
        return SmemAllocationSpec(
            self.name, self.size_bytes, self.alignment, _dtype_name(self.dtype), self.count
        )


@dataclasses.dataclass(frozen=True)
class ResourceContext:
    """Kernel-wide context attached to every ``StageInfo`` (``stage_info.context``).

    Attributes:
        smem_base: The SMEM block allocated by :class:`SmemAllocator`, a ``cutlass.Array`` of
            ``Uint8`` in shared memory: ``smem_base.data_ptr() + alloc.offset`` is ``alloc``.
        tmem_ptr_i32: The SMEM word holding the TMEM base address (Blackwell; None on Hopper).
        smem_allocator: The allocator, for typed views: ``context.smem_allocator.get(alloc)``.
    """

    smem_base: Any = None
    tmem_ptr_i32: Any = None
    smem_allocator: Any = None


def _as_allocation(alloc: Any) -> SmemAllocation:
    if isinstance(alloc, SmemAllocation):
        return alloc
    if isinstance(alloc, SmemAllocationSpec):
        return SmemAllocation(alloc.name, alloc.size_bytes, alloc.alignment, None, alloc.count)
    raise argument_error(
        f"SmemAllocator: expected an SmemAllocation, got {describe_value(alloc)}",
        fix="pass SmemAllocation('resource.region', size_bytes) (or a resource to add_resource)",
    )


class SmemAllocator:
    """Declarative bump allocator for one SMEM block (data, then mbarriers).

    ``compute_layout`` may run once; afterwards allocations have their ``offset`` and no more
    can be added. Blocks are placed by alignment (largest first), alias-group phases share a
    base, and each pipelined resource added with :meth:`add_resource` reserves
    ``num_stages * 16`` bytes of mbarriers after the data.
    """

    def __init__(self) -> None:
        self._allocs: list[SmemAllocation] = []
        self._names: set[str] = set()
        self._alias_groups: list[list[list[SmemAllocation]]] = []
        self._resources: list[Any] = []
        self._barrier_bytes = 0
        self._layout: SmemLayout | None = None
        self._capacity = DEFAULT_SMEM_CAPACITY
        self._inner: Any = None
        self._base: Any = None
        self._base_array: Any = None
        self._tmem_ptr: SmemAllocation | None = None

    # -- declaration ---------------------------------------------------------------------------

    def _check_open(self, what: str) -> None:
        if self._layout is not None:
            raise RuntimeError(f"SmemAllocator.{what}: compute_layout() has already run")

    def _register(self, alloc: Any) -> SmemAllocation:
        a = _as_allocation(alloc)
        if any(a is b for b in self._allocs):
            return a
        if a.name in self._names:
            raise argument_error(
                f"SMEM allocation {a.name!r} is declared twice",
                fix="give each allocation a unique name (by convention 'resource.region')",
            )
        self._names.add(a.name)
        self._allocs.append(a)
        return a

    def add(self, alloc: SmemAllocation) -> SmemAllocation:
        """Add one allocation; returns it (its ``offset`` is set by ``compute_layout``)."""
        self._check_open("add")
        return self._register(alloc)

    def add_tmem_ptr(self, alloc: SmemAllocation) -> SmemAllocation:
        """Add the SMEM word that ``tcgen05.alloc`` writes the TMEM base address into.

        Every work call then sees it as ``stage_info.context.tmem_ptr_i32`` (an ``Int32``
        array of one element: ``.load()`` reads the address).
        """
        self._check_open("add_tmem_ptr")
        a = self._register(alloc)
        self._tmem_ptr = a
        return a

    @property
    def tmem_ptr_alloc(self) -> SmemAllocation | None:
        """The allocation added with :meth:`add_tmem_ptr` (None without one)."""
        return self._tmem_ptr

    def add_resource(self, resource: Any) -> Any:
        """Add a resource's ``get_smem_requirements()`` and its pipeline's mbarrier bytes."""
        self._check_open("add_resource")
        if any(resource is r for r in self._resources):
            return resource
        requirements = getattr(resource, "get_smem_requirements", None)
        if not callable(requirements):
            raise argument_error(
                f"SmemAllocator.add_resource: expected a MemoryResource, got "
                f"{describe_value(resource)}",
                fix="pass a resource (add single allocations with add())",
            )
        allocs = list(requirements())
        cfg = getattr(resource, "pipeline_config", None)
        stages: Any = 0
        if cfg is not None and getattr(cfg, "barrier_ptr", None) is None:
            # A PipelineConfig (num_stages) or a ts_ir.PipelineSpec (stages).
            stages = getattr(cfg, "num_stages", getattr(cfg, "stages", 0))
            if not is_int(stages) or stages < 0:
                raise argument_error(
                    f"SmemAllocator.add_resource: the pipeline of {resource!r:.40} has "
                    f"{describe_value(stages)} stages",
                    fix="build pipeline_config with a PipelineConfig factory",
                )
        self._resources.append(resource)
        for alloc in allocs:
            self._register(alloc)
        self._barrier_bytes += int(stages) * 16
        return resource

    def add_pipeline_group(self, group: Any) -> Any:
        """Accept a ``PipelineGroup`` (the reference's call); it reserves no SMEM of its own.

        TS lowers a group on its members' own mbarriers (``docs/groups.rst``), which
        :meth:`add_resource` counts for each member, so the group adds no bytes (the
        reference lays out ``N + 1`` barrier arrays per stage for the group instead).
        """
        self._check_open("add_pipeline_group")
        from ts_trace import PipelineGroup

        if not isinstance(group, PipelineGroup):
            raise argument_error(
                f"SmemAllocator.add_pipeline_group: expected a PipelineGroup, got "
                f"{describe_value(group)}",
                fix="pass the PipelineGroup(name=..., members=[...], mode=...) itself",
            )
        return group

    def add_alias_group(self, phases: Sequence[Sequence[SmemAllocation]]) -> None:
        """Let the phases (lists of allocations) share one region: never live together.

        Raises:
            ValueError: Fewer than two phases.
        """
        self._check_open("add_alias_group")
        if (
            isinstance(phases, (str, bytes))
            or not isinstance(phases, (list, tuple))
            or len(phases) < 2
            or not all(isinstance(p, (list, tuple)) for p in phases)
        ):
            raise argument_error(
                f"an alias group needs at least two phases (lists of allocations), got "
                f"{phases!r:.60}",
                fix="pass [[alloc_a, alloc_b], [alloc_c]]: the phases never live together",
            )
        group = [[self._register(a) for a in phase] for phase in phases]
        self._alias_groups.append(group)

    def compute_layout(self, capacity: int | None = None) -> SmemLayout:
        """Lay out every allocation once and fill in the offsets.

        Args:
            capacity: SMEM bytes per CTA (default 232448); an overflow is reported by the
                ``TaskManager``, not here.

        Raises:
            RuntimeError: The layout was already computed.
            ts_ir.SmemLayoutError: Malformed declarations.
        """
        self._check_open("compute_layout")
        if capacity is not None:
            self._capacity = require_int(
                capacity, "SmemAllocator.compute_layout(capacity)", low=1, high=INT32_MAX
            )
        layout = compute_smem_layout(
            tuple(a.to_spec() for a in self._allocs),
            self.alias_groups_by_name(),
            barrier_bytes=self._barrier_bytes,
            capacity=self._capacity,
        )
        for a in self._allocs:
            a.offset = layout.placement(a.name).offset
        self._layout = layout
        return layout

    # -- queries -------------------------------------------------------------------------------

    def alias_groups_by_name(self) -> tuple[tuple[tuple[str, ...], ...], ...]:
        """The alias groups as allocation names (what ``ts_trace.build_plan`` takes)."""
        return tuple(
            tuple(tuple(a.name for a in phase) for phase in group) for group in self._alias_groups
        )

    @property
    def allocations(self) -> tuple[SmemAllocation, ...]:
        """Every allocation, in declaration order."""
        return tuple(self._allocs)

    @property
    def resources(self) -> tuple[Any, ...]:
        """The resources added with :meth:`add_resource`."""
        return tuple(self._resources)

    @property
    def layout(self) -> SmemLayout:
        """The computed layout (computed now if needed)."""
        if self._layout is None:
            return self.compute_layout()
        return self._layout

    @property
    def is_laid_out(self) -> bool:
        """True once :meth:`compute_layout` has run."""
        return self._layout is not None

    @property
    def barrier_smem_bytes(self) -> int:
        """Bytes of mbarriers reserved for the added resources' pipelines."""
        return self._barrier_bytes

    @property
    def data_smem_bytes(self) -> int:
        """Bytes of the data region (rounded up to 8)."""
        return self.layout.data_bytes

    @property
    def total(self) -> int:
        """The size in bytes of the whole block, data plus mbarriers."""
        return self.layout.total

    @property
    def total_smem_bytes(self) -> int:
        """Same as :attr:`total`."""
        return self.total

    def print_usage_report(self) -> None:
        """Print the layout table and the data / barrier / total / capacity summary."""
        print(self.layout.report())

    # -- inside the kernel ---------------------------------------------------------------------

    def allocate(self, inner: Any = None) -> Any:
        """Reserve the data block in SMEM (kernel trace time); returns its ``Uint8`` pointer.

        Args:
            inner: A ``cutlass.memory.SmemAllocator`` to allocate from (a new one when None);
                the pipelines' mbarriers are allocated after the block from the same one.
        """
        if self._base is not None:
            return self._base
        from ts_runtime import _dsl

        layout = self.layout
        self._inner = _dsl.smem_allocator() if inner is None else inner
        alignment = max((a.alignment for a in self._allocs), default=8)
        size = max(layout.data_bytes, 8)
        self._base = self._inner.allocate_array(
            _dsl.uint8(), num_elems=size, byte_alignment=max(alignment, 8)
        )
        # What work methods see as ``stage_info.context.smem_base``: an SMEM array of bytes, so
        # ``smem_base.data_ptr() + alloc.offset`` addresses an allocation (the reference's type).
        self._base_array = _dsl.byte_array(self._base, size)
        return self._base

    @property
    def smem_base(self) -> Any:
        """The SMEM block as a ``cutlass.Array`` of ``Uint8`` (after :meth:`allocate`).

        ``smem_base.data_ptr() + alloc.offset`` is the address of ``alloc``.
        """
        if self._base_array is None:
            raise RuntimeError("SmemAllocator.smem_base: call allocate() inside the kernel first")
        return self._base_array

    @property
    def smem_base_ptr(self) -> Any:
        """The SMEM block's ``Uint8`` pointer (after :meth:`allocate`)."""
        if self._base is None:
            raise RuntimeError("SmemAllocator.smem_base: call allocate() inside the kernel first")
        return self._base

    @property
    def dsl_allocator(self) -> Any:
        """The CuTe DSL allocator the block came from (after :meth:`allocate`)."""
        if self._inner is None:
            raise RuntimeError("SmemAllocator: call allocate() inside the kernel first")
        return self._inner

    def allocate_array(
        self, element_type: Any, num_elems: int = 1, *, byte_alignment: int = 1
    ) -> Any:
        """SMEM after the data block (the code generator takes mbarrier storage from here)."""
        if self._inner is None:
            self.allocate()
        return self._inner.allocate_array(
            element_type, num_elems=num_elems, byte_alignment=byte_alignment
        )

    def get_as_type(
        self, alloc: SmemAllocation, dtype: Any, count: int = 1, *, layout: Any = None
    ) -> Any:
        """A tensor of ``dtype`` over ``alloc``'s bytes: 1-D of ``count`` elements, or ``layout``.

        Raises:
            KeyError: ``alloc`` was not added to this allocator.
            ValueError: The view needs more bytes than the allocation has.
        """
        from ts_runtime import _dsl

        a = _as_allocation(alloc)
        if a.name not in self._names:
            raise KeyError(f"SMEM allocation {a.name!r} was not added to this allocator")
        width = int(dtype.width)
        if layout is not None:
            count = _dsl.cosize(layout)
        if count * width // 8 > a.size_bytes:
            raise ValueError(
                f"SMEM allocation {a.name!r} has {a.size_bytes} bytes, too few for {count} x "
                f"{_dtype_name(dtype)}"
            )
        placement = self.layout.placement(a.name)
        return _dsl.typed_view(self.smem_base_ptr + placement.offset, dtype, count, layout)

    def get_typed_ptr(self, alloc: SmemAllocation, dtype: Any, count: int = 1) -> Any:
        """The reference's older name of :meth:`get_as_type` (it marks it deprecated there).

        Kept so that a program written against it runs unchanged; new code calls
        :meth:`get_as_type` or :meth:`get`.
        """
        return self.get_as_type(alloc, dtype, count)

    def get(self, alloc: SmemAllocation, *, layout: Any = None) -> Any:
        """A typed view of ``alloc`` (kernel trace time).

        With ``layout``, a tensor of ``alloc.dtype`` (bytes without one) shaped by it (e.g. a
        multi-stage tile ring). Without, as the reference: a ``cutlass.Array`` of
        ``alloc.count`` elements of ``alloc.dtype`` (``.load()`` / ``.store()``, and what
        ``tcgen05_alloc`` or an mbarrier primitive takes), or a tensor of bytes without a dtype.
        """
        from ts_runtime import _dsl

        a = _as_allocation(alloc)
        if layout is None and a.dtype is not None:
            if a.name not in self._names:
                raise KeyError(f"SMEM allocation {a.name!r} was not added to this allocator")
            offset = self.layout.placement(a.name).offset
            return _dsl.typed_array(self.smem_base_ptr + offset, a.dtype, a.count)
        if a.dtype is None:
            return self.get_as_type(a, _dsl.uint8(), a.size_bytes, layout=layout)
        return self.get_as_type(a, a.dtype, a.count, layout=layout)
