# mypy: ignore-errors
# (Written as a reference user writes DSL code: cutlass.Constexpr fields, proxy pipeline ops
# on resources, DSL values typed by the tracer. The harness that runs them is type-checked.)
"""Grid-stride clamp with runtime control flow inside the work methods.

Covers: a runtime ``if``/``else`` that assigns through ``self`` inside a work method (the
resource is a DSL value there), a ``cutlass.range`` loop inside a work method, a 3-bound loop
whose end is past the data (the work guards the tail itself).
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
CTAS = 8
N = 4096


@dataclass(kw_only=True)
class Src(MemoryResource):
    tensor: cute.Tensor
    n: cutlass.Int32
    value: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.value = TaskLocalVariable(dtype=cutlass.Float32, default=cutlass.Float32(0))

    @consumer_work(returns=value)
    @cute.jit
    def get(self, stage_info: StageInfo) -> cutlass.Float32:
        v = cutlass.Float32(0)
        if stage_info.loop_offset < self.n:
            v = self.tensor[stage_info.loop_offset]
        # Clamp to [-1, 1] by repeated halving: a small runtime loop inside the work.
        for _ in cutlass.range(4):
            if v > cutlass.Float32(1) or v < cutlass.Float32(-1):
                v = v * cutlass.Float32(0.5)
        return v


@dataclass(kw_only=True)
class Dst(MemoryResource):
    tensor: cute.Tensor
    n: cutlass.Int32
    last: cutlass.Int32

    @producer_work
    @cute.jit
    def put(self, stage_info: StageInfo, value: cutlass.Float32) -> None:
        if stage_info.loop_offset < self.n:
            self.tensor[stage_info.loop_offset] = value
            self.last = stage_info.loop_offset
        else:
            self.last = self.n


@cute.kernel
def copy_kernel(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    tx, _, _ = cute.arch.thread_idx()
    bx, _, _ = cute.arch.block_idx()
    gx, _, _ = cute.arch.grid_dim()
    src_res = Src(name="src", tensor=src, n=n)
    dst_res = Dst(name="dst", tensor=dst, n=n, last=cutlass.Int32(0))

    @schedule
    def copy(s: Src, d: Dst) -> None:
        with domain_loop(bx * THREADS + tx, n + THREADS, gx * THREADS):
            v = s.get()
            d.put(v)

    task = Task(
        name="copy",
        src_resources=[src_res],
        dst_resources=[dst_res],
        warp_idx=0,
        num_warps=THREADS // 32,
        schedule=copy(src_res, dst_res),
    )
    manager = TaskManager(tasks=[task], resource_dependency_graph={dst_res: [src_res]})
    manager.setup_resources_and_tasks()
    manager.run()


@cute.jit
def host(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    copy_kernel(src, dst, n).launch(grid=(CTAS, 1, 1), block=(THREADS, 1, 1))


def compile_fake(arch: str) -> Any:
    src = make_fake_compact_tensor(cutlass.Float32, (N,))
    dst = make_fake_compact_tensor(cutlass.Float32, (N,))
    return cute.compile(host, src, dst, cutlass.Int32(N), options=f"--gpu-arch={arch} --keep-ptx")


def run_gpu() -> None:
    import torch
    from cutlass.cute.runtime import from_dlpack

    src_t = torch.randn(N, device="cuda") * 8
    dst_t = torch.zeros_like(src_t)
    src, dst = from_dlpack(src_t), from_dlpack(dst_t)
    cute.compile(host, src, dst, cutlass.Int32(N))(src, dst, cutlass.Int32(N))
    torch.cuda.synchronize()
    expect = src_t.clone()
    for _ in range(4):
        expect = torch.where(expect.abs() > 1, expect * 0.5, expect)
    torch.testing.assert_close(dst_t, expect)
    print("PASS")
