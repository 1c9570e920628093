"""The deadlocking segment copy of docs/verification.rst, drawn by tools/render_timelines.py."""

from __future__ import annotations

import dataclasses
from typing import Any

from ts_ir import CooperativeGroupSpec, KernelPlan, PipelineSpec, PipelineType
from ts_trace import (
    MemoryResource,
    ResourceProxy,
    TaskDeclaration,
    build_plan,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
)


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    @producer_work
    def fill(self, stage_info: Any) -> None: ...

    @consumer_work
    def drain(self, stage_info: Any) -> None: ...


class Segment:
    def length(self, work_tile_coord: Any) -> Any: ...


@schedule
def loader(ring: ResourceProxy, header: ResourceProxy) -> None:
    with domain_loop(Segment.length):
        ring.acquire()
        ring.fill()
        ring.commit()
    header.acquire()
    header.fill()
    header.commit()


@schedule
def writer(ring: ResourceProxy, header: ResourceProxy) -> None:
    header.wait()
    header.drain()
    header.release()
    with domain_loop(Segment.length):
        ring.wait()
        ring.drain()
        ring.release()


def kernel() -> KernelPlan:
    group = CooperativeGroupSpec("thread", 128)
    ring = Ring(
        name="ring", pipeline_config=PipelineSpec(PipelineType.AsyncAsync, 2, 0, group, group)
    )
    header = Ring(
        name="header", pipeline_config=PipelineSpec(PipelineType.AsyncAsync, 1, 0, group, group)
    )
    tasks = [
        TaskDeclaration([], [ring, header], 0, 4, loader(ring, header), name="loader"),
        TaskDeclaration([ring, header], [], 4, 4, writer(ring, header), name="writer"),
    ]
    return build_plan(tasks, {ring: [], header: []}, name="segment_copy")
