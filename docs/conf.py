"""Sphinx configuration for the TS documentation."""

from __future__ import annotations

import enum
import sys
from pathlib import Path

from sphinx.application import Sphinx

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

import task_scheduling  # installed by the hatch `docs` env

project = "TS — Task Scheduling"
author = "The TS authors"
copyright = "2025, The TS authors"
release = task_scheduling.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
    "sphinx.ext.doctest",
    "sphinx.ext.viewcode",
    "reexports",
    "error_catalog",
]

exclude_patterns = ["_build"]
nitpicky = True

# --- autodoc / napoleon ---
autodoc_typehints = "description"
autodoc_member_order = "bysource"
autodoc_default_options = {"show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# --- intersphinx: Python only ---
# The CI machine reaches no documentation site, so the Python inventory is read from a copy in
# the repository: the objects.inv of Debian's python3.11-doc package
# (/usr/share/doc/python3.11/html/objects.inv). Links still point at docs.python.org.
_PYTHON_INV = str(Path(__file__).parent / "_intersphinx" / "python3.inv")
intersphinx_mapping = {"python": ("https://docs.python.org/3", _PYTHON_INV)}

# Targets that cannot resolve, each with the reason.
nitpick_ignore: list[tuple[str, str]] = [
    # Internal tracing state of ts_trace._internal.builder: it appears in the constructor
    # signatures of the proxy objects a schedule function receives, which users never construct.
    ("py:class", "Scope"),
    ("py:class", "ScheduleBuilder"),
]

html_theme = "alabaster"
html_static_path: list[str] = []


def _list_enum_members(
    app: object, what: str, name: str, obj: object, skip: bool, options: object
) -> bool | None:
    """Document every member of an enumeration, with or without a docstring of its own."""
    # `obj` is a member of the enumeration being documented (not, say, a dataclass field whose
    # default value happens to be an enum member).
    if what == "class" and isinstance(obj, enum.Enum) and type(obj).__members__.get(name) is obj:
        return False
    return None


def setup(app: Sphinx) -> None:
    """Project-specific hooks."""
    app.connect("autodoc-skip-member", _list_enum_members)
