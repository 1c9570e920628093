"""Per-task checks: pipeline brackets, roles, and balance of loops and blocks.

Each task's schedule is interpreted abstractly. The state holds, for every (resource, side),
how many stages are open (acquired but not committed, or waited but not released) and whether
a ``try_*`` probe waits for its blocking call. The rules:

* ``commit`` / ``release`` need an open stage; ``acquire`` / ``wait`` open one. Several open
  stages are allowed (a consumer may release the previous stage after waiting for the next).
* Non-auxiliary work on a pipelined resource needs an open stage on its side.
* A ``try_*`` must be followed by its blocking call on the same resource and side, in the same
  block, with no other operation on that side in between.
* Every condition block, every loop iteration and every work tile must leave the state as it
  found it, so that any trip count (including 0) and any condition value keep the brackets
  balanced. ``first_iter()`` / ``last_iter()`` blocks may open and close a stage across the
  loop (a software-pipelined prologue/epilogue): the loop is checked for one iteration, and for
  the first, a middle and the last of several.
* Blocks of one level guarded by the same runtime condition (``when_true(f)`` /
  ``when_false(f)``, or ``skippable()`` inside one work tile) run together or not at all: the
  condition is one value per work tile. Such blocks may carry a stage from one to the next;
  the level is checked for each value of the conditions its blocks share and must leave the
  same state for all of them.
* At the end of the schedule nothing is open.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Hashable, Iterable

from ts_ir import (
    ConditionalBlock,
    DomainLoop,
    Every,
    FirstIteration,
    IterationPredicate,
    KernelPlan,
    LastIteration,
    Node,
    OpaqueCondition,
    ResourceSpec,
    Role,
    ScheduleStage,
    Skippable,
    Step,
    TaskSpec,
    WorkAttr,
    WorkTileLoop,
)
from ts_verify.diagnostics import Diagnostic

__all__ = ["check_task_brackets"]

_ASYNC_WAITS = WorkAttr.ASYNC_WAIT_ALL | WorkAttr.ASYNC_WAIT_PRIOR

Key = tuple[str, Role]


@dataclasses.dataclass(frozen=True)
class _Side:
    """The bracket state of one side of one resource."""

    open_steps: tuple[Step, ...] = ()
    pending_try: Step | None = None
    # Per open stage: 0, or the sequence number of an asynchronous read still using it.
    async_reads: tuple[int, ...] = ()

    def marks(self) -> tuple[int, ...]:
        """``async_reads`` padded to one entry per open stage."""
        pad = len(self.open_steps) - len(self.async_reads)
        return self.async_reads + (0,) * pad

    def same_as(self, other: _Side) -> bool:
        return (
            len(self.open_steps) == len(other.open_steps)
            and (self.pending_try is None) == (other.pending_try is None)
            and tuple(map(bool, self.marks())) == tuple(map(bool, other.marks()))
        )


State = dict[Key, _Side]


def _step_text(step: Step) -> str:
    return f"#{step.id} {step.describe()}"


class _Checker:
    def __init__(self, plan: KernelPlan, task: TaskSpec) -> None:
        self.plan = plan
        self.task = task
        self.resources: dict[str, ResourceSpec] = {r.name: r for r in plan.resources}
        self.found: dict[tuple[str, int, str], Diagnostic] = {}
        self.async_seq = 0
        # Asynchronous reads by step id: their sequence numbers (the latest pass's).
        self.async_by_step: dict[int, int] = {}
        # Buffers without a pipeline that an asynchronous read (a TMA store, a WGMMA) may still
        # be reading: resource -> (sequence number, the reading step).
        self.unpiped: dict[str, tuple[int, Step]] = {}
        self.quiet = False  # a second pass over a loop body: only those reads are reported

    # -- reporting ------------------------------------------------------------------------
    def report(
        self, code: str, step: Step, message: str, fix: str = "", *, loud: bool = False
    ) -> None:
        if self.quiet and not loud:
            return
        key = (code, step.id, step.resource)
        if key not in self.found:
            self.found[key] = Diagnostic(
                code,
                message,
                task=self.task.name,
                resource=step.resource,
                step=_step_text(step),
                location=step.location,
                fix=fix,
            )

    # -- steps ----------------------------------------------------------------------------
    def step(self, step: Step, state: State) -> None:
        res = self.resources.get(step.resource)
        if res is None:
            self.report("TS-V212", step, f"`{step.resource}` is not a resource of the kernel")
            return
        role = step.stage.role
        key = (step.resource, role)
        side = state.get(key, _Side())
        self._check_role(step, res, role)
        if side.pending_try is not None and not self._completes_try(step, side.pending_try):
            self._unfinished_try(side.pending_try, f"{_step_text(step)} comes first")
            side = dataclasses.replace(side, pending_try=None)
        if res.pipeline is None and not step.stage.is_pipeline_op:
            self._unpiped(step, state)
            return
        if step.stage.is_pipeline_op:
            if res.pipeline is None:
                self.report(
                    "TS-V108",
                    step,
                    f"{step.describe()}(): `{res.name}` has no pipeline, so it has no stages to "
                    f"{step.stage.op_name}",
                )
                return
            side = self._pipeline_op(step, side)
        elif step.attrs & _ASYNC_WAITS:
            self._async_wait(step, state)
            return
        elif res.pipeline is not None and not step.is_auxiliary and not side.open_steps:
            code, bracket = (
                ("TS-V106", "acquire()/commit()")
                if role is Role.PRODUCER
                else ("TS-V107", "wait()/release()")
            )
            self.report(
                code,
                step,
                f"{step.describe()} runs outside a {bracket} bracket of `{res.name}`, so it may "
                "touch a stage the other side is still using",
            )
        elif side.open_steps and (
            step.attrs & WorkAttr.ASYNC_READ
            or (
                # On a TmaWgmma pipeline the consumer's work is the WGMMA reading the stage.
                role is Role.CONSUMER
                and res.pipeline is not None
                and res.pipeline.type.consumer_reads_async
                and not step.is_auxiliary
            )
        ):
            self.async_seq += 1
            seq = self.async_seq
            # One asynchronous operation reads every stage its inputs came from: a WGMMA issued
            # on A's stage with B's stage (a token routed from a read of B, itself marked) keeps
            # reading B's stage too, until the wait_group that retires this one.
            olds = {self.async_by_step.get(r.source_step, 0) for r in step.inputs} - {0}
            if olds:
                for k, s in list(state.items()):
                    if k != key and olds & set(s.marks()):
                        joined = tuple(seq if m in olds else m for m in s.marks())
                        state[k] = dataclasses.replace(s, async_reads=joined)
            marks = tuple(seq if m in olds else m for m in side.marks())
            side = dataclasses.replace(side, async_reads=(*marks[:-1], seq))
            self.async_by_step[step.id] = seq
        state[key] = side

    def _unpiped(self, step: Step, state: State) -> None:
        """A buffer without a pipeline: an asynchronous read must retire before a rewrite."""
        if step.attrs & _ASYNC_WAITS:
            # Its own wait (cp.async.bulk.wait_group.read on the buffer) retires the read.
            self._async_wait(step, state)
            mine = self.unpiped.get(step.resource)
            newest = max((seq for seq, _ in self.unpiped.values()), default=0)
            if mine is not None and not (
                step.attrs & WorkAttr.ASYNC_WAIT_PRIOR and mine[0] == newest
            ):
                del self.unpiped[step.resource]
        elif step.attrs & WorkAttr.ASYNC_READ:
            self.async_seq += 1
            self.unpiped[step.resource] = (self.async_seq, step)
        elif step.stage.role is Role.PRODUCER and step.is_work and not step.is_auxiliary:
            pending = self.unpiped.get(step.resource)
            if pending is not None:
                read = pending[1]
                self.report(
                    "TS-V113",
                    step,
                    f"{step.describe()}() rewrites `{step.resource}` while the asynchronous "
                    f"read {read.describe()}() (line {read.location.line}) may still be "
                    "reading it",
                    fix="run work marked WorkAttr.ASYNC_WAIT_ALL (or ASYNC_WAIT_PRIOR, when a "
                    f"newer read exists) before {step.describe()}()",
                    loud=True,
                )

    def _async_wait(self, step: Step, state: State) -> None:
        """Retire asynchronous reads: all of them, or all but the newest."""
        keep = 0
        if step.attrs & WorkAttr.ASYNC_WAIT_PRIOR:
            keep = max((m for side in state.values() for m in side.marks()), default=0)
        for key, side in state.items():
            marks = tuple(m if m == keep and keep else 0 for m in side.marks())
            state[key] = dataclasses.replace(side, async_reads=marks)

    def _skip(self, step: Step, side: _Side) -> None:
        """``skip_stage()`` moves the wait and release cursors together: no stage may be held.

        A held stage's ``release()`` would then arrive on the stage after it, and the stage
        itself would never be freed.
        """
        pipeline = self.resources[step.resource].pipeline
        if pipeline is not None and (pipeline.interleave > 1 or pipeline.strides is not None):
            self.report(
                "TS-V115",
                step,
                f"{step.describe()}() on `{step.resource}`, whose stages are dealt out to "
                "interleaved lanes: a skipped stage's lane is ambiguous",
                fix=f"give `{step.resource}` interleave stride 1, or wait for and release the "
                "stage",
            )
        if side.open_steps:
            held = side.open_steps[0]
            self.report(
                "TS-V115",
                step,
                f"{step.describe()}() while this task still holds a stage of "
                f"`{step.resource}` ({held.describe()}, line {held.location.line}): the "
                "release of that stage would arrive on the next one",
                fix=f"release the held stage before {step.resource}.skip_stage()",
            )

    def _check_role(self, step: Step, res: ResourceSpec, role: Role) -> None:
        if role is Role.PRODUCER and res.name not in self.task.destinations:
            self.report(
                "TS-V109",
                step,
                f"task `{self.task.name}` runs {step.describe()} (a producer operation) but "
                f"`{res.name}` is not among its dst_resources",
            )
        if role is Role.CONSUMER and res.name not in self.task.sources:
            self.report(
                "TS-V110",
                step,
                f"task `{self.task.name}` runs {step.describe()} (a consumer operation) but "
                f"`{res.name}` is not among its src_resources",
            )

    @staticmethod
    def _completes_try(step: Step, pending: Step) -> bool:
        return (pending.stage, step.stage) in (
            (ScheduleStage.ProducerTryAcquire, ScheduleStage.ProducerAcquire),
            (ScheduleStage.ConsumerTryWait, ScheduleStage.ConsumerWait),
        )

    def _unfinished_try(self, pending: Step, why: str) -> None:
        blocking = "acquire" if pending.stage is ScheduleStage.ProducerTryAcquire else "wait"
        self.report(
            "TS-V105",
            pending,
            f"{pending.describe()}() is not directly followed by {pending.resource}."
            f"{blocking}() ({why}); a later blocking call would reuse a stale probe result",
        )

    def _pipeline_op(self, step: Step, side: _Side) -> _Side:
        stage = step.stage
        if stage.is_try:
            return dataclasses.replace(side, pending_try=step)
        if stage.is_skip:
            self._skip(step, side)
            return side
        if stage in (ScheduleStage.ProducerAcquire, ScheduleStage.ConsumerWait):
            return _Side((*side.open_steps, step), None, (*side.marks(), 0))
        if not side.open_steps:
            if stage is ScheduleStage.ProducerCommit:
                self.report(
                    "TS-V101",
                    step,
                    f"{step.describe()}() commits a stage of `{step.resource}` that this task "
                    "did not acquire",
                )
            else:
                self.report(
                    "TS-V102",
                    step,
                    f"{step.describe()}() releases a stage of `{step.resource}` that this task "
                    "did not wait for (or already released)",
                )
            return side
        marks = side.marks()
        if marks[0]:
            verb = "commit" if stage is ScheduleStage.ProducerCommit else "release"
            self.report(
                "TS-V113",
                step,
                f"{step.describe()}() would {verb} stage {side.open_steps[0].describe()} "
                "while an asynchronous read of it (WorkAttr.ASYNC_READ) may still be running",
                fix="run work marked WorkAttr.ASYNC_WAIT_ALL (or ASYNC_WAIT_PRIOR, when a newer "
                f"read exists) before {step.resource}.{verb}()",
            )
        return _Side(side.open_steps[1:], None, marks[1:])

    # -- structure ------------------------------------------------------------------------
    def body(self, nodes: Iterable[Node], state: State, position: str) -> State:
        nodes = tuple(nodes)
        shared = _shared_conditions(nodes)
        if not shared or len(shared) > MAX_SHARED_CONDITIONS:
            return self._walk(nodes, state, position, {})
        # Blocks sharing a condition run together: the level may carry a stage from one to
        # the next when it ends the same for every value of the shared conditions (decided
        # quietly, then walked for real). Otherwise each block must balance on its own, and
        # the errors point at the block that does not.
        assignments = [
            dict(zip(shared, values, strict=True))
            for values in itertools.product((True, False), repeat=len(shared))
        ]
        quiet, self.quiet = self.quiet, True
        try:
            outs = [self._walk(nodes, state, position, a) for a in assignments]
        finally:
            self.quiet = quiet
        if any(not _same(outs[0], o) for o in outs[1:]):
            return self._walk(nodes, state, position, {})
        for a in assignments:
            self._walk(nodes, state, position, a)
        return outs[0]

    def _walk(
        self, nodes: tuple[Node, ...], state: State, position: str, values: dict[Hashable, bool]
    ) -> State:
        state = dict(state)
        for node in nodes:
            if isinstance(node, Step):
                self.step(node, state)
            elif isinstance(node, DomainLoop):
                state = self.loop(node, state)
            elif isinstance(node, WorkTileLoop):
                after = self.body(node.body, state, "tile")
                self.balanced(node.body, state, after, "one work tile")
                self.again(node.body, after, "tile")
            else:
                cond = _condition(node)
                if cond is not None and cond[0] in values:
                    if values[cond[0]] == cond[1]:
                        state = self.body(node.body, state, "inner")
                else:
                    state = self.block(node, state, position)
        self.close_tries(nodes, state)
        return state

    def again(self, nodes: tuple[Node, ...], state: State, position: str) -> None:
        """A second iteration, when a read of a buffer without a pipeline is still pending.

        A rewrite at the top of the next iteration races with it (only that is reported).
        """
        if not self.unpiped or self.quiet:
            return
        self.quiet = True
        try:
            self.body(nodes, state, position)
        finally:
            self.quiet = False

    def close_tries(self, nodes: Iterable[Node], state: State) -> None:
        steps = {s.id for s in nodes if isinstance(s, Step)}
        for key, side in list(state.items()):
            if side.pending_try is not None and side.pending_try.id in steps:
                self._unfinished_try(side.pending_try, "the block ends first")
                state[key] = dataclasses.replace(side, pending_try=None)

    def block(self, node: ConditionalBlock, state: State, position: str) -> State:
        guard = node.guard
        if position.startswith("exact ") and isinstance(guard, IterationPredicate):
            # Iteration ``i`` of ``n`` of a constant loop run exactly (see ``loop``).
            _, i, n = position.split()
            return self.body(node.body, state, "inner") if guard.fires(int(i), int(n)) else state
        if isinstance(guard, (FirstIteration, LastIteration)) or _after_first(guard):
            if isinstance(guard, FirstIteration):
                wanted: tuple[str, ...] = ("only", "first")
            elif isinstance(guard, LastIteration):
                wanted = ("only", "last")
            else:  # every iteration but the first: the complement of a first_iter() edge
                wanted = ("middle", "last")
            return self.body(node.body, state, "inner") if position in wanted else state
        after = self.body(node.body, state, "inner")
        self.balanced(node.body, state, after, f"the `{guard.describe()}` block")
        return state

    def loop(self, node: DomainLoop, entry: State) -> State:
        trips = node.static_trip_count()
        if trips is not None and trips <= EXACT_LOOP_MAX and _lagged(node):
            # A constant loop with a lagged block (``every(1, start=L)`` releasing the stage
            # of L iterations ago): run it iteration by iteration; the stages it leaves open
            # must be closed after it (checked where they are).
            state = entry
            for i in range(trips):
                state = self.body(node.body, state, f"exact {i} {trips}")
            return state
        has_edges = any(
            isinstance(n, ConditionalBlock)
            and (isinstance(n.guard, (FirstIteration, LastIteration)) or _after_first(n.guard))
            for n in node.body
        )
        if not has_edges:
            after = self.body(node.body, entry, "middle")
            self.balanced(node.body, entry, after, "one loop iteration")
            self.again(node.body, after, "middle")
            return entry
        only = self.body(node.body, entry, "only")
        self.balanced(node.body, entry, only, "a loop that runs once", code="TS-V112")
        steady = self.body(node.body, entry, "first")
        middle = self.body(node.body, steady, "middle")
        self.balanced(node.body, steady, middle, "a middle loop iteration", code="TS-V112")
        last = self.body(node.body, steady, "last")
        self.balanced(node.body, entry, last, "a loop that runs several times", code="TS-V112")
        return entry

    def balanced(
        self, nodes: tuple[Node, ...], before: State, after: State, what: str, code: str = ""
    ) -> None:
        """Report each side whose open-stage count differs between ``before`` and ``after``.

        ``code`` forces the code (loop edge cases); condition blocks get TS-V111; plain loop
        iterations and tiles get the missing-commit/release or extra-commit/release codes.
        """
        block = what.startswith("the `")
        for key in sorted(set(before) | set(after), key=lambda k: (k[0], k[1].value)):
            b, a = before.get(key, _Side()), after.get(key, _Side())
            if b.same_as(a):
                continue
            resource, role = key
            producer = role is Role.PRODUCER
            close = "commit" if producer else "release"
            if len(a.open_steps) > len(b.open_steps):
                opener = a.open_steps[-1]
                default = "TS-V103" if producer else "TS-V104"
                self.report(
                    code or ("TS-V111" if block else default),
                    opener,
                    f"{opener.describe()}() opens a stage of `{resource}` that is not "
                    f"{_past(close)} by the end of {what}",
                    fix=f"call {resource}.{close}() before the end of {what}",
                )
                continue
            first = _first_step(nodes, resource, role)
            if first is not None:
                default = "TS-V101" if producer else "TS-V102"
                self.report(
                    code or ("TS-V111" if block else default),
                    first,
                    f"{what} {close}s more stages of `{resource}` than it opens",
                )


MAX_SHARED_CONDITIONS = 6
"""Conditions shared by blocks of one level checked value by value (2**6 walks); beyond that
every block must balance on its own."""


def _condition(node: Node) -> tuple[Hashable, bool] | None:
    """A block's runtime condition, one value per work tile, and the value that runs it."""
    if not isinstance(node, ConditionalBlock):
        return None
    if isinstance(node.guard, Skippable):
        return ("skippable",), True
    if isinstance(node.guard, OpaqueCondition):
        return ("condition", node.guard.key), not node.guard.negated
    return None


