"""Fork: one TMA load into two consumers on Hopper (``PipelineGroup``): TS kernel and twin.

``double = x + x`` and ``square = x * x`` (fp16) from one read of ``x``. Warp 0 TMA-loads each
64 x 128 fp16 tile of ``x`` once into a ``STAGES``-deep SMEM ring; the ring is two resources,
``x_double`` and ``x_square``, each viewing the same stages with a pipeline of its own, grouped
as a Fork ``xs``: the load warp acquires both members' stage, loads once and publishes both
with one ``xs.commit()``. Warps 4-7 (one task) wait on ``x_double`` and store ``x + x``;
warps 8-11 (another) wait on ``x_square`` and store ``x * x``; each releases its own member.

How the group is lowered (``docs/groups.rst``): one TMA load completes the one mbarrier it is
given, so the members share the first member's full barriers (armed once with the tile's
bytes, by the first member's acquire) and keep their own empty barriers (each acquire waits
for its own consumer). The twin builds the same barriers by hand.

Usage::

    python examples/hopper/fork.py --compile-only   # CPU: PTX counts, TS vs twin
    python examples/hopper/fork.py                  # GPU: run, check, time
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
from cutlass.cute.nvgpu import cpasync
from cutlass.memory import SmemAllocator

from task_scheduling import domain_loop, producer_work, schedule
from task_scheduling.harness import Case, ExampleCLI, fake_tensor, to_cute
from task_scheduling.harness import compile_only as compare
from task_scheduling.harness import run_on_gpu as run_kernels
from task_scheduling.kernel import Kernel, KernelContext, Tasks, TmaRing
from task_scheduling.pipeline_group import PipelineGroup, PipelineGroupMode
from task_scheduling.plan import KernelPlan
from task_scheduling.resources import MemoryResource
from task_scheduling.schedule_builder import ResourceProxy
from task_scheduling.task import Task

TILE_M, TILE_N, STAGES = 64, 128, 4
TILE_BYTES = TILE_M * TILE_N * 2
CTAS = 132
LOAD_WARP, DOUBLE_WARP, SQUARE_WARP, USE_WARPS = 0, 4, 8, 4
BLOCK_THREADS = (SQUARE_WARP + USE_WARPS) * 32
USE_THREADS = USE_WARPS * 32
DEFAULT_SHAPE = (8192, 8192)


def ring_layout() -> Any:
    """All stages: ``(TILE_M, TILE_N, STAGES)`` row-major tiles, one after another."""
    return cute.make_layout((TILE_M, TILE_N, STAGES), stride=(TILE_N, 1, TILE_M * TILE_N))


def use_copy() -> Any:
    """A consumer's tiled copy: 128 threads, 8 halves (16 bytes) each, a row by 16 threads."""
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16, num_bits_per_copy=128)
    per_row = TILE_N // 8
    threads = cute.make_layout((USE_THREADS // per_row, per_row), stride=(per_row, 1))
    return cute.make_tiled_copy_tv(atom, threads, cute.make_layout((1, 8)))


def tile_coord(t: Any, tiles_n: Any) -> tuple[Any, Any]:
    """Row-major tile order."""
    return t // tiles_n, t % tiles_n


def map_tile(tid: Any, s_x: Any, g_out: Any, square: bool) -> None:
    """``g_out = x * x`` (``square``) or ``x + x`` through registers (``tid`` from 0)."""
    tiled = use_copy()
    thr = tiled.get_slice(tid)
    t_s, t_g = thr.partition_S(s_x), thr.partition_D(g_out)
    frag = cute.make_fragment_like(t_s)
    cute.copy(tiled, t_s, frag)
    x = frag.load()
    frag.store(x * x if square else x + x)
    cute.copy(tiled, frag, t_g)


def _tiles(x: cute.Tensor) -> tuple[int, int]:
    return cute.size(x, mode=[0]) // TILE_M, cute.size(x, mode=[1]) // TILE_N


def _load_atom(x: cute.Tensor) -> tuple[Any, Any]:
    smem_tile = cute.make_layout((TILE_M, TILE_N), stride=(TILE_N, 1))
    return cpasync.make_tiled_tma_atom(  # type: ignore[no-any-return]
        cpasync.CopyBulkTensorTileG2SOp(), x, smem_tile, (TILE_M, TILE_N)
    )


# ---------------------------------------------------------------------------------------------
# TS kernel
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(kw_only=True)
class MapOut(MemoryResource):
    """An output, written tile by tile from the waited stage (``x * x`` or ``x + x``)."""

    tensor: Any = None
    tiles_n: Any = 1
    square: bool = False
    first_warp: int = 0

    @producer_work
    def store(self, stage_info: Any, *, view: Any) -> None:
        g = cute.local_tile(
            self.tensor, (TILE_M, TILE_N), tile_coord(stage_info.loop_offset, self.tiles_n)
        )
        tidx, _, _ = cute.arch.thread_idx()
        map_tile(tidx - self.first_warp * 32, view, g, self.square)


def ts_kernel() -> Kernel:
    """One load warp; a Fork of two views of its ring into two consumer tasks."""

    def tasks(k: KernelContext, atom: Any, g_x: Any, double: Any, square: Any) -> Tasks:
        tiles_m, tiles_n = k.value(("tiles_m", "tiles_n"), lambda: _tiles(double))
        stages = k.smem_tensor(cutlass.Float16, ring_layout)  # one buffer, two views

        def view(name: str) -> TmaRing:
            return TmaRing(
                name=name,
                pipeline_config=TmaRing.pipeline(STAGES, TILE_BYTES, USE_THREADS),
                atom=atom,
                gmem=g_x,
                box=(TILE_M, TILE_N),
                smem=stages,
                coord=lambda t: tile_coord(t, tiles_n),
            )

        x_double, x_square = view("x_double"), view("x_square")
        xs = PipelineGroup(name="xs", members=[x_double, x_square], mode=PipelineGroupMode.Fork)
        out_double = MapOut(name="double", tensor=double, tiles_n=tiles_n, first_warp=DOUBLE_WARP)
        out_square = MapOut(
            name="square", tensor=square, tiles_n=tiles_n, square=True, first_warp=SQUARE_WARP
        )
        tiles = (k.block_idx[0], tiles_m * tiles_n, k.grid_dim[0])  # this CTA's tiles

        @schedule
        def load(g: ResourceProxy) -> None:
            with domain_loop(*tiles):
                g.x_double.acquire()  # both consumers are done with the stage before the
                g.x_square.acquire()  # one load overwrites it
                g.x_double.load()
                g.commit()  # publishes both members' stage

        @schedule
        def use(r: ResourceProxy, o: ResourceProxy) -> None:
            with domain_loop(*tiles):
                r.wait()
                o.store(view=r.tile())
                r.release()

        return Tasks(
            [
                Task([], [x_double, x_square], LOAD_WARP, 1, schedule=load(xs), name="load"),
                Task(
                    [x_double],
                    [out_double],
                    DOUBLE_WARP,
                    USE_WARPS,
                    schedule=use(x_double, out_double),
                    name="double",
                ),
                Task(
                    [x_square],
                    [out_square],
                    SQUARE_WARP,
                    USE_WARPS,
                    schedule=use(x_square, out_square),
                    name="square",
                ),
            ],
            {out_double: [x_double], out_square: [x_square]},
        )

    kernel = Kernel(tasks, name="fork", block_warps=BLOCK_THREADS // 32)

    @kernel.launcher
    @cute.jit
    def launch(
        x: cute.Tensor, double: cute.Tensor, square: cute.Tensor, stream: Any = None
    ) -> None:
        atom, g_x = _load_atom(x)
        kernel.launch(atom, g_x, double, square, grid=(CTAS, 1, 1), stream=stream)

    return kernel


# ---------------------------------------------------------------------------------------------
# Hand-written twin: the same schedule in plain CuTe DSL
# ---------------------------------------------------------------------------------------------


def _twin_pipeline(alloc: Any) -> Any:
    """One view's ``PipelineTmaAsync``: one thread arms a stage, a consumer task frees it."""
    bars = alloc.allocate_array(cutlass.Int64, num_elems=2 * STAGES, byte_alignment=8)
    return cpipe.PipelineTmaAsync.create(
        num_stages=STAGES,
        producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
        consumer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, USE_THREADS),
        tx_count=TILE_BYTES,
        barrier_storage=bars,
        enable_multicast_signaling=True,  # one empty-barrier arrival per consumer warp
        defer_sync=True,
    )


@cute.jit
def _twin_use(
    pipe: Any, s_x: Any, out: Any, bidx: Any, num_tiles: Any, gdim: Any, tiles_n: Any, **kw: Any
) -> None:
    """One consumer task: wait for a stage, store ``x + x`` / ``x * x``, release the stage."""
    state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, STAGES)
    tidx, _, _ = cute.arch.thread_idx()
    for t in cutlass.range(bidx, num_tiles, gdim):  # type: ignore[attr-defined]
        pipe.consumer_wait(state)
        g = cute.local_tile(out, (TILE_M, TILE_N), tile_coord(t, tiles_n))
        map_tile(tidx - kw["first_warp"] * 32, s_x[(None, None, state.index)], g, kw["square"])
        pipe.consumer_release(state)
        state.advance()


class TwinFork:
    """The hand-written twin (``(x, double, square)``)."""

    @cute.kernel
    def kernel(
        self, atom: cute.CopyAtom, g_x: cute.Tensor, double: cute.Tensor, square: cute.Tensor
    ) -> None:
        bidx, _, _ = cute.arch.block_idx()
        gdim, _, _ = cute.arch.grid_dim()
        tiles_m, tiles_n = _tiles(double)
        num_tiles = tiles_m * tiles_n
        alloc = SmemAllocator()
        s_x = alloc.allocate_tensor(cutlass.Float16, ring_layout(), 1024)
        pipe_d = _twin_pipeline(alloc)
        # The square view waits on the double view's full barriers (the one load completes
        # those) and keeps its own empty barriers.
        pipe_s = dataclasses.replace(
            _twin_pipeline(alloc), sync_object_full=pipe_d.sync_object_full
        )
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp < LOAD_WARP + 1:
            # One cursor per view, as the group's commit is lowered: a commit of each member.
            st_d = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, STAGES)
            st_s = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, STAGES)
            g_tiles = cute.zipped_divide(g_x, (TILE_M, TILE_N))
            for t in cutlass.range(bidx, num_tiles, gdim):  # type: ignore[attr-defined]
                pipe_d.producer_acquire(st_d)  # waits for the double task, arms the load
                pipe_s.sync_object_empty.wait(st_s.index, st_s.phase)  # the square task
                t_s, t_g = cpasync.tma_partition(
                    atom, 0, cute.make_layout(1), cute.group_modes(s_x, 0, 2), g_tiles
                )
                cute.copy(
                    atom,
                    t_g[(None, tile_coord(t, tiles_n))],
                    t_s[(None, st_d.index)],
                    tma_bar_ptr=pipe_d.producer_get_barrier(st_d),
                )
                st_d.advance()  # TMA commits are no-ops: the load completes the barrier
                st_s.advance()
        if (warp >= DOUBLE_WARP) & (warp < DOUBLE_WARP + USE_WARPS):
            _twin_use(
                pipe_d,
                s_x,
                double,
                bidx,
                num_tiles,
                gdim,
                tiles_n,
                first_warp=DOUBLE_WARP,
                square=False,
            )
        if (warp >= SQUARE_WARP) & (warp < SQUARE_WARP + USE_WARPS):
            _twin_use(
                pipe_s,
                s_x,
                square,
                bidx,
                num_tiles,
                gdim,
                tiles_n,
                first_warp=SQUARE_WARP,
                square=True,
            )

    @cute.jit
    def __call__(self, x: cute.Tensor, double: cute.Tensor, square: cute.Tensor) -> None:
        atom, g_x = _load_atom(x)
        self.kernel(atom, g_x, double, square).launch(
            grid=(CTAS, 1, 1), block=(BLOCK_THREADS, 1, 1)
        )


