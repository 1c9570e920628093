"""A persistent Blackwell GEMM of TS's own: TMA, tcgen05 UMMA into TMEM, CLC, PDL (sm_100a).

``C = A @ B^T`` in fp16 with fp32 accumulation, ``128 x 128`` tiles, one CTA per tile, compiled
for sm_100a without a GPU (nothing here has run on hardware: the project's GPU is a Hopper).
Four tasks and a scheduler share the tiles that cluster launch control hands out:

* ``load`` (warp 4) waits for the previous kernel's grid (``griddepcontrol.wait``, PDL) and
  TMA-loads the A and B blocks of each K step into the ``ab`` ring (``TmaUmma``: the TMA bytes
  fill a stage, the MMA's ``tcgen05.commit`` empties it);
* ``mma`` (warp 5) allocates TMEM (``TensorMemory``: ``tcgen05.alloc`` + relinquish) before
  its first UMMA, then per tile acquires an accumulator stage of ``acc`` (``UmmaAsync``, two
  128-column stages in TMEM) and issues ``tcgen05.mma`` for every K step;
* ``epilogue`` (warps 0-3) reads the accumulator with ``tcgen05.ld`` (one row per thread),
  converts it to fp16 and stores it, releases the stage, and after the last tile lets the next
  kernel launch (``griddepcontrol.launch_dependents``) and frees TMEM (``tcgen05.dealloc``);
* ``sched`` (warp 6) asks for the next tile once per tile (``clusterlaunchcontrol.try_cancel``);
  every task reads the answer (``query_cancel``).

ts-verify proves the rings free of deadlocks and races for every K length and tile count, the
CLC protocol (TS-V220/V221) and the TMEM lifetime (TS-V222 to TS-V224: the epilogue frees
after its last read, which the ``acc`` ring orders after the last UMMA)::

    python examples/blackwell/gemm.py              # PTX counts per opcode (CPU, sm_100a)
    ts verify examples/blackwell/gemm.py:make_plan
"""

from __future__ import annotations

import os
import sys
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_100a")  # before the DSL is imported

import cutlass.cute as cute
from _umma_gemm import (
    TILE_K,
    Gemm,
    TmaOperands,
    allocators,
    fake_args,
    gemm_rings,
    gemm_tasks,
    load_op,
    operand_tmas,
    output_tiles,
    threads,
)

from task_scheduling import domain_loop, schedule, work_tile_loop
from task_scheduling.harness import compare_ptx
from task_scheduling.resources import (
    MemoryResource,
    PdlLaunchBarrier,
    PdlWaitBarrier,
    PipelineConfig,
    TileSchedulerConfig,
    WorkQueue,
)
from task_scheduling.task_manager import TaskManager
from task_scheduling.tiles import TileRaster

SCHED_WARP = 6
BLOCK_THREADS = (SCHED_WARP + 1) * 32
QUEUE_STAGES = 2


@schedule
def load(wq: Any, pdl: Any, ab: Any) -> None:
    pdl.wait_griddep()  # A and B may be the previous kernel's output
    with work_tile_loop(wq):
        with domain_loop(Gemm.k_tiles):
            ab.acquire()
            ab.load()
            ab.commit()
        wq.wait()
        wq.read_next_tile()
        wq.release()


@schedule
def mma(wq: Any, tmem: Any, ab: Any, acc: Any) -> None:
    tmem.allocate()  # before the first UMMA into the accumulator
    with work_tile_loop(wq):
        acc.acquire()
        with domain_loop(Gemm.k_tiles):
            ab.wait()
            s = ab.stage_index()
            acc.mma(ab_stage=s)
            ab.release()  # tcgen05.commit: the stage is free once these UMMAs are done
        acc.commit()  # tcgen05.commit: the accumulator is full once every UMMA is done
        wq.wait()
        wq.read_next_tile()
        wq.release()