def _shared_conditions(nodes: tuple[Node, ...]) -> list[Hashable]:
    """Conditions that guard more than one block of ``nodes``, in order."""
    seen: dict[Hashable, int] = {}
    for node in nodes:
        cond = _condition(node)
        if cond is not None:
            seen[cond[0]] = seen.get(cond[0], 0) + 1
    return [key for key, n in seen.items() if n > 1]


def _same(a: State, b: State) -> bool:
    return all(a.get(k, _Side()).same_as(b.get(k, _Side())) for k in set(a) | set(b))


EXACT_LOOP_MAX = 4096
"""Constant loops with deeper lags up to this many iterations are checked iteration by iteration."""


def _net(nodes: Iterable[Node]) -> dict[Key, int]:
    """Stages opened minus stages closed, per (resource, side), ignoring structure."""
    out: dict[Key, int] = {}
    for node in nodes:
        if isinstance(node, Step):
            if node.stage.is_pipeline_op and not node.stage.is_try:
                opens = node.stage in (ScheduleStage.ProducerAcquire, ScheduleStage.ConsumerWait)
                key = (node.resource, node.stage.role)
                out[key] = out.get(key, 0) + (1 if opens else -1)
        else:
            for key, n in _net(node.body).items():
                out[key] = out.get(key, 0) + n
    return out


