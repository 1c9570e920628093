"""Count the CuTe DSL compiles of a test run, across every process it starts.

Every ``cute.compile`` (whatever spelling: ``cute.compile(...)``, ``cute.compile[opts](...)``)
ends in ``CompileCallable._compile`` of the DSL's ``cutlass.base_dsl.compiler`` module. With
``TS_COMPILE_LOG`` naming a folder, :func:`install_from_env` wraps that method as soon as the
module is imported (a meta-path hook, so the count never imports the DSL itself and never
changes which target the DSL reads at import) and appends one line per compile,
``<test id>\\t<function>``, to ``<folder>/<pid>.log``. The test id is pytest's
``PYTEST_CURRENT_TEST``, which child processes inherit, so compiles in a test's subprocess count
for that test. ``sitecustomize.py`` beside this module installs it in every Python process whose
``PYTHONPATH`` holds this folder.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ENV = "TS_COMPILE_LOG"
_MODULE = "cutlass.base_dsl.compiler"


def _record(log_dir: str, func: Any) -> None:
    test = os.environ.get("PYTEST_CURRENT_TEST", "(outside a test)").rsplit(" ", 1)[0]
    target = getattr(func, "__func__", func)
    name = f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', repr(target))}"
    with open(Path(log_dir) / f"{os.getpid()}.log", "a", encoding="utf-8") as out:
        out.write(f"{test}\t{name}\n")


def _patch(module: types.ModuleType, log_dir: str) -> None:
    cls = getattr(module, "CompileCallable", None)
    original = getattr(cls, "_compile", None)
    if cls is None or original is None or getattr(original, "_ts_counted", False):
        return

    def _compile(self: Any, func: Any, *args: Any, **kwargs: Any) -> Any:
        _record(log_dir, func)
        return original(self, func, *args, **kwargs)

    _compile._ts_counted = True  # type: ignore[attr-defined]
    cls._compile = _compile


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader, log_dir: str) -> None:
        self.inner = inner
        self.log_dir = log_dir

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self.inner.exec_module(module)
        _patch(module, self.log_dir)

    def __getattr__(self, name: str) -> Any:
        # get_source, get_filename, ...: what the file loader offers, for inspect and tracebacks.
        return getattr(self.inner, name)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, log_dir: str) -> None:
        self.log_dir = log_dir

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _MODULE:
            return None
        sys.meta_path.remove(self)  # the real spec, found by the other finders
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader, self.log_dir)
        return spec


def install(log_dir: str) -> None:
    """Count this process's compiles into ``log_dir`` (idempotent)."""
    if _MODULE in sys.modules:
        _patch(sys.modules[_MODULE], log_dir)
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder(log_dir))


def install_from_env() -> None:
    """:func:`install` into ``$TS_COMPILE_LOG`` when it is set."""
    log_dir = os.environ.get(ENV)
    if log_dir:
        install(log_dir)


def read(log_dir: str | Path) -> list[tuple[str, str]]:
    """Every compile logged under ``log_dir``: ``(test id, function)`` pairs."""
    records: list[tuple[str, str]] = []
    for log in sorted(Path(log_dir).glob("*.log")):
        for line in log.read_text(encoding="utf-8").splitlines():
            test, _, func = line.partition("\t")
            records.append((test, func))
    return records
