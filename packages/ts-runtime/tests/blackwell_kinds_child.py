"""Compile one ring of a Blackwell pipeline kind through TaskManager for sm_100a; print its PTX.

Run as ``CUTE_DSL_ARCH=sm_100a python blackwell_kinds_child.py KIND``: a 1-warp producer task
and a consumer task (1 warp for a UMMA consumer, 4 otherwise) move ``TRIPS`` stages through a
ring of kind ``KIND``; the work calls are empty (what is checked is the barrier protocol the
lowering emits: how each side arrives). Prints ``PTX_BEGIN``, the PTX and ``PTX_END``.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe

from ts_codegen.dsl import compile_ptx
from ts_ir import SignalingThreads
from ts_runtime import PipelineConfig, SmemAllocator, Task, TaskManager
from ts_trace import MemoryResource, consumer_work, domain_loop, producer_work, schedule

TRIPS = 8


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    """A ring whose work does nothing but mark the stage it was given."""

    @producer_work
    @cute.jit
    def fill(self, stage_info: Any) -> None:
        pass

    @consumer_work
    @cute.jit
    def drain(self, stage_info: Any) -> None:
        pass


@dataclasses.dataclass(kw_only=True)
class Outside(MemoryResource):
    """The ring's upstream and downstream (no pipeline)."""


def _config(kind: str, consumer_warps: int) -> PipelineConfig:
    one = cpipe.CooperativeGroup(cpipe.Agent.Thread, 1)
    # A UMMA consumer arrives once per warp (tcgen05.commit); an AsyncThread one per thread.
    umma_consumer = kind.endswith("Umma")
    consumers = cpipe.CooperativeGroup(
        cpipe.Agent.Thread, consumer_warps if umma_consumer else consumer_warps * 32
    )
    # An AsyncThread producer of one warp arrives 32 times; a UMMA / TMA / CLC one once.
    producers = cpipe.CooperativeGroup(cpipe.Agent.Thread, 32) if kind == "AsyncUmma" else one
    if kind == "TmaUmma":
        return PipelineConfig.create_tma_umma_pipeline_cfg(4, 8192, producers, consumers)
    if kind == "UmmaAsync":
        return PipelineConfig.create_umma_async_pipeline_cfg(2, producers, consumers)
    if kind == "AsyncUmma":
        return PipelineConfig.create_async_umma_pipeline_cfg(2, producers, consumers)
    if kind == "UmmaUmma":
        return PipelineConfig.create_umma_umma_pipeline_cfg(2, producers, consumers)
    assert kind == "ClcFetchAsync"
    return PipelineConfig.create_clc_fetch_async_pipeline_cfg(
        2, 16, producers, consumers, producer_signaling_threads=SignalingThreads.All
    )


KIND = sys.argv[1] if len(sys.argv) > 1 else "UmmaUmma"
CONSUMER_WARPS = 1 if KIND.endswith("Umma") else 4


@schedule
def produce(src: Any, ring: Any) -> None:
    with domain_loop(TRIPS):
        ring.acquire()
        ring.fill()
        ring.commit()


@schedule
def consume(ring: Any, dst: Any) -> None:
    with domain_loop(TRIPS):
        ring.wait()
        ring.drain()
        ring.release()


@cute.kernel
def kernel() -> None:
    src, dst = Outside(name="src"), Outside(name="dst")
    ring = Ring(name="ring", pipeline_config=_config(KIND, CONSUMER_WARPS))
    smem = SmemAllocator()
    smem.add_resource(ring)
    tasks = [
        Task([ring], [dst], 0, CONSUMER_WARPS, schedule=consume(ring, dst), name="consumer"),
        Task([src], [ring], 4, 1, schedule=produce(src, ring), name="producer"),
    ]
    manager = TaskManager(tasks, {ring: [src], dst: [ring]}, smem_allocator=smem)
    manager.setup_resources_and_tasks()
    manager.run()


@cute.jit
def host() -> None:
    kernel().launch(grid=(1, 1, 1), block=(5 * 32, 1, 1))


def _translation(plans: list[Any], ptx: str) -> dict[str, Any]:
    """Translation validation of the PTX against the plan, and against the plan with the
    UMMA side's group one arrival larger (which no barrier of the PTX counts)."""
    from ts_runtime import check_ptx

    plan = plans[0]
    report = check_ptx(plan, ptx)
    ring = next(r for r in plan.resources if r.name == "ring")
    pipe = ring.pipeline
    side = "consumer_group" if KIND.endswith("Umma") else "producer_group"
    group = getattr(pipe, side)
    bigger = dataclasses.replace(group, size=group.size + 1)
    other = dataclasses.replace(
        plan,
        resources=tuple(
            dataclasses.replace(r, pipeline=dataclasses.replace(pipe, **{side: bigger}))
            if r is ring
            else r
            for r in plan.resources
        ),
    )
    return {
        "codes": report.codes(),
        "checked": list(report.checked),
        "bigger_group": check_ptx(other, ptx).codes(),
    }


if __name__ == "__main__":
    import json

    from ts_codegen.capture import capture_compiles

    del cutlass  # imported for the DSL's side effects only
    with capture_compiles() as cap:
        _, ptx = compile_ptx(host)
    print("PTX_BEGIN")
    print(ptx)
    print("PTX_END")
    plans = [p for c in cap.compiles for p in c.plans]
    print("TSX_RESULT " + json.dumps(_translation(plans, ptx)))
