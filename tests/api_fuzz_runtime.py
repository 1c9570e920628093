"""Public-API fuzz cases: the ``ts_runtime`` constructors.

Pipeline configs, tasks, the manager, work queues and memory, called through the facade; see
``test_public_api_fuzz.py``.
"""

from __future__ import annotations

from typing import Any

from api_fuzz_kit import (
    INT32_MAX,
    G,
    Ring,
    case,
    consume,
    is_int,
    never,
    produce,
)

from task_scheduling.enums import (
    PipelineType,
)
from task_scheduling.memory import (
    SmemAllocation,
    SmemAllocator,
    TensorMemory,
    TmemAllocation,
    TmemAllocator,
)
from task_scheduling.resources import (
    PipelineConfig,
    TileSchedulerConfig,
    WorkQueue,
)
from task_scheduling.task import Task
from task_scheduling.task_manager import TaskManager

# ts_runtime / facade: PipelineConfig and its factories, Task, TaskManager, WorkQueue, SMEM


def async_config(**kw: Any) -> object:
    args = {"num_stages": 2, "producer_group": G, "consumer_group": G, **kw}
    return PipelineConfig.create_async_async_pipeline_cfg(**args)


def tma_config(**kw: Any) -> object:
    args = {"num_stages": 2, "num_bytes": 1024, "producer_group": G, "consumer_group": G, **kw}
    return PipelineConfig.create_tma_async_pipeline_cfg(**args)


@case("PipelineConfig.num_stages", lambda v: is_int(v, 1, 14528), "num_stages")
def _(v: Any) -> object:
    return async_config(num_stages=v)


@case("PipelineConfig.num_bytes", lambda v: is_int(v, 1, 2**20 - 1), "num_bytes")
def _(v: Any) -> object:
    return tma_config(num_bytes=v)


@case("PipelineConfig.producer_group", never, "producer_group")
def _(v: Any) -> object:
    return async_config(producer_group=v)


@case("PipelineConfig.consumer_group", never, "consumer_group")
def _(v: Any) -> object:
    return PipelineConfig.create_tma_wgmma_pipeline_cfg(2, 1024, G, v)


@case(
    "PipelineConfig.producer_signaling_threads",
    lambda v: is_int(v) and v in (1, 4),
    "producer_signaling_threads",
)
def _(v: Any) -> object:
    return async_config(producer_signaling_threads=v)


@case("PipelineConfig.interleave_stride", lambda v: is_int(v) and v in (1, 2), "interleave_stride")
def _(v: Any) -> object:
    return async_config(interleave_stride=v)


@case("PipelineConfig.advance_on_acquire", lambda v: isinstance(v, bool), "advance_on_acquire")
def _(v: Any) -> object:
    return async_config(advance_on_acquire=v)


@case("PipelineConfig.advance_on_wait", lambda v: isinstance(v, bool), "advance_on_wait")
def _(v: Any) -> object:
    return tma_config(advance_on_wait=v)


@case("PipelineConfig.cta_layout_vmnk", lambda v: v is None, "cta_layout_vmnk")
def _(v: Any) -> object:
    return tma_config(cta_layout_vmnk=v)


@case("PipelineConfig.mcast_mode_mn", lambda v: v == (1, 1), "mcast_mode_mn")
def _(v: Any) -> object:
    return PipelineConfig(2, 0, G, G, PipelineType.AsyncAsync, mcast_mode_mn=v)


@case(
    "PipelineConfig.pipeline_type",
    lambda v: isinstance(v, str) and v in [m.value for m in PipelineType],
    "pipeline_type",
)
def _(v: Any) -> object:
    return PipelineConfig(2, 16, G, G, v)


@case("PipelineConfig.barrier_ptr", lambda v: v is None, "barrier_ptr")
def _(v: Any) -> object:
    return async_config(barrier_ptr=v)


def make_task(**kw: Any) -> object:
    r = Ring(name="r")
    args: dict[str, Any] = {"schedule": produce(r), **kw}
    src = args.pop("src_resources", [])
    dst = args.pop("dst_resources", [r])
    warp = args.pop("warp_idx", 0)
    warps = args.pop("num_warps", 1)
    return Task(src, dst, warp, warps, **args)


@case("Task.src_resources", lambda v: isinstance(v, (list, tuple)) and not v, "src_resources")
def _(v: Any) -> object:
    return make_task(src_resources=v)


@case("Task.warp_idx", lambda v: is_int(v, 0, 31), "warp_idx")
def _(v: Any) -> object:
    return make_task(warp_idx=v)


@case("Task.num_warps", lambda v: is_int(v, 1, 32), "num_warps")
def _(v: Any) -> object:
    return make_task(num_warps=v)


@case("Task.schedule", never, "schedule")
def _(v: Any) -> object:
    return make_task(schedule=v)


@case(
    "Task.num_registers",
    lambda v: v is None or (is_int(v, 24, 256) and v % 8 == 0),
    "num_registers",
)
def _(v: Any) -> object:
    return make_task(num_registers=v)


@case("Task.name", lambda v: isinstance(v, str), "name")
def _(v: Any) -> object:
    return make_task(name=v)


