"""Copy kernels on the GPU: TS against its hand-written twin and against torch, same inputs.

Prints one JSON line per example::

    python bench/copy_speed.py [--rounds 3] [--iters 20]

``speed_vs_twin`` is twin time / TS time (1.0 = as fast; the goal is >= 0.98) and
``fraction_of_torch`` is TS bandwidth / ``torch`` copy bandwidth on the same 1 GiB tensor (for
``bias_act_copy``, against the plain copy: the fused op moves the same bytes). Each
kernel is timed ``rounds`` times, interleaved with the others; the best round counts (each
example's own run also interleaves TS, twin and rounds: ``task_scheduling.harness``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import ModuleType
from typing import Any

from _examples import load_example

from task_scheduling.harness import time_ms

ROOT = Path(__file__).resolve().parent.parent
GIB_HALVES = 1 << 29  # fp16 elements in 1 GiB


def _example(name: str) -> ModuleType:
    return load_example(name, "bench_hopper")


def torch_copy_ms(nelems: int, iters: int) -> float:
    """Time ``dst.copy_(src)`` for ``nelems`` fp16 elements."""
    import torch

    src = torch.randn(nelems, device="cuda", dtype=torch.float16)
    dst = torch.empty_like(src)
    return time_ms(lambda: dst.copy_(src), iters)


def best(rounds: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """The fastest round of kernel ``name`` (all rounds must have passed the check)."""
    ok = all(r[name]["ok"] for r in rounds)
    fastest = min(rounds, key=lambda r: r[name]["ms"])[name]
    return {**fastest, "ok": ok}


def main() -> int:
    parser = argparse.ArgumentParser(description="TS copy kernels vs twins vs torch (GPU)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args()
    cases: list[tuple[str, Any, str | None]] = [
        ("grid_stride_copy", GIB_HALVES, None),
        ("tma_copy", (16384, 32768), "tma_store"),
        ("tma_copy", (16384, 32768), "two_tiles"),
        ("tma_copy", (16384, 32768), "one_tile"),
        ("bias_act_copy", (16384, 32768), None),
    ]
    failed = False
    for name, size, variant in cases:
        module = _example(name)
        rounds = []
        torch_ms = []
        extra = () if variant is None else (variant,)
        for _ in range(args.rounds):
            rounds.append(module.run_on_gpu(size, args.iters, *extra))
            torch_ms.append(torch_copy_ms(GIB_HALVES, args.iters))
        ts, twin = best(rounds, "ts"), best(rounds, "twin")
        t_ms = min(torch_ms)
        line = {
            "bench": "copy",
            "example": name,
            "variant": variant,
            "bytes_moved": 2 * GIB_HALVES * 2,
            "ts_ms": round(ts["ms"], 4),
            "twin_ms": round(twin["ms"], 4),
            "torch_ms": round(t_ms, 4),
            "speed_vs_twin": round(twin["ms"] / ts["ms"], 4),
            "ts_GBps": round(ts["GBps"], 1),
            "fraction_of_torch": round(t_ms / ts["ms"], 4),
            "correct": ts["ok"] and twin["ok"],
        }
        failed |= not line["correct"]
        print(json.dumps(line), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
