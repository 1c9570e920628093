# mypy: ignore-errors
# (Written as a reference user writes DSL code: cutlass.Constexpr fields, proxy pipeline ops
# on resources, DSL values typed by the tracer. The harness that runs them is type-checked.)
"""Chunked copy: each CTA walks its own contiguous range, a runtime two-bound loop.

Covers: ``domain_loop(start, end)`` with both bounds computed from the block index, a positional
argument plus a constant (``d.put(v, scale=1)``).
"""

from dataclasses import dataclass
from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import make_fake_compact_tensor

from task_scheduling.resources import (
    MemoryResource,
    StageInfo,
    TaskLocalVariable,
    consumer_work,
    producer_work,
)
from task_scheduling.schedule_builder import domain_loop, schedule
from task_scheduling.task import Task
from task_scheduling.task_manager import TaskManager

THREADS = 32
CTAS = 4
N = 4000  # a multiple of CTAS
SCALE = 3


@dataclass(kw_only=True)
class Src(MemoryResource):
    tensor: cute.Tensor
    value: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.value = TaskLocalVariable(dtype=cutlass.Float32, default=cutlass.Float32(0))

    @consumer_work(returns=value)
    @cute.jit
    def get(self, stage_info: StageInfo) -> cutlass.Float32:
        return self.tensor[stage_info.loop_offset]


@dataclass(kw_only=True)
class Dst(MemoryResource):
    tensor: cute.Tensor

    @producer_work
    @cute.jit
    def put(
        self, stage_info: StageInfo, value: cutlass.Float32, *, scale: cutlass.Constexpr[int]
    ) -> None:
        self.tensor[stage_info.loop_offset] = value * cutlass.Float32(scale)


@cute.kernel
def scale_kernel(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    bx, _, _ = cute.arch.block_idx()
    src_res = Src(name="src", tensor=src)
    dst_res = Dst(name="dst", tensor=dst)

    @schedule
    def scaled(s: Src, d: Dst) -> None:
        with domain_loop(bx * (n // CTAS), (bx + 1) * (n // CTAS)):
            v = s.get()
            d.put(v, scale=1)

    task = Task(
        name="scale",
        src_resources=[src_res],
        dst_resources=[dst_res],
        warp_idx=0,
        num_warps=THREADS // 32,
        schedule=scaled(src_res, dst_res),
    )
    manager = TaskManager(tasks=[task], resource_dependency_graph={dst_res: [src_res]})
    manager.setup_resources_and_tasks()
    manager.run()


@cute.jit
def host(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    scale_kernel(src, dst, n).launch(grid=(CTAS, 1, 1), block=(THREADS, 1, 1))


def compile_fake(arch: str) -> Any:
    src = make_fake_compact_tensor(cutlass.Float32, (N,))
    dst = make_fake_compact_tensor(cutlass.Float32, (N,))
    return cute.compile(host, src, dst, cutlass.Int32(N), options=f"--gpu-arch={arch} --keep-ptx")


def run_gpu() -> None:
    import torch
    from cutlass.cute.runtime import from_dlpack

    src_t = torch.randn(N, device="cuda")
    dst_t = torch.zeros_like(src_t)
    src, dst = from_dlpack(src_t), from_dlpack(dst_t)
    cute.compile(host, src, dst, cutlass.Int32(N))(src, dst, cutlass.Int32(N))
    torch.cuda.synchronize()
    torch.testing.assert_close(dst_t, src_t)
    print("PASS")
