"""Variable-length segment copy on a persistent work queue: TS kernels and hand-written twins.

The tensor is a sequence of ``64 x 256`` fp16 chunks (row-major tile order). Segment ``s`` owns
chunks ``offsets[s] .. offsets[s + 1]`` (lengths may be 0) and is one work tile; its domain
loop's end is computed per tile by ``SegmentTask.segment_chunks`` from the offsets tensor, so a
zero-length segment runs no body work and the SMEM ring stays balanced. A per-segment flag
(``copy_flags[s]``, read once per tile by a work call and kept as a task-local value) guards the
segment in both tasks (``when_true(..., key="copy")``): unflagged segments stay zero in dst.

Warp 0 (load task) TMA-loads the chunks into a 6-stage ring, warp 1 (store task) TMA-stores
them. Two schedulers (``--scheduler``):

* ``static``: CTA ``c`` of ``G`` copies segments ``c, c + G, ...``;
* ``dynamic``: after its first segment, a CTA claims the next one from a global atomic counter:
  the load warp fetches it (``wq.acquire(); wq.fetch_next_tile(); wq.commit()``) and hands it to
  the store warp through the queue's 2-stage SMEM pipeline (``wq.wait(); wq.read_next_tile();
  wq.release()``). The counters reset themselves at the end of each launch.

Usage::

    python examples/hopper/varlen_copy.py --compile-only [--scheduler dynamic]
    python examples/hopper/varlen_copy.py --scheduler dynamic --segments 2000 --imbalance 64
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe

# The chunk / stage shape and the TMA load and store steps, shared with persistent_copy.
from _tma_tiles import (
    STAGES,
    TILE_BYTES,
    TILE_M,
    TILE_N,
    TileRing,
    ring_layout,
    smem_tile_layout,
    tma_load,
    tma_store,
    tma_store_wait,
)
from cutlass.cute.nvgpu import cpasync
from cutlass.memory import SmemAllocator

from task_scheduling import (
    consumer_work,
    domain_loop,
    schedule,
    when_true,
    work_tile_loop,
)
from task_scheduling.harness import Case, ExampleCLI, fake_tensor, to_cute
from task_scheduling.harness import compile_only as compare
from task_scheduling.harness import run_on_gpu as run_kernels
from task_scheduling.kernel import Kernel, KernelContext, Tasks
from task_scheduling.plan import KernelPlan
from task_scheduling.resources import (
    MemoryResource,
    PipelineConfig,
    TaskLocalVariable,
    TileSchedulerConfig,
    WorkQueue,
)
from task_scheduling.schedule_builder import ResourceProxy
from task_scheduling.task import Task
from task_scheduling.tiles import PersistentTiles, TileRaster

CTAS = 132
QUEUE_STAGES = 2
LOAD_WARP, STORE_WARP = 0, 1
BLOCK_THREADS = 64
SCHEDULERS = ("static", "dynamic")


def chunk_coord(chunk: Any, tiles_n: Any) -> tuple[Any, Any]:
    """Row-major chunk order."""
    return chunk // tiles_n, chunk % tiles_n


# ---------------------------------------------------------------------------------------------
# TS kernel
# ---------------------------------------------------------------------------------------------


class SegmentTask(Task):
    """A task whose domain loop runs over the chunks of the current segment."""

    def __init__(self, *args: Any, offsets: Any = None, **kwargs: Any) -> None:
        self.offsets = offsets
        super().__init__(*args, **kwargs)

    def segment_chunks(self, work_tile_coord: Any) -> Any:
        """Chunks in segment ``work_tile_coord[0]`` (0 for an empty segment)."""
        s = work_tile_coord[0]
        return self.offsets[s + 1] - self.offsets[s]


@dataclasses.dataclass(kw_only=True)
class Segments(MemoryResource):
    """Per-segment metadata: the copy flag."""

    flags: Any = None
    copy: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.copy = TaskLocalVariable(dtype="Boolean", default=False)

    @consumer_work(returns=copy)
    def read_flag(self, stage_info: Any) -> Any:
        """Whether the tile's segment is copied."""
        return self.flags[stage_info.work_tile.tile_idx[0]] != 0


