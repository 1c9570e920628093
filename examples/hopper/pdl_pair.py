"""Two dependent kernels with programmatic dependent launch (PDL): TS pair and hand-written twin.

Kernel 1 (``scale``) writes ``mid = 2 * src``; kernel 2 (``shift``) reads it and writes
``dst = mid + 1``. Both are grid-stride loops of one task. Kernel 2 is launched with PDL
(``use_pdl=True``): it may start while kernel 1 still runs, so its task waits for kernel 1 with
``PdlWaitBarrier.wait_griddep()`` (``griddepcontrol.wait``) before its first read of ``mid``,
and kernel 1 lets it start early with ``PdlLaunchBarrier.launch_griddep()``
(``griddepcontrol.launch_dependents``) once its loop is done. The dependency graph says that
``dst`` is made from ``mid`` after the wait, so ts-verify checks that the wait comes first
(TS-V230). The twin is the same two kernels in plain CuTe DSL.

Kernel 1 is launched without PDL: it overwrites ``mid``, which the previous pair's kernel 2 may
still read.

Usage::

    python examples/hopper/pdl_pair.py --compile-only   # CPU: PTX counts, TS vs twin
    python examples/hopper/pdl_pair.py                  # GPU: run, check, time with/without PDL
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
from cuda.bindings import driver as cuda  # type: ignore[import-untyped]

from task_scheduling import domain_loop, schedule
from task_scheduling.harness import Case, ExampleCLI, fake_tensor, to_cute, verified
from task_scheduling.harness import compile_only as compare
from task_scheduling.harness import run_on_gpu as run_kernels
from task_scheduling.kernel import GmemVector, Kernel, KernelContext, Tasks, grid_stride
from task_scheduling.plan import KernelPlan
from task_scheduling.resources import (
    PdlLaunchBarrier,
    PdlWaitBarrier,
)
from task_scheduling.schedule_builder import ResourceProxy
from task_scheduling.task import Task

CTAS = 132
THREADS = 256
UNROLL = 4
DEFAULT_N = 1 << 20


# ---------------------------------------------------------------------------------------------
# TS kernel: resources, schedules, tasks (two kernels)
# ---------------------------------------------------------------------------------------------


def scale_tasks(k: KernelContext, src: Any, mid: Any, n: Any) -> Tasks:
    """Kernel 1: ``mid = 2 * src``, then trigger the next kernel's launch."""
    s = GmemVector(name="src", tensor=src)
    m = GmemVector(name="mid", tensor=mid, op=lambda x: x * 2.0)
    launch = PdlLaunchBarrier(name="pdl_launch")

    @schedule
    def scale(src: ResourceProxy, mid: ResourceProxy, launch: ResourceProxy) -> None:
        with domain_loop(*grid_stride(k, n), unroll=UNROLL):
            mid.store(element=src.load())
        launch.launch_griddep()  # kernel 2 may start once every CTA got here

    task = Task([s], [m, launch], 0, THREADS // 32, schedule=scale(s, m, launch), name="scale")
    return Tasks([task], {m: [s], launch: []})


def shift_tasks(k: KernelContext, mid: Any, dst: Any, n: Any) -> Tasks:
    """Kernel 2: wait for kernel 1, then ``dst = mid + 1``."""
    m = GmemVector(name="mid", tensor=mid)
    d = GmemVector(name="dst", tensor=dst, op=lambda x: x + 1.0)
    wait = PdlWaitBarrier(name="pdl_wait")

    @schedule
    def shift(wait: ResourceProxy, mid: ResourceProxy, dst: ResourceProxy) -> None:
        wait.wait_griddep()  # kernel 1 has finished and mid is visible
        with domain_loop(*grid_stride(k, n), unroll=UNROLL):
            dst.store(element=mid.load())

    task = Task([wait, m], [d], 0, THREADS // 32, schedule=shift(wait, m, d), name="shift")
    return Tasks([task], {d: [m, wait]})


SCALE = Kernel(scale_tasks, name="pdl_scale")
SHIFT = Kernel(shift_tasks, name="pdl_shift")


def ts_pair(pdl: bool) -> Callable[..., None]:
    """The launcher of the TS pair; kernel 2 with PDL when ``pdl``."""

    @cute.jit
    def pair(
        src: cute.Tensor,
        mid: cute.Tensor,
        dst: cute.Tensor,
        n: cutlass.Int32,
        stream: cuda.CUstream | None = None,
    ) -> None:
        SCALE.launch(src, mid, n, grid=(CTAS, 1, 1), stream=stream)
        SHIFT.launch(mid, dst, n, grid=(CTAS, 1, 1), stream=stream, use_pdl=pdl)

    return pair  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------
# Hand-written twin: the same two kernels in plain CuTe DSL
# ---------------------------------------------------------------------------------------------


@cute.kernel
def twin_scale(src: cute.Tensor, mid: cute.Tensor, n: cutlass.Int32) -> None:
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    gdim, _, _ = cute.arch.grid_dim()
    for i in cutlass.range(bidx * bdim + tidx, n, gdim * bdim, unroll=UNROLL):  # type: ignore[attr-defined]
        x: Any = src[i]
        mid[i] = x * 2.0
    cute.arch.griddepcontrol_launch_dependents()


@cute.kernel
def twin_shift(mid: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    cute.arch.griddepcontrol_wait()
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    gdim, _, _ = cute.arch.grid_dim()
    for i in cutlass.range(bidx * bdim + tidx, n, gdim * bdim, unroll=UNROLL):  # type: ignore[attr-defined]
        y: Any = mid[i]
        dst[i] = y + 1.0


def twin_pair(pdl: bool) -> Callable[..., None]:
    """The launcher of the twin pair; kernel 2 with PDL when ``pdl``."""

    @cute.jit
    def pair(
        src: cute.Tensor,
        mid: cute.Tensor,
        dst: cute.Tensor,
        n: cutlass.Int32,
        stream: cuda.CUstream | None = None,
    ) -> None:
        _launch(twin_scale(src, mid, n), stream, False)
        _launch(twin_shift(mid, dst, n), stream, pdl)

    return pair  # type: ignore[no-any-return]


def _launch(kernel: Any, stream: Any, pdl: bool) -> None:
    """Launch on ``stream`` (the default one when None); plain Python, decided at trace time."""
    extra = {} if stream is None else {"stream": stream}
    kernel.launch(grid=(CTAS, 1, 1), block=(THREADS, 1, 1), use_pdl=pdl, **extra)


# ---------------------------------------------------------------------------------------------
# Host side: the harness of task_scheduling.harness
# ---------------------------------------------------------------------------------------------

PLANS: dict[str, KernelPlan] = {"scale": SCALE.plan().plan, "shift": SHIFT.plan().plan}
PLAN = PLANS["shift"]  # the kernel that waits (what TS-V230 checks)
KERNELS = {"ts": ts_pair(True), "twin": twin_pair(True)}
SERIAL = {"ts_serial": ts_pair(False), "twin_serial": twin_pair(False)}


def compile_only(n: int = DEFAULT_N) -> dict[str, Any]:
    """Verify both plans, compile both pairs for sm_90a with fake tensors, count PTX."""
    args = (*(fake_tensor(cutlass.Float32, n) for _ in range(3)), cutlass.Int32(n))
    out = compare("pdl_pair", KERNELS, args, plan=PLAN, n=n)
    out["verified"] = out["verified"] and verified(PLANS["scale"])
    return out


def run_on_gpu(n: int, iters: int, rounds: int = 3) -> dict[str, Any]:
    """Run the pairs with and without PDL, check against torch, time them (``bench/pdl.py``)."""
    import torch

    src = torch.randn(n, device="cuda", dtype=torch.float32)
    expected = src * 2 + 1
    # A stream of its own (not the legacy default stream), current while checking and timing.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())  # src and expected are made on the default one
    stream = cuda.CUstream(side.cuda_stream)

    def case(name: str) -> Case:
        mid, dst = torch.empty_like(src), torch.empty_like(src)
        args = (to_cute(src, None), to_cute(mid, None), to_cute(dst, None), cutlass.Int32(n))
        return Case((*args, stream), lambda: torch.equal(dst, expected), reset=dst.zero_)

    with torch.cuda.stream(side):
        out = run_kernels(
            {**KERNELS, **SERIAL}, case, iters=iters, rounds=rounds, bytes_moved=16 * n
        )
    for side in ("ts", "twin"):  # > 1: the PDL pair is faster
        out[f"{side}_pdl_speedup"] = out[f"{side}_serial"]["ms"] / out[side]["ms"]
    return {"example": "pdl_pair", "n": n, **out}


def main(argv: list[str] | None = None) -> int:
    cli = ExampleCLI(__doc__, __file__, shape={"n": DEFAULT_N})
    args = cli.parse(argv)
    return cli.run(lambda: compile_only(args.n), lambda: run_on_gpu(args.n, args.iters))


if __name__ == "__main__":
    sys.exit(main())
