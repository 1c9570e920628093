"""The ts-verify part of the error catalog: every ``TS-Vxxx`` code, explained with an example.

:mod:`ts_verify.diagnostics` registers :data:`VERIFY_ENTRIES` in the :mod:`ts_ir.catalog`
registry and derives :data:`ts_verify.diagnostics.VERIFY_CATALOG` from them.

The examples start from the resources and schedules of the copy kernel (``EXAMPLES_PRELUDE`` of
``ts_trace.catalog_entries``: ``src``, ``ring``, ``dst``, ``tiles``, ``load_task`` and
``store_task``). An example that builds no ``plan`` of its own redefines one of the two
schedules (or a resource), and the kernel is the loader/storer plan of "Your first schedule".
Codes are grouped as the verifier runs: ``TS-V1xx`` per task, ``TS-V2xx`` across tasks,
``TS-V3xx`` for the whole kernel.
"""

from __future__ import annotations

from ts_ir import CatalogEntry

__all__ = ["VERIFY_ENTRIES"]

from ts_verify.catalog_blackwell_rules import BLACKWELL_ENTRIES
from ts_verify.catalog_group_rules import GROUP_ENTRIES
from ts_verify.catalog_kernel_rules import KERNEL_ENTRIES
from ts_verify.catalog_launch_rules import LAUNCH_ENTRIES
from ts_verify.catalog_pdl_rules import PDL_ENTRIES
from ts_verify.catalog_task_rules import TASK_ENTRIES

VERIFY_ENTRIES: tuple[CatalogEntry, ...] = tuple(
    sorted(
        (
            *TASK_ENTRIES,
            *KERNEL_ENTRIES,
            *PDL_ENTRIES,
            *GROUP_ENTRIES,
            *LAUNCH_ENTRIES,
            *BLACKWELL_ENTRIES,
        ),
        key=lambda e: e.code,
    )
)
"""The entries of every ``TS-Vxxx`` code, sorted by code."""
