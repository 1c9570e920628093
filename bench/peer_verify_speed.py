"""ts-verify next to NVIDIA's schedule checker, on the CPU, on equivalent kernels.

NVIDIA's ``cutlass.experimental.task_scheduling`` checks a kernel when its ``TaskManager`` is
constructed (plain Python; it normally runs while a kernel is being compiled).  This script
declares the same kernels twice, once with the peer's API and once with ours, and times both
checkers::

    PYTHONPATH=packages/ts-ir/src:packages/ts-trace/src:packages/ts-verify/src \\
        CUTE_DSL_ARCH=sm_90a /tmp/peer/bin/python bench/peer_verify_speed.py [--repeat N]

It needs a Python with ``nvidia-cutlass-dsl`` installed (the peer) and no GPU.  Cases:

* ``gemm_k64``: a 3-task warp-specialized persistent GEMM (TMA load, MMA, epilogue) over a
  static-persistent work queue, a 4-stage TMA A/B ring and a 2-stage accumulator, K = 64
  iterations (a constant domain).
* ``chain_6_tasks_8_iterations``: 6 tasks in a chain joined by 2-stage rings, 8 iterations.
* ``chain_6_tasks_200_iterations_1_stage``: the same chain with 1-stage rings, 200 iterations.

The peer runs with ``verbose=False`` (its default, ``True``, prints the schedule tables and
records BFS paths, which is slower) and all its default checks.  Its states explored come
from the result of its exhaustive checker, read through a wrapper around
``exhaustive_checker.check_all_interleavings``.  The peer's time is the whole ``TaskManager``
construction (every check); ``peer_bfs_s`` is the part spent in its exhaustive search.
Ours is ``ts_verify.verify`` on the matching plan (best of ``--repeat``).  Prints one JSON line.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import cutlass.cute as cute
import cutlass.experimental.task_scheduling.exhaustive_checker as peer_checker
import cutlass.utils as cutlass_utils
from cutlass import pipeline as cutlass_pipeline
from cutlass.experimental.task_scheduling import consumer_work as peer_consumer_work
from cutlass.experimental.task_scheduling import domain_loop as peer_domain_loop
from cutlass.experimental.task_scheduling import producer_work as peer_producer_work
from cutlass.experimental.task_scheduling import schedule as peer_schedule
from cutlass.experimental.task_scheduling import work_tile_loop as peer_work_tile_loop
from cutlass.experimental.task_scheduling.resources import MemoryResource as PeerResource
from cutlass.experimental.task_scheduling.resources import (
    PipelineConfig,
    TileSchedulerConfig,
    WorkQueue,
)
from cutlass.experimental.task_scheduling.task import Task as PeerTask
from cutlass.experimental.task_scheduling.task_manager import TaskManager
from verify_speed import Queue, ring

from ts_ir import KernelPlan, PipelineType
from ts_trace import (
    MemoryResource,
    ResourceProxy,
    TaskDeclaration,
    build_plan,
    domain_loop,
    schedule,
    work_tile_loop,
)
from ts_verify import verify

GEMM_K = 64
GEMM_AB_STAGES = 4
GEMM_ACC_STAGES = 2
AB_BYTES = 32768


# --------------------------------------------------------------------------------------------
# Our side: the matching plans (verify_speed's builders with a constant K and a stage count).
# --------------------------------------------------------------------------------------------


def ours_gemm_plan(k: int, stages: int) -> KernelPlan:
    """verify_speed's persistent GEMM with a constant K loop of ``k`` iterations."""

    @schedule
    def load(wq: ResourceProxy, ab: ResourceProxy) -> None:
        with work_tile_loop(wq):
            wq.next_tile()
            with domain_loop(k):
                ab.acquire()
                ab.fill()
                ab.commit()

    @schedule
    def mma(wq: ResourceProxy, ab: ResourceProxy, acc: ResourceProxy) -> None:
        with work_tile_loop(wq):
            wq.next_tile()
            acc.acquire()
            with domain_loop(k):
                ab.wait()
                ab.drain()
                ab.release()
            acc.fill()
            acc.commit()

    @schedule
    def epilogue(wq: ResourceProxy, acc: ResourceProxy) -> None:
        with work_tile_loop(wq):
            wq.next_tile()
            acc.wait()
            acc.drain()
            acc.release()

    wq = Queue(name="wq")
    ab = ring("ab", stages, PipelineType.TmaAsync)
    acc = ring("acc", GEMM_ACC_STAGES)
    tasks = [
        TaskDeclaration([wq], [ab], 0, 4, load(wq, ab), name="load"),
        TaskDeclaration([wq, ab], [acc], 4, 4, mma(wq, ab, acc), name="mma"),
        TaskDeclaration([wq, acc], [], 8, 4, epilogue(wq, acc), name="epilogue"),
    ]
    return build_plan(tasks, {ab: [wq], acc: [ab]}, name=f"gemm_k{k}")


