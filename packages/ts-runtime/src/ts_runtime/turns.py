"""Turns between the tasks of a persistent kernel (re-exported by :mod:`ts_runtime.blocks`).

* :class:`TileTurns`: the CTA's tiles alternate between two tasks (even tiles, odd tiles);
* :class:`MathTurn`: the token one math task passes to the other (the order of their turns).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ts_ir import CooperativeGroupSpec, PipelineSpec, PipelineType, WorkAttr
from ts_trace import MemoryResource, TaskLocalVariable, consumer_work

__all__ = ["MathTurn", "TileTurns"]


@dataclasses.dataclass(kw_only=True)
class TileTurns(MemoryResource):
    """Ping-pong turns: the CTA's tiles alternate between two tasks (even tiles, odd tiles).

    Every task counts the CTA's tiles itself (a loop-carried task-local value) and runs a tile
    in ``when_false(odd, key="odd")`` or ``when_true(odd, key="odd")``: a runtime condition
    with the same key in every task, so the verifier knows they agree::

        n = turns.start()
        with work_tile_loop(wq):
            n, odd = turns.take(count=n)
            with when_false(odd, key="odd"):
                ...  # the even tiles

    Work methods (consumer, auxiliary): ``start`` (no tile yet: 0) and ``take`` (count the
    tile: ``(count + 1, count is odd)``).
    """

    count: TaskLocalVariable = TaskLocalVariable.uninitialized()
    odd: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.count = TaskLocalVariable(dtype="Int32", default=0)
        self.odd = TaskLocalVariable(dtype="Boolean", default=False)

    @consumer_work(returns=count, work_attrs=WorkAttr.AUXILIARY)
    def start(self, stage_info: Any) -> Any:
        """No tile yet."""
        from ts_codegen.dsl.wgmma import Int32

        return Int32(0)

    @consumer_work(returns=(count, odd), work_attrs=WorkAttr.AUXILIARY)
    def take(self, stage_info: Any, *, count: Any) -> Any:
        """Count the tile; the odd ones are the second task's."""
        return count + 1, (count % 2) == 1


@dataclasses.dataclass(kw_only=True)
class MathTurn(MemoryResource):
    """A math-order token from one math task to another: a barrier, no payload.

    A one-stage ``AsyncAsync`` ring (:meth:`pipeline`): the task that passes the turn
    ``acquire()`` / ``commit()`` s it, the one that takes it ``wait()`` / ``release()`` s it,
    so ts-verify proves the order with every other ring. Uses: FlashAttention-3's two math
    warpgroups issuing their WGMMAs in turns, and ping-pong GEMM warpgroups that skip each
    other's stages of one operand ring (``skip_stage()``): each passes the turn after its last
    wait of a tile, and the other takes it before its next tile's first wait, which is what
    keeps that wait's parity exact.
    """

    @staticmethod
    def pipeline(threads: int) -> PipelineSpec:
        """The token's ring: ``threads`` (one task's) on each side, one stage."""
        group = CooperativeGroupSpec("thread", threads)
        return PipelineSpec(PipelineType.AsyncAsync, 1, 0, group, group)
