"""What the fp16 Blackwell GEMM examples share (``gemm.py``, ``cluster_gemm.py``, and the
pipeline-group GEMMs ``merge_gemm.py`` and ``fork_gemm.py``).

``gemm.py`` and ``cluster_gemm.py`` compute ``C = A @ B^T`` in fp16 with fp32 accumulation in
TMEM, ``128 x 128`` tiles, one CTA per tile, with the same warps (epilogue 0-3, load 4, MMA 5),
the same operand ring (its TMA load aside: plain in one, multicast over the cluster in the
other), the same two-stage TMEM accumulator ring and epilogue, and the same host setup. What
differs stays in each example: the tile queue (CLC or static), the cluster, the schedules. The
allocator and TMEM helpers below serve ``gemm_nvfp4.py`` and ``umma_chain.py`` too.
The group GEMMs split or share the rings differently and reuse the pieces: the one-operand TMA
load (:func:`tma_load_block`), the UMMAs of a K step (:func:`umma_k_step`) and the epilogue's row
write (:func:`write_rows`, with a residual or without).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe
import cutlass.utils.blackwell_helpers as sm100
from cutlass.base_dsl.ast_helpers import const_expr
from cutlass.cute.nvgpu import cpasync, tcgen05

from task_scheduling import WorkAttr, consumer_work, producer_work
from task_scheduling.harness import fake_tensor
from task_scheduling.memory import (
    SmemAllocation,
    SmemAllocator,
    TensorMemory,
    TmemAllocation,
    TmemAllocator,
)
from task_scheduling.resources import MemoryResource, PipelineConfig, TaskLocalVariable
from task_scheduling.task import Task

TILE_M, TILE_N, TILE_K = 128, 128, 64
MMA_TILER = (TILE_M, TILE_N, TILE_K)
AB_STAGES, ACC_STAGES = 4, 2
ACC_COLUMNS = TILE_N * ACC_STAGES  # fp32 accumulators: one TMEM column per output column
EPILOGUE_WARPS, LOAD_WARP, MMA_WARP = 4, 4, 5
# A stage holds the whole A and B blocks of a K step (fp16). In a cluster that includes the
# slices the peers multicast: the full barrier counts all of those bytes.
STAGE_BYTES = (TILE_M + TILE_N) * TILE_K * 2


def threads(n: int) -> Any:
    """``n`` threads as one pipeline participant group."""
    return cpipe.CooperativeGroup(cpipe.Agent.Thread, n)


def allocators(
    smem_resources: Iterable[MemoryResource], tmem_resources: Iterable[MemoryResource]
) -> tuple[SmemAllocator, TmemAllocator]:
    """The SMEM layout (the resources', then the word tcgen05.alloc writes) and TMEM columns."""
    smem = SmemAllocator()
    for r in smem_resources:
        smem.add_resource(r)
    smem.add_tmem_ptr(SmemAllocation("tmem_ptr", dtype=cutlass.Int32, alignment=4))
    smem.compute_layout()
    columns = TmemAllocator()
    for r in tmem_resources:
        columns.add_resource(r)
    columns.compute_layout()
    return smem, columns


def tmem_base(stage_info: Any, dtype: Any) -> Any:
    """The start of the CTA's TMEM allocation (the address tcgen05.alloc wrote to SMEM)."""
    word = stage_info.context.tmem_ptr_i32
    ptr = cute.make_ptr(cutlass.Int32, word.data_ptr(), assumed_align=4)
    return cute.arch.retrieve_tmem_ptr(dtype, 16, ptr)


def swizzled_view(base: Any, offset: int, layout: Any) -> Any:
    """An fp16 SMEM tensor of a (swizzled, composed) UMMA operand layout at ``base[offset]``."""
    raw = cute.make_ptr(cutlass.Float16, base.data_ptr(offset), assumed_align=1024)
    ptr = cute.recast_ptr(raw, layout.inner, dtype=cutlass.Float16)
    return cute.make_tensor(ptr, layout.outer)


def tma_load_block(
    tma: Any, gmem: Any, smem: Any, operand: str, tile: Any, stage_info: Any, tiled_mma: Any
) -> None:
    """TMA-load K step ``loop_offset`` of the ``operand`` (``"a"`` or ``"b"``) block of tile row
    / column ``tile`` into the stage ``stage_info`` holds, completing on its barrier (one CTA)."""
    mode = (None, 0, None) if operand == "a" else (0, None, None)
    tiles = cute.local_tile(gmem, cute.slice_(MMA_TILER, mode), (None, None))
    thr_mma = tiled_mma.get_slice(0)
    parts = thr_mma.partition_A(tiles) if operand == "a" else thr_mma.partition_B(tiles)
    t_s, t_g = cpasync.tma_partition(
        tma, 0, cute.make_layout(1), cute.group_modes(smem, 0, 3), cute.group_modes(parts, 0, 3)
    )
    cute.copy(
        tma,
        t_g[(None, tile, stage_info.loop_offset)],
        t_s[(None, stage_info.stage_idx)],
        tma_bar_ptr=stage_info.barrier,
    )


@cute.jit
def umma_k_step(
    tiled_mma: Any, acc: Any, s_a: Any, s_b: Any, a_stage: Any, b_stage: Any, accumulate: Any
) -> None:
    """The UMMAs of one K step into ``acc``: ``A`` from stage ``a_stage`` of ``s_a``, ``B`` from
    ``b_stage`` of ``s_b``; the first one overwrites ``acc`` unless ``accumulate``.

    It sets ``tiled_mma``'s accumulate field to values of the MMA warp's code: a task lowered
    after the MMA task must not use ``tiled_mma`` (list the MMA task after those that do).
    """
    frag_a = tiled_mma.make_fragment_A(s_a)
    frag_b = tiled_mma.make_fragment_B(s_b)
    tiled_mma.set(tcgen05.Field.ACCUMULATE, accumulate)
    for kp in cutlass.range_constexpr(cute.size(frag_a, mode=[2])):  # type: ignore[attr-defined]
        cute.gemm(
            tiled_mma,
            acc,
            frag_a[(None, None, kp, a_stage)],
            frag_b[(None, None, kp, b_stage)],
            acc,
        )
        tiled_mma.set(tcgen05.Field.ACCUMULATE, True)


@cute.jit
def write_rows(tiled_mma: Any, acc: Any, gmem_c: Any, m: Any, n: Any, residual: Any = None) -> None:
    """``tcgen05.ld`` of the accumulator stage ``acc`` (thread t: row t), plus the fp16 SMEM tile
    ``residual`` when there is one, to fp16, into tile ``(m, n)`` of C."""
    g_c = tiled_mma.get_slice(0).partition_C(cute.local_tile(gmem_c, (TILE_M, TILE_N), (m, n)))[
        ((None, None), 0, 0)
    ]
    atom = cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x128), cutlass.Float32)
    t2r = tcgen05.make_tmem_copy(atom, acc)
    thr = t2r.get_slice(cute.arch.thread_idx()[0] % (EPILOGUE_WARPS * 32))
    src, dst = thr.partition_S(acc), thr.partition_D(g_c)
    regs = cute.make_rmem_tensor(dst.shape, cutlass.Float32)
    cute.copy(t2r, src, regs)
    cute.arch.fence_view_async_tmem_op("load")  # the stage is read: it may be released
    if const_expr(residual is not None):
        # The thread's row of the residual, partitioned exactly as its row of C.
        s_r = tiled_mma.get_slice(0).partition_C(residual)[((None, None), 0, 0)]
        r = cute.make_rmem_tensor(dst.shape, cutlass.Float16)
        cute.autovec_copy(thr.partition_D(s_r), r)
        regs.store(regs.load() + r.load().to(cutlass.Float32))
    out = cute.make_rmem_tensor(dst.shape, cutlass.Float16)
    out.store(regs.load().to(cutlass.Float16))
    cute.autovec_copy(out, dst)


