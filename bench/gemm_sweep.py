"""GEMM shape sweep on the GPU: TS, its twin, torch and CUTLASS's CuTe example.

Eight benchmark shapes and four LLM shapes (bf16 by default; ``--dtype fp8`` for
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
note), with ``--versus "FLAGS"`` (repeatable) other TS configurations given as schedule
options on ``GemmConfig``'s defaults (``vs:tile=128x128,kernel=pingpong``: the TS kernel alone
on the same problem, FP8 scales and epilogue options included, compiled once per configuration,
the same tensors and rounds, checked the same way), and the ratios; interleaved rounds, best
round each, each measurement at least ``--measure-s`` long (50 ms: no contender runs on the
clocks that the one before it left); ``--passes N`` runs the whole sweep N times in turn and
adds, per shape, each ratio's median over the passes (``--from-logs LOG...`` runs nothing and
judges the passes of earlier runs' logs together, on any machine). A last line sums up: the
geometric mean and the minimum of TS / torch (and TS / CuTe example, each ``--versus``
configuration / torch, TS / it) over the shapes (over the medians, with ``--passes``). Every
kernel is compiled once per configuration (dynamic shapes). Usage (GPU)::

    source .gpu/setup.sh && python3 bench/gemm_sweep.py
    source .gpu/setup.sh && python3 bench/gemm_sweep.py \\
        --cute-example .gpu/cute_example/dense_gemm_persistent.py
    source .gpu/setup.sh && python3 bench/gemm_sweep.py --dtype fp8 --scale tensor
    source .gpu/setup.sh && python3 bench/gemm_sweep.py --passes 3 --graph
    source .gpu/setup.sh && python3 bench/gemm_sweep.py --dtype fp8 --scale rowwise
    python3 bench/gemm_sweep.py --from-logs call1/sweep.log call2/sweep.log
    source .gpu/setup.sh && python3 bench/gemm_sweep.py --shape 8192 8192 8192 \\
        --versus "--tile 128x128 --kernel pingpong" --versus "--tile 128x256 --cluster 2x1"
    source .gpu/setup.sh && python3 bench/gemm_sweep.py --dtype fp8 --scale tensor \\
        --shape 8192 8192 8192 --versus "--tile 128x192 --epi-stages 3" --versus "--tile 128x128"
"""

from __future__ import annotations

import argparse
import collections
import importlib
import json
import math
import shlex
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "hopper"))
# bench/_cute_example.py; after examples/hopper, whose gemm.py is not bench/gemm.py
sys.path.append(str(Path(__file__).resolve().parent))

# eight benchmark shapes and four LLM layers (MLP up / down projections, small-batch
# decode-like M): the tuner's sweep too, one list for both
SHAPES: tuple[tuple[int, int, int], ...] = importlib.import_module("_gemm_templates").SWEEP


