"""GEMM shape sweep on the GPU (issue 16): TS, its twin and torch on twelve shapes in one run.

The eight shapes of issue 16's table and four LLM shapes, for one configuration (bf16 by
default; ``--dtype fp8`` for e4m3 x e4m3 -> bf16 with ``--scale tensor`` / ``rowwise``). Per
shape, on the same inputs, one JSON line: the TS kernel's and the twin's TFLOP/s (each checked
against an fp32 reference first: ``max |C - ref| <= 1e-2 * max |ref|``), torch's (``torch.matmul``,
or for FP8 ``torch._scaled_mm`` with the same scales, bf16 out, both with fast accumulation,
the TS kernel's own, and without) and the ratios; interleaved rounds, best round each. A last
line sums up: the geometric mean and the minimum of TS / torch over the shapes. Every kernel
is compiled once per scheduler swizzle (dynamic shapes). Usage (GPU)::

    source .gpu/setup.sh && python3 bench/gemm_sweep.py
    source .gpu/setup.sh && python3 bench/gemm_sweep.py --dtype fp8 --scale tensor
    source .gpu/setup.sh && python3 bench/gemm_sweep.py --dtype fp8 --scale rowwise
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "hopper"))

SHAPES: tuple[tuple[int, int, int], ...] = (
    # issue 16's table
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (4096, 4096, 14336),
    (8192, 1024, 8192),
    (1024, 8192, 8192),
    (16384, 16384, 1024),
    (3000, 5000, 4000),
    # LLM layers: MLP up / down projections, small-batch decode-like M
    (8192, 28672, 8192),
    (8192, 8192, 28672),
    (128, 8192, 8192),
    (256, 28672, 8192),
)


def summary(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Geometric mean and minimum of ``key`` over the rows that have it."""
    values = [r[key] for r in rows if key in r]
    if not values:
        return {}
    geomean = math.exp(sum(math.log(v) for v in values) / len(values))
    return {f"{key}_geomean": geomean, f"{key}_min": min(values), f"{key}_shapes": len(values)}


def main(argv: list[str] | None = None) -> int:
    gemm: Any = importlib.import_module("gemm")  # examples/hopper/gemm.py

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=30, help="timed launches per round")
    parser.add_argument("--rounds", type=int, default=6, help="interleaved rounds per shape")
    parser.add_argument(
        "--shape",
        type=int,
        nargs=3,
        action="append",
        metavar=("M", "N", "K"),
        help="run only these shapes (repeatable)",
    )
    gemm.add_config_args(parser)
    args = parser.parse_args(argv)
    cfg = gemm.parse_config(args)
    shapes = [tuple(s) for s in args.shape] if args.shape else list(SHAPES)

    cache: dict[Any, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    ok = True
    for mnk in shapes:
        shape_cfg = gemm.fit_swizzle(cfg, mnk[1])
        if shape_cfg not in cache:
            cache[shape_cfg] = gemm.compile_for_gpu(shape_cfg)  # {"ts": ..., "twin": ...}
        compiled = cache[shape_cfg]
        r = gemm.run_case(shape_cfg, compiled, mnk, args.iters, rounds=args.rounds)
        r["bench"] = "gemm_sweep"
        r["ts_over_twin"] = r["ts"]["tflops"] / r["twin"]["tflops"]
        ok &= all(r[name]["ok"] for name in compiled)
        rows.append(r)
        print(json.dumps(r, sort_keys=True), flush=True)
    total: dict[str, Any] = {"bench": "gemm_sweep", "summary": True, "dtype": cfg.dtype}
    total["scale"], total["ok"] = cfg.scale, ok
    for key in ("ts_over_torch", "ts_over_torch_accurate", "ts_over_twin"):
        total.update(summary(rows, key))
    print(json.dumps(total, sort_keys=True), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
