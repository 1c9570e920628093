"""Merge groups on Blackwell: a GEMM plus a residual, ``C = A @ B^T + R`` (sm_100a).

fp16 ``A`` (``M x K``), ``B`` (``N x K``), ``R`` and ``C`` (``M x N``), fp32 accumulation in
TMEM, ``128 x 128`` tiles over the static persistent tile queue; compiled for sm_100a without a
GPU (nothing here has run on hardware: the project's GPU is a Hopper). Two pipeline groups, both
Merges (N producers, one consumer that frees every member's stage with one release):

* ``ab`` merges ring ``smem_a`` (warp 4 TMA-loads the tile's ``A`` K blocks) and ring
  ``smem_b`` (warp 6, the ``B`` blocks), both ``TmaUmma`` with 4 stages. The MMA warp (5)
  waits on both members, issues the K step's ``tcgen05.mma`` with ``A`` from ``smem_a``'s
  stage and ``B`` from ``smem_b``'s (each stage handed over as a token), and frees both stages
  with one ``ab.release()``: a ``tcgen05.commit`` per member, so the stages go back to the
  loads once those UMMAs have read them.
* ``acc_r`` merges the accumulator ``acc`` (``UmmaAsync``: the MMA warp's UMMAs fill a TMEM
  stage, its ``tcgen05.commit`` publishes it) and ring ``smem_r`` (``TmaAsync``: warp 7
  TMA-loads the tile of ``R``), both 2 stages. The epilogue (warps 0-3) waits on both members,
  reads its accumulator row (``tcgen05.ld``), adds its row of ``R`` from SMEM, stores the fp16
  sum, and frees both stages with one ``acc_r.release()``.

A group release is lowered as it is verified, a release of each member in member order
(``docs/groups.rst``). ts-verify proves every ring, both groups and the TMEM lifetime (the MMA
warp allocates before its first UMMA, the epilogue frees after its last ``tcgen05.ld``)::

    python examples/blackwell/merge_gemm.py         # PTX counts per opcode (CPU, sm_100a)
    ts verify examples/blackwell/merge_gemm.py:make_plan
    ts compile --arch sm_100a examples/blackwell/merge_gemm.py:make_plan
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_100a")  # before the DSL is imported

import cutlass
import cutlass.cute as cute
import cutlass.utils.blackwell_helpers as sm100
from _umma_gemm import (
    AB_STAGES,
    ACC_COLUMNS,
    ACC_STAGES,
    EPILOGUE_WARPS,
    LOAD_WARP,
    MMA_WARP,
    TILE_K,
    TILE_M,
    TILE_N,
    Accumulator,
    Gemm,
    allocators,
    fake_args,
    load_op,
    operand_tmas,
    output_tiles,
    swizzled_view,
    threads,
    tma_load_block,
    umma_k_step,
    write_rows,
)
from cutlass.cute.nvgpu import cpasync
from cutlass.tensor_utils import LayoutEnum

from task_scheduling import (
    WorkAttr,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    work_tile_loop,
)
from task_scheduling.harness import compare_ptx, fake_tensor
from task_scheduling.memory import SmemAllocation, TensorMemory
from task_scheduling.pipeline_group import PipelineGroup, PipelineGroupMode
from task_scheduling.resources import (
    MemoryResource,
    PipelineConfig,
    TaskLocalVariable,
    TileSchedulerConfig,
    WorkQueue,
)
from task_scheduling.task_manager import TaskManager
from task_scheduling.tiles import TileRaster

LOAD_A_WARP, LOAD_B_WARP, LOAD_R_WARP = LOAD_WARP, MMA_WARP + 1, MMA_WARP + 2
BLOCK_THREADS = (LOAD_R_WARP + 1) * 32
SMS = 148  # persistent CTAs: one per SM of a B200
OPERAND_BYTES = TILE_M * TILE_K * 2  # one fp16 K block of A (B's is as large: TILE_N == TILE_M)
R_BYTES = TILE_M * TILE_N * 2  # one fp16 tile of R


@dataclasses.dataclass(kw_only=True)
class OperandBlocks(MemoryResource):
    """One operand's ring of K blocks in SMEM (``operand`` ``"a"``: tile row ``m`` of ``A``,
    ``"b"``: tile column ``n`` of ``B``): its warp's TMA fills a stage, the UMMAs read it."""

    operand: str = "a"
    tma: Any = None
    gmem: Any = None
    layout: Any = None
    tiled_mma: Any = None
    stage: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.stage = TaskLocalVariable(dtype="Int32", default=0)
        self.smem = SmemAllocation(self.name, OPERAND_BYTES * AB_STAGES, alignment=1024)

    def get_smem_requirements(self) -> list[Any]:
        return [self.smem]

    def view(self, stage_info: Any) -> Any:
        """Every stage of the ring, in the UMMA's swizzled operand layout."""
        return swizzled_view(stage_info.context.smem_base, self.smem.offset, self.layout)

    @producer_work
    @cute.jit
    def load(self, stage_info: Any) -> None:
        """TMA-load K step ``loop_offset`` of the work tile's block into the acquired stage."""
        tile = stage_info.work_tile.tile_idx[0 if self.operand == "a" else 1]
        smem = self.view(stage_info)
        tma_load_block(self.tma, self.gmem, smem, self.operand, tile, stage_info, self.tiled_mma)

    @consumer_work(work_attrs=WorkAttr.AUXILIARY, returns=stage)
    def stage_index(self, stage_info: Any) -> Any:
        """The waited stage's index, for the UMMA (a work call of ``acc``) that reads it."""
        return stage_info.stage_idx


