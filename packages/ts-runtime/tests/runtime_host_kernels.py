"""Resources and schedules of the TMA-copy shape, for host-only tests (no CuTe DSL)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ts_ir import CooperativeGroupSpec
from ts_runtime import PipelineConfig, SmemAllocation, SmemAllocator, Task, TaskManager
from ts_trace import (
    MemoryResource,
    ResourceProxy,
    TaskLocalVariable,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
)

TILE_BYTES = 128 * 64 * 2
STAGES = 4


@dataclasses.dataclass(kw_only=True)
class StageBuffer(MemoryResource):
    stages: int = STAGES
    tile_bytes: int = TILE_BYTES
    view: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.view = TaskLocalVariable(dtype="SmemTile", default=None)

    def get_smem_requirements(self) -> list[Any]:
        return [SmemAllocation(f"{self.name}.tiles", self.stages * self.tile_bytes, 1024)]

    @producer_work
    def tma_load(self, stage_info: Any) -> None:
        pass

    @consumer_work(returns=view)
    def read(self, stage_info: Any) -> Any:
        return None


@dataclasses.dataclass(kw_only=True)
class GlobalOut(MemoryResource):
    @producer_work
    def store(self, stage_info: Any, *, view: Any) -> None:
        pass


@schedule
def load_schedule(smem: ResourceProxy) -> None:
    with domain_loop(0, 64, 1):
        smem.acquire()
        smem.tma_load()
        smem.commit()


@schedule
def store_schedule(smem: ResourceProxy, dst: ResourceProxy) -> None:
    with domain_loop(0, 64, 1):
        smem.wait()
        view = smem.read()
        dst.store(view=view)
        smem.release()


def tma_config(
    consumer_threads: int = 256, stages: int = STAGES, group: Any = CooperativeGroupSpec
) -> PipelineConfig:
    return PipelineConfig.create_tma_async_pipeline_cfg(
        stages, TILE_BYTES, group("thread", 1), group("thread", consumer_threads)
    )


def build(
    *,
    consumer_threads: int = 256,
    store_warps: int = 8,
    stages: int = STAGES,
    tile_bytes: int = TILE_BYTES,
    config: PipelineConfig | None = None,
    **manager_kwargs: Any,
) -> TaskManager:
    """A TaskManager for the TMA copy: load task on warp 0, store task on warps 4..."""
    cfg = config or tma_config(consumer_threads, stages)
    smem = StageBuffer(name="smem", pipeline_config=cfg, stages=stages, tile_bytes=tile_bytes)
    dst = GlobalOut(name="dst")
    alloc = SmemAllocator()
    alloc.add_resource(smem)
    tasks = [
        Task([], [smem], 0, 1, schedule=load_schedule(smem), num_registers=40, name="load"),
        Task(
            [smem],
            [dst],
            4,
            store_warps,
            schedule=store_schedule(smem, dst),
            num_registers=232,
            name="store",
        ),
    ]
    return TaskManager(
        tasks, {dst: [smem]}, smem_allocator=alloc, name="tma_copy", **manager_kwargs
    )
