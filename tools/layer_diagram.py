"""The layer diagram of the docs, drawn from the import-linter contracts of ``pyproject.toml``.

The contracts are what CI enforces, so the diagram is drawn from them and nothing else: the
``layers`` contracts become the stack (a layer imports only the layers below it; ``a | b``
sit side by side and do not import each other), ``forbidden`` contracts the imports that never
happen, ``protected`` contracts the modules only their adapters import. ``docs/design.rst``
includes the result, ``docs/layers.txt``; ``tests/test_layer_diagram.py`` fails when it is
stale.

Usage: ``python tools/layer_diagram.py [--check]`` (writes ``docs/layers.txt``; with
``--check``, exits 1 instead when it differs).
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "docs" / "layers.txt"
WIDTH = 34


def contracts(pyproject: Path = ROOT / "pyproject.toml") -> list[dict[str, Any]]:
    """The import-linter contracts of ``pyproject``, in file order."""
    if sys.version_info >= (3, 11):
        import tomllib

        found: list[dict[str, Any]] = tomllib.loads(pyproject.read_text())["tool"]["importlinter"][
            "contracts"
        ]
        return found
    raise SystemExit("tools/layer_diagram.py needs Python 3.11 or later (tomllib)")


def _bare(layer: str) -> str:
    """A layer name without its optional-layer parentheses."""
    return layer.strip().strip("()")


def _stack(contract: Mapping[str, Any]) -> list[str]:
    """A ``layers`` contract as boxes, top layer first, joined by arrows pointing down.

    ``a | b`` (independent siblings) and ``a : b`` (siblings that may import each other) share
    a box; a parenthesised (optional) layer is drawn like any other.
    """
    lines: list[str] = []
    for i, entry in enumerate(contract["layers"]):
        sep = "|" if "|" in entry else ":"
        label = f" {sep} ".join(_bare(p) for p in entry.split(sep))
        if i:
            lines += ["|".center(WIDTH).rstrip(), "v".center(WIDTH).rstrip()]
        lines.append(f"[ {label} ]".center(WIDTH).rstrip())
        if sep == "|" and "|" in entry:
            lines.append("(neither imports the other)".center(WIDTH).rstrip())
    return lines


def _names(modules: Sequence[str]) -> str:
    return ", ".join(modules)


def render(found: Sequence[Mapping[str, Any]]) -> str:
    """The diagram text of the contracts ``found``."""
    out = [
        "Drawn by tools/layer_diagram.py from the import-linter contracts in pyproject.toml.",
        "",
    ]
    rules: list[str] = []
    for c in found:
        kind, title = c["type"], f"{c['name']} [{c['id']}]"
        if kind == "layers":
            out += [f"{title}:", "", *_stack(c), ""]
        elif kind == "forbidden":
            verb = "imports" if len(c["source_modules"]) == 1 else "import"
            rules.append(
                f"- {_names(c['source_modules'])} never {verb} {_names(c['forbidden_modules'])}"
                f"{' (directly)' if c.get('allow_indirect_imports') else ''}  [{c['id']}]"
            )
        elif kind == "protected":
            rules.append(
                f"- {_names(c['protected_modules'])} imported only by "
                f"{_names(c['allowed_importers'])}  [{c['id']}]"
            )
        else:
            rules.append(f"- {title} (a {kind} contract)")
    if rules:
        out += ["Further contracts:", ""]
        out += [textwrap.fill(r, 96, subsequent_indent="  ", break_on_hyphens=False) for r in rules]
    return "\n".join(out).rstrip() + "\n"


def main(argv: Sequence[str]) -> int:
    text = render(contracts())
    if "--check" in argv:
        if not OUTPUT.exists() or OUTPUT.read_text() != text:
            print(f"{OUTPUT} is stale: run python tools/layer_diagram.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
