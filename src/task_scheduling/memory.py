"""SMEM allocation (re-exported from :mod:`ts_runtime.memory`).

Not imported by ``task_scheduling/__init__``: it belongs to the runtime layer, whose in-kernel
methods use the CuTe DSL. Import it explicitly::

    from task_scheduling.memory import SmemAllocation, SmemAllocator
"""

from ts_runtime.memory import ResourceContext, SmemAllocation, SmemAllocator

__all__ = ["ResourceContext", "SmemAllocation", "SmemAllocator"]
