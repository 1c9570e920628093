"""Fused multi-head attention forward on Hopper (FlashAttention-3 style) through TS.

``O = softmax(scale * Q K^T [+ causal mask]) V`` and the per-row log-sum-exp, for ``q`` of
``(B, H, S, D)`` and ``k`` / ``v`` of ``(B, Hkv, S, D)`` (``H = group * Hkv``: GQA), fp16 or
bf16, ``D`` = 64, 128 or 256, fp32 accumulation and softmax.

Schedule (one CTA per SM, persistent over the ``(q tile, head)`` grid, ``task_scheduling``'s
``TileRaster``; 384 threads; a tile is 128 query rows):

* warpgroup 0 gives registers back (``setmaxnreg.dec 40``); its warp 0 is the producer: per
  work tile it TMA-loads the ``128 x D`` Q tile once (two ``64 x D`` boxes, one per math
  warpgroup's half, into a two-stage ring: the next tile's Q loads during this one), then,
  per KV block, the ``128 x D`` K block and the ``128 x D`` V block into their own rings;
* warpgroups 1 and 2 (``setmaxnreg.inc 232``) are the math warpgroups: each owns 64 rows of
  the same tile and both read every Q, K and V stage (each ring's empty barrier counts both
  warpgroups' releases, 256 arrivals), so K and V are loaded once per tile, not once per
  warpgroup. Per KV block ``j`` (``kv_pipelined``): ``S_j = Q K_j^T`` (WGMMA from SMEM) is
  issued, then ``O += P_{j-1} V_{j-1}`` (``P`` in registers as the A operand); ``wait_group
  1`` retires ``S_j`` and its K stage goes back; the masked (last block, causal diagonal)
  online softmax of ``S_j`` in fp32 registers (``exp2`` with ``scale * log2 e`` folded) runs
  while the PV WGMMAs do; ``wait_group 0``, V stage back, ``P_j`` to 16 bit and ``O``
  rescaled. Then ``O / rowsum`` goes out through the warpgroup's SMEM buffer by TMA store and
  the LSE by plain stores.

With ``stagger`` (``--stagger``) the two warpgroups issue their WGMMAs in turns (a math-order
handoff through two one-stage token rings, ``issue``), so one's softmax runs under the other's
GEMMs.

With ``causal`` the KV loop of query tile ``m`` stops at the diagonal (a per-tile trip count,
``AttentionTask.kv_blocks``), so blocks past it are never loaded. ts-verify proves the
schedule (every ring with both readers, every trip count including 0) before it is compiled.

Usage::

    python examples/hopper/attention.py --compile-only [--d 64] [--causal] [--dtype fp16]
    python examples/hopper/attention.py --b 4 --s 4096 --h 16 --d 128 [--causal] [--dtype bf16]
    python examples/hopper/attention.py --b 4 --s 4096 --h 16 --d 128 --stagger   # math order
    python examples/hopper/attention.py --varlen 8 --b 4 --s 4096 --h 16 [--causal]  # packed

With ``AttentionConfig(varlen=True)`` the sequences have lengths of their own, packed along the
token axis (``cu_seqlens``): tiles come longest first from the dynamic queue, each with its own
KV trip count, and ``O`` leaves by guarded stores (``_attention_varlen.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import _attention_steps as steps
import _attention_varlen as varlen
import cutlass.cute as cute
from _attention_steps import (
    BLOCK_M,
    CONSUMER_REGS,
    LOAD_WARP,
    PRODUCER_REGS,
    WARPGROUP,
    WG_M,
    AttentionConfig,
)
from cuda.bindings import driver as cuda  # type: ignore[import-untyped]

from task_scheduling import (
    WorkAttr,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    work_tile_loop,
)
from task_scheduling.harness import max_active_clusters
from task_scheduling.kernel import (
    Kernel,
    KernelContext,
    MathTurn,
    Tasks,
    WgmmaRing,
    prefetch_tma,
    tile_queue,
)
from task_scheduling.plan import KernelPlan
from task_scheduling.resources import MemoryResource
from task_scheduling.schedule_builder import ResourceProxy, Schedule
from task_scheduling.task import Task
from task_scheduling.tiles import TileRaster

# ---------------------------------------------------------------------------------------------
# resources
# ---------------------------------------------------------------------------------------------


def ring_pipeline(stages: int, stage_bytes: int, consumers: int = 2 * WARPGROUP) -> Any:
    """A TMA ring read by WGMMA: one thread arms a stage, both math warpgroups release it.

    ``TmaWgmma``: ts-verify requires a ``wgmma.wait_group`` between a stage's MMAs and its
    release.
    """
    return WgmmaRing.pipeline(stages, stage_bytes, consumers)


@dataclasses.dataclass(kw_only=True)
class MathWarpgroup(MemoryResource):
    """One math warpgroup's registers: ``S``, ``P``, ``O`` and the softmax statistics.

    Work methods (consumer, auxiliary: no pipeline, the registers are the warpgroup's own):
    ``setup`` (once: descriptors and register tiles), ``begin`` (a new query tile),
    ``softmax`` (the retired ``S`` block of the loop offset, in place) and ``convert`` (``P``
    to 16 bit, ``O`` rescaled).
    """

    cfg: AttentionConfig
    qk_mma: Any
    pv_mma: Any
    s_q: Any
    s_k: Any
    s_v: Any
    seqlen: Any
    wg: int
    seqs: tuple[Any, Any, Any] | None = None  # varlen: (tile table, cu_seqlens_q, _k)

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def setup(self, stage_info: Any) -> None:
        """Once per thread: WGMMA descriptors over Q, K and V, the register tiles."""
        self.state = steps.math_setup(
            self.cfg, self.qk_mma, self.pv_mma, self.s_q, self.s_k, self.s_v, self.wg
        )

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def begin(self, stage_info: Any) -> None:
        """A new query tile: ``O = 0``, max ``-inf``, sum 0 (varlen: its sequence, read once
        per tile for the softmax and the store)."""
        if self.seqs is not None:
            self.tile = varlen.seq_tile(*self.seqs, stage_info.work_tile.tile_idx)
        steps.begin_tile(self.state)

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def softmax(self, stage_info: Any) -> None:
        """Online softmax of KV block ``loop_offset`` of the work tile (``S`` in place)."""
        n = stage_info.loop_offset
        if self.seqs is None:
            m = stage_info.work_tile.tile_idx[0]
            steps.softmax(self.cfg, self.state, m, n, self.seqlen)
            return
        t: varlen.SeqTile = self.tile
        shift = t.seqlen_k - t.seqlen_q if self.cfg.causal else None
        steps.softmax(self.cfg, self.state, t.m, n, t.seqlen_k, shift)

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def convert(self, stage_info: Any) -> None:
        """``P`` to 16 bit, ``O`` rescaled (no PV WGMMA in flight)."""
        steps.convert(self.cfg, self.state)


@dataclasses.dataclass(kw_only=True)
class OperandRing(MemoryResource):
    """A TMA-loaded SMEM ring that a math warpgroup's WGMMAs read: Q tiles, K or V blocks.

    ``operand`` says which box of which head a stage holds for work tile ``(m, bh)`` and loop
    offset ``n``: ``"q"`` the query tile ``m`` of head ``bh``; ``"k"`` / ``"v"`` KV block
    ``n`` of KV head ``bh // group``. Work methods: ``setup`` (producer, auxiliary: TMA
    views), ``load`` (producer), ``qk`` / ``pv`` (consumer: the WGMMAs of ``S = Q K^T`` /
    ``O += P V`` on the waited stage, asynchronous, into the calling warpgroup's registers),
    ``mma_wait_prior`` / ``mma_wait_all`` (``wait_group 1`` / ``0``).
    """

    operand: str
    atom: Any
    gmem: Any
    smem: Any
    box: tuple[int, int]
    group: int
    seqs: tuple[Any, Any, Any] | None = None  # varlen: (tile table, cu_seqlens_q, _k)

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    def setup(self, stage_info: Any) -> None:
        """Once per producer thread: the TMA views of the ring."""
        self.views = steps.tma_views(self.atom, self.gmem, self.smem, self.box)

    @producer_work
    def load(self, stage_info: Any) -> None:
        """TMA-load this operand's box for the work tile and loop offset."""
        if self.seqs is not None:  # a box at the sequence's row offset
            tile = varlen.seq_tile(*self.seqs, stage_info.work_tile.tile_idx)
            kv_head = tile.head // self.group
            st, bar, n = stage_info.stage_idx, stage_info.barrier, stage_info.loop_offset
            op, atom, g, s = self.operand, self.atom, self.gmem, self.smem
            varlen.load(op, atom, g, s, self.box, tile, kv_head, n, st, bar)
            return
        m, bh, _ = stage_info.work_tile.tile_idx
        if self.operand == "q":  # the tile's two 64-row halves, one per math warpgroup
            for half in (0, 1):
                row, slot = 2 * m + half, 2 * stage_info.stage_idx + half
                steps.tma_load(self.atom, self.views, row, 0, bh, slot, stage_info.barrier)
            return
        if self.operand == "k":
            box = (stage_info.loop_offset, 0, bh // self.group)
        else:
            box = (0, stage_info.loop_offset, bh // self.group)
        steps.tma_load(self.atom, self.views, *box, stage_info.stage_idx, stage_info.barrier)

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def bind_q(self, stage_info: Any) -> None:
        """The waited Q stage is the one the calling warpgroup's ``qk`` reads this tile."""
        mw: MathWarpgroup = stage_info.task_cache
        mw.state.q_stage = stage_info.stage_idx

    @consumer_work
    def qk(self, stage_info: Any) -> None:
        """Issue ``S = Q K^T`` on the waited K stage (the calling warpgroup's registers)."""
        mw: MathWarpgroup = stage_info.task_cache
        steps.qk(mw.qk_mma, mw.state, stage_info.stage_idx)

    @consumer_work
    def pv(self, stage_info: Any) -> None:
        """Issue ``O += P V`` on the waited V stage (the calling warpgroup's registers)."""
        mw: MathWarpgroup = stage_info.task_cache
        steps.pv(mw.pv_mma, mw.state, stage_info.stage_idx)

    @consumer_work(work_attrs=WorkAttr.ASYNC_WAIT_PRIOR)
    def mma_wait_prior(self, stage_info: Any) -> None:
        """``wgmma.wait_group 1``: all but this warpgroup's newest MMA group are done."""
        steps.mma_wait(1)

    @consumer_work(work_attrs=WorkAttr.ASYNC_WAIT_ALL)
    def mma_wait_all(self, stage_info: Any) -> None:
        """``wgmma.wait_group 0``: this warpgroup's MMAs are done."""
        steps.mma_wait(0)


@dataclasses.dataclass(kw_only=True)
class Output(MemoryResource):
    """``O`` (TMA store through one SMEM buffer) and the LSE of a math warpgroup's tiles.

    Work methods (producer): ``setup`` (auxiliary: views, named barrier, store warp),
    ``store`` (the work tile) and ``drain`` (auxiliary: the last store has read SMEM).
    """

    cfg: AttentionConfig
    math: MathWarpgroup
    atom: Any
    gmem: Any
    smem: Any
    lse: Any
    o: Any = None  # varlen: O as (total_q, D, H), written by plain stores

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    def setup(self, stage_info: Any) -> None:
        """Once per thread: the epilogue views (varlen: the coordinates of ``O``)."""
        mw = self.math
        if self.o is not None:
            thr = mw.pv_mma.get_slice(mw.state.tidx)
            self.coords = thr.partition_C(cute.make_identity_tensor((WG_M, self.cfg.head_dim)))
            return
        self.views = steps.store_setup(
            self.cfg, mw.pv_mma, mw.state, self.atom, self.gmem, self.smem
        )

    @producer_work
    def store(self, stage_info: Any) -> None:
        """Normalise ``O``, write it and the LSE for the work tile."""
        mw = self.math
        if self.o is not None:
            varlen.store(self.cfg, mw.state, self.coords, self.o, self.lse, mw.tile)
            return
        m, bh, _ = stage_info.work_tile.tile_idx
        steps.store(self.cfg, mw.state, self.views, self.atom, self.lse, m, bh, mw.seqlen)

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    def drain(self, stage_info: Any) -> None:
        """Before exit: the TMA stores have read SMEM (varlen: plain stores, nothing to wait)."""
        if self.o is None:
            steps.store_drain(self.views)


class AttentionTask(Task):
    """A task whose KV loop runs over the KV blocks its query tile sees."""

    def __init__(
        self,
        *args: Any,
        cfg: AttentionConfig,
        seqlen: Any,
        math: MathWarpgroup | None = None,
        seqs: tuple[Any, Any, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.cfg = cfg
        self.seqlen = seqlen
        self.math = math
        self.seqs = seqs
        super().__init__(*args, **kwargs)

    def make_task_cache(self) -> object:
        """A math task's warpgroup: the shared rings' ``qk`` / ``pv`` issue into its registers."""
        return self.math

    def kv_blocks(self, work_tile_coord: Any) -> Any:
        """KV blocks of query tile ``work_tile_coord[0]``: all, or up to the diagonal (varlen:
        of the tile's sequence, ``_attention_varlen.kv_blocks``)."""
        if self.seqs is not None:
            t = varlen.seq_tile(*self.seqs, work_tile_coord)
            return varlen.kv_blocks(self.cfg, t.seqlen_q, t.seqlen_k, t.m)
        return kv_blocks(self.cfg, self.seqlen, work_tile_coord[0])


def kv_blocks(cfg: AttentionConfig, seqlen: Any, m: Any) -> Any:
    """KV blocks that query tile ``m`` sees (Python ints or DSL values).

    Every block up to ``ceil(S / BN)``; with ``causal`` only those up to the one that holds
    the tile's last row's key (``(128 m + 127) // BN``): the KV loop is shorter per tile.
    """
    blocks = (seqlen + cfg.block_n - 1) // cfg.block_n
    if not cfg.causal:
        return blocks
    diagonal = (m * BLOCK_M + BLOCK_M - 1) // cfg.block_n + 1
    if isinstance(blocks, int) and isinstance(diagonal, int):
        return min(blocks, diagonal)
    import cutlass

    return cutlass.min(blocks, diagonal)  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------
# the schedules
# ---------------------------------------------------------------------------------------------


def kv_pipelined(
    k: ResourceProxy, v: ResourceProxy, mw: ResourceProxy, turn: Turns | None = None
) -> None:
    """The KV blocks of a tile, pipelined (FA3's intra-warpgroup overlap).

    Block 0 alone: ``S_0 = Q K_0^T``, its softmax. Then per block ``j >= 1``: ``S_j = Q
    K_j^T`` is issued, then ``O += P_{j-1} V_{j-1}``; ``wait_group 1`` retires the older
    group, ``S_j``, so its K stage goes back and the softmax of block ``j`` runs while the PV
    WGMMAs still do; ``wait_group 0`` retires them before their V stage goes back and ``O`` is
    rescaled. The last block's PV runs after the loop. Every stage is released only once the
    WGMMAs that read it have retired (TS-V113).

    Block 0 is peeled (a tile has at least one KV block: ``kv_blocks >= 1`` whenever there is a
    tile), so every wait of the loop is unconditional: a ``wait_group`` under a branch of its
    own would leave ptxas a path (through the branches' other combinations) with a WGMMA in
    flight while the softmax writes its registers, and it serializes the WGMMAs.

    ``turn`` (``cfg.stagger``): the math-order handoff; each issue of WGMMAs waits for the
    other warpgroup's previous issue and passes the turn on after its own (``issue``).
    """
    k.wait()
    with issue(turn):
        k.qk()  # S_0 = Q K_0^T
    k.mma_wait_all()
    k.release()
    mw.softmax()
    mw.convert()
    with domain_loop(1, AttentionTask.kv_blocks, unroll=1):
        k.wait()
        v.wait()
        with issue(turn):
            k.qk()  # S_j = Q K_j^T
            v.pv()  # O += P_{j-1} V_{j-1}, overlapping the softmax of block j
        k.mma_wait_prior()  # S_j is done; the PV group may still run
        k.release()
        mw.softmax()
        v.mma_wait_all()  # PV_{j-1} done: its V stage is free, O may be rescaled
        v.release()
        mw.convert()  # P_j to 16 bit, O rescaled
    v.wait()
    with issue(turn):
        v.pv()  # O += P_last V_last
    v.mma_wait_all()
    v.release()


Turns = tuple[ResourceProxy, ResourceProxy]
"""``(mine, theirs)``: the token ring this warpgroup waits on and the one it passes on."""


@contextlib.contextmanager
def issue(turn: Turns | None) -> Iterator[None]:
    """WGMMAs issued in math order: after the other warpgroup's last issue, before its next.

    ``mine.wait()`` until the other warpgroup has issued (its token), give the stage straight
    back, issue, then ``theirs.acquire() / commit()``: the other may issue now. Both are
    one-stage ``AsyncAsync`` rings between the two math tasks, so ts-verify proves the handoff
    with the rest (every trip count, no deadlock with the K / V rings).
    """
    if turn is None:
        yield
        return
    mine, theirs = turn
    mine.wait()
    mine.release()
    yield
    theirs.acquire()
    theirs.commit()


def serial_block(k: ResourceProxy, v: ResourceProxy, mw: ResourceProxy) -> None:
    """One KV block with every WGMMA waited for at once (``wait_group 0``): no overlap."""
    k.wait()
    k.qk()
    k.mma_wait_all()  # S is needed in registers, and the K stage is free
    k.release()
    mw.softmax()
    mw.convert()
    v.wait()
    v.pv()
    v.mma_wait_all()  # the next softmax rescales O: the PV MMAs must be done
    v.release()


KvPart = Callable[..., None]
"""``part(k, v, mw[, turn])``: the KV blocks of one tile of a math warpgroup."""


def serial(block: KvPart = serial_block) -> KvPart:
    """The KV blocks of a tile as ``block`` each (block 0 peeled, as the producer's is)."""

    def part(k: ResourceProxy, v: ResourceProxy, mw: ResourceProxy) -> None:
        block(k, v, mw)
        with domain_loop(1, AttentionTask.kv_blocks, unroll=1):
            block(k, v, mw)

    return part


def math_schedule(
    step: KvPart = kv_pipelined, wg: int | None = None, dynamic: bool = False
) -> Callable[..., Schedule]:
    """A math warpgroup's schedule: its 64 rows of every tile of the CTA.

    ``wg`` (with ``cfg.stagger``): the warpgroup, for the math-order tokens ``t0`` (warpgroup 0
    passes the turn to 1) and ``t1`` (1 to 0). Warpgroup 1 primes ``t1`` once before its first
    tile, so warpgroup 0 issues first; warpgroup 0 takes that last token after its last tile.
    ``dynamic`` (varlen): the queue is the atomic one, whose next tile the producer claims;
    each math warpgroup takes it from the queue's hand-off ring at the start of a tile.
    """

    @schedule
    def attend(
        wq: ResourceProxy,
        q: ResourceProxy,
        k: ResourceProxy,
        v: ResourceProxy,
        mw: ResourceProxy,
        out: ResourceProxy,
        *tokens: ResourceProxy,
    ) -> None:
        mw.setup()
        out.setup()
        turn: Turns | None = None
        if tokens:
            t0, t1 = tokens
            turn = (t1, t0) if wg == 0 else (t0, t1)
            if wg == 1:
                t1.acquire()  # warpgroup 0 goes first
                t1.commit()
        with work_tile_loop(wq):
            if dynamic:
                wq.wait()
                wq.read_next_tile()
                wq.release()
            mw.begin()
            q.wait()
            q.bind_q()  # this tile's Q stage, for the qk WGMMAs
            if turn is None:
                step(k, v, mw)
            else:
                step(k, v, mw, turn)
            q.release()  # every MMA that read Q retired in the loop
            out.store()
        if tokens and wg == 0:
            t1.wait()  # the token warpgroup 1 passed after its last issue
            t1.release()
        out.drain()

    return attend


def load_schedule(dynamic: bool = False) -> Callable[..., Schedule]:
    """The producer warp's schedule; ``dynamic``: it also claims every next tile."""

    @schedule
    def load(wq: ResourceProxy, q: ResourceProxy, k: ResourceProxy, v: ResourceProxy) -> None:
        """Per tile, the Q tile once, then K and V of every KV block; each stage is read by
        both math warpgroups."""
        for ring in (q, k, v):
            ring.setup()
        with work_tile_loop(wq):
            if dynamic:  # the next tile, claimed now and handed to both math warpgroups
                wq.acquire()
                wq.fetch_next_tile()
                wq.commit()
            load_tile(q, k, v)

    return load


def load_tile(q: ResourceProxy, k: ResourceProxy, v: ResourceProxy) -> None:
    """One tile's loads: Q, then K and V per KV block."""
    q.acquire()
    q.load()
    q.commit()
    # block 0, then the others: the shape of the math tasks' loops (the same symbols, so the
    # verifier compares the counts exactly)
    for _ in load_blocks():
        k.acquire()
        k.load()
        k.commit()
        v.acquire()
        v.load()
        v.commit()


def load_blocks() -> Iterator[None]:
    """Block 0 (outside a loop: loop offset 0), then blocks ``1 .. kv_blocks - 1``."""
    yield
    with domain_loop(1, AttentionTask.kv_blocks, unroll=1):
        yield


# ---------------------------------------------------------------------------------------------
# the kernel
# ---------------------------------------------------------------------------------------------


def attention_kernel(
    cfg: AttentionConfig,
    step: KvPart = kv_pipelined,
    second_step: KvPart | None = None,
    consumers: int = 2 * WARPGROUP,
) -> Kernel:
    """The TS attention kernel for ``cfg``: a load task and two math tasks on one tile.

    ``step`` replaces the math tasks' KV blocks of a tile (``second_step``, if given, the
    second warpgroup's alone; ``serial(block)`` builds one from a per-block body) and
    ``consumers`` the threads each ring stage waits for before it is refilled (tests build
    deliberately broken kernels with them).
    """
    steps_of = (step, second_step or step)

    def build(
        k: KernelContext,
        atom_q: Any,
        t_q: Any,
        atom_k: Any,
        t_k: Any,
        atom_v: Any,
        t_v: Any,
        atom_o: Any,
        t_o: Any,
        l_q: Any,
        l_k: Any,
        l_v: Any,
        l_o: Any,
        params: Any,
        lse: Any,
        o: Any = None,
        seqs: tuple[Any, Any, Any] | None = None,
        counters: Any = None,
    ) -> Tasks:
        """The tasks; varlen: ``o`` (for plain stores), ``seqs`` (tile table, ``cu_seqlens_q``,
        ``cu_seqlens_k``) and the dynamic queue's ``counters``."""
        prefetch_tma(k, atom_q, atom_k, atom_v, atom_o, warp=LOAD_WARP)
        seqlen = k.value("seqlen", lambda: cute.size(t_k, mode=[0]))
        dynamic = counters is not None
        # dynamic: the producer claims each next tile, both math warpgroups read it
        wq = tile_queue(params, counters, consumer_threads=2 * WARPGROUP)
        d, bn = cfg.head_dim, cfg.block_n
        s_q, s_k, s_v = (k.smem_tensor(cfg.element, lay) for lay in (l_q, l_k, l_v))
        # One ring per operand, read by both math warpgroups: every stage's empty barrier
        # counts both warpgroups' releases (``consumers`` threads), so the producer refills a
        # stage only once both are done with it.
        pipe = functools.partial(ring_pipeline, consumers=consumers)

        def ring(op: str, stages: int, size: int, atom: Any, g: Any, s: Any, box: Any) -> Any:
            return OperandRing(
                name=op,
                pipeline_config=pipe(stages, size),
                operand=op,
                atom=atom,
                gmem=g,
                smem=s,
                box=box,
                group=cfg.group,
                seqs=seqs,
            )

        q = ring("q", cfg.q_stages, 2 * cfg.q_bytes, atom_q, t_q, s_q, (WG_M, d))
        kr = ring("k", cfg.stages, cfg.stage_bytes, atom_k, t_k, s_k, (bn, d))
        vr = ring("v", cfg.stages, cfg.stage_bytes, atom_v, t_v, s_v, (d, bn))
        rings = [q, kr, vr]
        tokens = [
            MathTurn(name=f"t{w}", pipeline_config=MathTurn.pipeline(WARPGROUP)) for w in range(2)
        ]
        if not cfg.stagger:
            tokens = []
        tasks: list[Task] = []
        graph: dict[Any, list[Any]] = {r: [wq] for r in rings}
        for wg in range(2):
            mw = MathWarpgroup(
                name=f"math{wg}",
                cfg=cfg,
                qk_mma=k.value(f"qk_mma{wg}", lambda: steps.make_qk_mma(cfg)),
                pv_mma=k.value(f"pv_mma{wg}", lambda: steps.make_pv_mma(cfg)),
                s_q=s_q,
                s_k=s_k,
                s_v=s_v,
                seqlen=seqlen,
                wg=wg,
                seqs=seqs,
            )
            s_o = k.smem_tensor(cfg.element, l_o)
            out = Output(
                name=f"o{wg}", cfg=cfg, math=mw, atom=atom_o, gmem=t_o, smem=s_o, lse=lse, o=o
            )
            # math order (cfg.stagger): t0 is warpgroup 0's to fill, t1 warpgroup 1's
            fills, waits = ([tokens[wg]], [tokens[1 - wg]]) if tokens else ([], [])
            tasks.append(
                AttentionTask(
                    [wq, q, kr, vr, mw, *waits],
                    [out, *fills],
                    (1 + wg) * WARPGROUP // 32,
                    WARPGROUP // 32,
                    schedule=math_schedule(steps_of[wg], wg, dynamic)(
                        wq, q, kr, vr, mw, out, *tokens
                    ),
                    num_registers=CONSUMER_REGS,
                    name=f"math{wg}",
                    cfg=cfg,
                    seqlen=seqlen,
                    math=mw,
                    seqs=seqs,
                )
            )
            graph[out] = [q, kr, vr, mw, wq]
            if tokens:
                graph[tokens[wg]] = [q, kr, vr, mw, wq]
        # dynamic: the producer also produces into the queue (it claims the tiles)
        sources, products = ([], [*rings, wq]) if dynamic else ([wq], list(rings))
        producer = AttentionTask(
            sources,
            products,
            LOAD_WARP,
            1,
            schedule=load_schedule(dynamic)(wq, *rings),
            num_registers=PRODUCER_REGS,
            name="load",
            cfg=cfg,
            seqlen=seqlen,
            seqs=seqs,
        )
        return Tasks([producer, *tasks], graph)

    def declare(
        k: KernelContext,
        atom_q: Any,
        t_q: Any,
        atom_k: Any,
        t_k: Any,
        atom_v: Any,
        t_v: Any,
        atom_o: Any,
        t_o: Any,
        l_q: Any,
        l_k: Any,
        l_v: Any,
        l_o: Any,
        params: Any,
        lse: Any,
    ) -> Tasks:
        return build(
            k, atom_q, t_q, atom_k, t_k, atom_v, t_v, atom_o, t_o, l_q, l_k, l_v, l_o, params, lse
        )

    def declare_varlen(
        k: KernelContext,
        atom_q: Any,
        t_q: Any,
        atom_k: Any,
        t_k: Any,
        atom_v: Any,
        t_v: Any,
        atom_o: Any,
        t_o: Any,
        l_q: Any,
        l_k: Any,
        l_v: Any,
        l_o: Any,
        params: Any,
        lse: Any,
        o: Any,
        cu_q: Any,
        cu_k: Any,
        table: Any,
        counters: Any,
    ) -> Tasks:
        layouts = (l_q, l_k, l_v, l_o)
        atoms = (atom_q, t_q, atom_k, t_k, atom_v, t_v, atom_o, t_o)
        seqs = (table, cu_q, cu_k)
        return build(k, *atoms, *layouts, params, lse, o, seqs, counters)

    if cfg.varlen:
        kernel = Kernel(
            declare_varlen, name="attention_varlen", block_warps=cfg.block_threads // 32
        )
        kernel.launcher(varlen.launcher(cfg, kernel.launch))
        return kernel
    kernel = Kernel(declare, name="attention", block_warps=cfg.block_threads // 32)
    kernel.launcher(_launcher(cfg, kernel.launch))
    return kernel


def make_plan(cfg: AttentionConfig | None = None, **variant: Any) -> KernelPlan:
    """The verified host plan (no GPU, no DSL values); ``variant``: see ``attention_kernel``.

    Raises:
        ts_verify.VerificationError: The verifier rejects the plan.
    """
    kernel = attention_kernel(cfg or AttentionConfig(), **variant)
    kernel.verify().report.raise_for_errors()
    return kernel.plan().plan


def _launcher(cfg: AttentionConfig, start: Callable[..., None]) -> Any:
    """The ``@cute.jit`` ``launch(q, k, v, o, lse, stream=None)`` for ``cfg``.

    ``q`` / ``o``: ``(B * H, S, D)``, ``k`` / ``v``: ``(B * Hkv, S, D)`` (row-major), ``lse``:
    fp32 ``(B * H, S)``.
    """

    @cute.jit
    def launch(
        q: cute.Tensor,
        k: cute.Tensor,
        v: cute.Tensor,
        o: cute.Tensor,
        lse: cute.Tensor,
        stream: cuda.CUstream | None = None,
    ) -> None:
        layouts = steps.make_smem_layouts(cfg)
        atoms = steps.make_tma_atoms(cfg, q, k, v, o, layouts)
        shape: Any = q.shape  # (B * H, S, D)
        tiles = (cute.ceil_div(shape[1], BLOCK_M), shape[0], 1)
        params = TileRaster(tiles, (1, 1, 1), 1)
        start(
            *atoms,
            *layouts,
            params,
            lse,
            grid=params.get_grid_shape(max_active_clusters()),
            block=(cfg.block_threads, 1, 1),
            cluster=(1, 1, 1),
            stream=stream,
        )

    return launch


def compile_only(cfg: AttentionConfig | None = None) -> dict[str, Any]:
    """Verify the plan and compile the kernel for sm_90a with fake tensors; count its PTX."""
    from _attention_host import compile_only as compile_host

    return compile_host(cfg)


def main(argv: list[str] | None = None) -> int:
    from _attention_host import run_cli

    return run_cli(argv, __doc__.splitlines()[0], __file__)


if __name__ == "__main__":
    sys.exit(main())