@dataclasses.dataclass(kw_only=True)
class ResidualTiles(MemoryResource):
    """The ring of ``R`` tiles in SMEM (one ``128 x 128`` fp16 tile a stage, 128-byte swizzled
    rows as the epilogue layout): warp 7's TMA fills a stage, the epilogue reads it."""

    tma: Any = None
    gmem: Any = None
    layout: Any = None
    stage: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.stage = TaskLocalVariable(dtype="Int32", default=0)
        self.smem = SmemAllocation("smem_r", R_BYTES * ACC_STAGES, alignment=1024)

    def get_smem_requirements(self) -> list[Any]:
        return [self.smem]

    def view(self, stage_info: Any) -> Any:
        """``(128, 128, stages)``: the ring's tiles."""
        return swizzled_view(stage_info.context.smem_base, self.smem.offset, self.layout)

    @producer_work
    @cute.jit
    def load(self, stage_info: Any) -> None:
        """TMA-load the work tile of ``R`` into the acquired stage (two 64-column boxes: a
        swizzled row holds 64 fp16 values)."""
        m, n = stage_info.work_tile.tile_idx[0], stage_info.work_tile.tile_idx[1]
        tiles = cute.local_tile(self.gmem, (TILE_M, TILE_N), (None, None))
        t_s, t_g = cpasync.tma_partition(
            self.tma,
            0,
            cute.make_layout(1),
            cute.group_modes(self.view(stage_info), 0, 2),
            cute.group_modes(tiles, 0, 2),
        )
        cute.copy(
            self.tma,
            t_g[(None, m, n)],
            t_s[(None, stage_info.stage_idx)],
            tma_bar_ptr=stage_info.barrier,
        )

    @consumer_work(work_attrs=WorkAttr.AUXILIARY, returns=stage)
    def stage_index(self, stage_info: Any) -> Any:
        """The waited stage's index, for the epilogue (a work call of ``acc``) that adds it."""
        return stage_info.stage_idx


@dataclasses.dataclass(kw_only=True)
class SumAccumulator(Accumulator):
    """``gemm.py``'s TMEM accumulator ring, its UMMAs reading ``A`` and ``B`` from two rings and
    its epilogue adding a residual tile."""

    ring_a: Any = None
    ring_b: Any = None
    residual: Any = None

    @producer_work
    @cute.jit
    def mma_pair(self, stage_info: Any, *, a_stage: Any, b_stage: Any) -> None:
        """The UMMAs of one K step into the acquired stage, ``A`` from stage ``a_stage`` of
        ``ring_a`` and ``B`` from ``b_stage`` of ``ring_b`` (accumulating after the first)."""
        acc = self._stages(stage_info)[(None, None, None, stage_info.stage_idx)]
        s_a, s_b = self.ring_a.view(stage_info), self.ring_b.view(stage_info)
        first = stage_info.loop_offset != 0
        umma_k_step(self.tiled_mma, acc, s_a, s_b, a_stage, b_stage, first)

    @consumer_work
    @cute.jit
    def store_sum(self, stage_info: Any, *, r_stage: Any) -> None:
        """``C = acc + R`` for the work tile: the waited accumulator stage and stage
        ``r_stage`` of the residual ring, one row per thread."""
        m, n = stage_info.work_tile.tile_idx[0], stage_info.work_tile.tile_idx[1]
        acc = self._stages(stage_info)[((None, None), 0, 0, stage_info.stage_idx)]
        r = self.residual.view(stage_info)[(None, None, r_stage)]
        write_rows(self.tiled_mma, acc, self.gmem_c, m, n, r)