@schedule
def epilogue(wq: Any, tmem: Any, acc: Any, launch: Any) -> None:
    with work_tile_loop(wq):
        acc.wait()
        acc.store()
        acc.release()
        wq.wait()
        wq.read_next_tile()
        wq.release()
    launch.launch_griddep()
    tmem.free()  # after the last tcgen05.ld of the accumulator


@schedule
def sched(wq: Any) -> None:
    with work_tile_loop(wq):
        wq.acquire()
        wq.fetch_next_tile()
        wq.commit()
        wq.wait()
        wq.read_next_tile()
        wq.release()


def build(
    params: Any = None,
    k_tiles: Any = 8,
    tiled_mma: Any = None,
    tma: tuple[Any, ...] = (None, None, None, None),
    layouts: tuple[Any, Any] = (None, None),
    gmem_c: Any = None,
) -> TaskManager:
    """The resources, tasks and TaskManager (on the host: placeholders for the DSL values)."""
    ab, acc, tmem = gemm_rings(TmaOperands, tiled_mma, tma, layouts, gmem_c)
    wq = WorkQueue(
        TileSchedulerConfig.create_clc_dynamic_persistent_tile_scheduler_params(params),
        name="tiles",
        pipeline_config=PipelineConfig.create_clc_fetch_async_pipeline_cfg(
            QUEUE_STAGES, 16, threads(1), threads(BLOCK_THREADS)
        ),
    )
    pdl_wait, pdl_launch = PdlWaitBarrier(name="pdl_wait"), PdlLaunchBarrier(name="pdl_launch")
    smem, columns = allocators((ab, acc, wq), (acc,))
    tasks = [
        *gemm_tasks((epilogue, load, mma), (wq, tmem, ab, acc, pdl_wait, pdl_launch), k_tiles),
        Gemm([wq], [wq], SCHED_WARP, 1, schedule=sched(wq), name="sched", k=k_tiles),
    ]
    graph: dict[MemoryResource, list[MemoryResource]] = {
        ab: [wq, pdl_wait],
        acc: [ab, wq],
    }
    return TaskManager(
        tasks, graph, smem_allocator=smem, tmem_allocator=columns, name="blackwell_gemm"
    )


def make_plan() -> Any:
    """The kernel plan (what ``ts show`` / ``ts verify`` / ``ts compile`` read)."""
    return build().plan


@cute.kernel
def kernel(
    tiled_mma: cute.TiledMma,
    tma_a: cute.CopyAtom,
    gmem_a: cute.Tensor,
    tma_b: cute.CopyAtom,
    gmem_b: cute.Tensor,
    gmem_c: cute.Tensor,
    layout_a: cute.ComposedLayout,
    layout_b: cute.ComposedLayout,
    params: TileRaster,
) -> None:
    k_tiles = cute.ceil_div(cute.size(gmem_a, mode=[1]), TILE_K)
    manager = build(
        params, k_tiles, tiled_mma, (tma_a, gmem_a, tma_b, gmem_b), (layout_a, layout_b), gmem_c
    )
    manager.setup_resources_and_tasks()
    manager.run()


@cute.jit
def launch(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor) -> None:
    tiled_mma, tma, (layout_a, layout_b) = operand_tmas(a, b, (load_op(), load_op()))
    params = TileRaster(output_tiles(c))
    grid = TileSchedulerConfig.create_clc_dynamic_persistent_tile_scheduler_params(
        params
    ).grid_shape(0)
    kernel(tiled_mma, *tma, c, layout_a, layout_b, params).launch(
        grid=grid, block=(BLOCK_THREADS, 1, 1)
    )


def compile_only() -> dict[str, Any]:
    """Compile for the target (sm_100a by default) with fake tensors; PTX counts per opcode."""
    return {"example": "blackwell_gemm", **compare_ptx({"ts": launch}, *fake_args(), ops=True)}


if __name__ == "__main__":
    import json

    print(json.dumps(compile_only(), indent=1, sort_keys=True))
    sys.exit(0)
