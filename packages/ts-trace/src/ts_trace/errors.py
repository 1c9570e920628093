"""Errors raised while declaring resources, tracing schedules and assembling kernel plans.

Every error carries a stable code (``TS-Txxx``), the schedule function, the resource and the step
involved, the user's source line, and a line saying how to fix it. The catalog
:data:`TRACE_ERROR_CATALOG` lists every code with its title and fix; the documentation renders
one entry per code.
"""

from __future__ import annotations

import dataclasses

from ts_ir import SourceLocation

__all__ = [
    "DOCS_URL",
    "TRACE_ERROR_CATALOG",
    "CatalogEntry",
    "PlanError",
    "ResourceDeclarationError",
    "ScheduleError",
    "TraceError",
]

DOCS_URL = "https://ts-kernels.dev/errors"
"""Base address of the error catalog pages (one page per code)."""


@dataclasses.dataclass(frozen=True)
class CatalogEntry:
    """One catalog entry: what the code means and how to fix it in general."""

    code: str
    title: str
    fix: str


def _entries(*rows: tuple[str, str, str]) -> dict[str, CatalogEntry]:
    return {code: CatalogEntry(code, title, fix) for code, title, fix in rows}


TRACE_ERROR_CATALOG: dict[str, CatalogEntry] = _entries(
    (
        "TS-T001",
        "reserved name used as a work method",
        "rename the method; acquire, try_acquire, commit, wait, try_wait and release are "
        "pipeline operations",
    ),
    (
        "TS-T002",
        "unknown work method",
        "call a method decorated with @producer_work or @consumer_work on this resource",
    ),
    (
        "TS-T003",
        "data-flow token used after it went stale",
        "use the token returned by the latest call that writes this output",
    ),
    (
        "TS-T004",
        "data-flow token used outside the block that produced it",
        "produce the value in the enclosing block, or move the use inside the block",
    ),
    (
        "TS-T005",
        "data-flow token from another schedule",
        "tokens only flow within the schedule function that produced them",
    ),
    (
        "TS-T006",
        "value is not a routable data-flow token",
        "declare the output with @consumer_work(returns=...) and pass the token by keyword",
    ),
    (
        "TS-T007",
        "work_tile_loop misplaced",
        "open exactly one work_tile_loop, at the top level of the schedule",
    ),
    (
        "TS-T008",
        "iteration predicate outside a domain loop",
        "put the block inside `with domain_loop(...)`",
    ),
    (
        "TS-T009",
        "when_false on an iteration predicate",
        "use when_true with the complementary predicate; when_false takes work-call outputs only",
    ),
    (
        "TS-T010",
        "nested condition blocks",
        "use sibling blocks; only skippable() may contain a condition block",
    ),
    (
        "TS-T011",
        "skippable() without skip_if",
        "pass skip_if=... to work_tile_loop, and call skippable() inside that loop",
    ),
    ("TS-T012", "bad domain_loop bounds", "give 1 to 3 range-style bounds with a non-zero step"),
    (
        "TS-T013",
        "callable bound is not a class-accessed method",
        "pass MyTask.get_domain "
        "(the function on the class, taking self and the work-tile coordinate)",
    ),
    (
        "TS-T014",
        "condition is not a work-call output",
        "pass a token returned by a "
        "@consumer_work call, or an iteration predicate such as Every(2)",
    ),
    (
        "TS-T015",
        "schedule construct used outside @schedule",
        "call it inside a function decorated with @schedule",
    ),
    (
        "TS-T016",
        "schedule argument is not a resource",
        "pass MemoryResource instances to the schedule function",
    ),
    (
        "TS-T017",
        "bad work-call arguments",
        "work calls take keyword arguments only; TS supplies stage_info",
    ),
    (
        "TS-T018",
        "bad task-local variable",
        "declare `x: TaskLocalVariable = "
        "TaskLocalVariable.uninitialized()` and assign TaskLocalVariable(dtype=..., "
        "default=...) in __post_init__",
    ),
    (
        "TS-T019",
        "bad work declaration",
        "decorate methods as @consumer_work(returns=...) "
        "with task-local outputs of the same resource",
    ),
    (
        "TS-T020",
        "bad kernel declaration",
        "give tasks and resources unique names and list "
        "every resource a schedule uses among the task's sources or destinations",
    ),
)


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
        self.fix = fix if fix is not None else TRACE_ERROR_CATALOG[code].fix
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
        lines.append(f"  see: {DOCS_URL}/{self.code}")
        return "\n".join(lines)


class ScheduleError(TraceError, ValueError):
    """A grammar or data-flow violation inside a ``@schedule`` function."""


class ResourceDeclarationError(TraceError, TypeError):
    """A resource class or its work methods / task-local variables are declared wrongly."""


class PlanError(TraceError, ValueError):
    """Tasks, resources and the dependency graph do not form a kernel plan."""
