"""The Hopper GEMM's two-level accumulation steps (``GemmConfig.promote_every``), for the twin.

The WGMMAs sum groups of ``promote_every`` K blocks; at a group's end the group goes into a
second fp32 register tile (the total) and the next group's first WGMMA overwrites the WGMMA
registers (``mma_k_block`` in ``_gemm_steps`` issues it with ``make_fresh_mma``'s tiled MMA).
The TS kernel's side is ``ts_runtime.blocks.WgmmaAccumulator``. See ``docs/gemm.rst``.
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass.cute as cute
from _gemm_config import GemmConfig
from _gemm_steps import make_tiled_mma, value_chunks
from cutlass.base_dsl.ast_helpers import const_expr, range_constexpr
from cutlass.cute.nvgpu import warpgroup
from cutlass.cutlass_dsl import Constexpr


def make_fresh_mma(cfg: GemmConfig) -> Any:
    """The tiled MMA with its accumulate flag off: a group's first WGMMA (``mma_k_block``)."""
    fresh = make_tiled_mma(cfg)
    fresh.set(warpgroup.Field.ACCUMULATE, False)
    return fresh


def group_end(k: Any, every: int, shift: Any = None) -> Any:
    """Whether K block ``k`` ends a group of ``every`` blocks (``k >= every - 1`` and
    ``(k - every + 1) % every == 0``, the test TS writes for ``every(every, start=every - 1)``);
    with ``shift`` (``group_shift``) whether ``(k + 1 + shift) % every == 0``."""
    if shift is not None:
        return (k + 1 + shift) % every == 0
    cond = k >= every - 1
    if every > 1:
        cond = cond & ((k - (every - 1)) % every == 0)
    return cond


def group_shift(cfg: GemmConfig, consumer_wg: Any) -> Any:
    """The K-block shift of consumer warpgroup ``consumer_wg``'s groups: with
    ``cfg.promote_stagger`` the second's start half a group later (its first group is half as
    long), so the two wait for their WGMMAs in turns; else None (no shift)."""
    return consumer_wg * (cfg.promotion // 2) if cfg.promote_stagger else None


@cute.jit
def _add(total: Any, acc: Any) -> None:
    """``total += acc``, value by value (unrolled in chunks)."""
    for lo, hi in value_chunks(cute.size(acc)):
        for i in range_constexpr(lo, hi):
            total[i] = total[i] + acc[i]


@cute.jit
def _assign_or_add(total: Any, acc: Any, first: Any) -> None:
    """``total = acc`` where ``first`` (a runtime condition), else ``total += acc``: two
    branches, so no select runs on the path not taken."""
    if first:
        for lo, hi in value_chunks(cute.size(acc)):
            for i in range_constexpr(lo, hi):
                total[i] = acc[i]
    else:
        _add(total, acc)


@cute.jit
def mma_promote(total: Any, acc: Any, first: Any = None) -> None:
    """Consumer: wait until the WGMMAs retired (``wgmma.wait_group 0``), ``total += acc`` in
    fp32 (``total = acc`` where ``first``: the tile's first group, with deferred stores), then
    fence ``acc`` (read here, overwritten by the next WGMMA)."""
    warpgroup.wait_group(0)
    if const_expr(first is None):
        _add(total, acc)
    else:
        _assign_or_add(total, acc, first)
    warpgroup.fence()


@cute.jit
def mma_promote_rest(
    total: Any,
    acc: Any,
    k_tiles: Any,
    every: Constexpr[int],
    shift: Any = None,
    assign: Constexpr[bool] = False,
) -> None:
    """Consumer, after the K loop (whose last block waited for every WGMMA): promote a last
    group shorter than ``every`` blocks (``shift``: the groups' ``group_shift``; none when
    ``K = 0``); with ``assign`` (deferred stores) a tile's only group assigns the total. No
    fence: the next tile's ``mma_begin_tile`` fences."""
    if const_expr(shift is not None):
        if ((k_tiles + shift) % every != 0) & (k_tiles > 0):
            _add(total, acc)
    elif const_expr(every > 1 and assign):
        if k_tiles % every != 0:
            _assign_or_add(total, acc, k_tiles < every)
    elif const_expr(every > 1):  # noqa: SIM102 (DSL: no `and` with a dynamic value)
        if k_tiles % every != 0:
            _add(total, acc)