@dataclasses.dataclass(kw_only=True)
class Ring(TileRing):
    """The SMEM ring between the TMA load and the TMA store: chunk ``loop_offset`` of the work
    tile's segment."""

    offsets: Any = None
    tiles_n: Any = 1

    def tile(self, stage_info: Any) -> tuple[Any, Any]:
        """The chunk's tile: ``offsets[segment] + loop_offset`` in row-major chunk order."""
        s = stage_info.work_tile.tile_idx[0]
        return chunk_coord(self.offsets[s] + stage_info.loop_offset, self.tiles_n)


@schedule
def static_load(wq: ResourceProxy, meta: ResourceProxy, ring: ResourceProxy) -> None:
    """Per flagged segment: load its chunks."""
    with work_tile_loop(wq):
        copy = meta.read_flag()
        with when_true(copy, key="copy"), domain_loop(SegmentTask.segment_chunks):
            ring.acquire()
            ring.load()
            ring.commit()


@schedule
def static_store(wq: ResourceProxy, meta: ResourceProxy, ring: ResourceProxy) -> None:
    """Per flagged segment: store its chunks."""
    with work_tile_loop(wq):
        copy = meta.read_flag()
        with when_true(copy, key="copy"), domain_loop(SegmentTask.segment_chunks):
            ring.wait()
            ring.store()
            ring.store_wait()
            ring.release()


@schedule
def dynamic_load(wq: ResourceProxy, meta: ResourceProxy, ring: ResourceProxy) -> None:
    """Claim the next segment first (it is handed to the store warp), then load this one."""
    with work_tile_loop(wq):
        wq.acquire()
        wq.fetch_next_tile()
        wq.commit()
        copy = meta.read_flag()
        with when_true(copy, key="copy"), domain_loop(SegmentTask.segment_chunks):
            ring.acquire()
            ring.load()
            ring.commit()


@schedule
def dynamic_store(wq: ResourceProxy, meta: ResourceProxy, ring: ResourceProxy) -> None:
    """Take the next segment from the load warp, then store this one."""
    with work_tile_loop(wq):
        wq.wait()
        wq.read_next_tile()
        wq.release()
        copy = meta.read_flag()
        with when_true(copy, key="copy"), domain_loop(SegmentTask.segment_chunks):
            ring.wait()
            ring.store()
            ring.store_wait()
            ring.release()


def ring_pipeline() -> PipelineConfig:
    """TMA producer (1 thread arms the barrier) -> 1 store warp."""
    return PipelineConfig.create_tma_async_pipeline_cfg(
        STAGES,
        TILE_BYTES,
        cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
        cpipe.CooperativeGroup(cpipe.Agent.Thread, 32),
    )


def queue_pipeline() -> PipelineConfig:
    """The dynamic queue's hand-off: load warp -> store warp."""
    return PipelineConfig.create_async_async_pipeline_cfg(
        QUEUE_STAGES,
        cpipe.CooperativeGroup(cpipe.Agent.Thread, 32),
        cpipe.CooperativeGroup(cpipe.Agent.Thread, 32),
    )


def make_queue(scheduler: str, params: Any, counters: Any) -> WorkQueue:
    """The work queue of ``scheduler``."""
    if scheduler == "dynamic":
        cfg = TileSchedulerConfig.create_atomic_dynamic_persistent_tile_scheduler_params(
            params, counters
        )
        return WorkQueue(cfg, name="segments", pipeline_config=queue_pipeline())
    cfg = TileSchedulerConfig.create_static_persistent_tile_scheduler_params(params)
    return WorkQueue(cfg, name="segments")


def ts_kernel(scheduler: str) -> Kernel:
    """The TS kernel of ``scheduler``: a load task and a store task over the segment queue."""
    dynamic = scheduler == "dynamic"

    def tasks(
        k: KernelContext,
        load_atom: Any,
        g_src: Any,
        store_atom: Any,
        g_dst: Any,
        offsets: Any,
        flags: Any,
        counters: Any,
        params: Any,
        tiles_n: Any,
    ) -> Tasks:
        wq = make_queue(scheduler, params, counters)
        g_in, g_out = k.value(
            ("g_in", "g_out"),
            lambda: [cute.zipped_divide(g, (TILE_M, TILE_N)) for g in (g_src, g_dst)],
        )
        ring = Ring(
            name="ring",
            pipeline_config=ring_pipeline(),
            load_atom=load_atom,
            g_src=g_in,
            store_atom=store_atom,
            g_dst=g_out,
            s_tiles=k.smem_tensor(cutlass.Float16, ring_layout),
            offsets=offsets,
            tiles_n=tiles_n,
        )
        meta = Segments(name="meta", flags=flags)
        # With the dynamic scheduler the load warp also produces into the queue (it fetches).
        load_src, load_dst = ([meta], [ring, wq]) if dynamic else ([wq, meta], [ring])
        load, store = (dynamic_load, dynamic_store) if dynamic else (static_load, static_store)
        return Tasks(
            [
                SegmentTask(
                    load_src,
                    load_dst,
                    LOAD_WARP,
                    1,
                    schedule=load(wq, meta, ring),
                    name="load",
                    offsets=offsets,
                ),
                SegmentTask(
                    [wq, meta, ring],
                    [],
                    STORE_WARP,
                    1,
                    schedule=store(wq, meta, ring),
                    name="store",
                    offsets=offsets,
                ),
            ],
            {ring: [wq, meta]},
        )

    return Kernel(tasks, name=f"varlen_copy_{scheduler}")


