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

import argparse
import dataclasses
import json
import os
import sys
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
from _gpu_check import gpu_ready

import ts_codegen
from ts_codegen.dsl import compile_ptx
from ts_codegen.ptx import opcode_counts
from ts_ir import KernelPlan
from ts_trace import (
    MemoryResource,
    ResourceProxy,
    TaskDeclaration,
    TaskLocalVariable,
    build_plan,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
)

CTAS = 132
THREADS = 256
UNROLL = 4
DEFAULT_N = 1 << 20


def runtime(name: str) -> Any:
    """A placeholder for a bound that is a runtime value in the kernel (named for rendering)."""
    return type(name, (), {})()


# ---------------------------------------------------------------------------------------------
# TS kernel: resources, schedule, task
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(kw_only=True)
class Source(MemoryResource):
    """The input tensor in global memory."""

    tensor: Any = None
    element: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.element = TaskLocalVariable(dtype="Float16", default=0)

    @consumer_work(returns=element)
    @cute.jit
    def load(self, stage_info: Any) -> Any:
        return self.tensor[stage_info.loop_offset]


@dataclasses.dataclass(kw_only=True)
class Destination(MemoryResource):
    """The output tensor in global memory."""

    tensor: Any = None

    @producer_work
    @cute.jit
    def store(self, stage_info: Any, *, element: Any) -> None:
        self.tensor[stage_info.loop_offset] = element


@schedule
def copy_schedule(src: ResourceProxy, dst: ResourceProxy) -> None:
    """Each thread copies elements ``tid, tid + grid, ...`` below ``n``."""
    with domain_loop(runtime("thread_start"), runtime("n"), runtime("grid_threads"), unroll=UNROLL):
        value = src.load()
        dst.store(element=value)


def make_plan() -> KernelPlan:
    """The grid-stride copy as a kernel plan (traced on the host, no GPU)."""
    src, dst = Source(name="src"), Destination(name="dst")
    task = TaskDeclaration([src], [dst], 0, THREADS // 32, copy_schedule(src, dst), name="copy")
    return build_plan([task], {dst: [src]}, name="grid_stride_copy")


PLAN = make_plan()


@cute.kernel
def ts_copy_kernel(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    gdim, _, _ = cute.arch.grid_dim()
    resources = [Source(name="src", tensor=src), Destination(name="dst", tensor=dst)]
    ts_codegen.emit_tasks(PLAN, resources, bounds={"copy": [(bidx * bdim + tidx, n, gdim * bdim)]})


@cute.jit
def ts_copy(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    ts_copy_kernel(src, dst, n).launch(grid=(CTAS, 1, 1), block=(THREADS, 1, 1))


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
# CLI
# ---------------------------------------------------------------------------------------------


def compile_only(n: int = DEFAULT_N) -> dict[str, Any]:
    """Verify the plan, compile both kernels for sm_90a with fake tensors, count PTX."""
    from cutlass.cute.runtime import make_fake_compact_tensor

    try:
        from ts_verify import verify

        verify(PLAN).raise_for_errors()
        verified = True
    except ImportError:
        verified = False
    result: dict[str, Any] = {"example": "grid_stride_copy", "n": n, "verified": verified}
    for name, fn in (("ts", ts_copy), ("twin", twin_copy)):
        src = make_fake_compact_tensor(cutlass.Float16, (n,))
        dst = make_fake_compact_tensor(cutlass.Float16, (n,))
        _, ptx = compile_ptx(fn, src, dst, cutlass.Int32(n))
        result[name] = ts_codegen.count_instructions(ptx)
        result[f"{name}_total"] = sum(opcode_counts(ptx).values())
    result["same_counts"] = result["ts"] == result["twin"]
    return result


def run_on_gpu(n: int, iters: int) -> dict[str, Any]:
    """Run both kernels on the GPU, check against torch, time them."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    src_t = torch.randn(n, device="cuda", dtype=torch.float16)
    result: dict[str, Any] = {"example": "grid_stride_copy", "n": n}
    for name, fn in (("ts", ts_copy), ("twin", twin_copy)):
        dst_t = torch.empty_like(src_t)
        src, dst = from_dlpack(src_t), from_dlpack(dst_t)
        compiled = cute.compile(fn, src, dst, cutlass.Int32(n))
        compiled(src, dst, cutlass.Int32(n))
        torch.cuda.synchronize()
        ok = bool(torch.equal(dst_t, src_t))
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            compiled(src, dst, cutlass.Int32(n))
        end.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(end) / iters
        result[name] = {"ok": ok, "ms": ms, "GBps": 2 * n * 2 / (ms * 1e6)}
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compile-only", action="store_true", help="CPU: compile, count PTX")
    parser.add_argument("--n", type=int, default=DEFAULT_N, help="elements to copy")
    parser.add_argument("--iters", type=int, default=20, help="timed launches (GPU run)")
    args = parser.parse_args(argv)
    if args.compile_only:
        out = compile_only(args.n)
        print(json.dumps(out, sort_keys=True))
        return 0 if out["same_counts"] else 1
    if not gpu_ready(__file__):
        return 2
    out = run_on_gpu(args.n, args.iters)
    print(json.dumps(out, sort_keys=True))
    return 0 if out["ts"]["ok"] and out["twin"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
