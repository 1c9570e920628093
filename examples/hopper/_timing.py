"""Timing GPU calls: eager launches, and the same launches replayed from a CUDA graph.

Eager timing (``time_ms``, the harness's) is what a Python caller sees: it includes each
call's host work (argument conversion, the launch itself). For a short kernel that host work
can be longer than the kernel, and the GPU then idles between launches whatever the kernel
does. Graph timing (``GraphTimer``) captures ``iters`` launches once and replays them, so what
is left is the kernels' own time, back to back: the measure that compares kernels, not launch
paths.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

from task_scheduling.harness import time_ms

__all__ = [
    "MAX_ITERS",
    "MEASURE_S",
    "GraphTimer",
    "best_of_rounds",
    "cu_stream",
    "steady_iters",
    "time_ms",
]

# A measurement of 5 ms is decided by the clocks that the contender before it left: 5 ms tuner
# rankings are reversed by up to 14 % in the sweep's same-run A/B, and a 5 ms sweep ranks the
# 128 x 128 ping-pong-skip 1 % ahead of the cooperative kernel on 4096^3 where a 50 ms tuner
# puts it 3-4 % behind (bench/RESULTS.md). At 50 ms the clocks settle under the contender's
# own power draw: what a GEMM that runs for long sees.
MEASURE_S = 0.05
MAX_ITERS = 2000  # 50 ms of 2048^3 bf16 launches (~25 us each)
NOMINAL_FLOPS = 700e12  # per second: the launches counted to fill MEASURE_S (bf16 on an H200)


def steady_iters(iters: int, flop: float, seconds: float = MEASURE_S) -> int:
    """Launches per measurement: at least ``iters``, and enough to last ``seconds`` at
    ``NOMINAL_FLOPS`` (at most ``MAX_ITERS``); ``iters`` for an empty problem or ``seconds``
    = 0."""
    if flop <= 0 or seconds <= 0:
        return iters
    return max(iters, min(MAX_ITERS, math.ceil(seconds * NOMINAL_FLOPS / flop)))


def best_of_rounds(
    measures: dict[str, Callable[[], float]], rounds: int, seed: int = 0
) -> dict[str, float]:
    """Each measure's best (smallest) result over ``rounds`` interleaved rounds.

    One first round is run and thrown away: the first contender after a pause (a compile, a
    correctness check) runs on cooler, faster clocks. On the power-bound shapes that is worth
    ~10 %: TS, opening a shape's first round, measures 764 TFLOP/s eager at 8192^3 against 690
    replayed from a graph, while its twin measures 689 and 684.

    Every round then runs the measures in a new order (a shuffle seeded by ``seed``), so no
    contender keeps the same predecessor: one right after a light contender (a slow ping-pong,
    a split-K) starts on cooler clocks too. Rotating one order keeps nearly every predecessor
    when there are many contenders: the tuner's ~45 candidates in 4 rounds would rank the
    tiles listed after slow templates first, on shapes where the sweep's same-run A/B puts
    them 6-14 % behind (``bench/RESULTS.md``).
    """
    names = list(measures)
    if not names:  # nothing to time (say, every candidate of a shape was wrong)
        return {}
    for name in names:
        measures[name]()
    best = dict.fromkeys(names, math.inf)
    order, rng = list(names), random.Random(seed)
    for _ in range(rounds):
        rng.shuffle(order)
        for name in order:
            best[name] = min(best[name], measures[name]())
    return best


def cu_stream(stream: Any = None) -> Any:
    """A torch stream (default: the current one) as the ``cuda.CUstream`` CuTe launchers take."""
    import torch
    from cuda.bindings import driver as cuda  # type: ignore[import-untyped]

    return cuda.CUstream((stream or torch.cuda.current_stream()).cuda_stream)


class GraphTimer:
    """``iters`` launches of a call captured into a CUDA graph, timed per replay.

    ``bind(stream)`` must give a no-argument call that launches on that torch stream (a CuTe
    launcher given ``cu_stream(stream)``; torch ops follow the current stream, which is
    ``stream`` while capturing). Capture runs on a side stream, as CUDA requires.
    """

    def __init__(self, bind: Callable[[Any], Callable[[], Any]], iters: int) -> None:
        import torch

        self.iters = iters
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            call = bind(side)
            for _ in range(3):  # warm-up outside the capture (lazy inits, cuBLAS workspace)
                call()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph, stream=side):
            for _ in range(iters):
                call()
        torch.cuda.synchronize()

    def ms(self) -> float:
        """Mean milliseconds per launch over one replay (after a warm-up replay)."""
        import torch

        self.graph.replay()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        self.graph.replay()
        end.record()
        torch.cuda.synchronize()
        return float(start.elapsed_time(end)) / self.iters
