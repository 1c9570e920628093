"""How fast ts-verify proves plans: every bundled example plus scaling series (CPU only).

Prints a table, then one JSON line (the last line)::

    python bench/verify_speed.py [--repeat N]

The two target plans: the 3-task persistent GEMM with a 4-stage TMA ring and a per-tile K
(target < 20 ms) and a 16-task chain with 16 independent runtime bounds and 4 runtime flags
(target < 1 s). Growth is fitted (least-squares slope of log time over log size: 1.0 is linear)
on series in tasks, stages, independent loop classes and runtime flags, each in two forms: with
brackets kept within each iteration (proven from bracket depths, ``ts_verify.depth``) and with
every consumer releasing one iteration late (``every(1, start=1)`` + ``last_iter()``, which the
verifier must run up to its cut-off, ``ts_verify.whole_kernel``).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import math
import random
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
    when_true,
    work_tile_loop,
)
from ts_verify import verify

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packages/ts-verify/tests"))
from ring_oracle_plans import generate, to_plan  # type: ignore[import-not-found]


def oracle_plan(seed: int) -> KernelPlan:
    """Plan ``seed`` of the soundness run's random generator (``bench/verify_soundness.py``)."""
    plan: KernelPlan = to_plan(generate(random.Random(seed)))
    return plan


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


class Runtime:
    """A runtime integer: each instance is its own trip-count symbol."""


@dataclasses.dataclass(kw_only=True)
class Flags(MemoryResource):
    """Global input whose consumer work returns a runtime flag."""

    flag: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.flag = TaskLocalVariable(dtype="Boolean", default=False)

    @consumer_work(returns=flag)
    def read_flag(self, stage_info: Any) -> Any:
        return stage_info


