"""Find the kernel a command is about: ``path/to/file.py[:function]`` or ``module:function``.

The function takes no arguments and returns a :class:`ts_ir.KernelPlan` (for example one built
with ``ts_trace.build_plan``). Loading needs no GPU and no CuTe DSL unless the kernel's own
module imports them.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from ts_ir import KernelPlan

__all__ = [
    "DEFAULT_FUNCTION",
    "KernelSpecError",
    "load_module",
    "load_plan",
    "plan_from_module",
]

DEFAULT_FUNCTION = "kernel"


class KernelSpecError(ValueError):
    """The kernel argument names nothing loadable, or the function returns no plan."""


def _module_from_file(path: Path) -> ModuleType:
    name = f"ts_cli_kernel_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise KernelSpecError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # As when the file runs as a script: its folder comes first on the import path, so it
    # may import the modules beside it.
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    return module


def load_module(spec: str) -> ModuleType:
    """The module named by ``spec`` (its ``:function`` part ignored)."""
    target = spec.partition(":")[0]
    path = Path(target)
    if target.endswith(".py") or path.is_file():
        if not path.is_file():
            raise KernelSpecError(f"no such file: {target}")
        return _module_from_file(path)
    try:
        return importlib.import_module(target)
    except ImportError as err:
        raise KernelSpecError(f"cannot import module {target!r}: {err}") from None


def load_plan(spec: str) -> KernelPlan:
    """Load the kernel plan named by ``spec``.

    Args:
        spec: ``file.py``, ``file.py:function``, ``package.module`` or
            ``package.module:function``.

    Raises:
        KernelSpecError: Nothing to load, no such function, or it does not return a plan.
    """
    return plan_from_module(load_module(spec), spec)


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
    plan = maker()
    if not isinstance(plan, KernelPlan):
        raise KernelSpecError(
            f"{target}:{func}() returned {type(plan).__name__}, not a KernelPlan; build one "
            "with ts_trace.build_plan(tasks, dependency_graph)"
        )
    return plan
