"""The README's main job: every bundled example traces and prints as a table and as JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ts_ir import KernelPlan, from_json

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p.stem for p in (ROOT / "examples" / "schedules").glob("*.py"))


def run_demo(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "demo.py"), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


def test_examples_exist() -> None:
    assert {"grid_stride_copy", "tma_copy", "ws_gemm", "varlen_copy"} <= set(EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES)
def test_demo_prints_table_verification_and_round_trippable_json(example: str) -> None:
    out = run_demo(example)
    header, _, rest = out.partition("\n")
    assert header.startswith(f"=== {example} ")
    table, _, rest = rest.partition("\n\n")
    verdict, _, json_text = rest.partition("\n\n")
    assert " | " in table or "domain_loop" in table
    assert verdict.startswith(f"{example}: verified")
    assert "proven: no deadlock and no race" in verdict
    data = json.loads(json_text)
    assert data["kind"] == "kernel_plan"
    plan = from_json(json_text)
    assert isinstance(plan, KernelPlan)
    assert plan.name == example
    for task in plan.tasks:
        assert task.name in table


def test_demo_rejects_unknown_example() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "demo.py"), "nope"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    assert "unknown example" in proc.stderr


def test_demo_compiles_the_hopper_examples() -> None:
    pytest.importorskip("cutlass")
    out = run_demo("--table-only")
    hopper = sorted(
        p.stem for p in (ROOT / "examples" / "hopper").glob("*.py") if not p.name.startswith("_")
    )
    assert hopper
    for name in hopper:
        assert f"=== examples/hopper/{name}.py: compile for sm_90a ===" in out
    results = [json.loads(line) for line in out.splitlines() if line.startswith('{"')]
    assert len(results) == len(hopper)
    for r in results:
        if r["example"] == "debug_hang":  # no twin, verification off on purpose
            assert r["debug"]["trap"] > 0 and r["plain"]["trap"] == 0
        elif r["example"] == "attention":  # no hand-written twin: verified, with its PTX kinds
            assert r["verified"] and r["ok"], r
        else:
            assert r["same_counts"] and r["verified"], r["example"]
