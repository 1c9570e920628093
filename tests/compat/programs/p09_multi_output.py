# mypy: ignore-errors
# (Written as a reference user writes DSL code: cutlass.Constexpr fields, proxy pipeline ops
# on resources, DSL values typed by the tracer. The harness that runs them is type-checked.)
"""Scatter by a gathered index: one consumer work returns two task-local values.

Covers: ``@consumer_work(returns=(value, index))`` with a tuple result, unpacking the two tokens
in the schedule and passing both positionally (``d.scatter(v, i)``), an Int32 and a Float32 output.
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
N = 1024


@dataclass(kw_only=True)
class Src(MemoryResource):
    values: cute.Tensor
    perm: cute.Tensor
    value: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()
    index: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.value = TaskLocalVariable(dtype=cutlass.Float32, default=cutlass.Float32(0))
        self.index = TaskLocalVariable(dtype=cutlass.Int32, default=cutlass.Int32(0))

    @consumer_work(returns=(value, index))
    @cute.jit
    def get_pair(self, stage_info: StageInfo) -> tuple[cutlass.Float32, cutlass.Int32]:
        i = stage_info.loop_offset
        return self.values[i], self.perm[i]


@dataclass(kw_only=True)
class Dst(MemoryResource):
    tensor: cute.Tensor

    @producer_work
    @cute.jit
    def scatter(self, stage_info: StageInfo, value: cutlass.Float32, where: cutlass.Int32) -> None:
        self.tensor[where] = value


@cute.kernel
def scatter_kernel(values: cute.Tensor, perm: cute.Tensor, out: cute.Tensor) -> None:
    tx, _, _ = cute.arch.thread_idx()
    src_res = Src(name="src", values=values, perm=perm)
    dst_res = Dst(name="dst", tensor=out)

    @schedule
    def scatter(s: Src, d: Dst) -> None:
        with domain_loop(tx, N, THREADS):
            v, i = s.get_pair()
            d.scatter(v, i)

    task = Task(
        name="scatter",
        src_resources=[src_res],
        dst_resources=[dst_res],
        warp_idx=0,
        num_warps=THREADS // 32,
        schedule=scatter(src_res, dst_res),
    )
    manager = TaskManager(tasks=[task], resource_dependency_graph={dst_res: [src_res]})
    manager.setup_resources_and_tasks()
    manager.run()


@cute.jit
def host(values: cute.Tensor, perm: cute.Tensor, out: cute.Tensor) -> None:
    scatter_kernel(values, perm, out).launch(grid=(1, 1, 1), block=(THREADS, 1, 1))


def compile_fake(arch: str) -> Any:
    values = make_fake_compact_tensor(cutlass.Float32, (N,))
    perm = make_fake_compact_tensor(cutlass.Int32, (N,))
    out = make_fake_compact_tensor(cutlass.Float32, (N,))
    return cute.compile(host, values, perm, out, options=f"--gpu-arch={arch} --keep-ptx")


def run_gpu() -> None:
    import torch
    from cutlass.cute.runtime import from_dlpack

    values_t = torch.randn(N, device="cuda")
    perm_t = torch.randperm(N, device="cuda").to(torch.int32)
    out_t = torch.zeros_like(values_t)
    args = (from_dlpack(values_t), from_dlpack(perm_t), from_dlpack(out_t))
    cute.compile(host, *args)(*args)
    torch.cuda.synchronize()
    expect = torch.zeros_like(values_t)
    expect[perm_t.long()] = values_t
    torch.testing.assert_close(out_t, expect)
    print("PASS")
