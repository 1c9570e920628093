"""The Hopper GEMM's verified autotuner: candidates, verified plans, timed on the GPU, one table.

For each problem shape it generates candidate ``GemmConfig`` schedules from the kernel's
templates (``TEMPLATES``: tile, cluster, cooperative / ping-pong, static / dynamic scheduler,
raster order and swizzle, stages, epilogue sub-tile), keeps those that make sense for the
shape (``candidates``), and **verifies every candidate's plan before compiling it**
(``screen``: ``GemmConfig``'s checks, then ``make_plan``, which traces, plans and runs the
verifier; a rejected candidate is reported with its reason and never compiled or timed). On
the GPU each accepted configuration is compiled once (dynamic shapes: one compile serves
every shape; ``--jobs`` compiles in parallel processes first, filling the CuTe DSL's on-disk
cache), run once per shape and checked against an fp32 reference (a wrong result is reported
and not timed), then timed with ``torch.matmul`` in interleaved rounds (the order shuffled
every round, at least ``_timing.MEASURE_S`` = 50 ms a measurement, so the clocks settle under each
candidate's own power draw), best round each. The best configuration per shape class
(``_gemm_table.shape_class``: over the class's tuned shapes, the best geometric mean of each
shape's TFLOP/s over that shape's best) goes into a versioned JSON table (``-o``) with the
date, the GPU, the CuTe DSL version and the command that regenerates it; ``gemm.py --config
auto`` reads it. A class keeps the current table's entry unless the best beats it by more
than ``--margin`` (2 %: one timing of near-equal schedules swings that much between runs).
``--from-log`` makes the table again from a run's printed per-shape lines (another margin, no
GPU); ``--from-sweep`` makes it from a ``bench/gemm_sweep.py --versus`` run, where the entry
and its alternatives ran side by side (the check a tuner pick should pass before it lands).

Usage::

    python examples/hopper/gemm_tune.py --dry-run --shapes sweep         # CPU: list, verify
    python examples/hopper/gemm_tune.py --compile-only --sample 4        # CPU: + compile 4
    python examples/hopper/gemm_tune.py --mnk 4096 4096 4096 --mnk 3000 5000 4000 -o t.json
    python examples/hopper/gemm_tune.py --shapes sweep --part 1/2 -o part1.json   # GPU
    python examples/hopper/gemm_tune.py --combine part1.json part2.json -o gemm_table.json
    python examples/hopper/gemm_tune.py --from-log tune.log --margin 0 -o t.json  # CPU
    python examples/hopper/gemm_tune.py --from-sweep ab.log --dtype e4m3 --scale tensor -o t.json
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

from _gemm_config import (
    DEFAULT_MNK,
    DTYPES,
    PROMOTE_MAX_ACC,
    SCALES,
    SMS,
    GemmConfig,
    fit_swizzle,
)
from _gemm_host import DTYPE_ALIASES, REL_TOL
from _gemm_table import (
    SPLIT_MIN_CHUNK,
    TABLE_PATH,
    apply_fields,
    dump_table,
    load_table,
    promotes,
    rule_config,
    shape_class,
    table_path,
    tuned_fields,
)
from _gemm_templates import (
    DEFAULTS,
    DEFER_TEMPLATES,
    STAGGER_TEMPLATES,
    STREAM_MIN_IDLE,
    STREAM_TEMPLATES,
    SWEEP,
    TEMPLATES,
    can_promote,
)
from _gemm_tune_table import best_per_class, combine, make_table, read_rows, sweep_rows


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One candidate for one shape: its template fields and the configuration (or why not)."""

    fields: dict[str, Any]
    cfg: GemmConfig | None
    reason: str = ""  # why it was rejected ("" when accepted)

    @property
    def key(self) -> str:
        """A stable name of the candidate's schedule."""
        f = self.fields
        kernel = "pskp" if f["kernel"] == "pingpong-skip" else f["kernel"][:4]  # coop, ping
        name = "{}x{}-c{}x{}-{}-{}".format(
            *f["tile_mn"], *f["cluster_mn"], kernel, f["scheduler"][:3]
        )
        keys: tuple[str, ...] = ("raster", "swizzle", "stages", "epi_n", "epi_stages")
        keys += ("split_k", "k_block_bytes", "tail_split", "promote_stagger", "defer_store")
        keys += ("stream_k",)
        values = {k: f.get(k, DEFAULTS[k]) for k in keys}
        extra = [f"{k}{v}" for k, v in values.items() if v != DEFAULTS[k]]
        return "-".join([name, *extra])


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def candidates(mnk: tuple[int, int, int], base: GemmConfig) -> list[dict[str, Any]]:
    """The templates that make sense for ``M x N x K``.

    A cluster wider than the problem's tiles in that direction only idles CTAs, and a
    128-row tile on ``M <= 64`` computes as many rows of padding as of output: both are left
    out (so is a 256-row tile on ``M <= 128``). Split-K templates are kept only for problems
    of few output tiles (at most two waves of their tile over the SMs) whose K gives every
    chunk ``SPLIT_MIN_CHUNK`` blocks; tail-split ones only where they shorten the last round
    of their tile: its ``r = T mod W`` tiles of ``T >= W`` (cluster tiles on ``W`` clusters)
    in ``S`` chunks each take fewer than ``S`` rounds of chunks (``ceil(r S / W) < S``:
    ``r <= W / 2`` for 2, ``2 W / 3`` for 3), with chunks as long. A promoted GEMM
    (``_gemm_table.promotes``) gets only tiles that can promote (``can_promote``), plus
    ``DEFER_TEMPLATES``, and ``STAGGER_TEMPLATES`` when its interval is even. Stream-K ones
    (``STREAM_TEMPLATES``) only where the last round would leave each cluster idle for at least
    ``STREAM_MIN_IDLE`` K blocks on average, ``(W - r) k / W``. The rule's own
    choice (``_gemm_table.rule_config``) is always a candidate, so the table is never worse
    than the fallback on a tuned shape.
    """
    m, n, k = mnk
    out: list[dict[str, Any]] = []
    rule = tuned_fields(rule_config(mnk, base))
    rule = {k: tuple(v) if isinstance(v, list) else v for k, v in rule.items()}
    # the interval the candidates promote at: the explicit one, or the FP8 default's
    even = (base.promote_every or 2) % 2 == 0
    staggered = STAGGER_TEMPLATES if promotes(base) and even else ()
    deferred = DEFER_TEMPLATES if promotes(base) else ()
    for t in (*TEMPLATES, *staggered, *deferred, *STREAM_TEMPLATES, rule):
        bm, bn = t["tile_mn"]
        cm, cn = t["cluster_mn"]
        if -(-m // bm) < cm or -(-n // bn) < cn or (bm > 64 and m <= bm // 2):
            continue
        if promotes(base) and not can_promote(t):
            continue  # no registers for the second (fp32 total) tile next to the WGMMA's
        split = t.get("split_k", 1)
        few_tiles = -(-m // bm) * -(-n // bn) <= 2 * SMS
        if split > 1 and not (few_tiles and -(-k // base.tile_k) >= split * SPLIT_MIN_CHUNK):
            continue
        # A tail split deals cluster tiles to SMS / (cm x cn) clusters: the last round's r
        # tiles become r x tail chunks, which take ceil(r x tail / workers) rounds of chunks;
        # fewer than tail of them or the split saves nothing (r = 0.7 workers in 2 chunks
        # still takes a whole round).
        tail, workers = t.get("tail_split", 1), SMS // (cm * cn)
        tiles = _cdiv(_cdiv(m, bm), cm) * _cdiv(_cdiv(n, bn), cn)
        r = tiles % workers
        shorter = tiles >= workers and r > 0 and _cdiv(r * tail, workers) < tail
        if tail > 1 and not (shorter and -(-k // base.tile_k) >= tail * SPLIT_MIN_CHUNK):
            continue  # a tail split only helps a ragged last round of long enough K loops
        idle = (workers - r) * -(-k // base.tile_k) / workers if tiles >= workers and r else 0
        if t.get("stream_k") and idle < STREAM_MIN_IDLE:
            continue  # its fix-up costs more than the idle time it takes back
        if t not in out:
            out.append(t)
    return out


def screen(
    fields: Iterable[dict[str, Any]],
    base: GemmConfig,
    build: Callable[[GemmConfig], Any] | None = None,
) -> list[Candidate]:
    """Each template as a configuration, its plan verified: accepted or rejected with a reason.

    ``build(cfg)`` traces, plans and verifies the kernel and raises on a rejection
    (``gemm.make_plan`` by default; tests pass a broken one). Nothing is compiled here.
    """
    if build is None:
        from gemm import make_plan

        build = make_plan
    out = []
    for f in fields:
        try:
            cfg = apply_fields(
                base, {k: list(v) if isinstance(v, tuple) else v for k, v in f.items()}
            )
        except ValueError as e:  # GemmConfig's own checks (typed TS errors among them)
            out.append(Candidate(f, None, f"invalid configuration: {e}".splitlines()[0]))
            continue
        try:
            build(cfg)
        except Exception as e:
            # A typed TS error (a catalog code; the verifier's, the planner's and the runtime's
            # are ValueErrors) rejects the candidate; anything else is a bug: let it through.
            if not (isinstance(e, ValueError) or str(getattr(e, "code", "")).startswith("TS-")):
                raise
            out.append(Candidate(f, None, f"plan rejected: {_why(e)}"))
            continue
        out.append(Candidate(f, cfg))
    return out


def _why(e: Exception) -> str:
    """One line on a rejection: the error type, its codes (a verifier report's) and its first
    diagnostic."""
    lines = [x.strip() for x in str(e).splitlines() if x.strip()] or [type(e).__name__]
    report = getattr(e, "report", None)
    codes = sorted(set(report.codes())) if report is not None else []
    detail = next((x for x in lines[1:] if x.startswith(("error", "TS-"))), "")
    return "; ".join(x for x in (f"{type(e).__name__}: {lines[0]}", ",".join(codes), detail) if x)


def _compile_worker(cfg_dict: dict[str, Any], compile_only: bool) -> dict[str, Any]:
    """In a worker process: compile one configuration (``--jobs``)."""
    import gemm

    values: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in cfg_dict.items()
    }
    cfg = GemmConfig(**values)
    start = time.perf_counter()
    if compile_only:
        out = gemm.compile_only(cfg)
        return {
            "same_counts": out["same_counts"],
            "ts_total": out["ts_total"],
            "s": time.perf_counter() - start,
        }
    gemm.compile_for_gpu(cfg, only=("ts",))  # fills the DSL's on-disk cache for the parent
    return {"s": time.perf_counter() - start}


def compile_all(cfgs: list[GemmConfig], jobs: int, compile_only: bool) -> dict[GemmConfig, Any]:
    """Compile each configuration once: ``{cfg: result}``.

    ``compile_only``: for sm_90a with fake tensors (``gemm.compile_only``: TS and twin PTX
    counts). Else the TS kernel for the GPU; with ``jobs > 1`` worker processes compile them
    first, so that this process's compiles load from the CuTe DSL's on-disk cache.
    """
    import gemm

    results: dict[GemmConfig, Any] = {}
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import get_context

        with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
            futures = {
                c: pool.submit(_compile_worker, dataclasses.asdict(c), compile_only) for c in cfgs
            }
            for c, fut in futures.items():
                results[c] = fut.result()
        if compile_only:
            return results
    for c in cfgs:
        results[c] = (
            gemm.compile_only(c) if compile_only else gemm.compile_for_gpu(c, only=("ts",))["ts"]
        )
    return results


def _time_shape(
    mnk: tuple[int, int, int],
    accepted: list[Candidate],
    compiled: dict[GemmConfig, Any],
    base: GemmConfig,
    iters: int,
    rounds: int,
    graph: bool = False,
) -> dict[str, Any]:
    """Check every candidate against an fp32 reference on one shape, then time the right ones
    (``graph``: launches replayed from a CUDA graph, ``_timing.GraphTimer``)."""
    import torch
    from _gemm_host import (
        check_operands,
        kernel_args,
        make_counters_tensor,
        make_inputs,
        make_output,
        make_scales,
        make_workspace,
        on_stream,
        reference,
    )
    from _timing import GraphTimer, best_of_rounds, steady_iters, time_ms

    m, n, k = mnk
    a, b = make_inputs(base, mnk)
    scale_a, scale_b = make_scales(base, m, n)
    ref = reference(base, a, b, scale_a=scale_a, scale_b=scale_b)
    peak = float(ref.abs().max().clamp_min(1e-6))
    calls: dict[str, Any] = {}
    binds: dict[str, Any] = {}  # for graph timing: torch stream -> the call on it
    wrong: dict[str, Any] = {}
    for cand in accepted:
        assert cand.cfg is not None
        cfg = fit_swizzle(cand.cfg, n, m)
        c = make_output(cfg, m, n)
        counters, workspace = make_counters_tensor(cfg, m, n), make_workspace(cfg, m, n)
        args = kernel_args(cfg, a, b, c, None, counters, scale_a, scale_b, workspace)
        try:
            check_operands(cfg, a, b, c, None, scale_a, scale_b)
            compiled[cfg](*args)
            torch.cuda.synchronize()
        except Exception as e:  # a launch the host refuses: reported, never timed
            wrong[cand.key] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            continue
        err = float((c.float() - ref).abs().max()) / peak
        if not (bool(torch.isfinite(c).all()) and err < REL_TOL):
            wrong[cand.key] = err  # reported, never timed
            continue
        calls[cand.key] = lambda kk=compiled[cfg], aa=args: kk(*aa)
        binds[cand.key] = lambda st, kk=compiled[cfg], aa=args, cc=cfg: on_stream(cc, kk, aa, st)
    del ref
    if not base.fp8 and not base.scaled:
        bt = b.t()
        calls["torch"] = lambda: torch.matmul(a, bt)
        binds["torch"] = lambda _st: calls["torch"]
    flop = 2.0 * m * n * k
    if flop == 0:
        return {"tflops": {}, "wrong": wrong, "iters": 0}  # an empty problem: nothing to time
    # At least MEASURE_S per measurement: the GPU's clocks settle under the candidate's own
    # power draw, whatever ran before it, and neither a small problem's launch overhead nor the
    # timer's resolution decides.
    iters = steady_iters(iters, flop)
    if graph:  # kernel time without the host's per-call work (see _timing)
        timers = {name: GraphTimer(bind, iters) for name, bind in binds.items()}
        calls = dict(timers)
    measures = {
        name: call.ms if graph else lambda c=call: time_ms(c, iters) for name, call in calls.items()
    }
    best = best_of_rounds(measures, rounds)  # shuffled, after a warm-up round
    tflops = {name: flop / (ms * 1e9) for name, ms in best.items()}
    return {"tflops": tflops, "wrong": wrong, "iters": iters}


def _part(text: str) -> tuple[int, int]:
    """``--part I/N``: the I-th of N slices, 1 <= I <= N."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not I/N (e.g. 1/2)") from None
    if not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"{text!r}: I must be between 1 and N")
    return i, n


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mnk",
        type=int,
        nargs=3,
        action="append",
        metavar=("M", "N", "K"),
        help="a shape to tune (repeatable)",
    )
    parser.add_argument(
        "--shapes", choices=("sweep",), help="the twelve shapes of bench/gemm_sweep.py"
    )
    parser.add_argument(
        "--part", type=_part, default=(1, 1), help="I/N: tune the I-th of N slices of the shapes"
    )
    parser.add_argument("--dtype", choices=sorted([*DTYPES, *DTYPE_ALIASES]), default="bf16")
    parser.add_argument("--scale", choices=list(SCALES), default="none")
    parser.add_argument(
        "--promote-every",
        type=int,
        default=None,
        help="FP8 two-level accumulation interval (default: GemmConfig's; 0 lets FP8 "
        "candidates use BN = 256 tiles, unpromoted)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="CPU: list and verify the candidates"
    )
    parser.add_argument(
        "--compile-only", action="store_true", help="CPU: also compile --sample of them for sm_90a"
    )
    parser.add_argument(
        "--sample", type=int, default=3, help="configurations compiled by --compile-only"
    )
    parser.add_argument("--jobs", type=int, default=1, help="compile in this many processes")
    parser.add_argument(
        "--iters", type=int, default=10, help="timed launches per round, at least (and ~50 ms)"
    )
    parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds per shape")
    parser.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help="GPU: time no further shape once this many seconds have passed (compiling "
        "included); the table is written from the shapes timed, the rest are named",
    )
    parser.add_argument(
        "--graph",
        action="store_true",
        help="time launches replayed from a CUDA graph (kernel time, no per-call host work)",
    )
    parser.add_argument(
        "--margin",
        type=float,
        default=0.02,
        help="keep the current table's entry for a class unless the best beats it by more "
        "than this fraction (0: the best always wins)",
    )
    source = parser.add_mutually_exclusive_group()  # one way to make the table
    source.add_argument(
        "--from-log",
        type=Path,
        nargs="+",
        metavar="LOG",
        help="no timing: the table from the per-shape JSON lines of earlier runs' output",
    )
    source.add_argument(
        "--from-sweep",
        type=Path,
        nargs="+",
        metavar="LOG",
        help="no timing: the table from bench/gemm_sweep.py --versus output (the table's "
        "entry and the alternatives timed side by side), every contender verified first",
    )
    parser.add_argument(
        "--eager",
        action="store_true",
        help="--from-sweep: rank by the per-call (eager) timings, not the CUDA-graph ones",
    )
    parser.add_argument("-o", "--out", type=Path, help="write the table here")
    source.add_argument(
        "--combine", type=Path, nargs="+", metavar="TABLE", help="merge tables into -o"
    )
    args = parser.parse_args(argv)
    if args.eager and not args.from_sweep:
        parser.error("--eager ranks --from-sweep's timings: give --from-sweep LOG ... too")
    if args.budget_s is not None and args.budget_s <= 0:
        parser.error(f"--budget-s {args.budget_s:g}: give a positive number of seconds")
    try:  # GemmConfig's checks (typed TS errors) on the options: a usage error
        base_config(args)
    except ValueError as e:
        parser.error(str(e))
    return args


def base_config(args: argparse.Namespace) -> GemmConfig:
    """The fields every candidate shares (dtype, scales, promotion); the templates set the rest.

    Its own tile is a placeholder: 128 x 128, which every promotion interval fits (the default
    128 x 256 has no registers for a second accumulator tile, so ``--promote-every 8`` would be
    refused before any template is tried; the templates that cannot promote are rejected one
    by one, with the reason).
    """
    dtype = DTYPE_ALIASES.get(args.dtype, args.dtype)
    every = args.promote_every
    return GemmConfig(tile_mn=(128, 128), dtype=dtype, scale=args.scale, promote_every=every)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    command = "python examples/hopper/gemm_tune.py " + shlex.join(
        sys.argv[1:] if argv is None else argv
    )
    cpu = args.dry_run or args.compile_only
    if not cpu and not args.combine and not args.from_log and not args.from_sweep:
        from _gpu_check import gpu_ready

        if not gpu_ready(__file__):
            return 2
    if args.combine:
        table = combine(args.combine)
        (args.out or TABLE_PATH).write_text(dump_table(table))
        print(
            json.dumps(
                {"combined": [str(p) for p in args.combine], "entries": len(table["entries"])}
            )
        )
        return 0
    base = base_config(args)
    incumbents = _incumbents(base.dtype) if args.margin > 0 else {}
    from_sweep = functools.partial(_rows_from_sweep, eager=args.eager)
    for logs, read in ((args.from_log, _rows_from_log), (args.from_sweep, from_sweep)):
        if logs:  # a table from earlier GPU runs' output, on any machine
            logged, keyed = read(logs, base)
            entries = best_per_class(logged, keyed, incumbents, args.margin)
            for klass in sorted({r["class"] for r in logged} - {e["class"] for e in entries}):
                why = "no contender was timed in every line of the class: pass logs that ran "
                print(json.dumps({"class_left_out": klass, "why": why + "the same ones"}))
            table = make_table(entries, True, command, None, 0.0)
            (args.out or TABLE_PATH).write_text(dump_table(table))
            print(json.dumps({"from": [str(p) for p in logs], "entries": len(entries)}))
            return 0
    shapes = [tuple(s) for s in args.mnk or ()] + list(SWEEP if args.shapes else ())
    part, parts = args.part
    shapes = shapes[part - 1 :: parts] or [DEFAULT_MNK]  # none given: the example's default
    start = time.perf_counter()
    verified: dict[tuple[Any, ...], Candidate] = {}  # one verification per template
    per_shape: list[tuple[tuple[int, int, int], list[Candidate]]] = []
    by_key: dict[str, dict[str, Any]] = {}
    for mnk in shapes:
        cands = []
        for f in candidates(mnk, base):
            sig = tuple(sorted((k, str(v)) for k, v in f.items()))
            if sig not in verified:
                verified[sig] = screen([f], base)[0]
            cands.append(verified[sig])
            by_key[verified[sig].key] = tuned_fields(apply_fields(base, f))
        per_shape.append((mnk, cands))
    fitted = sorted(
        {fit_swizzle(c.cfg, mnk[1], mnk[0]) for mnk, cs in per_shape for c in cs if c.cfg},
        key=lambda c: json.dumps(dataclasses.asdict(c)),
    )
    rows: list[dict[str, Any]] = []
    same_counts = True
    if cpu:
        sample = fitted[: args.sample] if args.compile_only else []
        compiled = compile_all(sample, args.jobs, compile_only=True) if sample else {}
        same_counts = all(out["same_counts"] for out in compiled.values())
        for c, out in compiled.items():
            print(
                json.dumps(
                    {
                        "compiled": dataclasses.asdict(c),
                        "same_counts": out["same_counts"],
                        "ts_total": out["ts_total"],
                    }
                )
            )
    else:
        compiled = compile_all(fitted, args.jobs, compile_only=False)
    compile_s = time.perf_counter() - start
    ok = True
    for mnk, cands in per_shape:
        if not cpu and args.budget_s is not None and time.perf_counter() - start > args.budget_s:
            # A device call has a time limit: a table of the shapes timed beats none.
            print(json.dumps({"left_out": list(mnk), "why": f"--budget-s {args.budget_s:g}"}))
            continue
        accepted = [c for c in cands if c.cfg is not None]
        row: dict[str, Any] = {"mnk": list(mnk), "class": shape_class(mnk), "dtype": base.dtype}
        row["rule"] = tuned_fields(rule_config(mnk, base))
        row["candidates"] = [c.key for c in accepted]
        row["rejected"] = {c.key: c.reason for c in cands if c.cfg is None}
        if not cpu:
            row.update(
                _time_shape(mnk, accepted, compiled, base, args.iters, args.rounds, args.graph)
            )
            ok &= not row["wrong"]
        rows.append(row)
        print(json.dumps(row, sort_keys=True), flush=True)
    entries = best_per_class(rows, by_key, incumbents, args.margin)
    gpu = None if cpu else _gpu_name()
    total = time.perf_counter() - start
    rejected = sum(len(r["rejected"]) for r in rows)
    summary = {"example": "gemm_tune", "summary": True, "shapes": len(rows)}
    summary.update(configs=len(fitted), rejected=rejected, entries=len(entries))
    # The demo's reading: every template verified, every sampled compile equal to the twin's.
    summary.update(verified=rejected == 0, same_counts=same_counts)
    summary.update(compile_s=round(compile_s, 1), total_s=round(total, 1))
    print(json.dumps(summary), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(dump_table(make_table(entries, not cpu, command, gpu, total)))
    return 0 if ok and same_counts else 1


def _incumbents(dtype: str) -> dict[str, str]:
    """The current table's (``table_path()``) winner per class for ``dtype``."""
    table = load_table(table_path()) or {"entries": []}
    return {
        e["class"]: e["winner"]
        for e in table["entries"]
        if e["dtype"] == dtype and isinstance(e.get("winner"), str)
    }


def _rows_from_log(
    logs: list[Path], base: GemmConfig
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """``--from-log``: the logged tuner rows and their candidates' fields by key."""
    rows = read_rows(logs, base.dtype)
    # The rows' candidates were verified when they were timed: only their fields here.
    fields = [f for r in rows for f in candidates((r["mnk"][0], r["mnk"][1], r["mnk"][2]), base)]
    screened = screen(fields, base, build=lambda cfg: None)
    return rows, {c.key: tuned_fields(c.cfg) for c in screened if c.cfg is not None}


def _rows_from_sweep(
    logs: list[Path], base: GemmConfig, eager: bool = False
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """``--from-sweep``: a ``gemm_sweep.py --versus`` run's same-run timings as tuner rows
    (``_gemm_tune_table.sweep_rows``), every contender verified (``screen``) before it can win:
    one whose plan fails is left out of its shape's line, with the reason printed. So is one
    that cannot promote where the problem promotes (FP8 by default): it accumulates like
    ``use_fast_accum`` (several times the error), so its timing is not the same product's."""
    lines = sweep_rows(logs, base, eager)
    for name, why in dict.fromkeys(x for r in lines for x in r["left_out"]):
        print(json.dumps({"left_out": name, "reason": why}))
    verified = {}
    for fields in {json.dumps(f, sort_keys=True) for r in lines for f, _ in r["contenders"]}:
        (cand,) = screen([json.loads(fields)], base)
        if cand.cfg is not None and promotes(base) and not can_promote(json.loads(fields)):
            why = f"no registers to promote (over {PROMOTE_MAX_ACC} accumulator values a thread)"
            cand = Candidate(cand.fields, None, why)
        verified[fields] = cand
        if cand.cfg is None:
            print(json.dumps({"rejected": cand.key, "reason": cand.reason}))
    rows, by_key = [], {}
    for line in lines:
        tflops: dict[str, float] = {}
        other: dict[str, float] = {}  # the other timing, where the line has it
        for (fields, value), second in zip(line["contenders"], line["others"], strict=True):
            cand = verified[json.dumps(fields, sort_keys=True)]
            if cand.cfg is not None:  # a schedule timed twice in the line: its best timing
                tflops[cand.key] = max(value, tflops.get(cand.key, 0.0))
                if second is not None:
                    other[cand.key] = max(second, other.get(cand.key, 0.0))
                by_key[cand.key] = tuned_fields(cand.cfg)
        if line["torch"] is not None:
            tflops["torch"] = line["torch"]
        rows.append(dict(line, tflops=tflops, other_tflops=other))
    return rows, by_key


def _gpu_name() -> str:
    import torch

    return str(torch.cuda.get_device_name())


if __name__ == "__main__":
    sys.exit(main())
