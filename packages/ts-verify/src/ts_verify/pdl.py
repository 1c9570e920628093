"""Programmatic dependent launch (PDL): where the grid-dependency waits and triggers are.

With PDL, the next kernel on a stream may start while the previous one still runs. Its
``griddepcontrol.wait`` (work marked ``WorkAttr.GRID_WAIT``, e.g. ``PdlWaitBarrier.wait_griddep``)
blocks until the previous kernel has finished and its writes are visible; anything read before
it may be stale. ``griddepcontrol.launch_dependents`` (``WorkAttr.GRID_LAUNCH``,
``PdlLaunchBarrier.launch_griddep``) only lets the next kernel start early: it never changes what
a kernel computes, so misplacing it costs time, not correctness.

Which data come from the previous kernel is the dependency graph's to say: a resource ``R`` with
a wait resource among its upstreams (``{R: [gmem, pdl_wait]}``) is made, after the wait, from its
other upstreams. So:

* **TS-V230** (error): in every task that produces such an ``R``, a grid wait must *dominate*
  every payload work call on ``R`` and on ``R``'s other upstreams (the reads of the previous
  kernel's output): it runs before them on every path. In a structured schedule a step ``w``
  dominates a later step ``s`` exactly when the loops and conditional blocks around ``w`` are
  also around ``s`` (a wait inside a loop that may run zero times, or under a runtime condition,
  does not cover what comes after the block). Auxiliary work (no payload) is exempt.
* **TS-V231** (warning): a launch trigger that runs more than once per CTA (in a loop, or twice
  in a task's schedule) or only on some paths. The trigger takes effect at its first execution
  in the CTA, so inside a loop it fires after the first iteration, not after the last one.

Both are judged from the schedules alone, linearly in the steps.
"""

from __future__ import annotations

from collections.abc import Iterator

from ts_ir import (
    ConditionalBlock,
    DomainLoop,
    KernelPlan,
    ResourceSpec,
    Step,
    TaskSpec,
    WorkAttr,
    WorkTileLoop,
    iter_nodes,
)
from ts_verify.diagnostics import Diagnostic, Severity

Container = DomainLoop | WorkTileLoop | ConditionalBlock

__all__ = ["check_pdl", "grid_wait_resources"]


def grid_wait_resources(plan: KernelPlan) -> frozenset[str]:
    """The resources with a work method marked ``WorkAttr.GRID_WAIT`` (the PDL waits)."""
    return frozenset(
        r.name for r in plan.resources if any(w.attrs & WorkAttr.GRID_WAIT for w in r.work)
    )


def _steps_with_parents(task: TaskSpec) -> list[tuple[Step, tuple[Container, ...]]]:
    return [(n, p) for n, p in iter_nodes(task.schedule.body) if isinstance(n, Step)]


def _dominates(
    wait: tuple[Step, tuple[Container, ...]], step: Step, parents: tuple[Container, ...]
) -> bool:
    """True when ``wait`` runs before ``step`` on every path that reaches ``step``."""
    w, w_parents = wait
    if w.id >= step.id or len(w_parents) > len(parents):
        return False
    # Containers are frozen dataclasses compared by value: compare by identity, so two equal
    # loops written one after the other are two blocks.
    return all(a is b for a, b in zip(w_parents, parents[: len(w_parents)], strict=True))


def _block(parents: tuple[Container, ...]) -> str:
    inner = parents[-1]
    if isinstance(inner, ConditionalBlock):
        return f"under {inner.describe()}"
    if isinstance(inner, (DomainLoop, WorkTileLoop)):
        return f"inside {inner.describe()}"
    return "in a nested block"  # pragma: no cover - every container is one of the above


def _dependent_reads(
    plan: KernelPlan, waits: frozenset[str]
) -> dict[str, tuple[frozenset[str], str]]:
    """For each PDL-dependent resource: the resources whose reads need the wait, and the wait."""
    out: dict[str, tuple[frozenset[str], str]] = {}
    for res in plan.resources:
        ups = plan.upstreams_of(res.name)
        gate = next((u for u in ups if u in waits), None)
        if gate is None:
            continue
        out[res.name] = (frozenset({res.name, *ups}) - waits, gate)
    return out


