"""The staged grid-stride copy and its hand-written twin (imported when the DSL is there)."""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute
from test_runtime_staged import copy_tasks

from ts_runtime.staged import Kernel, KernelContext, Tasks

kern = Kernel(copy_tasks, name="grid_stride_copy")


@kern.launcher
@cute.jit
def launch(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    kern.launch(src, dst, n, grid=(132, 1, 1))


@cute.kernel
def twin_kernel(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    gdim, _, _ = cute.arch.grid_dim()
    for i in cutlass.range(bidx * bdim + tidx, n, gdim * bdim, unroll=4):  # type: ignore[attr-defined]
        dst[i] = src[i]


@cute.jit
def twin(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    twin_kernel(src, dst, n).launch(grid=(132, 1, 1), block=(256, 1, 1))


def staged_smem_kernel(elements: int) -> Kernel:
    """The copy, with ``elements`` halves staged in SMEM through ``k.smem_tensor``."""

    def declare(k: KernelContext, src: Any, dst: Any, n: Any) -> Tasks:
        k.smem_tensor(cutlass.Float16, lambda: cute.make_layout(elements))  # staged in SMEM
        return copy_tasks(k, src, dst, n)

    return _one_cta(Kernel(declare, name="staged_smem"))


def copy_kernel(body: Any) -> Kernel:
    """The grid-stride copy with ``body(src, dst)`` as its loop body (for misuse tests)."""
    from test_runtime_staged import Destination, Source

    from ts_runtime import Task
    from ts_trace import ResourceProxy, domain_loop, schedule

    def declare(k: KernelContext, src: Any, dst: Any, n: Any) -> Tasks:
        s, d = Source(name="src", tensor=src), Destination(name="dst", tensor=dst)
        start = k.block_idx[0] * k.block_dim[0] + k.thread_idx[0]

        @schedule
        def copy(src: ResourceProxy, dst: ResourceProxy) -> None:
            with domain_loop(start, n, k.grid_dim[0] * k.block_dim[0]):
                body(src, dst)

        return Tasks([Task([s], [d], 0, 8, schedule=copy(s, d), name="copy")], {d: [s]})

    return _one_cta(Kernel(declare, name="copy_misuse"))


def _one_cta(kern: Kernel) -> Kernel:
    """``kern`` with a launcher of one CTA."""

    @kern.launcher
    @cute.jit
    def launch(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
        kern.launch(src, dst, n, grid=(1, 1, 1))

    return kern
