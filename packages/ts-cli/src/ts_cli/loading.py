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

__all__ = ["DEFAULT_FUNCTION", "KernelSpecError", "load_plan"]

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
    spec.loader.exec_module(module)
    return module


def load_plan(spec: str) -> KernelPlan:
    """Load the kernel plan named by ``spec``.

    Args:
        spec: ``file.py``, ``file.py:function``, ``package.module`` or
            ``package.module:function``.

    Raises:
        KernelSpecError: Nothing to load, no such function, or it does not return a plan.
    """
    target, _, func = spec.partition(":")
    func = func or DEFAULT_FUNCTION
    path = Path(target)
    if target.endswith(".py") or path.is_file():
        if not path.is_file():
            raise KernelSpecError(f"no such file: {target}")
        module = _module_from_file(path)
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as err:
            raise KernelSpecError(f"cannot import module {target!r}: {err}") from None
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
