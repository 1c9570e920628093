"""Merge: two TMA producers into one consumer on Hopper (``PipelineGroup``): TS kernel and twin.

``dst = a + b`` (fp16). Warp 0 fills ring ``smem_a`` with TMA loads of ``a``'s tiles, warp 1
fills ring ``smem_b`` with ``b``'s (each a ``PipelineTmaAsync`` of its own, ``STAGES`` deep,
64 x 128 fp16 tiles); warps 4-7 (the store task, one warpgroup) wait for a stage of each ring,
read both into registers, add, store to global memory and free both stages with one
``ab.release()``: the two rings are a Merge group ``ab``. Each CTA walks the tiles
``blockIdx.x, blockIdx.x + gridDim.x, ...`` in row-major order.

The group's release is lowered as it is verified: a release of every member, in member order
(``docs/groups.rst``), so the twin is the same kernel written by hand with two pipelines whose
stages the consumer releases one after the other.

Usage::

    python examples/hopper/merge_copy.py --compile-only   # CPU: PTX counts, TS vs twin
    python examples/hopper/merge_copy.py                  # GPU: run, check, time
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
LOAD_A_WARP, LOAD_B_WARP, STORE_WARP, STORE_WARPS = 0, 1, 4, 4
BLOCK_THREADS = (STORE_WARP + STORE_WARPS) * 32
STORE_THREADS = STORE_WARPS * 32
DEFAULT_SHAPE = (8192, 8192)


def ring_layout() -> Any:
    """All stages of one ring: ``(TILE_M, TILE_N, STAGES)`` row-major tiles, one after another."""
    return cute.make_layout((TILE_M, TILE_N, STAGES), stride=(TILE_N, 1, TILE_M * TILE_N))


def store_copy() -> Any:
    """The store threads' tiled copy: 8 halves (16 bytes) each, a row by consecutive threads."""
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16, num_bits_per_copy=128)
    per_row = TILE_N // 8
    threads = cute.make_layout((STORE_THREADS // per_row, per_row), stride=(per_row, 1))
    return cute.make_tiled_copy_tv(atom, threads, cute.make_layout((1, 8)))


def tile_coord(t: Any, tiles_n: Any) -> tuple[Any, Any]:
    """Row-major tile order."""
    return t // tiles_n, t % tiles_n


def add_tiles(tid: Any, s_a: Any, s_b: Any, g_out: Any) -> None:
    """``g_out = s_a + s_b`` through registers, by the store threads (``tid`` from 0)."""
    tiled = store_copy()
    thr = tiled.get_slice(tid)
    t_a, t_b, t_g = thr.partition_S(s_a), thr.partition_S(s_b), thr.partition_D(g_out)
    f_a, f_b = cute.make_fragment_like(t_a), cute.make_fragment_like(t_b)
    cute.copy(tiled, t_a, f_a)
    cute.copy(tiled, t_b, f_b)
    f_a.store(f_a.load() + f_b.load())
    cute.copy(tiled, f_a, t_g)


def _tiles(dst: cute.Tensor) -> tuple[int, int]:
    return cute.size(dst, mode=[0]) // TILE_M, cute.size(dst, mode=[1]) // TILE_N


def _load_atom(src: cute.Tensor) -> tuple[Any, Any]:
    smem_tile = cute.make_layout((TILE_M, TILE_N), stride=(TILE_N, 1))
    return cpasync.make_tiled_tma_atom(  # type: ignore[no-any-return]
        cpasync.CopyBulkTensorTileG2SOp(), src, smem_tile, (TILE_M, TILE_N)
    )


# ---------------------------------------------------------------------------------------------
# TS kernel
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(kw_only=True)
class SumOut(MemoryResource):
    """The destination, written tile by tile as the sum of the two waited stages."""

    tensor: Any = None
    tiles_n: Any = 1

    @producer_work
    def store(self, stage_info: Any, *, a: Any, b: Any) -> None:
        g = cute.local_tile(
            self.tensor, (TILE_M, TILE_N), tile_coord(stage_info.loop_offset, self.tiles_n)
        )
        tidx, _, _ = cute.arch.thread_idx()
        add_tiles(tidx - STORE_WARP * 32, a, b, g)


def ts_kernel(fused: bool = False) -> Kernel:
    """Two load warps, one ring each, merged into one store task by a Merge group.

    ``fused``: a FusedMerge instead, whose consumer also waits once on the group
    (``ab.wait()``, a wait on each member in order: the same code).
    """

    def tasks(k: KernelContext, atom_a: Any, g_a: Any, atom_b: Any, g_b: Any, dst: Any) -> Tasks:
        tiles_m, tiles_n = k.value(("tiles_m", "tiles_n"), lambda: _tiles(dst))

        def ring(name: str, atom: Any, g: Any) -> TmaRing:
            return TmaRing(
                name=name,
                pipeline_config=TmaRing.pipeline(STAGES, TILE_BYTES, STORE_THREADS),
                atom=atom,
                gmem=g,
                box=(TILE_M, TILE_N),
                smem=k.smem_tensor(cutlass.Float16, ring_layout),
                coord=lambda t: tile_coord(t, tiles_n),
            )

        smem_a, smem_b = ring("smem_a", atom_a, g_a), ring("smem_b", atom_b, g_b)
        mode = PipelineGroupMode.FusedMerge if fused else PipelineGroupMode.Merge
        ab = PipelineGroup(name="ab", members=[smem_a, smem_b], mode=mode)
        out = SumOut(name="dst", tensor=dst, tiles_n=tiles_n)
        tiles = (k.block_idx[0], tiles_m * tiles_n, k.grid_dim[0])  # this CTA's tiles

        @schedule
        def load(r: ResourceProxy) -> None:
            with domain_loop(*tiles):
                r.acquire()
                r.load()
                r.commit()

        @schedule
        def store(g: ResourceProxy, d: ResourceProxy) -> None:
            with domain_loop(*tiles):
                if fused:
                    g.wait()  # both members' stage
                else:
                    g.smem_a.wait()
                    g.smem_b.wait()
                d.store(a=g.smem_a.tile(), b=g.smem_b.tile())
                g.release()  # one release frees the stage of both rings

        return Tasks(
            [
                Task([], [smem_a], LOAD_A_WARP, 1, schedule=load(smem_a), name="load_a"),
                Task([], [smem_b], LOAD_B_WARP, 1, schedule=load(smem_b), name="load_b"),
                Task(
                    [smem_a, smem_b],
                    [out],
                    STORE_WARP,
                    STORE_WARPS,
                    schedule=store(ab, out),
                    name="store",
                ),
            ],
            {out: [smem_a, smem_b]},
        )

    kernel = Kernel(tasks, name="merge_copy", block_warps=BLOCK_THREADS // 32)

    @kernel.launcher
    @cute.jit
    def launch(a: cute.Tensor, b: cute.Tensor, dst: cute.Tensor, stream: Any = None) -> None:
        atom_a, g_a = _load_atom(a)
        atom_b, g_b = _load_atom(b)
        kernel.launch(atom_a, g_a, atom_b, g_b, dst, grid=(CTAS, 1, 1), stream=stream)

    return kernel


# ---------------------------------------------------------------------------------------------
# Hand-written twin: the same schedule in plain CuTe DSL
# ---------------------------------------------------------------------------------------------


def _twin_pipeline(alloc: Any) -> Any:
    """One ring's ``PipelineTmaAsync``: one thread arms a stage, the store threads free it."""
    bars = alloc.allocate_array(cutlass.Int64, num_elems=2 * STAGES, byte_alignment=8)
    return cpipe.PipelineTmaAsync.create(
        num_stages=STAGES,
        producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
        consumer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, STORE_THREADS),
        tx_count=TILE_BYTES,
        barrier_storage=bars,
        enable_multicast_signaling=True,  # one empty-barrier arrival per consumer warp
        defer_sync=True,
    )


@cute.jit
def _twin_load(
    pipe: Any, atom: Any, g: Any, s: Any, bidx: Any, num_tiles: Any, gdim: Any, tiles_n: Any
) -> None:
    """One load warp: TMA-load this CTA's tiles of ``g`` into the stages of ``pipe``."""
    state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, STAGES)
    g_tiles = cute.zipped_divide(g, (TILE_M, TILE_N))
    for t in cutlass.range(bidx, num_tiles, gdim):  # type: ignore[attr-defined]
        pipe.producer_acquire(state)
        t_s, t_g = cpasync.tma_partition(
            atom, 0, cute.make_layout(1), cute.group_modes(s, 0, 2), g_tiles
        )
        cute.copy(
            atom,
            t_g[(None, tile_coord(t, tiles_n))],
            t_s[(None, state.index)],
            tma_bar_ptr=pipe.producer_get_barrier(state),
        )
        pipe.producer_commit(state)
        state.advance()


class TwinMergeCopy:
    """The hand-written twin (``(a, b, dst)``): two pipelines, one consumer releasing both."""

    @cute.kernel
    def kernel(
        self,
        atom_a: cute.CopyAtom,
        g_a: cute.Tensor,
        atom_b: cute.CopyAtom,
        g_b: cute.Tensor,
        dst: cute.Tensor,
    ) -> None:
        bidx, _, _ = cute.arch.block_idx()
        gdim, _, _ = cute.arch.grid_dim()
        tiles_m, tiles_n = _tiles(dst)
        num_tiles = tiles_m * tiles_n
        alloc = SmemAllocator()
        s_a = alloc.allocate_tensor(cutlass.Float16, ring_layout(), 1024)
        s_b = alloc.allocate_tensor(cutlass.Float16, ring_layout(), 1024)
        pipe_a, pipe_b = _twin_pipeline(alloc), _twin_pipeline(alloc)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp < LOAD_A_WARP + 1:  # warp 0 (the same dispatch as the TS kernel's)
            _twin_load(pipe_a, atom_a, g_a, s_a, bidx, num_tiles, gdim, tiles_n)
        if (warp >= LOAD_B_WARP) & (warp < LOAD_B_WARP + 1):
            _twin_load(pipe_b, atom_b, g_b, s_b, bidx, num_tiles, gdim, tiles_n)
        if (warp >= STORE_WARP) & (warp < STORE_WARP + STORE_WARPS):
            # One cursor per ring, as the group's release is lowered: a release of each member.
            state_a = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, STAGES)
            state_b = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, STAGES)
            tidx, _, _ = cute.arch.thread_idx()
            for t in cutlass.range(bidx, num_tiles, gdim):  # type: ignore[attr-defined]
                pipe_a.consumer_wait(state_a)
                pipe_b.consumer_wait(state_b)
                g_out = cute.local_tile(dst, (TILE_M, TILE_N), tile_coord(t, tiles_n))
                add_tiles(
                    tidx - STORE_WARP * 32,
                    s_a[(None, None, state_a.index)],
                    s_b[(None, None, state_b.index)],
                    g_out,
                )
                pipe_a.consumer_release(state_a)
                state_a.advance()
                pipe_b.consumer_release(state_b)
                state_b.advance()

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, dst: cute.Tensor) -> None:
        atom_a, g_a = _load_atom(a)
        atom_b, g_b = _load_atom(b)
        self.kernel(atom_a, g_a, atom_b, g_b, dst).launch(
            grid=(CTAS, 1, 1), block=(BLOCK_THREADS, 1, 1)
        )


