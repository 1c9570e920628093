"""Malformed declarations: values of the wrong type or range, caught before any other check.

Plans are frozen data that anyone can build, so a float stage count or a string register count
can reach the verifier. Every later check does arithmetic on these values; checking them first
turns what would be a ``TypeError`` deep inside the verifier into a typed diagnostic naming the
task or resource and the line where it was declared.
"""

from __future__ import annotations

from collections.abc import Iterator

from ts_ir import KernelPlan, Schedule
from ts_verify.diagnostics import Diagnostic

__all__ = ["check_declarations"]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _pipelines(plan: KernelPlan) -> Iterator[Diagnostic]:
    for res in plan.resources:
        p = res.pipeline
        if p is None:
            continue
        if not _is_int(p.stages) or p.stages < 1:
            yield Diagnostic(
                "TS-V214",
                f"`{res.name}` declares stages={p.stages!r}; a ring has a whole number (>= 1) "
                "of stages",
                resource=res.name,
                location=res.location,
                fix="pass stages as an int, e.g. stages=4",
            )
        if not _is_int(p.bytes_per_stage) or p.bytes_per_stage < 0:
            yield Diagnostic(
                "TS-V214",
                f"`{res.name}` declares bytes_per_stage={p.bytes_per_stage!r}; it is a byte "
                "count (an int >= 0)",
                resource=res.name,
                location=res.location,
                fix="pass the bytes one stage receives as an int",
            )
        elif p.type.producer_is_tma and p.bytes_per_stage == 0:
            yield Diagnostic(
                "TS-V214",
                f"`{res.name}` is filled by TMA but expects 0 bytes per stage: the full barrier "
                "completes on the producer's arrival alone, before the data lands, and the "
                "consumer reads a stage still being written",
                resource=res.name,
                location=res.location,
                fix="set bytes_per_stage to the bytes one stage's TMA loads bring",
            )
        for side, group in (("producer", p.producer_group), ("consumer", p.consumer_group)):
            if not _is_int(group.size):
                yield Diagnostic(
                    "TS-V214",
                    f"`{res.name}` has a {side} group of size {group.size!r}; it is a count",
                    resource=res.name,
                    location=res.location,
                    fix="pass the group size as an int",
                )


def _tasks(plan: KernelPlan) -> Iterator[Diagnostic]:
    for t in plan.tasks:
        if not isinstance(t.schedule, Schedule):
            yield Diagnostic(
                "TS-V214",
                f"task `{t.name}` was given {t.schedule!r} as its schedule, not a traced "
                "schedule (was the @schedule function passed without calling it?)",
                task=t.name,
                location=t.location,
                fix="pass my_schedule(resource, ...) — the schedule called with its resources",
            )
        for what, value in (("warp_idx", t.warp_start), ("num_warps", t.num_warps)):
            if not _is_int(value):
                yield Diagnostic(
                    "TS-V205",
                    f"task `{t.name}` has {what}={value!r}; warps are counted in ints",
                    task=t.name,
                    location=t.location,
                    fix=f"pass {what} as an int",
                )
        if t.num_registers is not None and not _is_int(t.num_registers):
            yield Diagnostic(
                "TS-V208",
                f"task `{t.name}` asks for num_registers={t.num_registers!r}; setmaxnreg takes "
                "an int (a multiple of 8 in [24, 256]) or None",
                task=t.name,
                location=t.location,
                fix="pass num_registers as an int, e.g. 232",
            )


def check_declarations(plan: KernelPlan) -> list[Diagnostic]:
    """Every malformed value of the plan; an empty list when all are well typed."""
    return [*_pipelines(plan), *_tasks(plan)]
