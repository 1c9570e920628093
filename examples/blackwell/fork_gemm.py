"""A Fork group on Blackwell: one TMA load of ``A`` into a GEMM and an activation (sm_100a).

``C = A @ B^T`` and ``D = relu(A)`` from one read of ``A`` (fp16 ``A``: ``M x K``, ``B``:
``N x K``, ``C``: ``M x N``, ``D``: ``M x K``; fp32 accumulation in TMEM), ``128 x 128`` tiles of
``C`` over the static persistent tile queue; compiled for sm_100a without a GPU (nothing here
has run on hardware: the project's GPU is a Hopper).

Warp 4 TMA-loads each K step's ``A`` and ``B`` blocks once into a 4-stage SMEM ring. The ring is
two resources grouped as a Fork ``a_fork`` (one producer, one consumer per member):

* ``ab`` (``TmaUmma``): the MMA warp (5) issues the K step's ``tcgen05.mma`` from the stage and
  releases it with a ``tcgen05.commit``; the epilogue (warps 0-3) drains the TMEM accumulator
  into ``C`` as ``gemm.py``'s does;
* ``a_act`` (``TmaAsync``): a view of the same ``A`` stages, read by the activation warpgroup
  (warps 6-9), which writes ``relu`` of the block to ``D`` (only for the tiles of the first
  column of ``C``: every ``A`` block is loaded once per tile column, ``D`` needs it once) and
  releases its member with a thread arrival.

The load warp acquires both members' stage (each acquire waits for that member's own consumers),
loads once and publishes both with one ``a_fork.commit()``. A TMA load completes the one
mbarrier it is given, so both members wait on ``ab``'s full barriers, armed with the stage's
``A`` and ``B`` bytes (``docs/groups.rst``); each keeps its own empty barriers. ts-verify proves
every ring, the group and the TMEM lifetime::

    python examples/blackwell/fork_gemm.py          # PTX counts per opcode (CPU, sm_100a)
    ts verify examples/blackwell/fork_gemm.py:make_plan
    ts compile --arch sm_100a examples/blackwell/fork_gemm.py:make_plan
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_100a")  # before the DSL is imported

import cutlass
import cutlass.cute as cute
from _umma_gemm import (
    AB_STAGES,
    EPILOGUE_WARPS,
    LOAD_WARP,
    MMA_WARP,
    TILE_K,
    TILE_M,
    Gemm,
    TmaOperands,
    allocators,
    fake_args,
    gemm_rings,
    load_op,
    operand_tmas,
    output_tiles,
    swizzled_view,
    threads,
)

from task_scheduling import consumer_work, domain_loop, schedule, work_tile_loop
from task_scheduling.harness import compare_ptx, fake_tensor
from task_scheduling.pipeline_group import PipelineGroup, PipelineGroupMode
from task_scheduling.resources import (
    MemoryResource,
    PipelineConfig,
    TileSchedulerConfig,
    WorkQueue,
)
from task_scheduling.task_manager import TaskManager
from task_scheduling.tiles import TileRaster

ACT_WARP, ACT_WARPS = MMA_WARP + 1, 4
ACT_THREADS = ACT_WARPS * 32  # one thread per row of the 128-row A block
BLOCK_THREADS = (ACT_WARP + ACT_WARPS) * 32
SMS = 148  # persistent CTAs: one per SM of a B200
A_BYTES = TILE_M * TILE_K * 2  # one fp16 K block of A


@dataclasses.dataclass(kw_only=True)
class ARows(MemoryResource):
    """The activation's view of the ``A`` stages of ``ring`` (the Fork's second member): no
    SMEM and no load of its own, the ring's load fills it."""

    ring: Any = None
    gmem_d: Any = None

    def rows(self, stage_info: Any) -> Any:
        """``(128, 64, stages)``: the ``A`` stages as rows. The UMMA's K-major operand layout
        of a ``128 x 64`` fp16 block is 64-element (128-byte) rows, swizzled in 16-byte
        chunks; the view keeps the swizzle and drops the UMMA's K-phase split."""
        rows = cute.make_layout((TILE_M, TILE_K, AB_STAGES), stride=(TILE_K, 1, TILE_M * TILE_K))
        layout = cute.make_composed_layout(self.ring.layout_a.inner, 0, rows)
        return swizzled_view(stage_info.context.smem_base, self.ring.smem_a.offset, layout)

    @consumer_work
    @cute.jit
    def relu(self, stage_info: Any) -> None:
        """``D`` block ``(m, loop_offset)`` = ``relu`` of the waited stage, thread t: row t.

        Only the tiles of column ``n == 0`` write: the other columns load the same blocks.
        """
        m, n = stage_info.work_tile.tile_idx[0], stage_info.work_tile.tile_idx[1]
        if n == 0:
            row = cute.arch.thread_idx()[0] - ACT_WARP * 32
            src = self.rows(stage_info)[(row, None, stage_info.stage_idx)]
            frag = cute.make_rmem_tensor((TILE_K,), cutlass.Float16)
            cute.autovec_copy(src, frag)
            x = frag.load().to(cutlass.Float32)
            frag.store(cute.where(x > 0.0, x, cute.full_like(x, 0.0)).to(cutlass.Float16))
            d = cute.local_tile(self.gmem_d, (TILE_M, TILE_K), (m, stage_info.loop_offset))
            cute.autovec_copy(frag, d[(row, None)])