def build(
    params: Any = None,
    k_tiles: Any = 8,
    tiled_mma: Any = None,
    tma: tuple[Any, ...] = (None,) * 6,
    layouts: tuple[Any, Any, Any] = (None, None, None),
    gmem_c: Any = None,
    *,
    release_each: bool = False,
) -> TaskManager:
    """The resources, tasks and TaskManager (on the host: placeholders for the DSL values).

    ``tma`` is ``(atom_a, tensor_a, atom_b, tensor_b, atom_r, tensor_r)``, ``layouts`` the
    A / B / R rings' SMEM layouts. ``release_each=True`` frees the members of both groups one
    by one instead of with the group's one release: a broken schedule for tests (TS-V241).
    """
    tma_a, gmem_a, tma_b, gmem_b, tma_r, gmem_r = tma

    def operand_ring(name: str, operand: str, atom: Any, gmem: Any, layout: Any) -> Any:
        # TMA bytes fill a stage; the MMA warp's tcgen05.commit (one thread) empties it.
        cfg = PipelineConfig.create_tma_umma_pipeline_cfg(
            AB_STAGES, OPERAND_BYTES, threads(1), threads(1)
        )
        return OperandBlocks(
            name=name,
            pipeline_config=cfg,
            operand=operand,
            tma=atom,
            gmem=gmem,
            layout=layout,
            tiled_mma=tiled_mma,
        )

    smem_a = operand_ring("smem_a", "a", tma_a, gmem_a, layouts[0])
    smem_b = operand_ring("smem_b", "b", tma_b, gmem_b, layouts[1])
    epilogue_threads = threads(EPILOGUE_WARPS * 32)
    # As many stages as the accumulator: a Merge's members share their stage index.
    smem_r = ResidualTiles(
        name="smem_r",
        pipeline_config=PipelineConfig.create_tma_async_pipeline_cfg(
            ACC_STAGES, R_BYTES, threads(1), epilogue_threads
        ),
        tma=tma_r,
        gmem=gmem_r,
        layout=layouts[2],
    )
    acc = SumAccumulator(
        name="acc",
        pipeline_config=PipelineConfig.create_umma_async_pipeline_cfg(
            ACC_STAGES, threads(1), epilogue_threads
        ),
        tiled_mma=tiled_mma,
        gmem_c=gmem_c,
        ring_a=smem_a,
        ring_b=smem_b,
        residual=smem_r,
    )
    ab = PipelineGroup(name="ab", members=[smem_a, smem_b], mode=PipelineGroupMode.Merge)
    acc_r = PipelineGroup(name="acc_r", members=[acc, smem_r], mode=PipelineGroupMode.Merge)
    tmem = TensorMemory(name="tmem", num_columns=ACC_COLUMNS, warp=MMA_WARP, free_warp=0)
    wq = WorkQueue(
        TileSchedulerConfig.create_static_persistent_tile_scheduler_params(params), name="tiles"
    )

    def release(g: Any, first: str, second: str) -> None:
        if release_each:
            getattr(g, first).release()  # wrong: a Merge's release is collapsed
            getattr(g, second).release()
        else:
            g.release()  # one release frees the stage of every member

    @schedule
    def load_k(wq: Any, ring: Any) -> None:  # an operand's K blocks
        with work_tile_loop(wq), domain_loop(Gemm.k_tiles):
            ring.acquire()
            ring.load()
            ring.commit()

    @schedule
    def load_r(wq: Any, ring: Any) -> None:  # the residual tile
        with work_tile_loop(wq):
            ring.acquire()
            ring.load()
            ring.commit()

    @schedule
    def mma(wq: Any, tmem: Any, g: Any, acc: Any) -> None:
        tmem.allocate()  # before the first UMMA into the accumulator
        with work_tile_loop(wq):
            acc.acquire()
            with domain_loop(Gemm.k_tiles):
                g.smem_a.wait()
                g.smem_b.wait()
                acc.mma_pair(a_stage=g.smem_a.stage_index(), b_stage=g.smem_b.stage_index())
                release(g, "smem_a", "smem_b")  # a tcgen05.commit per member
            acc.commit()  # tcgen05.commit: the accumulator is full once every UMMA is done

    @schedule
    def epilogue(wq: Any, tmem: Any, g: Any) -> None:
        with work_tile_loop(wq):
            g.acc.wait()
            g.smem_r.wait()
            g.acc.store_sum(r_stage=g.smem_r.stage_index())
            release(g, "acc", "smem_r")  # the TMEM stage and the R tile, both read
        tmem.free()  # after the last tcgen05.ld of the accumulator

    def task(
        inputs: list[Any], outputs: list[Any], warp: int, warps: int, sched: Any, name: str
    ) -> Gemm:
        return Gemm(inputs, outputs, warp, warps, schedule=sched, name=name, k=k_tiles)

    tasks = [
        task([wq, tmem, acc, smem_r], [], 0, EPILOGUE_WARPS, epilogue(wq, tmem, acc_r), "epilogue"),
        task([wq], [smem_a], LOAD_A_WARP, 1, load_k(wq, smem_a), "load_a"),
        task([wq], [smem_b], LOAD_B_WARP, 1, load_k(wq, smem_b), "load_b"),
        task([wq], [smem_r], LOAD_R_WARP, 1, load_r(wq, smem_r), "load_r"),
        task([wq, tmem, smem_a, smem_b], [acc], MMA_WARP, 1, mma(wq, tmem, ab, acc), "mma"),
    ]
    smem, columns = allocators((smem_a, smem_b, smem_r, acc), (acc,))
    graph: dict[MemoryResource, list[MemoryResource]] = {
        smem_a: [wq],
        smem_b: [wq],
        smem_r: [wq],
        acc: [smem_a, smem_b, wq],
    }
    return TaskManager(
        tasks, graph, smem_allocator=smem, tmem_allocator=columns, name="blackwell_merge_gemm"
    )


