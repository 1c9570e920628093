"""Sphinx extension: the error catalog, one page per diagnostic code.

At ``builder-inited`` it imports every TS layer (importing a layer registers its codes in the
:mod:`ts_ir.catalog` registry) and writes, under ``docs/errors/`` (generated, not committed):

* ``<CODE>.rst`` for every registered code: title, code, layer, explanation, a wrong example,
  the fixed example and the fix hint; Sphinx turns it into ``errors/<CODE>.html``
  (:func:`ts_ir.docs_page`), the text that ``ts explain <CODE>`` prints offline;
* ``index.rst``: the shared example prelude and a table of every code, grouped by layer.

Files are rewritten only when their text changes, and pages of codes that no longer exist are
removed. :func:`write_pages` does the work without Sphinx (the tests call it).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sphinx.application import Sphinx

    from ts_ir import CatalogEntry

# The layers that register codes, in the order the index lists them:
# (distribution, module to import, heading, what the codes are).
LAYERS: tuple[tuple[str, str, str, str], ...] = (
    (
        "ts-ir",
        "ts_ir",
        "IR constructor errors (TS-I)",
        "Raised as :class:`~ts_ir.errors.ArgumentError` (a ``ValueError`` and a ``TypeError``) "
        "where a value of the IR is built with an argument of the wrong type or out of range: "
        ":class:`~ts_ir.guards.Every`, pipeline and SMEM specs, loop bounds, enumerations "
        "looked up by value.",
    ),
    (
        "ts-trace",
        "ts_trace",
        "Tracing errors (TS-T)",
        "Raised as exceptions (:class:`~ts_trace.errors.ScheduleError`, "
        ":class:`~ts_trace.errors.ResourceDeclarationError`, :class:`~ts_trace.errors.PlanError`) "
        "while a resource class is defined, a schedule is traced or "
        ":func:`~ts_trace.plan_builder.build_plan` assembles the kernel plan.",
    ),
    (
        "ts-verify",
        "ts_verify",
        "Verifier diagnostics (TS-V)",
        "Reported by :func:`ts_verify.verify` in its :class:`~ts_verify.diagnostics.Report`: "
        "``TS-V1xx`` per task, ``TS-V2xx`` across tasks, ``TS-V3xx`` for the whole kernel.",
    ),
    (
        "ts-codegen",
        "ts_codegen",
        "Code-generation errors (TS-C)",
        "Raised as :class:`~ts_codegen.lower.LoweringError` while a verified plan is lowered "
        "inside the ``@cute.kernel``.",
    ),
    (
        "ts-runtime",
        "ts_runtime",
        "Runtime errors (TS-R) and translation validation (TS-X)",
        "TS-R: raised by :class:`~ts_runtime.task.Task`, "
        ":class:`~ts_runtime.task_manager.TaskManager` and "
        ":class:`~ts_runtime.pipeline_config.PipelineConfig` before anything is compiled "
        "(subclasses of :class:`~ts_runtime.errors.RuntimeConfigError`). TS-X: reported by "
        ":func:`~ts_runtime.ptx_check.check_ptx` as "
        ":class:`~ts_runtime.ptx_check.TranslationError` s where a compiled kernel's PTX does "
        "not run the barrier protocol of its verified plan.",
    ),
)

_SPECIAL = re.compile(r"([\\*_|])")


def _escape(text: str) -> str:
    """Plain text, with the characters that reST would read as markup escaped."""
    return _SPECIAL.sub(r"\\\1", text)


def render_text(text: str) -> str:
    """Catalog text as reST: `code` between single backticks becomes an inline literal."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick: keep it as a character
        return _escape(text).replace("`", "\\`")
    out: list[str] = []
    for i, part in enumerate(parts):
        if i % 2 == 0:
            out.append(_escape(part))
            continue
        literal = f"``{part}``"
        # An inline literal must be set off from word characters around it.
        if out and out[-1][-1:].isalnum():
            literal = "\\ " + literal
        if i + 1 < len(parts) and parts[i + 1][:1].isalnum():
            literal += "\\ "
        out.append(literal)
    return "".join(out)


def _code_block(code: str) -> list[str]:
    lines = [".. code-block:: python", ""]
    lines += [f"   {line}" if line.strip() else "" for line in code.splitlines()]
    return [*lines, ""]