def build(
    params: Any = None,
    k_tiles: Any = 8,
    tiled_mma: Any = None,
    tma: tuple[Any, ...] = (None, None, None, None),
    layouts: tuple[Any, Any] = (None, None),
    gmem_c: Any = None,
    gmem_d: Any = None,
    *,
    act_release: bool = True,
) -> TaskManager:
    """The resources, tasks and TaskManager (on the host: placeholders for the DSL values).

    ``act_release=False`` drops the activation's release of its member: a broken schedule for
    tests (the load warp's ``a_act.acquire()`` would wait for that stage forever).
    """
    ab, acc, tmem = gemm_rings(TmaOperands, tiled_mma, tma, layouts, gmem_c)
    # Armed by nobody itself: the members share ab's full barriers (the one load completes
    # those); its empty barriers count the activation warpgroup's threads.
    a_act = ARows(
        name="a_act",
        pipeline_config=PipelineConfig.create_tma_async_pipeline_cfg(
            AB_STAGES, A_BYTES, threads(1), threads(ACT_THREADS)
        ),
        ring=ab,
        gmem_d=gmem_d,
    )
    a_fork = PipelineGroup(name="a_fork", members=[ab, a_act], mode=PipelineGroupMode.Fork)
    wq = WorkQueue(
        TileSchedulerConfig.create_static_persistent_tile_scheduler_params(params), name="tiles"
    )

    @schedule
    def load(wq: Any, g: Any) -> None:
        with work_tile_loop(wq), domain_loop(Gemm.k_tiles):
            g.ab.acquire()  # both consumers are done with the stage before
            g.a_act.acquire()  # the one load overwrites it
            g.ab.load()  # A and B, once
            g.commit()  # publishes both members' stage

    @schedule
    def mma(wq: Any, tmem: Any, ab: Any, acc: Any) -> None:
        tmem.allocate()  # before the first UMMA into the accumulator
        with work_tile_loop(wq):
            acc.acquire()
            with domain_loop(Gemm.k_tiles):
                ab.wait()
                acc.mma(ab_stage=ab.stage_index())
                ab.release()  # tcgen05.commit: free once these UMMAs have read the stage
            acc.commit()  # tcgen05.commit: the accumulator is full once every UMMA is done

    @schedule
    def epilogue(wq: Any, tmem: Any, acc: Any) -> None:
        with work_tile_loop(wq):
            acc.wait()
            acc.store()
            acc.release()
        tmem.free()  # after the last tcgen05.ld of the accumulator

    @schedule
    def act(wq: Any, a: Any) -> None:
        with work_tile_loop(wq), domain_loop(Gemm.k_tiles):
            a.wait()
            a.relu()
            if act_release:
                a.release()

    def task(
        inputs: list[Any], outputs: list[Any], warp: int, warps: int, body: Any, name: str
    ) -> Gemm:
        return Gemm(inputs, outputs, warp, warps, schedule=body, name=name, k=k_tiles)

    tasks = [
        task([wq, tmem, acc], [], 0, EPILOGUE_WARPS, epilogue(wq, tmem, acc), "epilogue"),
        task([wq], [ab, a_act], LOAD_WARP, 1, load(wq, a_fork), "load"),
        task([wq, a_act], [], ACT_WARP, ACT_WARPS, act(wq, a_act), "act"),
        task([wq, tmem, ab], [acc], MMA_WARP, 1, mma(wq, tmem, ab, acc), "mma"),
    ]
    smem, columns = allocators((ab, acc), (acc,))
    graph: dict[MemoryResource, list[MemoryResource]] = {ab: [wq], a_act: [wq], acc: [ab, wq]}
    return TaskManager(
        tasks, graph, smem_allocator=smem, tmem_allocator=columns, name="blackwell_fork_gemm"
    )


def make_plan(*, act_release: bool = True) -> Any:
    """The kernel plan (what ``ts show`` / ``ts verify`` / ``ts compile`` read)."""
    return build(act_release=act_release).plan


@cute.kernel
def kernel(
    tiled_mma: cute.TiledMma,
    tma_a: cute.CopyAtom,
    gmem_a: cute.Tensor,
    tma_b: cute.CopyAtom,
    gmem_b: cute.Tensor,
    gmem_c: cute.Tensor,
    gmem_d: cute.Tensor,
    layout_a: cute.ComposedLayout,
    layout_b: cute.ComposedLayout,
    params: TileRaster,
) -> None:
    k_tiles = cute.ceil_div(cute.size(gmem_a, mode=[1]), TILE_K)
    tma = (tma_a, gmem_a, tma_b, gmem_b)
    manager = build(params, k_tiles, tiled_mma, tma, (layout_a, layout_b), gmem_c, gmem_d)
    manager.setup_resources_and_tasks()
    manager.run()


@cute.jit
def launch(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor) -> None:
    tiled_mma, tma, (layout_a, layout_b) = operand_tmas(a, b, (load_op(), load_op()))
    params = TileRaster(output_tiles(c))
    grid = TileSchedulerConfig.create_static_persistent_tile_scheduler_params(params).grid_shape(
        SMS
    )
    kernel(tiled_mma, *tma, c, d, layout_a, layout_b, params).launch(
        grid=grid, block=(BLOCK_THREADS, 1, 1)
    )


def compile_only(m: int = 1024, n: int = 1024, k: int = 512) -> dict[str, Any]:
    """Compile for the target (sm_100a by default) with fake tensors; PTX counts per opcode."""
    a, b, c = fake_args(m, n, k)
    d = fake_tensor(cutlass.Float16, (m, k), row_major=True, align=16)
    return {"example": "blackwell_fork_gemm", **compare_ptx({"ts": launch}, a, b, c, d, ops=True)}


if __name__ == "__main__":
    import json

    print(json.dumps(compile_only(), indent=1, sort_keys=True))
    sys.exit(0)
