"""The project's main job: load the bundled example kernels and show what TS makes of them.

For every ``examples/schedules/*.py`` module (each defines ``kernel() -> KernelPlan``), print
the schedule table (one column per task), the verification report (ts-verify: brackets,
declarations, deadlocks and races for all trip counts) and the plan as JSON. Then, when the
CuTe DSL is installed, compile every ``examples/hopper/*.py`` kernel for sm_90a and print its
PTX instruction counts next to its hand-written twin's; on a machine with a CUDA GPU, also run
it and check it against torch. Usage::

    python tools/demo.py [--json-only | --table-only] [--no-hopper] [EXAMPLE ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from ts_ir import KernelPlan, render_plan_table, to_json
from ts_verify import verify

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "schedules"
HOPPER = EXAMPLES.parent / "hopper"


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
    parser.add_argument("--no-hopper", action="store_true", help="skip the Hopper kernels")
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
    if not args.no_hopper and not args.examples:
        failed |= not run_hopper_examples()
    return 1 if failed else 0


def _gpu_present() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def run_hopper_examples() -> bool:
    """Compile (and, with a GPU, run) every Hopper example; True when all succeed."""
    if importlib.util.find_spec("cutlass") is None:
        print("(the CuTe DSL is not installed: skipping examples/hopper)")
        return True
    modes = [["--compile-only"]] + ([[]] if _gpu_present() else [])
    env = dict(os.environ, CUTE_DSL_ARCH=os.environ.get("CUTE_DSL_ARCH", "sm_90a"))
    ok = True
    with tempfile.TemporaryDirectory(prefix="ts_demo_ptx_") as dump:
        env.setdefault("CUTE_DSL_DUMP_DIR", dump)
        for path in sorted(p for p in HOPPER.glob("*.py") if not p.name.startswith("_")):
            for mode in modes:
                what = "compile for sm_90a" if mode else "run on the GPU"
                print(f"=== {path.relative_to(HOPPER.parent.parent)}: {what} ===", flush=True)
                proc = subprocess.run(
                    [sys.executable, str(path), *mode], env=env, capture_output=True, text=True
                )
                lines = (proc.stdout or proc.stderr).strip().splitlines()
                print(lines[-1] if lines else "(no output)")
                ok &= proc.returncode == 0
    return ok


if __name__ == "__main__":
    raise SystemExit(main())
