"""``StageInfo``: the read-only context every work call receives."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["StageInfo"]


@dataclasses.dataclass(frozen=True)
class StageInfo:
    """Where a work call runs: loop position, pipeline stage and work tile.

    The code generator builds one per work call; values are DSL values at kernel trace time
    and plain ints in CPU reference runs.

    Attributes:
        loop_offset: The current domain-loop index (``start + i * step``); 0 outside loops.
        loop_start: Start of the enclosing domain loop.
        loop_end: End of the enclosing domain loop (resolved per tile when dynamic).
        loop_step: Step of the enclosing domain loop.
        stage_idx: Pipeline stage index of the resource for this call's role; None without a
            pipeline.
        label: Label of the work method being called.
        barrier: The stage's full barrier (what a TMA load completes on); None without a
            pipeline.
        work_tile: The current work tile.
        num_active_stages: Number of pipeline stages of the resource (0 without a pipeline).
        context: Kernel-wide context (SMEM base and the like).
        task_cache: The task's per-task cache object.
        iter_idx: Zero-based iteration count of the enclosing domain loop.
        phase: Pipeline phase bit of ``stage_idx`` for this call's role.
        peek_work_tile: In a work-tile loop of a static schedule, a call that returns the tile
            the CTA takes next (``is_valid_tile`` false after its last); None where the next
            tile is fetched at run time or outside a work-tile loop. A TS extension.
    """

    loop_offset: Any
    loop_start: Any
    loop_end: Any
    loop_step: Any
    stage_idx: Any
    label: object
    barrier: Any
    work_tile: Any
    num_active_stages: int = 0
    context: Any = None
    task_cache: object = None
    iter_idx: Any = 0
    phase: Any = None
    peek_work_tile: Any = None
