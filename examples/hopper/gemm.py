"""Warp-specialized persistent Hopper GEMM (``C = A @ B^T``) through TS, and its hand-written twin.

``A`` is ``M x K`` and ``B`` is ``N x K``; by default both are K-contiguous ("TN"); ``C`` is
``M x N`` row-major. Inputs are fp16 or bf16 (``C`` has the input dtype) or FP8 e4m3
(``--dtype fp8``: K-major A and B only, ``C`` bf16); the accumulator is fp32.

Options (``GemmConfig``, all compile-time):

* ``layout`` (``--layout``): operand majors in BLAS / CUTLASS letters, A first, B read as the
  ``K x N`` operand: ``tn`` A and B K-major (default), ``nn`` A M-major (a ``K x M`` row-major
  buffer), ``tt`` B N-major (a ``K x N`` row-major buffer), ``nt`` both MN-major. MN-major
  operands are TMA-loaded into MN-major swizzled SMEM and read by WGMMA as such (16-bit types).
* fused epilogue (``--alpha``, ``--beta``, ``--bias``):
  ``C = alpha * (A @ B^T) + beta * C + bias[n]``, computed in fp32. ``C`` is in and out (the
  old tile is read, with predicated per-thread global loads, before it is overwritten); the
  bias is an ``N``-vector of the input dtype, a kernel argument only with ``--bias``. The
  default (``alpha = 1``, ``beta = 0``, no bias) emits exactly the plain epilogue.
* scales (``--scale``): ``tensor`` multiplies the accumulator by ``scale_a * scale_b`` (two
  one-element fp32 tensors), ``rowwise`` by ``scale_a[m] * scale_b[n]`` (fp32 ``M``- and
  ``N``-vectors), in the epilogue before ``alpha``; extra kernel arguments only then. FP8
  GEMMs take them as ``torch._scaled_mm`` does.
* tiles ``128x256``, ``256x128``, ``128x192``, ``128x128`` (two consumer warpgroups, 384
  threads; on ``256x128`` each issues two m64 WGMMAs per K step) and
  ``64x256``, ``64x128`` (one consumer warpgroup, 256 threads). ``--kernel pingpong``: two
  math warpgroups take the CTA's tiles in turns, each alone on its tile (64-row tiles,
  ``128x128`` or ``128x192``: two m64 WGMMAs per K step), with its own epilogue buffers, so
  one's epilogue runs under the other's main loop; both read the one A/B ring.
* ``promote_every`` (``--promote-every``): FP8 two-level accumulation, the WGMMA accumulator
  added into a second fp32 register tile every that many K blocks (default 4 for FP8 on tiles
  of at most 96 accumulator values a thread: 128x192, 128x128, 64x128, ping-pong 64x192 and
  64x128; else off).
* ``split_k`` (``--split-k``): each tile's K blocks in that many chunks, each ``(tile, chunk)``
  a work item; the tile's last item sums the fp32 partials in chunk order (a global workspace,
  a per-tile counter) and writes C.
* ``tail_split`` (``--tail-split``): the same, for the tiles of the last, ragged round of the
  persistent schedule only (``T mod 132`` of ``T`` tiles); the others run whole.
* ``stream_k`` (``--stream-k on``): the last round's K blocks shared out evenly between the
  clusters instead (at most two pieces each); the last piece to arrive at a tile sums its
  pieces in worker order and writes C.
* ``--config auto`` (the default) takes the schedule options (tile, cluster, kernel,
  scheduler, stages, swizzle, raster, epilogue sub-tile, split-K) from the per-shape table
  ``gemm_table.json`` written by ``gemm_tune.py`` (``_gemm_table.pick``); the options given on
  the command line override it, ``--config default`` ignores it.

One CTA per SM (or per cluster slot) walks its output tiles in CUTLASS's persistent tile order
(``task_scheduling.tiles.TileRaster``). Warpgroup 0 is the producer: it gives registers back
(``setmaxnreg.dec 40``) and its warp 0 TMA-loads the ``BM x BK`` slice of ``A`` and the ``BN x BK``
slice of ``B`` of each K block (``BK``: 128 bytes, 64 16-bit or 128 FP8 elements) into a
multi-stage SMEM ring (``PipelineTmaAsync``; with a cluster the slices are multicast: ``A`` to the
CTAs of the same cluster row, ``B`` to those of the same column). The ``BM / 64`` warpgroups after
it are the consumers, cooperative on one ``BM x BN`` tile: each one issues the WGMMAs of 64 rows
(two of them take ``setmaxnreg.inc 232``; a single one keeps its initial registers, already more
than it needs). Per K block they wait for the stage, issue its WGMMAs, commit, wait until at most
one WGMMA group is in flight and then release the *previous* stage (a release state that lags the
read state by one), so the tensor cores always have the next block queued. The epilogue converts
the accumulator to the output dtype ``BM x 32`` sub-tile by sub-tile through a small ring of SMEM
buffers and one thread TMA-stores each sub-tile (ragged ``M``/``N`` are clipped by the store, a
ragged ``K`` is zero-filled by the loads).

The TS kernel (this file) is one declaration on TS building blocks (``ts_runtime.blocks``:
``WgmmaRing``, ``WgmmaAccumulator``, ``TmaEpilogue``, ``TileTurns``, ``tile_queue``), traced,
planned and verified on the host and called again inside the generated kernel with the real
values. The hand-written twin (``_gemm_twin.py``) is plain CuTe DSL around small step helpers
(``load_k_block``, ``mma_k_block`` ... in ``_gemm_steps.py``, which also holds the
trace-time builders; ``GemmConfig`` in ``_gemm_config.py``; ``epilogue_store`` and the fused
epilogue step both use in ``_gemm_epilogue.py``; two-level accumulation in
``_gemm_promote.py``, split-K in ``_gemm_split.py``); ``_gemm_host.py`` holds the inputs, the
torch reference and timing, ``_gemm_cli.py`` the command-line options.

Usage::

    python examples/hopper/gemm.py --compile-only            # CPU: PTX instruction counts
    python examples/hopper/gemm.py --mnk 8192 8192 8192      # GPU: run, check, TFLOP/s
    python examples/hopper/gemm.py --mnk 8192 8192 8192 --config default   # no table
    python examples/hopper/gemm.py --mnk 1000 1500 700 --tile 128x128 --cluster 2x1
    python examples/hopper/gemm.py --mnk 1003 1501 707 --layout nt --alpha 0.5 --beta 1 --bias
    python examples/hopper/gemm.py --mnk 8192 8192 8192 --dtype fp8 --scale rowwise
    python examples/hopper/gemm.py --mnk 128 8192 8192 --tile 128x128 --split-k 2
    python examples/hopper/gemm.py --mnk 3000 5000 4000 --config default --tail-split 2
    python examples/hopper/gemm.py --mnk 8192 8192 8192 --stream-k on
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
from _gemm_cli import add_config_args, config_for
from _gemm_config import DEFAULT_MNK, GEMM_KINDS, LOAD_WARP, PRODUCER_REGS, WARPGROUP, GemmConfig

# The configuration and steps, the twins and the host helpers live beside this file.
from _gemm_epilogue import epilogue_fuse
from _gemm_host import (
    OPERANDS,
    compile_args,
    fake_operands,
    kernel_args,
    make_bias,
    make_counters_tensor,
    make_inputs,
    make_output,
    make_scales,
    make_workspace,
    run_case,
    used_operands,
)
from _gemm_promote import make_fresh_mma
from _gemm_split import item_blocks, stream_blocks, stream_first_block, tail_chunk_blocks
from _gemm_steps import (
    chunk_blocks,
    make_scheduler_params,
    make_smem_layouts,
    make_tiled_mma,
    make_tma_atoms,
)
from _gemm_twin import (
    twin_kernel,
    twin_pingpong_kernel,
)
from _gpu_check import gpu_ready
from cuda.bindings import driver as cuda  # type: ignore[import-untyped]
from cutlass.base_dsl.ast_helpers import const_expr
from cutlass.cutlass_dsl import Constexpr

from task_scheduling import domain_loop, schedule, when_false, when_true, work_tile_loop
from task_scheduling.harness import compile_only as compile_and_count
from task_scheduling.kernel import (
    Kernel,
    KernelContext,
    MathTurn,
    RuntimeConfigError,
    SplitK,
    Tasks,
    TileTurns,
    TmaEpilogue,
    TmaSource,
    WgmmaAccumulator,
    WgmmaRing,
    prefetch_tma,
    tile_queue,
)
from task_scheduling.plan import KernelPlan
from task_scheduling.resources import PdlLaunchBarrier, PdlWaitBarrier
from task_scheduling.schedule_builder import ResourceProxy, Schedule
from task_scheduling.task import Task
from task_scheduling.tiles import TileRaster

# ---------------------------------------------------------------------------------------------
# TS kernel: the same schedule, declared once on TS building blocks
# ---------------------------------------------------------------------------------------------


class GemmTask(Task):
    """A GEMM task whose K loops may run a per-item count (a tail split's whole tiles and
    chunks): ``domain_loop(GemmTask.item_blocks)``, the same symbol in both tasks, so the
    verifier proves the ring balanced per item for every count. A ping-pong math task also
    names its accumulator (``acc``): the one ring's MMAs write the calling task's."""

    def __init__(
        self,
        *args: Any,
        blocks: Callable[[Any], Any] | None = None,
        acc: WgmmaAccumulator | None = None,
        **kw: Any,
    ):
        self.blocks = blocks
        self.acc = acc
        super().__init__(*args, **kw)

    def make_task_cache(self) -> object:
        """Ping-pong: the math task's own accumulator, which the shared ring's MMAs write."""
        return self.acc

    def item_blocks(self, work_tile_coord: Any) -> Any:
        """The K blocks of the work item at ``work_tile_coord``."""
        if self.blocks is None:
            raise RuntimeConfigError(
                f"domain_loop(GemmTask.item_blocks) in task {self.name!r}, which has no "
                "per-item K block count",
                task=self.name,
                fix="pass GemmTask(..., blocks=<work tile coord -> K blocks>), or loop over "
                "the kernel value k_tiles",
            )
        return self.blocks(work_tile_coord)


def gemm_kernel(
    cfg: GemmConfig,
    mma: Callable[..., Schedule] | None = None,
    turns_of: tuple[Any, Any] = (when_false, when_true),
) -> Kernel:
    """The TS GEMM for ``cfg``: a load task (warp 0) and one math task per consumer role.

    Cooperative: one math task of ``BM / 64`` warpgroups on the ring; ping-pong: two math tasks
    of one warpgroup, each with its accumulator and epilogue, taking the CTA's tiles in turns
    (both wait for and release every stage of the one ring). With the dynamic scheduler the
    load warp also claims the tiles and hands them to the math task through the queue's ring.
    ``mma`` replaces the cooperative math task's schedule ``(wq, ab, acc, c)``, ``turns_of``
    the ping-pong math tasks' guards (the even tiles', the odd tiles'; each passes over the
    stages of the other's); tests build deliberately broken ones. With ``cfg.pdl`` every task
    waits for the previous kernel on the stream before its tile loop (the math tasks too: with
    K = 0 they store C without ever waiting on the ring) and the load task then lets the next
    kernel launch; a replaced ``mma`` schedule runs without the wait.
    """
    math_tasks = 2 if cfg.pingpong else 1

    def declare(
        k: KernelContext,
        atom_a: Any,
        t_a: Any,
        atom_b: Any,
        t_b: Any,
        atom_c: Any,
        t_c: Any,
        a_layout: Any,
        b_layout: Any,
        c_layout: Any,
        params: Any,
        c_in: Any,
        bias: Any,
        counters: Any,
        scale_a: Any,
        scale_b: Any,
        workspace: Any,
    ) -> Tasks:
        prefetch_tma(k, atom_a, atom_b, atom_c, warp=LOAD_WARP)
        # Split-K: a work item's K loop is its chunk's ceil(k_blocks / split_k) blocks.
        k_tiles = k.value("k_tiles", lambda: chunk_blocks(cfg, t_a))
        blocks: Callable[[Any], Any] | None = None
        bound: Any = k_tiles
        tail_blocks: Any = None
        if cfg.tail:  # a whole tile's k_tiles or a tail chunk's blocks, by the item's L
            tail_blocks = k.value("tail_blocks", lambda: tail_chunk_blocks(cfg, k_tiles))

            def blocks(coord: Any) -> Any:
                return item_blocks(coord[2], cfg.tail_split, k_tiles, tail_blocks)

            bound = GemmTask.item_blocks
        raster: Any = None
        first_block: Callable[[Any], Any] | None = None
        if cfg.stream_k:  # a whole tile's k_tiles or a stream-K piece's, by the item's L
            raster = k.value("raster", lambda: TileRaster.of(params))

            def blocks(coord: Any) -> Any:
                return stream_blocks(raster, coord[2], k_tiles)

            def first_block(coord: Any) -> Any:
                return stream_first_block(raster, coord[2])

            bound = GemmTask.item_blocks
        wq = tile_queue(
            params, counters if cfg.dynamic else None, consumer_threads=cfg.consumer_threads
        )
        turns = [TileTurns(name="turns")] if cfg.pingpong else []
        # PDL: each task's wait for the previous kernel's grid; the load task's launch trigger.
        waits = [
            PdlWaitBarrier(name=f"pdl_wait{i}") for i in range(1 + math_tasks if cfg.pdl else 0)
        ]
        trigger = [PdlLaunchBarrier(name="pdl_launch")] if cfg.pdl else []

        def grid_wait(*pdl: ResourceProxy) -> None:  # before a task's first global access
            if pdl:
                pdl[0].wait_griddep()
            if pdl[1:]:
                pdl[1].launch_griddep()  # the next kernel's CTAs may take the SMs ours leave

        def fuse(acc: Any, thr_mma: Any, m: Any, n: Any) -> None:
            epilogue_fuse(cfg, acc, thr_mma, t_c, c_in, bias, m, n, scale_a, scale_b)

        # One A/B ring; ping-pong: both math tasks read it, each with its accumulator and epilogue.
        s_a, s_b = map(k.smem_tensor, cfg.smem_elements[:2], (a_layout, b_layout))
        accs, outs = [], []
        for i in range(math_tasks):
            tag = str(i) if cfg.pingpong else ""
            s_c = k.smem_tensor(cfg.smem_elements[2], c_layout)
            acc = WgmmaAccumulator(
                name=f"acc{tag}",
                tiled_mma=k.value(f"tiled_mma{tag}", lambda: make_tiled_mma(cfg)),
                tile_mn=cfg.tile_mn,
                smem_a=s_a,
                smem_b=s_b,
                warpgroup=1 + i,
                promote_every=cfg.promotion,
                k_blocks=blocks or k_tiles,
                fresh_mma=k.value(f"fresh_mma{tag}", lambda: make_fresh_mma(cfg))
                if cfg.promotion
                else None,
                promote_stagger=cfg.promote_stagger,
                deferred=cfg.defer_store,
            )
            accs.append(acc)
            outs.append(
                TmaEpilogue(
                    name=f"c{tag}",
                    acc=acc,
                    atom=atom_c,
                    gmem=t_c,
                    smem=s_c,
                    sub_tile=cfg.epi_tile,
                    barrier_id=1 + i,
                    fuse=fuse if cfg.fused_epilogue else None,
                )
            )

        ab = WgmmaRing(
            name="ab",
            pipeline_config=WgmmaRing.pipeline(
                cfg.ab_stages, cfg.stage_bytes, cfg.ring_threads, cfg.cluster_mn
            ),
            a=TmaSource(atom_a, t_a, s_a),
            b=TmaSource(atom_b, t_b, s_b),
            acc=accs[0],  # ping-pong: each math task's own (GemmTask.make_task_cache)
            tile_k=cfg.tile_k,
            chunk_blocks=tail_blocks if cfg.tail else k_tiles if cfg.split_k > 1 else None,
            tail_chunks=cfg.tail_split if cfg.tail else 0,
            first_block=first_block,
        )

        if cfg.split:  # split-K: the partial tiles meet in the workspace, counted per tile
            flag = k.smem_tensor(cutlass.Int32, 1, alignment=4)  # after the tiles, as the twin
            bm = cfg.tile_mn[0]
            bn = cfg.tile_mn[1]
            rows = k.value("tiles_m", lambda: cute.ceil_div(cute.size(t_c, mode=[0]), bm))
            cols = k.value("tiles_n", lambda: cute.ceil_div(cute.size(t_c, mode=[1]), bn))
            chunks = max(cfg.split_k, cfg.tail_split)
            # A tail split's slots are per CTA tile of a tail cluster tile.
            cluster = cfg.cluster_mn if cfg.tail or cfg.stream_k else (1, 1)
            split = SplitK(
                chunks, workspace, counters, flag, rows, cols, 1, cfg.tail, cluster, raster
            )
            accs[0].split = split

        def fill(ab: ResourceProxy) -> None:  # the producer's K loop of a tile
            with domain_loop(bound, unroll=1):
                ab.acquire()
                ab.load()
                ab.commit()

        every = cfg.promotion  # two-level accumulation: promote every this many K blocks

        def math(
            ab: ResourceProxy,
            acc: ResourceProxy,
            c: ResourceProxy,
            turn: ResourceProxy | None = None,
            *,
            before: tuple[Any, Any] | None = None,
            wq: ResourceProxy | None = None,
        ) -> None:  # one tile; `turn`: the math-order token passed after the main loop;
            # `before`: the tile whose store is deferred to this one (acc.no_tile's slots)
            if before is None:
                acc.zero()
            else:
                acc.begin()  # the total is the tile before's until this tile's first group
            with domain_loop(bound, unroll=1) as kb:
                ab.wait()
                ab.mma()
                if before is not None:
                    with kb.first_iter():  # the tile before goes out under these WGMMAs
                        c.store_tile(m=before[0], n=before[1])
                ab.mma_wait_prior()  # the previous K block's MMAs are done ...
                with kb.every(1, start=1):
                    ab.release()  # ... so its stage goes back to the producer
                if every and cfg.promote_stagger:  # each warpgroup at its own groups' ends
                    acc.promote()
                elif every:
                    with kb.every(every, start=every - 1):  # a group's last block: once
                        acc.promote()  # its WGMMAs retired, its sum goes into the fp32 total
                with kb.last_iter():
                    ab.mma_wait_all()
                    ab.release()
            # Again, unconditionally: ptxas cannot tell that the loop exits only through its
            # last iteration, so with the branch's wait alone it sees a path to the epilogue's
            # reads of the accumulator with WGMMAs in flight, and serializes every WGMMA of the
            # kernel (warning C7514). At run time it finds nothing left to wait for.
            ab.mma_wait_all()
            if turn is not None:  # the other warpgroup's next tile may wait on the ring now
                turn.acquire()
                turn.commit()
            if every:
                acc.promote_rest()  # a last group shorter than `every`
            if cfg.split:  # the tile's last chunk to arrive sums the chunks and stores
                last = acc.reduce()
                with when_true(last, key="last"):
                    c.store()
            elif before is not None and wq is not None:  # the next tile stores this one ...
                mine = acc.this_tile()  # ... where there is one (not the CTA's last, K > 0)
                c.store_tile_now(m=mine[0], n=mine[1], last=wq.is_last_tile())
            else:
                c.store()

        @schedule
        def load(wq: ResourceProxy, ab: ResourceProxy, *pdl: ResourceProxy) -> None:
            ab.setup()
            grid_wait(*pdl)
            with work_tile_loop(wq):
                if cfg.dynamic:  # claim the next tile, hand it to the math task
                    wq.acquire()
                    wq.fetch_next_tile()
                    wq.commit()
                fill(ab)

        @schedule
        def mma_tiles(
            wq: ResourceProxy,
            ab: ResourceProxy,
            acc: ResourceProxy,
            c: ResourceProxy,
            *pdl: ResourceProxy,
        ) -> None:
            acc.setup()
            c.setup()
            grid_wait(*pdl)
            # Deferred store: the tile to store, two task-local slots that each tile rewrites
            # (acc.this_tile) for the next one to read.
            tile = acc.no_tile() if cfg.defer_store else None
            with work_tile_loop(wq):
                if cfg.dynamic:
                    wq.wait()
                    wq.read_next_tile()
                    wq.release()
                math(ab, acc, c, before=tile, wq=wq)
            c.drain()

        def pass_over(ab: ResourceProxy) -> None:  # the other math task's tile: its stages
            with domain_loop(bound, unroll=1):
                ab.wait()
                ab.release()

        def skip_over(ab: ResourceProxy, theirs: ResourceProxy) -> None:
            with domain_loop(bound, unroll=1):
                ab.skip_stage()  # the other warpgroup waits for and releases these
            theirs.wait()  # its last wait of the tile is done: ours see exact phases
            theirs.release()

        def mma_turn(mine: Any, theirs: Any) -> Callable[..., Schedule]:
            @schedule
            def mma_turns(
                wq: ResourceProxy,
                turns: ResourceProxy,
                ab: ResourceProxy,
                acc: ResourceProxy,
                c: ResourceProxy,
                *rest: ResourceProxy,  # pingpong-skip: (the turn we take, the one we pass); PDL
            ) -> None:
                order = rest[:2] if cfg.skip_turns else ()
                acc.setup()
                c.setup()
                grid_wait(*rest[len(order) :])
                n = turns.start()
                with work_tile_loop(wq):
                    n, odd = turns.take(count=n)
                    with mine(odd, key="odd"):
                        math(ab, acc, c, *order[1:])
                    with theirs(odd, key="odd"):
                        if order:
                            skip_over(ab, order[0])
                        else:  # wait for and release the other's stages (exact phases)
                            pass_over(ab)
                c.drain()

            return mma_turns

        # The load warp reads the queue (static) or fills its hand-over ring (dynamic).
        queue_in, queue_out = ([], [wq]) if cfg.dynamic else ([wq], [])
        tasks = [
            GemmTask(
                [*queue_in, *waits[:1]],
                [ab, *queue_out, *trigger],
                LOAD_WARP,
                1,
                schedule=load(wq, ab, *waits[:1], *trigger),
                num_registers=PRODUCER_REGS,
                name="load",
                blocks=blocks,
            )
        ]
        graph: dict[Any, list[Any]] = {ab: [wq, *waits[:1]], **{t: [] for t in trigger}}
        # pingpong-skip: math-order tokens, t0 passed from mma0 to mma1, t1 back.
        order = [
            MathTurn(name=f"t{i}", pipeline_config=MathTurn.pipeline(WARPGROUP))
            for i in range(2 if cfg.skip_turns else 0)
        ]
        graph.update({t: [ab] for t in order})
        for i, (acc, c) in enumerate(zip(accs, outs, strict=True)):
            taken, passed = order[1 - i : 2 - i], order[i : i + 1]
            wait = waits[1 + i : 2 + i] if mma is None else []
            if cfg.pingpong:
                turn = mma_turn(turns_of[i], turns_of[1 - i])
                sched = turn(wq, *turns, ab, acc, c, *taken, *passed, *wait)
            else:
                sched = mma(wq, ab, acc, c) if mma else mma_tiles(wq, ab, acc, c, *wait)
            tasks.append(
                GemmTask(
                    [wq, *turns, ab, acc, *taken, *wait],
                    [c, *passed],
                    (1 + i) * WARPGROUP // 32,
                    cfg.consumer_threads // 32,
                    schedule=sched,
                    num_registers=cfg.consumer_regs,
                    name=f"mma{i}" if cfg.pingpong else "mma",
                    blocks=blocks,
                    acc=acc if cfg.pingpong else None,
                )
            )
            graph[c] = [ab, acc, wq, *turns, *wait]
        return Tasks(tasks, graph)

    name = "gemm_pingpong" if cfg.pingpong else "gemm"
    kernel = Kernel(declare, name=name, block_warps=cfg.block_threads // 32)
    kernel.launcher(_launcher(cfg, kernel.launch))
    return kernel


def make_plan(
    cfg: GemmConfig | None = None,
    mma: Callable[..., Schedule] | None = None,
    turns_of: tuple[Any, Any] = (when_false, when_true),
) -> KernelPlan:
    """The kernel plan on the host (no GPU, no DSL values), verified.

    ``mma`` replaces the cooperative math task's schedule, ``turns_of`` the ping-pong math
    tasks' guards (see ``gemm_kernel``).

    Raises:
        ts_verify.VerificationError: The verifier rejects the plan.
    """
    kernel = gemm_kernel(cfg or GemmConfig(), mma, turns_of)
    kernel.verify().report.raise_for_errors()
    return kernel.plan().plan


# ---------------------------------------------------------------------------------------------
# host side
# ---------------------------------------------------------------------------------------------


def _launcher(cfg: GemmConfig, start: Callable[..., None]) -> Any:
    """A ``@cute.jit`` ``launch(a, b, c, bias, counters, stream=None, scale_a=None,
    scale_b=None, workspace=None)`` specialised to ``cfg``.

    It builds the TMA atoms, the SMEM layouts and the scheduler parameters and hands them to
    ``start(*values, grid=, block=, cluster=)``: a staged kernel's ``launch`` or the twin's.
    ``bias`` is None unless ``cfg.bias``; the kernel gets ``c`` a second time (as the old C)
    only when ``cfg.beta != 0``, the counters only with the dynamic scheduler (two) or split-K
    (one per output tile, ``make_counters_tensor``), the fp32 scales only with ``cfg.scale``
    (one element each for ``"tensor"``, the ``M``- and ``N``-vector for ``"rowwise"``), the
    fp32 workspace only with split-K (``make_workspace``). A parameter ``cfg`` does not use is
    a compile-time None: the compiled launcher takes only ``used_operands(cfg)``, in order.
    """

    def launch(
        a: cute.Tensor,
        b: cute.Tensor,
        c: cute.Tensor,
        bias: cute.Tensor | None,
        counters: cute.Tensor | None,
        stream: cuda.CUstream | None = None,
        scale_a: cute.Tensor | None = None,
        scale_b: cute.Tensor | None = None,
        workspace: cute.Tensor | None = None,
    ) -> None:
        layouts = make_smem_layouts(cfg)
        atom_a, t_a, atom_b, t_b, atom_c, t_c = make_tma_atoms(cfg, a, b, c, layouts)
        m, n = cute.size(c, mode=[0]), cute.size(c, mode=[1])
        params = make_scheduler_params(cfg, m, n, chunk_blocks(cfg, t_a))
        grid = params.get_grid_shape(cfg.max_active_clusters)
        start(
            atom_a,
            t_a,
            atom_b,
            t_b,
            atom_c,
            t_c,
            *layouts,
            params,
            c if const_expr(cfg.beta != 0.0) else None,
            bias if const_expr(cfg.bias) else None,
            counters if const_expr(cfg.dynamic or cfg.split) else None,
            scale_a if const_expr(cfg.scaled) else None,
            scale_b if const_expr(cfg.scaled) else None,
            workspace if const_expr(cfg.split) else None,
            grid=grid,
            block=(cfg.block_threads, 1, 1),
            cluster=(*cfg.cluster_mn, 1),
            stream=stream,
            use_pdl=cfg.pdl,
        )

    # The parameters cfg does not use are compile-time Nones (Constexpr): not arguments of the
    # compiled launcher, so a call passes (and the DSL packs) only what the kernel reads.
    used = used_operands(cfg)
    launch.__annotations__ = {
        name: (
            (cuda.CUstream | None if name == "stream" else cute.Tensor)
            if name in used
            else Constexpr
        )
        for name in OPERANDS
    } | {"return": None}
    return cute.jit(launch)


def _twin_launcher(cfg: GemmConfig) -> Any:
    """The hand-written twin's launcher (its kernels also take the tiled MMA and ``cfg``)."""
    twin = twin_pingpong_kernel if cfg.pingpong else twin_kernel

    def start(*values: Any, **launch: Any) -> None:
        if not launch["use_pdl"]:
            launch.pop("use_pdl")
        if launch.get("stream") is None:
            launch.pop("stream", None)  # the default stream
        twin(*values[:6], make_tiled_mma(cfg), *values[6:], cfg).launch(**launch)

    return _launcher(cfg, start)


