"""``ts``: show, verify, draw and inspect TS kernels from the command line.

Every kernel subcommand takes a kernel (``file.py[:function]`` or ``module:function``; see
:mod:`ts_cli.loading`). Exit codes: 0 success; 1 the kernel has errors (a TS diagnostic: a
tracing error, a verifier error, a lowering or runtime error; for ``compile``, PTX counts that
differ from the hand-written twin's); 2 the command could not run (bad arguments, a kernel that
does not load, a missing layer, an output that cannot be written); 3 an internal error of TS (a
bug: the traceback is printed for the report).

The user's own mistakes never end in a traceback: the message names the file and line, what is
wrong and how to fix it (``--traceback`` shows the full traceback of a failure in the kernel's
code). With ``--json`` stdout carries one JSON object in every case, errors included:
``{"ok": false, "command": ..., "error": {"code": ..., "message": ...}}``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

import ts_ir
import ts_trace
import ts_verify
from ts_cli.__about__ import __version__
from ts_cli.explain import ExplainError, all_entries, find_entry, render_entry, render_index
from ts_cli.graph import render_dot
from ts_cli.loading import (
    KernelSpecError,
    has_ts_code,
    kernel_failure,
    load_module,
    module_roots,
    plan_from_module,
)
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
from ts_verify import Report, Trace, Valuation, is_per_tile, loop_key, run_valuation, verify

__all__ = ["CliError", "main"]

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

# Exit codes (docs/cli.rst).
EXIT_OK, EXIT_KERNEL_ERRORS, EXIT_CANNOT_RUN, EXIT_INTERNAL = 0, 1, 2, 3


class CliError(Exception):
    """A failure the user can fix: printed as its message, without a traceback.

    Attributes:
        code: The ``error.code`` of ``--json``: the TS diagnostic code (``TS-T003``) of an error
            in the kernel, else what kind of failure (``usage``, ``no-kernel``,
            ``kernel-syntax``, ``kernel-import``, ``kernel-failed``, ``missing-dependency``,
            ``cannot-write``, ``unknown-code``).
        message: What is wrong and how to fix it (may span a few lines).
        exit_code: 1 for an error in the kernel, 2 when the command could not run.
        file: The user's file the message is about, when known.
        line: Its line, when known.
        prog: The prefix of the message (default ``ts <command>``).
        usage: The command's usage line, printed before a ``usage`` error.
    """

    def __init__(
        self,
        code: str,
        message: str,
        exit_code: int = EXIT_CANNOT_RUN,
        *,
        file: str | None = None,
        line: int | None = None,
        prog: str | None = None,
        usage: str = "",
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.exit_code = exit_code
        self.file = file
        self.line = line
        self.prog = prog
        self.usage = usage

    def as_dict(self) -> dict[str, Any]:
        """The ``error`` object of ``--json``."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.file is not None:
            out["file"] = self.file
        if self.line is not None:
            out["line"] = self.line
        return out


def _from_kernel(err: Exception) -> CliError:
    """The :class:`CliError` of a failure while the kernel's code ran."""
    if isinstance(err, KernelSpecError):
        return CliError(err.kind, str(err), file=err.file, line=err.line)
    # An error with a TS code (has_ts_code): its message names the line, the fix and `see:`.
    return CliError(str(getattr(err, "code", "")), str(err), EXIT_KERNEL_ERRORS)


def _quiet(as_json: bool) -> contextlib.AbstractContextManager[Any]:
    """With ``--json``, what the kernel's code prints goes to stderr: stdout is the JSON."""
    return contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext()


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
        return EXIT_KERNEL_ERRORS
    title = f"{plan.name}: counterexample" if trace is not None else f"{plan.name}: verified run"
    if trace is None:
        val = sample_valuation(plan, args.iterations, args.tiles)
        outcome = run_valuation(plan, val)
        trace = Trace(val.describe(), tuple(outcome.events), (), ())
    out = Path(args.output or f"{plan.name}_timeline.svg")
    try:
        out.write_text(render_svg(plan, trace, title))
    except OSError as err:
        raise CliError(
            "cannot-write",
            f"cannot write {out}: {err.strerror or err}; give -o a file in a folder that exists "
            "and that you can write to",
        ) from None
    print(f"wrote {out} ({len(trace.events)} events)")
    return EXIT_OK if report.ok else EXIT_KERNEL_ERRORS


