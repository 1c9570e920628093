"""The TMA copies' tiles: a 64 x 256 fp16 chunk, a 6-stage SMEM ring, TMA load and store steps.

Shared by ``persistent_copy.py`` and ``varlen_copy.py``: their TS kernels and their twins call
the same steps; both TS kernels' ring is ``TileRing``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync

from task_scheduling import WorkAttr, consumer_work, producer_work
from task_scheduling.resources import MemoryResource

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


@dataclasses.dataclass(kw_only=True)
class TileRing(MemoryResource):
    """The SMEM ring between the TMA load and the TMA store of the copies' tiles.

    ``tile(stage_info)`` is the tile ``(m, n)`` a work moves: the work tile's by default (a
    subclass says otherwise, e.g. a chunk of a segment). Work methods: ``load`` (producer: the
    TMA load into the acquired stage), ``store`` (consumer, asynchronous read: the TMA store of
    the waited stage) and ``store_wait`` (consumer: ``cp.async.bulk.wait_group.read 0``).
    """

    load_atom: Any = None
    g_src: Any = None
    store_atom: Any = None
    g_dst: Any = None
    s_tiles: Any = None

    def tile(self, stage_info: Any) -> tuple[Any, Any]:
        """The work tile's ``(m, n)``."""
        m, n, _ = stage_info.work_tile.tile_idx
        return m, n

    @producer_work
    def load(self, stage_info: Any) -> None:
        """TMA-load the tile into the acquired stage."""
        m, n = self.tile(stage_info)
        tma_load(
            self.load_atom, self.s_tiles, self.g_src, stage_info.stage_idx, m, n, stage_info.barrier
        )

    @consumer_work(work_attrs=WorkAttr.ASYNC_READ)
    def store(self, stage_info: Any) -> None:
        """Start the TMA store of the waited stage (it reads the stage until waited for)."""
        m, n = self.tile(stage_info)
        tma_store(self.store_atom, self.s_tiles, self.g_dst, stage_info.stage_idx, m, n)

    @consumer_work(work_attrs=WorkAttr.ASYNC_WAIT_ALL)
    def store_wait(self, stage_info: Any) -> None:
        """``cp.async.bulk.wait_group.read 0``."""
        tma_store_wait()
