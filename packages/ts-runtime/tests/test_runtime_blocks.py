"""The reusable blocks of ``ts_runtime.blocks`` on the host: pipelines, plans, verification.

Their CuTe DSL side (``ts_codegen.dsl.wgmma``) is compiled by the Hopper GEMM example's test
(``test_runtime_gemm_example.py``), which builds its TS kernel from these blocks and checks its
PTX against the hand-written twin in every configuration it tests.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from typing import Any

import pytest

from ts_ir import (
    CooperativeGroupSpec,
    PipelineSpec,
    PipelineType,
    Schedule,
    TileSchedulerType,
    WorkAttr,
)
from ts_runtime import Task
from ts_runtime.blocks import (
    GmemVector,
    SplitK,
    TileTurns,
    TmaEpilogue,
    TmaSource,
    WgmmaAccumulator,
    WgmmaRing,
    WgmmaWaits,
    grid_stride,
    prefetch_tma,
    tile_queue,
)
from ts_runtime.staged import Kernel, KernelContext, Symbol, Tasks
from ts_trace import (
    MemoryResource,
    ResourceProxy,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    when_false,
    when_true,
    work_tile_loop,
)

TILE = (128, 256)
STAGE_BYTES = (128 + 256) * 64 * 2


def _math(k_tiles: Any, *, early_release: bool = False) -> Callable[..., Schedule]:
    @schedule
    def math(wq: ResourceProxy, ab: ResourceProxy, acc: ResourceProxy, c: ResourceProxy) -> None:
        acc.setup()
        c.setup()
        with work_tile_loop(wq):
            acc.zero()
            with domain_loop(k_tiles, unroll=1) as kb:
                ab.wait()
                ab.mma()
                if early_release:  # the stage's WGMMAs may still read it
                    ab.release()
                    ab.mma_wait_all()
                else:
                    ab.mma_wait_prior()
                    with kb.every(1, start=1):
                        ab.release()
                    with kb.last_iter():
                        ab.mma_wait_all()
                        ab.release()
            c.store()
        c.drain()

    return math


def _gemm(early_release: bool = False, cluster_mn: tuple[int, int] = (1, 1)) -> Kernel:
    """A cooperative GEMM on the blocks: a load warp, two math warpgroups."""

    def declare(
        k: KernelContext, atom_a: Any, t_a: Any, atom_b: Any, t_b: Any, atom_c: Any, t_c: Any
    ) -> Tasks:
        prefetch_tma(k, atom_a, atom_b, atom_c)
        k_tiles = k.value("k_tiles", lambda: 1 // 0)
        wq = tile_queue(k.value("params", lambda: 1 // 0))
        s_a, s_b, s_c = (k.smem_tensor("bf16", lambda: 1 // 0) for _ in range(3))
        mma = k.value("tiled_mma", lambda: 1 // 0)
        acc = WgmmaAccumulator(name="acc", tiled_mma=mma, tile_mn=TILE, smem_a=s_a, smem_b=s_b)
        ab = WgmmaRing(
            name="ab",
            pipeline_config=WgmmaRing.pipeline(4, STAGE_BYTES, 256, cluster_mn),
            a=TmaSource(atom_a, t_a, s_a),
            b=TmaSource(atom_b, t_b, s_b),
            acc=acc,
            tile_k=64,
        )
        c = TmaEpilogue(
            name="c", acc=acc, atom=atom_c, gmem=t_c, smem=s_c, sub_tile=(128, 32), barrier_id=1
        )

        @schedule
        def load(wq: ResourceProxy, ab: ResourceProxy) -> None:
            ab.setup()
            with work_tile_loop(wq), domain_loop(k_tiles, unroll=1):
                ab.acquire()
                ab.load()
                ab.commit()

        math = _math(k_tiles, early_release=early_release)(wq, ab, acc, c)
        return Tasks(
            [
                Task([wq], [ab], 0, 1, schedule=load(wq, ab), num_registers=40, name="load"),
                Task([wq, ab, acc], [c], 4, 8, schedule=math, num_registers=232, name="mma"),
            ],
            {ab: [wq], c: [ab, acc, wq]},
        )

    return Kernel(declare, name="gemm", block_warps=12)


def test_wgmma_blocks_plan_and_verify_on_the_host() -> None:
    kernel = _gemm()
    verified = kernel.verify()
    assert verified.ok, verified.as_text()
    plan = kernel.plan().plan
    ring = next(r for r in plan.resources if r.name == "ab")
    assert ring.pipeline is not None
    assert ring.pipeline.type is PipelineType.TmaWgmma
    assert (ring.pipeline.stages, ring.pipeline.bytes_per_stage) == (4, STAGE_BYTES)
    assert (ring.pipeline.producer_group.size, ring.pipeline.consumer_group.size) == (1, 256)
    assert {r.name for r in plan.resources if r.pipeline is None} == {"WorkQueue", "acc", "c"}
    text = kernel.trace().as_text()
    for step in ("ab.setup", "ab.load", "ab.mma", "ab.mma_wait_prior", "acc.zero", "c.store"):
        assert step in text


def test_wgmma_ring_release_before_the_wgmma_wait_is_rejected() -> None:
    """The ring's ``mma`` reads the stage asynchronously: TS-V113 for an early release."""
    report = _gemm(early_release=True).verify().report
    assert not report.ok
    assert "TS-V113" in report.codes()


