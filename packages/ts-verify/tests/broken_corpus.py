"""Helpers of the broken-plan corpus: exact codes, and diagnostics that point at marked lines."""

from __future__ import annotations

import re
from typing import Any

from verify_testkit import Dst, Ring, Src, marker_line, plan_of, task

from ts_ir import KernelPlan, see_also
from ts_verify import VERIFY_CATALOG, Diagnostic, Report, Severity, verify

WARNINGS_BESIDE = frozenset({"TS-V215"})
"""Warnings a broken plan may carry beside its errors (a graph that tasks on two rings
talking both ways derive has a cycle)."""


def check(plan: KernelPlan, *codes: str) -> Report:
    """``verify(plan)`` reports exactly ``codes`` as errors, in order (and no other warning)."""
    report = verify(plan)
    assert [d.code for d in report.errors] == list(codes), report.as_text()
    assert not report.ok
    assert not any(p.startswith("no deadlock") for p in report.proven)
    warnings = [d.code for d in report.diagnostics if d.severity is not Severity.ERROR]
    assert set(warnings) <= WARNINGS_BESIDE, report.as_text()
    return report


def points_at(
    d: Diagnostic,
    path: str,
    marker: str,
    *,
    task: str,
    resource: str = "",
    step: str = "",
) -> None:
    """``d`` points at the line of ``path`` marked ``# marker`` and names task/resource/step."""
    line = marker_line(path, marker)
    assert d.location is not None, d.as_text()
    assert d.location.file == path
    assert d.location.line == line, d.as_text()
    assert d.task == task
    assert d.resource == resource
    if step:
        assert re.fullmatch(rf"#\d+ {re.escape(step)}", d.step), d.step
    text = d.as_text()
    assert text.startswith(f"error {d.code} ({VERIFY_CATALOG[d.code][0]}): ")
    assert f'File "{path}", line {line}' in text
    assert text.endswith(f"\n  see: {see_also(d.code)}")


def pair(src: Src, buf: Ring, dst: Dst, producer: Any, consumer: Any, **options: Any) -> KernelPlan:
    """A two-task plan: ``producer`` fills ``buf`` from ``src``, ``consumer`` drains it."""
    return plan_of(
        task("p", producer, [src], [buf]),
        task("c", consumer, [buf], [dst], warp=4),
        **options,
    )
