"""Tensor memory lifetime (Blackwell): every use of TMEM lies between its alloc and its dealloc.

A task's TMEM lifetime is marked by two work calls: ``WorkAttr.TMEM_ALLOC`` (``tcgen05.alloc``
plus the relinquish of the allocation permit) and ``WorkAttr.TMEM_DEALLOC``
(``tcgen05.dealloc``). A *TMEM use* is any other payload work on a resource that owns TMEM
blocks (:attr:`ts_ir.KernelPlan.tmem`): the UMMA that accumulates there, the epilogue's
``tcgen05.ld``. Three mistakes are reported:

* ``TS-V222``: a task allocates and does not free on every path (no dealloc after the alloc in
  the same block, e.g. only under a condition). A CTA that exits holding TMEM leaves the next
  CTA on the SM waiting in ``tcgen05.alloc`` for ever.
* ``TS-V223``: the freeing task itself uses TMEM after its dealloc (later in program order, or
  in the next iteration of a loop that frees without allocating again).
* ``TS-V224``: the dealloc does not happen after another task's last use, or after the freeing
  task's own asynchronous use (``WorkAttr.ASYNC_READ``: an UMMA still in flight) has been
  retired. Happens-before is that of ``ts_verify.aliasing`` (program order plus the
  enabling commit / release of every barrier wait), over runs of the whole kernel for every
  valuation up to the cut-off, so a dealloc that only a ring's phase orders after the
  epilogue's last read is accepted, and one that nothing orders is not.

*Several allocs and deallocs.* A CTA allocates TMEM once: every alloc step also relinquishes
the CTA's allocation permit (``tcgen05.relinquish_alloc_permit``), after which the PTX ISA
makes ``tcgen05.alloc`` illegal, so a run with a second alloc is ``TS-V224`` (``_realloc``,
reported after the checks below, which name a more specific fault where there is one). And
the kernel's TMEM is one allocation at a time: one SMEM word holds its address, which an
alloc writes and a dealloc frees. So in every run two allocs must
have a dealloc ordered between them (else the first allocation is never freed, and the second
overwrites the word) and two deallocs an alloc (else the columns are freed twice); both are
``TS-V224`` (``_ends_overlap``), named at the second end. Then the allocs and the deallocs
each form a chain in happens-before, interleaved, and a use ``m`` is in a lifetime when some
alloc ``a`` happens before it and every dealloc either comes after ``m`` is over or happens
before ``a`` and after another alloc (it ends an earlier lifetime): ``_outside``. That
judges each use against the lifetime that contains it on *every* interleaving. (The check
used to pair the i-th alloc with the i-th dealloc of the run's own interleaving, which is
just one of them: two tasks that each allocate, use and free with nothing between them ran
one after the other and passed.) A plan that makes no alloc step leaves it to the kernel's own
code before the tasks (an alloc that happens before everything); one that does must make it
before every use of the run.

*One work tile is enough* for TS-V224 (:func:`one_tile_proves`) when the kernel's work tiles
are independent: every ring operation lies inside the work-tile loops
(:func:`ts_verify.whole_kernel.tile_local`), each task has at most one, at the top of its
schedule, and every run of one tile balances every ring side by side (each producer of the
ring acquires and commits it, each consumer waits and releases it, all equally often; a task
may be both, as a tile scheduler is of its queue). And the kernel has at most one alloc step
and one dealloc step, in no loop. A run is then each task's steps before its tile loop, its
tiles in order (tile ``t``'s steps read only ``t``'s values), and its steps after; it has one
lifetime, whose alloc and dealloc lie outside every tile and do not depend on them. Take a
run ``L`` of tiles ``v_0 .. v_n`` in which a use ``m`` misses the lifetime, and remove every
tile but ``m``'s (every tile, when ``m`` lies outside them): what is left is the run ``R`` of
the one tile ``v_t`` (or of none) with the same kernel-wide values. Every happens-before
edge of ``R`` holds in ``L``:

* program order: ``R``'s steps of a task are some of ``L``'s, in the same order;
* a wait and its enabling commit: by the balance a tile holds the same indices of a ring on
  either side in every task of the ring, so both lie in the same tile at the same place, in
  ``R`` and in ``L``;
* an acquire of index ``k >= S`` and its enabling release of index ``k - S``: in ``L`` the
  acquire has index ``K = k + d`` (``d``: what the removed tiles before it opened) and the
  release one of at most ``K - S`` (no more removed tiles lie before it), so the release is
  one of the same consumer no later than ``L``'s enabler of the acquire: it happens before
  the acquire in ``L`` too.

So whatever made ``m`` miss the lifetime in ``L`` holds in ``R``: the alloc does not happen
before ``m``, or ``m`` not before the dealloc, or (``m`` an asynchronous use of the freeing
task) no ``ASYNC_WAIT_ALL`` of that task lies between them (``R``'s steps of that task between
the two are some of ``L``'s; the runs keep every wait-all, whatever resource it is called on).
With at most one alloc and one dealloc in a run, ``_ends_overlap`` has no pair to judge,
and ``_outside``'s rule is the one above (no dealloc can end an earlier lifetime: that
needs a second alloc). The runs of zero or one tile, for every value of the per-tile
and kernel-wide symbols up to the cut-off, include ``R`` and are some of the full set's runs:
both sets find the same plans at fault (a run that does not finish is reported as such; the
deadlock check has proven that none does). Where the conditions fail, every valuation up to
the cut-off runs (``reduce=False`` forces that, for tests).
"""