def _require_codegen(kernel: str) -> None:
    """``ts compile`` needs the code generator and the CuTe DSL: say so before loading."""
    missing = [
        dist
        for dist, module in (("ts-codegen", "ts_codegen"), ("nvidia-cutlass-dsl", "cutlass"))
        if importlib.util.find_spec(module) is None
    ]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        raise CliError(
            "missing-dependency",
            f"cannot compile {kernel}: it needs the code generator (ts-codegen) and the CuTe DSL "
            f"(nvidia-cutlass-dsl), and {' and '.join(missing)} {verb} not installed in this "
            f"Python ({sys.executable}): `pip install ts-codegen` brings both; `ts show` and "
            "`ts verify` work without them",
        )


def cmd_compile(plan: KernelPlan, args: argparse.Namespace) -> int:
    """Compile the kernel (sm_90a, or ``--arch``) with fake tensors and print its PTX statistics.

    The kernel file provides ``compile_only()`` (as the Hopper examples do): it compiles the TS
    kernel (and, where it has one, its hand-written twin) and returns the PTX instruction counts.
    """
    compile_only = getattr(args.module, "compile_only", None)
    if not callable(compile_only):
        raise CliError(
            "no-kernel",
            f"{args.kernel} has no compile_only() function; define one that compiles the kernel "
            "with fake tensors (see examples/hopper/tma_copy.py)",
        )
    dump = Path(os.environ["CUTE_DSL_DUMP_DIR"])
    _progress(f"compiling {plan.name} for {os.environ['CUTE_DSL_ARCH']}")
    try:
        with _quiet(args.json), _capture() as capture:
            result = compile_only()
    except Exception as err:
        if not has_ts_code(err):
            what = f"{args.kernel.partition(':')[0]}: compile_only()"
            err = kernel_failure(err, what, module_roots(args.module))
        raise _from_kernel(err) from err
    same = bool(result.get("same_counts", True))
    result["ptx_dir"] = str(dump)
    result["ok"] = same
    if getattr(args, "check", False):
        # Translation validation: each compiled TS kernel against the plan it lowered.
        from ts_runtime import check_ptx

        reports = [check_ptx(p, c.ptx) for c in capture.compiles for p in c.plans]
        result["translation"] = [
            {"kernel": r.kernel, "ok": r.ok, "errors": [str(e) for e in r.errors]} for r in reports
        ]
        for r in reports:
            if not r.ok:
                print(r.as_text(), file=sys.stderr)
        result["ok"] = same and bool(reports) and all(r.ok for r in reports)
    print(json.dumps(result, sort_keys=True, default=str))
    return EXIT_OK if result["ok"] else EXIT_KERNEL_ERRORS


def _capture() -> Any:
    """Record what compiles lower, for ``--check`` (nothing to record without ts-codegen)."""
    try:
        from ts_codegen.capture import capture_compiles
    except ImportError:
        return contextlib.nullcontext(argparse.Namespace(compiles=[]))
    return capture_compiles()


def _prepare_ptx_dump(args: argparse.Namespace) -> None:
    """Ask the CuTe DSL to keep the PTX; it reads these settings when it is first imported."""
    stem = Path(args.kernel.partition(":")[0]).stem or "kernel"
    dump = Path(args.ptx_dir or f"ts_ptx/{stem}").resolve()
    try:
        dump.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise CliError(
            "cannot-write",
            f"cannot create the PTX folder {dump}: {err.strerror or err}; give --ptx-dir a "
            "folder you can write to",
        ) from None
    if not os.access(dump, os.W_OK):
        raise CliError(
            "cannot-write",
            f"cannot write into the PTX folder {dump}; give --ptx-dir a folder you can write to",
        )
    arch = getattr(args, "arch", None)
    if arch is not None:
        # Before the kernel file is loaded: its pipeline factories and the DSL read the target.
        if not re.fullmatch(r"sm_\d{2,3}a?", arch):
            raise CliError(
                "usage",
                f"--arch {arch!r} is not an architecture: pass sm_90a (Hopper) or sm_100a "
                "(Blackwell)",
            )
        os.environ["CUTE_DSL_ARCH"] = arch
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    os.environ["CUTE_DSL_KEEP"] = "ptx"
    if args.ptx_dir:
        # An explicit folder beats one inherited from the environment (a test runner's, say).
        os.environ["CUTE_DSL_DUMP_DIR"] = str(dump)
    else:
        os.environ.setdefault("CUTE_DSL_DUMP_DIR", str(dump))