def _lagged(loop: DomainLoop) -> bool:
    """A direct ``every(1, start=L)`` block, ``L >= 1``, that opens or closes on net.

    ``L = 1`` counts too: a constant loop that releases the previous iteration's stage and
    the last one *after* the loop (not in a ``last_iter()`` block) is right, and only an
    exact run shows it (the edge cases of ``loop`` expect the last stage closed inside).
    """
    return any(
        isinstance(n, ConditionalBlock)
        and isinstance(n.guard, Every)
        and n.guard.period == 1
        and n.guard.start >= 1
        and any(_net(n.body).values())
        for n in loop.body
    )


def _after_first(guard: object) -> bool:
    """``every(1, start=1)``: every iteration but the first (a lagged release's guard)."""
    return isinstance(guard, Every) and guard.period == 1 and guard.start == 1


def _past(verb: str) -> str:
    return {"commit": "committed", "release": "released"}[verb]


def _first_step(nodes: Iterable[Node], resource: str, role: Role) -> Step | None:
    for node in nodes:
        if isinstance(node, Step):
            if node.resource == resource and node.stage.role is role:
                return node
        else:
            found = _first_step(node.body, resource, role)
            if found is not None:
                return found
    return None


def check_task_brackets(plan: KernelPlan, task: TaskSpec) -> list[Diagnostic]:
    """Check one task's schedule; return the diagnostics in program order."""
    checker = _Checker(plan, task)
    end = checker.body(task.schedule.body, {}, "top")
    for key, side in end.items():
        for opener in side.open_steps:
            role = key[1]
            code = "TS-V103" if role is Role.PRODUCER else "TS-V104"
            close = "commit" if role is Role.PRODUCER else "release"
            checker.report(
                code,
                opener,
                f"{opener.describe()}() opens a stage of `{key[0]}` that is never {_past(close)} "
                "before the schedule ends",
                fix=f"call {key[0]}.{close}() after the work on the stage",
            )
    return sorted(checker.found.values(), key=lambda d: d.location.line if d.location else 0)
