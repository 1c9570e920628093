"""Blackwell (sm_100a) pipelines and tensor memory, on the CuTe DSL's own building blocks.

The pipeline kinds map onto ``cutlass.pipeline``'s Blackwell classes:

========================  ==========================================================
``TmaUmma``               ``PipelineTmaUmma`` (TMA bytes fill, ``tcgen05.commit`` empties)
``UmmaAsync``             ``PipelineUmmaAsync`` (``tcgen05.commit`` fills, threads empty)
``AsyncUmma``             ``PipelineAsyncUmma`` (threads fill, ``tcgen05.commit`` empties)
``ClcFetchAsync``         ``PipelineClcFetchAsync`` (a CLC response fills, threads empty)
``UmmaUmma``              ``PipelineUmmaUmma``, TS's own: ``tcgen05.commit`` on both
                          barriers (``cutlass.pipeline`` has no such class)
========================  ==========================================================

Every commit is issued by one elected thread of each warp that executes it (the DSL's
``elect_one``): that is the arrival count ts-verify models. One CTA per UMMA (``CtaGroup.ONE``)
is what TS lowers; a 2-CTA UMMA ring (``V = 2`` in ``cta_layout_vmnk``) is refused when the
pipeline is declared (``ts_runtime.PipelineConfig``).

Over a cluster ``(CM, CN)`` (one CTA per UMMA, TMA multicast along the cluster's rows and
columns) two kinds are lowered:

* ``TmaUmma``: a stage of a CTA is filled by the TMA loads of the ``CM + CN - 1`` CTAs of its
  cluster row and column (``A`` multicast along the row, ``B`` along the column), so the MMA
  warp's ``tcgen05.commit`` releasing it carries a multicast mask of those CTAs and arrives
  once on the empty barrier of each. The plan counts one CTA's commits; the barrier here counts
  them times the ``CM + CN - 1`` CTAs that arrive on it (ts-verify's ``multicast_peers``).
* ``UmmaAsync``: the accumulator is the CTA's own; the commit's multicast mask holds the CTA
  alone and the consumers arrive locally, so the counts are one CTA's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import cutlass.cute as cute
import cutlass.pipeline as cpipe

__all__ = [
    "BLACKWELL_PIPELINES",
    "PipelineUmmaUmma",
    "make_blackwell_pipeline",
    "tmem_alloc",
    "tmem_free",
]

BLACKWELL_PIPELINES = ("TmaUmma", "UmmaAsync", "AsyncUmma", "UmmaUmma", "ClcFetchAsync")
"""The pipeline kinds this module lowers (by ``PipelineType`` value)."""


def _group(agent: str, size: int) -> Any:
    kind = cpipe.Agent.Warp if agent == "warp" else cpipe.Agent.Thread
    return cpipe.CooperativeGroup(kind, size)


@dataclasses.dataclass(frozen=True)
class PipelineUmmaUmma(cpipe.PipelineAsync):
    """A ring between two UMMA sides: both barriers are signalled by ``tcgen05.commit``.

    The producer's MMAs complete the full barrier, the consumer's MMAs (which read the stage,
    e.g. a TMEM operand) complete the empty one; each commit is one elected thread's arrival.
    """

    cta_group: Any = None

    @staticmethod
    def build(*, num_stages: int, producer_group: Any, consumer_group: Any, storage: Any) -> Any:
        """Initialise ``2 * num_stages`` mbarriers at ``storage`` (sync deferred)."""
        from cutlass.pipeline.helpers import MbarrierArray

        op = cpipe.PipelineOp.TCGen05Mma
        # The barrier arrays of the DSL's pipelines: the op decides how arrive() signals (here
        # tcgen05.commit), the group the arrival count the barriers are initialised with.
        base = storage.align(min_align=8)
        full = MbarrierArray(
            barrier_storage=base, num_stages=num_stages, agent=(op, producer_group)
        )
        empty = MbarrierArray(
            barrier_storage=base + num_stages, num_stages=num_stages, agent=(op, consumer_group)
        )
        return PipelineUmmaUmma(
            full, empty, num_stages, None, None, cute.nvgpu.tcgen05.CtaGroup.ONE
        )

    def producer_commit(self, state: Any) -> None:
        """The producer's MMAs into the stage arrive on its full barrier when they complete."""
        self.sync_object_full.arrive(state.index, self.producer_mask, self.cta_group)

    def consumer_release(self, state: Any) -> None:
        """The consumer's MMAs reading the stage arrive on its empty barrier when complete."""
        self.sync_object_empty.arrive(state.index, self.consumer_mask, self.cta_group)


def make_blackwell_pipeline(
    kind: str,
    *,
    stages: int,
    producer: tuple[str, int],
    consumer: tuple[str, int],
    tx_bytes: int,
    storage: Any,
    cluster_mn: tuple[int, int] = (1, 1),
) -> Any:
    """Create the Blackwell pipeline ``kind`` (one of :data:`BLACKWELL_PIPELINES`), sync deferred.

    The caller makes the initialisation visible once, after every pipeline exists (a cluster
    barrier for rings over a cluster). ``cluster_mn`` other than 1 x 1: ``TmaUmma`` and
    ``UmmaAsync`` only (see the module's text).
    """
    pg, cg = _group(*producer), _group(*consumer)
    common = {"num_stages": stages, "producer_group": pg, "consumer_group": cg}
    if cluster_mn != (1, 1):
        return _cluster_pipeline(kind, common, consumer, tx_bytes, storage, cluster_mn)
    if kind == "TmaUmma":
        return cpipe.PipelineTmaUmma.create(
            **common, tx_count=tx_bytes, barrier_storage=storage, defer_sync=True
        )
    if kind == "UmmaAsync":
        return cpipe.PipelineUmmaAsync.create(**common, barrier_storage=storage, defer_sync=True)
    if kind == "AsyncUmma":
        return cpipe.PipelineAsyncUmma.create(**common, barrier_storage=storage, defer_sync=True)
    if kind == "ClcFetchAsync":
        return cpipe.PipelineClcFetchAsync.create(
            **common, tx_count=tx_bytes, barrier_storage=storage, defer_sync=True
        )
    if kind == "UmmaUmma":
        return PipelineUmmaUmma.build(
            num_stages=stages, producer_group=pg, consumer_group=cg, storage=storage
        )
    raise ValueError(f"{kind} is not a Blackwell pipeline kind ({', '.join(BLACKWELL_PIPELINES)})")