def cmd_explain(args: argparse.Namespace) -> int:
    """Print a diagnostic code's catalog entry (or, without a code, every code)."""
    if args.code is None:
        entries, missing = all_entries()
        if args.json:
            listing = [dataclasses.asdict(e) for e in entries]
            print(json.dumps({"ok": True, "entries": listing, "not_installed": missing}))
        else:
            print(render_index(entries, missing))
        return EXIT_OK
    try:
        entry = find_entry(args.code)
    except ExplainError as err:
        raise CliError(err.kind, str(err)) from None
    if args.json:
        page = ts_ir.docs_page(entry.code)
        print(json.dumps({"ok": True, **dataclasses.asdict(entry), "page": page}))
    else:
        print(render_entry(entry))
    return EXIT_OK


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def doctor_info() -> dict[str, Any]:
    """What a bug report needs: versions of every layer, Python, the DSL, driver and GPU."""
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
    return {
        "python": f"{platform.python_version()} ({sys.executable})",
        "platform": platform.platform(),
        "distributions": {dist: _version(dist) for dist in DISTRIBUTIONS},
        "gpu": gpu,
    }


def doctor_lines(info: dict[str, Any] | None = None) -> list[str]:
    """:func:`doctor_info` as ``name: value`` lines."""
    info = doctor_info() if info is None else info
    lines = [f"python: {info['python']}", f"platform: {info['platform']}"]
    lines += [f"{dist}: {version}" for dist, version in info["distributions"].items()]
    lines.append(f"gpu: {info['gpu']}")
    return lines


def cmd_doctor(args: argparse.Namespace) -> int:
    """Print versions for bug reports."""
    info = doctor_info()
    print(json.dumps({"ok": True, **info}) if args.json else "\n".join(doctor_lines(info)))
    return EXIT_OK


def version_text() -> str:
    """What ``ts --version`` prints: ts-cli's version and the layers it runs on."""
    layers = ", ".join(
        f"{name} {module.__version__}"
        for name, module in (("ts-ir", ts_ir), ("ts-trace", ts_trace), ("ts-verify", ts_verify))
    )
    return f"ts (ts-cli) {__version__}; {layers}; Python {platform.python_version()}"


