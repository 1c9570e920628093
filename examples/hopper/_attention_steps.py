"""The Hopper attention kernel's configuration, host builders and per-step device code.

``AttentionConfig`` fixes what is compile-time (head dim, dtype, mask, GQA group, KV block,
ring depths); the builders make the two tiled MMAs (``S = Q K^T`` from SMEM, ``O += P V`` with
``P`` in registers), the swizzled SMEM layouts and the TMA atoms. The device half is one
small function per step of a math warpgroup's schedule: ``qk`` (issue ``S = Q K^T``),
``softmax`` (mask, online max / sum, ``P`` to 16 bit), ``pv`` (issue ``O += P V``) and
``store`` (normalise, LSE, TMA store of ``O``). See ``attention.py``.

Tensors (all contiguous): ``q`` / ``o`` are ``(B * H, S, D)``, ``k`` / ``v`` are
``(B * Hkv, S, D)`` with ``H = group * Hkv`` (query head ``bh`` reads KV head ``bh // group``),
``lse`` is fp32 ``(B * H, S)``.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe
import cutlass.utils.hopper_helpers as sm90
from cutlass.base_dsl.ast_helpers import const_expr, range_constexpr
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.cutlass_dsl import Constexpr
from cutlass.tensor_utils import LayoutEnum

# The DSL's stubs are narrower than its modules: these are used through Any.
dsl_math: Any = cute.math
select: Any = cutlass.select_  # type: ignore[attr-defined]

WARPGROUP = 128
BLOCK_M = 128  # query rows of a CTA's tile: both math warpgroups, on the same K / V blocks
WG_M = 64  # query rows of one math warpgroup (one WGMMA M): half of the tile
BLOCK_N = 128  # keys per K / V block (the N of S = Q K^T, the K of O += P V)
# D = 256: O alone is 64 x 256 fp32 per warpgroup, 128 registers a thread; with S and P of
# 128-key blocks (64 + 32 more) the 232 a math thread has would spill, with 64-key blocks
# (32 + 16) they do not. The smaller block also leaves SMEM for two K / V stages next to the
# one-stage Q ring.
BLOCK_N_WIDE = 64
EPI_COLS = 128  # O goes out in 64 x 128 column chunks (D = 256: two, through one buffer)
LOAD_WARP = 0
PRODUCER_REGS = 40
CONSUMER_REGS = 232
SMEM_BYTES = 232448
SMEM_RESERVED = 1024
LOG2_E = 1.4426950408889634
DTYPES: dict[str, Any] = {"bf16": cutlass.BFloat16, "fp16": cutlass.Float16}
HEAD_DIMS = (64, 128, 256)


@dataclasses.dataclass(frozen=True)
class AttentionConfig:
    """Compile-time shape of the attention kernel.

    Attributes:
        head_dim: ``D`` (64, 128 or 256; 256 runs 64-key KV blocks, see ``block_n``).
        dtype: ``"bf16"`` or ``"fp16"`` (Q, K, V and O; fp32 accumulation and softmax).
        causal: Query ``i`` sees keys ``j <= i`` (square attention): KV blocks past the
            diagonal are never loaded, the diagonal block is masked.
        group: Query heads per KV head (GQA; 1 is plain multi-head attention).
        kv_stages: Depth of the K ring and of the V ring (both shared by the two math
            warpgroups); 0 picks the most that fit (5 for D = 64, 2 for D = 128).
        scale: Softmax scale (None: ``1 / sqrt(D)``).
        q_stages: Depth of the Q ring (2: the next tile's Q, and then its first K / V
            blocks, load while the current tile's last blocks run); 0 (the default) picks 2,
            or 1 for D = 256, whose 64 KB Q tile leaves no room for a second stage next to
            two K / V stages.
        stagger: Issue the two math warpgroups' WGMMAs in turns (a math-order handoff per
            issue, two one-stage token rings), so one's softmax runs under the other's GEMMs.
        varlen: Sequences of their own lengths packed along the token axis (``cu_seqlens``),
            one work tile per (128-row query tile, head), longest first, from the dynamic
            work queue (``_attention_varlen``). Causal masks align bottom right, as
            flash-attn's varlen functions do.
    """

    head_dim: int = 128
    dtype: str = "bf16"
    causal: bool = False
    group: int = 1
    kv_stages: int = 0
    scale: float | None = None
    stagger: bool = False
    q_stages: int = 0
    varlen: bool = False

    def __post_init__(self) -> None:
        if self.head_dim not in HEAD_DIMS:
            raise ValueError(f"head_dim {self.head_dim} not in {HEAD_DIMS}")
        if self.q_stages == 0:  # resolved here, so equal configurations compare equal
            object.__setattr__(self, "q_stages", 1 if self.head_dim > EPI_COLS else 2)
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype {self.dtype!r} not in {sorted(DTYPES)}")
        if self.group < 1:
            raise ValueError("group (query heads per KV head) must be >= 1")
        if self.q_stages < 1:
            raise ValueError(f"q_stages={self.q_stages}: want >= 1")
        if self.kv_stages < 0 or self.stages < 1:
            raise ValueError(f"kv_stages={self.kv_stages}: want >= 1, or 0 for the most that fit")
        if self.smem_bytes > SMEM_BYTES - SMEM_RESERVED:
            raise ValueError(f"{self} needs {self.smem_bytes} bytes of SMEM")

    @property
    def element(self) -> Any:
        """The CuTe DSL element type of Q, K, V and O."""
        return DTYPES[self.dtype]

    @property
    def block_n(self) -> int:
        """Keys per KV block: 128, or 64 for D = 256 (registers, see ``BLOCK_N_WIDE``)."""
        return BLOCK_N if self.head_dim <= EPI_COLS else BLOCK_N_WIDE

    @property
    def epi_cols(self) -> int:
        """Columns of one O store chunk (``D``, at most 128: D = 256 stores two chunks)."""
        return min(self.head_dim, EPI_COLS)

    @property
    def stage_bytes(self) -> int:
        """Bytes of one K (or V) block: ``BN x D``, 16 bit."""
        return self.block_n * self.head_dim * 2

    @property
    def q_bytes(self) -> int:
        """Bytes of one math warpgroup's half of the Q tile (also of its O epilogue buffer)."""
        return WG_M * self.head_dim * 2

    @property
    def o_bytes(self) -> int:
        """Bytes of one math warpgroup's O epilogue buffer (``64 x epi_cols``, 16 bit)."""
        return WG_M * self.epi_cols * 2

    @property
    def smem_bytes(self) -> int:
        """SMEM: the Q ring (both halves per stage), the K and V rings, an O buffer per
        warpgroup."""
        fixed = 2 * self.q_stages * self.q_bytes + 2 * self.o_bytes
        return fixed + 2 * self.stages * self.stage_bytes

    @property
    def stages(self) -> int:
        """Depth of the K ring and of the V ring (``kv_stages``, or as many as fit)."""
        if self.kv_stages:
            return self.kv_stages
        free = SMEM_BYTES - SMEM_RESERVED - 2 * self.q_stages * self.q_bytes - 2 * self.o_bytes
        return free // (2 * self.stage_bytes)

    @property
    def softmax_scale(self) -> float:
        """The scale applied to ``Q K^T``."""
        return self.scale if self.scale is not None else 1.0 / math.sqrt(self.head_dim)

    @property
    def scale_log2(self) -> float:
        """``scale * log2(e)``: the softmax runs in base 2 (``exp2``)."""
        return self.softmax_scale * LOG2_E

    @property
    def block_threads(self) -> int:
        """The producer warpgroup and two math warpgroups."""
        return 3 * WARPGROUP


