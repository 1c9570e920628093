"""An NVFP4 block-scaled GEMM of TS's own, compiled for sm_100a (no GPU; not run on hardware).

``C = (A * SFA) @ (B * SFB)^T``: A (M x K) and B (N x K) hold fp4 (``Float4E2M1FN``) values,
every 16 consecutive K values share one fp8 (``Float8E4M3FN``) scale factor (SFA, SFB), and the
product accumulates in fp32 in tensor memory; C is fp16. One CTA per ``128 x 128`` tile, K in
steps of 256 (four 64-wide block-scaled UMMAs, ``tcgen05.mma ... kind::mxf4nvf4``):

* ``load`` (warp 4) TMA-loads, per K step, the A and B blocks and their scale factors into one
  stage of the ``ab`` ring (``TmaUmma``: the four loads' bytes fill it);
* ``mma`` (warp 5) allocates TMEM (accumulator, then the scale factors' columns), and per K
  step copies the stage's scale factors into TMEM (``tcgen05.cp``) and issues the four UMMAs
  reading them; ``ab``'s release is the ``tcgen05.commit`` that frees the stage once they are
  done, and the accumulator (``acc``, ``UmmaAsync``) is committed after the last K step;
* ``epilogue`` (warps 0-3) reads the accumulator (``tcgen05.ld``, one row per thread), stores
  it as fp16 and frees TMEM.

The scale factors arrive as flat fp8 buffers in CUTLASS's block-scaled layout
(``cutlass.utils.blockscaled_layout.tile_atom_to_shape_SF``). ts-verify proves the rings and
the TMEM lifetime::

    python examples/blackwell/gemm_nvfp4.py         # PTX counts per opcode (CPU, sm_100a)
    ts verify examples/blackwell/gemm_nvfp4.py:make_plan
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
import cutlass.utils.blockscaled_layout as blockscaled
from _umma_gemm import Gemm, allocators, threads, tmem_base
from cutlass.cute.nvgpu import cpasync, tcgen05

from task_scheduling import WorkAttr, consumer_work, domain_loop, producer_work, schedule
from task_scheduling.harness import compare_ptx, fake_tensor
from task_scheduling.memory import SmemAllocation, TensorMemory, TmemAllocation
from task_scheduling.resources import MemoryResource, PipelineConfig, TaskLocalVariable
from task_scheduling.task_manager import TaskManager

TILE_M, TILE_N, TILE_K = 128, 128, 256
MMA_TILER = (TILE_M, TILE_N, TILE_K)
SF_VEC = 16  # NVFP4: one fp8 scale per 16 fp4 values along K
STAGES = 4
AB_BYTES = (TILE_M + TILE_N) * TILE_K // 2  # fp4: two values per byte
SF_BYTES = (TILE_M + TILE_N) * TILE_K // SF_VEC  # fp8 scale factors
STAGE_BYTES = AB_BYTES + SF_BYTES
TMEM_COLUMNS = 256  # the 128 accumulator columns, the scale factors' columns, rounded up
EPILOGUE_WARPS, LOAD_WARP, MMA_WARP = 4, 4, 5
BLOCK_THREADS = (MMA_WARP + 1) * 32
FP4, SF, ACC = cutlass.Float4E2M1FN, cutlass.Float8E4M3FN, cutlass.Float32


def _smem(base: Any, offset: int, dtype: Any, layout: Any) -> Any:
    """An SMEM tensor at ``base[offset]`` (swizzled when ``layout`` is a composed layout)."""
    ptr = cute.make_ptr(dtype, base.data_ptr(offset), assumed_align=1024)
    if isinstance(layout, cute.ComposedLayout):
        return cute.make_tensor(cute.recast_ptr(ptr, layout.inner, dtype=dtype), layout.outer)
    return cute.make_tensor(ptr, layout)


@dataclasses.dataclass(kw_only=True)
class Layouts:
    """What the kernel needs besides the tensors: the UMMA, the staged SMEM layouts, TMA atoms."""

    tiled_mma: Any = None
    smem: tuple[Any, Any, Any, Any] = (None, None, None, None)  # A, B, SFA, SFB
    tma: tuple[Any, Any, Any, Any] = (None, None, None, None)
    gmem: tuple[Any, Any, Any, Any] = (None, None, None, None)


@dataclasses.dataclass(kw_only=True)
class Operands(MemoryResource):
    """The A / B / scale-factor ring in SMEM: four TMA loads fill a stage."""

    k: Layouts = dataclasses.field(default_factory=Layouts)
    stage: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.stage = TaskLocalVariable(dtype="Int32", default=0)
        self.allocs = tuple(
            SmemAllocation(f"ab.{what}", size * STAGES, alignment=1024)
            for what, size in (
                ("a", TILE_M * TILE_K // 2),
                ("b", TILE_N * TILE_K // 2),
                ("sfa", TILE_M * TILE_K // SF_VEC),
                ("sfb", TILE_N * TILE_K // SF_VEC),
            )
        )

    def get_smem_requirements(self) -> list[Any]:
        return list(self.allocs)

    def views(self, stage_info: Any) -> list[Any]:
        """The four staged SMEM tensors: A, B, SFA, SFB."""
        base = stage_info.context.smem_base
        dtypes = (FP4, FP4, SF, SF)
        return [
            _smem(base, a.offset, t, layout)
            for a, t, layout in zip(self.allocs, dtypes, self.k.smem, strict=True)
        ]

    @producer_work
    @cute.jit
    def load(self, stage_info: Any) -> None:
        """TMA-load K step ``loop_offset`` of the tile's A, B, SFA and SFB into the stage."""
        m, n, _ = cute.arch.block_idx()
        thr_mma = self.k.tiled_mma.get_slice(0)
        kb = stage_info.loop_offset
        for i, smem in enumerate(self.views(stage_info)):
            is_a = i % 2 == 0
            tiler = cute.slice_(MMA_TILER, (None, 0, None) if is_a else (0, None, None))
            tiles = cute.local_tile(self.k.gmem[i], tiler, (None, None, None))
            parts = thr_mma.partition_A(tiles) if is_a else thr_mma.partition_B(tiles)
            t_s, t_g = cpasync.tma_partition(
                self.k.tma[i],
                0,
                cute.make_layout(1),
                cute.group_modes(smem, 0, 3),
                cute.group_modes(parts, 0, 3),
            )
            cute.copy(
                self.k.tma[i],
                t_g[(None, m if is_a else n, kb, 0)],
                t_s[(None, stage_info.stage_idx)],
                tma_bar_ptr=stage_info.barrier,
            )

    @consumer_work(work_attrs=WorkAttr.AUXILIARY, returns=stage)
    def stage_index(self, stage_info: Any) -> Any:
        """The waited stage's index (the UMMAs of the accumulator read it)."""
        return stage_info.stage_idx