def kernels(cfg: GemmConfig) -> tuple[tuple[str, Any], ...]:
    """The kernels of this example as ``(name, @cute.jit launcher(a, b, c, bias, counters))``."""
    return (("ts", gemm_kernel(cfg).jit_launcher), ("twin", _twin_launcher(cfg)))


def compile_only(cfg: GemmConfig | None = None) -> dict[str, Any]:
    """Verify the TS plan, compile both kernels for sm_90a with fake tensors; count PTX.

    ``ts`` / ``twin``: instructions per kind (the harness's kinds and ``GEMM_KINDS``), with
    ``ts_total`` / ``twin_total``; ``verified``: the host plan verified (raises otherwise);
    ``same_counts``: equal counts per kind and in total.
    """
    cfg = cfg or GemmConfig()
    fields = {"config": dataclasses.asdict(cfg), "ab_stages": cfg.ab_stages}
    out = compile_and_count(
        "gemm", kernels(cfg), fake_operands(cfg), plan=make_plan(cfg), ops=True, **fields
    )
    for name in ("ts", "twin"):
        ops = out.pop(f"{name}_ops")
        for kind in GEMM_KINDS:  # a kind counts every opcode that starts with it
            out[name][kind] = sum(
                n for op, n in ops.items() if op == kind or op.startswith(kind + ".")
            )
    out["same_counts"] = out["ts"] == out["twin"] and out["ts_total"] == out["twin_total"]
    return out


