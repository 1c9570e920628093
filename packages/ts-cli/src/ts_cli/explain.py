"""``ts explain CODE``: a diagnostic code's catalog entry, printed offline.

Every TS error and verifier diagnostic ends with ``see: ts explain <CODE>``. Each layer registers
its codes in the :mod:`ts_ir.catalog` registry when it is imported, so this module imports the
layer that owns a code (by the code's letter) and prints the entry the layer itself carries: the
text always matches the installed version. ts-codegen and ts-runtime are optional here (ts-cli
does not depend on them); their codes are explained where they are installed.
"""

from __future__ import annotations

import importlib
import re
import textwrap
from collections.abc import Sequence

import ts_ir
from ts_ir import CatalogEntry

__all__ = [
    "LAYERS",
    "ExplainError",
    "all_entries",
    "find_entry",
    "normalize_code",
    "render_entry",
    "render_index",
]

# The layer behind each code letter: (import name, distribution). The cheap, always-installed
# ones come first: listing imports them in this order.
LAYERS: dict[str, tuple[str, str]] = {
    "I": ("ts_ir", "ts-ir"),
    "T": ("ts_trace", "ts-trace"),
    "V": ("ts_verify", "ts-verify"),
    "R": ("ts_runtime", "ts-runtime"),
    "X": ("ts_runtime", "ts-runtime"),
    "C": ("ts_codegen", "ts-codegen"),
}

_CODE = re.compile(r"(?:TS-?)?([A-Z])-?(\d{3})")
_WIDTH = 88


class ExplainError(LookupError):
    """The code is malformed, unknown, or its layer is not installed.

    Attributes:
        kind: ``unknown-code`` or ``missing-dependency`` (for ``ts explain --json``).
    """

    def __init__(self, message: str, kind: str = "unknown-code") -> None:
        super().__init__(message)
        self.kind = kind


def normalize_code(text: str) -> str | None:
    """``TS-V301`` from ``TS-V301``, ``ts-v301``, ``V301`` or ``v-301``; None if not a code."""
    match = _CODE.fullmatch(text.strip().upper())
    return f"TS-{match.group(1)}{match.group(2)}" if match else None


def _load(letter: str) -> str | None:
    """Import the layer of ``letter`` (registering its codes); why not, or None when it did."""
    module, dist = LAYERS[letter]
    try:
        importlib.import_module(module)
    except ImportError as err:
        if isinstance(err, ModuleNotFoundError) and err.name == module:
            return f"{dist} is not installed here: `pip install {dist}`"
        return f"{dist} does not import here ({err})"
    except Exception as err:  # e.g. the CuTe DSL is installed but broken
        return f"{dist} does not import here ({type(err).__name__}: {err})"
    return None


def find_entry(text: str) -> CatalogEntry:
    """The catalog entry of the code ``text`` (see :func:`normalize_code`).

    Raises:
        ExplainError: Not a code, no such code, or its layer is not installed.
    """
    code = normalize_code(text)
    if code is None:
        raise ExplainError(
            f"{text!r} is not a diagnostic code: codes look like TS-V301 (`ts explain` lists "
            "them all)"
        )
    letter = code[3]
    if letter not in LAYERS:
        letters = ", ".join(f"TS-{x}" for x in LAYERS)
        raise ExplainError(
            f"no layer reports {code}: the codes are {letters}; `ts explain` lists them"
        )
    why = _load(letter)
    if why is not None:
        raise ExplainError(f"{code} is a {LAYERS[letter][1]} code, and {why}", "missing-dependency")
    try:
        return ts_ir.entry(code)
    except KeyError:
        known = [e.code for e in ts_ir.entries() if e.code.startswith(code[:4])]
        listing = f"{known[0]}..{known[-1]}" if known else "none"
        raise ExplainError(
            f"no diagnostic {code} (the {code[:4]} codes are {listing}); `ts explain` lists them"
        ) from None


def all_entries() -> tuple[tuple[CatalogEntry, ...], list[str]]:
    """Every entry of every layer installed here, and a note for each layer that is not."""
    missing = [why for why in (_load(letter) for letter in LAYERS) if why is not None]
    return ts_ir.entries(), missing


def _wrap(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(text, _WIDTH, initial_indent=indent, subsequent_indent=indent) or [""]


def render_entry(e: CatalogEntry) -> str:
    """The entry as text: title, layer, the rule, a wrong and a fixed example, the fix."""
    lines = [f"{e.code}: {e.title}", f"reported by {e.layer}", ""]
    lines += _wrap(e.explanation)
    lines += ["", "Wrong:", *textwrap.indent(e.wrong, "    ").splitlines(), ""]
    lines += ["Right:", *textwrap.indent(e.right, "    ").splitlines(), ""]
    lines += _wrap(f"fix: {e.fix}")
    lines += [
        "",
        *_wrap(
            f"The same page is {ts_ir.docs_page(e.code)} of the TS documentation; the examples "
            "start from the resources and schedules on its errors/index page."
        ),
    ]
    return "\n".join(lines)


def render_index(entries: Sequence[CatalogEntry], missing: Sequence[str]) -> str:
    """One line per code (code and title), then what is not installed."""
    width = max((len(e.code) for e in entries), default=7)
    lines = [f"{e.code:<{width}}  {e.title}  ({e.layer})" for e in entries]
    lines += [f"(not listed: {why})" for why in missing]
    lines += ["", "`ts explain CODE` prints one entry in full."]
    return "\n".join(lines)