@dataclasses.dataclass(kw_only=True)
class Accumulator(MemoryResource):
    """The accumulator in TMEM (one stage), and the scale factors' TMEM columns after it."""

    operands: Any = None
    k: Layouts = dataclasses.field(default_factory=Layouts)
    gmem_c: Any = None

    def get_tmem_requirements(self) -> list[Any]:
        return [TmemAllocation("acc", TILE_N), TmemAllocation("sf", TMEM_COLUMNS - TILE_N)]

    def _tmem(self, stage_info: Any) -> tuple[Any, Any, Any]:
        """The accumulator, SFA and SFB as TMEM tensors (after the address tcgen05.alloc wrote)."""
        base = tmem_base(stage_info, ACC)
        mma = self.k.tiled_mma
        acc = mma.make_fragment_C(mma.partition_shape_C((TILE_M, TILE_N)))
        acc = cute.make_tensor(base, acc.layout)
        one = [cute.slice_(layout, (None, None, None, 0)) for layout in self.k.smem[2:]]
        sfa_layout = blockscaled.make_tmem_layout_sfa(mma, MMA_TILER, SF_VEC, one[0])
        sfb_layout = blockscaled.make_tmem_layout_sfb(mma, MMA_TILER, SF_VEC, one[1])
        sfa_ptr = cute.recast_ptr(base + tcgen05.find_tmem_tensor_col_offset(acc), dtype=SF)
        sfa = cute.make_tensor(sfa_ptr, sfa_layout)
        sfb_at = tcgen05.find_tmem_tensor_col_offset(acc) + tcgen05.find_tmem_tensor_col_offset(sfa)
        sfb = cute.make_tensor(cute.recast_ptr(base + sfb_at, dtype=SF), sfb_layout)
        return acc, sfa, sfb

    @producer_work
    @cute.jit
    def mma(self, stage_info: Any, *, ab_stage: Any = None) -> None:
        """Copy the stage's scale factors into TMEM, then the UMMAs of one K step."""
        s_a, s_b, s_sfa, s_sfb = self.operands.views(stage_info)
        mma = self.k.tiled_mma
        frag_a, frag_b = mma.make_fragment_A(s_a), mma.make_fragment_B(s_b)
        acc, t_sfa, t_sfb = self._tmem(stage_info)
        atom = cute.make_copy_atom(tcgen05.Cp4x32x128bOp(tcgen05.CtaGroup.ONE), SF)
        for smem, tmem in ((s_sfa, t_sfa), (s_sfb, t_sfb)):
            dst = cute.filter_zeros(tmem)
            s2t = tcgen05.make_s2t_copy(atom, dst)
            thr = s2t.get_slice(0)
            src = tcgen05.get_s2t_smem_desc_tensor(s2t, thr.partition_S(cute.filter_zeros(smem)))
            cute.copy(s2t, src[(None, None, None, None, ab_stage)], thr.partition_D(dst))
        mma.set(tcgen05.Field.ACCUMULATE, stage_info.loop_offset != 0)
        for kp in cutlass.range_constexpr(cute.size(frag_a, mode=[2])):  # type: ignore[attr-defined]
            mma.set(tcgen05.Field.SFA, t_sfa[(None, None, kp)].iterator)
            mma.set(tcgen05.Field.SFB, t_sfb[(None, None, kp)].iterator)
            cute.gemm(
                mma,
                acc,
                frag_a[(None, None, kp, ab_stage)],
                frag_b[(None, None, kp, ab_stage)],
                acc,
            )
            mma.set(tcgen05.Field.ACCUMULATE, True)

    @consumer_work
    @cute.jit
    def store(self, stage_info: Any) -> None:
        """``tcgen05.ld`` of the accumulator (thread t: row t), to fp16, into C."""
        m, n, _ = cute.arch.block_idx()
        acc = self._tmem(stage_info)[0][((None, None), 0, 0)]
        g_c = self.k.tiled_mma.get_slice(0).partition_C(
            cute.local_tile(self.gmem_c, (TILE_M, TILE_N), (m, n))
        )[((None, None), 0, 0)]
        atom = cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x128), ACC)
        t2r = tcgen05.make_tmem_copy(atom, acc)
        thr = t2r.get_slice(cute.arch.thread_idx()[0] % (EPILOGUE_WARPS * 32))
        src, dst = thr.partition_S(acc), thr.partition_D(g_c)
        regs = cute.make_rmem_tensor(dst.shape, ACC)
        cute.copy(t2r, src, regs)
        cute.arch.fence_view_async_tmem_op("load")
        out = cute.make_rmem_tensor(dst.shape, cutlass.Float16)
        out.store(regs.load().to(cutlass.Float16))
        cute.autovec_copy(out, dst)


