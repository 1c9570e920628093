# mypy: ignore-errors
# (Written as a reference user writes DSL code: cutlass.Constexpr fields, proxy pipeline ops
# on resources, DSL values typed by the tracer. The harness that runs them is type-checked.)
"""Absolute value by branching on a work output with ``when_true`` / ``when_false``.

Covers: a Boolean task-local output used as a runtime condition, ``when_true(cond)`` and
``when_false(cond)`` blocks inside a grid-stride loop, two producer works on one resource.
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
from task_scheduling.schedule_builder import domain_loop, schedule, when_false, when_true
from task_scheduling.task import Task
from task_scheduling.task_manager import TaskManager

THREADS = 128
CTAS = 2
N = 2048


@dataclass(kw_only=True)
class Src(MemoryResource):
    tensor: cute.Tensor
    value: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()
    positive: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.value = TaskLocalVariable(dtype=cutlass.Float32, default=cutlass.Float32(0))
        self.positive = TaskLocalVariable(dtype=cutlass.Boolean, default=cutlass.Boolean(False))

    @consumer_work(returns=value)
    @cute.jit
    def get(self, stage_info: StageInfo) -> cutlass.Float32:
        return self.tensor[stage_info.loop_offset]

    @consumer_work(returns=positive)
    @cute.jit
    def is_positive(self, stage_info: StageInfo) -> cutlass.Boolean:
        return self.tensor[stage_info.loop_offset] >= cutlass.Float32(0)


@dataclass(kw_only=True)
class Dst(MemoryResource):
    tensor: cute.Tensor

    @producer_work
    @cute.jit
    def put(self, stage_info: StageInfo, value: cutlass.Float32) -> None:
        self.tensor[stage_info.loop_offset] = value

    @producer_work
    @cute.jit
    def put_negated(self, stage_info: StageInfo, value: cutlass.Float32) -> None:
        self.tensor[stage_info.loop_offset] = -value


@cute.kernel
def abs_kernel(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    tx, _, _ = cute.arch.thread_idx()
    bx, _, _ = cute.arch.block_idx()
    src_res = Src(name="src", tensor=src)
    dst_res = Dst(name="dst", tensor=dst)

    @schedule
    def absolute(s: Src, d: Dst) -> None:
        with domain_loop(bx * THREADS + tx, n, CTAS * THREADS):
            v = s.get()
            pos = s.is_positive()
            with when_true(pos):
                d.put(v)
            with when_false(pos):
                d.put_negated(value=v)

    task = Task(
        name="abs",
        src_resources=[src_res],
        dst_resources=[dst_res],
        warp_idx=0,
        num_warps=THREADS // 32,
        schedule=absolute(src_res, dst_res),
    )
    manager = TaskManager(tasks=[task], resource_dependency_graph={dst_res: [src_res]})
    manager.setup_resources_and_tasks()
    manager.run()


@cute.jit
def host(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    abs_kernel(src, dst, n).launch(grid=(CTAS, 1, 1), block=(THREADS, 1, 1))


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
    torch.testing.assert_close(dst_t, src_t.abs())
    print("PASS")
