"""Pipeline groups through the staged front door: planned and verified on the host.

The lowering takes them (``ts_codegen.groups``) except a TMA Fork whose shared full barrier is
not lowered (over a cluster, TMA mixed with thread producers), refused with a typed error
before any code is generated.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ts_ir import CooperativeGroupSpec, PipelineGroupMode, PipelineSpec, PipelineType
from ts_runtime import Kernel, Tasks, UnsupportedFeatureError
from ts_runtime.pipeline_groups import check_lowerable_groups
from ts_runtime.task import Task
from ts_trace import (
    MemoryResource,
    PipelineGroup,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
)


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    @producer_work
    def load(self, stage_info: Any) -> None: ...

    @consumer_work
    def read(self, stage_info: Any) -> None: ...


@dataclasses.dataclass(kw_only=True)
class Sink(MemoryResource):
    @producer_work
    def store(self, stage_info: Any) -> None: ...


def _pipe() -> PipelineSpec:
    threads = CooperativeGroupSpec("thread", 32)
    return PipelineSpec(PipelineType.AsyncAsync, 2, 0, threads, CooperativeGroupSpec("thread", 128))


def merge_copy(k: Any, tiles: Any, *, member_release: bool = False) -> Tasks:
    a, b = (
        Ring(name="smem_a", pipeline_config=_pipe()),
        Ring(name="smem_b", pipeline_config=_pipe()),
    )
    ab = PipelineGroup(name="ab", members=[a, b], mode=PipelineGroupMode.Merge)
    out = Sink(name="out")

    @schedule
    def load(r: Any) -> None:
        with domain_loop(tiles):
            r.acquire()
            r.load()
            r.commit()

    @schedule
    def store(g: Any, o: Any) -> None:
        with domain_loop(tiles):
            g.smem_a.wait()
            g.smem_b.wait()
            g.smem_a.read()
            g.smem_b.read()
            o.store()
            if member_release:
                g.smem_a.release()
            g.release()

    return Tasks(
        [
            Task([], [a], 0, 1, schedule=load(a), name="load_a"),
            Task([], [b], 1, 1, schedule=load(b), name="load_b"),
            Task([a, b], [out], 4, 4, schedule=store(ab, out), name="store"),
        ],
        {out: [a, b]},
    )


def test_merge_plans_and_verifies_on_the_host() -> None:
    kernel = Kernel(merge_copy)
    plan = kernel.plan().plan
    (group,) = plan.groups
    assert group.name == "ab" and group.members == ("smem_a", "smem_b")
    assert "ab" not in {r.name for r in plan.resources}  # the group is no resource of its own
    assert kernel.verify().ok, kernel.verify().as_text()


def test_member_release_is_reported_at_its_line() -> None:
    def broken(k: Any, tiles: Any) -> Tasks:
        return merge_copy(k, tiles, member_release=True)

    report = Kernel(broken).verify().report
    assert "TS-V241" in report.codes() and not report.ok


def _tma_pipe(cluster_mn: tuple[int, int] = (1, 1)) -> PipelineSpec:
    one, threads = CooperativeGroupSpec("thread", 1), CooperativeGroupSpec("thread", 128)
    return PipelineSpec(PipelineType.TmaAsync, 2, 1024, one, threads, cluster_mn=cluster_mn)


def fork(
    k: Any,
    tiles: Any,
    *,
    load_each: bool = False,
    b_cluster: tuple[int, int] = (1, 1),
    b_thread: bool = False,
) -> Tasks:
    a = Ring(name="fork_a", pipeline_config=_tma_pipe())
    b = Ring(name="fork_b", pipeline_config=_pipe() if b_thread else _tma_pipe(b_cluster))
    ab = PipelineGroup(name="ab", members=[a, b], mode=PipelineGroupMode.Fork)
    out_a, out_b = Sink(name="out_a"), Sink(name="out_b")

    @schedule
    def load(g: Any) -> None:
        with domain_loop(tiles):
            g.fork_a.acquire()
            g.fork_b.acquire()
            g.fork_a.load()
            if load_each:
                g.fork_b.load()
            g.commit()

    @schedule
    def use(r: Any, o: Any) -> None:
        with domain_loop(tiles):
            r.wait()
            r.read()
            o.store()
            r.release()

    return Tasks(
        [
            Task([], [a, b], 0, 1, schedule=load(ab), name="load"),
            Task([a], [out_a], 4, 4, schedule=use(a, out_a), name="use_a"),
            Task([b], [out_b], 8, 4, schedule=use(b, out_b), name="use_b"),
        ],
        {out_a: [a], out_b: [b]},
    )


def test_merge_and_tma_fork_are_lowerable() -> None:
    check_lowerable_groups(Kernel(merge_copy).plan().plan)  # no error
    plan = Kernel(fork).plan().plan  # one load into fork_a feeds both consumers
    check_lowerable_groups(plan)


def test_tma_fork_over_a_cluster_is_refused() -> None:
    def clustered(k: Any, tiles: Any) -> Tasks:
        return fork(k, tiles, b_cluster=(2, 1))

    with pytest.raises(
        UnsupportedFeatureError,
        match=r"TS-R001: .*PipelineGroup `ab` \(Fork\): member `fork_b` is a ring over a "
        r"\(2, 1\) cluster",
    ) as err:
        check_lowerable_groups(Kernel(clustered).plan().plan)
    assert "1 x 1 cluster" in str(err.value)
    from ts_codegen import LoweringError
    from ts_codegen.groups import lowered_plan

    with pytest.raises(LoweringError, match=r"`fork_b` is a ring over a \(2, 1\) cluster"):
        lowered_plan(Kernel(clustered).plan().plan)  # the code generator's own guard


def test_tma_fork_mixed_with_a_thread_producer_is_refused() -> None:
    def mixed(k: Any, tiles: Any) -> Tasks:
        return fork(k, tiles, b_thread=True)

    with pytest.raises(
        UnsupportedFeatureError,
        match=r"member `fork_b` is fed by threads \(AsyncAsync\) beside TMA-fed members",
    ):
        check_lowerable_groups(Kernel(mixed).plan().plan)


def test_tma_fork_arms_the_shared_barrier_with_every_loaded_member() -> None:
    from ts_codegen.groups import fork_shared_full, fork_tx_bytes

    plan = Kernel(fork).plan().plan
    assert fork_shared_full(plan) == {"fork_b": "fork_a"}
    assert fork_tx_bytes(plan) == {"fork_a": 1024}  # the one load

    def both(k: Any, tiles: Any) -> Tasks:
        return fork(k, tiles, load_each=True)

    assert fork_tx_bytes(Kernel(both).plan().plan) == {"fork_a": 2048}
    assert fork_shared_full(Kernel(merge_copy).plan().plan) == {}


def test_smem_allocator_takes_the_group_and_reserves_nothing_for_it() -> None:
    from ts_runtime import RuntimeConfigError
    from ts_runtime.memory import SmemAllocator

    a, b = Ring(name="ga", pipeline_config=_pipe()), Ring(name="gb", pipeline_config=_pipe())
    group = PipelineGroup(name="g", members=[a, b], mode=PipelineGroupMode.Merge)
    alloc = SmemAllocator()
    alloc.add_resource(a)
    alloc.add_resource(b)
    assert alloc.add_pipeline_group(group) is group
    assert alloc.barrier_smem_bytes == 2 * 2 * 16  # the members' own barriers, 2 stages each
    with pytest.raises(RuntimeConfigError, match=r"expected a PipelineGroup, got"):
        alloc.add_pipeline_group(a)
