# mypy: ignore-errors
# (Written as a reference user writes DSL code: cutlass.Constexpr fields, proxy pipeline ops
# on resources, DSL values typed by the tracer. The harness that runs them is type-checked.)
"""Ragged row copy: a Task subclass gives each persistent tile its own loop length.

Covers: ``domain_loop(RaggedTask.get_domain)`` (a one-bound loop whose end a Task method computes
per work tile at run time), a plain static ``WorkQueue`` with the queue bracket, a runtime ``if``
in a work method, ``stage_info.work_tile`` and ``loop_offset``.
"""

from dataclasses import dataclass
from typing import Any

import cutlass
import cutlass.cute as cute
import cutlass.utils as utils
from cutlass.cute.runtime import make_fake_compact_tensor

from task_scheduling.resources import (
    MemoryResource,
    StageInfo,
    TileSchedulerConfig,
    WorkQueue,
    producer_work,
)
from task_scheduling.schedule_builder import domain_loop, schedule, work_tile_loop
from task_scheduling.task import Task
from task_scheduling.task_manager import TaskManager

THREADS = 32  # columns copied per loop iteration
ROWS, COLS = 7, 200
CTAS = 3


class RaggedTask(Task):
    """The loop of tile ``m`` runs ``ceil(lengths[m] / THREADS)`` times."""

    def __init__(self, lengths: cute.Tensor, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lengths = lengths

    @cute.jit
    def get_domain(self, tile_coord: Any) -> Any:
        return (self.lengths[tile_coord[0]] + (THREADS - 1)) // THREADS


@dataclass(kw_only=True)
class RaggedCopy(MemoryResource):
    a: cute.Tensor
    b: cute.Tensor
    lengths: cute.Tensor

    @producer_work
    @cute.jit
    def chunk(self, stage_info: StageInfo) -> None:
        tx, _, _ = cute.arch.thread_idx()
        m, _, _ = stage_info.work_tile.tile_idx
        col = stage_info.loop_offset * THREADS + tx
        if col < self.lengths[m]:
            self.b[m, col] = self.a[m, col]


@cute.kernel
def ragged_kernel(a: cute.Tensor, b: cute.Tensor, lengths: cute.Tensor, params: Any) -> None:
    queue = WorkQueue(
        tile_scheduler_config=TileSchedulerConfig.create_static_persistent_tile_scheduler_params(
            tile_scheduler_params=params
        ),
        name="queue",
    )
    copy = RaggedCopy(name="copy", a=a, b=b, lengths=lengths)

    @schedule
    def ragged(c: RaggedCopy, wq: WorkQueue) -> None:
        with work_tile_loop(wq):
            with domain_loop(RaggedTask.get_domain):
                c.chunk()
            wq.try_wait()
            wq.wait()
            wq.get_and_advance_work_tile()
            wq.release()

    task = RaggedTask(
        lengths=lengths,
        name="ragged",
        src_resources=[queue],
        dst_resources=[copy],
        warp_idx=0,
        num_warps=THREADS // 32,
        schedule=ragged(copy, queue),
    )
    manager = TaskManager(tasks=[task], resource_dependency_graph={copy: [queue]})
    manager.setup_resources_and_tasks()
    manager.run()


@cute.jit
def host(a: cute.Tensor, b: cute.Tensor, lengths: cute.Tensor) -> None:
    params = utils.PersistentTileSchedulerParams((ROWS, 1, 1), (1, 1, 1))
    ragged_kernel(a, b, lengths, params).launch(
        grid=(1, 1, CTAS),
        block=(THREADS, 1, 1),  # persistent CTAs along z (CUTLASS scheduler)
    )


def compile_fake(arch: str) -> Any:
    a = make_fake_compact_tensor(cutlass.Float32, (ROWS, COLS), stride_order=(1, 0))
    b = make_fake_compact_tensor(cutlass.Float32, (ROWS, COLS), stride_order=(1, 0))
    lengths = make_fake_compact_tensor(cutlass.Int32, (ROWS,))
    return cute.compile(host, a, b, lengths, options=f"--gpu-arch={arch} --keep-ptx")


def run_gpu() -> None:
    import torch
    from cutlass.cute.runtime import from_dlpack

    lens = [0, 1, 31, 32, 33, 150, COLS]
    a_t = torch.randn(ROWS, COLS, device="cuda")
    b_t = torch.zeros_like(a_t)
    len_t = torch.tensor(lens, dtype=torch.int32, device="cuda")
    args = (from_dlpack(a_t), from_dlpack(b_t), from_dlpack(len_t))
    cute.compile(host, *args)(*args)
    torch.cuda.synchronize()
    expect = torch.zeros_like(a_t)
    for m, n in enumerate(lens):
        expect[m, :n] = a_t[m, :n]
    torch.testing.assert_close(b_t, expect)
    print("PASS")