def test_wgmma_ring_pipeline_spans_the_cluster() -> None:
    spec = WgmmaRing.pipeline(3, STAGE_BYTES, 128, (2, 1))
    assert spec.cluster_mn == (2, 1) and spec.type is PipelineType.TmaWgmma
    kernel = _gemm(cluster_mn=(1, 2))
    assert kernel.verify().ok
    ring = next(r for r in kernel.plan().plan.resources if r.name == "ab")
    assert ring.pipeline is not None and ring.pipeline.cluster_mn == (1, 2)
    acc = WgmmaAccumulator(name="acc", tiled_mma=None, tile_mn=TILE, smem_a=None, smem_b=None)
    source = TmaSource(None, None, None)
    ring_block = WgmmaRing(
        name="ab",
        pipeline_config=spec,
        a=source,
        b=source,
        acc=acc,
        tile_k=64,
    )
    assert ring_block.cluster_mn == (2, 1)


def test_wgmma_ring_mmas_write_the_calling_tasks_accumulator() -> None:
    """Tasks that read one ring in turns (ping-pong) each give their accumulator as the task
    cache; a task without one (or with another cache) writes the ring's."""
    ring_acc, own = (
        WgmmaAccumulator(name=n, tiled_mma=None, tile_mn=TILE, smem_a=None, smem_b=None)
        for n in ("acc0", "acc1")
    )
    source = TmaSource(None, None, None)
    spec = WgmmaRing.pipeline(3, STAGE_BYTES, 256)
    ring = WgmmaRing(name="ab", pipeline_config=spec, a=source, b=source, acc=ring_acc, tile_k=64)
    assert ring.acc_of(types.SimpleNamespace(task_cache=own)) is own
    assert ring.acc_of(types.SimpleNamespace(task_cache=None)) is ring_acc
    assert ring.acc_of(types.SimpleNamespace(task_cache=(own,))) is ring_acc


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    @producer_work
    def fill(self, stage_info: Any) -> None:
        """Write a stage."""

    @consumer_work
    def drain(self, stage_info: Any) -> None:
        """Read a stage."""


