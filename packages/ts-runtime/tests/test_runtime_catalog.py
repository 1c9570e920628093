"""Every ts-runtime error has a catalog code with a full entry; messages end with its page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ts_ir import entry, see_also
from ts_runtime import errors
from ts_runtime.catalog_entries import RUNTIME_ENTRIES

SRC = Path(errors.__file__).parent


def test_every_error_class_has_a_registered_code() -> None:
    classes = [getattr(errors, name) for name in errors.__all__]
    for cls in classes:
        e = entry(cls.code)
        assert e.layer == "ts-runtime"
        assert all([e.title, e.explanation, e.wrong, e.right, e.fix])
    assert {c.code for c in classes} == {e.code for e in RUNTIME_ENTRIES}


def test_every_code_in_the_sources_is_in_the_catalog() -> None:
    used = {
        code
        for path in SRC.glob("*.py")
        if not path.name.startswith("catalog_")
        for code in re.findall(r'"(TS-R\d{3})"', path.read_text())
    }
    assert used <= {e.code for e in RUNTIME_ENTRIES}


@pytest.mark.parametrize("name", errors.__all__)
def test_messages_carry_code_fix_and_page(name: str) -> None:
    cls = getattr(errors, name)
    err = cls("the thing is wrong", task="load", resource="ring", fix="do it right")
    text = str(err)
    assert text.startswith(f"{cls.code}: the thing is wrong")
    assert "  fix: do it right" in text
    assert text.endswith(f"see: {see_also(cls.code)}")
    assert err.task == "load" and err.resource == "ring"
