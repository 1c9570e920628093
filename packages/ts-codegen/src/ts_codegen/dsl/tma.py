"""TMA tile moves for the reusable resources of ``ts_runtime.blocks`` (the DSL side).

A ring's SMEM tensor is ``(box..., stages)``; the global tensor is the TMA tensor of the atom,
divided here into boxes, ``((box...), (tiles...))``; a tile is addressed by its coordinate in
the tile modes.
"""

from __future__ import annotations

from typing import Any

import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync

__all__ = ["load_tile", "store_tile", "store_wait"]


def _partition(atom: Any, smem: Any, tiles: Any) -> tuple[Any, Any]:
    """TMA views of the stages and of the tiles (one CTA, no multicast)."""
    stages = cute.group_modes(smem, 0, cute.rank(smem) - 1)
    return cpasync.tma_partition(atom, 0, cute.make_layout(1), stages, tiles)  # type: ignore[no-any-return]


def load_tile(
    atom: Any, gmem: Any, box: Any, smem: Any, coord: Any, stage: Any, barrier: Any
) -> None:
    """TMA-load tile ``coord`` of ``gmem`` (in boxes of ``box``) into ``stage``."""
    t_s, t_g = _partition(atom, smem, cute.zipped_divide(gmem, box))
    cute.copy(atom, t_g[(None, coord)], t_s[(None, stage)], tma_bar_ptr=barrier)


def store_tile(
    atom: Any, smem: Any, gmem: Any, box: Any, stage: Any, coord: Any, warp: int
) -> None:
    """Warp ``warp`` starts the TMA store of ``stage`` into tile ``coord`` and commits it."""
    _store(atom, smem, cute.zipped_divide(gmem, box), stage, coord, warp)


@cute.jit
def _store(atom: Any, smem: Any, tiles: Any, stage: Any, coord: Any, warp: int) -> None:
    # The proxy fence orders the stage's earlier generic-proxy writes before the store's async
    # reads; one elected lane issues the copy (the DSL does not elect for a TMA store itself).
    if cute.arch.make_warp_uniform(cute.arch.warp_idx()) == warp:
        cute.arch.fence_proxy("async.shared", space="cta")
        t_s, t_g = _partition(atom, smem, tiles)
        with cute.arch.elect_one():
            cute.copy(atom, t_s[(None, stage)], t_g[(None, coord)])
            cute.arch.cp_async_bulk_commit_group()


@cute.jit
def store_wait(warp: int) -> None:
    """Warp ``warp`` waits until its stores have read SMEM; the warp syncs before it releases."""
    if cute.arch.make_warp_uniform(cute.arch.warp_idx()) == warp:
        cute.arch.cp_async_bulk_wait_group(0, read=True)
    cute.arch.sync_warp()
