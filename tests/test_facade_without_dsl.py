"""The facade with only ts-ir, ts-trace and ts-verify: no CuTe DSL, CUDA, torch, codegen, runtime.

The first tutorial page says that nothing on it needs a GPU or the CuTe DSL. A fresh interpreter
whose imports of the GPU stack and of the two layers built on it fail, as when they are not
installed, imports the facade and runs that page's doctests. (``tools/check_layers_alone.py``
checks the same from the wheels, in virtualenvs without those packages.)
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIRST_PAGE = ROOT / "docs" / "first_schedule.rst"

# Runs in the child: every import of a blocked top-level package fails like a missing one.
BLOCKER = textwrap.dedent(
    """
    import importlib.abc
    import sys

    BLOCKED = {"cutlass", "cuda", "torch", "ts_codegen", "ts_runtime"}


    class NotInstalled(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None


    sys.meta_path.insert(0, NotInstalled())
    """
)


def run_without_dsl(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )


def test_the_blocker_blocks() -> None:
    # Else the tests below would pass for the wrong reason.
    proc = run_without_dsl("import ts_runtime")
    assert proc.returncode != 0 and "No module named 'ts_runtime'" in proc.stderr


def test_facade_and_its_schedule_modules_import() -> None:
    proc = run_without_dsl(
        """
        import task_scheduling
        from task_scheduling import enums, pipeline, plan, resources, schedule_builder
        from task_scheduling.resources import MemoryResource, TaskLocalVariable, consumer_work
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
        assert not loaded, loaded
        print("imported", task_scheduling.__version__)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("imported ")


def test_first_tutorial_page_runs() -> None:
    proc = run_without_dsl(
        f"""
        import doctest
        flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
        result = doctest.testfile({str(FIRST_PAGE)!r}, module_relative=False, optionflags=flags)
        print(result.attempted, result.failed)
        sys.exit(1 if result.failed or not result.attempted else 0)
        """
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    attempted, failed = proc.stdout.split()[-2:]
    assert int(attempted) > 10 and failed == "0"


def test_a_runtime_name_says_what_to_install() -> None:
    proc = run_without_dsl(
        """
        try:
            from task_scheduling.resources import PipelineConfig
        except ImportError as err:
            print(err)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "`pip install ts-runtime`" in proc.stdout


def test_python_dash_m_task_scheduling() -> None:
    proc = run_without_dsl(
        """
        import runpy
        sys.argv = ["task_scheduling", "--version"]
        runpy.run_module("task_scheduling", run_name="__main__")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ts (ts-cli) ")
