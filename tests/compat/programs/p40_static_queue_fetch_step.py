# mypy: ignore-errors
# (Written as a reference user writes DSL code: cutlass.Constexpr fields, proxy pipeline ops
# on resources, DSL values typed by the tracer. The harness that runs them is type-checked.)
"""Persistent row copy on a static queue whose task keeps a dynamic queue's fetch step.

Covers: the per-tile steps of a fetching task written for a dynamic queue, ``try_acquire();
acquire(); fetch_work_tile(); commit()`` then ``try_wait(); wait();
get_and_advance_work_tile(); release()``, on a ``WorkQueue`` with the static scheduler and no
pipeline (the queue in the task's sources and destinations). With the static scheduler every
CTA computes its tiles, so the fetch does nothing and the brackets carry no barrier: no
``mbarrier`` at all in the PTX, and the same instructions as without the four fetch lines
(``test_static_queue_fetch_step_lowers_to_nothing``).

Unlike p01-p39, the reference does not compile this one: its checker wants a work-tile loop's
tail on a static queue to be ``[try_wait,] wait, work, release`` (an ``AssertionError``), and a
task whose only destination is the queue only with a dynamic scheduler. TS accepts it because
the program is correct: the fetch has nothing to do.
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

WARPS = 2
THREADS = 32 * WARPS  # columns of one tile: one per thread
BLOCKS = 7  # row blocks of the matrix (the tiles)
ROWS_PER_BLOCK = 3
CTAS = 3  # persistent CTAs: each takes several tiles, one CTA an extra one
M, N = BLOCKS * ROWS_PER_BLOCK, THREADS


@dataclass(kw_only=True)
class Scale(MemoryResource):
    a: cute.Tensor
    b: cute.Tensor

    @producer_work
    @cute.jit
    def row(self, stage_info: StageInfo) -> None:
        tx, _, _ = cute.arch.thread_idx()
        m, _, _ = stage_info.work_tile.tile_idx
        r = m * ROWS_PER_BLOCK + stage_info.loop_offset
        self.b[r, tx] = self.a[r, tx] * 3.0


@cute.kernel
def scale_kernel(a: cute.Tensor, b: cute.Tensor, params: Any) -> None:
    queue = WorkQueue(
        tile_scheduler_config=TileSchedulerConfig.create_static_persistent_tile_scheduler_params(
            tile_scheduler_params=params
        ),
        name="WorkQueue",
    )
    out = Scale(name="scale", a=a, b=b)

    @schedule
    def copy(s: Scale, wq: WorkQueue) -> None:
        with work_tile_loop(wq):
            with domain_loop(ROWS_PER_BLOCK):
                s.row()
            # The dynamic queue's fetch: nothing to fetch on a static queue.
            wq.try_acquire()
            wq.acquire()
            wq.fetch_work_tile()
            wq.commit()
            wq.try_wait()
            wq.wait()
            wq.get_and_advance_work_tile()
            wq.release()

    task = Task(
        name="copy",
        src_resources=[queue],
        dst_resources=[out, queue],
        warp_idx=0,
        num_warps=WARPS,
        schedule=copy(out, queue),
    )
    manager = TaskManager(tasks=[task], resource_dependency_graph={out: [queue]})
    manager.setup_resources_and_tasks()
    manager.run()


@cute.jit
def host(a: cute.Tensor, b: cute.Tensor) -> None:
    params = utils.PersistentTileSchedulerParams((BLOCKS, 1, 1), (1, 1, 1))
    scale_kernel(a, b, params).launch(
        grid=(1, 1, CTAS),
        block=(THREADS, 1, 1),  # persistent CTAs along z (CUTLASS scheduler)
    )


FORBID_PTX = ("mbarrier",)


def compile_fake(arch: str) -> Any:
    a = make_fake_compact_tensor(cutlass.Float32, (M, N), stride_order=(1, 0))
    b = make_fake_compact_tensor(cutlass.Float32, (M, N), stride_order=(1, 0))
    return cute.compile(host, a, b, options=f"--gpu-arch={arch} --keep-ptx")


def run_gpu() -> None:
    import torch
    from cutlass.cute.runtime import from_dlpack

    a_t = torch.randn(M, N, device="cuda")
    b_t = torch.zeros_like(a_t)
    args = (from_dlpack(a_t), from_dlpack(b_t))
    cute.compile(host, *args)(*args)
    torch.cuda.synchronize()
    torch.testing.assert_close(b_t, a_t * 3.0)
    print("PASS")
