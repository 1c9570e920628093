# mypy: ignore-errors
# (Written as a reference user writes DSL code: cutlass.Constexpr fields, proxy pipeline ops
# on resources, DSL values typed by the tracer. The harness that runs them is type-checked.)
"""Grid-stride add of a constant where each thread's base index comes from the task cache.

Covers: a Task subclass overriding ``make_task_cache`` (computed in the kernel, read by every
work call as ``stage_info.task_cache``), ``domain_loop(n)`` over a fixed count of passes,
routed keyword input plus a constant (``d.put(value=v, bias=5)``).
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

THREADS = 128
CTAS = 4
PASSES = 5
N = THREADS * CTAS * PASSES


class CachedTask(Task):
    @cute.jit
    def make_task_cache(self) -> Any:
        # This thread's first element; pass k adds k whole grids.
        tx, _, _ = cute.arch.thread_idx()
        bx, _, _ = cute.arch.block_idx()
        return bx * THREADS + tx


@dataclass(kw_only=True)
class Src(MemoryResource):
    tensor: cute.Tensor
    value: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.value = TaskLocalVariable(dtype=cutlass.Float32, default=cutlass.Float32(0))

    @consumer_work(returns=value)
    @cute.jit
    def get(self, stage_info: StageInfo) -> cutlass.Float32:
        return self.tensor[stage_info.task_cache + stage_info.loop_offset * (THREADS * CTAS)]


@dataclass(kw_only=True)
class Dst(MemoryResource):
    tensor: cute.Tensor

    @producer_work
    @cute.jit
    def put(
        self, stage_info: StageInfo, value: cutlass.Float32, *, bias: cutlass.Constexpr[int]
    ) -> None:
        i = stage_info.task_cache + stage_info.loop_offset * (THREADS * CTAS)
        self.tensor[i] = value + cutlass.Float32(bias)


@cute.kernel
def bias_kernel(src: cute.Tensor, dst: cute.Tensor) -> None:
    src_res = Src(name="src", tensor=src)
    dst_res = Dst(name="dst", tensor=dst)

    @schedule
    def add_bias(s: Src, d: Dst) -> None:
        with domain_loop(PASSES):
            v = s.get()
            d.put(value=v, bias=5)

    task = CachedTask(
        name="bias",
        src_resources=[src_res],
        dst_resources=[dst_res],
        warp_idx=0,
        num_warps=THREADS // 32,
        schedule=add_bias(src_res, dst_res),
    )
    manager = TaskManager(tasks=[task], resource_dependency_graph={dst_res: [src_res]})
    manager.setup_resources_and_tasks()
    manager.run()


@cute.jit
def host(src: cute.Tensor, dst: cute.Tensor) -> None:
    bias_kernel(src, dst).launch(grid=(CTAS, 1, 1), block=(THREADS, 1, 1))


def compile_fake(arch: str) -> Any:
    src = make_fake_compact_tensor(cutlass.Float32, (N,))
    dst = make_fake_compact_tensor(cutlass.Float32, (N,))
    return cute.compile(host, src, dst, options=f"--gpu-arch={arch} --keep-ptx")


def run_gpu() -> None:
    import torch
    from cutlass.cute.runtime import from_dlpack

    src_t = torch.randn(N, device="cuda")
    dst_t = torch.zeros_like(src_t)
    src, dst = from_dlpack(src_t), from_dlpack(dst_t)
    cute.compile(host, src, dst)(src, dst)
    torch.cuda.synchronize()
    torch.testing.assert_close(dst_t, src_t + 5)
    print("PASS")
