"""Reusable resources: what most kernels would otherwise write again by hand.

:class:`TmaRing` is a ring of SMEM tiles that a TMA load fills and that its consumers read as
an SMEM tile, or write out with a TMA store (tracked as an asynchronous read, so the verifier
proves no stage is refilled while the store still reads it). Its work methods take the tile
from the loop offset through ``coord``. The CuTe DSL calls are in ``ts_codegen.tma``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ts_ir import CooperativeGroupSpec, PipelineSpec, PipelineType, WorkAttr
from ts_trace import MemoryResource, TaskLocalVariable, consumer_work, producer_work

__all__ = ["TmaRing"]


def _identity(offset: Any) -> Any:
    return offset


@dataclasses.dataclass(kw_only=True)
class TmaRing(MemoryResource):
    """A ring of SMEM tiles filled by TMA loads.

    Args:
        atom: The TMA load atom.
        gmem: The source's TMA tensor (what ``make_tiled_tma_atom`` returns with the atom).
        box: The tile shape (Python ints): ``gmem`` is read tile by tile in boxes of it.
        smem: The stages, an SMEM tensor ``(box..., stages)``.
        coord: Loop offset → tile coordinate in ``gmem``'s tile modes (default: the offset).
        store_atom: The TMA store atom (for :meth:`store`).
        store_gmem: The destination's TMA tensor.
        store_warp: The warp that issues the TMA store (the first warp of the storing task).

    Work methods: ``load`` (producer: the TMA load of the offset's tile), ``tile`` (consumer:
    the waited stage as an SMEM tensor), ``store`` (consumer, asynchronous read: the TMA
    store of the waited stage) and ``store_wait`` (consumer: wait until stores have read).
    """

    atom: Any = None
    gmem: Any = None
    box: tuple[int, ...] = ()
    smem: Any = None
    coord: Callable[[Any], Any] = _identity
    store_atom: Any = None
    store_gmem: Any = None
    store_warp: int = 0
    view: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.view = TaskLocalVariable(dtype="SmemTile", default=None)

    @staticmethod
    def pipeline(stages: int, stage_bytes: int, consumer_threads: int) -> PipelineSpec:
        """A TMA ring's pipeline: one thread arms each stage, ``consumer_threads`` release it."""
        return PipelineSpec(
            PipelineType.TmaAsync,
            stages,
            stage_bytes,
            CooperativeGroupSpec("thread", 1),
            CooperativeGroupSpec("thread", consumer_threads),
        )

    @producer_work
    def load(self, stage_info: Any) -> None:
        """TMA-load the offset's tile into the acquired stage."""
        from ts_codegen.tma import load_tile

        coord = self.coord(stage_info.loop_offset)
        load_tile(
            self.atom,
            self.gmem,
            self.box,
            self.smem,
            coord,
            stage_info.stage_idx,
            stage_info.barrier,
        )

    @consumer_work(returns=view)
    def tile(self, stage_info: Any) -> Any:
        """The waited stage as an SMEM tensor."""
        index = (*[None] * (len(self.smem.shape) - 1), stage_info.stage_idx)
        return self.smem[index]

    @consumer_work(work_attrs=WorkAttr.ASYNC_READ)
    def store(self, stage_info: Any) -> None:
        """Start the TMA store of the waited stage (it reads the stage until ``store_wait``)."""
        from ts_codegen.tma import store_tile

        coord = self.coord(stage_info.loop_offset)
        store_tile(
            self.store_atom,
            self.smem,
            self.store_gmem,
            self.box,
            stage_info.stage_idx,
            coord,
            self.store_warp,
        )

    @consumer_work(work_attrs=WorkAttr.ASYNC_WAIT_ALL)
    def store_wait(self, stage_info: Any) -> None:
        """``cp.async.bulk.wait_group.read 0``: no store reads the ring any more."""
        from ts_codegen.tma import store_wait

        store_wait(self.store_warp)
