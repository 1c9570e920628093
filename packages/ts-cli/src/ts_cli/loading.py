"""Find the kernel a command is about: ``path/to/file.py[:function]`` or ``module:function``.

The function takes no arguments and returns a :class:`ts_ir.KernelPlan` (for example one built
with ``ts_trace.build_plan``). Loading needs no GPU and no CuTe DSL unless the kernel's own
module imports them.

A mistake in the kernel's own code (a syntax error, an import that fails, an exception while the
file runs or while its function builds the plan) raises :class:`KernelLoadError`, whose message
names the user's file and line and says what to do, so that the ``ts`` command can print it
without a traceback. Errors that carry a TS diagnostic code (``TS-T003``, ...) pass through
unchanged: their messages already name the line and the fix.
"""

from __future__ import annotations

import importlib
import importlib.util
import linecache
import os
import re
import sys
import traceback
from pathlib import Path
from types import ModuleType, TracebackType

from ts_ir import KernelPlan

__all__ = [
    "DEFAULT_FUNCTION",
    "KernelLoadError",
    "KernelSpecError",
    "has_ts_code",
    "kernel_failure",
    "load_module",
    "load_plan",
    "module_roots",
    "plan_from_module",
]

DEFAULT_FUNCTION = "kernel"

_TS_CODE = re.compile(r"TS-[A-Z]\d{3}")
_TS_PACKAGES = frozenset(
    {"ts_ir", "ts_trace", "ts_verify", "ts_codegen", "ts_runtime", "ts_cli", "task_scheduling"}
)
# Modules a kernel file may import that TS does not install with ts-cli: what to install.
_INSTALL_HINTS = {
    "cutlass": "the CuTe DSL: `pip install nvidia-cutlass-dsl`",
    "cuda": "the CUDA Python bindings (they come with `pip install nvidia-cutlass-dsl`)",
    "torch": "PyTorch: `pip install torch` (a CUDA build to run on the GPU)",
    "ts_codegen": "the code generator: `pip install ts-codegen`",
    "ts_runtime": "the runtime: `pip install ts-runtime`",
    "task_scheduling": "the TS facade: `pip install ts-task-scheduling`",
}


def has_ts_code(err: BaseException) -> bool:
    """True for an error that carries a TS diagnostic code (``err.code`` like ``TS-T003``)."""
    code = getattr(err, "code", None)
    return isinstance(code, str) and _TS_CODE.fullmatch(code) is not None


