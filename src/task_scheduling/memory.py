"""SMEM and TMEM allocation (re-exported from the runtime layer).

:mod:`ts_runtime.memory`, :mod:`ts_runtime.tmem` and :mod:`ts_runtime.tensor_memory`. Not
imported by ``task_scheduling/__init__``: it belongs to the runtime layer, whose in-kernel
methods use the CuTe DSL. Import it explicitly::

    from task_scheduling.memory import SmemAllocation, SmemAllocator, TmemAllocation, TmemAllocator
"""

from ts_runtime.memory import ResourceContext, SmemAllocation, SmemAllocator
from ts_runtime.tensor_memory import TensorMemory
from ts_runtime.tmem import TmemAllocation, TmemAllocator

__all__ = [
    "ResourceContext",
    "SmemAllocation",
    "SmemAllocator",
    "TensorMemory",
    "TmemAllocation",
    "TmemAllocator",
]
