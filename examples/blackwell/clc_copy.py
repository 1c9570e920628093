"""A persistent copy scheduled by cluster launch control (CLC), compiled for sm_100a.

Blackwell's hardware scheduler: the grid holds one CTA per ``128 x 64`` fp16 tile, and a
running CTA takes over the tiles of CTAs that have not started yet, so a CTA that finishes
early does more tiles (no global counter, no host reset). Two tasks share the work queue:

* ``sched`` (warp 4) asks for the next tile once per tile: ``wq.acquire()`` arms the stage's
  full barrier for the 16-byte answer, ``wq.fetch_next_tile()`` issues
  ``clusterlaunchcontrol.try_cancel``, ``wq.commit()``; then it reads the answer like every
  other task;
* ``copy`` (warps 0-3) copies the tile, row ``t`` by thread ``t``, then reads the answer
  (``wq.wait(); wq.read_next_tile(); wq.release()``: ``clusterlaunchcontrol.query_cancel``).

An answer that cancelled nothing ends every task's loop. ts-verify proves the queue's ring free
of deadlocks for every tile count and checks the CLC rules (every task reads every answer, one
request per tile, the next one only after the answer: ``TS-V220``/``TS-V221``). Nothing here has
run on hardware (the project's GPU is a Hopper); the PTX shows the CLC instructions::

    python examples/blackwell/clc_copy.py            # PTX counts per opcode (CPU, sm_100a)
    ts compile --arch sm_100a examples/blackwell/clc_copy.py:make_plan
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_100a")  # before the DSL is imported

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe

from task_scheduling import consumer_work, schedule, work_tile_loop
from task_scheduling.harness import compare_ptx, fake_tensor
from task_scheduling.memory import SmemAllocator
from task_scheduling.resources import (
    MemoryResource,
    PipelineConfig,
    TileSchedulerConfig,
    WorkQueue,
)
from task_scheduling.task import Task
from task_scheduling.task_manager import TaskManager
from task_scheduling.tiles import TileRaster

TILE_M, TILE_N = 128, 64
COPY_WARPS, SCHED_WARP = 4, 4
QUEUE_STAGES = 2
BLOCK_THREADS = (COPY_WARPS + 1) * 32


@dataclasses.dataclass(kw_only=True)
class Rows(MemoryResource):
    """The source and destination matrices (global memory, no pipeline)."""

    src: Any = None
    dst: Any = None

    @consumer_work
    @cute.jit
    def copy_tile(self, stage_info: Any) -> None:
        """Thread ``t`` of the copy task copies row ``t`` of the current tile."""
        m = stage_info.work_tile.tile_idx[0]
        row = m * TILE_M + cute.arch.thread_idx()[0] % TILE_M
        for j in cutlass.range(TILE_N):  # type: ignore[attr-defined]
            self.dst[row, j] = self.src[row, j]


@schedule
def sched(wq: Any) -> None:
    with work_tile_loop(wq):
        wq.acquire()
        wq.fetch_next_tile()
        wq.commit()
        wq.wait()
        wq.read_next_tile()
        wq.release()


@schedule
def copy(wq: Any, rows: Any) -> None:
    with work_tile_loop(wq):
        rows.copy_tile()
        wq.wait()
        wq.read_next_tile()
        wq.release()


def queue(params: Any = None) -> WorkQueue:
    """The CLC work queue: one thread asks, every thread of both tasks reads the answer."""
    cfg = TileSchedulerConfig.create_clc_dynamic_persistent_tile_scheduler_params(params)
    return WorkQueue(
        cfg,
        name="tiles",
        pipeline_config=PipelineConfig.create_clc_fetch_async_pipeline_cfg(
            QUEUE_STAGES,
            16,
            cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
            cpipe.CooperativeGroup(cpipe.Agent.Thread, BLOCK_THREADS),
        ),
    )


def build(params: Any = None, src: Any = None, dst: Any = None) -> TaskManager:
    """The resources, tasks and TaskManager (on the host: placeholders for the DSL values)."""
    wq = queue(params)
    rows = Rows(name="rows", src=src, dst=dst)
    smem = SmemAllocator()
    smem.add_resource(wq)
    tasks = [
        Task([wq, rows], [], 0, COPY_WARPS, schedule=copy(wq, rows), name="copy"),
        Task([wq], [wq], SCHED_WARP, 1, schedule=sched(wq), name="sched"),
    ]
    return TaskManager(tasks, {rows: [wq]}, smem_allocator=smem, name="clc_copy")


def make_plan() -> Any:
    """The kernel plan (what ``ts show`` / ``ts verify`` / ``ts compile`` read)."""
    return build().plan


@cute.kernel
def kernel(src: cute.Tensor, dst: cute.Tensor, params: TileRaster) -> None:
    manager = build(params, src, dst)
    manager.setup_resources_and_tasks()
    manager.run()


@cute.jit
def launch(src: cute.Tensor, dst: cute.Tensor) -> None:
    params = TileRaster((cute.size(src, mode=[0]) // TILE_M, 1, 1))
    grid = queue(params).tile_scheduler_config.grid_shape(0)
    kernel(src, dst, params).launch(grid=grid, block=(BLOCK_THREADS, 1, 1))


def fake_args(rows: int = 16 * TILE_M) -> tuple[Any, ...]:
    """Fake source and destination tensors for a CPU compile."""
    shape = (rows, TILE_N)
    return (
        fake_tensor(cutlass.Float16, shape, row_major=True, align=16),
        fake_tensor(cutlass.Float16, shape, row_major=True, align=16),
    )


def compile_only() -> dict[str, Any]:
    """Compile for the target (sm_100a by default) with fake tensors; PTX counts per opcode."""
    return {"example": "clc_copy", **compare_ptx({"ts": launch}, *fake_args(), ops=True)}


if __name__ == "__main__":
    import json

    print(json.dumps(compile_only(), indent=1, sort_keys=True))
    sys.exit(0)
