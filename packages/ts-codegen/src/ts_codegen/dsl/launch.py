"""The CuTe DSL calls a staged TS kernel needs around its tasks: the device entry and launch.

A :class:`ts_runtime.Kernel` generates its ``@cute.kernel`` here. The kernel takes the values
the host launcher hands it as one tuple (the DSL flattens tuples of DSL values into kernel
parameters), so one generated function serves every kernel whatever its parameters are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import cutlass.cute as cute

__all__ = [
    "block_dim",
    "block_idx",
    "device_kernel",
    "grid_dim",
    "launch",
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
) -> None:
    """Launch ``kernel`` (from :func:`device_kernel`) from a ``@cute.jit`` host function.

    ``stream`` (a ``cuda.CUstream``) or None for the default stream; decided in Python, at
    trace time, so a launcher may take an optional stream.
    """
    extra: dict[str, Any] = {} if cluster is None else {"cluster": list(cluster)}
    if stream is not None:
        extra["stream"] = stream
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