# ---------------------------------------------------------------------------------------------
# host builders (inside the @cute.jit launcher)
# ---------------------------------------------------------------------------------------------


def make_qk_mma(cfg: AttentionConfig) -> Any:
    """``S = Q K^T``: ``64 x BN`` per warpgroup, Q and K K-major in SMEM (K = head dim)."""
    k_major = cute.nvgpu.OperandMajorMode.K
    tiler = (WG_M, cfg.block_n)
    return sm90.make_trivial_tiled_mma(
        cfg.element, cfg.element, k_major, k_major, cutlass.Float32, (1, 1, 1), tiler
    )


def make_pv_mma(cfg: AttentionConfig) -> Any:
    """``O += P V``: ``64 x D`` per warpgroup; ``P`` from registers, ``V`` D-major in SMEM."""
    return sm90.make_trivial_tiled_mma(
        cfg.element,
        cfg.element,
        cute.nvgpu.OperandMajorMode.K,
        cute.nvgpu.OperandMajorMode.MN,
        cutlass.Float32,
        (1, 1, 1),
        (WG_M, cfg.head_dim),
        warpgroup.OperandSource.RMEM,
    )


def make_smem_layouts(cfg: AttentionConfig) -> tuple[Any, Any, Any, Any]:
    """Swizzled SMEM layouts: Q ``(64, D, 2 q_stages)`` (stage ``s`` holds the two warpgroups'
    halves of a tile at ``2 s`` and ``2 s + 1``), K ``(BN, D, st)``, V ``(D, BN, st)``, O
    ``(64, D, 1)`` (one per warpgroup)."""
    d, bn, el = cfg.head_dim, cfg.block_n, cfg.element
    row, col = LayoutEnum.ROW_MAJOR, LayoutEnum.COL_MAJOR
    q = sm90.make_smem_layout_a(row, (WG_M, bn, d), el, 2 * cfg.q_stages)
    k = sm90.make_smem_layout_b(row, (WG_M, bn, d), el, cfg.stages)
    # V is the B operand of P V read as (N = D) x (K = BN), D contiguous: MN-major.
    v = sm90.make_smem_layout_b(col, (WG_M, d, bn), el, cfg.stages)
    o = sm90.make_smem_layout_epi(el, row, (WG_M, cfg.epi_cols), 1)
    return q, k, v, o


