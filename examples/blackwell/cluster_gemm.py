"""A persistent Blackwell GEMM over a thread-block cluster: TMA multicast, tcgen05, PDL (sm_100a).

``C = A @ B^T`` in fp16 with fp32 accumulation in TMEM, ``128 x 128`` tiles, one CTA per tile
and one CTA per UMMA, the CTAs grouped in ``2 x 1`` (or ``1 x 2``) clusters; compiled for
sm_100a without a GPU (nothing here has run on hardware: the project's GPU is a Hopper).

The CTAs of a cluster row compute tiles of the same ``A`` rows, those of a cluster column tiles
of the same ``B`` rows. So each CTA TMA-loads only its share of a K step's ``A`` block (one
``1 / CN`` slice) and of its ``B`` block (one ``1 / CM`` slice) and *multicasts* it into the
SMEM of every CTA of its row (``A``) or column (``B``): a stage of one CTA is filled by the
``CM + CN - 1`` CTAs of its row and column, and the MMA warp of each of them releases it with
a ``tcgen05.commit`` whose multicast mask holds those CTAs (one arrival on each one's empty
barrier). The ``ab`` ring declares that count as the reference does: one commit from each of
the ``CM + CN - 1`` CTAs; ts-verify reads it as one CTA's commit (see docs/blackwell.rst).

Three tasks walk the tiles of the static persistent schedule (every CTA of a cluster visits
its cluster's tiles in the same order):

* ``load`` (warp 4) waits for the previous kernel's grid (``griddepcontrol.wait``, PDL) and
  TMA-loads (multicast) its slices of each K step into the ``ab`` ring (``TmaUmma``);
* ``mma`` (warp 5) allocates TMEM, then per tile acquires an accumulator stage of ``acc``
  (``UmmaAsync``, the CTA's own: two 128-column stages) and issues ``tcgen05.mma`` per K step;
* ``epilogue`` (warps 0-3) reads the accumulator with ``tcgen05.ld`` (one row per thread),
  stores it as fp16, releases the stage; after its last tile it lets the dependent kernel
  launch (``griddepcontrol.launch_dependents``: its prologue overlaps this kernel's tail) and
  frees TMEM.

The kernel is launched with programmatic dependent launch (``use_pdl=True``): it may start
while the previous grid runs, its prologue (barrier initialisation, TMEM allocation)
overlapping that grid's tail, and only its loads wait for it.

The problem must be a whole number of cluster tiles (``M`` a multiple of ``128 CM``, ``N`` of
``128 CN``): a cluster computes all of its CTAs' tiles or none. ::

    python examples/blackwell/cluster_gemm.py                # 2 x 1 cluster, PTX counts
    python examples/blackwell/cluster_gemm.py --cluster 1x2
    ts verify examples/blackwell/cluster_gemm.py:make_plan
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_100a")  # before the DSL is imported

import cutlass.cute as cute
from _umma_gemm import (
    MMA_TILER,
    MMA_WARP,
    TILE_K,
    Gemm,
    OperandRing,
    allocators,
    fake_args,
    gemm_rings,
    gemm_tasks,
    load_op,
    operand_tmas,
    output_tiles,
)
from cutlass.base_dsl.ast_helpers import const_expr
from cutlass.cute.nvgpu import cpasync
from cutlass.cutlass_dsl import Constexpr

from task_scheduling import domain_loop, producer_work, schedule, work_tile_loop
from task_scheduling.harness import compare_ptx
from task_scheduling.resources import (
    MemoryResource,
    PdlLaunchBarrier,
    PdlWaitBarrier,
    TileSchedulerConfig,
    WorkQueue,
)
from task_scheduling.task_manager import TaskManager
from task_scheduling.tiles import TileRaster

BLOCK_THREADS = (MMA_WARP + 1) * 32
SMS = 148  # persistent clusters: one CTA per SM of a B200
CLUSTERS = ((2, 1), (1, 2))


@dataclasses.dataclass(kw_only=True)
class Operands(OperandRing):
    """The A / B ring in SMEM: the cluster's TMA loads fill a stage, the UMMAs read it."""

    cluster_mn: tuple[int, int] = (2, 1)

    @producer_work
    @cute.jit
    def load(self, stage_info: Any) -> None:
        """TMA-load this CTA's slices of K step ``loop_offset``, multicast to the peers.

        ``A`` (tile row ``m``) is shared by the ``CN`` CTAs of the cluster row: this CTA
        loads slice ``n % CN`` of it into all of them. ``B`` alike over the ``CM`` CTAs of the
        column, slice ``m % CM``.
        """
        s_a, s_b = self.views(stage_info)
        m, n = stage_info.work_tile.tile_idx[0], stage_info.work_tile.tile_idx[1]
        cm, cn = self.cluster_mn
        cluster = cute.make_layout((cm, cn, 1))
        coord = cluster.get_flat_coord(
            cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        )
        thr_mma = self.tiled_mma.get_slice(0)
        k = stage_info.loop_offset
        # (atom, TMA tensor, SMEM, tile mode, tile index, sharing CTAs, this CTA's place among
        # them, the cluster mode the sharing CTAs differ in)
        for tma, gmem, smem, mode, idx, peers, place, along in (
            (self.tma_a, self.gmem_a, s_a, (None, 0, None), m, cn, coord[1], 1),
            (self.tma_b, self.gmem_b, s_b, (0, None, None), n, cm, coord[0], 0),
        ):
            tiles = cute.local_tile(gmem, cute.slice_(MMA_TILER, mode), (None, None))
            parts = thr_mma.partition_A(tiles) if mode[1] == 0 else thr_mma.partition_B(tiles)
            t_s, t_g = cpasync.tma_partition(
                tma,
                place,
                cute.make_layout(peers),
                cute.group_modes(smem, 0, 3),
                cute.group_modes(parts, 0, 3),
            )
            if const_expr(peers == 1):
                cute.copy(
                    tma,
                    t_g[(None, idx, k)],
                    t_s[(None, stage_info.stage_idx)],
                    tma_bar_ptr=stage_info.barrier,
                )
            else:
                cute.copy(
                    tma,
                    t_g[(None, idx, k)],
                    t_s[(None, stage_info.stage_idx)],
                    tma_bar_ptr=stage_info.barrier,
                    mcast_mask=cute.make_layout_image_mask(cluster, coord, mode=along),
                )


