"""The Sphinx error-catalog extension writes one page per registered code (no Sphinx needed)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

import ts_ir

EXTENSION = Path(__file__).resolve().parent.parent / "docs" / "_ext" / "error_catalog.py"


@pytest.fixture(scope="module")
def ext() -> ModuleType:
    spec = importlib.util.spec_from_file_location("error_catalog", EXTENSION)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_one_page_per_registered_code(ext: ModuleType, tmp_path: Path) -> None:
    pages = ext.write_pages(tmp_path)
    codes = [e.code for e in ts_ir.entries()]
    # Both layers registered their codes (the extension imports them).
    assert any(c.startswith("TS-T") for c in codes) and any(c.startswith("TS-V") for c in codes)
    assert [p.name for p in pages] == [f"{c}.rst" for c in codes]
    assert sorted(p.name for p in tmp_path.glob("*.rst")) == sorted(
        [*(f"{c}.rst" for c in codes), "index.rst"]
    )
    index = (tmp_path / "index.rst").read_text()
    for e in ts_ir.entries():
        # The page of the code is where docs_page() says (errors/<CODE>.html once built).
        assert ts_ir.docs_page(e.code) == f"errors/{e.code}.html"
        page = (tmp_path / f"{e.code}.rst").read_text()
        title = f"{e.code}: {ext.render_text(e.title)}"
        assert f"\n{title}\n{'=' * len(title)}\n" in page
        assert f"``{e.layer}``" in page
        assert "\nWrong\n-----\n" in page and "\nRight\n-----\n" in page
        assert page.count(".. code-block:: python") == 2
        for line in e.wrong.splitlines() + e.right.splitlines():
            assert (f"   {line}" if line.strip() else "") + "\n" in page
        assert f"**Fix:** {ext.render_text(e.fix)}" in page
        assert f":doc:`{e.code} <{e.code}>`" in index
        assert f"\n   {e.code}\n" in index  # in a toctree


def test_pages_are_rewritten_only_when_they_change(ext: ModuleType, tmp_path: Path) -> None:
    (page, *_) = ext.write_pages(tmp_path)
    stale = tmp_path / "TS-T999.rst"
    stale.write_text("a code that no longer exists")
    before = page.stat().st_mtime_ns
    page.touch()
    touched = page.stat().st_mtime_ns
    ext.write_pages(tmp_path)
    assert page.stat().st_mtime_ns == touched >= before
    assert not stale.exists()


def test_index_groups_codes_by_layer(ext: ModuleType, tmp_path: Path) -> None:
    ext.write_pages(tmp_path)
    index = (tmp_path / "index.rst").read_text()
    trace = index.index("Tracing errors (TS-T)")
    verify = index.index("Verifier diagnostics (TS-V)")
    assert trace < verify
    assert index.index(":doc:`TS-T001") > trace
    assert index.index(":doc:`TS-V101") > verify
    assert "class Ring(MemoryResource):" in index  # the examples' prelude


@pytest.mark.parametrize(
    ("text", "rst"),
    [
        ("plain", "plain"),
        ("call `acquire()` first", "call ``acquire()`` first"),
        ("try_* without", r"try\_\* without"),
        ("`x`s", r"``x``\ s"),
        ("a`b` c", r"a\ ``b`` c"),
        ("one ` tick", r"one \` tick"),
    ],
)
def test_render_text(ext: ModuleType, text: str, rst: str) -> None:
    assert ext.render_text(text) == rst


def test_no_text_leaves_stray_markup(ext: ModuleType) -> None:
    for e in ts_ir.entries():
        for text in (e.title, e.explanation, e.fix):
            bare = re.sub(r"``[^`]+``", "", ext.render_text(text))
            assert "`" not in bare.replace("\\`", ""), text
