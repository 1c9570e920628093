"""A TMA Fork's members on ``cutlass.pipeline``: one full barrier, each member's empty barrier.

One TMA load fills the buffer every member of a Fork views, and a TMA load completes the one
mbarrier it is given. So the members share the first member's full barriers: the first
member's acquire arms them with the bytes of every load of the stage, each load completes its
bytes on them, and every member's consumers wait on them. Each member keeps its own empty
barriers: its acquire waits until its own consumers released the stage (and arms nothing).
The members may be of different TMA kinds (a ``TmaUmma`` view for the MMA, a ``TmaAsync`` one
for threads): every one keeps its own pipeline class, with the acquire above.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["SharedFull", "share_full_barriers"]


class SharedFull:
    """Mixed into a Fork member's pipeline class after the first: its acquire arms nothing."""

    def producer_acquire(self, state: Any, try_acquire_token: Any = None, **_: Any) -> None:
        """Wait until this member's consumers released the stage; the first member arms."""
        from ts_codegen.dsl import wait_empty

        wait_empty(self, state, try_acquire_token)


_CLASSES: dict[type, type] = {}


def _shared_full_class(base: type) -> type:
    # A plain subclass of the frozen pipeline dataclass: its fields and __init__ are inherited.
    # One per pipeline class, so that the DSL sees the same type on every trace.
    if base not in _CLASSES:
        _CLASSES[base] = type(f"SharedFull{base.__name__}", (SharedFull, base), {})
    return _CLASSES[base]


def share_full_barriers(member: Any, first: Any) -> Any:
    """``member``'s pipeline on ``first``'s full barriers (its own full ones stay unused)."""
    fields = {f.name: getattr(member, f.name) for f in dataclasses.fields(member)}
    fields["sync_object_full"] = first.sync_object_full
    return _shared_full_class(type(member))(**fields)