from __future__ import annotations

from collections.abc import Iterator

from ts_ir import (
    ConditionalBlock,
    DomainLoop,
    KernelPlan,
    Node,
    ScheduleStage,
    Step,
    TaskSpec,
    WorkAttr,
    WorkTileLoop,
    iter_steps,
)

# The vector clocks of a run are the aliasing check's (one definition of happens-before).
from ts_verify.clocks import Mark, before, clocks
from ts_verify.diagnostics import Diagnostic, Trace
from ts_verify.simulate import simulate
from ts_verify.systems import System
from ts_verify.whole_kernel import (
    Part,
    distinct_runs,
    make_part,
    part_valuations,
    run_diagnostic,
    sides_balance,
    tile_local,
    too_long_loop,
)

__all__ = ["check_tmem_lifetime", "check_tmem_order", "one_tile_proves", "tmem_users"]

_ALLOC, _DEALLOC = WorkAttr.TMEM_ALLOC, WorkAttr.TMEM_DEALLOC
_ENDS = _ALLOC | _DEALLOC
_ACQUIRE, _COMMIT = ScheduleStage.ProducerAcquire, ScheduleStage.ProducerCommit
_WAIT, _RELEASE = ScheduleStage.ConsumerWait, ScheduleStage.ConsumerRelease


def tmem_users(plan: KernelPlan) -> frozenset[str]:
    """The resources whose work uses TMEM (the owners of the plan's TMEM blocks)."""
    return frozenset(t.owner for t in plan.tmem if t.owner)


def _is_use(step: Step, users: frozenset[str]) -> bool:
    return (
        step.is_work
        and not step.is_auxiliary
        and step.resource in users
        and not step.attrs & (_ALLOC | _DEALLOC)
    )


def _bodies(body: tuple[Node, ...]) -> Iterator[tuple[tuple[Node, ...], bool]]:
    """Every block of a schedule with whether it runs in a loop (may repeat)."""
    stack: list[tuple[tuple[Node, ...], bool]] = [(body, False)]
    while stack:
        nodes, looped = stack.pop()
        yield nodes, looped
        for n in nodes:
            if isinstance(n, (DomainLoop, WorkTileLoop)):
                stack.append((n.body, True))
            elif isinstance(n, ConditionalBlock):
                stack.append((n.body, looped))