# ---------------------------------------------------------------------------------------------
# Host side (tools, benches, tests, CLI): the harness of task_scheduling.harness
# ---------------------------------------------------------------------------------------------


def make_plan() -> KernelPlan:
    """The fork as a kernel plan (traced on the host: no GPU, no DSL values)."""
    return KERNEL.plan().plan


KERNEL = ts_kernel()
PLAN = KERNEL.plan().plan
ts_fork = KERNEL.jit_launcher
twin_fork = TwinFork()
KERNELS = {"ts": ts_fork, "twin": twin_fork}


def compile_only(shape: tuple[int, int] = DEFAULT_SHAPE, *, ops: bool = False) -> dict[str, Any]:
    """Verify the plan, compile both kernels for sm_90a with fake tensors, count PTX."""
    args = [fake_tensor(cutlass.Float16, shape, row_major=True, align=16) for _ in range(3)]
    return compare("fork", KERNELS, args, plan=PLAN, ops=ops, shape=[*shape])


def run_on_gpu(shape: tuple[int, int], iters: int) -> dict[str, Any]:
    """Run both kernels on the GPU, check ``x + x`` and ``x * x`` against torch, time them."""
    import torch

    x = torch.randn(*shape, device="cuda", dtype=torch.float16)
    want_double, want_square = x + x, x * x

    def case(name: str) -> Case:
        double, square = torch.zeros_like(x), torch.zeros_like(x)
        return Case(
            (to_cute(x), to_cute(double), to_cute(square)),
            lambda: torch.equal(double, want_double) and torch.equal(square, want_square),
        )

    out = run_kernels(KERNELS, case, iters=iters, bytes_moved=6 * x.numel())
    return {"example": "fork", "shape": [*shape], **out}


def main(argv: list[str] | None = None) -> int:
    cli = ExampleCLI(__doc__, __file__, shape={"m": DEFAULT_SHAPE[0], "n": DEFAULT_SHAPE[1]})
    args = cli.parse(argv, lambda a: (TILE_M, TILE_N))
    return cli.run(lambda: compile_only(args.shape), lambda: run_on_gpu(args.shape, args.iters))


if __name__ == "__main__":
    sys.exit(main())
