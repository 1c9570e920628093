# mypy: ignore-errors
# (Written as a reference user writes DSL code: cutlass.Constexpr fields, proxy pipeline ops
# on resources, DSL values typed by the tracer. The harness that runs them is type-checked.)
"""Grid-stride copy whose kernel also asks the TaskManager for its report and Mermaid graph.

Covers: ``TaskManager.print_and_verify()`` and
``TaskManager.get_marmaid_string_dependency_graph()`` called in the kernel (plain Python at
trace time), the graph recorded for the host to check.
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
GRAPHS: list[str] = []  # Mermaid text produced while tracing


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
    def put(self, stage_info: StageInfo, value: cutlass.Float32) -> None:
        self.tensor[stage_info.loop_offset] = value


@cute.kernel
def copy_kernel(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    tx, _, _ = cute.arch.thread_idx()
    bx, _, _ = cute.arch.block_idx()
    gx, _, _ = cute.arch.grid_dim()
    src_res = Src(name="gmem_in", tensor=src)
    dst_res = Dst(name="gmem_out", tensor=dst)

    @schedule
    def copy(s: Src, d: Dst) -> None:
        with domain_loop(bx * THREADS + tx, n, gx * THREADS):
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
    manager.print_and_verify()
    GRAPHS.append(manager.get_marmaid_string_dependency_graph())
    manager.setup_resources_and_tasks()
    manager.run()


@cute.jit
def host(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    copy_kernel(src, dst, n).launch(grid=(CTAS, 1, 1), block=(THREADS, 1, 1))


def compile_fake(arch: str) -> Any:
    src = make_fake_compact_tensor(cutlass.Float32, (N,))
    dst = make_fake_compact_tensor(cutlass.Float32, (N,))
    return cute.compile(host, src, dst, cutlass.Int32(N), options=f"--gpu-arch={arch} --keep-ptx")


def check_host() -> None:
    graph = GRAPHS[-1]
    assert "gmem_in" in graph and "gmem_out" in graph, graph
    assert "-->" in graph, graph
