"""The error-catalog registry: registration, duplicates, lookups, order and where messages point."""

from __future__ import annotations

import dataclasses

import pytest

import ts_ir
from ts_ir import catalog
from ts_ir.catalog import CatalogEntry, docs_page, docs_url, entries, entry, register, see_also


@pytest.fixture(autouse=True)
def empty_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts from an empty registry; the real one is restored afterwards."""
    monkeypatch.setattr(catalog, "_REGISTRY", {})


def make(code: str, title: str = "some mistake", layer: str = "ts-test") -> CatalogEntry:
    return CatalogEntry(
        code=code,
        title=title,
        explanation="What the rule is. Why it exists.",
        wrong="ring.commit()",
        right="ring.acquire()\nring.commit()",
        fix="do it right",
        layer=layer,
    )


def test_register_and_look_up() -> None:
    e = make("TS-X001")
    register([e])
    assert entry("TS-X001") is e
    assert entries() == (e,)


def test_entries_are_sorted_by_code() -> None:
    register([make("TS-X010"), make("TS-X002")])
    register([make("TS-A005"), make("TS-X001")])
    assert [e.code for e in entries()] == ["TS-A005", "TS-X001", "TS-X002", "TS-X010"]


def test_registering_the_same_entry_again_is_a_no_op() -> None:
    register([make("TS-X001")])
    register([make("TS-X001")])  # e.g. a layer imported twice
    assert len(entries()) == 1


def test_duplicate_code_with_different_content_raises() -> None:
    register([make("TS-X001", "first")])
    with pytest.raises(ValueError, match=r"TS-X001 is registered twice.*'first'.*'second'"):
        register([make("TS-X001", "second")])
    assert entry("TS-X001").title == "first"


def test_duplicate_within_one_batch_registers_nothing() -> None:
    with pytest.raises(ValueError, match="TS-X002"):
        register([make("TS-X001"), make("TS-X002", "a"), make("TS-X002", "b")])
    assert entries() == ()


def test_unknown_code_raises_a_helpful_key_error() -> None:
    register([make("TS-X001"), make("TS-X007")])
    with pytest.raises(KeyError) as err:
        entry("TS-X999")
    message = str(err.value)
    assert "unknown diagnostic code 'TS-X999'" in message
    assert "TS-X001..TS-X007" in message
    assert "registered when their layer is imported" in message


def test_unknown_code_in_an_empty_registry() -> None:
    with pytest.raises(KeyError, match="registered: none"):
        entry("TS-T001")


@pytest.mark.parametrize("code", ["T001", "TS-T01", "TS-t001", "TS-T0001", "XX-T001", ""])
def test_malformed_codes_are_rejected(code: str) -> None:
    with pytest.raises(ValueError, match="is not of the form"):
        make(code)


@pytest.mark.parametrize("field", ["title", "explanation", "wrong", "right", "fix", "layer"])
def test_every_field_is_required(field: str) -> None:
    with pytest.raises(ValueError, match=f"empty field.*{field}"):
        dataclasses.replace(make("TS-X001"), **{field: "  "})


def test_entries_are_frozen() -> None:
    e = make("TS-X001")
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.title = "changed"  # type: ignore[misc]


def test_messages_point_at_ts_explain() -> None:
    # A command that works offline, not a web address (the old domain never resolved).
    assert see_also("TS-T003") == "ts explain TS-T003"
    # It does not need the registry (empty here): messages can always print it.
    assert see_also("TS-V302") == "ts explain TS-V302"
    assert make("TS-X001").see_also == see_also("TS-X001")
    # The 0.2 name gives the same, so code written against it prints the same line.
    assert docs_url("TS-V302") == see_also("TS-V302")
    # The page the documentation generates for a code (docs/_ext/error_catalog.py).
    assert docs_page("TS-V302") == "errors/TS-V302.html"


def test_package_exports() -> None:
    names = ("CatalogEntry", "docs_page", "docs_url", "entries", "entry", "register", "see_also")
    for name in names:
        assert name in ts_ir.__all__
        assert getattr(ts_ir, name) is getattr(catalog, name)