def check_tmem_lifetime(plan: KernelPlan) -> Iterator[Diagnostic]:
    """TS-V222 and TS-V223: every alloc freed on every path; no use after a task's own free."""
    users = tmem_users(plan)
    frees_once = [
        (t, n)
        for t in plan.tasks
        for n in t.schedule.body
        if isinstance(n, Step) and n.is_work and n.attrs & _DEALLOC
    ]
    for task in plan.tasks:
        steps = task.schedule.steps()
        allocs = [s for s in steps if s.is_work and s.attrs & _ALLOC]
        deallocs = [s for s in steps if s.is_work and s.attrs & _DEALLOC]
        yield from _freed_on_some_paths(task, deallocs)
        others = [n for t, n in frees_once if t is not task]
        yield from _held_at_exit(task, allocs, others)
        yield from _used_after_free(task, deallocs, users)


def _freed_on_some_paths(task: TaskSpec, deallocs: list[Step]) -> Iterator[Diagnostic]:
    for node, _parents in task.schedule.walk():
        if not isinstance(node, ConditionalBlock):
            continue
        d = next((s for s in iter_steps(node.body) if s in deallocs), None)
        if d is None:
            continue
        yield Diagnostic(
            "TS-V222",
            f"task `{task.name}` frees TMEM at `{d.describe()}` only under "
            f"{node.describe()}: on the other path the CTA exits holding it, and the next CTA "
            "on the SM waits in tcgen05.alloc for ever",
            task=task.name,
            resource=d.resource,
            step=f"#{d.id} {d.describe()}",
            location=d.location,
            fix="free TMEM outside any condition, once after the last use",
        )
        return


def _held_at_exit(task: TaskSpec, allocs: list[Step], others: list[Step]) -> Iterator[Diagnostic]:
    for body, looped in _bodies(task.schedule.body):
        for i, n in enumerate(body):
            if not (isinstance(n, Step) and n in allocs):
                continue
            later = body[i + 1 :]
            if any(isinstance(m, Step) and m.is_work and m.attrs & _DEALLOC for m in later):
                continue
            if others and not looped:
                continue  # another task frees it, once (ordering: TS-V224)
            nested = any(s.attrs & _DEALLOC for s in iter_steps(later))
            how = (
                "frees it only inside a block or loop after it (not on every path)"
                if nested
                else "no task frees it after that"
            )
            yield Diagnostic(
                "TS-V222",
                f"task `{task.name}` allocates TMEM at `{n.describe()}` and {how}: a CTA that "
                "exits holding TMEM leaves the next CTA on the SM waiting in tcgen05.alloc",
                task=task.name,
                resource=n.resource,
                step=f"#{n.id} {n.describe()}",
                location=n.location,
                fix="call the TMEM_DEALLOC work once after the kernel's last TMEM use: in the "
                "allocating block, or at the top level of the last user's schedule",
            )


def _used_after_free(
    task: TaskSpec, deallocs: list[Step], users: frozenset[str]
) -> Iterator[Diagnostic]:
    steps = task.schedule.steps()
    for d in deallocs:
        later = [s for s in steps if s.id > d.id]
        realloc = next((s.id for s in later if s.is_work and s.attrs & _ALLOC), None)
        use = next(
            (s for s in later if _is_use(s, users) and (realloc is None or s.id < realloc)),
            None,
        )
        if use is None:
            use = _next_iteration_use(task, d, users)
        if use is None:
            continue
        yield Diagnostic(
            "TS-V223",
            f"task `{task.name}` uses TMEM at `{use.describe()}` after freeing it at "
            f"`{d.describe()}` (line {d.location.line}): the columns may belong to another "
            "CTA by then",
            task=task.name,
            resource=use.resource,
            step=f"#{use.id} {use.describe()}",
            location=use.location,
            fix="move the TMEM_DEALLOC work after the task's last TMEM use (after the loop)",
        )
        return


def _next_iteration_use(task: TaskSpec, d: Step, users: frozenset[str]) -> Step | None:
    """A use that the next iteration of a loop around the dealloc runs without a new alloc."""
    for node, _parents in task.schedule.walk():
        if not isinstance(node, (DomainLoop, WorkTileLoop)):
            continue
        inside = list(iter_steps(node.body))
        if d not in inside:
            continue
        if any(s.attrs & _ALLOC for s in inside if s.is_work):
            return None
        # The next iteration uses the freed columns again, or at least frees them twice.
        return next((s for s in inside if _is_use(s, users) and s.id < d.id), d)
    return None