def make_plan(*, release_each: bool = False) -> Any:
    """The kernel plan (what ``ts show`` / ``ts verify`` / ``ts compile`` read)."""
    return build(release_each=release_each).plan


def r_layout() -> Any:
    """The residual ring's SMEM layout: ``(128, 128, stages)`` of 128-byte swizzled rows."""
    return sm100.make_smem_layout_epi(
        cutlass.Float16, LayoutEnum.ROW_MAJOR, (TILE_M, TILE_N), ACC_STAGES
    )


@cute.kernel
def kernel(
    tiled_mma: cute.TiledMma,
    tma_a: cute.CopyAtom,
    gmem_a: cute.Tensor,
    tma_b: cute.CopyAtom,
    gmem_b: cute.Tensor,
    tma_r: cute.CopyAtom,
    gmem_r: cute.Tensor,
    gmem_c: cute.Tensor,
    layout_a: cute.ComposedLayout,
    layout_b: cute.ComposedLayout,
    layout_r: cute.ComposedLayout,
    params: TileRaster,
) -> None:
    k_tiles = cute.ceil_div(cute.size(gmem_a, mode=[1]), TILE_K)
    tma = (tma_a, gmem_a, tma_b, gmem_b, tma_r, gmem_r)
    manager = build(params, k_tiles, tiled_mma, tma, (layout_a, layout_b, layout_r), gmem_c)
    manager.setup_resources_and_tasks()
    manager.run()


@cute.jit
def launch(a: cute.Tensor, b: cute.Tensor, r: cute.Tensor, c: cute.Tensor) -> None:
    tiled_mma, tma, (layout_a, layout_b) = operand_tmas(a, b, (load_op(), load_op()))
    layout_r = r_layout()
    tma_r, gmem_r = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileG2SOp(),
        r,
        cute.slice_(layout_r, (None, None, 0)),
        (TILE_M, TILE_N),
    )
    params = TileRaster(output_tiles(c))
    grid = TileSchedulerConfig.create_static_persistent_tile_scheduler_params(params).grid_shape(
        SMS
    )
    kernel(tiled_mma, *tma, tma_r, gmem_r, c, layout_a, layout_b, layout_r, params).launch(
        grid=grid, block=(BLOCK_THREADS, 1, 1)
    )


def compile_only(m: int = 1024, n: int = 1024, k: int = 512) -> dict[str, Any]:
    """Compile for the target (sm_100a by default) with fake tensors; PTX counts per opcode."""
    a, b, c = fake_args(m, n, k)
    r = fake_tensor(cutlass.Float16, (m, n), row_major=True, align=16)
    return {"example": "blackwell_merge_gemm", **compare_ptx({"ts": launch}, a, b, r, c, ops=True)}


if __name__ == "__main__":
    import json

    print(json.dumps(compile_only(), indent=1, sort_keys=True))
    sys.exit(0)
