"""Blackwell rings over a cluster that are not lowered are refused before any DSL code.

``TmaUmma`` and ``UmmaAsync`` rings over a cluster are lowered (their PTX is checked by the
cluster GEMM's tests); ``AsyncUmma``, ``UmmaUmma`` and ``ClcFetchAsync`` rings over a cluster
are not, and the lowering says so naming the resource, the kind and the cluster.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

pytest.importorskip("cutlass")

from ts_codegen import LoweringError, emit_tasks
from ts_ir import CooperativeGroupSpec, PipelineSpec, PipelineType
from ts_trace import (
    MemoryResource,
    ResourceProxy,
    TaskDeclaration,
    build_plan,
    consumer_work,
    producer_work,
    schedule,
)

# The smoke subset (the oldest Python runs only it): one kernel of each kind.
pytestmark = pytest.mark.smoke


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    """A ring with one producer and one consumer work method."""

    @producer_work
    def fill(self, stage_info: Any) -> None:
        del stage_info

    @consumer_work
    def drain(self, stage_info: Any) -> None:
        del stage_info


@schedule
def produce(ring: ResourceProxy) -> None:
    ring.acquire()
    ring.fill()
    ring.commit()


@schedule
def consume(ring: ResourceProxy) -> None:
    ring.wait()
    ring.drain()
    ring.release()


@pytest.mark.parametrize(
    "kind", [PipelineType.AsyncUmma, PipelineType.UmmaUmma, PipelineType.ClcFetchAsync]
)
def test_a_single_cta_kind_over_a_cluster_is_refused(kind: PipelineType) -> None:
    one = CooperativeGroupSpec("thread", 1)
    spec = PipelineSpec(kind, 2, 16, one, one, cluster_mn=(2, 1))
    ring = Ring(name="ring", pipeline_config=spec)
    plan = build_plan(
        [
            TaskDeclaration([], [ring], 0, 1, produce(ring), name="producer"),
            TaskDeclaration([ring], [], 1, 1, consume(ring), name="consumer"),
        ],
        {ring: []},
    )
    # No SMEM allocator is needed: the refusal comes before any barrier is carved.
    with pytest.raises(LoweringError) as e:
        emit_tasks(plan, [ring], smem_allocator=object())
    text = str(e.value)
    assert f"resource `ring`: a {kind.value} pipeline over a (2, 1) cluster" in text
    assert "TmaUmma and UmmaAsync rings are" in text
