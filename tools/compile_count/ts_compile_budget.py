"""A pytest plugin: the run's CuTe DSL compiles against a budget (``compile_budget``).

Compiles are the suite's cost (seconds each on the CPU). With ``compile_budget = N`` in the
pytest configuration (or ``--compile-budget N``) a run that compiled more than ``N`` kernels
fails: in its process, its xdist workers and any subprocess a test starts (their
``sitecustomize`` counts, see :mod:`ts_compile_count`). A test that compiles a configuration
another test already built, or a new test that compiles many, is seen when it is written; the
summary names the test files that compile most.
"""

from __future__ import annotations

import collections
import os
import tempfile
from pathlib import Path

import pytest
import ts_compile_count

_COUNTER = Path(__file__).resolve().parent

_OWNER = pytest.StashKey[bool]()
_RESULT = pytest.StashKey[tuple[int, list[tuple[str, int]]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    what = "fail the run if it compiles more than N kernels with the CuTe DSL"
    parser.addoption("--compile-budget", type=int, default=None, metavar="N", help=what)
    parser.addini("compile_budget", what + " (the --compile-budget default)", default="")


def _budget(config: pytest.Config) -> int | None:
    given = config.getoption("--compile-budget")
    if given is not None:
        return int(given)
    stated = str(config.getini("compile_budget")).strip()
    return int(stated) if stated else None


def pytest_configure(config: pytest.Config) -> None:
    if ts_compile_count.ENV not in os.environ:
        # The controller: one folder for the whole run, seen by workers and subprocesses (their
        # sitecustomize installs the counter before anything imports the DSL).
        os.environ[ts_compile_count.ENV] = tempfile.mkdtemp(prefix="ts_compiles_")
        paths = [str(_COUNTER), *filter(None, [os.environ.get("PYTHONPATH")])]
        os.environ["PYTHONPATH"] = os.pathsep.join(paths)
        config.stash[_OWNER] = True
    ts_compile_count.install_from_env()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if not config.stash.get(_OWNER, False):
        return
    records = ts_compile_count.read(os.environ[ts_compile_count.ENV])
    per_file = collections.Counter(test.split("::", 1)[0] for test, _ in records)
    config.stash[_RESULT] = (len(records), per_file.most_common(8))
    budget = _budget(config)
    if budget is not None and len(records) > budget and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    result = terminalreporter.config.stash.get(_RESULT, None)
    budget = _budget(terminalreporter.config)
    if result is None or result[0] == 0:
        return
    total, top = result
    over = budget is not None and total > budget
    stated = f" of a budget of {budget}" if budget is not None else ""
    terminalreporter.section("CuTe DSL compiles", red=over, bold=over)
    terminalreporter.line(f"{total} compiles{stated}; most in:")
    for path, count in top:
        terminalreporter.line(f"  {count:5d}  {path}")
    if over:
        terminalreporter.line(
            f"FAILED: {total} compiles is over the budget of {budget}. Share the compiled "
            "kernel between the tests that build the same configuration (a session fixture, "
            "ts_runtime.compile_kernel's cache), or raise the budget in pyproject.toml with "
            "the reason.",
            red=True,
        )