@dataclasses.dataclass(kw_only=True)
class OperandRing(MemoryResource):
    """The A / B ring in SMEM, its TMA load left to the example (plain or multicast)."""

    tma_a: Any = None
    tma_b: Any = None
    gmem_a: Any = None
    gmem_b: Any = None
    layout_a: Any = None
    layout_b: Any = None
    tiled_mma: Any = None
    stage: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.stage = TaskLocalVariable(dtype="Int32", default=0)
        self.smem_a = SmemAllocation("ab.a", TILE_M * TILE_K * 2 * AB_STAGES, alignment=1024)
        self.smem_b = SmemAllocation("ab.b", TILE_N * TILE_K * 2 * AB_STAGES, alignment=1024)

    def get_smem_requirements(self) -> list[Any]:
        return [self.smem_a, self.smem_b]

    def views(self, stage_info: Any) -> tuple[Any, Any]:
        base = stage_info.context.smem_base
        a = swizzled_view(base, self.smem_a.offset, self.layout_a)
        b = swizzled_view(base, self.smem_b.offset, self.layout_b)
        return a, b

    @consumer_work(work_attrs=WorkAttr.AUXILIARY, returns=stage)
    def stage_index(self, stage_info: Any) -> Any:
        """The waited stage's index (the UMMA of the accumulator reads it)."""
        return stage_info.stage_idx