def chain_plan(
    num_tasks: int,
    iterations: int | None = 8,
    *,
    stages: int = 2,
    classes: int = 0,
    flags: int = 0,
    lagged: bool = False,
) -> KernelPlan:
    """``num_tasks`` tasks in a chain; task i consumes ring i-1 and produces ring i.

    ``iterations`` is a constant trip count, or None for one per-tile getter everywhere; with
    ``classes`` > 0 ring ``r`` runs ``domain_loop`` over runtime bound ``r % classes`` (both of
    its tasks use the same object). ``flags`` > 0 guards ring ``r``'s loop (on both sides) with
    runtime flag ``r`` for the first ``flags`` rings. ``lagged``: each consumer releases the
    previous stage (one iteration late).
    """
    n_rings = num_tasks - 1
    rings = [ring(f"r{i}", stages) for i in range(n_rings)]
    bounds: list[Any] = [Runtime() for _ in range(classes)]
    src = Flags(name="flags")

    def bound(r: int) -> Any:
        if classes:
            return bounds[r % classes]
        return KLoop.k_blocks if iterations is None else iterations

    def consume(res: ResourceProxy, r: int) -> None:
        with domain_loop(bound(r)) as k:
            res.wait()
            res.drain()
            if not lagged:
                res.release()
                return
            with k.every(1, start=1):
                res.release()
            with k.last_iter():
                res.release()

    def produce(res: ResourceProxy, r: int) -> None:
        with domain_loop(bound(r)):
            res.acquire()
            res.fill()
            res.commit()

    def guarded(side: Any, res: ResourceProxy, r: int, fl: ResourceProxy) -> None:
        if r < flags:
            with when_true(fl.read_flag(), key=f"flag{r}"):
                side(res, r)
        else:
            side(res, r)

    def body(i: int) -> Any:
        def task(fl: ResourceProxy, *res: ResourceProxy) -> None:
            if i > 0:
                guarded(consume, res[0], i - 1, fl)
            if i < num_tasks - 1:
                guarded(produce, res[-1], i, fl)

        task.__name__ = f"stage{i}"
        return schedule(task)

    tasks = []
    for i in range(num_tasks):
        used = ([rings[i - 1]] if i else []) + ([rings[i]] if i < n_rings else [])
        srcs: list[MemoryResource] = [src, *([rings[i - 1]] if i else [])]
        dst = [rings[i]] if i < n_rings else []
        tasks.append(TaskDeclaration(srcs, dst, 4 * i, 4, body(i)(src, *used), name=f"t{i}"))
    graph: dict[MemoryResource, list[MemoryResource]] = {
        rings[i]: [rings[i - 1]] if i else [src] for i in range(n_rings)
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


def _series(sizes: tuple[int, ...], make: Any, repeat: int) -> tuple[dict[str, float], float, bool]:
    """Times (ms) over ``sizes``, the fitted exponent and whether every plan was proven."""
    points = []
    proven = True
    for n in sizes:
        ms, ok, _ = timed(make(n), repeat)
        proven &= ok
        points.append((n, ms))
    return {str(n): round(ms, 3) for n, ms in points}, round(growth(points), 3), proven


def main() -> int:
    parser = argparse.ArgumentParser(description="time ts-verify")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rep = args.repeat
    rows: list[tuple[str, float, bool, int]] = []
    for name in ("grid_stride_copy", "tma_copy", "ws_gemm", "varlen_copy"):
        plan = _example(name)
        rows.append((name, *timed(plan, rep)))
    gemm = gemm_plan(4)
    chain16 = chain_plan(17, classes=16, flags=4)
    chain16_lagged = chain_plan(17, classes=16, flags=4, lagged=True)
    named = [
        ("gemm_persistent_3_tasks_4_stages", gemm),
        ("chain_16_tasks_16_bounds_4_flags", chain16),
        ("chain_16_tasks_16_bounds_4_flags_lagged", chain16_lagged),
        ("chain_6_tasks_8_iterations", chain_plan(6, 8)),
        ("chain_6_tasks_dynamic", chain_plan(6, None)),
        ("chain_2_tasks_1000_iterations", chain_plan(2, 1000)),
        # Persistent ring cycles with a per-tile bound and flags, from the random generator:
        # 55 s and 6 s before independent work tiles were proven by one-tile runs.
        ("persistent_3_ring_cycle_per_tile_bound_seed_777061", oracle_plan(777061)),
        ("persistent_2_ring_cycle_flag_per_tile_bound_seed_777048", oracle_plan(777048)),
    ]
    for name, plan in named:
        rows.append((name, *timed(plan, rep)))
    by_name = {name: (ms, ok) for name, ms, ok, _ in rows}
    series: dict[str, Any] = {}
    exponents: dict[str, float] = {}
    all_proven = all(ok for _, _, ok, _ in rows)
    makers: dict[str, tuple[tuple[int, ...], Any]] = {
        "tasks": ((4, 8, 16, 32, 64), lambda n: chain_plan(n, classes=n - 1, flags=4)),
        "tasks_lagged": (
            (4, 8, 16, 32, 64),
            lambda n: chain_plan(n, classes=n - 1, flags=4, lagged=True),
        ),
        "stages": ((2, 4, 8, 16, 32), gemm_plan),
        "stages_lagged": ((2, 4, 8, 16, 32), lambda s: chain_plan(4, None, stages=s, lagged=True)),
        "loop_classes": ((1, 2, 4, 8, 16), lambda c: chain_plan(17, classes=c)),
        "loop_classes_lagged": ((1, 2, 4, 8, 16), lambda c: chain_plan(17, classes=c, lagged=True)),
        "flags": ((1, 2, 4, 8, 16), lambda f: chain_plan(17, classes=16, flags=f)),
        "flags_lagged": (
            (1, 2, 4, 8, 16),
            lambda f: chain_plan(17, classes=16, flags=f, lagged=True),
        ),
    }
    for key, (sizes, make) in makers.items():
        times, exponent, proven = _series(sizes, make, rep)
        series[key] = times
        exponents[key] = exponent
        all_proven &= proven
    width = max(len(r[0]) for r in rows)
    print(f"{'plan':<{width}}  {'ms':>8}  verdict   runs")
    for name, ms, ok, runs in rows:
        print(f"{name:<{width}}  {ms:8.2f}  {'proven' if ok else 'ERRORS':<8} {runs:>5}")
    for key, times in series.items():
        points = ", ".join(f"{n}: {ms:.1f} ms" for n, ms in times.items())
        print(f"{key} (exponent {exponents[key]}): {points}")
    gemm_ms, chain_ms = by_name[named[0][0]][0], by_name[named[1][0]][0]
    worst = max(exponents.values())
    result = {
        "bench": "verify_speed",
        "plans_ms": {name: round(ms, 3) for name, ms, _, _ in rows},
        "all_proven": all_proven,
        "gemm_4_stages_3_tasks_ms": round(gemm_ms, 3),
        "gemm_target_met": gemm_ms < 20.0,
        "chain_16_tasks_16_bounds_4_flags_ms": round(chain_ms, 3),
        "chain_16_lagged_ms": round(by_name[named[2][0]][0], 3),
        "chain_target_met": max(chain_ms, by_name[named[2][0]][0]) < 1000.0,
        "series_ms": series,
        "growth_exponents": exponents,
        "worst_exponent": worst,
        "growth": f"polynomial: time grows at most as size^{worst:.2f} on every series",
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
