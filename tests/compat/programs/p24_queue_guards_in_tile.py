# mypy: ignore-errors
# (Written as a reference user writes DSL code: cutlass.Constexpr fields, proxy pipeline ops
# on resources, DSL values typed by the tracer. The harness that runs them is type-checked.)
"""Persistent row-block copy whose per-tile loop has first/last iteration guards.

Covers: ``work_tile_loop(wq)`` without ``skip_if`` around a ``domain_loop`` with
``first_iter()`` / ``last_iter()`` blocks (they fire once per tile), a plain ``WorkQueue``.
"""

from dataclasses import dataclass, field
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

THREADS = 64  # columns of one tile: one per thread
BLOCKS = 6  # row blocks of the matrix (the real tiles)
EXTRA = 0
ROWS_PER_BLOCK = 4
CTAS = 4  # persistent CTAs: each takes several tiles
M, N = BLOCKS * ROWS_PER_BLOCK, THREADS


@dataclass(kw_only=True)
class BoundedQueue(WorkQueue):  # kept for its constructor; never skips here
    real_tiles: Any = field(init=False, default=None)

    def __init__(self, real_tiles: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.real_tiles = real_tiles

    @cute.jit
    def skip_work_tile_if(self, work_tile: Any) -> cutlass.Boolean:
        m, _, _ = work_tile.tile_idx
        return m >= self.real_tiles


@dataclass(kw_only=True)
class Negate(MemoryResource):
    a: cute.Tensor
    b: cute.Tensor
    flags: cute.Tensor

    @producer_work
    @cute.jit
    def row(self, stage_info: StageInfo) -> None:
        tx, _, _ = cute.arch.thread_idx()
        m, _, _ = stage_info.work_tile.tile_idx
        r = m * ROWS_PER_BLOCK + stage_info.loop_offset
        self.b[r, tx] = -self.a[r, tx]

    @producer_work
    @cute.jit
    def flag(self, stage_info: StageInfo, *, slot: cutlass.Constexpr[int]) -> None:
        # The tile's row (within its block) where the guard fired, plus one.
        tx, _, _ = cute.arch.thread_idx()
        m, _, _ = stage_info.work_tile.tile_idx
        self.flags[m, slot, tx] = stage_info.loop_offset + 1


@cute.kernel
def negate_kernel(a: cute.Tensor, b: cute.Tensor, flags: cute.Tensor, params: Any) -> None:
    queue = BoundedQueue(
        real_tiles=BLOCKS,
        tile_scheduler_config=TileSchedulerConfig.create_static_persistent_tile_scheduler_params(
            tile_scheduler_params=params
        ),
        name="queue",
    )
    neg = Negate(name="negate", a=a, b=b, flags=flags)

    @schedule
    def persistent(n: Negate, wq: BoundedQueue) -> None:
        with work_tile_loop(wq):
            with domain_loop(ROWS_PER_BLOCK) as rows:
                n.row()
                with rows.first_iter():
                    n.flag(slot=0)
                with rows.last_iter():
                    n.flag(slot=1)
            wq.try_wait()
            wq.wait()
            wq.get_and_advance_work_tile()
            wq.release()

    task = Task(
        name="negate",
        src_resources=[queue],
        dst_resources=[neg],
        warp_idx=0,
        num_warps=THREADS // 32,
        schedule=persistent(neg, queue),
    )
    manager = TaskManager(tasks=[task], resource_dependency_graph={neg: [queue]})
    manager.setup_resources_and_tasks()
    manager.run()


@cute.jit
def host(a: cute.Tensor, b: cute.Tensor, flags: cute.Tensor) -> None:
    params = utils.PersistentTileSchedulerParams((BLOCKS + EXTRA, 1, 1), (1, 1, 1))
    negate_kernel(a, b, flags, params).launch(
        grid=(1, 1, CTAS),
        block=(THREADS, 1, 1),  # persistent CTAs along z (CUTLASS scheduler)
    )


def compile_fake(arch: str) -> Any:
    a = make_fake_compact_tensor(cutlass.Float32, (M, N), stride_order=(1, 0))
    b = make_fake_compact_tensor(cutlass.Float32, (M, N), stride_order=(1, 0))
    flags = make_fake_compact_tensor(cutlass.Int32, (BLOCKS, 2, N), stride_order=(2, 1, 0))
    return cute.compile(host, a, b, flags, options=f"--gpu-arch={arch} --keep-ptx")


def run_gpu() -> None:
    import torch
    from cutlass.cute.runtime import from_dlpack

    a_t = torch.randn(M, N, device="cuda")
    b_t = torch.zeros_like(a_t)
    flags_t = torch.zeros(BLOCKS, 2, N, dtype=torch.int32, device="cuda")
    args = (from_dlpack(a_t), from_dlpack(b_t), from_dlpack(flags_t))
    cute.compile(host, *args)(*args)
    torch.cuda.synchronize()
    torch.testing.assert_close(b_t, -a_t)
    expect = torch.tensor([1, ROWS_PER_BLOCK], dtype=torch.int32, device="cuda")
    torch.testing.assert_close(flags_t, expect.view(1, 2, 1).expand(BLOCKS, 2, N))
    print("PASS")
