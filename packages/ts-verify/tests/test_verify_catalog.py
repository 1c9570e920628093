"""The TS-V entries of the error catalog: complete, registered, and their examples are true.

Every wrong example makes :func:`ts_verify.verify` report its code (and the diagnostic's text
ends with `ts explain <CODE>`); every fixed example verifies without any diagnostic.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

import ts_verify
from ts_ir import CatalogEntry, KernelPlan, entries, entry, see_also
from ts_trace.catalog_entries import EXAMPLES_PLAN, EXAMPLES_PRELUDE
from ts_verify import VERIFY_CATALOG, Diagnostic, Report, verify
from ts_verify.catalog_entries import VERIFY_ENTRIES

SOURCES = Path(ts_verify.__file__).parent


def codes_reported_in_sources() -> set[str]:
    """Every ``"TS-Vxxx"`` literal of the ts_verify sources, except the catalog's own."""
    found: set[str] = set()
    for path in SOURCES.rglob("*.py"):
        if not path.name.startswith("catalog_"):
            found |= set(re.findall(r'"(TS-V\d{3})"', path.read_text()))
    return found


def _run(namespace: dict[str, Any], code: str, name: str) -> None:
    # dont_inherit: the examples run without this module's `from __future__ import annotations`.
    exec(compile(code, f"<catalog {name}>", "exec", dont_inherit=True), namespace)


def assigns_plan(snippet: str) -> bool:
    return any(
        isinstance(node, ast.Name) and node.id == "plan" and isinstance(node.ctx, ast.Store)
        for node in ast.walk(ast.parse(snippet))
    )


def verify_example(code: str, snippet: str) -> Report:
    """Verify the plan of ``snippet``, as the catalog pages present it.

    The snippet runs after the shared prelude and the copy kernel's ``plan``; unless it builds
    a ``plan`` itself, the copy kernel is then rebuilt from its (re)definitions.
    """
    namespace: dict[str, Any] = {"__name__": f"catalog_example_{code.replace('-', '_')}"}
    _run(namespace, EXAMPLES_PRELUDE, "prelude")
    _run(namespace, EXAMPLES_PLAN, "plan")
    _run(namespace, snippet, code)
    if not assigns_plan(snippet):
        _run(namespace, EXAMPLES_PLAN, "plan")
    plan = namespace["plan"]
    assert isinstance(plan, KernelPlan)
    # An example about the target names it (``target = Target.of(...)``).
    return verify(plan, target=namespace.get("target"))


def test_every_code_reported_has_an_entry() -> None:
    reported = codes_reported_in_sources()
    assert reported, "no codes found: has the source layout changed?"
    assert reported - set(VERIFY_CATALOG) == set()


def test_every_entry_is_reported_somewhere() -> None:
    assert set(VERIFY_CATALOG) - codes_reported_in_sources() == set()


def test_catalog_dict_keeps_its_shape() -> None:
    assert list(VERIFY_CATALOG) == sorted(VERIFY_CATALOG)
    assert list(VERIFY_CATALOG) == [e.code for e in VERIFY_ENTRIES]
    for code, (title, fix) in VERIFY_CATALOG.items():
        e = entry(code)
        assert (title, fix) == (e.title, e.fix)
        assert e.layer == "ts-verify"
    assert {e.code for e in entries() if e.layer == "ts-verify"} == set(VERIFY_CATALOG)


@pytest.mark.parametrize("e", VERIFY_ENTRIES, ids=lambda e: e.code)
def test_entry_fields(e: CatalogEntry) -> None:
    assert re.fullmatch(r"TS-V[123]\d{2}", e.code)
    for field in (e.title, e.explanation, e.wrong, e.right, e.fix):
        assert field.strip() and field == field.strip("\n")
    assert "\n" not in e.title + e.explanation + e.fix
    sentences = re.findall(r"[.!?](?:\s|$)", e.explanation)
    assert 2 <= len(sentences) <= 5, e.explanation
    assert e.wrong != e.right
    assert e.explanation.count("`") % 2 == 0 and e.fix.count("`") % 2 == 0


@pytest.mark.parametrize("e", VERIFY_ENTRIES, ids=lambda e: e.code)
def test_diagnostic_text_ends_with_ts_explain(e: CatalogEntry) -> None:
    d = Diagnostic(e.code, "something is wrong")
    lines = d.as_text().splitlines()
    assert lines[0] == f"error {e.code} ({e.title}): something is wrong"
    assert lines[-2:] == [f"  fix: {e.fix}", f"  see: {see_also(e.code)}"]
    assert lines[-1] == f"  see: ts explain {e.code}"


@pytest.mark.parametrize("e", VERIFY_ENTRIES, ids=lambda e: e.code)
def test_wrong_example_reports_its_code(e: CatalogEntry) -> None:
    report = verify_example(e.code, e.wrong)
    assert e.code in report.codes(), report.as_text()
    d = next(d for d in report.diagnostics if d.code == e.code)
    assert d.as_text().endswith(f"\n  see: {see_also(e.code)}")


@pytest.mark.parametrize("e", VERIFY_ENTRIES, ids=lambda e: e.code)
def test_right_example_verifies(e: CatalogEntry) -> None:
    report = verify_example(e.code, e.right)
    assert report.ok and report.diagnostics == (), report.as_text()
