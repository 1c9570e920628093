"""The ts-codegen part of the error catalog: the ``TS-Cxxx`` codes."""

from __future__ import annotations

from ts_ir import CatalogEntry, entry_from_text

__all__ = ["CODEGEN_ENTRIES"]

CODEGEN_ENTRIES: tuple[CatalogEntry, ...] = (
    entry_from_text(
        "ts-codegen",
        "TS-C001",
        "construct the code generator cannot lower",
        "restructure the schedule with constructs that are lowered today, or verify-only it",
        """
        The code generator lowers domain loops with constant or runtime bounds, iteration
        predicates, `AsyncAsync` and `TmaAsync` pipelines, warp dispatch and `setmaxnreg`.
        A verified plan may still use a construct it does not lower yet (a persistent work-tile
        loop, a runtime condition from `when_true`, a pipeline type of another target), or name
        a resource that was not handed to the kernel. Lowering stops at that construct and
        names the task, the node and its source line instead of emitting wrong code.
        """,
        """
        with work_tile_loop(wq):          # not lowered yet
            tile = wq.next_tile()
        """,
        """
        with domain_loop(start, end, step):   # grid-stride over tiles instead
            tile = tiles.tile()
        """,
    ),
)
"""The entries of every ``TS-Cxxx`` code."""