def seq_view(t: Any) -> Any:
    """``(BH, S, D)`` row-major as ``(S, D, BH)``: rows, the contiguous head dim, heads."""
    shape = (t.shape[1], t.shape[2], t.shape[0])
    return cute.make_tensor(
        t.iterator, cute.make_layout(shape, stride=(t.stride[1], 1, t.stride[0]))
    )


def dim_view(t: Any) -> Any:
    """``(BH, S, D)`` row-major as ``(D, S, BH)``: V as the MN-major B operand of ``P V``."""
    shape = (t.shape[2], t.shape[1], t.shape[0])
    return cute.make_tensor(
        t.iterator, cute.make_layout(shape, stride=(1, t.stride[1], t.stride[0]))
    )


def make_tma_atoms(
    cfg: AttentionConfig, q: Any, k: Any, v: Any, o: Any, layouts: tuple[Any, Any, Any, Any]
) -> tuple[Any, ...]:
    """TMA atoms and coordinate tensors ``(atom_q, tQ, atom_k, tK, atom_v, tV, atom_o, tO)``."""
    lq, lk, lv, lo = layouts
    d, bn = cfg.head_dim, cfg.block_n
    load = cpasync.CopyBulkTensorTileG2SOp()

    def first(layout: Any) -> Any:
        return cute.slice_(layout, (None, None, 0))

    # Q in boxes of one warpgroup's 64 rows: a tile is two loads, one per half.
    atom_q, t_q = cpasync.make_tiled_tma_atom(load, seq_view(q), first(lq), (WG_M, d))
    atom_k, t_k = cpasync.make_tiled_tma_atom(load, seq_view(k), first(lk), (bn, d))
    atom_v, t_v = cpasync.make_tiled_tma_atom(load, dim_view(v), first(lv), (d, bn))
    store = cpasync.CopyBulkTensorTileS2GOp()
    atom_o, t_o = cpasync.make_tiled_tma_atom(store, seq_view(o), first(lo), (WG_M, cfg.epi_cols))
    return atom_q, t_q, atom_k, t_k, atom_v, t_v, atom_o, t_o


# ---------------------------------------------------------------------------------------------
# producer side: TMA views and loads
# ---------------------------------------------------------------------------------------------


