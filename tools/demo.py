"""The project's main job: load the bundled example kernels and show what TS makes of them.

For every ``examples/schedules/*.py`` module (each defines ``kernel() -> KernelPlan``), print
the schedule table (one column per task), the verification report (ts-verify: brackets,
declarations, deadlocks and races for all trip counts) and the plan as JSON. Usage::

    python tools/demo.py [--json-only | --table-only] [EXAMPLE ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from ts_ir import KernelPlan, render_plan_table, to_json
from ts_verify import verify

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "schedules"


def load_example(path: Path) -> ModuleType:
    """Import an example module from its file."""
    spec = importlib.util.spec_from_file_location(f"ts_example_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def example_paths(names: list[str]) -> list[Path]:
    """The example files to show: all of them, or the ones named."""
    paths = sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))
    if not names:
        return paths
    by_stem = {p.stem: p for p in paths}
    unknown = [n for n in names if n not in by_stem]
    if unknown:
        raise SystemExit(f"unknown example(s) {unknown}; known: {sorted(by_stem)}")
    return [by_stem[n] for n in names]


def main(argv: list[str] | None = None) -> int:
    """Print every selected example as a table, its verification and as JSON.

    Returns:
        1 when an example fails verification, else 0.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("examples", nargs="*", help="example names (default: all)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--json-only", action="store_true", help="print only the JSON")
    group.add_argument("--table-only", action="store_true", help="print only the tables")
    args = parser.parse_args(argv)
    failed = False
    for path in example_paths(args.examples):
        plan: KernelPlan = load_example(path).kernel()
        failed |= not verify(plan).ok
        if not args.json_only:
            print(f"=== {plan.name} ({path.relative_to(EXAMPLES.parent.parent)}) ===")
            print(render_plan_table(plan))
            print()
            print(verify(plan).as_text())
            print()
        if not args.table_only:
            print(to_json(plan))
            print()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