@schedule
def load(ab: Any) -> None:
    with domain_loop(Gemm.k_tiles):
        ab.acquire()
        ab.load()
        ab.commit()


@schedule
def mma(tmem: Any, ab: Any, acc: Any) -> None:
    tmem.allocate()
    acc.acquire()
    with domain_loop(Gemm.k_tiles):
        ab.wait()
        s = ab.stage_index()
        acc.mma(ab_stage=s)
        ab.release()
    acc.commit()


@schedule
def epilogue(tmem: Any, acc: Any) -> None:
    acc.wait()
    acc.store()
    acc.release()
    tmem.free()


def build(k_tiles: Any = 8, layouts: Layouts | None = None, gmem_c: Any = None) -> TaskManager:
    """The resources, tasks and TaskManager (on the host: placeholders for the DSL values)."""
    k = layouts or Layouts()
    ab = Operands(
        name="ab",
        pipeline_config=PipelineConfig.create_tma_umma_pipeline_cfg(
            STAGES, STAGE_BYTES, threads(1), threads(1)
        ),
        k=k,
    )
    acc = Accumulator(
        name="acc",
        pipeline_config=PipelineConfig.create_umma_async_pipeline_cfg(
            1, threads(1), threads(EPILOGUE_WARPS * 32)
        ),
        operands=ab,
        k=k,
        gmem_c=gmem_c,
    )
    tmem = TensorMemory(name="tmem", num_columns=TMEM_COLUMNS, warp=MMA_WARP, free_warp=0)
    smem, columns = allocators((ab, acc), (acc,))
    tasks = [
        Gemm([tmem, acc], [], 0, EPILOGUE_WARPS, schedule=epilogue(tmem, acc), name="epilogue"),
        Gemm([], [ab], LOAD_WARP, 1, schedule=load(ab), name="load", k=k_tiles),
        Gemm([tmem, ab], [acc], MMA_WARP, 1, schedule=mma(tmem, ab, acc), name="mma", k=k_tiles),
    ]
    return TaskManager(
        tasks, {acc: [ab]}, smem_allocator=smem, tmem_allocator=columns, name="gemm_nvfp4"
    )