@dataclasses.dataclass(frozen=True)
class CheckedLaunch:
    """A compiled GEMM launcher that refuses a call with the wrong number of operands.

    The compiled function takes only ``used_operands(cfg)``; the DSL would take a call with
    more (say, the nine arguments of every operand) as extra auxiliary arguments, silently.
    """

    cfg: GemmConfig
    compiled: Any
    operands: tuple[str, ...]

    def __call__(self, *args: Any) -> Any:
        if len(args) != len(self.operands):
            raise RuntimeConfigError(
                f"the GEMM launcher of this GemmConfig takes {len(self.operands)} arguments "
                f"({', '.join(self.operands)}), given {len(args)}",
                resource="gemm",
                fix="build them with _gemm_host.kernel_args(cfg, a, b, c, ...), which leaves out "
                "the operands the configuration does not use",
            )
        return self.compiled(*args)


def compile_for_gpu(cfg: GemmConfig, only: tuple[str, ...] = ()) -> dict[str, Any]:
    """Compile every kernel once (dynamic shapes) on sample tensors: ``{name: launcher}``
    (``CheckedLaunch``).

    ``only`` names the kernels to compile (``("ts",)``: the TS kernel alone); all by default.
    Compiled with a stream parameter (``kernel_args``): each call launches on the stream given.
    """
    a, b = make_inputs(cfg, (256, 256, 64 * cfg.split_k))
    c, bias = make_output(cfg, 256, 256), make_bias(cfg, 256)
    counters, workspace = make_counters_tensor(cfg, 256, 256), make_workspace(cfg, 256, 256)
    scales = make_scales(cfg, 256, 256)
    args = compile_args(cfg, kernel_args(cfg, a, b, c, bias, counters, *scales, workspace))
    return {
        name: CheckedLaunch(cfg, cute.compile(fn, *args), used_operands(cfg))
        for name, fn in kernels(cfg)
        if not only or name in only
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compile-only", action="store_true", help="CPU: compile, count PTX")
    parser.add_argument(
        "--mnk", type=int, nargs=3, default=list(DEFAULT_MNK), metavar=("M", "N", "K")
    )
    parser.add_argument("--iters", type=int, default=20, help="timed launches (GPU run)")
    add_config_args(parser)
    args = parser.parse_args(argv)
    mnk = (args.mnk[0], args.mnk[1], args.mnk[2])
    try:
        # --config auto (the default): the per-shape table's schedule for this shape
        cfg, source = config_for(args, mnk)
    except ValueError as e:  # GemmConfig's checks (typed TS errors among them): a usage error
        parser.error(str(e))
    if args.compile_only:
        out = compile_only(cfg)
        out["config_source"] = source
        print(json.dumps(out, sort_keys=True))
        twin = out["twin"]
        needed = ("wgmma.mma_async", "cp.async.bulk.tensor", "setmaxnreg")
        return 0 if out["same_counts"] and all(twin[kind] > 0 for kind in needed) else 1
    if not gpu_ready(__file__):
        return 2
    compiled = compile_for_gpu(cfg)
    out = run_case(cfg, compiled, mnk, args.iters)
    out["config_source"] = source
    print(json.dumps(out, sort_keys=True))
    return 0 if all(out[name]["ok"] for name in compiled) else 1


if __name__ == "__main__":
    sys.exit(main())