def check_tmem_order(plan: KernelPlan, *, reduce: bool = True) -> tuple[list[Diagnostic], int]:
    """TS-V224 for the first use a dealloc may precede, and the runs made.

    Only for a plan free of deadlocks (happens-before is that of runs that finish). With
    ``reduce`` (the default) runs of one work tile stand for all where :func:`one_tile_proves`
    (see the module docstring); ``reduce=False`` runs every valuation up to the cut-off.
    """
    users = tmem_users(plan)
    ends = [s for t in plan.tasks for s in t.schedule.steps() if s.is_work and s.attrs & _ENDS]
    if not any(s.attrs & _DEALLOC for s in ends) or not users:
        return [], 0
    stages = {r.name: r.pipeline.stages for r in plan.resources if r.pipeline is not None}
    # Every ring orders (any ring can carry happens-before from a use to the dealloc), and the
    # alloc and dealloc steps stay in the runs whatever resource they are called on. So do the
    # wait-alls, on whatever resource: one retires a task's asynchronous use before its own
    # dealloc (_done_before), and a part that dropped it would report that use as in flight.
    waits = {
        s.resource
        for t in plan.tasks
        for s in t.schedule.steps()
        if s.is_work and s.attrs & WorkAttr.ASYNC_WAIT_ALL
    }
    touched = users | waits | {s.resource for s in ends}
    rings = tuple(r.name for r in plan.resources if r.name in stages or r.name in touched)
    system = System(rings, tuple(t.name for t in plan.tasks), cycle=False)
    part = make_part(plan, system, sum(stages.values()) + len(plan.tasks))
    too_long = too_long_loop(plan, part)
    if too_long is not None:
        return [too_long], 0
    tasks = {t.name: t for t in plan.tasks}
    own_alloc = not any(s.attrs & _ALLOC for s in ends)
    one = reduce and one_tile_proves(part, tasks)
    runs = 0
    for val, programs in distinct_runs(part, tasks, part_valuations(part, 1 if one else None)):
        outcome = simulate(plan, programs)
        runs += 1
        if outcome.kind != "ok":
            return [run_diagnostic(val, outcome, system)], runs
        marks = clocks(outcome.records, stages)
        trace = Trace(val.describe(), tuple(outcome.events), (), ())
        twice = _ends_overlap(marks)
        if twice is not None:
            return [_overlap(*twice, trace)], runs
        found = _outside(marks, users, own_alloc)
        if found is not None:
            return [_early(*found, trace)], runs
        allocs = [m for m in marks if _is_end(m, _ALLOC)]
        if len(allocs) > 1:  # ordered and otherwise right, but a second alloc is illegal
            return [_realloc(allocs[0], allocs[1], trace)], runs
    return [], runs


def one_tile_proves(part: Part, tasks: dict[str, TaskSpec]) -> bool:
    """Whether runs of one work tile find every early dealloc or late alloc of ``part``.

    The conditions of the module docstring's argument: every ring operation in a work tile,
    at most one work-tile loop per task and at the top of its schedule (its tiles follow each
    other once, in every task alike), every tile balancing every ring side by side
    (:func:`ts_verify.whole_kernel.sides_balance`), and at most one alloc and one dealloc
    step, in no loop (one lifetime per run, the same in every run of the same kernel-wide
    values).
    """
    ends = {_ALLOC: 0, _DEALLOC: 0}
    for sched in part.schedules.values():
        if sum(isinstance(n, WorkTileLoop) for n in sched.body) > 1:
            return False
        for node, parents in sched.walk():
            if isinstance(node, WorkTileLoop) and parents:
                return False
            if not isinstance(node, Step) or not node.attrs & _ENDS:
                continue
            if any(isinstance(p, (DomainLoop, WorkTileLoop)) for p in parents):
                return False
            for attr in ends:
                ends[attr] += bool(node.attrs & attr)
    return max(ends.values()) <= 1 and tile_local(part) and sides_balance(part, tasks)