def make_plan() -> Any:
    """The kernel plan (what ``ts show`` / ``ts verify`` / ``ts compile`` read)."""
    return build().plan


@cute.kernel
def kernel(
    tiled_mma: cute.TiledMma,
    tma: tuple[cute.CopyAtom, cute.CopyAtom, cute.CopyAtom, cute.CopyAtom],
    gmem: tuple[cute.Tensor, cute.Tensor, cute.Tensor, cute.Tensor],
    smem: tuple[cute.ComposedLayout, cute.ComposedLayout, cute.Layout, cute.Layout],
    gmem_c: cute.Tensor,
) -> None:
    k_tiles = cute.ceil_div(cute.size(gmem[0], mode=[1]), TILE_K)
    manager = build(k_tiles, Layouts(tiled_mma=tiled_mma, smem=smem, tma=tma, gmem=gmem), gmem_c)
    manager.setup_resources_and_tasks()
    manager.run()


@cute.jit
def launch(
    a: cute.Tensor, b: cute.Tensor, sfa: cute.Tensor, sfb: cute.Tensor, c: cute.Tensor
) -> None:
    major = cute.nvgpu.OperandMajorMode.K
    tiled_mma = sm100.make_blockscaled_trivial_tiled_mma(
        FP4, FP4, major, major, SF, SF_VEC, tcgen05.CtaGroup.ONE, (TILE_M, TILE_N)
    )
    smem = (
        sm100.make_smem_layout_a(tiled_mma, MMA_TILER, FP4, STAGES),
        sm100.make_smem_layout_b(tiled_mma, MMA_TILER, FP4, STAGES),
        blockscaled.make_smem_layout_sfa(tiled_mma, MMA_TILER, SF_VEC, STAGES),
        blockscaled.make_smem_layout_sfb(tiled_mma, MMA_TILER, SF_VEC, STAGES),
    )
    # A, B as (M|N, K, 1); the scale factors laid out as the UMMA reads them.
    a3, b3 = (
        cute.make_tensor(t.iterator, cute.append(t.layout, cute.make_layout(1))) for t in (a, b)
    )
    sf = [
        cute.make_tensor(s.iterator, blockscaled.tile_atom_to_shape_SF(t.shape, SF_VEC))
        for s, t in ((sfa, a3), (sfb, b3))
    ]
    op = cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.ONE)
    one = [cute.slice_(layout, (None, None, None, 0)) for layout in smem]
    tma_a, g_a = cute.nvgpu.make_tiled_tma_atom_A(op, a3, one[0], MMA_TILER, tiled_mma)
    tma_b, g_b = cute.nvgpu.make_tiled_tma_atom_B(op, b3, one[1], MMA_TILER, tiled_mma)
    tma_sfa, g_sfa = cute.nvgpu.make_tiled_tma_atom_A(
        op, sf[0], one[2], MMA_TILER, tiled_mma, internal_type=cutlass.Int16
    )
    tma_sfb, g_sfb = cute.nvgpu.make_tiled_tma_atom_B(
        op, sf[1], one[3], MMA_TILER, tiled_mma, internal_type=cutlass.Int16
    )
    grid = (
        cute.ceil_div(cute.size(c, mode=[0]), TILE_M),
        cute.ceil_div(cute.size(c, mode=[1]), TILE_N),
        1,
    )
    kernel(tiled_mma, (tma_a, tma_b, tma_sfa, tma_sfb), (g_a, g_b, g_sfa, g_sfb), smem, c).launch(
        grid=grid, block=(BLOCK_THREADS, 1, 1)
    )


def fake_args(m: int = 1024, n: int = 1024, k: int = 1024) -> tuple[Any, ...]:
    """Fake A, B (fp4, K-major), flat SFA, SFB (fp8) and C (fp16) for a CPU compile."""
    return (
        fake_tensor(FP4, (m, k), row_major=True, align=32),
        fake_tensor(FP4, (n, k), row_major=True, align=32),
        fake_tensor(SF, m * k // SF_VEC, align=16),
        fake_tensor(SF, n * k // SF_VEC, align=16),
        fake_tensor(cutlass.Float16, (m, n), row_major=True, align=16),
    )


def compile_only() -> dict[str, Any]:
    """Compile for the target (sm_100a by default) with fake tensors; PTX counts per opcode."""
    return {"example": "gemm_nvfp4", **compare_ptx({"ts": launch}, *fake_args(), ops=True)}


if __name__ == "__main__":
    import json

    print(json.dumps(compile_only(), indent=1, sort_keys=True))
    sys.exit(0)
