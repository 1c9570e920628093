"""``ts``: show, verify, draw and inspect TS kernels from the command line.

Every subcommand takes a kernel (``file.py[:function]`` or ``module:function``; see
:mod:`ts_cli.loading`). Exit codes: 0 success, 1 the kernel has verification errors, 2 the
command could not run (bad arguments, nothing to load, a missing layer).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ts_cli.graph import render_dot
from ts_cli.loading import KernelSpecError, load_module, plan_from_module
from ts_cli.timeline import render_svg
from ts_ir import (
    DomainLoop,
    KernelPlan,
    WorkTileLoop,
    iter_nodes,
    render_mermaid,
    render_plan_table,
    render_schedule,
)
from ts_trace import TraceError
from ts_verify import Report, Trace, verify
from ts_verify.unroll import Valuation, is_per_tile, loop_key
from ts_verify.whole_kernel import run_valuation

__all__ = ["main"]

DISTRIBUTIONS = (
    "ts-task-scheduling",
    "ts-ir",
    "ts-trace",
    "ts-verify",
    "ts-codegen",
    "ts-runtime",
    "ts-cli",
    "nvidia-cutlass-dsl",
    "torch",
)


def _colour(stream: TextIO) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ


def _paint(text: str, code: str, stream: TextIO) -> str:
    return f"\033[{code}m{text}\033[0m" if _colour(stream) else text


def _progress(message: str) -> None:
    if _colour(sys.stderr):
        print(_paint(f"… {message}", "2", sys.stderr), file=sys.stderr)


def cmd_show(plan: KernelPlan, args: argparse.Namespace) -> int:
    """Print the schedule table (or every schedule's tree with ``--tree``)."""
    if args.tree:
        for task in plan.tasks:
            print(f"# task {task.name} (warps {task.warp_start}..{task.warp_end - 1})")
            print(render_schedule(task.schedule))
    else:
        print(render_plan_table(plan))
    return 0


def _report(plan: KernelPlan) -> Report:
    _progress(f"verifying {plan.name}")
    return verify(plan)


def cmd_verify(plan: KernelPlan, args: argparse.Namespace) -> int:
    """Print the verification report; exit 1 when it has errors."""
    report = _report(plan)
    if args.json:
        print(report.to_json())
    else:
        text = report.as_text()
        head, _, rest = text.partition("\n")
        code = "32" if report.ok else "31"
        print(_paint(head, code, sys.stdout) + ("\n" + rest if rest else ""))
    return 0 if report.ok else 1


def cmd_graph(plan: KernelPlan, args: argparse.Namespace) -> int:
    """Print the resource graph as Mermaid or Graphviz DOT."""
    print(render_dot(plan) if args.format == "dot" else render_mermaid(plan))
    return 0


def sample_valuation(plan: KernelPlan, iterations: int, tiles: int) -> Valuation:
    """Every non-constant loop runs ``iterations`` times; persistent tasks see ``tiles``."""
    persistent = any(
        isinstance(n, WorkTileLoop) for t in plan.tasks for n, _ in iter_nodes(t.schedule.body)
    )
    count = tiles if persistent else 1
    trips: dict[tuple[str, int], int] = {}
    for task in plan.tasks:
        for node, _ in iter_nodes(task.schedule.body):
            if isinstance(node, DomainLoop) and node.static_trip_count() is None:
                for t in range(count) if persistent and is_per_tile(node) else [-1]:
                    trips[(loop_key(node), t)] = iterations
    return Valuation(count, trips)


def cmd_timeline(plan: KernelPlan, args: argparse.Namespace) -> int:
    """Write an SVG of the verified interleaving, or of the counterexample when there is one."""
    report = _report(plan)
    trace = next((d.trace for d in report.diagnostics if d.trace is not None), None)
    if trace is None and not report.ok:
        print(report.as_text(errors_only=True), file=sys.stderr)
        print("ts timeline: the plan has errors without a trace to draw", file=sys.stderr)
        return 1
    title = f"{plan.name}: counterexample" if trace is not None else f"{plan.name}: verified run"
    if trace is None:
        val = sample_valuation(plan, args.iterations, args.tiles)
        outcome = run_valuation(plan, val)
        trace = Trace(val.describe(), tuple(outcome.events), (), ())
    out = Path(args.output or f"{plan.name}_timeline.svg")
    out.write_text(render_svg(plan, trace, title))
    print(f"wrote {out} ({len(trace.events)} events)")
    return 0 if report.ok else 1


def cmd_compile(plan: KernelPlan, args: argparse.Namespace) -> int:
    """Compile the kernel for sm_90a with fake tensors and print its PTX statistics.

    The kernel file provides ``compile_only()`` (as the Hopper examples do): it compiles the TS
    kernel (and, where it has one, its hand-written twin) and returns the PTX instruction counts.
    """
    if (
        importlib.util.find_spec("ts_codegen") is None
        or importlib.util.find_spec("cutlass") is None
    ):
        print(
            f"ts compile: cannot compile {plan.name}: the code generator (ts-codegen) and the CuTe "
            "DSL (nvidia-cutlass-dsl) must be installed; `ts verify` and `ts show` work without",
            file=sys.stderr,
        )
        return 2
    compile_only = getattr(args.module, "compile_only", None)
    if not callable(compile_only):
        print(
            f"ts compile: {args.kernel} has no compile_only() function; define one that compiles "
            "the kernel with fake tensors (see examples/hopper/tma_copy.py)",
            file=sys.stderr,
        )
        return 2
    dump = Path(os.environ["CUTE_DSL_DUMP_DIR"])
    _progress(f"compiling {plan.name} for {os.environ['CUTE_DSL_ARCH']}")
    result = compile_only()
    result["ptx_dir"] = str(dump)
    print(json.dumps(result, sort_keys=True, default=str))
    same = result.get("same_counts", True)
    return 0 if same else 1


def _prepare_ptx_dump(args: argparse.Namespace) -> None:
    """Ask the CuTe DSL to keep the PTX; it reads these settings when it is first imported."""
    stem = Path(args.kernel.partition(":")[0]).stem or "kernel"
    dump = Path(args.ptx_dir or f"ts_ptx/{stem}").resolve()
    dump.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    os.environ["CUTE_DSL_KEEP"] = "ptx"
    os.environ.setdefault("CUTE_DSL_DUMP_DIR", str(dump))


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def doctor_lines() -> list[str]:
    """What a bug report needs: versions of every layer, Python, the DSL, driver and GPU."""
    lines = [
        f"python: {platform.python_version()} ({sys.executable})",
        f"platform: {platform.platform()}",
    ]
    lines += [f"{dist}: {_version(dist)}" for dist in DISTRIBUTIONS]
    smi = shutil.which("nvidia-smi")
    gpu = "no nvidia-smi (no GPU driver on this machine)"
    if smi:
        query = [smi, "--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader"]
        try:
            gpu = (
                subprocess.run(
                    query, capture_output=True, text=True, timeout=20, check=True
                ).stdout.strip()
                or "no GPU listed"
            )
        except (OSError, subprocess.SubprocessError) as err:
            gpu = f"nvidia-smi failed: {err}"
    lines.append(f"gpu: {gpu}")
    return lines


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ts", description=__doc__.splitlines()[0] if __doc__ else None
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def kernel_command(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("kernel", help="FILE.py[:FUNCTION] or MODULE:FUNCTION (default: kernel)")
        return p

    kernel_command("show", "print the schedule table").add_argument(
        "--tree", action="store_true", help="print each task's schedule tree instead"
    )
    kernel_command("verify", "verify the kernel; exit 1 on errors").add_argument(
        "--json", action="store_true", help="print the report as JSON"
    )
    kernel_command("graph", "print the resource graph").add_argument(
        "--format", choices=("mermaid", "dot"), default="mermaid"
    )
    timeline = kernel_command("timeline", "draw the interleaving (or counterexample) as SVG")
    timeline.add_argument("-o", "--output", help="SVG file (default: <kernel>_timeline.svg)")
    timeline.add_argument(
        "--iterations",
        type=int,
        default=3,
        help="trip count of every non-constant loop in a verified run",
    )
    timeline.add_argument("--tiles", type=int, default=2, help="work tiles in a verified run")
    kernel_command("compile", "compile for sm_90a and print PTX statistics").add_argument(
        "--ptx-dir", help="where the PTX is written (default: ts_ptx/<kernel>)"
    )
    sub.add_parser("doctor", help="print versions for bug reports")
    return parser


COMMANDS = {
    "show": cmd_show,
    "verify": cmd_verify,
    "graph": cmd_graph,
    "timeline": cmd_timeline,
    "compile": cmd_compile,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ts`` command; return its exit code."""
    try:
        return _run(argv)
    except BrokenPipeError:
        # `ts show ... | head`: the reader left; that is not an error of ours.
        sys.stderr.close()
        return 0


def _run(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "doctor":
        print("\n".join(doctor_lines()))
        return 0
    try:
        if args.command == "compile":
            _prepare_ptx_dump(args)
        args.module = load_module(args.kernel)
        plan = plan_from_module(args.module, args.kernel)
    except KernelSpecError as err:
        print(f"ts {args.command}: {err}", file=sys.stderr)
        return 2
    except TraceError as err:
        # A mistake in the kernel's own declarations: the message names the line.
        print(err, file=sys.stderr)
        return 1
    return COMMANDS[args.command](plan, args)


if __name__ == "__main__":
    raise SystemExit(main())
