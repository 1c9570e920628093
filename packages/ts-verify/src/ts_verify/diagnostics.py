"""Diagnostics, counterexample traces and the verification report.

Every diagnostic has a stable code (``TS-Vxxx``) listed in :data:`VERIFY_CATALOG`, names the
task, the resource, the step and the user's source line, says how to fix it, and ends with the
``ts explain`` command that prints the code's entry of the error catalog. The catalog entries
(explanation, a wrong and a fixed example) are written in ``ts_verify.catalog_entries``;
importing this module registers them in the :mod:`ts_ir.catalog` registry.

Deadlocks and races carry a :class:`Trace`: the interleaving that reaches them and the barrier
states at the end.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Any

from ts_ir import SourceLocation, register, see_also
from ts_verify.catalog_entries import VERIFY_ENTRIES

__all__ = [
    "VERIFY_CATALOG",
    "BarrierState",
    "Diagnostic",
    "Report",
    "Severity",
    "Trace",
    "TraceEvent",
    "VerificationError",
]


class Severity(enum.Enum):
    """How bad a finding is: errors block lowering, warnings do not."""

    ERROR = "error"
    WARNING = "warning"


register(VERIFY_ENTRIES)

VERIFY_CATALOG: dict[str, tuple[str, str]] = {e.code: (e.title, e.fix) for e in VERIFY_ENTRIES}
"""Every ``TS-Vxxx`` code with its title and fix hint (from its :class:`ts_ir.CatalogEntry`)."""


@dataclasses.dataclass(frozen=True)
class TraceEvent:
    """One step of a counterexample interleaving.

    Attributes:
        index: 1-based position in the interleaving.
        task: Task that executed it.
        step_id: The schedule step.
        text: The step and its context (stage, round, loop position).
        location: The step's source line.
        resource: The resource acted on.
        op: The operation (a ``ScheduleStage`` value).
        stage: The ring stage used by a barrier operation (-1 otherwise).
        round: How many times the ring wrapped before this operation (-1 otherwise).
    """

    index: int
    task: str
    step_id: int
    text: str
    location: SourceLocation
    resource: str = ""
    op: str = ""
    stage: int = -1
    round: int = -1


@dataclasses.dataclass(frozen=True)
class BarrierState:
    """One mbarrier at the end of a counterexample.

    Attributes:
        resource: Resource owning the ring.
        barrier: ``full`` or ``empty``.
        stage: Stage index.
        phase: Current phase bit.
        completed: Phases completed so far.
        arrivals: Arrivals received in the current phase.
        expected: Arrivals that complete a phase.
        tx_bytes: Transaction bytes still pending in the current phase.
    """

    resource: str
    barrier: str
    stage: int
    phase: int
    completed: int
    arrivals: int
    expected: int
    tx_bytes: int

    def describe(self) -> str:
        """One line, e.g. ``smem.full[1]: phase 0 (2 done), arrivals 0/1, tx 0``."""
        return (
            f"{self.resource}.{self.barrier}[{self.stage}]: phase {self.phase} "
            f"({self.completed} done), arrivals {self.arrivals}/{self.expected}, "
            f"tx {self.tx_bytes}"
        )


@dataclasses.dataclass(frozen=True)
class Trace:
    """A counterexample: the valuation, the interleaving, the blocked tasks, the barriers.

    Attributes:
        valuation: Trip counts, conditions and skips that lead to the failure.
        events: The interleaving, in order.
        blocked: For each task still running, what it waits for.
        barriers: Every barrier of the involved resources at the end.
    """

    valuation: tuple[tuple[str, str], ...]
    events: tuple[TraceEvent, ...]
    blocked: tuple[tuple[str, str], ...]
    barriers: tuple[BarrierState, ...]

    def as_text(self) -> str:
        """The trace as numbered steps per task, then the blocked tasks and barriers."""
        lines = ["  when: " + (", ".join(f"{k} = {v}" for k, v in self.valuation) or "always")]
        width = max((len(e.task) for e in self.events), default=4)
        for e in self.events:
            lines.append(f"  {e.index:>3}. {e.task:<{width}}  {e.text}  ({e.location})")
        for task, why in self.blocked:
            lines.append(f"  blocked: {task}: {why}")
        lines.extend("  barrier " + b.describe() for b in self.barriers)
        return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class Diagnostic:
    """One finding of the verifier.

    Attributes:
        code: Stable code from :data:`VERIFY_CATALOG`.
        message: What is wrong, in the schedule author's words.
        task: The task involved ("" for kernel-wide findings).
        resource: The resource involved ("").
        step: The step involved, as ``#id resource.label`` ("").
        location: The user's source line.
        fix: How to fix it.
        severity: Error or warning.
        trace: The counterexample for deadlocks and races.
    """

    code: str
    message: str
    task: str = ""
    resource: str = ""
    step: str = ""
    location: SourceLocation | None = None
    fix: str = ""
    severity: Severity = Severity.ERROR
    trace: Trace | None = None

    @property
    def title(self) -> str:
        """The catalog title of the code."""
        return VERIFY_CATALOG[self.code][0]

    def as_text(self) -> str:
        """The diagnostic as a block of text with the code frame and the fix."""
        head = f"{self.severity.value} {self.code} ({self.title}): {self.message}"
        where = [
            f"{label} `{value}`"
            for label, value in (
                ("task", self.task),
                ("resource", self.resource),
                ("step", self.step),
            )
            if value
        ]
        lines = [head]
        if where:
            lines.append("  in " + ", ".join(where))
        if self.location is not None:
            lines.extend("  " + line for line in self.location.frame().splitlines())
        if self.trace is not None:
            lines.append(self.trace.as_text())
        lines.append(f"  fix: {self.fix or VERIFY_CATALOG[self.code][1]}")
        lines.append(f"  see: {see_also(self.code)}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        data = dataclasses.asdict(self)
        data["severity"] = self.severity.value
        data["title"] = self.title
        data["fix"] = self.fix or VERIFY_CATALOG[self.code][1]
        return data


class VerificationError(ValueError):
    """Raised by :meth:`Report.raise_for_errors` when a plan has errors.

    A ``ValueError``, as the reference's verification errors are, so ``except ValueError``
    written for the reference keeps working.
    """

    def __init__(self, report: Report) -> None:
        self.report = report
        super().__init__(report.as_text(errors_only=True))


@dataclasses.dataclass(frozen=True)
class Report:
    """Everything the verifier found for one kernel plan.

    Attributes:
        plan: Name of the verified plan.
        diagnostics: The findings, errors first.
        proven: What was proven, one line per claim (e.g. the deadlock-freedom argument).
        stats: Counters and timings (valuations simulated, events, seconds).
    """

    plan: str
    diagnostics: tuple[Diagnostic, ...]
    proven: tuple[str, ...] = ()
    stats: tuple[tuple[str, float], ...] = ()

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        """The diagnostics of severity error."""
        return tuple(d for d in self.diagnostics if d.severity is Severity.ERROR)

    @property
    def ok(self) -> bool:
        """True when there is no error."""
        return not self.errors

    def codes(self) -> list[str]:
        """The codes of every diagnostic, in order."""
        return [d.code for d in self.diagnostics]

    def raise_for_errors(self) -> None:
        """Raise :class:`VerificationError` if any diagnostic is an error."""
        if not self.ok:
            raise VerificationError(self)

    def as_text(self, *, errors_only: bool = False) -> str:
        """The report as text: a verdict line, then every diagnostic."""
        shown = self.errors if errors_only else self.diagnostics
        verdict = "verified" if self.ok else f"{len(self.errors)} error(s)"
        lines = [f"{self.plan}: {verdict}"]
        if self.ok:
            lines.extend(f"  proven: {p}" for p in self.proven)
        lines.extend(d.as_text() for d in shown)
        return "\n".join(lines)

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON."""
        data = {
            "plan": self.plan,
            "ok": self.ok,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
            "proven": list(self.proven),
            "stats": dict(self.stats),
        }
        return json.dumps(data, indent=indent, default=str)
