"""Errors raised while declaring resources, tracing schedules and assembling kernel plans.

Every error carries a stable code (``TS-Txxx``), the schedule function, the resource and the step
involved, the user's source line, a line saying how to fix it and the ``ts explain`` command that
prints the code's entry of the error catalog. :data:`TRACE_ERROR_CATALOG` maps every code to its
catalog entry (title, explanation, a wrong and a fixed example, fix hint; written in
``ts_trace.catalog_entries``).
Importing this module registers them in the :mod:`ts_ir.catalog` registry, from which the
documentation renders one page per code.
"""

from __future__ import annotations

from ts_ir import CatalogEntry, SourceLocation, register, see_also
from ts_ir import entry as catalog_entry
from ts_trace.catalog_entries import TRACE_ENTRIES

__all__ = [
    "TRACE_ERROR_CATALOG",
    "PlanError",
    "ResourceDeclarationError",
    "ScheduleError",
    "TraceError",
]

register(TRACE_ENTRIES)

TRACE_ERROR_CATALOG: dict[str, CatalogEntry] = {e.code: e for e in TRACE_ENTRIES}
"""Every ``TS-Txxx`` code with its :class:`ts_ir.CatalogEntry` (also in the :mod:`ts_ir.catalog`
registry)."""


class TraceError(Exception):
    """Base of every TS error raised before verification.

    Attributes:
        code: Stable catalog code such as ``TS-T003``.
        detail: What is wrong, in the schedule author's words.
        schedule: Name of the schedule function ("" when not tracing).
        resource: Name of the resource involved ("" when none).
        step: Readable description of the step involved ("" when none).
        location: The user's source line, when known.
        fix: How to fix it.
    """

    def __init__(
        self,
        code: str,
        detail: str,
        *,
        schedule: str = "",
        resource: str = "",
        step: str = "",
        location: SourceLocation | None = None,
        fix: str | None = None,
    ) -> None:
        self.code = code
        self.detail = detail
        self.schedule = schedule
        self.resource = resource
        self.step = step
        self.location = location
        self.fix = fix if fix is not None else catalog_entry(code).fix
        super().__init__(self._render())

    def _render(self) -> str:
        lines = [f"{self.code}: {self.detail}"]
        where = []
        if self.schedule:
            where.append(f"schedule `{self.schedule}`")
        if self.resource:
            where.append(f"resource `{self.resource}`")
        if self.step:
            where.append(f"step `{self.step}`")
        if where:
            lines.append("  in " + ", ".join(where))
        if self.location is not None:
            lines.extend("  " + part for part in self.location.frame().splitlines())
        lines.append(f"  fix: {self.fix}")
        lines.append(f"  see: {see_also(self.code)}")
        return "\n".join(lines)


class ScheduleError(TraceError, ValueError):
    """A grammar or data-flow violation inside a ``@schedule`` function."""


class ResourceDeclarationError(TraceError, TypeError, ValueError):
    """A resource class or its work methods / task-local variables are declared wrongly.

    Both a ``TypeError`` (a wrong declaration) and a ``ValueError`` (what the reference raises).
    """


class PlanError(TraceError, ValueError):
    """Tasks, resources and the dependency graph do not form a kernel plan."""