@dataclasses.dataclass(kw_only=True)
class Accumulator(MemoryResource):
    """The accumulator ring in TMEM (the CTA's own): the UMMAs fill a stage, the epilogue
    drains it."""

    operands: Any = None
    tiled_mma: Any = None
    gmem_c: Any = None

    def get_tmem_requirements(self) -> list[Any]:
        return [TmemAllocation("acc", ACC_COLUMNS)]

    def _stages(self, stage_info: Any) -> Any:
        """The accumulator stages in TMEM."""
        tmem = tmem_base(stage_info, cutlass.Float32)
        shape = self.tiled_mma.partition_shape_C((TILE_M, TILE_N))
        layout = self.tiled_mma.make_fragment_C(cute.append(shape, ACC_STAGES)).layout
        return cute.make_tensor(tmem, layout)

    @producer_work
    @cute.jit
    def mma(self, stage_info: Any, *, ab_stage: Any = None) -> None:
        """The UMMAs of one K step into the acquired stage (accumulating after the first)."""
        s_a, s_b = self.operands.views(stage_info)
        acc = self._stages(stage_info)[(None, None, None, stage_info.stage_idx)]
        umma_k_step(self.tiled_mma, acc, s_a, s_b, ab_stage, ab_stage, stage_info.loop_offset != 0)

    @consumer_work
    @cute.jit
    def store(self, stage_info: Any) -> None:
        """``tcgen05.ld`` of the waited stage (thread t: row t), to fp16, into C."""
        m, n = stage_info.work_tile.tile_idx[0], stage_info.work_tile.tile_idx[1]
        acc = self._stages(stage_info)[((None, None), 0, 0, stage_info.stage_idx)]
        write_rows(self.tiled_mma, acc, self.gmem_c, m, n)


@dataclasses.dataclass(kw_only=True)
class TmaOperands(OperandRing):
    """The A / B ring in SMEM: one CTA's TMA loads fill a stage, the MMA warp's UMMAs read it."""

    @producer_work
    @cute.jit
    def load(self, stage_info: Any) -> None:
        """TMA-load the K step ``loop_offset`` of the tile's A and B blocks into the stage."""
        s_a, s_b = self.views(stage_info)
        m, n = stage_info.work_tile.tile_idx[0], stage_info.work_tile.tile_idx[1]
        tma_load_block(self.tma_a, self.gmem_a, s_a, "a", m, stage_info, self.tiled_mma)
        tma_load_block(self.tma_b, self.gmem_b, s_b, "b", n, stage_info, self.tiled_mma)


def gemm_rings(
    operands: type[OperandRing],
    tiled_mma: Any,
    tma: tuple[Any, ...],
    layouts: tuple[Any, Any],
    gmem_c: Any,
    *,
    ab_releases: int = 1,
    vmnk: Any = None,
    **fields: Any,
) -> tuple[Any, Accumulator, TensorMemory]:
    """The ``ab`` ring (of the example's ``operands`` class), ``acc`` and the TMEM under it.

    ``ab_releases`` counts the commits that empty an ``ab`` stage (one per CTA that filled
    it), ``vmnk`` is the cluster; ``fields`` are the example's own fields of ``operands``.
    """
    tma_a, gmem_a, tma_b, gmem_b = tma
    ab = operands(
        name="ab",
        pipeline_config=PipelineConfig.create_tma_umma_pipeline_cfg(
            AB_STAGES, STAGE_BYTES, threads(1), threads(ab_releases), cta_layout_vmnk=vmnk
        ),
        tma_a=tma_a,
        tma_b=tma_b,
        gmem_a=gmem_a,
        gmem_b=gmem_b,
        layout_a=layouts[0],
        layout_b=layouts[1],
        tiled_mma=tiled_mma,
        **fields,
    )
    acc = Accumulator(
        name="acc",
        pipeline_config=PipelineConfig.create_umma_async_pipeline_cfg(
            ACC_STAGES, threads(1), threads(EPILOGUE_WARPS * 32), cta_layout_vmnk=vmnk
        ),
        operands=ab,
        tiled_mma=tiled_mma,
        gmem_c=gmem_c,
    )
    # The MMA warp allocates before its first UMMA; the epilogue's first warp frees.
    tmem = TensorMemory(name="tmem", num_columns=ACC_COLUMNS, warp=MMA_WARP, free_warp=0)
    return ab, acc, tmem


