"""The CuTe DSL calls a staged TS kernel needs around its tasks: the device entry and launch.

A :class:`ts_runtime.Kernel` generates its ``@cute.kernel`` here. The kernel takes the values
the host launcher hands it as one tuple (the DSL flattens tuples of DSL values into kernel
parameters), so one generated function serves every kernel whatever its parameters are.

Programmatic dependent launch (PDL) is a launch attribute (``use_pdl``: the kernel may start
before the previous kernel on the stream has finished) plus two instructions in the kernel,
:func:`grid_dependency_wait` and :func:`launch_dependents`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import cutlass.cute as cute

__all__ = [
    "block_dim",
    "block_idx",
    "device_kernel",
    "grid_dependency_wait",
    "grid_dim",
    "launch",
    "launch_dependents",
    "smem_tensor",
    "thread_idx",
]


def device_kernel(body: Callable[[tuple[Any, ...]], object]) -> Any:
    """A ``@cute.kernel`` that calls ``body(params)`` with the tuple it is launched with."""

    @cute.kernel
    def ts_device(params: tuple[Any, ...]) -> None:
        body(params)

    return ts_device


def launch(
    kernel: Any,
    params: Sequence[Any],
    *,
    grid: Sequence[Any],
    block: Sequence[int],
    cluster: Sequence[int] | None = None,
    stream: Any = None,
    use_pdl: bool = False,
) -> None:
    """Launch ``kernel`` (from :func:`device_kernel`) from a ``@cute.jit`` host function.

    ``stream`` (a ``cuda.CUstream``) or None for the default stream; decided in Python, at
    trace time, so a launcher may take an optional stream. ``use_pdl`` sets the launch's
    programmatic-stream-serialization attribute (the kernel may overlap the previous one).
    """
    extra: dict[str, Any] = {} if cluster is None else {"cluster": list(cluster)}
    if stream is not None:
        extra["stream"] = stream
    if use_pdl:
        extra["use_pdl"] = True
    kernel(tuple(params)).launch(grid=list(grid), block=list(block), **extra)


def block_idx() -> tuple[Any, Any, Any]:
    """``blockIdx`` (x, y, z)."""
    return cute.arch.block_idx()  # type: ignore[no-any-return]


def grid_dim() -> tuple[Any, Any, Any]:
    """``gridDim`` (x, y, z)."""
    return cute.arch.grid_dim()  # type: ignore[no-any-return]


def thread_idx() -> tuple[Any, Any, Any]:
    """``threadIdx`` (x, y, z)."""
    return cute.arch.thread_idx()  # type: ignore[no-any-return]


def block_dim() -> tuple[Any, Any, Any]:
    """``blockDim`` (x, y, z)."""
    return cute.arch.block_dim()  # type: ignore[no-any-return]


def smem_tensor(
    allocator: Any, dtype: Any, layout: Any, alignment: int, swizzle: Any = None
) -> Any:
    """An SMEM tensor carved from ``allocator`` (a ``cutlass.memory.SmemAllocator``)."""
    if swizzle is None:
        return allocator.allocate_tensor(dtype, layout, alignment)
    return allocator.allocate_tensor(dtype, layout, alignment, swizzle=swizzle)


def grid_dependency_wait() -> None:
    """``griddepcontrol.wait``: block until the previous grid has finished, its memory visible.

    A no-op when the kernel was not launched with PDL.
    """
    cute.arch.griddepcontrol_wait()


def launch_dependents() -> None:
    """``griddepcontrol.launch_dependents``: let the next grid on the stream start launching.

    It starts once every CTA of this grid has run this or exited.
    """
    cute.arch.griddepcontrol_launch_dependents()