class KernelSpecError(ValueError):
    """The kernel argument names nothing loadable, or the function returns no plan.

    Attributes:
        kind: What went wrong, for ``ts ... --json`` (``error.code``): ``no-kernel`` here;
            :class:`KernelLoadError` has its own kinds.
        file: The user's file the message is about, when known.
        line: Its line, when known.
    """

    def __init__(
        self,
        message: str,
        kind: str = "no-kernel",
        file: str | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.file = file
        self.line = line


class KernelLoadError(KernelSpecError):
    """The kernel's own code failed: a syntax error, an import, an exception while it ran.

    ``kind`` is ``kernel-syntax``, ``kernel-import``, ``missing-dependency`` (the file imports
    the CuTe DSL, torch or a TS layer that is not installed) or ``kernel-failed``. The exception
    that the kernel's code raised is the ``__cause__``.
    """


def _display(filename: str) -> str:
    """A file name as the user would write it: relative to the working folder when inside it."""
    try:
        rel = os.path.relpath(filename)
    except ValueError:  # another drive (Windows)
        return filename
    return filename if rel.startswith("..") else rel


def _is_ts_frame(filename: str, module: str) -> bool:
    return module.split(".", 1)[0] in _TS_PACKAGES or filename.startswith("<frozen")


def _user_frame(tb: TracebackType | None, roots: tuple[Path, ...]) -> traceback.FrameSummary | None:
    """The innermost frame of the user's code in ``tb``.

    Frames in files under ``roots`` (the kernel file's folder) come first; failing those, the
    innermost frame outside TS and the import machinery (the error may start in a library).
    """
    frames = list(traceback.walk_tb(tb))
    for frame, line in reversed(frames):
        path = Path(frame.f_code.co_filename)
        if path.is_absolute() and any(path.is_relative_to(r) for r in roots):
            return traceback.FrameSummary(path.as_posix(), line, frame.f_code.co_name)
    for frame, line in reversed(frames):
        name = frame.f_code.co_filename
        if not _is_ts_frame(name, str(frame.f_globals.get("__name__", ""))):
            return traceback.FrameSummary(name, line, frame.f_code.co_name)
    return None


def _located(what: str, where: traceback.FrameSummary | None, message: str) -> tuple[str, ...]:
    """``file, line N, in f: message`` and the source line, or ``what: message``."""
    if where is None or where.lineno is None:
        return (f"{what}: {message}",)
    head = f"{_display(where.filename)}, line {where.lineno}"
    if where.name not in ("<module>", ""):
        head += f", in {where.name}"
    text = linecache.getline(where.filename, where.lineno).strip()
    return (f"{head}: {message}", *((f"    {text}",) if text else ()))


def _syntax_error(err: SyntaxError) -> KernelLoadError:
    filename = err.filename or "<kernel>"
    where = f"{_display(filename)}, line {err.lineno}" if err.lineno else _display(filename)
    lines = [f"{where}: {err.msg}"]
    if err.text:
        text = err.text.rstrip("\n")
        lines.append(f"    {text.strip()}")
        if err.offset:
            # The caret under the offending column, in the stripped line.
            column = err.offset - (len(text) - len(text.lstrip())) - 1
            lines.append("    " + " " * max(column, 0) + "^")
    lines.append("fix the syntax error in the kernel file")
    return KernelLoadError("\n".join(lines), "kernel-syntax", filename, err.lineno)


def _import_error(err: ImportError, what: str, roots: tuple[Path, ...]) -> KernelLoadError:
    where = _user_frame(err.__traceback__, roots)
    missing = (err.name or "").split(".", 1)[0] if isinstance(err, ModuleNotFoundError) else ""
    file, line = (where.filename, where.lineno) if where else (None, None)
    if missing in _INSTALL_HINTS:
        lines = _located(what, where, f"needs {_INSTALL_HINTS[missing]}")
        lines += (
            f"(`{missing}` is not installed in this Python, {sys.executable}; `ts show` and "
            "`ts verify` need only a file that builds the plan without it)",
        )
        return KernelLoadError("\n".join(lines), "missing-dependency", file, line)
    lines = _located(what, where, f"{type(err).__name__}: {err}")
    if missing:
        lines += (
            f"(is `{missing}` installed in this Python, {sys.executable}? A module beside the "
            "kernel file can be imported by its name)",
        )
    return KernelLoadError("\n".join(lines), "kernel-import", file, line)


def kernel_failure(err: Exception, what: str, roots: tuple[Path, ...] = ()) -> KernelLoadError:
    """The :class:`KernelLoadError` for ``err``, raised by the kernel's code during ``what``.

    The message names the user's innermost line (under ``roots`` first) and the exception.
    """
    if isinstance(err, SyntaxError):
        return _syntax_error(err)
    if isinstance(err, ImportError):
        return _import_error(err, what, roots)
    where = _user_frame(err.__traceback__, roots)
    message = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    lines = _located(what, where, message)
    file, line = (where.filename, where.lineno) if where else (None, None)
    return KernelLoadError("\n".join(lines), "kernel-failed", file, line)


def _module_from_file(path: Path) -> ModuleType:
    name = f"ts_cli_kernel_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise KernelSpecError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # As when the file runs as a script: its folder comes first on the import path, so it
    # may import the modules beside it.
    folder = path.resolve().parent
    sys.path.insert(0, str(folder))
    try:
        spec.loader.exec_module(module)
    except SystemExit as err:
        # A script that runs (parses arguments, exits) when imported, not only as __main__.
        sys.modules.pop(name, None)
        where = _user_frame(err.__traceback__, (folder,))
        message = f"the file exited (sys.exit({err.code!r})) while ts imported it"
        lines = _located(f"importing {path}", where, message)
        lines += (
            "put the script's own code (argument parsing, runs) under "
            '`if __name__ == "__main__":`, so that importing the file only defines the kernel',
        )
        file, line = (where.filename, where.lineno) if where else (None, None)
        raise KernelLoadError("\n".join(lines), "kernel-failed", file, line) from err
    except Exception as err:
        sys.modules.pop(name, None)
        if has_ts_code(err):
            raise
        raise kernel_failure(err, f"importing {path}", (folder,)) from err
    finally:
        sys.path.remove(str(folder))
    return module


def load_module(spec: str) -> ModuleType:
    """The module named by ``spec`` (its ``:function`` part ignored).

    Raises:
        KernelSpecError: No such file or module.
        KernelLoadError: The module's code failed (the message names the line).
    """
    target = spec.partition(":")[0]
    path = Path(target)
    if target.endswith(".py") or path.is_file():
        if not path.is_file():
            hint = "; give the path of a Python file" if path.is_dir() else ""
            raise KernelSpecError(f"no such file: {target}{hint}")
        return _module_from_file(path)
    if not target or path.is_dir():
        raise KernelSpecError(
            f"{target or spec!r} is not a kernel: give FILE.py[:FUNCTION] or MODULE:FUNCTION"
        )
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as err:
        if err.name is not None and (target + ".").startswith(err.name + "."):
            raise KernelSpecError(
                f"cannot import module {target!r}: no module named {err.name!r} (a file is "
                "given by its path, ending in .py)"
            ) from None
        raise kernel_failure(err, f"importing {target}") from err
    except Exception as err:
        if has_ts_code(err):
            raise
        raise kernel_failure(err, f"importing {target}") from err


def load_plan(spec: str) -> KernelPlan:
    """Load the kernel plan named by ``spec``.

    Args:
        spec: ``file.py``, ``file.py:function``, ``package.module`` or
            ``package.module:function``.

    Raises:
        KernelSpecError: Nothing to load, no such function, or it does not return a plan.
        KernelLoadError: The kernel's code failed (a subclass of :class:`KernelSpecError`).
    """
    return plan_from_module(load_module(spec), spec)


def module_roots(module: ModuleType) -> tuple[Path, ...]:
    """The folder of ``module``'s file: frames there are the user's."""
    file = getattr(module, "__file__", None)
    return (Path(file).resolve().parent,) if file else ()


def plan_from_module(module: ModuleType, spec: str) -> KernelPlan:
    """Call the plan function named by ``spec`` (default ``kernel``) in ``module``."""
    target, _, func = spec.partition(":")
    if not func:
        # `kernel` by convention; the Hopper examples name theirs `make_plan`.
        func = next(
            (f for f in (DEFAULT_FUNCTION, "make_plan") if hasattr(module, f)), DEFAULT_FUNCTION
        )
    maker = getattr(module, func, None)
    if not callable(maker):
        raise KernelSpecError(
            f"{target} has no function {func}(); define `def {func}() -> KernelPlan` "
            "(or name another function as FILE:FUNCTION)"
        )
    try:
        plan = maker()
    except Exception as err:
        if has_ts_code(err):
            raise
        raise kernel_failure(err, f"{target}:{func}()", module_roots(module)) from err
    if not isinstance(plan, KernelPlan):
        raise KernelSpecError(
            f"{target}:{func}() returned {type(plan).__name__}, not a KernelPlan; build one "
            "with ts_trace.build_plan(tasks, dependency_graph)"
        )
    return plan
