"""GPU schedule fuzzing: random valid kernels must finish with the right answer, broken ones
must be caught.

The kernels are drawn by ``bench/_fuzz_shapes.py`` (tasks, rings of random depth, loops over
constant or runtime trip counts, runtime flags, ``every`` / first / last-iteration guards, lagged
releases, persistent work queues with skipped tiles) and built on the public facade by
``bench/_fuzz_kernels.py``; their work moves real data through the SMEM rings and sums it, and
the host computes the answer from the shape alone. Every kernel is compiled with debug bounded
waits (a wait that never completes prints the task and resource and traps).

* **Valid** kernels: each shape is verified (``Kernel.verify()`` must accept it), compiled once
  and run on ``--inputs`` random inputs (trip counts, flags, tile counts and skipped tiles are
  kernel arguments): each run must finish (no trap) and leave exactly the expected sums and no
  mismatch. ``--valid N`` counts runs (shape x input), so ``N / --inputs`` shapes compile.
* **Broken** variants: a valid shape with one mutation (a dropped release or commit, a
  swapped wait and release, a consumer group larger than its task, an off-by-one trip count,
  a flag / ``every`` / ``skippable`` guard on the producer only, a lag without its last
  release). The verifier must reject each one (a failed report, or a typed TS error at
  declaration). Any it misses, and ``--trap-sample`` of those it catches, are compiled with
  verification off (``TaskManager(skip_validation=True, debug_bounded_waits=True)``) and
  run on an input on which the host model deadlocks: the kernel must trap, and a ``TS debug``
  line must name a task and a ring the host model finds stuck. A trap kills the CUDA context,
  so each of these runs in its own process.

Usage::

    # CPU (CI): generate, verify and compile for sm_90a (fake tensors), check each PTX against
    # its plan (Compiled.check(), translation validation); every broken variant must be
    # rejected by the verifier.
    python bench/fuzz_gpu.py --compile-only --valid 20 --broken 40 --jobs 2

    # GPU (H200), from the repository root:
    source .gpu/setup.sh && python3 bench/fuzz_gpu.py --valid 500 --broken 500 --jobs 14

With the defaults (``--inputs 4``, ``--seed 0``) the GPU run compiles 125 valid shapes (0.3 to
10 s each on this project's CPU), runs each on 4 inputs, verifies 500 broken variants on the
host and runs ``--trap-sample 24`` of them to a trap; ``--inputs 1`` makes every valid run a
shape of its own (500 compiles). A valid kernel that traps is re-run in no other shape's
process: its worker restarts with the remaining shapes. Paste the summary line into
``bench/RESULTS.md`` with the date and the command.

Prints one JSON line per batch (a worker process's shapes, or the broken variants' verdicts)
and a summary line: ``kernels_run``, ``hangs`` (traps or timeouts among the valid),
``wrong_results``, ``broken`` caught ``by_verifier`` / ``by_trap`` / ``missed``. It exits 1 when
a valid kernel hangs, computes a wrong result or is rejected, or a broken one is missed.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _fuzz_shapes import (  # noqa: E402 (after the path set-up)
    HANGING,
    Inputs,
    Shape,
    describe,
    differences,
    expected,
    generate,
    hanging_inputs,
    mutate,
    random_inputs,
    simulate,
)

CHUNK = 4
"""Shapes per worker process on the GPU (one process compiles and runs them in turn)."""

TIMEOUT_S = 300
"""A worker that runs this long has hung without trapping."""


# -- shapes -----------------------------------------------------------------------------------
def valid_shapes(count: int, seed: int) -> list[Shape]:
    """``count`` shapes of distinct structure from seeds ``seed, seed + 1, ...``."""
    seen: set[str] = set()
    out: list[Shape] = []
    s = seed
    while len(out) < count:
        shape = generate(s)
        s += 1
        if shape.structure not in seen:
            seen.add(shape.structure)
            out.append(shape)
    return out


def broken_shapes(count: int, seed: int) -> list[Shape]:
    """``count`` one-mutation variants of the shapes from seed ``seed + 10**6`` on."""
    base = seed + 10**6
    return [mutate(generate(base + i), random.Random(base + i)) for i in range(count)]


# -- verification (host: no GPU, no DSL calls) ------------------------------------------------
def rejected(shape: Shape) -> str:
    """Why the verifier rejects ``shape`` (error codes or a typed error's name), or ''.

    A schedule the tracer refuses (``ScheduleError``: a malformed program, e.g. nested
    condition blocks) is the fuzzer's own bug, not a catch: it comes back as ``malformed: ...``.
    """
    import _fuzz_kernels

    try:
        report = _fuzz_kernels.kernel(shape).verify()
    except Exception as err:
        if type(err).__name__ == "ScheduleError":
            return f"malformed: {str(err)[:300]}"
        if type(err).__module__.split(".")[0].startswith("ts_"):
            return type(err).__name__
        raise  # an internal error is a bug, not a rejection
    if report.ok:
        return ""
    codes = [getattr(e, "code", "") for e in report.report.errors]
    return ",".join(sorted({c for c in codes if c})) or "error"


def verdicts(shapes: Sequence[Shape], jobs: int) -> list[str]:
    """:func:`rejected` of every shape, in ``jobs`` processes."""
    with concurrent.futures.ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(rejected, shapes, chunksize=8))


# -- workers (each runs in its own process) ----------------------------------------------------
def compile_shape(shape_json: str, unverified: bool = False) -> dict[str, Any]:
    """Compile one shape for sm_90a with fake tensors (``--compile-only``)."""
    import _fuzz_kernels
    import cutlass.cute as cute

    shape = Shape.from_json(shape_json)
    start = time.perf_counter()
    out: dict[str, Any] = {"shape": shape.name}
    try:
        if unverified:
            launcher = _fuzz_kernels.unverified_launcher(shape)
            compiled = cute.compile(launcher, *_fuzz_kernels.compile_args(shape))
            out["compiled"] = compiled is not None
        else:
            ker = _fuzz_kernels.kernel(shape)
            compiled = ker.compile(*_fuzz_kernels.compile_args(shape))
            out["compiled"] = True
            out["traps"] = compiled.counts().get("trap", 0)
            # Translation validation: the PTX's barrier protocol is the verified plan's.
            out["translation"] = compiled.check().codes()
    except Exception as err:
        out["compiled"] = False
        out["error"] = f"{type(err).__name__}: {str(err)[:400]}"
    out["seconds"] = round(time.perf_counter() - start, 2)
    return out


def _device_args(shape: Shape, inputs: Inputs, out: Any) -> tuple[tuple[Any, ...], Any]:
    """The launcher's arguments for ``inputs`` (``out`` is zeroed), and the torch tensors
    under them (the caller keeps them alive until the launch is done)."""
    import cutlass
    import torch

    from task_scheduling.harness import to_cute

    params = torch.tensor(inputs.params(), dtype=torch.int32, device="cuda")
    skips = torch.tensor(inputs.skips, dtype=torch.int32, device="cuda")
    out.zero_()
    return (
        to_cute(params, None),
        to_cute(skips, None),
        to_cute(out, None),
        cutlass.Int32(inputs.tiles),
    ), (params, skips)


def run_valid(shape_jsons: Sequence[str], inputs_per: int, seed: int) -> None:
    """GPU worker: compile and run each shape on random inputs; JSON lines on stdout.

    Per shape: ``{"start"}``, then ``{"shape", "runs", "wrong", ...}`` or ``{"shape",
    "error"}`` (it did not compile). A launch that fails (a trap) prints ``{"died", "inputs",
    "error"}`` and ends the process: the CUDA context is lost.
    """
    import _fuzz_kernels
    import torch
    from _fuzz_shapes import out_size

    for text in shape_jsons:
        shape = Shape.from_json(text)
        print(json.dumps({"start": shape.name}), flush=True)
        rng = random.Random(seed ^ shape.seed)
        out = torch.zeros(out_size(shape), dtype=torch.int32, device="cuda")
        t0 = time.perf_counter()
        try:
            ker = _fuzz_kernels.kernel(shape)
            args, _keep = _device_args(shape, random_inputs(shape, rng), out)
            ker.compile(*args)
        except Exception as err:
            print(json.dumps({"shape": shape.name, "error": _error(err)}), flush=True)
            continue
        compile_s = time.perf_counter() - t0
        wrong: list[dict[str, Any]] = []
        t0 = time.perf_counter()
        for _ in range(inputs_per):
            inputs = random_inputs(shape, rng)
            try:
                args, _keep = _device_args(shape, inputs, out)
                ker(*args)
                torch.cuda.synchronize()
            except Exception as err:
                died = {"died": shape.name, "inputs": dataclasses.asdict(inputs)}
                print(json.dumps({**died, "error": _error(err)}), flush=True)
                sys.stdout.flush()
                os._exit(3)  # the context is gone; do not wait for CUDA's teardown
            want = expected(shape, inputs)
            got = out.cpu().tolist()
            if got != want:
                wrong.append(
                    {"inputs": dataclasses.asdict(inputs), **differences(shape, got, want)}
                )
        line = {
            "shape": shape.name,
            "runs": inputs_per,
            "wrong": len(wrong),
            "wrong_inputs": wrong[:2],
            "compile_s": round(compile_s, 2),
            "run_s": round(time.perf_counter() - t0, 3),
        }
        print(json.dumps(line), flush=True)


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {str(err)[:400]}"


def run_broken(shape_json: str, inputs_json: str) -> None:
    """GPU worker: run one broken variant, compiled with verification off, on one input."""
    import _fuzz_kernels
    import cutlass.cute as cute
    import torch
    from _fuzz_shapes import out_size

    shape = Shape.from_json(shape_json)
    inputs = Inputs.from_json(inputs_json)
    out = torch.zeros(out_size(shape), dtype=torch.int32, device="cuda")
    args, _keep = _device_args(shape, inputs, out)
    compiled = cute.compile(_fuzz_kernels.unverified_launcher(shape), *args)
    print(json.dumps({"start": shape.name}), flush=True)
    compiled(*args)
    torch.cuda.synchronize()
    print(
        json.dumps(
            {"finished": shape.name, "right": out.cpu().tolist() == expected(shape, inputs)}
        ),
        flush=True,
    )


# -- the parent: batches ---------------------------------------------------------------------
def _subprocess(args: list[str], timeout: float) -> tuple[int | None, str]:
    """Run this script as a worker; its return code (None on a timeout) and its stdout."""
    try:
        done = subprocess.run(
            [sys.executable, __file__, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as err:
        out = err.stdout if isinstance(err.stdout, str) else (err.stdout or b"").decode()
        return None, out
    return done.returncode, done.stdout + done.stderr


def _lines(text: str) -> Iterable[dict[str, Any]]:
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def _debug_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if "TS debug:" in line]


def gpu_valid_batch(batch: int, shapes: list[Shape], inputs_per: int, seed: int) -> dict[str, Any]:
    """Run ``shapes`` in worker processes (a new one after a trap); the batch's line."""
    todo = list(shapes)
    stats: dict[str, Any] = {"batch": batch, "kind": "valid", "shapes": len(shapes)}
    stats.update(kernels_run=0, hangs=0, wrong_results=0, errors=0, compile_s=0.0, failures=[])
    while todo:
        args = ["--worker-valid", str(inputs_per), str(seed), *[s.to_json() for s in todo]]
        code, text = _subprocess(args, TIMEOUT_S)
        events = list(_lines(text))
        done = {d["shape"] for d in events if "shape" in d}
        for d in events:
            if "runs" in d:
                stats["kernels_run"] += d["runs"]
                stats["wrong_results"] += d["wrong"]
                stats["compile_s"] += d["compile_s"]
                if d["wrong"]:
                    stats["failures"].append({"shape": d["shape"], "wrong": d["wrong_inputs"]})
            elif "error" in d and "shape" in d:
                stats["errors"] += 1
                stats["failures"].append({"shape": d["shape"], "error": d["error"]})
        rest = [s for s in todo if s.name not in done]
        if code == 0 and not rest:
            break
        # The worker died (a trap) or stalled: the shape it had started hangs.
        started = [d["start"] for d in events if "start" in d]
        culprit = started[-1] if started and started[-1] not in done else None
        died = next((d for d in events if d.get("died") == culprit), {})
        stats["hangs"] += 1
        stats["kernels_run"] += 1
        stats["failures"].append(
            {
                "shape": culprit,
                "hang": "timeout" if code is None else f"exit {code}",
                "inputs": died.get("inputs"),
                "error": died.get("error"),
                "debug": _debug_lines(text)[:4],
                "tail": "" if died else text[-800:],
            }
        )
        todo = [s for s in rest if s.name != culprit]
        if culprit is None:
            break  # the worker died before any shape: once is enough
    stats["compile_s"] = round(stats["compile_s"], 1)
    return stats


def trap_check(shape: Shape, seed: int) -> dict[str, Any]:
    """Run one broken variant with verification off on an input the host model deadlocks on.

    Verdicts: ``trap`` (it trapped and a ``TS debug`` line names a task and ring the host
    model finds stuck), ``trap_wrong_message``, ``no_trap`` (it finished), ``timeout`` (it hung
    without trapping), ``compile_failed``, ``no_hanging_input`` (a race, or a hang the random
    inputs never reach: nothing is run).
    """
    rng = random.Random(seed ^ shape.seed)
    inputs = hanging_inputs(shape, rng)
    out: dict[str, Any] = {"shape": shape.name, "mutation": shape.mutation}
    if inputs is None:
        out["verdict"] = "no_hanging_input"
        return out
    stuck = simulate(shape, inputs)
    assert stuck is not None
    code, text = _subprocess(["--worker-broken", shape.to_json(), inputs.to_json()], TIMEOUT_S)
    lines = _debug_lines(text)
    named = any(
        f"task `{t}`" in m and f"resource `{r}`" in m for m in lines for t, r, _ in stuck.waits
    )
    events = list(_lines(text))
    if not any("start" in d for d in events):
        out["verdict"] = "compile_failed"
        out["tail"] = text[-600:]
    elif any("finished" in d for d in events):
        out["verdict"] = "no_trap"
    elif code is None:
        out["verdict"] = "timeout"
    else:
        out["verdict"] = "trap" if named else "trap_wrong_message"
    out["expected"] = [list(w) for w in stuck.waits]
    out["debug"] = lines[:3]
    return out


def describe_mutations(shapes: Iterable[Shape]) -> dict[str, int]:
    """How many variants of each mutation."""
    out: dict[str, int] = {}
    for s in shapes:
        out[s.mutation] = out.get(s.mutation, 0) + 1
    return dict(sorted(out.items()))


def broken_verdicts(broken: Sequence[Shape], jobs: int) -> dict[str, Any]:
    """Verify every broken variant; print their batch line; caught / missed / malformed."""
    why = dict(zip((s.name for s in broken), verdicts(broken, jobs), strict=True))
    caught = [s for s in broken if why[s.name] and not why[s.name].startswith("malformed")]
    missed = [s for s in broken if not why[s.name]]
    line = {
        "batch": "broken",
        "kind": "verify",
        "broken": len(broken),
        "by_verifier": len(caught),
        "codes": _code_counts(why[s.name] for s in caught),
        "missed": [s.name for s in missed],
        "malformed": [(n, w) for n, w in why.items() if w.startswith("malformed")],
    }
    print(json.dumps(line), flush=True)
    return {**line, "caught_shapes": caught, "missed_shapes": missed}


def _code_counts(reasons: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in reasons:
        for code in r.split(","):
            out[code] = out.get(code, 0) + 1
    return dict(sorted(out.items()))


# -- compile-only (CPU) ------------------------------------------------------------------------
def compile_only(args: argparse.Namespace) -> dict[str, Any]:
    """Generate, verify and compile ``--valid`` shapes; check every broken variant is rejected."""
    start = time.perf_counter()
    shapes = valid_shapes(args.valid, args.seed)
    why = verdicts(shapes, args.jobs)
    rejected_valid = [(s.name, w) for s, w in zip(shapes, why, strict=True) if w]
    rng = random.Random(args.seed)
    # The host model: a valid shape never deadlocks.
    model_deadlocks = sorted(
        {s.name for s in shapes for _ in range(8) if simulate(s, random_inputs(s, rng))}
    )
    compiled: list[dict[str, Any]] = []
    with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
        for i, result in enumerate(pool.map(compile_shape, [s.to_json() for s in shapes])):
            compiled.append(result)
            if (i + 1) % CHUNK == 0 or i + 1 == len(shapes):
                part = compiled[-((i % CHUNK) + 1) :]
                print(json.dumps({"batch": i // CHUNK, "kind": "compile", "results": part}))
    broken = broken_shapes(args.broken, args.seed)
    b = broken_verdicts(broken, args.jobs)
    # A sample compiled with verification off (what the GPU's trap runs compile).
    sample = [s.to_json() for s in broken[: args.trap_sample]]
    with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
        unverified = list(pool.map(compile_shape, sample, [True] * len(sample)))
    hanging = [s for s in broken if s.mutation in HANGING]
    found = sum(hanging_inputs(s, random.Random(s.seed)) is not None for s in hanging)
    summary: dict[str, Any] = {
        "mode": "compile-only",
        "valid": len(shapes),
        "valid_rejected": rejected_valid,
        "model_deadlocks": model_deadlocks,
        "compiled": sum(c["compiled"] for c in compiled),
        "compile_failures": [c for c in compiled if not c["compiled"]],
        "debug_traps": all(c.get("traps", 0) > 0 for c in compiled if c["compiled"]),
        "translation_failures": [c for c in compiled if c.get("translation")],
        "compile_s": round(sum(c["seconds"] for c in compiled), 1),
        "broken": len(broken),
        "by_verifier": b["by_verifier"],
        "missed": b["missed"],
        "malformed": b["malformed"],
        "unverified_compiled": sum(c["compiled"] for c in unverified),
        "unverified_failures": [c for c in unverified if not c["compiled"]],
        "hanging_inputs_found": f"{found}/{len(hanging)}",
        "features": describe(shapes),
        "mutations": describe_mutations(broken),
        "wall_s": round(time.perf_counter() - start, 1),
    }
    summary["ok"] = bool(
        not rejected_valid
        and not model_deadlocks
        and summary["compiled"] == len(shapes)
        and summary["debug_traps"]
        and not summary["translation_failures"]
        and not b["missed"]
        and not b["malformed"]
        and summary["unverified_compiled"] == len(sample)
    )
    return summary


# -- GPU ---------------------------------------------------------------------------------------
def gpu_missing() -> str:
    """Why the GPU run cannot start here ('' when it can)."""
    try:
        import torch
    except ImportError:
        return "torch is not installed (`pip install torch`); on the CPU use --compile-only"
    if not torch.cuda.is_available():
        return "no CUDA GPU here; on the CPU use --compile-only"
    return ""


def on_gpu(args: argparse.Namespace) -> dict[str, Any]:
    """The full run (see the module docstring)."""
    start = time.perf_counter()
    shapes = valid_shapes(-(-args.valid // args.inputs), args.seed)
    why = verdicts(shapes, args.jobs)
    rejected_valid = [(s.name, w) for s, w in zip(shapes, why, strict=True) if w]
    runnable = [s for s, w in zip(shapes, why, strict=True) if not w]
    chunks = [runnable[i : i + CHUNK] for i in range(0, len(runnable), CHUNK)]
    totals = {"kernels_run": 0, "hangs": 0, "wrong_results": 0, "errors": 0}
    failures: list[Any] = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [
            pool.submit(gpu_valid_batch, i, chunk, args.inputs, args.seed)
            for i, chunk in enumerate(chunks)
        ]
        for fut in concurrent.futures.as_completed(futures):
            line = fut.result()
            print(json.dumps(line), flush=True)
            for key in totals:
                totals[key] += line[key]
            failures += line["failures"]
    broken = broken_shapes(args.broken, args.seed)
    b = broken_verdicts(broken, args.jobs)
    # Every variant the verifier missed must trap; a sample of the caught ones is run too (it
    # shows that the runtime safety net names the right task and resource).
    missed: list[Shape] = b["missed_shapes"]
    hanging = [s for s in b["caught_shapes"] if s.mutation in HANGING]
    sample = random.Random(args.seed).sample(hanging, min(args.trap_sample, len(hanging)))
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        traps = list(pool.map(lambda s: trap_check(s, args.seed), [*missed, *sample]))
    for i in range(0, len(traps), CHUNK * 4):
        print(
            json.dumps(
                {
                    "batch": f"traps{i // (CHUNK * 4)}",
                    "kind": "trap",
                    "results": traps[i : i + CHUNK * 4],
                }
            )
        )
    missed_names = {s.name for s in missed}
    by_trap = {t["shape"] for t in traps if t["shape"] in missed_names and t["verdict"] == "trap"}
    sampled = [t for t in traps if t["shape"] not in missed_names]
    sample_bad = [t for t in sampled if t["verdict"] not in ("trap", "no_hanging_input")]
    summary: dict[str, Any] = {
        "mode": "gpu",
        "valid_shapes": len(shapes),
        "inputs_per_shape": args.inputs,
        "valid_rejected": rejected_valid,
        **totals,
        "broken": len(broken),
        "by_verifier": b["by_verifier"],
        "by_trap": len(by_trap),
        "missed": sorted(missed_names - by_trap),
        "malformed": b["malformed"],
        "trap_sample": f"{sum(t['verdict'] == 'trap' for t in sampled)}/{len(sampled)}",
        "trap_sample_failures": sample_bad,
        "failures": failures[:10],
        "features": describe(shapes),
        "mutations": describe_mutations(broken),
        "wall_s": round(time.perf_counter() - start, 1),
    }
    summary["ok"] = bool(
        not rejected_valid
        and totals["hangs"] == 0
        and totals["wrong_results"] == 0
        and totals["errors"] == 0
        and not summary["missed"]
        and not b["malformed"]
        and not sample_bad
    )
    return summary


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker-valid"]:
        run_valid(argv[3:], int(argv[1]), int(argv[2]))
        return 0
    if argv[:1] == ["--worker-broken"]:
        run_broken(argv[1], argv[2])
        return 0
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--valid", type=int, default=500, help="valid kernel runs (GPU) or shapes (--compile-only)"
    )
    parser.add_argument("--broken", type=int, default=500, help="broken variants")
    parser.add_argument(
        "--inputs", type=int, default=4, help="random inputs per compiled shape (GPU)"
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument(
        "--trap-sample",
        type=int,
        default=24,
        help="broken variants the verifier caught that also run to a trap (GPU), or that "
        "compile with verification off (--compile-only)",
    )
    parser.add_argument("--compile-only", action="store_true", help="CPU: verify and compile")
    args = parser.parse_args(argv)
    if not args.compile_only and (problem := gpu_missing()):
        print(f"fuzz_gpu: {problem}", file=sys.stderr)
        return 2
    summary = compile_only(args) if args.compile_only else on_gpu(args)
    print(json.dumps({"summary": summary}), flush=True)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