def ours_chain_plan(num_tasks: int, iterations: int, stages: int) -> KernelPlan:
    """verify_speed's task chain with ``stages``-deep rings and a constant domain."""
    rings = [ring(f"r{i}", stages) for i in range(num_tasks - 1)]

    def body(i: int) -> Callable[..., Any]:
        def task(*res: ResourceProxy) -> None:
            with domain_loop(iterations):
                if i > 0:
                    res[0].wait()
                    res[0].drain()
                    res[0].release()
                if i < num_tasks - 1:
                    res[-1].acquire()
                    res[-1].fill()
                    res[-1].commit()

        task.__name__ = f"stage{i}"
        return schedule(task)

    tasks = []
    for i in range(num_tasks):
        src = [rings[i - 1]] if i else []
        dst = [rings[i]] if i < num_tasks - 1 else []
        tasks.append(TaskDeclaration(src, dst, 4 * i, 4, body(i)(*src, *dst), name=f"t{i}"))
    graph: dict[MemoryResource, list[MemoryResource]] = {
        rings[i]: [rings[i - 1]] if i else [] for i in range(len(rings))
    }
    return build_plan(tasks, graph, name=f"chain_{num_tasks}_{iterations}_{stages}")


def time_ours(plan: KernelPlan, repeat: int) -> dict[str, Any]:
    """Best-of-``repeat`` seconds of ``verify`` and its verdict."""
    best = float("inf")
    report = verify(plan)
    for _ in range(repeat):
        start = time.perf_counter()
        report = verify(plan)
        best = min(best, time.perf_counter() - start)
    verdict = "proven" if report.ok else "errors: " + ", ".join(d.code for d in report.errors)
    return {"ours_s": round(best, 5), "ours_verdict": verdict}


# --------------------------------------------------------------------------------------------
# The peer's side: the same kernels in NVIDIA's API.
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(kw_only=True)
class PeerRing(PeerResource):
    """A pipelined buffer with one producer work and one consumer work (no payload)."""

    @peer_producer_work
    def fill(self, stage_info: Any) -> None:
        del stage_info

    @peer_consumer_work
    def drain(self, stage_info: Any) -> None:
        del stage_info


def _threads(n: int) -> Any:
    return cutlass_pipeline.CooperativeGroup(cutlass_pipeline.Agent.Thread, n)


def _async_ring(name: str, stages: int) -> PeerRing:
    cfg = PipelineConfig.create_async_async_pipeline_cfg(stages, _threads(128), _threads(128), None)
    return PeerRing(name=name, pipeline_config=cfg)


def peer_gemm(k: int, stages: int, tile_params: Any) -> tuple[list[Any], dict[Any, list[Any]]]:
    """The persistent GEMM: tasks and dependency graph in the peer's API.

    The load task has 1 warp: the peer rejects a multi-warp TMA producer unless it uses
    interleaved stages or a task-warp-leader signal with per-warp byte counts.  Its static
    work queue needs the documented wait / get_and_advance_work_tile / release tail, and every
    schedule needs a domain loop (the epilogue gets a 1-iteration one).
    """
    wq = WorkQueue(
        TileSchedulerConfig.create_static_persistent_tile_scheduler_params(tile_params), name="wq"
    )
    ab_cfg = PipelineConfig.create_tma_async_pipeline_cfg(
        stages, AB_BYTES, _threads(1), _threads(128)
    )
    ab = PeerRing(name="ab", pipeline_config=ab_cfg)
    acc = _async_ring("acc", GEMM_ACC_STAGES)

    @peer_schedule
    def load(wq: Any, ab: Any) -> None:
        with peer_work_tile_loop(wq):
            with peer_domain_loop(k):
                ab.acquire()
                ab.fill()
                ab.commit()
            wq.wait()
            wq.get_and_advance_work_tile()
            wq.release()

    @peer_schedule
    def mma(wq: Any, ab: Any, acc: Any) -> None:
        with peer_work_tile_loop(wq):
            acc.acquire()
            with peer_domain_loop(k):
                ab.wait()
                ab.drain()
                ab.release()
            acc.fill()
            acc.commit()
            wq.wait()
            wq.get_and_advance_work_tile()
            wq.release()

    @peer_schedule
    def epilogue(wq: Any, acc: Any) -> None:
        with peer_work_tile_loop(wq):
            with peer_domain_loop(1):
                acc.wait()
                acc.drain()
                acc.release()
            wq.wait()
            wq.get_and_advance_work_tile()
            wq.release()

    tasks = [
        PeerTask([wq], [ab], 0, 1, schedule=load(wq, ab), name="load"),
        PeerTask([wq, ab], [acc], 4, 4, schedule=mma(wq, ab, acc), name="mma"),
        PeerTask([wq, acc], [], 8, 4, schedule=epilogue(wq, acc), name="epilogue"),
    ]
    return tasks, {ab: [wq], acc: [ab]}


