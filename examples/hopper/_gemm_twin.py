"""The Hopper GEMM's hand-written twins: the pipeline / state / loop skeleton around the steps.

``twin_kernel`` (cooperative) and ``twin_pingpong_kernel``: plain CuTe DSL, the same schedule
as the TS kernels of ``gemm.py``, calling the same step helpers (``_gemm_steps``).
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe
from _gemm_config import LOAD_WARP, PRODUCER_REGS, QUEUE_STAGES, STORE_WARP, WARPGROUP, GemmConfig
from _gemm_epilogue import epilogue_drain, epilogue_store
from _gemm_promote import (
    group_end,
    group_shift,
    make_fresh_mma,
    mma_promote,
    mma_promote_rest,
)
from _gemm_split import (
    item_blocks,
    split_reduce,
    stream_blocks,
    stream_first_block,
    stream_reduce,
    tail_chunk_blocks,
    tail_reduce,
)
from _gemm_steps import (
    chunk_blocks,
    cluster_coord,
    epilogue_barrier,
    is_last_tile,
    load_k_block,
    make_ab_pipeline,
    make_accumulator,
    make_epilogue_views,
    make_mma_fragments,
    make_scheduler,
    make_tiled_mma,
    mcast_masks,
    mma_begin_tile,
    mma_k_block,
    mma_wait,
    next_scheduler,
    partition_ab_for_tma,
)
from cutlass.base_dsl.ast_helpers import const_expr
from cutlass.cute.nvgpu import cpasync
from cutlass.cutlass_dsl import Constexpr, not_
from cutlass.memory import SmemAllocator

from task_scheduling.tiles import TileRaster

# ---------------------------------------------------------------------------------------------
# Hand-written twin: the pipeline / state / loop skeleton around the steps
# ---------------------------------------------------------------------------------------------


@cute.jit
def _grid_dependency(cfg: Constexpr[GemmConfig], trigger: Constexpr[bool]) -> None:
    """PDL: a warp role waits for the previous kernel's grid before its first global access
    (with K = 0 the math warps store C without waiting on the ring); the load warp then lets
    the next kernel launch."""
    if const_expr(cfg.pdl):
        cute.arch.griddepcontrol_wait()
        if const_expr(trigger):
            cute.arch.griddepcontrol_launch_dependents()


@cute.jit
def _load_tiles(
    cfg: Constexpr[GemmConfig],
    pipe: Any,
    atom_a: Any,
    atom_b: Any,
    t_a: Any,
    t_b: Any,
    s_a: Any,
    s_b: Any,
    coord: Any,
    params: Any,
    k_tiles: Any,
    tail_blocks: Any = None,
    qpipe: Any = None,
    slots: Any = None,
    ctr: Any = None,
) -> None:
    """The load warp: every tile's K blocks into the A/B ring, in the scheduler's order.

    With the dynamic scheduler it also claims the next tile and hands it over (``qpipe``,
    ``slots``, the counters ``ctr``); with split-K or a tail split a work item loads its chunk.
    """
    _grid_dependency(cfg, True)
    ta_g, ta_s, tb_g, tb_s = partition_ab_for_tma(cfg, atom_a, atom_b, t_a, t_b, s_a, s_b, coord)
    mask_a, mask_b = mcast_masks(cfg, coord)
    state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, cfg.ab_stages)
    qstate = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, QUEUE_STAGES)
    sched = make_scheduler(params)
    tile = sched.tile()
    while tile.is_valid_tile:
        nxt = cutlass.Int32(0)
        if const_expr(cfg.dynamic):
            # Claim the next tile (lane 0), publish it for the consumers, count this CTA
            # out after its last claim (the last CTA out zeroes the counters).
            qpipe.producer_acquire(qstate)
            lane = cute.arch.lane_idx()
            claimed = cutlass.Int32(0)
            if lane == 0:
                claimed = cutlass.Int32(
                    cute.arch.atomic_add(ctr.iterator, cutlass.Int32(1), sem="relaxed", scope="gpu")
                )
            nxt = cute.arch.shuffle_sync(claimed, 0) + sched.num_ctas
            if lane == 0:
                slots[qstate.index] = nxt
            total = params.num_tiles
            if nxt >= total:  # noqa: SIM102 (DSL: no `and` on dynamic values)
                if lane == 0:
                    done = cute.arch.atomic_add(
                        ctr.iterator + 1, cutlass.Int32(1), sem="acq_rel", scope="gpu"
                    )
                    active = cutlass.min(sched.num_ctas, total)  # type: ignore[attr-defined]
                    if cutlass.Int32(done) == active - 1:
                        cute.arch.atomic_exch(
                            ctr.iterator, cutlass.Int32(0), sem="relaxed", scope="gpu"
                        )
                        cute.arch.atomic_exch(
                            ctr.iterator + 1, cutlass.Int32(0), sem="relaxed", scope="gpu"
                        )
            qpipe.producer_commit(qstate)
            qstate.advance()
        m, n, chunk = tile.tile_idx
        blocks = k_tiles
        if const_expr(cfg.tail):  # a whole tile or a tail chunk, by the L coordinate
            blocks = item_blocks(chunk, cfg.tail_split, k_tiles, tail_blocks)
        if const_expr(cfg.stream_k):  # a whole tile or a stream-K piece, by the L coordinate
            blocks = stream_blocks(params, chunk, k_tiles)
        for k in cutlass.range(blocks, unroll=1):  # type: ignore[attr-defined]
            pipe.producer_acquire(state)
            kb = k
            if const_expr(cfg.split_k > 1):
                kb = chunk * k_tiles + k  # the work item's chunk of K blocks
            if const_expr(cfg.tail):  # the chunk is l mod tail_split (0: a whole tile)
                kb = (chunk % cfg.tail_split) * tail_blocks + k
            if const_expr(cfg.stream_k):  # where the piece starts
                kb = stream_first_block(params, chunk) + k
            load_k_block(
                atom_a,
                atom_b,
                ta_g,
                ta_s,
                tb_g,
                tb_s,
                m,
                n,
                kb,
                state.index,
                pipe.producer_get_barrier(state),
                mask_a,
                mask_b,
            )
            pipe.producer_commit(state)
            state.advance()
        sched = next_scheduler(cfg, sched, nxt)
        tile = sched.tile()
    if const_expr(cfg.cluster_size > 1):
        # Do not exit while a peer may still arrive on (multicast into) this ring.
        pipe.producer_tail(state)


@cute.kernel
def twin_kernel(
    atom_a: cute.CopyAtom,
    t_a: cute.Tensor,
    atom_b: cute.CopyAtom,
    t_b: cute.Tensor,
    atom_c: cute.CopyAtom,
    t_c: cute.Tensor,
    tiled_mma: cute.TiledMma,
    a_layout: cute.ComposedLayout,
    b_layout: cute.ComposedLayout,
    c_layout: cute.ComposedLayout,
    params: TileRaster,
    c_in: cute.Tensor | None,
    bias: cute.Tensor | None,
    counters: cute.Tensor | None,
    scale_a: cute.Tensor | None,
    scale_b: cute.Tensor | None,
    workspace: cute.Tensor | None,
    cfg: Constexpr[GemmConfig],
) -> None:
    """The persistent warp-specialized GEMM: producer warpgroup 0, consumer warpgroups 1 (-2)."""
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp == LOAD_WARP:
        cpasync.prefetch_descriptor(atom_a)
        cpasync.prefetch_descriptor(atom_b)
        cpasync.prefetch_descriptor(atom_c)

    alloc = SmemAllocator()
    s_a = alloc.allocate_tensor(cfg.element, a_layout.outer, 1024, swizzle=a_layout.inner)
    s_b = alloc.allocate_tensor(cfg.element, b_layout.outer, 1024, swizzle=b_layout.inner)
    s_c = alloc.allocate_tensor(cfg.out_element, c_layout.outer, 1024, swizzle=c_layout.inner)
    flag: Any = None  # split-K: whether this CTA sums the tile, told to every consumer
    if const_expr(cfg.split):
        flag_ptr = alloc.allocate_array(cutlass.Int32, num_elems=1, byte_alignment=4)
        flag = cute.make_tensor(flag_ptr, cute.make_layout(1))
    k_tiles = chunk_blocks(cfg, t_a)  # split-K: the blocks of one chunk
    tail_blocks: Any = None  # tail split: the blocks of a tail chunk (a whole tile: k_tiles)
    if const_expr(cfg.tail):
        tail_blocks = tail_chunk_blocks(cfg, k_tiles)
    tiles_m: Any = None  # split-K: tile (m, n) is counted at m + n * tiles_m
    tiles_n: Any = None  # (the scheduler's swizzle padding adds tiles past them)
    if const_expr(cfg.split):
        tiles_m = cute.ceil_div(cute.size(t_c, mode=[0]), cfg.tile_mn[0])
        tiles_n = cute.ceil_div(cute.size(t_c, mode=[1]), cfg.tile_mn[1])
    bars = alloc.allocate_array(cutlass.Int64, num_elems=2 * cfg.ab_stages, byte_alignment=8)
    pipe = make_ab_pipeline(cfg, bars)
    qpipe: Any = None
    slots: Any = None
    ctr: Any = counters
    if const_expr(cfg.dynamic):
        qbars = alloc.allocate_array(cutlass.Int64, num_elems=2 * QUEUE_STAGES, byte_alignment=8)
        qpipe = cpipe.PipelineAsync.create(
            num_stages=QUEUE_STAGES,
            producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 32),
            consumer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, cfg.consumer_threads),
            barrier_storage=qbars,
            defer_sync=True,
        )
        slot_ptr = alloc.allocate_array(cutlass.Int32, num_elems=QUEUE_STAGES, byte_alignment=4)
        slots = cute.make_tensor(slot_ptr, cute.make_layout(QUEUE_STAGES))
    if const_expr(cfg.cluster_size > 1):
        # Barrier init must be visible cluster-wide before any peer multicasts into this CTA.
        cpipe.pipeline_init_arrive(cluster_shape_mn=cfg.cluster_mn, is_relaxed=True)
        cpipe.pipeline_init_wait(cluster_shape_mn=cfg.cluster_mn)
    else:
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
    coord = cluster_coord(cfg)

    if warp < WARPGROUP // 32:
        cute.arch.setmaxregister_decrease(PRODUCER_REGS)
    if warp < LOAD_WARP + 1:
        _load_tiles(
            cfg,
            pipe,
            atom_a,
            atom_b,
            t_a,
            t_b,
            s_a,
            s_b,
            coord,
            params,
            k_tiles,
            tail_blocks,
            qpipe,
            slots,
            ctr,
        )
    if (warp >= WARPGROUP // 32) & (warp < cfg.block_threads // 32):
        if const_expr(cfg.consumer_regs is not None):
            cute.arch.setmaxregister_increase(cfg.consumer_regs)
        _grid_dependency(cfg, False)
        consumer_wg = cute.arch.make_warp_uniform(tidx // WARPGROUP) - 1
        t_ra, t_rb = make_mma_fragments(tiled_mma, s_a, s_b, consumer_wg)
        acc = make_accumulator(cfg, tiled_mma, consumer_wg)
        summed: Any = None  # two-level accumulation: the fp32 sum of the promoted groups
        fresh_mma: Any = None
        if const_expr(cfg.promotion > 0):
            summed = make_accumulator(cfg, tiled_mma, consumer_wg)
            fresh_mma = make_fresh_mma(cfg)
        shift = group_shift(cfg, consumer_wg)
        out = acc if const_expr(summed is None) else summed
        views = make_epilogue_views(cfg, tiled_mma, out, s_c, tidx - WARPGROUP)
        bar = epilogue_barrier(cfg)
        is_store_warp = warp == STORE_WARP
        read = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, cfg.ab_stages)
        release = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, cfg.ab_stages)
        qstate = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, QUEUE_STAGES)
        sched = make_scheduler(params)
        tile = sched.tile()
        pm, pn = cutlass.Int32(-1), cutlass.Int32(0)  # defer_store: the tile still to store
        if const_expr(cfg.defer_store):
            summed.fill(0.0)  # what a tile without K blocks stores
        late = (bar, is_store_warp, c_in, bias, scale_a, scale_b)
        while tile.is_valid_tile:
            nxt = cutlass.Int32(0)
            if const_expr(cfg.dynamic):
                qpipe.consumer_wait(qstate)
                nxt = cutlass.Int32(slots[qstate.index])
                qpipe.consumer_release(qstate)
                qstate.advance()
            m, n, chunk = tile.tile_idx
            blocks = k_tiles
            if const_expr(cfg.tail):
                blocks = item_blocks(chunk, cfg.tail_split, k_tiles, tail_blocks)
            if const_expr(cfg.stream_k):
                blocks = stream_blocks(params, chunk, k_tiles)
            mma_begin_tile(tiled_mma, acc, summed, not cfg.defer_store)
            for k in cutlass.range(blocks, unroll=1):  # type: ignore[attr-defined]
                pipe.consumer_wait(read)
                stage = read.index
                read.advance()
                mma_k_block(tiled_mma, acc, t_ra, t_rb, stage, k, cfg.promotion, fresh_mma, shift)
                if const_expr(cfg.defer_store):  # noqa: SIM102 (DSL: no dynamic `and`)
                    if k == 0:  # the tile before goes out from the total under these WGMMAs
                        epilogue_store(cfg, views, atom_c, s_c, t_c, pm, pn, *late, pm >= 0)
                # Keep this block's WGMMAs in flight; the previous block's are done, so its
                # stage can go back to the producer (from the second block on).
                mma_wait(1)
                if k >= 1:
                    pipe.consumer_release(release)
                    release.advance()
                if const_expr(cfg.promotion > 0):  # noqa: SIM102 (DSL: no dynamic `and`)
                    if group_end(k, cfg.promotion, shift):  # its WGMMAs retire, then add up
                        if const_expr(cfg.defer_store):
                            mma_promote(summed, acc, k < cfg.promotion)
                        else:
                            mma_promote(summed, acc)
                if k == blocks - 1:
                    mma_wait(0)
                    pipe.consumer_release(release)
                    release.advance()
            # Again, unconditionally: else ptxas sees a path from the loop to the epilogue with
            # WGMMAs in flight and serializes them all (C7514); at run time it waits for nothing.
            mma_wait(0)
            if const_expr(cfg.promotion > 0):
                mma_promote_rest(summed, acc, blocks, cfg.promotion, shift, cfg.defer_store)
            if const_expr(cfg.tail):
                # A whole tile stores; a tail chunk hands over, the tile's last sums and stores.
                tidx_c, threads = tidx - WARPGROUP, cfg.consumer_threads
                hand = (out, workspace, ctr, flag, bar, chunk, cfg.tail_split, tidx_c, threads)
                grid = (m < tiles_m) & (n < tiles_n)
                cm, cn = cfg.cluster_mn  # the tile's slot among its cluster tile's
                rank = (m % cm if cm > 1 else 0) + (n % cn * cm if cn > 1 else 0)
                if tail_reduce(*hand, grid, cfg.cluster_size, rank):
                    epilogue_store(
                        cfg, views, atom_c, s_c, t_c, m, n, bar, is_store_warp, c_in, bias,
                        scale_a, scale_b,
                    )  # fmt: skip
            elif const_expr(cfg.stream_k):
                # A whole tile stores; a piece hands over, the tile's last sums and stores.
                tidx_c, threads = tidx - WARPGROUP, cfg.consumer_threads
                piece = params.piece(chunk)
                grid = (m < tiles_m) & (n < tiles_n)
                cm, cn = cfg.cluster_mn  # the tile's slot among its cluster tile's
                rank = (m % cm if cm > 1 else 0) + (n % cn * cm if cn > 1 else 0)
                hold = (out, workspace, ctr, flag, bar, chunk, piece, tidx_c, threads, grid)
                if stream_reduce(*hold, cfg.cluster_size, rank):
                    epilogue_store(
                        cfg, views, atom_c, s_c, t_c, m, n, bar, is_store_warp, c_in, bias,
                        scale_a, scale_b,
                    )  # fmt: skip
            elif const_expr(cfg.split):
                # The tile's last chunk to arrive sums the chunks (in chunk order), stores C.
                tidx_c, threads = tidx - WARPGROUP, cfg.consumer_threads
                args = (out, workspace, ctr, flag, bar, m + n * tiles_m, chunk, cfg.split_k)
                if split_reduce(*args, tidx_c, threads, (m < tiles_m) & (n < tiles_n)):
                    epilogue_store(
                        cfg, views, atom_c, s_c, t_c, m, n, bar, is_store_warp, c_in, bias,
                        scale_a, scale_b,
                    )  # fmt: skip
            elif const_expr(cfg.defer_store):
                pm, pn = m, n  # the next tile stores this one, where there is one
                now = is_last_tile(sched) | (blocks == 0)  # K = 0: the total stays zero
                epilogue_store(cfg, views, atom_c, s_c, t_c, m, n, *late, now)
            else:
                epilogue_store(
                    cfg, views, atom_c, s_c, t_c, m, n, bar, is_store_warp, c_in, bias,
                    scale_a, scale_b,
                )  # fmt: skip
            sched = next_scheduler(cfg, sched, nxt)
            tile = sched.tile()
        epilogue_drain(is_store_warp)


@cute.jit
def _pingpong_math(
    cfg: Constexpr[GemmConfig],
    i: Constexpr[int],
    pipe: Any,
    tiled_mma: Any,
    s_a: Any,
    s_b: Any,
    s_c: Any,
    atom_c: Any,
    t_c: Any,
    params: Any,
    k_tiles: Any,
    c_in: Any,
    bias: Any,
    scale_a: Any,
    scale_b: Any,
    order: Any = None,
) -> None:
    """Ping-pong math warpgroup ``i``: the CTA's even (``i = 0``) or odd tiles; on the
    other's it waits for and releases the ring's stages (both read every stage), or with
    ``pingpong-skip`` skips them and then takes the turn the other passes after its main loop
    (``order``: the token pipelines taken and passed)."""
    tidx, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if const_expr(cfg.consumer_regs is not None):
        cute.arch.setmaxregister_increase(cfg.consumer_regs)
    _grid_dependency(cfg, False)
    # Each warpgroup its own TiledMma: the accumulate flag it carries is set per warpgroup.
    tiled_mma = make_tiled_mma(cfg)
    consumer_wg = cute.arch.make_warp_uniform(tidx // WARPGROUP) - (1 + i)
    t_ra, t_rb = make_mma_fragments(tiled_mma, s_a, s_b, consumer_wg)
    acc = make_accumulator(cfg, tiled_mma, consumer_wg)
    total: Any = None
    fresh_mma: Any = None
    if const_expr(cfg.promotion > 0):
        total = make_accumulator(cfg, tiled_mma, consumer_wg)
        fresh_mma = make_fresh_mma(cfg)
    out = acc if const_expr(total is None) else total
    views = make_epilogue_views(cfg, tiled_mma, out, s_c, tidx - WARPGROUP * (1 + i))
    bar = epilogue_barrier(cfg, i)
    is_store_warp = warp == STORE_WARP + i * (WARPGROUP // 32)
    read = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, cfg.ab_stages)
    release = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, cfg.ab_stages)
    taken: Any = None
    passed: Any = None
    if const_expr(cfg.skip_turns):
        taken = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, 1)
        passed = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, 1)
    count = cutlass.Int32(0)
    sched = make_scheduler(params)
    tile = sched.tile()
    while tile.is_valid_tile:
        nxt = count + 1
        odd = (count % 2) == 1
        count = nxt
        mine = odd if const_expr(i == 1) else not_(odd)
        if mine:
            m, n, _ = tile.tile_idx
            mma_begin_tile(tiled_mma, acc, total)
            for k in cutlass.range(k_tiles, unroll=1):  # type: ignore[attr-defined]
                pipe.consumer_wait(read)
                stage = read.index
                read.advance()
                mma_k_block(tiled_mma, acc, t_ra, t_rb, stage, k, cfg.promotion, fresh_mma)
                mma_wait(1)
                if k >= 1:
                    pipe.consumer_release(release)
                    release.advance()
                if const_expr(cfg.promotion > 0):  # noqa: SIM102 (DSL: no dynamic `and`)
                    if group_end(k, cfg.promotion):
                        mma_promote(total, acc)
                if k == k_tiles - 1:
                    mma_wait(0)
                    pipe.consumer_release(release)
                    release.advance()
            mma_wait(0)  # unconditionally, as in twin_kernel (no WGMMA serialization)
            if const_expr(cfg.skip_turns):  # the other's next tile may wait on the ring now
                order[1].producer_acquire(passed)
                order[1].producer_commit(passed)
                passed.advance()
            if const_expr(cfg.promotion > 0):
                mma_promote_rest(total, acc, k_tiles, cfg.promotion)
            epilogue_store(
                cfg, views, atom_c, s_c, t_c, m, n, bar, is_store_warp, c_in, bias, scale_a, scale_b
            )
        if not_(mine):
            if const_expr(cfg.skip_turns):  # skip its stages; its main loop's end is our turn
                # One stage at a time, as TS lowers it: this warpgroup is idle here anyway (a
                # jump of k_tiles at once divides by the stage count instead).
                for _k in cutlass.range(k_tiles, unroll=1):  # type: ignore[attr-defined]
                    read.advance()
                    release.advance()
                order[0].consumer_wait(taken)
                order[0].consumer_release(taken)
                taken.advance()
            else:  # wait for and release its stages
                for _k in cutlass.range(k_tiles, unroll=1):  # type: ignore[attr-defined]
                    pipe.consumer_wait(read)
                    read.advance()
                    pipe.consumer_release(release)
                    release.advance()
        sched.advance()
        tile = sched.tile()
    epilogue_drain(is_store_warp)


def make_turn_pipeline(alloc: SmemAllocator) -> Any:
    """A math-order token: one stage, one warpgroup passes it, the other takes it."""
    group = cpipe.CooperativeGroup(cpipe.Agent.Thread, WARPGROUP)
    storage = alloc.allocate_array(cutlass.Int64, num_elems=2, byte_alignment=8)
    return cpipe.PipelineAsync.create(
        num_stages=1,
        producer_group=group,
        consumer_group=group,
        barrier_storage=storage,
        defer_sync=True,
    )


@cute.kernel
def twin_pingpong_kernel(
    atom_a: cute.CopyAtom,
    t_a: cute.Tensor,
    atom_b: cute.CopyAtom,
    t_b: cute.Tensor,
    atom_c: cute.CopyAtom,
    t_c: cute.Tensor,
    tiled_mma: cute.TiledMma,
    a_layout: cute.ComposedLayout,
    b_layout: cute.ComposedLayout,
    c_layout: cute.ComposedLayout,
    params: TileRaster,
    c_in: cute.Tensor | None,
    bias: cute.Tensor | None,
    counters: cute.Tensor | None,
    scale_a: cute.Tensor | None,
    scale_b: cute.Tensor | None,
    workspace: cute.Tensor | None,
    cfg: Constexpr[GemmConfig],
) -> None:
    """Ping-pong: the producer fills the one ring with every tile; the math warpgroups take
    the tiles in turns."""
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp == LOAD_WARP:
        cpasync.prefetch_descriptor(atom_a)
        cpasync.prefetch_descriptor(atom_b)
        cpasync.prefetch_descriptor(atom_c)
    alloc = SmemAllocator()
    s_a = alloc.allocate_tensor(cfg.element, a_layout.outer, 1024, swizzle=a_layout.inner)
    s_b = alloc.allocate_tensor(cfg.element, b_layout.outer, 1024, swizzle=b_layout.inner)
    s_c0 = alloc.allocate_tensor(cfg.out_element, c_layout.outer, 1024, swizzle=c_layout.inner)
    s_c1 = alloc.allocate_tensor(cfg.out_element, c_layout.outer, 1024, swizzle=c_layout.inner)
    k_tiles = cute.ceil_div(cute.size(t_a, mode=[1]), cfg.tile_k)
    bars = alloc.allocate_array(cutlass.Int64, num_elems=2 * cfg.ab_stages, byte_alignment=8)
    pipe = make_ab_pipeline(cfg, bars)
    tokens: Any = (None, None)  # pingpong-skip: t0 passed from warpgroup 0 to 1, t1 back
    if const_expr(cfg.skip_turns):
        tokens = (make_turn_pipeline(alloc), make_turn_pipeline(alloc))
    if const_expr(cfg.cluster_size > 1):
        # The ring's barriers initialized cluster-wide before any peer multicasts into them.
        cpipe.pipeline_init_arrive(cluster_shape_mn=cfg.cluster_mn, is_relaxed=True)
        cpipe.pipeline_init_wait(cluster_shape_mn=cfg.cluster_mn)
    else:
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
    coord = cluster_coord(cfg)

    if warp < WARPGROUP // 32:
        cute.arch.setmaxregister_decrease(PRODUCER_REGS)
    if warp < LOAD_WARP + 1:
        _load_tiles(cfg, pipe, atom_a, atom_b, t_a, t_b, s_a, s_b, coord, params, k_tiles)
    if (warp >= WARPGROUP // 32) & (warp < 2 * WARPGROUP // 32):
        _pingpong_math(
            cfg,
            0,
            pipe,
            tiled_mma,
            s_a,
            s_b,
            s_c0,
            atom_c,
            t_c,
            params,
            k_tiles,
            c_in,
            bias,
            scale_a,
            scale_b,
            (tokens[1], tokens[0]),
        )
    if (warp >= 2 * WARPGROUP // 32) & (warp < 3 * WARPGROUP // 32):
        _pingpong_math(
            cfg,
            1,
            pipe,
            tiled_mma,
            s_a,
            s_b,
            s_c1,
            atom_c,
            t_c,
            params,
            k_tiles,
            c_in,
            bias,
            scale_a,
            scale_b,
            (tokens[0], tokens[1]),
        )