class Gemm(Task):
    """A task whose K loop has ``k`` steps (the same for every tile)."""

    def __init__(self, *args: Any, k: Any = 8, **kwargs: Any) -> None:
        self.k = k
        super().__init__(*args, **kwargs)

    def k_tiles(self, work_tile_coord: Any) -> Any:
        """K steps of every tile."""
        del work_tile_coord
        return self.k


def gemm_tasks(
    schedules: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]],
    resources: tuple[Any, Any, Any, Any, Any, Any],
    k_tiles: Any,
) -> list[Task]:
    """The epilogue (warps 0-3), load (warp 4) and MMA (warp 5) tasks over the tile queue.

    ``schedules`` are the example's ``(epilogue, load, mma)``; ``resources`` are
    ``(wq, tmem, ab, acc, pdl_wait, pdl_launch)``.
    """
    epilogue, load, mma = schedules
    wq, tmem, ab, acc, pdl_wait, pdl_launch = resources
    return [
        Gemm(
            [wq, tmem, acc],
            [pdl_launch],
            0,
            EPILOGUE_WARPS,
            schedule=epilogue(wq, tmem, acc, pdl_launch),
            name="epilogue",
            k=k_tiles,
        ),
        Gemm(
            [wq, pdl_wait],
            [ab],
            LOAD_WARP,
            1,
            schedule=load(wq, pdl_wait, ab),
            name="load",
            k=k_tiles,
        ),
        Gemm(
            [wq, tmem, ab],
            [acc],
            MMA_WARP,
            1,
            schedule=mma(wq, tmem, ab, acc),
            name="mma",
            k=k_tiles,
        ),
    ]


def make_tiled_mma() -> Any:
    """One-CTA fp16 UMMA, fp32 accumulator in TMEM, both operands K-major, 128 x 128."""
    major = cute.nvgpu.OperandMajorMode.K
    return sm100.make_trivial_tiled_mma(
        cutlass.Float16,
        cutlass.Float16,
        major,
        major,
        cutlass.Float32,
        tcgen05.CtaGroup.ONE,
        (TILE_M, TILE_N),
    )


def operand_tmas(
    a: Any, b: Any, ops: tuple[Any, Any], vmnk: Any = None
) -> tuple[Any, tuple[Any, Any, Any, Any], tuple[Any, Any]]:
    """The UMMA, the A / B TMA atoms and tensors, and the staged SMEM layouts (host side).

    ``ops`` are the TMA load ops of A and B (multicast in a cluster), ``vmnk`` the cluster.
    """
    tiled_mma = make_tiled_mma()
    layout_a = sm100.make_smem_layout_a(tiled_mma, MMA_TILER, cutlass.Float16, AB_STAGES)
    layout_b = sm100.make_smem_layout_b(tiled_mma, MMA_TILER, cutlass.Float16, AB_STAGES)
    one_a = cute.slice_(layout_a, (None, None, None, 0))
    one_b = cute.slice_(layout_b, (None, None, None, 0))
    tma_a, gmem_a = cute.nvgpu.make_tiled_tma_atom_A(ops[0], a, one_a, MMA_TILER, tiled_mma, vmnk)
    tma_b, gmem_b = cute.nvgpu.make_tiled_tma_atom_B(ops[1], b, one_b, MMA_TILER, tiled_mma, vmnk)
    return tiled_mma, (tma_a, gmem_a, tma_b, gmem_b), (layout_a, layout_b)


def load_op(peers: int = 1) -> Any:
    """A multicast TMA load when ``peers`` CTAs share the block, else a plain one."""
    if peers == 1:
        return cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.ONE)
    return cpasync.CopyBulkTensorTileG2SMulticastOp(tcgen05.CtaGroup.ONE)


def output_tiles(c: Any) -> tuple[Any, Any, int]:
    """The ``(M, N, 1)`` count of ``128 x 128`` tiles of C."""
    return (
        cute.ceil_div(cute.size(c, mode=[0]), TILE_M),
        cute.ceil_div(cute.size(c, mode=[1]), TILE_N),
        1,
    )


def fake_args(m: int = 1024, n: int = 1024, k: int = 512) -> tuple[Any, ...]:
    """Fake A (M x K), B (N x K) and C (M x N), all row-major, for a CPU compile."""
    return (
        fake_tensor(cutlass.Float16, (m, k), row_major=True, align=16),
        fake_tensor(cutlass.Float16, (n, k), row_major=True, align=16),
        fake_tensor(cutlass.Float16, (m, n), row_major=True, align=16),
    )