@schedule
def load(wq: Any, pdl: Any, ab: Any) -> None:
    pdl.wait_griddep()  # A and B may be the previous kernel's output
    with work_tile_loop(wq), domain_loop(Gemm.k_tiles):
        ab.acquire()
        ab.load()
        ab.commit()


@schedule
def mma(wq: Any, tmem: Any, ab: Any, acc: Any) -> None:
    tmem.allocate()  # before the first UMMA into the accumulator
    with work_tile_loop(wq):
        acc.acquire()
        with domain_loop(Gemm.k_tiles):
            ab.wait()
            s = ab.stage_index()
            acc.mma(ab_stage=s)
            ab.release()  # tcgen05.commit, multicast: the stage is free in every CTA that filled it
        acc.commit()  # tcgen05.commit: the accumulator is full once every UMMA is done


@schedule
def epilogue(wq: Any, tmem: Any, acc: Any, launch: Any) -> None:
    with work_tile_loop(wq):
        acc.wait()
        acc.store()
        acc.release()
    launch.launch_griddep()  # the dependent kernel's prologue may start now
    tmem.free()  # after the last tcgen05.ld of the accumulator


def build(
    cluster_mn: tuple[int, int] = (2, 1),
    params: Any = None,
    k_tiles: Any = 8,
    tiled_mma: Any = None,
    tma: tuple[Any, ...] = (None, None, None, None),
    layouts: tuple[Any, Any] = (None, None),
    gmem_c: Any = None,
) -> TaskManager:
    """The resources, tasks and TaskManager (on the host: placeholders for the DSL values)."""
    cm, cn = cluster_mn
    # Each CTA's empty barrier: one commit from the MMA warp of each of the CM + CN - 1
    # CTAs of its cluster row and column (the reference's count; TS reads one CTA's).
    ab, acc, tmem = gemm_rings(
        Operands,
        tiled_mma,
        tma,
        layouts,
        gmem_c,
        ab_releases=cm + cn - 1,
        vmnk=(1, cm, cn, 1),
        cluster_mn=cluster_mn,
    )
    wq = WorkQueue(
        TileSchedulerConfig.create_static_persistent_tile_scheduler_params(params), name="tiles"
    )
    pdl_wait, pdl_launch = PdlWaitBarrier(name="pdl_wait"), PdlLaunchBarrier(name="pdl_launch")
    smem, columns = allocators((ab, acc), (acc,))
    tasks = gemm_tasks((epilogue, load, mma), (wq, tmem, ab, acc, pdl_wait, pdl_launch), k_tiles)
    graph: dict[MemoryResource, list[MemoryResource]] = {ab: [wq, pdl_wait], acc: [ab, wq]}
    return TaskManager(
        tasks, graph, smem_allocator=smem, tmem_allocator=columns, name="blackwell_cluster_gemm"
    )