@case("Task.debug_print", lambda v: isinstance(v, bool), "debug_print")
def _(v: Any) -> object:
    return make_task(debug_print=v)


@case("Task.run_only_on_cta_id", lambda v: v is None or is_int(v, 0, 15), "run_only_on_cta_id")
def _(v: Any) -> object:
    return make_task(run_only_on_cta_id=v)


def make_manager(**kw: Any) -> object:
    r = Ring(name="r", pipeline_config=async_config())
    tasks = [
        Task([], [r], 0, 1, schedule=produce(r), name="p"),
        Task([r], [], 1, 1, schedule=consume(r), name="c"),
    ]
    args: dict[str, Any] = {"tasks": tasks, "resource_dependency_graph": {r: []}, **kw}
    return TaskManager(args.pop("tasks"), args.pop("resource_dependency_graph"), **args)


@case("TaskManager.tasks", never, "tasks", "Task")
def _(v: Any) -> object:
    return make_manager(tasks=v)


@case("TaskManager.resource_dependency_graph", never, "graph")
def _(v: Any) -> object:
    return make_manager(resource_dependency_graph=v)


@case("TaskManager.smem_allocator", lambda v: v is None, "smem_allocator")
def _(v: Any) -> object:
    return make_manager(smem_allocator=v)


@case("TaskManager.skip_validation", lambda v: isinstance(v, bool), "skip_validation")
def _(v: Any) -> object:
    return make_manager(skip_validation=v)


@case(
    "TaskManager.smem_capacity_bytes",
    lambda v: v is None or is_int(v, 4096, INT32_MAX),
    "smem_capacity_bytes",
    "per CTA",  # a capacity too small for the kernel: TS-R004 (SMEM over budget)
)
def _(v: Any) -> object:
    return make_manager(smem_capacity_bytes=v)


@case("TaskManager.name", lambda v: isinstance(v, str) and v != "", "name")
def _(v: Any) -> object:
    return make_manager(name=v)


@case("TaskManager.block_warps", lambda v: v is None or is_int(v, 2, 32), "block_warps")
def _(v: Any) -> object:
    return make_manager(block_warps=v)


@case("TaskManager.target", lambda v: v is None, "target")
def _(v: Any) -> object:
    return make_manager(target=v)


@case("WorkQueue.tile_scheduler_config", never, "tile_scheduler_config")
def _(v: Any) -> object:
    return WorkQueue(v)


@case("TileSchedulerConfig.counters", lambda v: v is not None, "counters")
def _(v: Any) -> object:
    return TileSchedulerConfig.create_atomic_dynamic_persistent_tile_scheduler_params(None, v)


@case("SmemAllocation.name", lambda v: isinstance(v, str) and v != "", "name")
def _(v: Any) -> object:
    return SmemAllocation(v, 16)


@case("SmemAllocation.size_bytes", lambda v: is_int(v, 0, INT32_MAX), "size_bytes")
def _(v: Any) -> object:
    return SmemAllocation("a", v)


@case("SmemAllocation.count", lambda v: is_int(v, 0, INT32_MAX), "count")
def _(v: Any) -> object:
    return SmemAllocation("a", 16, 128, None, v)


@case("SmemAllocator.add", never, "SmemAllocation")
def _(v: Any) -> object:
    return SmemAllocator().add(v)


@case("SmemAllocator.add_resource", never, "MemoryResource")
def _(v: Any) -> object:
    return SmemAllocator().add_resource(v)


@case("SmemAllocator.add_alias_group", never, "alias group")
def _(v: Any) -> object:
    SmemAllocator().add_alias_group(v)
    return None


@case("TmemAllocation.name", lambda v: isinstance(v, str) and v != "", "name")
def _(v: Any) -> object:
    return TmemAllocation(v, 128)


@case("TmemAllocation.num_columns", lambda v: is_int(v, 1, 2**16), "num_columns")
def _(v: Any) -> object:
    return TmemAllocation("acc", v)


def _tmem_columns(v: object) -> bool:
    # tcgen05.alloc takes a power of two from 32 to 512 columns.
    return is_int(v, 32, 512) and isinstance(v, int) and v & (v - 1) == 0


@case("TensorMemory.num_columns", _tmem_columns, "num_columns")
def _(v: Any) -> object:
    return TensorMemory(name="tmem", num_columns=v, warp=0)


@case("TensorMemory.warp", lambda v: is_int(v, 0, 31), "warp")  # 32 warps at most
def _(v: Any) -> object:
    return TensorMemory(name="tmem", num_columns=128, warp=v)


@case("TensorMemory.free_warp", lambda v: v is None or is_int(v, 0, 31), "free_warp")
def _(v: Any) -> object:
    return TensorMemory(name="tmem", num_columns=128, warp=0, free_warp=v)


@case("TmemAllocator.add", never, "TmemAllocation")
def _(v: Any) -> object:
    return TmemAllocator().add(v)


@case("TmemAllocator.add_resource", never, "get_tmem_requirements")
def _(v: Any) -> object:
    return TmemAllocator().add_resource(v)


@case("TmemAllocator.add_alias_group", never, "alias group")
def _(v: Any) -> object:
    TmemAllocator().add_alias_group(v)
    return None
