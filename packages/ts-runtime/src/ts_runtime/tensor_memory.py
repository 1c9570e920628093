"""``TensorMemory``: a CTA's TMEM allocation as a resource whose lifetime the schedules state.

In the reference, ``tcgen05.alloc`` / ``relinquish_alloc_permit`` / ``dealloc`` are the kernel
author's code around ``TaskManager.run()``, invisible to the checks. With this resource they are
two work calls of the schedules, placed where the lifetime begins and ends::

    tmem = TensorMemory(name="tmem", num_columns=256, warp=5, free_warp=0)

    @schedule
    def mma(tmem, smem, acc):
        tmem.allocate()            # tcgen05.alloc + relinquish_alloc_permit (warp 5)
        ...                        # the UMMAs into acc

    @schedule
    def epilogue(tmem, acc, gmem):
        ...                        # the tcgen05.ld of acc
        tmem.free()                # tcgen05.dealloc, after the last read (warp 0)

ts-verify then checks the lifetime (``ts_verify.tmem_lifetime``): freed on every path
(TS-V222), no use after a task's own free (TS-V223), and every use of another task ordered
after the allocation and before the free by the kernel's barriers (TS-V224). The uses are the
work calls on the resources that own TMEM blocks (``get_tmem_requirements``).

The address is written to the SMEM word of ``SmemAllocator.add_tmem_ptr``, which every work
call reads as ``stage_info.context.tmem_ptr_i32``. Both instructions are warp-wide: one warp of
the calling task runs each (``warp`` allocates, ``free_warp`` frees; any warp of the CTA may
free what another allocated).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ts_ir import TMEM_COLUMNS, WorkAttr
from ts_runtime._arguments import at_line
from ts_runtime.errors import RuntimeConfigError
from ts_trace import MemoryResource, consumer_work

_CTA_WARPS = 32
"""Warps of the largest CTA (1024 threads): the warp indices there are."""

__all__ = ["TensorMemory"]


@dataclasses.dataclass(kw_only=True)
class TensorMemory(MemoryResource):
    """The CTA's TMEM allocation (Blackwell), allocated and freed by work calls.

    Args:
        name: Resource name.
        num_columns: Columns to allocate: a power of two from 32 to 512 (``tcgen05.alloc``'s
            rule), at least the kernel's TMEM layout (``TmemAllocator.total``).
        warp: The CTA warp that runs ``tcgen05.alloc``: a warp of the task that calls
            ``allocate()``.
        free_warp: The CTA warp that runs ``tcgen05.dealloc``, a warp of the task that calls
            ``free()`` (None: ``warp``).
    """

    num_columns: int = 0
    warp: int = -1
    free_warp: int | None = None

    def __post_init__(self) -> None:
        n = self.num_columns
        if not isinstance(n, int) or n < 32 or n > TMEM_COLUMNS or n & (n - 1):
            raise RuntimeConfigError(
                at_line(
                    f"TensorMemory `{self.name}`: num_columns={n!r} is not a power of two from "
                    f"32 to {TMEM_COLUMNS} (what tcgen05.alloc allocates)"
                ),
                resource=self.name,
                fix="round the kernel's TMEM layout up to the next power of two (at least 32)",
            )
        if self.free_warp is None:
            self.free_warp = self.warp
        for field in ("warp", "free_warp"):
            w = getattr(self, field)
            # A CTA has at most 1024 threads: 32 warps.
            if not isinstance(w, int) or isinstance(w, bool) or not 0 <= w < _CTA_WARPS:
                raise RuntimeConfigError(
                    at_line(
                        f"TensorMemory `{self.name}`: {field}={w!r} is not a warp index (0 to "
                        f"{_CTA_WARPS - 1}); tcgen05.alloc and dealloc are each run by one whole "
                        "warp"
                    ),
                    resource=self.name,
                    fix=f"pass {field}=<a warp of the task that calls "
                    f"{'allocate' if field == 'warp' else 'free'}()>",
                )

    @consumer_work(work_attrs=WorkAttr.TMEM_ALLOC)
    def allocate(self, stage_info: Any) -> None:
        """``tcgen05.alloc`` of ``num_columns``, then ``tcgen05.relinquish_alloc_permit``.

        The address goes into the TMEM-pointer word of the kernel's SMEM.
        """
        from ts_codegen.dsl.blackwell import tmem_alloc

        tmem_alloc(self.num_columns, self._slot(stage_info, "allocate"), self.warp)

    @consumer_work(work_attrs=WorkAttr.TMEM_DEALLOC)
    def free(self, stage_info: Any) -> None:
        """``tcgen05.dealloc`` of the columns whose address the TMEM-pointer word holds."""
        from ts_codegen.dsl.blackwell import tmem_free

        warp = self.warp if self.free_warp is None else self.free_warp
        tmem_free(self.num_columns, self._slot(stage_info, "free"), warp)

    def _slot(self, stage_info: Any, what: str) -> Any:
        slot = getattr(stage_info.context, "tmem_ptr_i32", None)
        if slot is None:
            raise RuntimeConfigError(
                f"TensorMemory `{self.name}`.{what}: the kernel has no SMEM word for the TMEM "
                "address",
                resource=self.name,
                fix="reserve it with smem_allocator.add_tmem_ptr(SmemAllocation('tmem_ptr', "
                "dtype=cutlass.Int32, alignment=4))",
            )
        return slot
