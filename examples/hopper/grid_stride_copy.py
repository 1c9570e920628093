"""Grid-stride global-to-global copy on Hopper: one TS task, no pipeline, and its twin.

Every thread of a ``CTAS x THREADS`` grid walks the tensor from its global thread index with a
stride of the whole grid. The TS kernel states this as one task whose schedule is a domain loop
with runtime bounds; a consumer work call reads ``src[loop_offset]`` and a producer work call
writes it to ``dst[loop_offset]``, the element routed between them as a task-local value.
The hand-written twin is the same loop written directly in CuTe DSL.

Usage::

    python examples/hopper/grid_stride_copy.py --compile-only   # CPU: PTX counts, TS vs twin
    python examples/hopper/grid_stride_copy.py                  # GPU: run, check, time
"""

from __future__ import annotations

import os
import sys
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute

from task_scheduling import domain_loop, schedule
from task_scheduling.harness import Case, ExampleCLI, fake_tensor, to_cute
from task_scheduling.harness import compile_only as compare
from task_scheduling.harness import run_on_gpu as run_kernels
from task_scheduling.kernel import GmemVector, Kernel, KernelContext, Tasks, grid_stride
from task_scheduling.plan import KernelPlan
from task_scheduling.schedule_builder import ResourceProxy
from task_scheduling.task import Task

CTAS = 132
THREADS = 256
UNROLL = 4
DEFAULT_N = 1 << 20


# ---------------------------------------------------------------------------------------------
# TS kernel: resources, schedule, task
# ---------------------------------------------------------------------------------------------


def copy_tasks(k: KernelContext, src: Any, dst: Any, n: Any) -> Tasks:
    """Each thread copies elements ``tid, tid + grid, ...`` below ``n``."""
    s, d = GmemVector(name="src", tensor=src, dtype="Float16"), GmemVector(name="dst", tensor=dst)

    @schedule
    def copy(src: ResourceProxy, dst: ResourceProxy) -> None:
        with domain_loop(*grid_stride(k, n), unroll=UNROLL):
            dst.store(element=src.load())

    return Tasks([Task([s], [d], 0, THREADS // 32, schedule=copy(s, d), name="copy")], {d: [s]})


KERNEL = Kernel(copy_tasks, name="grid_stride_copy")


@KERNEL.launcher
@cute.jit
def ts_copy(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    KERNEL.launch(src, dst, n, grid=(CTAS, 1, 1))


# ---------------------------------------------------------------------------------------------
# Hand-written twin: the same schedule in plain CuTe DSL
# ---------------------------------------------------------------------------------------------


@cute.kernel
def twin_copy_kernel(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    gdim, _, _ = cute.arch.grid_dim()
    for i in cutlass.range(bidx * bdim + tidx, n, gdim * bdim, unroll=UNROLL):  # type: ignore[attr-defined]
        dst[i] = src[i]


@cute.jit
def twin_copy(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    twin_copy_kernel(src, dst, n).launch(grid=(CTAS, 1, 1), block=(THREADS, 1, 1))


# ---------------------------------------------------------------------------------------------
# Host side: the harness of task_scheduling.harness
# ---------------------------------------------------------------------------------------------


def make_plan() -> KernelPlan:
    """The grid-stride copy as a kernel plan (traced on the host, no GPU)."""
    return Kernel(copy_tasks, name="grid_stride_copy").plan().plan


PLAN = KERNEL.plan().plan
KERNELS = {"ts": ts_copy, "twin": twin_copy}


def compile_only(n: int = DEFAULT_N) -> dict[str, Any]:
    """Verify the plan, compile both kernels for sm_90a with fake tensors, count PTX."""
    args = (fake_tensor(cutlass.Float16, n), fake_tensor(cutlass.Float16, n), cutlass.Int32(n))
    return compare("grid_stride_copy", KERNELS, args, plan=PLAN, n=n)


def run_on_gpu(n: int, iters: int) -> dict[str, Any]:
    """Run both kernels on the GPU, check against torch, time them."""
    import torch

    src = torch.randn(n, device="cuda", dtype=torch.float16)

    def case(name: str) -> Case:
        dst = torch.empty_like(src)
        args = (to_cute(src, None), to_cute(dst, None), cutlass.Int32(n))
        return Case(args, lambda: torch.equal(dst, src))

    out = run_kernels(KERNELS, case, iters=iters, bytes_moved=4 * n)
    return {"example": "grid_stride_copy", "n": n, **out}


def main(argv: list[str] | None = None) -> int:
    cli = ExampleCLI(__doc__, __file__, shape={"n": DEFAULT_N})
    args = cli.parse(argv)
    return cli.run(lambda: compile_only(args.n), lambda: run_on_gpu(args.n, args.iters))


if __name__ == "__main__":
    sys.exit(main())
