"""The error catalog: one registry of every diagnostic code of every TS layer.

Each layer registers its codes at import (``ts_trace`` the ``TS-Txxx`` tracing errors,
``ts_verify`` the ``TS-Vxxx`` verifier diagnostics). An entry says what the rule is, why it
exists, shows a minimal wrong schedule and its fix, and gives the one-line fix hint that error
messages print. Every error message ends with ``see: ts explain <CODE>`` (:func:`see_also`): the
``ts`` command prints the entry offline; the documentation renders the same entry as the page
``errors/<CODE>.html`` (:func:`docs_page`).

Text fields use one markup convention: code is written between single backticks (the
documentation renders it as code, messages print it as is).
"""

from __future__ import annotations

import dataclasses
import re
import textwrap
from collections.abc import Iterable

__all__ = [
    "CatalogEntry",
    "docs_page",
    "docs_url",
    "entries",
    "entry",
    "entry_from_text",
    "register",
    "see_also",
]

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
    def see_also(self) -> str:
        """Where a message sends the reader for this entry (:func:`see_also`)."""
        return see_also(self.code)


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


def see_also(code: str) -> str:
    """What the ``see:`` line of every message for ``code`` names: ``ts explain <CODE>``.

    A command rather than a web address: TS documentation is not hosted at a fixed address, and
    ``ts explain`` (``python -m task_scheduling explain``) prints the entry offline, from the
    installed layers, so it always matches the code that raised the message. It does not need
    the registry, so messages can always print it.

    >>> from ts_ir import see_also
    >>> see_also("TS-T003")
    'ts explain TS-T003'
    """
    return f"ts explain {code}"


def docs_url(code: str) -> str:
    """The same as :func:`see_also`, under its name of TS 0.2, for code written against it.

    It gave a web address that never resolved; messages now name ``ts explain <CODE>``.
    """
    return see_also(code)


def docs_page(code: str) -> str:
    """The page of ``code`` within the built documentation (``docs/_build/html``).

    The documentation generates one page per registered entry, with the text that
    ``ts explain`` prints.

    >>> from ts_ir import docs_page
    >>> docs_page("TS-V302")
    'errors/TS-V302.html'
    """
    return f"errors/{code}.html"


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