def _reads_before_wait(plan: KernelPlan, waits: frozenset[str]) -> Iterator[Diagnostic]:
    dependent = _dependent_reads(plan, waits)
    for task in plan.tasks:
        made = [r for r in task.destinations if r in dependent]
        if not made:
            continue
        steps = _steps_with_parents(task)
        task_waits = [(s, p) for s, p in steps if s.is_work and s.attrs & WorkAttr.GRID_WAIT]
        guarded = frozenset().union(*(dependent[r][0] for r in made))
        for step, parents in steps:
            if not step.is_work or step.is_auxiliary or step.resource not in guarded:
                continue
            if step.attrs & (WorkAttr.GRID_WAIT | WorkAttr.GRID_LAUNCH):
                continue
            if any(_dominates(w, step, parents) for w in task_waits):
                continue
            yield _missing_wait(plan, task, step, made, dependent, task_waits)
            break  # the first unordered read of the task says it; the fix covers the rest


def _missing_wait(
    plan: KernelPlan,
    task: TaskSpec,
    step: Step,
    made: list[str],
    dependent: dict[str, tuple[frozenset[str], str]],
    task_waits: list[tuple[Step, tuple[Container, ...]]],
) -> Diagnostic:
    target = next(r for r in made if step.resource in dependent[r][0])
    gate = dependent[target][1]
    label = _wait_label(plan.resource(gate))
    if not task_waits:
        where = f"task `{task.name}` never runs `{gate}.{label}()`"
    else:
        w, w_parents = task_waits[0]
        if w.id > step.id:
            where = f"its `{w.describe()}` (#{w.id}) comes after it"
        else:
            where = (
                f"its `{w.describe()}` (#{w.id}) is {_block(w_parents)}, so it does not run on "
                "every path to it"
            )
    return Diagnostic(
        "TS-V230",
        f"{step.describe()} (#{step.id}) may read the previous kernel's output before the grid "
        f"dependency wait: the dependency graph makes `{target}` from `{gate}`, but {where}; "
        "launched with PDL, the read can see data that kernel has not written yet",
        task=task.name,
        resource=step.resource,
        step=f"#{step.id} {step.describe()}",
        location=step.location,
        fix=f"call {gate}.{label}() at the top of the schedule of `{task.name}`, before its "
        "first read (outside any loop or when_* block)",
    )


def _wait_label(res: ResourceSpec) -> str:
    return next((w.label for w in res.work if w.attrs & WorkAttr.GRID_WAIT), "wait_griddep")


def _launch_repeats(plan: KernelPlan) -> Iterator[Diagnostic]:
    for task in plan.tasks:
        launches = [
            (s, p)
            for s, p in _steps_with_parents(task)
            if s.is_work and s.attrs & WorkAttr.GRID_LAUNCH
        ]
        for n, (step, parents) in enumerate(launches):
            loops = [p for p in parents if isinstance(p, (DomainLoop, WorkTileLoop))]
            conds = [p for p in parents if isinstance(p, ConditionalBlock)]
            if loops:
                why = (
                    f"it is {_block((loops[-1],))}: the trigger takes effect the first time a "
                    "CTA runs it, after the first iteration, and the later ones do nothing"
                )
            elif n:
                first = launches[0][0]
                why = f"the task already triggered at #{first.id}; the second does nothing"
            elif conds:
                why = (
                    f"it is {_block((conds[-1],))}: a CTA that skips it triggers only when it exits"
                )
            else:
                continue
            yield Diagnostic(
                "TS-V231",
                f"{step.describe()} (#{step.id}) does not run exactly once per CTA: {why}",
                task=task.name,
                resource=step.resource,
                step=f"#{step.id} {step.describe()}",
                location=step.location,
                severity=Severity.WARNING,
                fix="trigger once, at the top level of the schedule, after the task's last "
                "work that the next kernel need not wait for",
            )


def check_pdl(plan: KernelPlan) -> Iterator[Diagnostic]:
    """TS-V230 (a read of the previous kernel's output not after the grid wait), TS-V231."""
    waits = grid_wait_resources(plan)
    if waits:
        yield from _reads_before_wait(plan, waits)
    yield from _launch_repeats(plan)
