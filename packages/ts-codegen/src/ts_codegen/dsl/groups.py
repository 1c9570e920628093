"""A TMA Fork's members on ``cutlass.pipeline``: one full barrier, each member's empty barrier.

One TMA load fills the buffer every member of a Fork views, and a TMA load completes the one
mbarrier it is given. So the members share the first member's full barriers: the first
member's acquire arms them with the bytes of every load of the stage, each load completes its
bytes on them, and every member's consumers wait on them. Each member keeps its own empty
barriers: its acquire waits until its own consumers released the stage (and arms nothing).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import cutlass.pipeline as cpipe

__all__ = ["SharedFullTmaAsync", "share_full_barriers"]


@dataclasses.dataclass(frozen=True)
class SharedFullTmaAsync(cpipe.PipelineTmaAsync):
    """A Fork member after the first: the first member's full barriers, its own empty ones."""

    def producer_acquire(
        self, state: Any, try_acquire_token: Any = None, *, loc: Any = None, ip: Any = None
    ) -> None:
        """Wait until this member's consumers released the stage; the first member arms."""
        from ts_codegen.dsl import wait_empty

        wait_empty(self, state, try_acquire_token)


def share_full_barriers(member: Any, first: Any) -> SharedFullTmaAsync:
    """``member``'s pipeline on ``first``'s full barriers (its own full ones stay unused)."""
    fields = {f.name: getattr(member, f.name) for f in dataclasses.fields(member)}
    fields["sync_object_full"] = first.sync_object_full
    return SharedFullTmaAsync(**fields)