# ---------------------------------------------------------------------------------------------
# Hand-written twins: the same schedules in plain CuTe DSL
# ---------------------------------------------------------------------------------------------


def _twin_kernel(scheduler: str) -> Any:
    dynamic = scheduler == "dynamic"

    @cute.kernel
    def kernel(
        load_atom: cute.CopyAtom,
        g_src: cute.Tensor,
        store_atom: cute.CopyAtom,
        g_dst: cute.Tensor,
        offsets: cute.Tensor,
        flags: cute.Tensor,
        counters: cute.Tensor,
        params: TileRaster,
        tiles_n: cutlass.Int32,
    ) -> None:
        # The DSL's types are looser than its stubs: index and compare through Any.
        offs: Any = offsets
        flag: Any = flags
        ctr: Any = counters
        alloc = SmemAllocator()
        s_tiles = alloc.allocate_tensor(cutlass.Float16, ring_layout(), 1024)
        g_in = cute.zipped_divide(g_src, (TILE_M, TILE_N))
        g_out = cute.zipped_divide(g_dst, (TILE_M, TILE_N))
        bars = alloc.allocate_array(cutlass.Int64, num_elems=2 * STAGES, byte_alignment=8)
        pipe = cpipe.PipelineTmaAsync.create(
            num_stages=STAGES,
            producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
            consumer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 32),
            tx_count=TILE_BYTES,
            barrier_storage=bars,
            enable_multicast_signaling=True,
            defer_sync=True,
        )
        qpipe: Any = None
        slots: Any = None
        if cutlass.const_expr(dynamic):  # type: ignore[attr-defined]
            qbars = alloc.allocate_array(
                cutlass.Int64, num_elems=2 * QUEUE_STAGES, byte_alignment=8
            )
            qpipe = cpipe.PipelineAsync.create(
                num_stages=QUEUE_STAGES,
                producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 32),
                consumer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 32),
                barrier_storage=qbars,
                defer_sync=True,
            )
            slot_ptr = alloc.allocate_array(cutlass.Int32, num_elems=QUEUE_STAGES, byte_alignment=4)
            slots = cute.make_tensor(slot_ptr, cute.make_layout(QUEUE_STAGES))
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        if warp == LOAD_WARP:
            state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, STAGES)
            qstate = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, QUEUE_STAGES)
            sched = PersistentTiles.create(params)
            tile = sched.tile()
            while tile.is_valid_tile:
                nxt = cutlass.Int32(0)
                if cutlass.const_expr(dynamic):  # type: ignore[attr-defined]
                    qpipe.producer_acquire(qstate)
                    claimed = cutlass.Int32(0)
                    if lane == 0:
                        claimed = cutlass.Int32(
                            cute.arch.atomic_add(
                                ctr.iterator, cutlass.Int32(1), sem="relaxed", scope="gpu"
                            )
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
                            if (
                                cutlass.Int32(done) == cutlass.min(sched.num_ctas, total) - 1  # type: ignore[attr-defined]
                            ):
                                cute.arch.atomic_exch(
                                    ctr.iterator, cutlass.Int32(0), sem="relaxed", scope="gpu"
                                )
                                cute.arch.atomic_exch(
                                    ctr.iterator + 1,
                                    cutlass.Int32(0),
                                    sem="relaxed",
                                    scope="gpu",
                                )
                    qpipe.producer_commit(qstate)
                    qstate.advance()
                s = tile.tile_idx[0]
                if flag[s] != 0:
                    for i in cutlass.range(0, offs[s + 1] - offs[s], 1, unroll=1):  # type: ignore[attr-defined]
                        pipe.producer_acquire(state)
                        m, n = chunk_coord(offs[s] + i, tiles_n)
                        tma_load(
                            load_atom,
                            s_tiles,
                            g_in,
                            state.index,
                            m,
                            n,
                            pipe.producer_get_barrier(state),
                        )
                        pipe.producer_commit(state)
                        state.advance()
                if cutlass.const_expr(dynamic):  # type: ignore[attr-defined]
                    sched = sched.at(nxt)
                else:
                    sched.advance()
                tile = sched.tile()
        if warp == STORE_WARP:
            state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, STAGES)
            qstate = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, QUEUE_STAGES)
            sched = PersistentTiles.create(params)
            tile = sched.tile()
            while tile.is_valid_tile:
                nxt = cutlass.Int32(0)
                if cutlass.const_expr(dynamic):  # type: ignore[attr-defined]
                    qpipe.consumer_wait(qstate)
                    nxt = cutlass.Int32(slots[qstate.index])
                    qpipe.consumer_release(qstate)
                    qstate.advance()
                s = tile.tile_idx[0]
                if flag[s] != 0:
                    for i in cutlass.range(0, offs[s + 1] - offs[s], 1, unroll=1):  # type: ignore[attr-defined]
                        pipe.consumer_wait(state)
                        m, n = chunk_coord(offs[s] + i, tiles_n)
                        tma_store(store_atom, s_tiles, g_out, state.index, m, n)
                        tma_store_wait()
                        pipe.consumer_release(state)
                        state.advance()
                if cutlass.const_expr(dynamic):  # type: ignore[attr-defined]
                    sched = sched.at(nxt)
                else:
                    sched.advance()
                tile = sched.tile()

    return kernel


