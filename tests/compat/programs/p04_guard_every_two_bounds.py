# mypy: ignore-errors
# (Written as a reference user writes DSL code: cutlass.Constexpr fields, proxy pipeline ops
# on resources, DSL values typed by the tracer. The harness that runs them is type-checked.)
"""Row walk over ``domain_loop(start, end)`` with ``every(period, start=s)`` guards.

Covers: the two-bound static ``domain_loop(2, ROWS)``, ``loop.every(3, start=1)``,
``loop.every(4)``; a guard's iteration number counts from 0 at the first visited row.
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
ROWS = 12
# Rows where each guard fires: iteration k visits row 2 + k.
FIRED = (
    [2 + k for k in range(ROWS - 2) if k >= 1 and (k - 1) % 3 == 0],
    [2 + k for k in range(ROWS - 2) if k % 4 == 0],
)


@dataclass(kw_only=True)
class Rows(MemoryResource):
    tensor: cute.Tensor
    value: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.value = TaskLocalVariable(dtype=cutlass.Float32, default=cutlass.Float32(0))

    @consumer_work(returns=value)
    @cute.jit
    def load(self, stage_info: StageInfo) -> cutlass.Float32:
        tx, _, _ = cute.arch.thread_idx()
        return self.tensor[stage_info.loop_offset, tx]


@dataclass(kw_only=True)
class Log(MemoryResource):
    out: cute.Tensor
    hits: cute.Tensor

    @producer_work
    @cute.jit
    def store(self, stage_info: StageInfo, value: cutlass.Float32) -> None:
        tx, _, _ = cute.arch.thread_idx()
        self.out[stage_info.loop_offset, tx] = value

    @producer_work
    @cute.jit
    def mark(self, stage_info: StageInfo, *, slot: cutlass.Constexpr[int]) -> None:
        # Sum of (iteration offset + 1) over the iterations where the guard fired.
        tx, _, _ = cute.arch.thread_idx()
        self.hits[slot, tx] = self.hits[slot, tx] + stage_info.loop_offset + 1


@cute.kernel
def rows_kernel(inp: cute.Tensor, out: cute.Tensor, hits: cute.Tensor) -> None:
    rows = Rows(name="rows", tensor=inp)
    log = Log(name="log", out=out, hits=hits)

    @schedule
    def walk(r: Rows, g: Log) -> None:
        with domain_loop(2, ROWS) as loop:
            v = r.load()
            g.store(v)
            with loop.every(3, start=1):
                g.mark(slot=0)
            with loop.every(4):
                g.mark(slot=1)

    task = Task(
        name="walk",
        src_resources=[rows],
        dst_resources=[log],
        warp_idx=0,
        num_warps=THREADS // 32,
        schedule=walk(rows, log),
    )
    manager = TaskManager(tasks=[task], resource_dependency_graph={log: [rows]})
    manager.setup_resources_and_tasks()
    manager.run()


@cute.jit
def host(inp: cute.Tensor, out: cute.Tensor, hits: cute.Tensor) -> None:
    rows_kernel(inp, out, hits).launch(grid=(1, 1, 1), block=(THREADS, 1, 1))


def compile_fake(arch: str) -> Any:
    inp = make_fake_compact_tensor(cutlass.Float32, (ROWS, THREADS), stride_order=(1, 0))
    out = make_fake_compact_tensor(cutlass.Float32, (ROWS, THREADS), stride_order=(1, 0))
    hits = make_fake_compact_tensor(cutlass.Int32, (2, THREADS), stride_order=(1, 0))
    return cute.compile(host, inp, out, hits, options=f"--gpu-arch={arch} --keep-ptx")


def run_gpu() -> None:
    import torch
    from cutlass.cute.runtime import from_dlpack

    inp_t = torch.randn(ROWS, THREADS, device="cuda")
    out_t = torch.zeros_like(inp_t)
    hits_t = torch.zeros(2, THREADS, dtype=torch.int32, device="cuda")
    args = (from_dlpack(inp_t), from_dlpack(out_t), from_dlpack(hits_t))
    cute.compile(host, *args)(*args)
    torch.cuda.synchronize()
    # domain_loop(2, ROWS) visits rows 2.. only: rows 0 and 1 stay zero.
    torch.testing.assert_close(out_t[2:], inp_t[2:])
    assert not out_t[:2].any()
    expect = torch.zeros(2, THREADS, dtype=torch.int32, device="cuda")
    for slot, fired in enumerate(FIRED):
        expect[slot] = sum(i + 1 for i in fired)
    torch.testing.assert_close(hits_t, expect)
    print("PASS")
