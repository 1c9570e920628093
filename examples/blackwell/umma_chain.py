"""The Blackwell barrier protocol of a GEMM, compiled for sm_100a without a GPU.

Three tasks pass stages through two Blackwell rings, as in a tcgen05 GEMM:

* ``feed`` (warp 4) fills the operand ring ``operands`` (``AsyncUmma``: every thread of the
  warp arrives on the full barrier);
* ``mma`` (warp 5) waits for a stage, would issue ``tcgen05.mma`` on it, and releases it with
  ``tcgen05.commit`` (one arrival); per tile it acquires an accumulator stage of ``acc``
  (``UmmaAsync``) and commits it with ``tcgen05.commit`` once the K loop is done;
* ``epilogue`` (warps 0-3) waits for the accumulator, drains it and releases it (128 arrivals).

The accumulator lives in tensor memory, whose lifetime the schedules state with a
``TensorMemory`` resource: the MMA warp allocates it before its first UMMA
(``tcgen05.alloc`` + ``relinquish_alloc_permit``), the epilogue's first warp frees it after the
last read (``tcgen05.dealloc``). ts-verify checks that every use lies inside that lifetime
(TS-V222 to TS-V224).

The work bodies are empty: the point is the protocol, which ts-verify proves free of
deadlocks and races for every trip count (``ts verify``), and which the PTX shows
(``ts compile --arch sm_100a examples/blackwell/umma_chain.py:make_plan``). The real GEMM is
NVIDIA's tutorial ``02_gemm_simple``, compiled through ``task_scheduling`` by the conformance
tests.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_100a")  # before the DSL is imported

import cutlass.cute as cute
from _umma_gemm import allocators, threads

from task_scheduling import consumer_work, domain_loop, producer_work, schedule
from task_scheduling.harness import compare_ptx
from task_scheduling.memory import TensorMemory, TmemAllocation
from task_scheduling.resources import MemoryResource, PipelineConfig
from task_scheduling.task import Task
from task_scheduling.task_manager import TaskManager

K_BLOCKS = 8
EPILOGUE_WARPS = 4
MMA_WARP = 5
ACC_COLUMNS = 256  # two 128-column accumulator stages


@dataclasses.dataclass(kw_only=True)
class Stage(MemoryResource):
    """A ring whose work does nothing (the protocol is what this example shows)."""

    @producer_work
    @cute.jit
    def fill(self, stage_info: Any) -> None:
        pass

    @consumer_work
    @cute.jit
    def drain(self, stage_info: Any) -> None:
        pass


@dataclasses.dataclass(kw_only=True)
class Accumulator(Stage):
    """The accumulator ring: its stages are TMEM columns (a TMEM block of the kernel)."""

    def get_tmem_requirements(self) -> list[Any]:
        return [TmemAllocation(f"{self.name}.columns", ACC_COLUMNS)]


@dataclasses.dataclass(kw_only=True)
class Endpoint(MemoryResource):
    """Global memory at either end of the chain (no pipeline)."""


@schedule
def feed(src: Any, operands: Any) -> None:
    with domain_loop(K_BLOCKS):
        operands.acquire()
        operands.fill()
        operands.commit()


@schedule
def mma(tmem: Any, operands: Any, acc: Any) -> None:
    tmem.allocate()  # before the first UMMA into the accumulator
    acc.acquire()
    with domain_loop(K_BLOCKS):
        operands.wait()
        acc.fill()
        operands.release()
    acc.commit()


@schedule
def epilogue(tmem: Any, acc: Any, dst: Any) -> None:
    acc.wait()
    acc.drain()
    acc.release()
    tmem.free()  # after the last read of the accumulator


def build() -> TaskManager:
    """The resources, tasks and TaskManager (plain Python: no GPU, no DSL values)."""
    src, dst = Endpoint(name="src"), Endpoint(name="dst")
    # AsyncUmma: the feeding warp's 32 threads fill; the MMA warp's commit releases (1).
    operands = Stage(
        name="operands",
        pipeline_config=PipelineConfig.create_async_umma_pipeline_cfg(4, threads(32), threads(1)),
    )
    # UmmaAsync: the MMA warp's commit fills (1); the epilogue's 128 threads release.
    acc = Accumulator(
        name="acc",
        pipeline_config=PipelineConfig.create_umma_async_pipeline_cfg(
            2, threads(1), threads(EPILOGUE_WARPS * 32)
        ),
    )
    # The MMA warp allocates; the epilogue's first warp (warp 0) frees: same CTA, any warp.
    tmem = TensorMemory(name="tmem", num_columns=ACC_COLUMNS, warp=MMA_WARP, free_warp=0)
    smem, columns = allocators((operands, acc), (acc,))
    tasks = [
        Task(
            [tmem, acc],
            [dst],
            0,
            EPILOGUE_WARPS,
            schedule=epilogue(tmem, acc, dst),
            name="epilogue",
        ),
        Task([src], [operands], 4, 1, schedule=feed(src, operands), name="feed"),
        Task([tmem, operands], [acc], MMA_WARP, 1, schedule=mma(tmem, operands, acc), name="mma"),
    ]
    graph: dict[MemoryResource, list[MemoryResource]] = {
        operands: [src],
        acc: [operands],
        dst: [acc],
    }
    return TaskManager(tasks, graph, smem_allocator=smem, tmem_allocator=columns, name="umma_chain")


def make_plan() -> Any:
    """The kernel plan (what ``ts show`` / ``ts verify`` / ``ts compile`` read)."""
    return build().plan


@cute.kernel
def kernel() -> None:
    manager = build()
    manager.setup_resources_and_tasks()
    manager.run()


@cute.jit
def launch() -> None:
    kernel().launch(grid=(1, 1, 1), block=(6 * 32, 1, 1))


def compile_only() -> dict[str, Any]:
    """Compile for the target (sm_100a by default) with no arguments; PTX counts per opcode."""
    return {"example": "umma_chain", **compare_ptx({"ts": launch}, ops=True)}


if __name__ == "__main__":
    import json

    print(json.dumps(compile_only(), indent=1, sort_keys=True))
    sys.exit(0)