def tma_views(atom: Any, gmem: Any, smem: Any, box: tuple[int, int]) -> tuple[Any, Any]:
    """``(g, s)``: ``g[(None, i, j, l)]`` is box ``(i, j)`` of batch ``l``, ``s[(None, st)]``."""
    tiles = cute.flat_divide(gmem, box)  # (box0, box1, tiles0, tiles1, L)
    s, g = cpasync.tma_partition(
        atom, 0, cute.make_layout(1), cute.group_modes(smem, 0, 2), cute.group_modes(tiles, 0, 2)
    )
    return g, s


def tma_load(
    atom: Any, views: tuple[Any, Any], i: Any, j: Any, batch: Any, st: Any, bar: Any
) -> None:
    """TMA-load box ``(i, j)`` of ``batch`` into stage ``st`` (completes on ``bar``)."""
    g, s = views
    cute.copy(atom, g[(None, i, j, batch)], s[(None, st)], tma_bar_ptr=bar)


# ---------------------------------------------------------------------------------------------
# math warpgroup: per-thread state and the steps
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class MathState:
    """One math thread's registers and WGMMA descriptors (built once, used every tile).

    Attributes:
        frag_q / frag_k / frag_v: WGMMA descriptors over the Q tile, the K and V rings.
        acc_s: ``S`` (fp32, the QK accumulator); acc_o: ``O`` (fp32, the PV accumulator).
        p: ``P`` in 16 bit, laid out as the register A operand of the PV WGMMA.
        coords: ``(row, col)`` of every ``acc_s`` element within the ``64 x BN`` block.
        row_max / row_sum: the online softmax statistics of this thread's two rows.
        q_stage: the Q ring's stage of the current tile (``bind_q``).
        keep: the factor ``softmax`` found for ``O`` (``convert`` applies it, once the PV
            WGMMA that reads ``O`` has retired).
        tidx: the thread's index in its warpgroup; wg: the warpgroup (0 or 1).
    """

    frag_q: Any
    frag_k: Any
    frag_v: Any
    acc_s: Any
    acc_o: Any
    p: Any
    coords: Any
    row_max: Any
    row_sum: Any
    keep: Any
    tidx: Any
    wg: int
    q_stage: Any = 0


def math_setup(
    cfg: AttentionConfig, qk_mma: Any, pv_mma: Any, s_q: Any, s_k: Any, s_v: Any, wg: int
) -> MathState:
    """The state of this thread of math warpgroup ``wg`` (CTA warpgroup ``1 + wg``)."""
    tidx_cta, _, _ = cute.arch.thread_idx()
    tidx = tidx_cta - (1 + wg) * WARPGROUP
    # O += P V always accumulates: set once here, not per call (a call inside a branch of the
    # schedule would rebind the MMA to a value the other branches cannot see).
    pv_mma.set(warpgroup.Field.ACCUMULATE, True)
    thr_qk = qk_mma.get_slice(tidx)
    thr_pv = pv_mma.get_slice(tidx)
    bn, d = cfg.block_n, cfg.head_dim
    frag_q = qk_mma.make_fragment_A(thr_qk.partition_A(s_q))
    frag_k = qk_mma.make_fragment_B(thr_qk.partition_B(s_k))
    frag_v = pv_mma.make_fragment_B(thr_pv.partition_B(s_v))
    acc_s = cute.make_rmem_tensor(thr_qk.partition_shape_C((WG_M, bn)), cutlass.Float32)
    acc_o = cute.make_rmem_tensor(thr_pv.partition_shape_C((WG_M, d)), cutlass.Float32)
    p = cute.make_rmem_tensor(thr_pv.partition_shape_A((WG_M, bn)), cfg.element)
    coords = thr_qk.partition_C(cute.make_identity_tensor((WG_M, bn)))
    row_max = cute.make_rmem_tensor((2,), cutlass.Float32)
    row_sum = cute.make_rmem_tensor((2,), cutlass.Float32)
    keep = cute.make_rmem_tensor((2,), cutlass.Float32)
    return MathState(
        frag_q, frag_k, frag_v, acc_s, acc_o, p, coords, row_max, row_sum, keep, tidx, wg
    )


@cute.jit
def begin_tile(st: MathState) -> None:
    """A new query tile: ``O = 0``, running max ``-inf``, running sum 0."""
    st.acc_o.fill(0.0)
    for h in range_constexpr(2):
        st.row_max[h] = -cutlass.Float32.inf
        st.row_sum[h] = 0.0