def multicast_sources_mask(cluster_mn: tuple[int, int]) -> Any:
    """The CTAs whose TMA loads fill this CTA's stage: its cluster row and column, as a mask.

    ``A`` comes from the CTAs of the same cluster row (same ``m``), ``B`` from those of the
    same column (same ``n``); the CTA itself is in both.
    """
    layout = cute.make_layout((*cluster_mn, 1))
    rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    coord = layout.get_flat_coord(rank)
    row = cute.make_layout_image_mask(layout, coord, mode=1)
    column = cute.make_layout_image_mask(layout, coord, mode=0)
    return row | column


def _cluster_pipeline(
    kind: str,
    common: dict[str, Any],
    consumer: tuple[str, int],
    tx_bytes: int,
    storage: Any,
    cluster_mn: tuple[int, int],
) -> Any:
    """``TmaUmma`` / ``UmmaAsync`` over a cluster of one-CTA UMMAs (``V`` = 1)."""
    layout = cute.make_layout((1, *cluster_mn, 1))
    if kind == "UmmaAsync":
        # The DSL's commit mask is the CTA's 2-CTA pair (mode V), here the CTA alone.
        return cpipe.PipelineUmmaAsync.create(
            **common, barrier_storage=storage, cta_layout_vmnk=layout, defer_sync=True
        )
    if kind != "TmaUmma":
        raise ValueError(f"a {kind} pipeline over a {cluster_mn} cluster is not lowered")
    cm, cn = cluster_mn
    # Each of the CM + CN - 1 CTAs that fill a stage of this CTA releases it with one commit
    # per committing warp: the plan's count (one CTA's commits) times those CTAs.
    across = _group(consumer[0], consumer[1] * (cm + cn - 1))
    pipe = cpipe.PipelineTmaUmma.create(
        **{**common, "consumer_group": across},
        tx_count=tx_bytes,
        barrier_storage=storage,
        cta_layout_vmnk=layout,
        defer_sync=True,
    )
    # The commit's mask: exactly the CTAs whose loads fill the stage, what ts-verify counts.
    # (The DSL's own mask is built for 2-CTA pairs too: it adds the rows and columns of the
    # V-mode peer, a coordinate a cluster of one-CTA UMMAs does not have.)
    return dataclasses.replace(pipe, consumer_mask=multicast_sources_mask(cluster_mn))


def _in_warp(warp: int, body: Any) -> None:
    """Run ``body`` in warp ``warp`` of the CTA only (tcgen05.alloc / dealloc are warp-wide)."""
    from ts_codegen.dsl import if_then

    def region(carried: list[Any]) -> list[Any]:
        body()
        return carried

    if_then(cute.arch.make_warp_uniform(cute.arch.warp_idx()) == warp, [], region)


def tcgen05_fence(kind: str) -> None:
    """``tcgen05.fence::before_thread_sync`` (``kind="before"``) or ``::after_thread_sync``."""
    from cutlass._mlir.dialects import nvvm

    nvvm.tcgen05_fence(kind)


def _smem_word(slot: Any) -> Any:
    """The CuTe pointer to an SMEM word given as a ``cutlass.Array`` (its LLVM pointer)."""
    import cutlass

    if not hasattr(slot, "data_ptr"):
        return slot
    return cute.make_ptr(cutlass.Int32, slot.data_ptr(), assumed_align=4)


def tmem_alloc(columns: int, slot: Any, warp: int) -> None:
    """Warp ``warp`` allocates ``columns`` TMEM columns and relinquishes the allocation permit.

    The relinquish lets another CTA on the SM allocate too. ``slot`` (where the address is
    written) is the SMEM word of ``SmemAllocator.add_tmem_ptr`` (a ``cutlass.Array`` or a
    pointer).
    """
    ptr = _smem_word(slot)

    def alloc() -> None:
        cute.arch.alloc_tmem(columns, ptr)
        cute.arch.relinquish_tmem_alloc_permit()
        # Other warps learn the address through a barrier (a ring's arrive / wait): the fence
        # orders the allocation before that synchronisation.
        tcgen05_fence("before")

    _in_warp(warp, alloc)


def tmem_free(columns: int, slot: Any, warp: int) -> None:
    """Warp ``warp`` frees the ``columns`` TMEM columns whose address SMEM ``slot`` holds."""
    import cutlass

    ptr = _smem_word(slot)

    def free() -> None:
        # The free follows the last user's signal (a barrier wait): the fence orders the
        # dealloc after that synchronisation, hence after the users' tcgen05 operations.
        tcgen05_fence("after")
        tmem = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, ptr)
        cute.arch.dealloc_tmem(tmem, columns)

    _in_warp(warp, free)