def _done_before(m: Mark, f: Mark, marks: list[Mark]) -> bool:
    """Use ``m`` is over before event ``f``.

    It happens before ``f``, and an asynchronous use by ``f``'s own task has been retired by a
    wait-all of that task in between.
    """
    if not before(m, f):
        return False
    if m.slot != f.slot or not m.event.op.step.attrs & WorkAttr.ASYNC_READ:
        return True
    return any(
        o.slot == m.slot
        and m.index < o.index < f.index
        and o.event.op.step.attrs & WorkAttr.ASYNC_WAIT_ALL
        for o in marks
    )


def _is_end(m: Mark, attr: WorkAttr) -> bool:
    step = m.event.op.step
    return step.is_work and bool(step.attrs & attr)


def _ends_overlap(marks: list[Mark]) -> tuple[Mark, Mark] | None:
    """Two allocs (deallocs) of a run with no dealloc (alloc) ordered between them.

    The kernel's TMEM is one allocation at a time: its address lives in one SMEM word, which
    a second alloc overwrites (the first allocation is never freed) and which a second
    dealloc frees again. Run order is only one interleaving, so each pair is judged by
    happens-before: ``x`` comes first in the run, so ``y`` cannot happen before it, and the
    pair is safe only when some end of the other kind happens after ``x`` and before ``y``.
    """
    for attr, other in ((_ALLOC, _DEALLOC), (_DEALLOC, _ALLOC)):
        same = [m for m in marks if _is_end(m, attr)]
        between = [m for m in marks if _is_end(m, other)]
        for i, x in enumerate(same):
            for y in same[i + 1 :]:
                if not any(before(x, b) and before(b, y) for b in between):
                    return x, y
    return None


def _outside(
    marks: list[Mark], users: frozenset[str], own_alloc: bool
) -> tuple[Mark, Mark | None, Mark | None] | None:
    """The first use of a run that no lifetime holds, with the end it misses.

    A use ``m`` is held by an alloc ``a`` that happens before it when every dealloc ``f`` of
    the run either comes after ``m`` is over (``_done_before``) or ends an earlier
    lifetime: ``f`` happens before ``a`` and after another alloc. This pairs the use with the
    lifetime that contains it whatever the run's interleaving (the allocs and deallocs
    themselves are ordered by ``_ends_overlap``). ``own_alloc``: the plan makes no alloc
    step, so the kernel's own code allocated before every task ran (an alloc that happens
    before everything and after no dealloc).

    Returned with the alloc that nothing orders before the use (``a`` None: the run has
    none), or the dealloc that may overtake it.
    """
    allocs = [m for m in marks if _is_end(m, _ALLOC)]
    frees = [m for m in marks if _is_end(m, _DEALLOC)]

    def overtakes(m: Mark, a: Mark | None) -> Mark | None:
        """The first dealloc that may end ``a``'s lifetime before ``m`` is over."""
        for f in frees:
            earlier = a is not None and before(f, a) and any(before(b, f) for b in allocs)
            if not earlier and not _done_before(m, f, marks):
                return f
        return None

    for m in marks:
        if not _is_use(m.event.op.step, users):
            continue
        starts: list[Mark | None] = [None] if own_alloc else []
        starts += [a for a in allocs if before(a, m)]
        if not starts:
            return m, allocs[0] if allocs else None, None
        # The latest alloc before the use is the one to report against (the others fail too).
        misses = [overtakes(m, a) for a in starts]
        if all(f is not None for f in misses):
            return m, None, misses[-1]
    return None