def summary(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Geometric mean and minimum of ``key`` over the rows that have it."""
    values = [r[key] for r in rows if key in r]
    if not values:
        return {}
    geomean = math.exp(sum(math.log(v) for v in values) / len(values))
    return {f"{key}_geomean": geomean, f"{key}_min": min(values), f"{key}_shapes": len(values)}


# The performance targets, as same-run ratios: bf16 against cuBLAS (geomean, every shape) and the
# CuTe example (every shape); FP8 against the accurate torch._scaled_mm. A sweep of some
# shapes (--shape) judges those only.
TARGETS = (
    ("ts_over_torch_geomean", 1.00),
    ("ts_over_torch_min", 0.97),
    ("ts_over_cute_example_min", 1.00),
)
FP8_TARGETS = (("ts_over_torch_accurate_geomean", 1.00), ("ts_over_torch_accurate_min", 0.95))


def targets(total: dict[str, Any]) -> dict[str, bool]:
    """Each target the summary ``total`` has numbers for: whether it holds."""
    wanted = FP8_TARGETS if "ts_over_torch_accurate_geomean" in total else TARGETS
    return {f"{key} >= {bar:.2f}": total[key] >= bar for key, bar in wanted if key in total}


def main(argv: list[str] | None = None) -> int:
    gemm: Any = importlib.import_module("gemm")  # examples/hopper/gemm.py
    timing: Any = importlib.import_module("_timing")

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--iters", type=int, default=30, help="timed launches per measurement, at least"
    )
    parser.add_argument(
        "--measure-s",
        type=float,
        default=timing.MEASURE_S,
        metavar="S",
        help="and at least S seconds per measurement, so that each contender runs on the "
        "clocks of its own power draw (default %(default)s; 0: exactly --iters launches)",
    )
    parser.add_argument("--rounds", type=int, default=6, help="interleaved rounds per shape")
    parser.add_argument(
        "--passes",
        type=int,
        default=1,
        metavar="N",
        help="run every shape N times in turn (kernels compiled once); N > 1 adds a line per "
        "shape with each ratio's median over the passes, and the summary and its targets are "
        "over those medians (default %(default)s)",
    )
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
    parser.add_argument(
        "--graph",
        action="store_true",
        help="also time every contender replayed from a CUDA graph (kernel time without the "
        "per-call host work; the *_graph ratios)",
    )
    parser.add_argument(
        "--versus",
        action="append",
        default=[],
        metavar="FLAGS",
        help="another TS configuration in the same rounds, as schedule options on the defaults, "
        'e.g. "--tile 128x128 --kernel pingpong" (repeatable; the same problem options)',
    )
    parser.add_argument(
        "--from-logs",
        type=Path,
        nargs="+",
        metavar="LOG",
        help="run nothing: pool the per-pass lines of earlier sweeps' logs (one dtype; each "
        "line's ratios are same-run ones) and print each shape's medians over all of them and "
        "the summary with its targets (no GPU needed)",
    )
    gemm.add_config_args(parser)
    args = parser.parse_args(argv)
    if args.from_logs:
        return pooled(parser, args.from_logs)
    if args.measure_s < 0:
        parser.error(f"--measure-s {args.measure_s:g}: give 0 (exactly --iters) or more seconds")
    if args.passes < 1:
        parser.error(f"--passes {args.passes}: give 1 or more")
    shapes = [tuple(s) for s in args.shape] if args.shape else list(SHAPES)
    cli: Any = importlib.import_module("_gemm_cli")
    extras, note = cute_example_column(args, cli.parse_config(args))
    cache: dict[Any, dict[str, Any]] = {}
    versus_cache: dict[Any, Any] = {}
    rows: list[dict[str, Any]] = []
    ok = True
    for turn in range(args.passes):
        for mnk in shapes:
            r = measure_shape(gemm, args, mnk, cache, versus_cache, extras, note)
            if args.passes > 1:
                r["pass"] = turn + 1
            ok &= all(r[name]["ok"] for name in ("ts", "twin"))
            rows.append(r)
            print(json.dumps(r, sort_keys=True), flush=True)
    total: dict[str, Any] = {"dtype": args.dtype, "scale": args.scale, "config": args.config}
    total["ok"], total["passes"] = ok, args.passes
    versus = [versus_name(spec) for spec in args.versus]
    print_summary(rows, args.passes > 1, total, args.graph, versus)
    return 0 if ok else 1


def print_summary(
    rows: list[dict[str, Any]],
    medians: bool,
    total: dict[str, Any],
    graph: bool,
    versus: list[str],
) -> None:
    """Print each shape's median line (with ``medians``) and the summary line ``total`` plus
    the geomean and minimum of each ratio over the shapes (over the medians) and the targets."""
    judged = rows
    if medians:  # with several passes: geomeans and minima of per-shape medians
        judged = median_rows(rows)
        for r in judged:
            print(json.dumps(r, sort_keys=True), flush=True)
    total = {"bench": "gemm_sweep", "summary": True, **total}
    total["cute_example_ok"] = all(r.get("cute_example", {}).get("ok", True) for r in rows)
    keys = ["ts_over_torch", "ts_over_torch_accurate", "ts_over_twin", "ts_over_cute_example"]
    if graph:
        keys += ["ts_over_torch_graph", "ts_over_torch_accurate_graph"]
        keys += ["ts_over_cute_example_graph"]
    for name in versus:
        keys += [f"{name}_over_torch", f"ts_over_{name}"]
    for key in keys:
        total.update(summary(judged, key))
    total["targets"] = targets(total)
    print(json.dumps(total, sort_keys=True), flush=True)


def pooled(parser: argparse.ArgumentParser, logs: list[Path]) -> int:
    """``--from-logs``: the per-pass lines of earlier sweeps (their median and summary lines
    and every other output skipped), judged together as the passes of one sweep.

    Each pass's ratios are same-run ones, so passes from several device calls of one table
    pool: a shape's median over six passes of two calls is steadier than either call's.
    """
    rows: list[dict[str, Any]] = []
    for log in logs:
        if not log.is_file():
            parser.error(f"--from-logs {log}: no such file")
        for number, text in enumerate(log.read_text().splitlines(), 1):
            try:  # a run stopped by its time limit can leave a line cut short
                line = json.loads(text) if text.startswith("{") else {}
            except json.JSONDecodeError as error:
                parser.error(f"--from-logs {log}:{number}: not a whole JSON line ({error})")
            if "mnk" in line and "ts" in line and "median_of_passes" not in line:
                rows.append(line)
    if not rows:
        parser.error(f"--from-logs: no sweep lines in {', '.join(map(str, logs))}")
    kinds = {(r.get("baseline"), r.get("config", {}).get("dtype")) for r in rows}
    if len(kinds) > 1:
        parser.error(
            f"--from-logs: the logs mix problems {sorted(map(str, kinds))}: pool one "
            "dtype (bf16 against torch.matmul, or FP8 against torch._scaled_mm) at a time"
        )
    configs: dict[tuple[int, ...], set[str]] = {}
    for r in rows:  # a shape's passes must have timed one TS kernel
        configs.setdefault(tuple(r["mnk"]), set()).add(json.dumps(r.get("config"), sort_keys=True))
    for mnk, seen in configs.items():
        if len(seen) > 1:
            parser.error(
                f"--from-logs: {'x'.join(map(str, mnk))} ran {len(seen)} TS configurations "
                "in these logs (another table or other options): pool the logs of one table"
            )
    dtype = rows[0].get("config", {}).get("dtype")
    total = {"dtype": dtype, "ok": all(r[n]["ok"] for r in rows for n in ("ts", "twin"))}
    per_shape = collections.Counter(tuple(r["mnk"]) for r in rows)
    total["passes"], total["logs"] = max(per_shape.values()), [str(log) for log in logs]
    graph = any("ts_over_torch_graph" in r for r in rows)
    versus = sorted(
        {
            k[: -len("_over_torch")]
            for r in rows
            for k in r
            if k.startswith("vs:") and k.endswith("_over_torch")
        }
    )
    print_summary(rows, True, total, graph, versus)
    return 0 if total["ok"] else 1


def measure_shape(
    gemm: Any,
    args: Any,
    mnk: tuple[int, int, int],
    cache: dict[Any, dict[str, Any]],
    versus_cache: dict[Any, Any],
    extras: dict[str, Any],
    note: str,
) -> dict[str, Any]:
    """One shape's line: its configuration (compiled once, ``cache``), every contender timed
    in the same interleaved rounds, and the ratios."""
    shape_cfg, source = gemm.config_for(args, mnk)
    if shape_cfg not in cache:
        cache[shape_cfg] = gemm.compile_for_gpu(shape_cfg)  # {"ts": ..., "twin": ...}
    compiled = cache[shape_cfg]
    more = versus_variants(gemm, args, mnk, versus_cache)
    r = gemm.run_case(
        shape_cfg,
        compiled,
        mnk,
        args.iters,
        rounds=args.rounds,
        extras=extras,
        graph=args.graph,
        variants=more,
        measure_s=args.measure_s,
    )
    r["bench"], r["config_source"] = "gemm_sweep", source
    for name in more:
        if "tflops" in r.get(name, {}):
            r[f"ts_over_{name}"] = r["ts"]["tflops"] / r[name]["tflops"]
    r["ts_over_twin"] = r["ts"]["tflops"] / r["twin"]["tflops"]
    if "tflops" in r.get("cute_example", {}):
        r["ts_over_cute_example"] = r["ts"]["tflops"] / r["cute_example"]["tflops"]
    if "graph_tflops" in r.get("cute_example", {}) and "graph_tflops" in r["ts"]:
        graph_ratio = r["ts"]["graph_tflops"] / r["cute_example"]["graph_tflops"]
        r["ts_over_cute_example_graph"] = graph_ratio
    elif note:
        r["cute_example"] = {"skipped": note}
    return r


RATIO = "_over_"  # a line's ratio keys: "ts_over_torch", "vs:..._over_torch_graph", ...


def median_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per shape (in first-seen order), each ratio's median over the passes that have it.

    One pass's ratio moves by a few percent with the clocks (TS against its twin, the same
    code, ranged 0.976-1.04 over two sweeps' shapes on an H100); the median of independent
    passes is the steadier estimate of where a shape stands, and one bad pass cannot decide
    a target.
    """
    shapes: dict[tuple[int, ...], list[dict[str, Any]]] = {}
    for r in rows:
        shapes.setdefault(tuple(r["mnk"]), []).append(r)
    out = []
    for mnk, passes in shapes.items():
        keys = sorted({k for r in passes for k, v in r.items() if RATIO in k and _number(v)})
        line: dict[str, Any] = {"bench": "gemm_sweep", "mnk": list(mnk)}
        line["median_of_passes"] = len(passes)
        line["config_source"] = passes[0].get("config_source")
        for key in keys:
            line[key] = statistics.median(r[key] for r in passes if _number(r.get(key)))
        out.append(line)
    return out


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def versus_name(spec: str) -> str:
    """``"--tile 128x128 --kernel pingpong"`` -> ``"vs:tile=128x128,kernel=pingpong"``."""
    words = shlex.split(spec)
    pairs = [
        f"{flag.lstrip('-')}={value}" for flag, value in zip(words[::2], words[1::2], strict=False)
    ]
    return "vs:" + ",".join(pairs)


def versus_variants(
    gemm: Any, args: Any, mnk: tuple[int, int, int], cache: dict[Any, Any]
) -> dict[str, Any]:
    """``--versus``: each configuration and its TS kernel, as ``run_case`` variants for ``mnk``.

    Its schedule options apply to ``GemmConfig``'s defaults (``--config default``, the swizzle
    fitted to the shape) with the sweep's problem options (dtype, layout, alpha, beta, bias,
    scales: the same problem, FP8 included: ``_gemm_cli.versus_config``); each configuration
    is compiled once.
    """
    cli: Any = importlib.import_module("_gemm_cli")
    out: dict[str, Any] = {}
    for spec in args.versus:
        other = cli.versus_config(cli.parse_config(args), shlex.split(spec), mnk)
        if other not in cache:
            cache[other] = gemm.compile_for_gpu(other, only=("ts",))["ts"]
        out[versus_name(spec)] = (other, cache[other])
    return out


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
