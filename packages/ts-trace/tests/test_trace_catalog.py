"""The TS-T entries of the error catalog: complete, registered, and their examples are true.

Every wrong example raises its own code (and the message ends with `ts explain <CODE>`);
every fixed example traces without error.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import ts_trace
from ts_ir import CatalogEntry, entries, entry, see_also
from ts_trace import TRACE_ERROR_CATALOG, ScheduleError, TraceError
from ts_trace.catalog_entries import EXAMPLES_PLAN, EXAMPLES_PRELUDE, TRACE_ENTRIES

SOURCES = Path(ts_trace.__file__).parent


def codes_raised_in_sources() -> set[str]:
    """Every ``"TS-Txxx"`` literal of the ts_trace sources, except the catalog's own."""
    found: set[str] = set()
    for path in SOURCES.rglob("*.py"):
        if not path.name.startswith("catalog_"):
            found |= set(re.findall(r'"(TS-T\d{3})"', path.read_text()))
    return found


def run_example(code: str, snippet: str) -> dict[str, Any]:
    """Run ``snippet`` after the shared prelude, as the catalog pages present it."""
    namespace: dict[str, Any] = {"__name__": f"catalog_example_{code.replace('-', '_')}"}
    # dont_inherit: the examples run without this module's `from __future__ import annotations`.
    exec(compile(EXAMPLES_PRELUDE, "<catalog prelude>", "exec", dont_inherit=True), namespace)
    exec(compile(snippet, f"<catalog {code}>", "exec", dont_inherit=True), namespace)
    return namespace


def test_every_code_raised_has_an_entry() -> None:
    raised = codes_raised_in_sources()
    assert raised, "no codes found: has the source layout changed?"
    assert raised - set(TRACE_ERROR_CATALOG) == set()


def test_every_entry_is_raised_somewhere() -> None:
    assert set(TRACE_ERROR_CATALOG) - codes_raised_in_sources() == set()


def test_catalog_dict_is_the_registered_entries() -> None:
    assert list(TRACE_ERROR_CATALOG) == sorted(TRACE_ERROR_CATALOG)
    assert tuple(TRACE_ERROR_CATALOG.values()) == TRACE_ENTRIES
    for code, e in TRACE_ERROR_CATALOG.items():
        assert isinstance(e, CatalogEntry)
        assert e.code == code
        assert entry(code) is e
    assert {e.code for e in entries() if e.layer == "ts-trace"} == set(TRACE_ERROR_CATALOG)


@pytest.mark.parametrize("e", TRACE_ENTRIES, ids=lambda e: e.code)
def test_entry_fields(e: CatalogEntry) -> None:
    assert re.fullmatch(r"TS-T\d{3}", e.code)
    assert e.layer == "ts-trace"
    for field in (e.title, e.explanation, e.wrong, e.right, e.fix):
        assert field.strip() and field == field.strip("\n")
    assert "\n" not in e.title + e.explanation + e.fix
    sentences = re.findall(r"[.!?](?:\s|$)", e.explanation)
    assert 2 <= len(sentences) <= 5, e.explanation
    assert e.wrong != e.right
    assert e.explanation.count("`") % 2 == 0 and e.fix.count("`") % 2 == 0


def test_examples_plan_builds_on_the_prelude() -> None:
    namespace = run_example("plan", EXAMPLES_PLAN)
    assert [t.name for t in namespace["plan"].tasks] == ["loader", "storer"]


@pytest.mark.parametrize("e", TRACE_ENTRIES, ids=lambda e: e.code)
def test_wrong_example_raises_its_code(e: CatalogEntry) -> None:
    with pytest.raises(TraceError) as err:
        run_example(e.code, e.wrong)
    assert err.value.code == e.code, str(err.value)
    message = str(err.value)
    assert message.startswith(f"{e.code}: ")
    assert message.endswith(f"\n  see: {see_also(e.code)}")


@pytest.mark.parametrize("e", TRACE_ENTRIES, ids=lambda e: e.code)
def test_right_example_is_accepted(e: CatalogEntry) -> None:
    run_example(e.code, e.right)


def test_default_fix_comes_from_the_entry() -> None:
    err = ScheduleError("TS-T003", "something went stale")
    assert err.fix == entry("TS-T003").fix
    assert str(err).splitlines()[-2:] == [
        f"  fix: {entry('TS-T003').fix}",
        "  see: ts explain TS-T003",
    ]


def test_an_explicit_fix_wins_but_the_address_stays() -> None:
    err = ScheduleError("TS-T020", "two tasks are named `x`", fix="rename one")
    assert str(err).splitlines()[-2:] == ["  fix: rename one", f"  see: {see_also('TS-T020')}"]


def test_unknown_code_is_refused() -> None:
    with pytest.raises(KeyError, match="unknown diagnostic code 'TS-T999'"):
        ScheduleError("TS-T999", "no such code")
