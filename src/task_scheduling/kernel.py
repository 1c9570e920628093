"""The staged front door: ``Kernel`` and its stages, and reusable resources (re-exports).

The resources (``TmaRing``, ``WgmmaRing``, ``WgmmaAccumulator``, ``TmaEpilogue``, ...) are
:mod:`ts_runtime.blocks`; the typed errors of a declaration are :mod:`ts_runtime.errors`;
``torch_op`` (a compiled kernel as a PyTorch operator) is :mod:`ts_runtime.torch_op`.

A kernel is declared once by a function of its parameters; the kernel object traces, plans
and verifies it on the host (no GPU, no CuTe DSL) and lowers and compiles it with the DSL::

    from task_scheduling.kernel import Kernel, Tasks

    kernel = Kernel(declare, name="copy")
    print(kernel.verify().as_text())

Like ``task_scheduling.task``, not imported by ``task_scheduling/__init__``: it belongs to
the runtime layer.
"""

from ts_runtime.blocks import (
    GmemVector,
    MathTurn,
    SplitK,
    TileTurns,
    TmaEpilogue,
    TmaRing,
    TmaSource,
    WgmmaAccumulator,
    WgmmaRing,
    WgmmaWaits,
    grid_stride,
    prefetch_tma,
    tile_queue,
)
from ts_runtime.errors import (
    GroupSizeError,
    RuntimeConfigError,
    SmemBudgetError,
    TaskDeclarationError,
    UnsupportedFeatureError,
    UnsupportedOnTarget,
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
from ts_runtime.torch_op import TorchOp, torch_op

__all__ = [
    "Compiled",
    "GmemVector",
    "GroupSizeError",
    "Kernel",
    "KernelContext",
    "Lowered",
    "MathTurn",
    "Planned",
    "RuntimeConfigError",
    "SmemBudgetError",
    "SplitK",
    "Symbol",
    "TaskDeclarationError",
    "Tasks",
    "TileTurns",
    "TmaEpilogue",
    "TmaRing",
    "TmaSource",
    "TorchOp",
    "Traced",
    "UnsupportedFeatureError",
    "UnsupportedOnTarget",
    "Verified",
    "WgmmaAccumulator",
    "WgmmaRing",
    "WgmmaWaits",
    "grid_stride",
    "prefetch_tma",
    "tile_queue",
    "torch_op",
]