# ---------------------------------------------------------------------------------------------
# Host side (tools, benches, tests, CLI): the harness of task_scheduling.harness
# ---------------------------------------------------------------------------------------------


def make_plan() -> KernelPlan:
    """The merge copy as a kernel plan (traced on the host: no GPU, no DSL values)."""
    return KERNEL.plan().plan


KERNEL = ts_kernel()
PLAN = KERNEL.plan().plan
ts_merge_copy = KERNEL.jit_launcher
twin_merge_copy = TwinMergeCopy()
KERNELS = {"ts": ts_merge_copy, "twin": twin_merge_copy}


def compile_only(shape: tuple[int, int] = DEFAULT_SHAPE, *, ops: bool = False) -> dict[str, Any]:
    """Verify the plan, compile both kernels for sm_90a with fake tensors, count PTX."""
    args = [fake_tensor(cutlass.Float16, shape, row_major=True, align=16) for _ in range(3)]
    return compare("merge_copy", KERNELS, args, plan=PLAN, ops=ops, shape=[*shape])


def run_on_gpu(shape: tuple[int, int], iters: int) -> dict[str, Any]:
    """Run both kernels on the GPU, check ``a + b`` against torch, time them."""
    import torch

    a = torch.randn(*shape, device="cuda", dtype=torch.float16)
    b = torch.randn(*shape, device="cuda", dtype=torch.float16)
    want = a + b

    def case(name: str) -> Case:
        dst = torch.zeros_like(a)
        return Case((to_cute(a), to_cute(b), to_cute(dst)), lambda: torch.equal(dst, want))

    out = run_kernels(KERNELS, case, iters=iters, bytes_moved=6 * a.numel())
    return {"example": "merge_copy", "shape": [*shape], **out}


def main(argv: list[str] | None = None) -> int:
    cli = ExampleCLI(__doc__, __file__, shape={"m": DEFAULT_SHAPE[0], "n": DEFAULT_SHAPE[1]})
    args = cli.parse(argv, lambda a: (TILE_M, TILE_N))
    return cli.run(lambda: compile_only(args.shape), lambda: run_on_gpu(args.shape, args.iters))


if __name__ == "__main__":
    sys.exit(main())
