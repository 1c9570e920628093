"""GEMM shape sweep on the GPU (issue 16): TS, its twin, torch and CUTLASS's CuTe example.

The eight shapes of issue 16's table and four LLM shapes (bf16 by default; ``--dtype fp8`` for
e4m3 x e4m3 -> bf16 with ``--scale tensor`` / ``rowwise``). Each shape runs the configuration
``--config auto`` picks for it (the per-shape table ``examples/hopper/gemm_table.json`` or its
fallback rule; schedule options given on the command line override it; ``--config default``
runs one fixed configuration). Per shape, on the same inputs, one JSON line: the TS kernel's
and the twin's TFLOP/s (each checked against an fp32 reference first: ``max |C - ref| <= 1e-2 *
max |ref|``), torch's (``torch.matmul``, or for FP8 ``torch._scaled_mm`` with the same scales,
bf16 out, both with fast accumulation, the TS kernel's own, and without), with
``--cute-example PATH`` CUTLASS's own CuTe DSL Hopper persistent GEMM example
(``cute_example``: tile 128 x 256, cluster 2 x 1, the same tensors, checked the same way;
16-bit plain GEMMs only; ``tools/fetch_cute_example.sh`` puts the file at
``.gpu/cute_example/dense_gemm_persistent.py``, and a missing file skips the column with a
note), and the ratios; interleaved rounds, best round each. A last line sums up: the geometric
mean and the minimum of TS / torch (and TS / CuTe example) over the shapes. Every kernel is
compiled once per configuration (dynamic shapes). Usage (GPU)::

    source .gpu/setup.sh && python3 bench/gemm_sweep.py
    source .gpu/setup.sh && python3 bench/gemm_sweep.py \\
        --cute-example .gpu/cute_example/dense_gemm_persistent.py
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
# bench/_cute_example.py; after examples/hopper, whose gemm.py is not bench/gemm.py
sys.path.append(str(Path(__file__).resolve().parent))

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
    parser.add_argument(
        "--cute-example",
        type=Path,
        metavar="PATH",
        help="CUTLASS's dense_gemm_persistent.py (tools/fetch_cute_example.sh): time it too",
    )
    gemm.add_config_args(parser)
    args = parser.parse_args(argv)
    shapes = [tuple(s) for s in args.shape] if args.shape else list(SHAPES)
    host: Any = importlib.import_module("_gemm_host")  # beside gemm.py
    extras, note = cute_example_column(args, host.parse_config(args))

    cache: dict[Any, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    ok = True
    for mnk in shapes:
        shape_cfg, source = gemm.config_for(args, mnk)
        if shape_cfg not in cache:
            cache[shape_cfg] = gemm.compile_for_gpu(shape_cfg)  # {"ts": ..., "twin": ...}
        compiled = cache[shape_cfg]
        r = gemm.run_case(shape_cfg, compiled, mnk, args.iters, rounds=args.rounds, extras=extras)
        r["bench"], r["config_source"] = "gemm_sweep", source
        r["ts_over_twin"] = r["ts"]["tflops"] / r["twin"]["tflops"]
        if "tflops" in r.get("cute_example", {}):
            r["ts_over_cute_example"] = r["ts"]["tflops"] / r["cute_example"]["tflops"]
        elif note:
            r["cute_example"] = {"skipped": note}
        ok &= all(r[name]["ok"] for name in compiled)
        rows.append(r)
        print(json.dumps(r, sort_keys=True), flush=True)
    total: dict[str, Any] = {"bench": "gemm_sweep", "summary": True, "dtype": args.dtype}
    total["scale"], total["config"], total["ok"] = args.scale, args.config, ok
    total["cute_example_ok"] = all(r.get("cute_example", {}).get("ok", True) for r in rows)
    for key in ("ts_over_torch", "ts_over_torch_accurate", "ts_over_twin", "ts_over_cute_example"):
        total.update(summary(rows, key))
    print(json.dumps(total, sort_keys=True), flush=True)
    return 0 if ok else 1


def cute_example_column(args: Any, cfg: Any) -> tuple[dict[str, Any], str]:
    """The CuTe example as ``run_case`` extras (``{}`` without ``--cute-example``), and a note
    saying why it is left out when it is (no file, not a plain 16-bit GEMM)."""
    if args.cute_example is None:
        return {}, ""
    if not args.cute_example.is_file():
        return {}, f"{args.cute_example} not found (run tools/fetch_cute_example.sh)"
    if cfg.fp8 or cfg.fused_epilogue or cfg.layout != "tn":
        return {}, "the CuTe example column is measured for plain 16-bit tn GEMMs only"
    from _cute_example import CuteExample

    return {"cute_example": CuteExample(args.cute_example).launcher}, ""


if __name__ == "__main__":
    sys.exit(main())