# ---------------------------------------------------------------------------------------------
# Host side: the launchers, the inputs, and the harness of task_scheduling.harness
# ---------------------------------------------------------------------------------------------


def _launch_args(
    src: cute.Tensor, dst: cute.Tensor, offsets: Any, flags: Any, counters: Any
) -> tuple[Any, Any]:
    """The kernels' arguments (TMA atoms, tensors, the segment raster, ``tiles_n``) and grid."""
    load_atom, g_src = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileG2SOp(), src, smem_tile_layout(), (TILE_M, TILE_N)
    )
    store_atom, g_dst = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileS2GOp(), dst, smem_tile_layout(), (TILE_M, TILE_N)
    )
    tiles_n = cute.size(dst, mode=[1]) // TILE_N
    params = TileRaster((cute.size(flags, mode=[0]), 1, 1))
    args = (load_atom, g_src, store_atom, g_dst, offsets, flags, counters, params)
    return (*args, cutlass.Int32(tiles_n)), params.get_grid_shape(CTAS)


KERNELS: dict[str, Kernel] = {s: ts_kernel(s) for s in SCHEDULERS}


def make_plan(scheduler: str = "static") -> KernelPlan:
    """The kernel plan, traced on the host (no GPU, no DSL values)."""
    return ts_kernel(scheduler).plan().plan


def kernels(scheduler: str) -> tuple[tuple[str, Any], ...]:
    """The TS kernel and its twin for ``scheduler``, as ``(name, @cute.jit launcher)``."""
    twin_kernel = _twin_kernel(scheduler)

    @cute.jit
    def ts(
        src: cute.Tensor,
        dst: cute.Tensor,
        offsets: cute.Tensor,
        flags: cute.Tensor,
        counters: cute.Tensor,
    ) -> None:
        args, grid = _launch_args(src, dst, offsets, flags, counters)
        KERNELS[scheduler].launch(*args, grid=grid)

    @cute.jit
    def twin(
        src: cute.Tensor,
        dst: cute.Tensor,
        offsets: cute.Tensor,
        flags: cute.Tensor,
        counters: cute.Tensor,
    ) -> None:
        args, grid = _launch_args(src, dst, offsets, flags, counters)
        twin_kernel(*args).launch(grid=grid, block=(BLOCK_THREADS, 1, 1))

    return (("ts", ts), ("twin", twin))


def compile_only(scheduler: str = "static", segments: int = 1000) -> dict[str, Any]:
    """Verify the plan, compile both kernels for sm_90a with fake tensors, count PTX."""
    args = fake_args(segments)
    return compare(
        "varlen_copy", kernels(scheduler), args, plan=make_plan(scheduler), scheduler=scheduler
    )


