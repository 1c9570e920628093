"""The Hopper GEMM's epilogue steps, shared by its TS kernel and its twin.

``epilogue_fuse`` (the fused ``alpha`` / ``beta`` / bias / scales step on the fp32
accumulator, which the TS kernel's ``TmaEpilogue`` takes as its ``fuse``), ``epilogue_store``
and ``epilogue_drain`` (the twin's TMA-stored epilogue). See ``gemm.py``.
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
from _gemm_config import GemmConfig
from _gemm_steps import EpilogueViews, value_chunks
from cutlass.base_dsl.ast_helpers import const_expr, range_constexpr
from cutlass.cute.nvgpu import cpasync
from cutlass.cutlass_dsl import Constexpr


@cute.jit
def epilogue_fuse(
    cfg: Constexpr[GemmConfig],
    acc: Any,
    thr_mma: Any,
    t_c: Any,
    c_in: Any,
    bias: Any,
    m: Any,
    n: Any,
    scale_a: Any = None,
    scale_b: Any = None,
) -> None:
    """Consumers: ``acc = alpha * s * acc + beta * C[tile (m, n)] + bias[n]`` in fp32, in place.

    ``acc`` is the accumulator in its MMA layout, ``thr_mma`` the thread's slice of the tiled
    MMA. ``s`` is 1, ``scale_a[0] * scale_b[0]`` (``cfg.scale == "tensor"``) or
    ``scale_a[row] * scale_b[col]`` (``"rowwise"``). Each thread reads the old C (``c_in``,
    the global output tensor; None when ``beta == 0``) and the bias (an ``N``-vector seen as an
    ``M x N`` tensor of row stride 0; None when off) at the coordinates of its own accumulator
    values (the MMA partition of the tile), with plain predicated global loads: values outside
    ``M x N`` read nothing (the TMA store clips them anyway).
    """
    n_vals = cute.size(acc)
    shape = t_c.shape  # (M, N); t_c's own coordinates are in TMA order (N first)
    if const_expr(cfg.beta != 0.0 or cfg.bias or cfg.scale == "rowwise"):
        ident = cute.make_identity_tensor(shape)
        coords = thr_mma.partition_C(cute.local_tile(ident, cfg.tile_mn, (m, n)))
    if const_expr(cfg.scale == "tensor"):
        s = scale_a[0] * scale_b[0]  # once per tile: two L1-resident loads
        for lo, hi in value_chunks(n_vals):
            for i in range_constexpr(lo, hi):
                acc[i] = acc[i] * s
    if const_expr(cfg.scale == "rowwise"):
        # Clamped, not predicated, indices: a value outside M x N is clipped by the store
        # anyway, and unconditional loads of equal addresses merge (each thread holds 2 rows
        # and BN / 4 columns of its warpgroup's tile, read once each). A tile exists only when
        # M, N >= 1, so the clamp stays inside the vectors.
        last_row, last_col = shape[0] - 1, shape[1] - 1
        for lo, hi in value_chunks(n_vals):
            for i in range_constexpr(lo, hi):
                row, col = coords[i]
                sa = scale_a[cutlass.min(row, last_row)]  # type: ignore[attr-defined]
                sb = scale_b[cutlass.min(col, last_col)]  # type: ignore[attr-defined]
                acc[i] = acc[i] * (sa * sb)
    if const_expr(cfg.alpha != 1.0):
        for lo, hi in value_chunks(n_vals):
            for i in range_constexpr(lo, hi):
                acc[i] = acc[i] * cutlass.Float32(cfg.alpha)
    if const_expr(cfg.beta != 0.0 or cfg.bias):
        if const_expr(cfg.beta != 0.0):
            old = thr_mma.partition_C(cute.local_tile(c_in, cfg.tile_mn, (m, n)))
        if const_expr(cfg.bias):
            rows = cute.make_tensor(bias.iterator, cute.make_layout(shape, stride=(0, 1)))
            add = thr_mma.partition_C(cute.local_tile(rows, cfg.tile_mn, (m, n)))
        for lo, hi in value_chunks(n_vals):
            for i in range_constexpr(lo, hi):
                if cute.elem_less(coords[i], shape):
                    if const_expr(cfg.beta != 0.0):
                        acc[i] = acc[i] + cutlass.Float32(cfg.beta) * old[i].to(cutlass.Float32)
                    if const_expr(cfg.bias):
                        acc[i] = acc[i] + add[i].to(cutlass.Float32)


@cute.jit
def epilogue_store(
    cfg: Constexpr[GemmConfig],
    views: EpilogueViews,
    atom_c: Any,
    s_c: Any,
    t_c: Any,
    m: Any,
    n: Any,
    bar: Any,
    is_store_warp: Any,
    c_in: Any = None,
    bias: Any = None,
    scale_a: Any = None,
    scale_b: Any = None,
    when: Any = True,
) -> None:
    """Consumers: write tile ``(m, n)`` of C from the accumulator, one sub-tile at a time.

    Sub-tile ``j`` goes through buffer ``j % epi_stages`` (the sub-tile count is a multiple of
    it, so the buffer is static and the ring continues seamlessly into the next tile). For each
    sub-tile: convert + ``stmatrix`` into the buffer, ``fence.proxy.async`` (make the generic
    proxy writes visible to TMA), and one named barrier over the consumer threads. Before
    arriving, the store thread waits until at most ``epi_stages - 2`` of its stores still read
    SMEM, so after the barrier the *next* sub-tile's buffer is free; after the barrier it
    issues the TMA store of this sub-tile and commits it. One barrier per sub-tile suffices.

    With a fused epilogue (``cfg.fused_epilogue``) ``epilogue_fuse`` first rewrites the
    accumulator (``c_in``: the output tensor when ``beta != 0``, ``bias``: the bias vector,
    ``scale_a`` / ``scale_b``: the scales when ``cfg.scale`` is set). ``when`` (a runtime
    condition, or the default True): only where it holds (``cfg.defer_store``).
    """
    if when:
        if const_expr(cfg.fused_epilogue):
            acc, thr = views.acc_mma, views.thr_mma
            epilogue_fuse(cfg, acc, thr, t_c, c_in, bias, m, n, scale_a, scale_b)
        g_tile = cute.local_tile(t_c, cfg.tile_mn, (m, n))
        s_bufs = cute.group_modes(s_c, 0, 2)
        t_s, t_g = cpasync.tma_partition(
            atom_c, 0, cute.make_layout(1), s_bufs, cute.zipped_divide(g_tile, cfg.epi_tile)
        )
        bn, en = cfg.tile_mn[1], cfg.epi_n
        if const_expr(bn % en):  # a fitted width: the last column's sub-tile ends at the edge
            g_edge = cute.zipped_divide(cute.domain_offset((0, bn - en), g_tile), cfg.epi_tile)
            _, t_edge = cpasync.tma_partition(atom_c, 0, cute.make_layout(1), s_bufs, g_edge)
        n_vals = cute.size(views.frag)
        columns = cfg.epi_columns
        for j in range_constexpr(cfg.epi_subtiles):
            buf = j % cfg.epi_stages
            row, col = j // columns, j % columns  # row block > 0 only for a ping-pong 128-row tile
            first = min(col * en, bn - en)  # 4 accumulator values a thread per 8 columns
            for v in range_constexpr(n_vals):
                views.frag[v] = views.acc[(row * bn + first) * n_vals // en + v].to(cfg.out_element)
            cute.copy(views.r2s, views.frag, views.s_c[(None, None, None, buf)])
            cute.arch.fence_proxy("async.shared", space="cta")
            if is_store_warp:
                cute.arch.cp_async_bulk_wait_group(cfg.epi_stages - 2, read=True)
            bar.arrive_and_wait()
            if is_store_warp:
                # Bulk groups are per thread: the same (elected) lane issues and commits, and the
                # whole warp's wait_group above includes that lane.
                with cute.arch.elect_one():
                    if const_expr(first % en == 0):
                        cute.copy(atom_c, t_s[(None, buf)], t_g[(None, (row, col))])
                    else:
                        cute.copy(atom_c, t_s[(None, buf)], t_edge[(None, (row, 0))])
                    cute.arch.cp_async_bulk_commit_group()


@cute.jit
def epilogue_drain(is_store_warp: Any) -> None:
    """Store warp, before exit: wait until the TMA stores finished reading SMEM."""
    if is_store_warp:
        cute.arch.cp_async_bulk_wait_group(0, read=True)
