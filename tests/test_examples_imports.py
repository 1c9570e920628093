"""The examples are thin clients of the facade: no example imports a layer package.

Every ``examples/**/*.py`` may import only ``task_scheduling`` (and its submodules), the CuTe
DSL (``cutlass``, ``cuda``) and ``torch`` for its own kernel bodies and host code, the standard
library, and the modules beside it: underscore helpers (``_tma_tiles.py``, ...) and other
examples (``gemm_tune.py`` drives ``gemm.py``), themselves held to this rule. Anything else,
``ts_ir`` / ``ts_trace`` / ``ts_verify`` / ``ts_codegen`` / ``ts_runtime`` included, is listed
with its file and line.
"""

from __future__ import annotations

import ast
import fnmatch
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
ALLOWED_ROOTS = frozenset({"task_scheduling", "cutlass", "cuda", "torch", "__future__"})

# Files not yet on the facade, as patterns of paths under examples/. Keep it short, say why.
PENDING: tuple[str, ...] = ()  # every example is on the facade


def example_files() -> list[Path]:
    return sorted(EXAMPLES.rglob("*.py"))


def imported_roots(path: Path) -> list[tuple[int, str]]:
    """``(line, top-level module)`` of every import in ``path`` (nested ones included)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            # A relative import (level > 0) is a sibling module: checked like one.
            found.append((node.lineno, node.module or ""))
    return sorted(found)


def offences(path: Path, root_dir: Path = ROOT) -> list[str]:
    """``file:line: module`` for each import outside what an example may use."""
    out = []
    for line, module in imported_roots(path):
        root = module.split(".")[0]
        if root in ALLOWED_ROOTS or root in sys.stdlib_module_names:
            continue
        if (path.parent / f"{root}.py").is_file():
            continue  # a helper or another example beside it (checked here too)
        out.append(f"{path.relative_to(root_dir)}:{line}: imports {module}")
    return out


def pending(path: Path) -> bool:
    name = path.relative_to(EXAMPLES).as_posix()
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in PENDING)


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="examples/ is not part of this checkout")
def test_examples_import_only_the_facade_the_dsl_torch_and_the_stdlib() -> None:
    files = [p for p in example_files() if not pending(p)]
    assert len(files) >= 10, files  # the schedules and the Hopper examples
    bad = [o for p in files for o in offences(p)]
    assert not bad, (
        "examples may import only task_scheduling (and its submodules), cutlass, cuda, torch, "
        "the standard library and the _*.py helpers beside them; re-export what is missing from "
        "a task_scheduling submodule. Offending imports:\n" + "\n".join(bad)
    )


def test_the_check_catches_a_layer_import(tmp_path: Path) -> None:
    (tmp_path / "_helper.py").write_text("import os\n")
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import os\nimport _helper\nimport cutlass.cute as cute\n"
        "from task_scheduling.kernel import Kernel\n"
        "def f():\n    from ts_codegen.dsl import compile_ptx\n    import numpy\n"
        "from _missing import x\n"
    )
    assert offences(bad, tmp_path) == [
        "bad.py:6: imports ts_codegen.dsl",
        "bad.py:7: imports numpy",
        "bad.py:8: imports _missing",
    ]