class _Parser(argparse.ArgumentParser):
    """Usage errors become :class:`CliError` (so that ``--json`` can print them as JSON)."""

    def error(self, message: str) -> NoReturn:
        raise CliError(
            "usage",
            f"{message} (`{self.prog} --help` lists the options)",
            prog=self.prog,
            usage=self.format_usage().rstrip(),
        )


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ts",
        description="show, verify, draw and inspect TS kernels from the command line",
        epilog="exit codes: 0 success, 1 the kernel has errors, 2 the command could not run, "
        "3 an internal error (a bug). With --json, stdout is one JSON object, errors included: "
        '{"ok": false, "command": ..., "error": {"code": ..., "message": ...}}. '
        "Every diagnostic ends with `see: ts explain CODE`.",
    )
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def json_flag(p: argparse.ArgumentParser, what: str) -> None:
        p.add_argument(
            "--json",
            action="store_true",
            help=f'print {what} as JSON; errors too, as {{"ok": false, "error": {{...}}}}',
        )

    def kernel_command(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("kernel", help="FILE.py[:FUNCTION] or MODULE:FUNCTION (default: kernel)")
        p.add_argument(
            "--traceback",
            action="store_true",
            help="on a failure in the kernel's own code, print the full Python traceback",
        )
        return p

    kernel_command("show", "print the schedule table").add_argument(
        "--tree", action="store_true", help="print each task's schedule tree instead"
    )
    json_flag(kernel_command("verify", "verify the kernel; exit 1 on errors"), "the report")
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
    compile_ = kernel_command("compile", "compile (sm_90a, or --arch) and print PTX statistics")
    compile_.add_argument("--ptx-dir", help="where the PTX is written (default: ts_ptx/<kernel>)")
    compile_.add_argument(
        "--arch",
        help="target architecture, e.g. sm_100a for Blackwell (default: $CUTE_DSL_ARCH, else "
        "sm_90a); compiling needs no GPU",
    )
    compile_.add_argument(
        "--check",
        action="store_true",
        help="translation validation: check that each compiled TS kernel's PTX runs the barrier "
        "protocol of its verified plan (TS-X codes)",
    )
    json_flag(compile_, "errors (the statistics are JSON anyway)")
    explain = sub.add_parser(
        "explain",
        help="print a diagnostic code's catalog entry",
        description="print a diagnostic code's catalog entry (every code, without CODE)",
    )
    explain.add_argument("code", nargs="?", help="a code such as TS-V301 (default: list them)")
    json_flag(explain, "the entry")
    json_flag(sub.add_parser("doctor", help="print versions for bug reports"), "the versions")
    return parser


COMMANDS = {
    "show": cmd_show,
    "verify": cmd_verify,
    "graph": cmd_graph,
    "timeline": cmd_timeline,
    "compile": cmd_compile,
}


@dataclasses.dataclass
class _Context:
    """What is known of the command line when a failure is reported."""

    as_json: bool
    command: str | None = None
    traceback: bool = False

    @property
    def prog(self) -> str:
        return f"ts {self.command}" if self.command else "ts"


def _root_cause(err: BaseException) -> BaseException:
    while err.__cause__ is not None:
        err = err.__cause__
    return err


def _fail(err: CliError, ctx: _Context) -> int:
    """Report a :class:`CliError`: its message on stderr, and the JSON object with ``--json``."""
    if ctx.command is None and err.prog and err.prog.startswith("ts "):
        ctx.command = err.prog[3:]  # a usage error of a subcommand
    cause = _root_cause(err)
    if ctx.traceback and cause is not err:
        traceback.print_exception(cause)
    if err.usage:
        print(err.usage, file=sys.stderr)
    # A TS diagnostic starts with its code and ends with `see: ts explain ...`: print it as is.
    if err.exit_code == EXIT_KERNEL_ERRORS:
        text = err.message
    else:
        text = f"{err.prog or ctx.prog}: {err.message}"
        if err.code in ("kernel-failed", "kernel-import") and not ctx.traceback:
            text += "\n(`--traceback` shows the full traceback)"
    print(text, file=sys.stderr)
    if ctx.as_json:
        print(json.dumps({"ok": False, "command": ctx.command, "error": err.as_dict()}))
    return err.exit_code


def _internal(err: Exception, ctx: _Context) -> int:
    """A bug in TS: the traceback, for the bug report (and the JSON object with ``--json``)."""
    traceback.print_exception(err)
    message = (
        f"internal error ({type(err).__name__}: {err}); this is a bug in TS: please report it "
        "with the traceback above and the output of `ts doctor`"
    )
    print(f"{ctx.prog}: {message}", file=sys.stderr)
    if ctx.as_json:
        error = {"code": "internal-error", "message": message}
        print(json.dumps({"ok": False, "command": ctx.command, "error": error}))
    return EXIT_INTERNAL


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ts`` command; return its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    # Known before parsing, so that a usage error is JSON too.
    ctx = _Context(as_json="--json" in args)
    try:
        return _run(args, ctx)
    except CliError as err:
        return _fail(err, ctx)
    except BrokenPipeError:
        # `ts show ... | head`: the reader left; that is not an error of ours.
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt:
        print(f"{ctx.prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:
        return _internal(err, ctx)


def _run(argv: list[str], ctx: _Context) -> int:
    args = _parser().parse_args(argv)
    ctx.command = args.command
    ctx.traceback = bool(getattr(args, "traceback", False))
    args.json = bool(getattr(args, "json", False))
    if args.command == "doctor":
        return cmd_doctor(args)
    if args.command == "explain":
        return cmd_explain(args)
    if args.command == "compile":
        _prepare_ptx_dump(args)  # first: a wrong --arch is a usage error wherever it runs
        _require_codegen(args.kernel)
    try:
        with _quiet(ctx.as_json):
            args.module = load_module(args.kernel)
            plan = plan_from_module(args.module, args.kernel)
    except KernelSpecError as err:
        raise _from_kernel(err) from err
    except Exception as err:
        if not has_ts_code(err):
            raise
        raise _from_kernel(err) from err
    return COMMANDS[args.command](plan, args)


if __name__ == "__main__":
    raise SystemExit(main())
