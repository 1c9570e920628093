"""The TMA copies' tiles: a 64 x 256 fp16 chunk, a 6-stage SMEM ring, TMA load and store steps.

Shared by ``persistent_copy.py`` and ``varlen_copy.py`` (their TS kernels and their twins call
the same steps).
"""

from __future__ import annotations

from typing import Any

import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync

TILE_M, TILE_N, STAGES = 64, 256, 6
TILE_BYTES = TILE_M * TILE_N * 2


def smem_tile_layout() -> Any:
    """One stage: a row-major tile."""
    return cute.make_layout((TILE_M, TILE_N), stride=(TILE_N, 1))


def ring_layout() -> Any:
    """All stages, one row-major tile after the other."""
    return cute.make_layout((TILE_M, TILE_N, STAGES), stride=(TILE_N, 1, TILE_M * TILE_N))


@cute.jit
def tma_load(atom: Any, s_tiles: Any, g_tiles: Any, stage: Any, m: Any, n: Any, bar: Any) -> None:
    """TMA-load tile ``(m, n)`` into ``stage``; completes on ``bar``."""
    t_s, t_g = cpasync.tma_partition(
        atom, 0, cute.make_layout(1), cute.group_modes(s_tiles, 0, 2), g_tiles
    )
    cute.copy(atom, t_g[(None, (m, n))], t_s[(None, stage)], tma_bar_ptr=bar)


@cute.jit
def tma_store(atom: Any, s_tiles: Any, g_tiles: Any, stage: Any, m: Any, n: Any) -> None:
    """One lane TMA-stores ``stage`` into tile ``(m, n)`` and commits the bulk group."""
    cute.arch.fence_proxy("async.shared", space="cta")
    t_s, t_g = cpasync.tma_partition(
        atom, 0, cute.make_layout(1), cute.group_modes(s_tiles, 0, 2), g_tiles
    )
    with cute.arch.elect_one():
        cute.copy(atom, t_s[(None, stage)], t_g[(None, (m, n))])
        cute.arch.cp_async_bulk_commit_group()


@cute.jit
def tma_store_wait() -> None:
    """Wait until the warp's stores have read SMEM (then any lane may release)."""
    cute.arch.cp_async_bulk_wait_group(0, read=True)
    cute.arch.sync_warp()