def _heading(text: str, char: str) -> list[str]:
    return [text, char * len(text), ""]


def render_page(entry: CatalogEntry) -> str:
    """The reST page of one catalog entry."""
    lines = [
        f".. This page is generated from the {entry.layer} catalog entry of {entry.code} by",
        "   docs/_ext/error_catalog.py; edit the entry, not this file.",
        "",
        *_heading(f"{entry.code}: {render_text(entry.title)}", "="),
        f"| **Code:** ``{entry.code}``",
        f"| **Layer:** ``{entry.layer}``",
        "",
        render_text(entry.explanation),
        "",
        *_heading("Wrong", "-"),
        *_code_block(entry.wrong),
        *_heading("Right", "-"),
        *_code_block(entry.right),
        f"**Fix:** {render_text(entry.fix)}",
        "",
        "The examples start from the resources and schedules listed in :doc:`index`.",
        "",
    ]
    return "\n".join(lines)


def render_index(entries: Sequence[CatalogEntry], prelude: str, plan: str) -> str:
    """The catalog's index page: the example prelude, then a table of codes per layer."""
    lines = [
        ".. This page is generated by docs/_ext/error_catalog.py.",
        "",
        *_heading("Error catalog", "="),
        "Every error and diagnostic of TS has a stable code, and its message ends with",
        "``see: ts explain <CODE>``: that command prints the code's page below, offline (see",
        ":doc:`../cli`). Each page explains the rule and why it exists, and shows a minimal",
        "wrong schedule next to its fix.",
        "",
        *_heading("The examples", "-"),
        "The examples start from the copy kernel of :doc:`../first_schedule`: these resources",
        "and schedules.",
        "",
        *_code_block(prelude.rstrip("\n")),
        "A verifier example that does not build a ``plan`` itself redefines a schedule or a",
        "resource, and the kernel is then built as below (``plan`` is also the name an example",
        "may start from).",
        "",
        *_code_block(plan.rstrip("\n")),
    ]
    known = {layer for layer, *_ in LAYERS}
    sections = [(layer, heading, about) for layer, _, heading, about in LAYERS]
    sections += [(layer, layer, "") for layer in sorted({e.layer for e in entries} - known)]
    for layer, heading, about in sections:
        mine = [e for e in entries if e.layer == layer]
        if not mine:
            continue
        lines += _heading(heading, "-")
        if about:
            lines += [about, ""]
        lines += [".. list-table::", "   :header-rows: 1", "   :widths: 15 85", ""]
        lines += ["   * - Code", "     - Mistake"]
        for e in mine:
            lines += [f"   * - :doc:`{e.code} <{e.code}>`", f"     - {render_text(e.title)}"]
        lines += ["", ".. toctree::", "   :hidden:", ""]
        lines += [f"   {e.code}" for e in mine]
        lines += [""]
    return "\n".join(lines)


def load_entries() -> tuple[CatalogEntry, ...]:
    """Every registered entry, after importing every layer (which registers its codes)."""
    for _, module, _, _ in LAYERS:
        importlib.import_module(module)
    import ts_ir

    return ts_ir.entries()


def _write(path: Path, text: str) -> None:
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def write_pages(outdir: Path) -> list[Path]:
    """Write ``index.rst`` and one ``<CODE>.rst`` per registered code into ``outdir``.

    Returns the pages of the codes, sorted by code. Pages of codes that are no longer
    registered are deleted.
    """
    from ts_trace.catalog_entries import EXAMPLES_PLAN, EXAMPLES_PRELUDE

    entries = load_entries()
    outdir.mkdir(parents=True, exist_ok=True)
    pages = []
    for e in entries:
        page = outdir / f"{e.code}.rst"
        _write(page, render_page(e))
        pages.append(page)
    for stale in set(outdir.glob("TS-*.rst")) - set(pages):
        stale.unlink()
    _write(outdir / "index.rst", render_index(entries, EXAMPLES_PRELUDE, EXAMPLES_PLAN))
    return pages


def _generate(app: Sphinx) -> None:
    write_pages(Path(app.srcdir) / "errors")


def setup(app: Sphinx) -> dict[str, Any]:
    """Generate the catalog pages before Sphinx reads the sources."""
    app.connect("builder-inited", _generate)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
