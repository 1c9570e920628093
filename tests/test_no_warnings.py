"""The test run has no warnings, and a new one fails it.

``filterwarnings = ["error"]`` in pyproject.toml turns every warning raised in a test into an
error (the per-layer runs use the same file). What it cannot see: warnings raised while a module
is imported before pytest applies its filters (conftest files, plugins), or only once per
process (a module cached by an earlier test). Every TS module is therefore imported once more
here, in a fresh interpreter running with ``-W error``.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import warnings

import pytest

# Import every module of every installed TS package (``__main__`` modules would run the CLI).
_IMPORT_ALL = """
import importlib, pkgutil, sys
count = 0
for top in sys.argv[1:]:
    module = importlib.import_module(top)
    count += 1
    for info in pkgutil.walk_packages(getattr(module, "__path__", []), top + "."):
        if info.name.rsplit(".", 1)[-1] != "__main__":
            importlib.import_module(info.name)
            count += 1
print(count)
"""

_GPU_FREE = ["ts_ir", "ts_trace", "ts_verify", "ts_cli"]
_WITH_DSL = ["ts_codegen", "ts_runtime", "task_scheduling"]


def _installed(names: list[str]) -> list[str]:
    return [n for n in names if importlib.util.find_spec(n) is not None]


def test_a_warning_in_a_test_is_an_error() -> None:
    with pytest.raises(DeprecationWarning, match="any new warning"):
        warnings.warn("any new warning", DeprecationWarning, stacklevel=1)
    with pytest.raises(UserWarning):
        warnings.warn("any new warning", stacklevel=1)


def test_global_ignores_are_narrow(pytestconfig: pytest.Config) -> None:
    """Third-party warnings are ignored where they arise (a test's mark), not for every test."""
    filters = [str(f).strip() for f in pytestconfig.getini("filterwarnings")]
    assert filters[:1] == ["error"], filters
    assert not [f for f in filters[1:] if not f.startswith("ignore:") or f.count(":") < 3], (
        "a global ignore must name the message, the category and the module",
        filters,
    )


def test_importing_every_module_warns_nothing() -> None:
    names = _installed(_GPU_FREE)
    if importlib.util.find_spec("cutlass") is not None:
        names += _installed(_WITH_DSL)
    env = dict(os.environ)
    env.setdefault("CUTE_DSL_ARCH", "sm_90a")
    env.pop("PYTHONWARNINGS", None)
    proc = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error", "-c", _IMPORT_ALL, *names],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stderr == "", proc.stderr[-4000:]
    assert int(proc.stdout.strip().splitlines()[-1]) > len(names)