@cute.jit
def qk(qk_mma: Any, st: MathState, stage: Any) -> None:
    """Issue ``S = Q K^T`` for the K block in ``stage`` (one WGMMA per 16 of D); commit."""
    warpgroup.fence()
    for kk in range_constexpr(cute.size(st.frag_q, mode=[2])):
        qk_mma.set(warpgroup.Field.ACCUMULATE, kk != 0)
        cute.gemm(
            qk_mma,
            st.acc_s,
            st.frag_q[(None, None, kk, 2 * st.q_stage + st.wg)],  # this warpgroup's half
            st.frag_k[(None, None, kk, stage)],
            st.acc_s,
        )
    warpgroup.commit_group()


@cute.jit
def pv(pv_mma: Any, st: MathState, stage: Any) -> None:
    """Issue ``O += P V`` for the V block in ``stage`` (P from registers); commit."""
    warpgroup.fence()  # P and the rescaled O were written by ordinary instructions
    for kk in range_constexpr(cute.size(st.p, mode=[2])):
        cute.gemm(
            pv_mma, st.acc_o, st.p[(None, None, kk)], st.frag_v[(None, None, kk, stage)], st.acc_o
        )
    warpgroup.commit_group()


def row_half(i: int) -> int:
    """Which of the thread's two rows accumulator value ``i`` belongs to.

    A WGMMA accumulator fragment is ``((2, 2, N / 8), 1, 1)``: column pair, row (``r`` or
    ``r + 8``), 8-column group. The same order is the register A operand's (per 16 columns
    ``((2, 2, 2))``), so ``P``'s value ``i`` is ``S``'s value ``i``.
    """
    return (i // 2) % 2


def half_values(n: int, h: int | None) -> list[int]:
    """The indices of the ``n`` accumulator values that belong to row half ``h`` (all: None).

    As a Python list: a static loop over it stays under the DSL's 64-iteration limit for
    static loops (a 64 x 128 accumulator holds 64 values per thread, 32 per row).
    """
    return [i for i in range(n) if h is None or row_half(i) == h]


def col_offset(i: int) -> int:
    """Column of accumulator value ``i`` relative to the thread's first (see ``row_half``)."""
    return (i % 2) + 8 * (i // 4)


@cute.jit
def softmax(
    cfg: Constexpr[AttentionConfig],
    st: MathState,
    m: Any,
    n: Any,
    seqlen: Any,
    shift: Any = None,
) -> None:
    """Online softmax of the retired ``S`` block ``n`` of query tile ``m``, in place.

    Keys past the sequence end (the last block) and, with ``causal``, past the query row (the
    diagonal blocks) are masked to ``-inf`` first. ``S`` becomes ``exp2(S * scale - max)``
    (``scale * log2(e)`` folded); the new row max rescales the running sum now and ``O``
    later (``keep``, applied by ``convert``: the previous block's PV WGMMA may still be
    accumulating into ``O`` while this runs). The max is taken over the four threads of a
    quad, the sum stays per thread until ``store``. ``shift`` (varlen, causal): query ``i``
    sees keys ``j <= i + shift`` (``seqlen_k - seqlen_q``: the diagonal ends bottom right).
    """
    bn = cfg.block_n
    s = st.acc_s
    n_vals = cute.size(s)
    col0 = n * bn
    # Keys at or past the limit are masked: the sequence end and, with ``causal``, the key
    # after the query's own. Only the blocks that need it pay for it; per value it is one
    # compare and select against a static column offset (no branch per value).
    row0 = m * BLOCK_M + WG_M * st.wg  # this warpgroup's first query row
    r0, c0 = st.coords[0]  # this thread's first row and column in the block
    first_limit = seqlen
    if const_expr(shift is not None):
        row0 = row0 + shift  # the key index a row's own diagonal falls on
    if const_expr(cfg.causal):
        first_limit = cutlass.min(seqlen, row0 + 1)  # type: ignore[attr-defined]
    neg_inf = -cutlass.Float32.inf
    if col0 + bn > first_limit:
        for h in range_constexpr(2):
            limit = seqlen - col0 - c0
            if const_expr(cfg.causal):
                diag = row0 + r0 + 8 * h + 1 - col0 - c0
                limit = cutlass.min(limit, diag)  # type: ignore[attr-defined]
            for i in half_values(n_vals, h):
                keep_it = limit > col_offset(i)
                s[i] = cutlass.Float32(select(keep_it, s[i], neg_inf))
    scale = cutlass.Float32(cfg.scale_log2)
    zero = cutlass.Float32(0.0)
    for h in range_constexpr(2):
        mx = st.row_max[h]
        for i in half_values(n_vals, h):
            mx = cute.arch.fmax(mx, s[i])
        mx = cute.arch.warp_reduction_max(mx, threads_in_group=4)
        # A row with every key masked so far keeps max -inf: shift by 0 so exp2 gives 0, not NaN.
        base = cutlass.Float32(select(mx == neg_inf, zero, mx * scale))
        prev = st.row_max[h]
        old = cutlass.Float32(select(prev == neg_inf, base, prev * scale))
        keep = dsl_math.exp2(old - base, fastmath=True)
        st.row_max[h] = mx
        st.keep[h] = keep
        total = st.row_sum[h] * keep
        for i in half_values(n_vals, h):
            e = dsl_math.exp2(s[i] * scale - base, fastmath=True)
            total = total + e
            s[i] = e
        st.row_sum[h] = total


@cute.jit
def convert(cfg: Constexpr[AttentionConfig], st: MathState) -> None:
    """``P`` to 16 bit from the softmaxed ``S``; ``O`` rescaled by ``keep``.

    Runs once no PV WGMMA of this warpgroup is in flight (they read ``P`` and accumulate into
    ``O``), and before the next ``Q K^T`` overwrites ``S``.
    """
    for i in half_values(cute.size(st.acc_s), None):
        st.p[i] = st.acc_s[i].to(cfg.element)
    for h in range_constexpr(2):
        for i in half_values(cute.size(st.acc_o), h):
            st.acc_o[i] = st.acc_o[i] * st.keep[h]


@dataclasses.dataclass
class StoreViews:
    """One math thread's epilogue views (built once).

    Attributes:
        r2s: the register -> SMEM tiled copy (``stmatrix``) of one ``64 x epi_cols`` chunk;
        chunk: that chunk of ``O`` in fp32 (``O`` itself when ``D <= 128``); acc: ``chunk``
        re-tiled for ``r2s``; frag: the chunk converted to 16 bit; s_dst: its SMEM
        destination; o_coords: ``(row, col)`` of every ``O`` value in the ``64 x D`` tile;
        t_s / t_g: the TMA store views; barrier: the warpgroup's named barrier;
        is_store_warp: the warpgroup's first warp.
    """

    r2s: Any
    chunk: Any
    acc: Any
    frag: Any
    s_dst: Any
    o_coords: Any
    t_s: Any
    t_g: Any
    barrier: Any
    is_store_warp: Any


def store_setup(
    cfg: AttentionConfig, pv_mma: Any, st: MathState, atom_o: Any, t_o: Any, s_o: Any
) -> StoreViews:
    """The epilogue views of this thread (named barrier ``1 + wg`` over its warpgroup).

    ``D = 256``: the SMEM buffer holds 64 x 128, so O goes out in two column chunks. The
    copy is laid out by an MMA of ``N = 128``: a WGMMA accumulator's values run column
    group by column group (``row_half``), so chunk ``c`` of ``O`` is its values
    ``[c n, (c + 1) n)``, in the order of the narrower accumulator.
    """
    el = cfg.element
    epi_mma = pv_mma
    chunk = st.acc_o
    if cfg.epi_cols != cfg.head_dim:
        epi_mma = make_pv_mma(dataclasses.replace(cfg, head_dim=cfg.epi_cols))
        shape = epi_mma.get_slice(st.tidx).partition_shape_C((WG_M, cfg.epi_cols))
        chunk = cute.make_rmem_tensor(shape, cutlass.Float32)
    store_op = sm90.get_smem_store_op(LayoutEnum.ROW_MAJOR, el, cutlass.Float32)
    stmatrix = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), el)
    r2s = cute.make_tiled_copy_S(store_op, cute.make_tiled_copy_C_atom(stmatrix, epi_mma))
    thr = r2s.get_slice(st.tidx)
    frag = cute.make_rmem_tensor(cute.shape(thr.partition_S(s_o))[:3], el)
    thr_pv = pv_mma.get_slice(st.tidx)
    o_coords = thr_pv.partition_C(cute.make_identity_tensor((WG_M, cfg.head_dim)))
    t_g, t_s = tma_views(atom_o, t_o, s_o, (WG_M, cfg.epi_cols))
    barrier = cpipe.NamedBarrier(barrier_id=1 + st.wg, num_threads=WARPGROUP)
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    is_store_warp = warp == (1 + st.wg) * WARPGROUP // 32
    return StoreViews(
        r2s,
        chunk,
        r2s.retile(chunk),
        frag,
        thr.partition_D(s_o),
        o_coords,
        t_s,
        t_g,
        barrier,
        is_store_warp,
    )