def _pingpong(second: Any) -> Kernel:
    """A producer fills ring 0 on even tiles and ring 1 on odd ones; one consumer per ring,
    the second running on ``second`` (``when_true``: the odd tiles)."""

    def declare(k: KernelContext, params: Any) -> Tasks:
        wq, turns = tile_queue(params), TileTurns(name="turns")
        pipe = PipelineSpec(
            PipelineType.AsyncAsync,
            2,
            0,
            CooperativeGroupSpec("thread", 32),
            CooperativeGroupSpec("thread", 128),
        )
        rings = [Ring(name=f"ring{i}", pipeline_config=pipe) for i in range(2)]

        @schedule
        def fill(wq: ResourceProxy, turns: ResourceProxy, *rings: ResourceProxy) -> None:
            n = turns.start()
            with work_tile_loop(wq):
                n, odd = turns.take(count=n)
                for mine, ring in zip((when_false, when_true), rings, strict=True):
                    with mine(odd, key="odd"):
                        ring.acquire()
                        ring.fill()
                        ring.commit()

        def drain(mine: Any) -> Callable[..., Schedule]:
            @schedule
            def drain(wq: ResourceProxy, turns: ResourceProxy, ring: ResourceProxy) -> None:
                n = turns.start()
                with work_tile_loop(wq):
                    n, odd = turns.take(count=n)
                    with mine(odd, key="odd"):
                        ring.wait()
                        ring.drain()
                        ring.release()

            return drain

        tasks = [Task([wq, turns], rings, 0, 1, schedule=fill(wq, turns, *rings), name="fill")]
        for i, mine in enumerate((when_false, second)):
            sched = drain(mine)(wq, turns, rings[i])
            tasks.append(
                Task([wq, turns, rings[i]], [], 4 + 4 * i, 4, schedule=sched, name=f"d{i}")
            )
        return Tasks(tasks, {ring: [wq, turns] for ring in rings})

    return Kernel(declare, name="pingpong", block_warps=12)


def test_tile_turns_alternate_the_tiles_between_two_tasks() -> None:
    turns = TileTurns(name="turns")
    assert turns.take(None, count=0) == (1, False)
    assert turns.take(None, count=3) == (4, True)
    kernel = _pingpong(when_true)
    assert kernel.verify().ok, kernel.verify().as_text()
    assert "turns.take" in kernel.trace().as_text()
    # Both consumers on the even tiles: ring 1 is waited for on tiles it is never filled.
    assert "TS-V301" in _pingpong(when_false).verify().report.codes()


def test_tile_queue_static_or_dynamic() -> None:
    params, counters = Symbol("params"), Symbol("counters")
    static = tile_queue(params)
    assert static.tile_scheduler_config.tile_scheduler_type is TileSchedulerType.StaticPersistent
    assert static.pipeline_config is None and static.name == "WorkQueue"
    dynamic = tile_queue(params, counters, consumer_threads=256, stages=3, name="tiles")
    cfg = dynamic.tile_scheduler_config
    assert cfg.tile_scheduler_type is TileSchedulerType.AtomicDynamicPersistent
    assert cfg.counters is counters and dynamic.name == "tiles"
    pipe = dynamic.pipeline_config
    assert pipe.pipeline_type is PipelineType.AsyncAsync and pipe.num_stages == 3
    assert (pipe.producer_group.size, pipe.consumer_group.size) == (32, 256)


def test_prefetch_tma_does_nothing_on_the_host() -> None:
    prefetch_tma(KernelContext(False), Symbol("atom"), warp=0)  # no DSL needed


def test_epilogue_fuse_is_optional() -> None:
    acc = WgmmaAccumulator(name="acc", tiled_mma=None, tile_mn=TILE, smem_a=None, smem_b=None)
    plain = TmaEpilogue(
        name="c", acc=acc, atom=None, gmem=None, smem=None, sub_tile=(128, 32), barrier_id=1
    )
    assert plain.fuse is None and plain.pipeline_config is None
    with pytest.raises(TypeError):
        TmaEpilogue(name="c", acc=acc)  # type: ignore[call-arg]


@dataclasses.dataclass(kw_only=True)
class OneOperandRing(WgmmaWaits):
    """A WGMMA ring of one's own (one operand's K blocks): its MMAs read the waited stage."""

    @producer_work
    def load(self, stage_info: Any) -> None:
        """TMA-load a K block."""

    @consumer_work
    def mma(self, stage_info: Any) -> None:
        """Issue the WGMMAs of the waited stage (asynchronous)."""


