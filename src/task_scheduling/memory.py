"""SMEM and TMEM allocation (re-exported from :mod:`ts_runtime.memory` and :mod:`ts_runtime.tmem`).

Not imported by ``task_scheduling/__init__``: it belongs to the runtime layer, whose in-kernel
methods use the CuTe DSL. Import it explicitly::

    from task_scheduling.memory import SmemAllocation, SmemAllocator, TmemAllocation, TmemAllocator
"""

from ts_runtime.memory import ResourceContext, SmemAllocation, SmemAllocator
from ts_runtime.tmem import TmemAllocation, TmemAllocator

__all__ = ["ResourceContext", "SmemAllocation", "SmemAllocator", "TmemAllocation", "TmemAllocator"]