def fake_args(segments: int = 1000) -> tuple[Any, ...]:
    """Fake tensors for a CPU compile: src, dst, offsets, flags, counters."""
    shape = (TILE_M * 4 * segments, TILE_N)
    return (
        fake_tensor(cutlass.Float16, shape, row_major=True, align=16),
        fake_tensor(cutlass.Float16, shape, row_major=True, align=16),
        fake_tensor(cutlass.Int32, segments + 1, align=4),
        fake_tensor(cutlass.Int32, segments, align=4),
        fake_tensor(cutlass.Int32, 2, align=4),
    )


def segment_lengths(segments: int, mean: int, imbalance: int, seed: int = 0) -> list[int]:
    """Chunk counts per segment: random in ``[0, 2 * mean]`` (zeros included).

    With ``imbalance > 1`` every segment ``s`` with ``s % CTAS == 0`` is ``imbalance`` times
    longer, so that the static scheduler gives all long segments to CTA 0.
    """
    import random

    rng = random.Random(seed)
    lengths = [rng.randint(0, 2 * mean) for _ in range(segments)]
    if imbalance > 1:
        lengths = [n * imbalance if s % CTAS == 0 else n for s, n in enumerate(lengths)]
    return lengths


def make_inputs(lengths: list[int], flag_every: int = 7) -> dict[str, Any]:
    """Torch inputs: offsets, flags (every ``flag_every``-th segment is not copied), tensors."""
    import torch

    offsets = [0]
    for n in lengths:
        offsets.append(offsets[-1] + n)
    chunks = max(offsets[-1], 1)
    src = torch.randn(chunks * TILE_M, TILE_N, device="cuda", dtype=torch.float16)
    flags = [
        0 if flag_every and s % flag_every == flag_every - 1 else 1 for s in range(len(lengths))
    ]
    return {
        "src": src,
        "offsets": torch.tensor(offsets, dtype=torch.int32, device="cuda"),
        "flags": torch.tensor(flags, dtype=torch.int32, device="cuda"),
        "expected": _expected(src, offsets, flags),
    }


def _expected(src: Any, offsets: list[int], flags: list[int]) -> Any:
    import torch

    out = torch.zeros_like(src)
    for s, f in enumerate(flags):
        if f:
            lo, hi = offsets[s] * TILE_M, offsets[s + 1] * TILE_M
            out[lo:hi] = src[lo:hi]
    return out


def run_case(scheduler: str, inputs: dict[str, Any], iters: int) -> dict[str, Any]:
    """Run the TS kernel and its twin on ``inputs``; check and time both."""
    import torch

    src = inputs["src"]

    def case(name: str) -> Case:
        dst = torch.zeros_like(src)
        counters = torch.zeros(2, dtype=torch.int32, device="cuda")
        offsets, flags = inputs["offsets"], inputs["flags"]
        args = (to_cute(src), to_cute(dst), *(to_cute(t, 4) for t in (offsets, flags, counters)))

        def check() -> bool:  # the last CTA out resets the counters for the next launch
            return bool(torch.equal(dst, inputs["expected"])) and int(counters.abs().sum()) == 0

        # Twice: the second launch runs on the counters the first one reset.
        return Case(args, check, reset=dst.zero_, launches=2)

    return {"scheduler": scheduler, **run_kernels(kernels(scheduler), case, iters=iters)}


def main(argv: list[str] | None = None) -> int:
    cli = ExampleCLI(__doc__, __file__)
    cli.parser.add_argument("--scheduler", choices=SCHEDULERS, default="static")
    cli.parser.add_argument("--segments", type=int, default=1000)
    cli.parser.add_argument("--mean", type=int, default=4, help="mean chunks per segment")
    cli.parser.add_argument("--imbalance", type=int, default=1, help="long-segment factor")
    args = cli.parse(argv)

    def on_gpu() -> dict[str, Any]:
        inputs = make_inputs(segment_lengths(args.segments, args.mean, args.imbalance))
        out = run_case(args.scheduler, inputs, args.iters)
        return {**out, "segments": args.segments, "mean": args.mean, "imbalance": args.imbalance}

    return cli.run(lambda: compile_only(args.scheduler), on_gpu)


if __name__ == "__main__":
    sys.exit(main())