@cute.jit
def store(
    cfg: Constexpr[AttentionConfig],
    st: MathState,
    sv: StoreViews,
    atom_o: Any,
    lse: Any,
    m: Any,
    bh: Any,
    seqlen: Any,
) -> None:
    """Write tile ``m`` of head ``bh``: ``O / rowsum`` by TMA store, LSE by plain stores.

    The row sums are summed over the quad first. A row with no visible key (sum 0) gets
    ``O = 0`` and ``LSE = -inf``. The store warp waits until its previous TMA store has read
    the buffer before anyone overwrites it; rows past ``seqlen`` are clipped by the TMA store
    and skipped for the LSE.
    """
    lane = st.tidx % 4
    for h in range_constexpr(2):
        total = cute.arch.warp_reduction_sum(st.row_sum[h], threads_in_group=4)
        inv = cutlass.Float32(0.0)
        lse_h = -cutlass.Float32.inf
        if total > 0.0:
            inv = cute.arch.rcp_approx(total)
            # natural-log LSE of the scaled scores: (max * scale * log2 e + log2 sum) * ln 2
            lse_h = (st.row_max[h] * cutlass.Float32(cfg.scale_log2) + dsl_math.log2(total)) * (
                cutlass.Float32(1.0 / LOG2_E)
            )
        for i in half_values(cute.size(st.acc_o), h):
            st.acc_o[i] = st.acc_o[i] * inv
        row = m * BLOCK_M + WG_M * st.wg + sv.o_coords[2 * h][0]
        # Two ifs, not `and`: both sides are runtime values in the DSL.
        if lane == 0:  # noqa: SIM102
            if row < seqlen:
                lse[(bh, row)] = lse_h
    chunks = cfg.head_dim // cfg.epi_cols
    n = cute.size(sv.chunk)
    for c in range_constexpr(chunks):
        # the buffer is free once the previous chunk's (or tile's) TMA store has read it
        if sv.is_store_warp:
            cute.arch.cp_async_bulk_wait_group(0, read=True)
        sv.barrier.arrive_and_wait()
        if const_expr(chunks > 1):
            for i in half_values(n, None):
                sv.chunk[i] = st.acc_o[c * n + i]
        for v in half_values(cute.size(sv.frag), None):
            sv.frag[v] = sv.acc[v].to(cfg.element)
        cute.copy(sv.r2s, sv.frag, sv.s_dst[(None, None, None, 0)])
        cute.arch.fence_proxy("async.shared", space="cta")
        sv.barrier.arrive_and_wait()
        if sv.is_store_warp:
            with cute.arch.elect_one():
                # this warpgroup's 64-row box of the tile, column chunk c
                cute.copy(atom_o, sv.t_s[(None, 0)], sv.t_g[(None, 2 * m + st.wg, c, bh)])
                cute.arch.cp_async_bulk_commit_group()


@cute.jit
def store_drain(sv: StoreViews) -> None:
    """Before exit: the store warp's TMA stores have read SMEM."""
    if sv.is_store_warp:
        cute.arch.cp_async_bulk_wait_group(0, read=True)


@cute.jit
def mma_wait(outstanding: Constexpr[int]) -> None:
    """Wait until at most ``outstanding`` WGMMA groups of this warpgroup are in flight."""
    warpgroup.wait_group(outstanding)
