"""Run a kernel's tasks against real mbarrier semantics, for one valuation.

Every pipelined resource is a ring of ``stages`` pairs of mbarriers. A barrier has a phase bit,
a count of arrivals in the current phase and pending transaction bytes; a phase completes when
the expected arrivals are in and no bytes are pending. Waits test the *parity* of the phase, as
``mbarrier.try_wait.parity`` does:

* the k-th ``acquire`` of a producer uses stage ``k % S`` in round ``k // S`` and passes when the
  stage's empty barrier has completed a phase of the parity of that round;
* the k-th ``wait`` of a consumer passes when the stage's full barrier has completed a phase
  of parity ``round + 1``;
* ``commit`` arrives on the full barrier (for TMA producers, ``acquire`` arrives with the expected
  bytes and ``commit`` stands for the bytes landing); ``release`` arrives on the empty barrier;
* ``skip_stage`` moves the consumer's wait and release counts on by one, touching no barrier.

Because each task is a sequential program that blocks only on these waits, the tasks form a
Kahn process network: the operations that run, and whether the run ends in a deadlock, do not
depend on the interleaving. One greedy run per valuation therefore decides it, and the run's
prefix is an interleaving that reaches the deadlock. A pass that parity allows but the barrier's
true phase count does not (a stage read before it was filled, or reused while a consumer still
holds it) is reported as a race.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from typing import NamedTuple

from ts_ir import KernelPlan, PipelineSpec, Role, ScheduleStage, TaskSpec
from ts_verify.diagnostics import BarrierState, TraceEvent
from ts_verify.kernel_checks import arrivals_per_signal
from ts_verify.unroll import Op

__all__ = ["Barrier", "Outcome", "Record", "simulate"]

_BARRIER_OPS = frozenset(
    s.value
    for s in (
        ScheduleStage.ProducerAcquire,
        ScheduleStage.ProducerCommit,
        ScheduleStage.ConsumerWait,
        ScheduleStage.ConsumerRelease,
    )
)


@dataclasses.dataclass
class Barrier:
    """One mbarrier."""

    expected: int
    completed: int = 0
    arrivals: int = 0
    tx: int = 0

    def arrive(self, count: int, tx: int = 0) -> None:
        """``count`` arrivals, expecting ``tx`` more transaction bytes."""
        self.arrivals += count
        self.tx += tx
        self._settle()

    def complete_tx(self, count: int) -> None:
        """``count`` transaction bytes landed."""
        self.tx -= count
        self._settle()

    def _settle(self) -> None:
        while self.arrivals >= self.expected and self.tx <= 0:
            self.arrivals -= self.expected
            self.tx = 0
            self.completed += 1

    def parity_passed(self, parity: int) -> bool:
        """``try_wait.parity(parity)``: has the phase of this parity completed?"""
        return self.completed % 2 != parity % 2


@dataclasses.dataclass
class _Ring:
    spec: PipelineSpec
    full: list[Barrier]
    empty: list[Barrier]
    holders: dict[tuple[int, int], set[str]] = dataclasses.field(default_factory=dict)
    tma: bool = False  # the producer completes the full barrier with transaction bytes


class Record(NamedTuple):
    """One executed operation: the task, the op, and the ring stage and round (-1 if none)."""

    task: str
    op: Op
    stage: int
    round: int


@dataclasses.dataclass
class Outcome:
    """The result of one run.

    Attributes:
        kind: ``ok``, ``deadlock``, ``race`` or ``leftover`` (stages produced, never consumed).
        records: The executed operations, in order (:attr:`events` renders them).
        blocked: For each unfinished task, what it waits for.
        barriers: Barrier states at the end.
        culprit: The task and op at fault (races, leftovers); the first blocked op otherwise.
        message: A one-line explanation.
    """

    kind: str
    records: list[Record]
    blocked: list[tuple[str, str]]
    barriers: list[BarrierState]
    culprit: tuple[str, Op] | None = None
    message: str = ""

    @functools.cached_property
    def events(self) -> list[TraceEvent]:
        """The executed operations as trace events, built on demand since most runs pass."""
        out = []
        for i, (task, op, stage, rnd) in enumerate(self.records):
            step = op.step
            text = f"#{step.id} {step.describe()}"
            if stage >= 0:
                text += f" -> stage {stage}, round {rnd}"
            if op.context:
                text += f"  [{op.context}]"
            out.append(
                TraceEvent(
                    i + 1,
                    task,
                    step.id,
                    text,
                    step.location,
                    step.resource,
                    step.stage.value,
                    stage,
                    rnd,
                )
            )
        return out


class _Run:
    def __init__(self, plan: KernelPlan, programs: dict[str, list[Op]]) -> None:
        self.plan = plan
        self.programs = programs
        self.tasks = {t.name: t for t in plan.tasks}
        self.rings: dict[str, _Ring] = {}
        # Only the rings the programs use: a part's run costs what its own operations cost.
        used = {op.step.resource for ops in programs.values() for op in ops}
        for r in plan.resources:
            p = r.pipeline
            if p is not None and r.name in used:
                self.rings[r.name] = _Ring(
                    p,
                    [Barrier(p.producer_group.size) for _ in range(p.stages)],
                    [Barrier(p.consumer_group.size) for _ in range(p.stages)],
                    tma=p.type.producer_expects_tx,  # TMA bytes or a CLC response
                )
        # Keyed by the stage's value: an enum member hashes in Python code, a str in C.
        self.counts: dict[tuple[str, str, str], int] = {}
        self.pc = dict.fromkeys(programs, 0)
        self.records: list[Record] = []
        self.race: tuple[str, Op, str] | None = None
        # Arrivals per signal, by (task, resource, role): asked once per op otherwise.
        self.arrivals: dict[tuple[str, str, Role], int] = {}

    def _next(self, task: str, res: str, stage: ScheduleStage) -> int:
        return self.counts.get((task, res, stage.value), 0)

    def blocked_reason(self, task: str, op: Op) -> str | None:
        """None when ``op`` can run now; otherwise why it waits."""
        step = op.step
        if step.stage is not ScheduleStage.ProducerAcquire and (
            step.stage is not ScheduleStage.ConsumerWait
        ):
            return None
        ring = self.rings.get(step.resource)
        if ring is None:
            return None
        k = self._next(task, step.resource, step.stage)
        s, rnd = k % ring.spec.stages, k // ring.spec.stages
        if step.stage is ScheduleStage.ProducerAcquire:
            b = ring.empty[s]
            if b.parity_passed(rnd + 1):
                return None
            return (
                f"{step.describe()} (stage {s}, round {rnd}) needs the consumers to release "
                f"stage {s} ({b.completed} of {rnd} releases done)"
            )
        b = ring.full[s]
        if b.parity_passed(rnd):
            return None
        return (
            f"{step.describe()} (stage {s}, round {rnd}) needs the producers to fill stage {s} "
            f"({b.completed} of {rnd + 1} fills done)"
        )

    def execute(self, task: str, op: Op) -> None:
        step = op.step
        ring = self.rings.get(step.resource)
        if ring is not None and step.stage.value in _BARRIER_OPS:
            s, rnd = self._barrier_op(task, self.tasks[task], op, ring)
            self.records.append(Record(task, op, s, rnd))
        elif ring is not None and step.stage is ScheduleStage.ConsumerSkip:
            # The wait and release cursors move on together; no barrier is touched.
            k = self._next(task, step.resource, ScheduleStage.ConsumerWait)
            for stage in (ScheduleStage.ConsumerWait, ScheduleStage.ConsumerRelease):
                key = (task, step.resource, stage.value)
                self.counts[key] = self.counts.get(key, 0) + 1
            self.records.append(Record(task, op, k % ring.spec.stages, k // ring.spec.stages))
        else:
            self.records.append(Record(task, op, -1, -1))

    def _signal(self, spec: TaskSpec, p: PipelineSpec, resource: str, role: Role) -> int:
        key = (spec.name, resource, role)
        n = self.arrivals.get(key)
        if n is None:
            n = self.arrivals[key] = arrivals_per_signal(spec, p, role)
        return n

    def _barrier_op(self, task: str, spec: TaskSpec, op: Op, ring: _Ring) -> tuple[int, int]:
        step, p = op.step, ring.spec
        key = (task, step.resource, step.stage.value)
        k = self.counts.get(key, 0)
        self.counts[key] = k + 1
        s, rnd = k % p.stages, k // p.stages
        tma = ring.tma
        if step.stage is ScheduleStage.ProducerAcquire:
            if ring.empty[s].completed < rnd:
                self._race(task, op, f"stage {s} is refilled before round {rnd - 1} was released")
            users = ring.holders.get((s, rnd - 1), set())
            if users:
                self._race(
                    task,
                    op,
                    f"stage {s} is refilled while {', '.join(sorted(users))} still "
                    "reads it (the empty barrier completed early)",
                )
            if tma:
                ring.full[s].arrive(
                    self._signal(spec, p, step.resource, Role.PRODUCER), p.bytes_per_stage
                )
        elif step.stage is ScheduleStage.ProducerCommit:
            if tma:
                ring.full[s].complete_tx(p.bytes_per_stage)
            else:
                ring.full[s].arrive(self._signal(spec, p, step.resource, Role.PRODUCER))
        elif step.stage is ScheduleStage.ConsumerWait:
            if ring.full[s].completed < rnd + 1:
                self._race(task, op, f"stage {s} is read before round {rnd} was filled")
            elif ring.full[s].completed > rnd + 1:  # released by another reader of round rnd
                self._race(task, op, f"stage {s} is read after round {rnd + 1} refilled it")
            ring.holders.setdefault((s, rnd), set()).add(task)
        elif step.stage is ScheduleStage.ConsumerRelease:
            ring.holders.get((s, rnd), set()).discard(task)
            ring.empty[s].arrive(self._signal(spec, p, step.resource, Role.CONSUMER))
        return s, rnd

    def _race(self, task: str, op: Op, why: str) -> None:
        if self.race is None:
            self.race = (task, op, why)

    def run(self) -> Outcome:
        # Worklist: a task runs until it blocks on a resource; any operation on that resource
        # may unblock it, so only then is it looked at again. Each op runs once and each block
        # is re-tested once per operation on its resource: linear in the number of operations.
        ready = collections.deque(self.programs)
        queued = set(ready)
        waiting: dict[str, set[str]] = collections.defaultdict(set)
        while ready and self.race is None:
            task = ready.popleft()
            queued.discard(task)
            ops = self.programs[task]
            while self.pc[task] < len(ops) and self.race is None:
                op = ops[self.pc[task]]
                if self.blocked_reason(task, op) is not None:
                    waiting[op.step.resource].add(task)
                    break
                self.execute(task, op)
                self.pc[task] += 1
                woken = waiting.pop(op.step.resource, set())
                for other in woken:
                    if other not in queued:
                        ready.append(other)
                        queued.add(other)
        return self.outcome()

    def barrier_states(self) -> list[BarrierState]:
        out = []
        for name, ring in self.rings.items():
            for kind, bars in (("full", ring.full), ("empty", ring.empty)):
                for i, b in enumerate(bars):
                    out.append(
                        BarrierState(
                            name,
                            kind,
                            i,
                            b.completed % 2,
                            b.completed,
                            b.arrivals,
                            b.expected,
                            b.tx,
                        )
                    )
        return out

    def outcome(self) -> Outcome:
        if self.race is not None:
            task, op, why = self.race
            return Outcome("race", self.records, [], self.barrier_states(), (task, op), why)
        blocked = []
        culprit = None
        for task, ops in self.programs.items():
            if self.pc[task] < len(ops):
                op = ops[self.pc[task]]
                reason = self.blocked_reason(task, op) or "cannot proceed"
                blocked.append((task, f"waits at {reason}"))
                culprit = culprit or (task, op)
        if blocked:
            return Outcome(
                "deadlock",
                self.records,
                blocked,
                self.barrier_states(),
                culprit,
                "no task can make progress",
            )
        return self._leftover()

    def _leftover(self) -> Outcome:
        for name, ring in self.rings.items():
            for s, (full, empty) in enumerate(zip(ring.full, ring.empty, strict=True)):
                # Consumers taking turns (skip_stage) can release one fill twice: harmless in
                # this run only because the stage is not filled again.
                if empty.completed > full.completed or empty.arrivals:
                    return Outcome(
                        "leftover",
                        self.records,
                        [],
                        self.barrier_states(),
                        None,
                        f"stage {s} of `{name}` is filled {full.completed} times but freed "
                        f"{empty.completed} times and {empty.arrivals} arrivals: a fill is "
                        "released by more threads than the consumer group counts",
                    )
            fills = sum(b.completed for b in ring.full)
            for t in self.plan.tasks:
                if t.name not in self.programs:
                    continue  # not in this part: it waits 0 times here
                waits = self._next(t.name, name, ScheduleStage.ConsumerWait)
                if waits and waits != fills:
                    return Outcome(
                        "leftover",
                        self.records,
                        [],
                        self.barrier_states(),
                        None,
                        f"`{name}` is filled {fills} times but `{t.name}` waits {waits} times",
                    )
        return Outcome("ok", self.records, [], self.barrier_states())


def simulate(plan: KernelPlan, programs: dict[str, list[Op]]) -> Outcome:
    """Run every task's op sequence against the plan's barriers; see the module docstring."""
    return _Run(plan, programs).run()