def _own_ring(early_release: bool) -> Kernel:
    """A load warp and an MMA task on a ``WgmmaWaits`` ring of its own (the GEMM's K loop)."""

    def declare(k: KernelContext, params: Any) -> Tasks:
        k_tiles, wq = k.value("k_tiles", lambda: 1 // 0), tile_queue(params)
        ring = OneOperandRing(name="a", pipeline_config=WgmmaRing.pipeline(4, 128 * 128, 256))

        @schedule
        def load(wq: ResourceProxy, a: ResourceProxy) -> None:
            with work_tile_loop(wq), domain_loop(k_tiles, unroll=1):
                a.acquire()
                a.load()
                a.commit()

        @schedule
        def mma(wq: ResourceProxy, a: ResourceProxy) -> None:
            with work_tile_loop(wq), domain_loop(k_tiles, unroll=1):
                a.wait()
                a.mma()
                if not early_release:  # else the stage goes back while its WGMMAs read it
                    a.mma_wait_all()
                a.release()

        return Tasks(
            [
                Task([wq], [ring], 0, 1, schedule=load(wq, ring), name="load"),
                Task([wq, ring], [], 4, 8, schedule=mma(wq, ring), name="mma"),
            ],
            {ring: [wq]},
        )

    return Kernel(declare, name="own_ring", block_warps=12)


def test_wgmma_waits_are_the_wait_works_of_a_ring_of_ones_own() -> None:
    works = OneOperandRing.work_methods()
    assert works["mma_wait_prior"].info.attrs is WorkAttr.ASYNC_WAIT_PRIOR
    assert works["mma_wait_all"].info.attrs is WorkAttr.ASYNC_WAIT_ALL
    assert {"mma_wait_prior", "mma_wait_all"} <= set(WgmmaRing.work_methods())  # inherited
    verified = _own_ring(early_release=False).verify()
    assert verified.ok, verified.as_text()
    assert "TS-V113" in _own_ring(early_release=True).verify().report.codes()


def test_gmem_vector_reads_and_writes_the_loop_offsets_element() -> None:
    at = types.SimpleNamespace(loop_offset=2)
    src = GmemVector(name="src", tensor=[1.0, 2.0, 3.0], dtype="Float16")
    out = GmemVector(name="out", tensor=[0.0] * 3, op=lambda x: x * 2.0)
    assert src.task_local_variables()["element"].dtype == "Float16"
    assert src.load(at) == 3.0
    out.store(at, element=3.0)
    assert out.tensor == [0.0, 0.0, 6.0]
    works = GmemVector.work_methods()
    assert works["load"].outputs == ("element",) and works["store"].outputs == ()


def test_grid_stride_copy_on_the_blocks_verifies() -> None:
    def declare(k: KernelContext, src: Any, dst: Any, n: Any) -> Tasks:
        s, d = GmemVector(name="src", tensor=src), GmemVector(name="dst", tensor=dst)
        assert grid_stride(k, n)[1] is n  # from this thread's index, by the grid's threads

        @schedule
        def copy(src: ResourceProxy, dst: ResourceProxy) -> None:
            with domain_loop(*grid_stride(k, n), unroll=4):
                dst.store(element=src.load())

        return Tasks([Task([s], [d], 0, 8, schedule=copy(s, d), name="copy")], {d: [s]})

    kernel = Kernel(declare, name="copy")
    verified = kernel.verify()
    assert verified.ok, verified.as_text()
    assert "src.load" in kernel.trace().as_text() and "dst.store" in kernel.trace().as_text()


@pytest.mark.parametrize("shape", [(0, 1), (2,), (2, 1, 1), (2.0, 1), (True, 1), [2, 1]])
def test_split_k_cluster_shape_is_checked(shape: Any) -> None:
    from ts_runtime.errors import RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match=r"SplitK\(cluster_mn=.*two ints >= 1") as err:
        SplitK(2, None, None, None, 1, 1, 1, True, shape)
    assert "cluster_mn=(2, 1)" in err.value.fix
    assert SplitK(2, None, None, None, 1, 1, 1, True, (1, 2)).cluster_mn == (1, 2)
