"""Cluster launch control (CLC, sm_100a): the try-cancel request and the reading of its answer.

A CLC persistent kernel launches one cluster per work tile. A running cluster asks the hardware
to cancel a cluster that has not started yet (``clusterlaunchcontrol.try_cancel``) and takes
over its tile; the 16-byte answer lands in SMEM and completes the transaction bytes of an
mbarrier (the stage's full barrier of the queue's ``ClcFetchAsync`` ring). Reading it
(``clusterlaunchcontrol.query_cancel``) says whether a cluster was cancelled and, if so, the
ctaid of its first CTA; a failed request means no unstarted cluster is left.

The DSL's ``cute.arch.issue_clc_query`` and ``cute.arch.clc_response`` emit both
instructions; this adapter adds the response slots (one 16-byte, 16-byte aligned slot per ring
stage) and the election of the one issuing thread.
"""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute

from ts_codegen.dsl import if_then

__all__ = ["RESPONSE_BYTES", "issue_try_cancel", "read_response", "response_slots"]

RESPONSE_BYTES = 16
"""Bytes of one CLC response (what completes a ``ClcFetchAsync`` stage)."""

Int32: Any = cutlass.Int32
Int128: Any = cutlass.Int128


def response_slots(allocator: Any, stages: int, response_ptr: Any = None) -> Any:
    """``stages`` response slots: at ``response_ptr`` when the program gave one, else new SMEM.

    Returns an ``Int128`` pointer, one element per slot: stepping it by a stage keeps the
    16-byte alignment that the try-cancel answer and its 128-bit load need.
    """
    if response_ptr is None:
        return allocator.allocate_array(Int128, num_elems=max(stages, 1), byte_alignment=16)
    return cute.recast_ptr(response_ptr, dtype=Int128)


def _slot(slots: Any, stage_idx: Any) -> Any:
    return slots + Int32(stage_idx)


def issue_try_cancel(slots: Any, stage_idx: Any, barrier: Any, *, multicast: bool) -> None:
    """Lane 0 of the calling warp asks to cancel a cluster that has not started yet.

    The answer completes ``barrier`` (16 transaction bytes), which the ring's acquire armed.
    One request per call: the queue's producer group is one thread, and a second request would
    be a second answer on the same stage.
    """

    def issue(carried: list[Any]) -> list[Any]:
        cute.arch.issue_clc_query(barrier, _slot(slots, stage_idx), multicast=multicast)
        return carried

    if_then(cute.arch.lane_idx() == 0, [], issue)


def read_response(slots: Any, stage_idx: Any) -> tuple[Any, Any]:
    """``(first ctaid z, cancelled)`` of the answer in stage ``stage_idx`` (every thread reads).

    The persistent grid is ``(cluster m, cluster n, clusters)``: the z of the cancelled
    cluster's first CTA is its work index. When nothing was cancelled the ctaid is undefined
    and must not be used.
    """
    _x, _y, z, valid = cute.arch.clc_response(_slot(slots, stage_idx))
    return Int32(z), Int32(valid) != 0
