"""Pipeline groups through the staged front door: planned and verified on the host.

The lowering refuses them with a typed error (not lowered yet).
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


def test_lowering_refuses_groups() -> None:
    plan = Kernel(merge_copy).plan().plan
    with pytest.raises(UnsupportedFeatureError, match=r"TS-R001: .*PipelineGroup `ab` \(Merge"):
        check_lowerable_groups(plan)
    check_lowerable_groups(
        Kernel(merge_copy).plan().plan.__class__(name="empty", resources=(), tasks=())
    )
