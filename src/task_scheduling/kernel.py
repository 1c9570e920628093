"""The staged front door: ``Kernel`` and its stages, and reusable resources (re-exports).

The resources (``TmaRing``, ``WgmmaRing``, ``WgmmaAccumulator``, ``TmaEpilogue``, ...) are
:mod:`ts_runtime.blocks`.

A kernel is declared once by a function of its parameters; the kernel object traces, plans
and verifies it on the host (no GPU, no CuTe DSL) and lowers and compiles it with the DSL::

    from task_scheduling.kernel import Kernel, Tasks

    kernel = Kernel(declare, name="copy")
    print(kernel.verify().as_text())

Like ``task_scheduling.task``, not imported by ``task_scheduling/__init__``: it belongs to
the runtime layer.
"""

from ts_runtime.blocks import (
    TileTurns,
    TmaEpilogue,
    TmaRing,
    TmaSource,
    WgmmaAccumulator,
    WgmmaRing,
    prefetch_tma,
    tile_queue,
)
from ts_runtime.staged import (
    Compiled,
    Kernel,
    KernelContext,
    Lowered,
    Planned,
    Symbol,
    Tasks,
    Traced,
    Verified,
)

__all__ = [
    "Compiled",
    "Kernel",
    "KernelContext",
    "Lowered",
    "Planned",
    "Symbol",
    "Tasks",
    "TileTurns",
    "TmaEpilogue",
    "TmaRing",
    "TmaSource",
    "Traced",
    "Verified",
    "WgmmaAccumulator",
    "WgmmaRing",
    "prefetch_tma",
    "tile_queue",
]