def _early(use: Mark, alloc: Mark | None, free: Mark | None, trace: Trace) -> Diagnostic:
    u = use.event.op.step
    edge = free if free is not None else alloc
    if edge is None:
        # The plan allocates, but not in this run before the use (an alloc under a condition
        # or in a loop that did not run): the use reads columns nobody holds.
        return Diagnostic(
            "TS-V224",
            f"task `{use.event.task}` uses TMEM at `{u.describe()}` in a run that makes no "
            "TMEM allocation: the columns belong to no lifetime",
            task=use.event.task,
            resource=u.resource,
            step=f"#{u.id} {u.describe()}",
            location=u.location,
            fix="allocate TMEM on every path, outside any condition or loop that may not run, "
            "before the first use",
            trace=trace,
        )
    e = edge.event.op.step
    if free is not None:
        same = use.event.task == free.event.task
        why = (
            "its asynchronous use is not retired (no ASYNC_WAIT_ALL work between them)"
            if same
            else f"nothing orders task `{use.event.task}`'s use before it"
        )
        what = f"frees TMEM at `{e.describe()}` while `{u.describe()}`"
        fix = (
            "free TMEM after a barrier that the last user signals once it is done (e.g. the "
            "epilogue's release of the accumulator ring, waited for by the freeing task), or "
            "free it in the last user's task"
        )
    else:
        why = f"nothing orders the allocation before task `{use.event.task}`'s use"
        what = f"allocates TMEM at `{e.describe()}` and `{u.describe()}`"
        fix = (
            "allocate in the first user's task before its first use, or make the first use "
            "wait on a ring that the allocating task signals after the allocation"
        )
    return Diagnostic(
        "TS-V224",
        f"task `{edge.event.task}` {what} of task `{use.event.task}` (line {u.location.line}) "
        f"may use it outside its lifetime: {why}",
        task=edge.event.task,
        resource=e.resource,
        step=f"#{e.id} {e.describe()}",
        location=e.location,
        fix=fix,
        trace=trace,
    )


def _realloc(first: Mark, second: Mark, trace: Trace) -> Diagnostic:
    """TS-V224 for a CTA's second alloc: the first relinquished its allocation permit."""
    x, y = first.event.op.step, second.event.op.step
    return Diagnostic(
        "TS-V224",
        f"task `{second.event.task}` allocates TMEM at `{y.describe()}` after `{x.describe()}` "
        f"(line {x.location.line}) of task `{first.event.task}` already did in this CTA: every "
        "alloc gives up the CTA's allocation permit (tcgen05.relinquish_alloc_permit), after "
        "which the PTX ISA makes tcgen05.alloc illegal",
        task=second.event.task,
        resource=y.resource,
        step=f"#{y.id} {y.describe()}",
        location=y.location,
        fix="allocate TMEM once per CTA, before the work-tile loop, and free it once after "
        "the last use; hand its columns between tiles with a ring (e.g. a two-stage "
        "accumulator ring) instead of allocating per tile",
        trace=trace,
    )


def _overlap(first: Mark, second: Mark, trace: Trace) -> Diagnostic:
    """TS-V224 for two allocs (or deallocs) that no end of the other kind separates."""
    x, y = first.event.op.step, second.event.op.step
    alloc = bool(y.attrs & _ALLOC)
    verb, other = ("allocates", "free") if alloc else ("frees", "allocation")
    harm = (
        "the second overwrites the SMEM word that holds the address, and the first "
        "allocation is never freed"
        if alloc
        else "the same columns are freed twice"
    )
    where = "" if first.event.task == second.event.task else f" of task `{first.event.task}`"
    return Diagnostic(
        "TS-V224",
        f"task `{second.event.task}` {verb} TMEM at `{y.describe()}` after "
        f"`{x.describe()}` (line {x.location.line}){where} with no {other} ordered between "
        f"the two: the kernel's TMEM is one allocation at a time, and {harm}",
        task=second.event.task,
        resource=y.resource,
        step=f"#{y.id} {y.describe()}",
        location=y.location,
        fix="make one alloc and one dealloc per lifetime, and order each lifetime's dealloc "
        "before the next alloc: in one task, or through a ring that the freeing task signals "
        "and the allocating task waits on",
        trace=trace,
    )