def make_plan() -> Any:
    """The kernel plan of the 2 x 1 cluster (what ``ts show`` / ``verify`` / ``compile`` read)."""
    return build().plan


@cute.kernel
def kernel(
    tiled_mma: cute.TiledMma,
    tma_a: cute.CopyAtom,
    gmem_a: cute.Tensor,
    tma_b: cute.CopyAtom,
    gmem_b: cute.Tensor,
    gmem_c: cute.Tensor,
    layout_a: cute.ComposedLayout,
    layout_b: cute.ComposedLayout,
    params: TileRaster,
    cluster_mn: Constexpr[tuple[int, int]],
) -> None:
    k_tiles = cute.ceil_div(cute.size(gmem_a, mode=[1]), TILE_K)
    manager = build(
        cluster_mn,
        params,
        k_tiles,
        tiled_mma,
        (tma_a, gmem_a, tma_b, gmem_b),
        (layout_a, layout_b),
        gmem_c,
    )
    manager.setup_resources_and_tasks()
    manager.run()


@cute.jit
def launch(
    a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, cluster_mn: Constexpr[tuple[int, int]]
) -> None:
    cm, cn = cluster_mn
    # A is shared along the cluster's N (CN CTAs), B along its M (CM CTAs).
    tiled_mma, tma, (layout_a, layout_b) = operand_tmas(
        a, b, (load_op(cn), load_op(cm)), (1, cm, cn, 1)
    )
    params = TileRaster(output_tiles(c), (cm, cn, 1))
    grid = TileSchedulerConfig.create_static_persistent_tile_scheduler_params(params).grid_shape(
        SMS // (cm * cn)
    )
    kernel(tiled_mma, *tma, c, layout_a, layout_b, params, cluster_mn).launch(
        grid=grid,
        block=(BLOCK_THREADS, 1, 1),
        cluster=(cm, cn, 1),
        # Programmatic dependent launch: this grid may start while the previous one runs; its
        # prologue (barriers, TMEM) overlaps that tail, its loads wait (griddepcontrol.wait).
        use_pdl=True,
    )


def compile_only(cluster_mn: tuple[int, int] = (2, 1)) -> dict[str, Any]:
    """Compile for the target (sm_100a by default) with fake tensors; PTX counts per opcode."""
    if cluster_mn not in CLUSTERS:
        raise ValueError(f"cluster {cluster_mn} is not one of {CLUSTERS}")
    counts = compare_ptx({"ts": launch}, *fake_args(), cluster_mn, ops=True)
    return {"example": "blackwell_cluster_gemm", "cluster": list(cluster_mn), **counts}


def _cluster_arg(argv: list[str]) -> tuple[int, int]:
    """``--cluster CMxCN`` (default 2x1)."""
    if "--cluster" not in argv:
        return (2, 1)
    text = argv[argv.index("--cluster") + 1]
    cm, cn = (int(x) for x in text.lower().split("x"))
    return (cm, cn)


if __name__ == "__main__":
    import json

    print(json.dumps(compile_only(_cluster_arg(sys.argv[1:])), indent=1, sort_keys=True))
    sys.exit(0)
