"""The error catalog: one registry of every diagnostic code of every TS layer.

Each layer registers its codes at import (``ts_trace`` the ``TS-Txxx`` tracing errors,
``ts_verify`` the ``TS-Vxxx`` verifier diagnostics). An entry says what the rule is, why it
exists, shows a minimal wrong schedule and its fix, and gives the one-line fix hint that error
messages print. The documentation renders one page per entry, at :func:`docs_url`, and every
error message ends with that address.

Text fields use one markup convention: code is written between single backticks (the
documentation renders it as code, messages print it as is).
"""

from __future__ import annotations

import dataclasses
import re
import textwrap
from collections.abc import Iterable

__all__ = [
    "DOCS_URL",
    "CatalogEntry",
    "docs_url",
    "entries",
    "entry",
    "entry_from_text",
    "register",
]

DOCS_URL = "https://ts-kernels.dev/errors"
"""Base address of the error catalog pages; :func:`docs_url` adds ``/<CODE>.html``."""

_CODE = re.compile(r"TS-[A-Z]\d{3}")
_REGISTRY: dict[str, CatalogEntry] = {}


@dataclasses.dataclass(frozen=True)
class CatalogEntry:
    """One diagnostic code: what it means, an example of the mistake and of its fix.

    Attributes:
        code: Stable code such as ``TS-T003`` (``TS-`` + layer letter + 3 digits).
        title: Short name of the mistake, lower case, no final period.
        explanation: 2-5 sentences in the kernel author's words: the rule and why it exists.
        wrong: A minimal snippet (Python, our API) that triggers the code.
        right: The same snippet, fixed.
        fix: The one-line fix hint that error messages print after ``fix:``.
        layer: Distribution that reports the code (``ts-trace``, ``ts-verify``).
    """

    code: str
    title: str
    explanation: str
    wrong: str
    right: str
    fix: str
    layer: str

    def __post_init__(self) -> None:
        if not _CODE.fullmatch(self.code):
            raise ValueError(f"catalog code {self.code!r} is not of the form TS-X000")
        empty = [f.name for f in dataclasses.fields(self) if not getattr(self, f.name).strip()]
        if empty:
            raise ValueError(f"catalog entry {self.code}: empty field(s) {', '.join(empty)}")

    @property
    def url(self) -> str:
        """The address of this entry's documentation page (:func:`docs_url`)."""
        return docs_url(self.code)


def register(new: Iterable[CatalogEntry]) -> None:
    """Add entries to the registry.

    Registering an entry again (the same code with equal content) does nothing, so a layer may
    register at every import.

    Raises:
        ValueError: A code is already registered with different content (in this call or
            before); nothing of this call is registered then.
    """
    batch: dict[str, CatalogEntry] = {}
    for e in new:
        previous = batch.get(e.code, _REGISTRY.get(e.code))
        if previous is not None and previous != e:
            raise ValueError(
                f"catalog code {e.code} is registered twice with different content "
                f"({previous.title!r} from {previous.layer}, {e.title!r} from {e.layer})"
            )
        batch[e.code] = e
    _REGISTRY.update(batch)


def entry(code: str) -> CatalogEntry:
    """The registered entry of ``code``.

    Raises:
        KeyError: ``code`` is not registered; the message says which codes are, and that a
            layer registers its codes when it is imported.
    """
    try:
        return _REGISTRY[code]
    except KeyError:
        prefix = code[:4]
        known = sorted(c for c in _REGISTRY if c.startswith(prefix)) or sorted(_REGISTRY)
        listing = f"{known[0]}..{known[-1]}" if known else "none"
        raise KeyError(
            f"unknown diagnostic code {code!r} (registered: {listing}); codes are registered "
            "when their layer is imported (ts_trace: TS-T, ts_verify: TS-V)"
        ) from None


def entries() -> tuple[CatalogEntry, ...]:
    """Every registered entry, sorted by code."""
    return tuple(_REGISTRY[c] for c in sorted(_REGISTRY))


def docs_url(code: str) -> str:
    """The address of the documentation page of ``code``.

    The page exists for every registered code (the documentation generates one per entry);
    the address does not depend on the registry, so messages can always print it.

    >>> from ts_ir import docs_url
    >>> docs_url("TS-T003")
    'https://ts-kernels.dev/errors/TS-T003.html'
    """
    return f"{DOCS_URL}/{code}.html"


def entry_from_text(
    layer: str, code: str, title: str, fix: str, explanation: str, wrong: str, right: str
) -> CatalogEntry:
    """A catalog entry from indented source text (explanation reflowed, examples dedented)."""
    return CatalogEntry(
        code=code,
        title=title,
        explanation=" ".join(explanation.split()),
        wrong=textwrap.dedent(wrong).strip("\n"),
        right=textwrap.dedent(right).strip("\n"),
        fix=fix,
        layer=layer,
    )
