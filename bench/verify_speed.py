"""How fast ts-verify proves plans: every bundled example plus scaling series (CPU only).

Prints a table, then one JSON line::

    python bench/verify_speed.py [--repeat N]

The scaling series grow a warp-specialized persistent GEMM in stages (2..32) and a task chain
in tasks (3..48, with 8 iterations and with a dynamic domain); the JSON line carries each time
and the growth exponent fitted on each series (1.0 = linear).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

from ts_ir import CooperativeGroupSpec, KernelPlan, PipelineSpec, PipelineType
from ts_trace import (
    MemoryResource,
    ResourceProxy,
    TaskDeclaration,
    TaskLocalVariable,
    build_plan,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    work_tile_loop,
)
from ts_verify import verify

ROOT = Path(__file__).resolve().parent.parent
THREADS = CooperativeGroupSpec("thread", 128)


def _example(name: str) -> KernelPlan:
    path = ROOT / "examples" / "schedules" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    plan: KernelPlan = module.kernel()
    return plan


class KLoop:
    """Per-tile K-block count (a dynamic domain)."""

    def k_blocks(self, work_tile_coord: Any) -> Any:
        return work_tile_coord


@dataclasses.dataclass(kw_only=True)
class Queue(MemoryResource):
    is_work_queue: ClassVar[bool] = True
    tile: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.tile = TaskLocalVariable(dtype="WorkTileInfo", default=None)

    @consumer_work(returns=tile)
    def next_tile(self, stage_info: Any) -> Any:
        return stage_info


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    @producer_work
    def fill(self, stage_info: Any) -> None:
        del stage_info

    @consumer_work
    def drain(self, stage_info: Any) -> None:
        del stage_info


def ring(name: str, stages: int, kind: PipelineType = PipelineType.AsyncAsync) -> Ring:
    producer = CooperativeGroupSpec("thread", 1) if kind is PipelineType.TmaAsync else THREADS
    return Ring(name=name, pipeline_config=PipelineSpec(kind, stages, 32768, producer, THREADS))


@schedule
def _load(wq: ResourceProxy, ab: ResourceProxy) -> None:
    with work_tile_loop(wq):
        wq.next_tile()
        with domain_loop(KLoop.k_blocks):
            ab.acquire()
            ab.fill()
            ab.commit()


@schedule
def _mma(wq: ResourceProxy, ab: ResourceProxy, acc: ResourceProxy) -> None:
    with work_tile_loop(wq):
        wq.next_tile()
        acc.acquire()
        with domain_loop(KLoop.k_blocks):
            ab.wait()
            ab.drain()
            ab.release()
        acc.fill()
        acc.commit()


@schedule
def _epilogue(wq: ResourceProxy, acc: ResourceProxy) -> None:
    with work_tile_loop(wq):
        wq.next_tile()
        acc.wait()
        acc.drain()
        acc.release()


def gemm_plan(stages: int) -> KernelPlan:
    """A 3-task warp-specialized persistent GEMM with a ``stages``-deep A/B ring."""
    wq, ab, acc = Queue(name="wq"), ring("ab", stages, PipelineType.TmaAsync), ring("acc", 2)
    tasks = [
        TaskDeclaration([wq], [ab], 0, 4, _load(wq, ab), name="load"),
        TaskDeclaration([wq, ab], [acc], 4, 4, _mma(wq, ab, acc), name="mma"),
        TaskDeclaration([wq, acc], [], 8, 4, _epilogue(wq, acc), name="epilogue"),
    ]
    return build_plan(tasks, {ab: [wq], acc: [ab]}, name=f"gemm_{stages}_stages")


def chain_plan(num_tasks: int, iterations: int | None = 8) -> KernelPlan:
    """``num_tasks`` tasks in a chain; task i consumes ring i-1 and produces ring i."""
    rings = [ring(f"r{i}", 2) for i in range(num_tasks - 1)]

    def body(i: int) -> Any:
        def task(*res: ResourceProxy) -> None:
            bound: Any = KLoop.k_blocks if iterations is None else iterations
            with domain_loop(bound):
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
        used = ([rings[i - 1]] if i else []) + ([rings[i]] if i < num_tasks - 1 else [])
        src = [rings[i - 1]] if i else []
        dst = [rings[i]] if i < num_tasks - 1 else []
        tasks.append(TaskDeclaration(src, dst, 4 * i, 4, body(i)(*used), name=f"t{i}"))
    graph: dict[MemoryResource, list[MemoryResource]] = {
        rings[i]: [rings[i - 1]] if i else [] for i in range(len(rings))
    }
    suffix = "dyn" if iterations is None else str(iterations)
    return build_plan(tasks, graph, name=f"chain_{num_tasks}_tasks_{suffix}")


def timed(plan: KernelPlan, repeat: int) -> tuple[float, bool, int]:
    """Best-of-``repeat`` verification time in milliseconds, the verdict and runs simulated."""
    times = []
    report = verify(plan)
    for _ in range(repeat):
        start = time.perf_counter()
        report = verify(plan)
        times.append((time.perf_counter() - start) * 1000)
    runs = int(dict(report.stats).get("runs", 0))
    return min(times), report.ok, runs


def growth(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of log(time) over log(size): 1.0 is linear growth."""
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(y) for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def main() -> int:
    parser = argparse.ArgumentParser(description="time ts-verify")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows: list[tuple[str, float, bool, int]] = []
    for name in ("grid_stride_copy", "tma_copy", "ws_gemm", "varlen_copy"):
        plan = _example(name)
        rows.append((name, *timed(plan, args.repeat)))
    fixed = [gemm_plan(4), chain_plan(6, 8), chain_plan(6, None), chain_plan(2, 1000)]
    fixed[1] = dataclasses.replace(fixed[1], name="chain_6_tasks_8_iterations")
    for plan in fixed:
        rows.append((plan.name, *timed(plan, args.repeat)))
    stage_series = [(s, timed(gemm_plan(s), args.repeat)[0]) for s in (2, 4, 8, 16, 32)]
    sizes = (3, 6, 12, 24, 48)
    task_series = [(n, timed(chain_plan(n, 8), args.repeat)[0]) for n in sizes]
    dyn_series = [(n, timed(chain_plan(n, None), args.repeat)[0]) for n in sizes]
    width = max(len(r[0]) for r in rows)
    print(f"{'plan':<{width}}  {'ms':>8}  verdict   runs")
    for name, ms, ok, runs in rows:
        print(f"{name:<{width}}  {ms:8.2f}  {'proven' if ok else 'ERRORS':<8} {runs:>5}")
    print("gemm by stages:", ", ".join(f"{s}: {ms:.1f} ms" for s, ms in stage_series))
    print("chain by tasks:", ", ".join(f"{n}: {ms:.1f} ms" for n, ms in task_series))
    print("dynamic chain by tasks:", ", ".join(f"{n}: {ms:.1f} ms" for n, ms in dyn_series))
    result = {
        "bench": "verify_speed",
        "plans_ms": {name: round(ms, 3) for name, ms, _, _ in rows},
        "all_proven": all(ok for _, _, ok, _ in rows),
        "gemm_4_stages_3_tasks_ms": round(timed(gemm_plan(4), args.repeat)[0], 3),
        "stages_series_ms": {str(s): round(ms, 3) for s, ms in stage_series},
        "tasks_series_ms": {str(n): round(ms, 3) for n, ms in task_series},
        "stages_growth_exponent": round(growth(stage_series), 3),
        "tasks_growth_exponent": round(growth(task_series), 3),
        "dynamic_tasks_series_ms": {str(n): round(ms, 3) for n, ms in dyn_series},
        "dynamic_tasks_growth_exponent": round(growth(dyn_series), 3),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
