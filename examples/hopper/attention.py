"""Fused multi-head attention forward on Hopper (FlashAttention-3 style) through TS.

``O = softmax(scale * Q K^T [+ causal mask]) V`` and the per-row log-sum-exp, for ``q`` of
``(B, H, S, D)`` and ``k`` / ``v`` of ``(B, Hkv, S, D)`` (``H = group * Hkv``: GQA), fp16 or
bf16, ``D`` = 64 or 128, fp32 accumulation and softmax.

Schedule (one CTA per SM, persistent over the ``(q tile, head)`` grid, ``task_scheduling``'s
``TileRaster``; 384 threads):

* warpgroup 0 gives registers back (``setmaxnreg.dec 40``); its warp 0 is the producer: per
  work tile it TMA-loads the ``64 x D`` Q tile once into that tile's Q buffer, then, per KV
  block, the ``BN x D`` K block and the ``BN x D`` V block into their own SMEM rings;
* warpgroups 1 and 2 (``setmaxnreg.inc 232``) are the math warpgroups, in ping-pong: they take
  the CTA's work tiles in turns (``TileTurns``: even tiles, odd tiles), each with its own Q
  buffer, K ring, V ring and O buffer, so one's softmax and epilogue overlap the other's
  WGMMAs. Per KV block: ``S = Q K^T`` (WGMMA from SMEM), ``wait_group 0``, K stage released;
  masked (last block, causal diagonal) online softmax in fp32 registers (``exp2`` with
  ``scale * log2 e`` folded); ``P`` converted to 16 bit in registers and used as the register
  A operand of ``O += P V``; ``wait_group 0``, V stage released. Then ``O / rowsum`` goes out
  through an SMEM buffer by TMA store and the LSE by plain stores.

With ``causal`` the KV loop of query tile ``m`` stops at the diagonal (a per-tile trip count,
``AttentionTask.kv_blocks``), so blocks past it are never loaded. ts-verify proves the
schedule (every ring, the turns, every trip count including 0) before it is compiled.

Usage::

    python examples/hopper/attention.py --compile-only [--d 64] [--causal] [--dtype fp16]
    python examples/hopper/attention.py --b 4 --s 4096 --h 16 --d 128 [--causal] [--dtype bf16]
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import _attention_steps as steps
import cutlass.cute as cute
from _attention_steps import (
    BLOCK_M,
    CONSUMER_REGS,
    LOAD_WARP,
    PRODUCER_REGS,
    SMS,
    WARPGROUP,
    AttentionConfig,
)
from cuda.bindings import driver as cuda  # type: ignore[import-untyped]

from task_scheduling import (
    WorkAttr,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    when_false,
    when_true,
    work_tile_loop,
)
from task_scheduling.kernel import (
    Kernel,
    KernelContext,
    Tasks,
    TileTurns,
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


def ring_pipeline(stages: int, stage_bytes: int) -> Any:
    """A TMA ring read by WGMMA: one thread arms a stage, the 128 math threads release it.

    ``TmaWgmma``: ts-verify requires a ``wgmma.wait_group`` between a stage's MMAs and its
    release.
    """
    return WgmmaRing.pipeline(stages, stage_bytes, WARPGROUP)


@dataclasses.dataclass(kw_only=True)
class MathWarpgroup(MemoryResource):
    """One math warpgroup's registers: ``S``, ``P``, ``O`` and the softmax statistics.

    Work methods (consumer, auxiliary: no pipeline, the registers are the warpgroup's own):
    ``setup`` (once: descriptors and register tiles), ``begin`` (a new query tile) and
    ``softmax`` (the waited ``S`` block of the loop offset to ``P``, ``O`` rescaled).
    """

    cfg: AttentionConfig
    qk_mma: Any
    pv_mma: Any
    s_q: Any
    s_k: Any
    s_v: Any
    seqlen: Any
    wg: int

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def setup(self, stage_info: Any) -> None:
        """Once per thread: WGMMA descriptors over Q, K and V, the register tiles."""
        self.state = steps.math_setup(
            self.cfg, self.qk_mma, self.pv_mma, self.s_q, self.s_k, self.s_v, self.wg
        )

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def begin(self, stage_info: Any) -> None:
        """A new query tile: ``O = 0``, max ``-inf``, sum 0."""
        steps.begin_tile(self.state)

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def softmax(self, stage_info: Any) -> None:
        """Online softmax of KV block ``loop_offset`` of the work tile."""
        m = stage_info.work_tile.tile_idx[0]
        steps.softmax(self.cfg, self.state, m, stage_info.loop_offset, self.seqlen)


@dataclasses.dataclass(kw_only=True)
class OperandRing(MemoryResource):
    """A TMA-loaded SMEM ring that a math warpgroup's WGMMAs read: Q tiles, K or V blocks.

    ``operand`` says which box of which head a stage holds for work tile ``(m, bh)`` and loop
    offset ``n``: ``"q"`` the query tile ``m`` of head ``bh``; ``"k"`` / ``"v"`` KV block
    ``n`` of KV head ``bh // group``. Work methods: ``setup`` (producer, auxiliary: TMA
    views), ``load`` (producer), ``qk`` / ``pv`` (consumer: the WGMMAs of ``S = Q K^T`` /
    ``O += P V`` on the waited stage, asynchronous), ``mma_wait_all`` (``wait_group 0``).
    """

    operand: str
    atom: Any
    gmem: Any
    smem: Any
    box: tuple[int, int]
    group: int
    math: MathWarpgroup

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    def setup(self, stage_info: Any) -> None:
        """Once per producer thread: the TMA views of the ring."""
        self.views = steps.tma_views(self.atom, self.gmem, self.smem, self.box)

    @producer_work
    def load(self, stage_info: Any) -> None:
        """TMA-load this operand's box for the work tile and loop offset."""
        m, bh, _ = stage_info.work_tile.tile_idx
        if self.operand == "q":
            box = (m, 0, bh)
        elif self.operand == "k":
            box = (stage_info.loop_offset, 0, bh // self.group)
        else:
            box = (0, stage_info.loop_offset, bh // self.group)
        steps.tma_load(self.atom, self.views, *box, stage_info.stage_idx, stage_info.barrier)

    @consumer_work
    def qk(self, stage_info: Any) -> None:
        """Issue ``S = Q K^T`` on the waited K stage."""
        steps.qk(self.math.qk_mma, self.math.state, stage_info.stage_idx)

    @consumer_work
    def pv(self, stage_info: Any) -> None:
        """Issue ``O += P V`` on the waited V stage."""
        steps.pv(self.math.pv_mma, self.math.state, stage_info.stage_idx)

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

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    def setup(self, stage_info: Any) -> None:
        """Once per thread: the epilogue views."""
        mw = self.math
        self.views = steps.store_setup(
            self.cfg, mw.pv_mma, mw.state, self.atom, self.gmem, self.smem
        )

    @producer_work
    def store(self, stage_info: Any) -> None:
        """Normalise ``O``, write it and the LSE for the work tile."""
        m, bh, _ = stage_info.work_tile.tile_idx
        mw = self.math
        steps.store(self.cfg, mw.state, self.views, self.atom, self.lse, m, bh, mw.seqlen)

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    def drain(self, stage_info: Any) -> None:
        """Before exit: the TMA stores have read SMEM."""
        steps.store_drain(self.views)


class AttentionTask(Task):
    """A task whose KV loop runs over the KV blocks its query tile sees."""

    def __init__(self, *args: Any, cfg: AttentionConfig, seqlen: Any, **kwargs: Any) -> None:
        self.cfg = cfg
        self.seqlen = seqlen
        super().__init__(*args, **kwargs)

    def kv_blocks(self, work_tile_coord: Any) -> Any:
        """KV blocks of query tile ``work_tile_coord[0]``: all, or up to the diagonal."""
        return kv_blocks(self.cfg, self.seqlen, work_tile_coord[0])


def kv_blocks(cfg: AttentionConfig, seqlen: Any, m: Any) -> Any:
    """KV blocks that query tile ``m`` sees (Python ints or DSL values).

    Every block up to ``ceil(S / BN)``; with ``causal`` only those up to the one that holds
    the tile's last row's key (``(64 m + 63) // BN``): the KV loop is shorter per tile.
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


def kv_step(k: ResourceProxy, v: ResourceProxy, mw: ResourceProxy) -> None:
    """One KV block of a math warpgroup: QK^T, softmax, PV; each stage back once retired."""
    k.wait()
    k.qk()
    k.mma_wait_all()  # S is needed in registers, and the K stage is free
    k.release()
    mw.softmax()
    v.wait()
    v.pv()
    v.mma_wait_all()  # the next softmax rescales O: the PV MMAs must be done
    v.release()


KvStep = Callable[[ResourceProxy, ResourceProxy, ResourceProxy], None]


def math_schedule(mine: Any, step: KvStep = kv_step) -> Callable[..., Schedule]:
    """A math warpgroup's schedule over its turns (``mine``: when_false / when_true)."""

    @schedule
    def attend(
        wq: ResourceProxy,
        turns: ResourceProxy,
        q: ResourceProxy,
        k: ResourceProxy,
        v: ResourceProxy,
        mw: ResourceProxy,
        out: ResourceProxy,
    ) -> None:
        mw.setup()
        out.setup()
        n = turns.start()
        with work_tile_loop(wq):
            n, odd = turns.take(count=n)
            with mine(odd, key="odd"):
                mw.begin()
                q.wait()
                with domain_loop(AttentionTask.kv_blocks, unroll=1):
                    step(k, v, mw)
                q.release()  # every MMA that read Q retired in the loop
                out.store()
        out.drain()

    return attend


@schedule
def load(
    wq: ResourceProxy,
    turns: ResourceProxy,
    q0: ResourceProxy,
    k0: ResourceProxy,
    v0: ResourceProxy,
    q1: ResourceProxy,
    k1: ResourceProxy,
    v1: ResourceProxy,
) -> None:
    """The producer warp: per tile, Q once, then K and V of every KV block, into the rings of
    the warpgroup whose turn it is."""
    for ring in (q0, k0, v0, q1, k1, v1):
        ring.setup()
    n = turns.start()
    with work_tile_loop(wq):
        n, odd = turns.take(count=n)
        for mine, (q, k, v) in ((when_false, (q0, k0, v0)), (when_true, (q1, k1, v1))):
            with mine(odd, key="odd"):
                q.acquire()
                q.load()
                q.commit()
                with domain_loop(AttentionTask.kv_blocks, unroll=1):
                    k.acquire()
                    k.load()
                    k.commit()
                    v.acquire()
                    v.load()
                    v.commit()


# ---------------------------------------------------------------------------------------------
# the kernel
# ---------------------------------------------------------------------------------------------


def attention_kernel(
    cfg: AttentionConfig,
    step: KvStep = kv_step,
    turns_of: tuple[Any, Any] = (when_false, when_true),
) -> Kernel:
    """The TS attention kernel for ``cfg``: a load task and two math tasks in ping-pong.

    ``step`` replaces the math tasks' KV-block body and ``turns_of`` their turn guards
    (tests build deliberately broken schedules with them).
    """

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
        prefetch_tma(k, atom_q, atom_k, atom_v, atom_o, warp=LOAD_WARP)
        seqlen = k.value("seqlen", lambda: cute.size(t_k, mode=[0]))
        wq = tile_queue(params)
        turns = TileTurns(name="turns")
        d, bn = cfg.head_dim, cfg.block_n
        q_bytes, kv_bytes = cfg.q_bytes, steps.STAGE_BYTES
        rings: list[OperandRing] = []
        tasks: list[Task] = []
        graph: dict[Any, list[Any]] = {}
        for wg in range(2):
            s_q, s_k, s_v, s_o = (k.smem_tensor(cfg.element, lay) for lay in (l_q, l_k, l_v, l_o))
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
            )

            def ring(
                op: str, stages: int, size: int, atom: Any, g: Any, s: Any, box: Any, mw: Any = mw
            ) -> Any:
                return OperandRing(
                    name=f"{op}{mw.wg}",
                    pipeline_config=ring_pipeline(stages, size),
                    operand=op,
                    atom=atom,
                    gmem=g,
                    smem=s,
                    box=box,
                    group=cfg.group,
                    math=mw,
                )

            q = ring("q", 1, q_bytes, atom_q, t_q, s_q, (BLOCK_M, d))
            kr = ring("k", cfg.stages, kv_bytes, atom_k, t_k, s_k, (bn, d))
            vr = ring("v", cfg.stages, kv_bytes, atom_v, t_v, s_v, (d, bn))
            out = Output(name=f"o{wg}", cfg=cfg, math=mw, atom=atom_o, gmem=t_o, smem=s_o, lse=lse)
            rings += [q, kr, vr]
            tasks.append(
                AttentionTask(
                    [wq, turns, q, kr, vr, mw],
                    [out],
                    (1 + wg) * WARPGROUP // 32,
                    WARPGROUP // 32,
                    schedule=math_schedule(turns_of[wg], step)(wq, turns, q, kr, vr, mw, out),
                    num_registers=CONSUMER_REGS,
                    name=f"math{wg}",
                    cfg=cfg,
                    seqlen=seqlen,
                )
            )
            graph[out] = [q, kr, vr, mw, wq, turns]
        for r in rings:
            graph[r] = [wq, turns]
        producer = AttentionTask(
            [wq, turns],
            list(rings),
            LOAD_WARP,
            1,
            schedule=load(wq, turns, *rings),
            num_registers=PRODUCER_REGS,
            name="load",
            cfg=cfg,
            seqlen=seqlen,
        )
        return Tasks([producer, *tasks], graph)

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
            grid=params.get_grid_shape(SMS),
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