def peer_chain(
    num_tasks: int, iterations: int, stages: int
) -> tuple[list[Any], dict[Any, list[Any]]]:
    """The task chain: tasks and dependency graph in the peer's API."""
    rings = [_async_ring(f"r{i}", stages) for i in range(num_tasks - 1)]

    def body(i: int) -> Callable[..., Any]:
        def task(*res: Any) -> None:
            with peer_domain_loop(iterations):
                if i > 0:
                    res[0].wait()
                    res[0].drain()
                    res[0].release()
                if i < num_tasks - 1:
                    res[-1].acquire()
                    res[-1].fill()
                    res[-1].commit()

        task.__name__ = f"stage{i}"
        built: Callable[..., Any] = peer_schedule(task)
        return built

    tasks = []
    for i in range(num_tasks):
        src = [rings[i - 1]] if i else []
        dst = [rings[i]] if i < num_tasks - 1 else []
        tasks.append(PeerTask(src, dst, 4 * i, 4, schedule=body(i)(*src, *dst), name=f"t{i}"))
    graph: dict[Any, list[Any]] = {rings[i]: [rings[i - 1]] if i else [] for i in range(len(rings))}
    return tasks, graph


def time_peer(build: Callable[[], tuple[list[Any], dict[Any, list[Any]]]]) -> dict[str, Any]:
    """Build the kernel, construct its ``TaskManager`` once and time it."""
    searches: list[tuple[Any, float]] = []
    original = peer_checker.check_all_interleavings

    def recording(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        result = original(*args, **kwargs)
        searches.append((result, time.perf_counter() - start))
        return result

    tasks, graph = build()
    error: str | None = None
    peer_checker.check_all_interleavings = recording
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            try:
                TaskManager(tasks, graph, verbose=False)
            except (ValueError, RuntimeError, AssertionError) as exc:
                error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}"
            elapsed = time.perf_counter() - start
    finally:
        peer_checker.check_all_interleavings = original
    capped = any(result.hit_state_limit for result, _ in searches)
    if error is not None:
        verdict = "rejected (" + error + ")"
    elif capped:
        verdict = "inconclusive: hit its max_states cap, no proof (warning only)"
    elif searches and all(result.is_safe for result, _ in searches):
        verdict = "safe"
    else:
        verdict = "accepted without an exhaustive search"
    out: dict[str, Any] = {
        "peer_s": round(elapsed, 4),
        "peer_verdict": verdict,
        "peer_states": sum(result.states_explored for result, _ in searches) if searches else None,
        "peer_bfs_s": round(sum(s for _, s in searches), 4) if searches else None,
        "peer_warnings": [str(w.message).splitlines()[0][:200] for w in caught],
    }
    return out


def peer_gemm_case(k: int, stages: int) -> dict[str, Any]:
    """Run the peer on the GEMM inside a ``cute.compile`` of a host function.

    ``PersistentTileSchedulerParams`` builds IR, so it can only be made while CuTe DSL traces a
    ``@cute.jit`` function; the whole ``TaskManager`` construction runs there, as in a real
    compile.  No GPU and no kernel launch are involved.
    """
    box: dict[str, Any] = {}

    @cute.jit
    def host() -> None:
        params = cutlass_utils.PersistentTileSchedulerParams((8, 8, 1), (1, 1, 1))
        box["result"] = time_peer(lambda: peer_gemm(k, stages, params))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        cute.compile(host)
    result: dict[str, Any] = box["result"]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description="ts-verify vs. the peer's checker (CPU)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of ours (best is kept)")
    args = parser.parse_args()
    cases: dict[str, dict[str, Any]] = {}

    gemm = peer_gemm_case(GEMM_K, GEMM_AB_STAGES)
    gemm.update(time_ours(ours_gemm_plan(GEMM_K, GEMM_AB_STAGES), args.repeat))
    gemm["notes"] = (
        "peer: load task is 1 warp (its TMA rule), epilogue in a 1-iteration domain loop, "
        "2 work tiles simulated; ours: load task 4 warps, all tile counts"
    )
    cases[f"gemm_k{GEMM_K}_{GEMM_AB_STAGES}_stages"] = gemm

    for name, tasks, iterations, stages in (
        ("chain_6_tasks_8_iterations", 6, 8, 2),
        ("chain_6_tasks_200_iterations_1_stage", 6, 200, 1),
    ):
        case = time_peer(lambda t=tasks, n=iterations, s=stages: peer_chain(t, n, s))
        case.update(time_ours(ours_chain_plan(tasks, iterations, stages), args.repeat))
        cases[name] = case

    for name, case in cases.items():
        print(
            f"{name:<40} peer {case['peer_s']:8.3f} s  states {case['peer_states']!s:>8}  "
            f"{case['peer_verdict'][:60]:<60} ours {case['ours_s'] * 1000:8.1f} ms  "
            f"{case['ours_verdict']}"
        )
    result = {
        "bench": "peer_verify_speed",
        "cases": cases,
        "date": datetime.date.today().isoformat(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "peer_version": _peer_version(),
        "peer_options": "TaskManager(tasks, graph, verbose=False), all default checks",
    }
    print(json.dumps(result))
    return 0


def _peer_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nvidia-cutlass-dsl")
    except PackageNotFoundError:
        return "unknown"


if __name__ == "__main__":
    raise SystemExit(main())
