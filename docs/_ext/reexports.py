"""Sphinx support for TS's re-exporting packages.

Every object is documented once, in the module that defines it (``ts_ir.plan.KernelPlan``).
Packages and the ``task_scheduling`` facade re-export those objects under shorter paths
(``ts_ir.KernelPlan``, ``task_scheduling.plan.KernelPlan``). This extension

* resolves a cross-reference to a re-exported path to the object's documented path (the
  ``missing-reference`` handler), so docstrings may use either spelling, and
* adds the ``ts-reexports`` directive: a table of a module's ``__all__``, each name linked to
  where it is documented, with the first line of its docstring.
"""

from __future__ import annotations

import importlib
import inspect
from types import ModuleType
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util.docutils import SphinxDirective


def _import_object(dotted: str, base: str | None = None) -> tuple[bool, Any]:
    """Look ``dotted`` up as Python would, relative to module ``base`` if given.

    Returns ``(False, None)`` if it does not exist. Attributes win over submodules:
    ``ts_verify.verify`` is the function the package exports, not the module of that name.
    """
    parts = dotted.split(".")
    try:
        if base:
            obj: Any = importlib.import_module(base)
            prefix = base.split(".")
        else:
            obj = importlib.import_module(parts[0])
            prefix, parts = parts[:1], parts[1:]
    except ImportError:
        return False, None
    for part in parts:
        prefix = [*prefix, part]
        if hasattr(obj, part):
            obj = getattr(obj, part)
        elif isinstance(obj, ModuleType):
            try:
                obj = importlib.import_module(".".join(prefix))
            except ImportError:
                return False, None
        else:
            return False, None
    return True, obj


def _documented_path(obj: Any, dotted: str, env: BuildEnvironment) -> str | None:
    """Where ``obj`` (found at ``dotted``) is documented, if that is somewhere else."""
    if isinstance(obj, ModuleType):
        return obj.__name__
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and "<" not in qualname:
        return f"{module}.{qualname}"
    # Data (constants, instances): the documented object of the same name that is this object.
    name = dotted.rpartition(".")[2]

    def is_obj(full: str) -> bool:
        found, candidate = _import_object(full)
        return found and candidate is obj

    matches = [
        full
        for full in env.get_domain("py").objects  # type: ignore[attr-defined]
        if full.endswith("." + name) and full != dotted and is_obj(full)
    ]
    return matches[0] if len(matches) == 1 else None


def resolve_reexport(
    app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.Element
) -> nodes.Element | None:
    """Resolve a Python cross-reference through re-exports to the documented object."""
    if node.get("refdomain") != "py":
        return None
    target: str = node["reftarget"]
    module = node.get("py:module")
    # (where to look it up, the dotted name it has there)
    candidates: list[tuple[str | None, str]] = [(None, target)]
    if module:
        candidates.append((module, f"{module}.{target}"))
    domain = env.get_domain("py")
    for base, candidate in candidates:
        found, obj = _import_object(target, base)
        if not found:
            continue
        documented = _documented_path(obj, candidate, env)
        if documented is None or documented == candidate:
            continue
        for reftype in (node["reftype"], "obj"):
            resolved = domain.resolve_xref(
                env, node["refdoc"], app.builder, reftype, documented, node, contnode
            )
            if resolved is not None:
                return resolved
    return None


class ReexportsDirective(SphinxDirective):
    """``.. ts-reexports:: module``: table of ``module.__all__`` linked to their documentation."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        """Build the table."""
        modname = self.arguments[0]
        module = importlib.import_module(modname)
        # Dunder names (``__version__``) are not API objects with a page of their own.
        names: list[str] = sorted(
            (n for n in getattr(module, "__all__", []) if not n.startswith("__")), key=str.lower
        )
        if not names:
            raise self.error(f"{modname} has no __all__ to list")
        lines = [".. list-table::", "   :widths: 30 70", ""]
        contexts: list[str | None] = []
        for name in names:
            obj = getattr(module, name)
            role = "mod" if isinstance(obj, ModuleType) else "obj"
            summary = ""
            if inspect.isclass(obj) or inspect.isroutine(obj) or isinstance(obj, ModuleType):
                doc = inspect.getdoc(obj) or ""
                summary = doc.strip().split("\n\n")[0].replace("\n", " ")
            lines += [f"   * - :py:{role}:`~{modname}.{name}`", f"     - {summary}"]
            # The summary's references are relative to the module that defines the object.
            defined_in = getattr(obj, "__name__" if role == "mod" else "__module__", None)
            contexts.append(defined_in if isinstance(defined_in, str) else None)
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source=modname), self.content_offset, container)
        rows = list(container.findall(nodes.row))
        for row, context in zip(rows, contexts, strict=True):
            cells = list(row.findall(nodes.entry))
            if context and len(cells) == 2:
                for ref in cells[1].findall(pending_xref):
                    ref["py:module"] = context
                    ref["py:class"] = None
        return container.children


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directive and the cross-reference resolver."""
    app.add_directive("ts-reexports", ReexportsDirective)
    app.connect("missing-reference", resolve_reexport)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
