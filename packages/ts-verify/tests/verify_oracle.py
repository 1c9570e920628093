"""A slow, obviously-correct reference model of a kernel's mbarriers, used as a test oracle.

:func:`explore` unrolls every task of a plan under one valuation and searches *all*
interleavings breadth first. A state is every task's program counter, every mbarrier's
``(completed phases, arrivals in the current phase, pending transaction bytes)`` and how many
acquires, commits, waits and releases each task has made on each ring. The mbarrier semantics
are written here from the PTX description, independently of ``ts_verify.simulate``:

* a phase completes when the expected arrivals are in and no transaction bytes are pending;
  ``try_wait.parity(p)`` passes once the phase of parity ``p`` has completed, that is while the
  barrier's current phase has the other parity;
* the k-th ``acquire`` of a producer uses stage ``k % S`` in round ``k // S`` and waits for the
  empty barrier to have completed the phase of round ``k // S - 1`` (round 0 passes on a fresh
  barrier); for TMA pipelines it arrives on the full barrier and expects the stage's bytes;
* ``commit`` arrives on the full barrier (TMA: the expected bytes land);
* the k-th ``wait`` of a consumer waits for the full barrier to complete the phase of round
  ``k // S``; ``release`` arrives on the empty barrier.

A state where some task is unfinished and no operation is enabled is a deadlock. A wait or an
acquire that parity lets through is a race when what it stands for has not happened: the phase
it tests has not completed (a stale parity), a producer task has not yet committed the stage a
consumer now reads, or a consumer task still holds (or has not yet read) the stage a producer
now refills. Such passes happen only with wrong arrival counts. A run ends at its first race.

The rest of the module holds helpers of the ts-verify tests: a tiny builder of plans from a
text notation, an independent bracket checker for the schedules that builder makes, and the
valuations to brute-force.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence

from hypothesis import strategies as st

from ts_ir import (
    BlockGuard,
    Bound,
    ConditionalBlock,
    ConstBound,
    CooperativeGroupSpec,
    DomainLoop,
    DynamicBound,
    KernelPlan,
    Node,
    PipelineSpec,
    PipelineType,
    ResourceSpec,
    Role,
    RuntimeBound,
    Schedule,
    ScheduleStage,
    Step,
    TaskSpec,
    WorkMethodSpec,
    WorkTileLoop,
    iter_nodes,
)
from ts_verify.kernel_checks import arrivals_per_signal
from ts_verify.unroll import Op, Valuation, is_per_tile, loop_key, unroll

__all__ = [
    "TOPOLOGIES",
    "Bar",
    "Exploration",
    "barrier_programs",
    "bound",
    "bracket_errors",
    "explore",
    "kernels",
    "loop",
    "loop_classes",
    "make_plan",
    "ops",
    "renumber",
    "simulated_programs",
    "small_valuations",
    "tiles",
    "when",
]

# =============================================================================================
# The oracle
# =============================================================================================

ACQUIRE, COMMIT, WAIT, RELEASE = 0, 1, 2, 3
_KIND = {
    ScheduleStage.ProducerAcquire: ACQUIRE,
    ScheduleStage.ProducerCommit: COMMIT,
    ScheduleStage.ConsumerWait: WAIT,
    ScheduleStage.ConsumerRelease: RELEASE,
}

Event = tuple[str, Op]
"""One executed operation: the task and the op."""


@dataclasses.dataclass(frozen=True)
class Bar:
    """One mbarrier: completed phases, arrivals in the current phase, pending tx bytes."""

    phases: int = 0
    arrivals: int = 0
    tx: int = 0

    def arrive(self, expected: int, count: int, tx: int = 0) -> Bar:
        """``count`` arrivals that also expect ``tx`` more bytes."""
        return Bar(self.phases, self.arrivals + count, self.tx + tx).settle(expected)

    def land(self, expected: int, nbytes: int) -> Bar:
        """``nbytes`` transaction bytes land."""
        return Bar(self.phases, self.arrivals, self.tx - nbytes).settle(expected)

    def settle(self, expected: int) -> Bar:
        """Complete every phase whose arrivals are in and whose bytes have landed."""
        bar = self
        while bar.arrivals >= expected and bar.tx == 0:
            bar = Bar(bar.phases + 1, bar.arrivals - expected, 0)
        return bar

    def parity_passed(self, parity: int) -> bool:
        """``try_wait.parity(parity)``: the current phase has the other parity."""
        return self.phases % 2 != parity % 2


@dataclasses.dataclass(frozen=True)
class _Ring:
    stages: int
    tma: bool
    nbytes: int
    full_expected: int
    empty_expected: int


@dataclasses.dataclass(frozen=True)
class State:
    """A state of the whole kernel."""

    pcs: tuple[int, ...]
    full: tuple[tuple[Bar, ...], ...]  # per ring, per stage
    empty: tuple[tuple[Bar, ...], ...]
    counts: tuple[tuple[tuple[int, int, int, int], ...], ...]  # per task, per ring, per kind


@dataclasses.dataclass(frozen=True)
class Exploration:
    """What the search found.

    Attributes:
        states: Distinct states reached.
        deadlock: The shortest interleaving that ends in a deadlock, or None.
        race: The shortest interleaving whose last operation races, or None.
        race_reason: Why that operation races.
        ends: The program counters of every reachable state in which no operation is enabled
            (finished or deadlocked); runs that end in a race are not counted.
    """

    states: int
    deadlock: tuple[Event, ...] | None
    race: tuple[Event, ...] | None
    race_reason: str
    ends: frozenset[tuple[int, ...]]

    @property
    def deadlocks(self) -> bool:
        """True when some interleaving deadlocks."""
        return self.deadlock is not None

    @property
    def races(self) -> bool:
        """True when some interleaving races."""
        return self.race is not None


def simulated_programs(plan: KernelPlan, val: Valuation) -> dict[str, list[Op]]:
    """Each task's ops under ``val``: the ones ``whole_kernel.run_valuation`` simulates.

    Pipeline operations and non-auxiliary work, so that trace lengths compare.
    """
    return {
        t.name: [
            op
            for op in unroll(t.schedule, val)
            if op.step.stage.is_pipeline_op or not op.step.is_auxiliary
        ]
        for t in plan.tasks
    }


def barrier_programs(plan: KernelPlan, val: Valuation) -> dict[str, list[Op]]:
    """Each task's blocking and signalling operations only (the fastest to explore)."""
    return {
        t.name: [op for op in unroll(t.schedule, val) if op.step.stage in _KIND] for t in plan.tasks
    }


class _Model:
    def __init__(self, plan: KernelPlan, programs: Mapping[str, Sequence[Op]]) -> None:
        self.tasks = list(plan.tasks)
        self.programs = [list(programs[t.name]) for t in self.tasks]
        self.ring_index: dict[str, int] = {}
        self.rings: list[_Ring] = []
        self.arrivals: list[list[tuple[int, int]]] = []  # per task, per ring: (commit, release)
        specs = [r for r in plan.resources if r.pipeline is not None]
        for r, res in enumerate(specs):
            p = res.pipeline
            assert p is not None
            self.ring_index[res.name] = r
            self.rings.append(
                _Ring(
                    p.stages,
                    p.type.producer_is_tma,
                    p.bytes_per_stage,
                    p.producer_group.size,
                    p.consumer_group.size,
                )
            )
        # How often each task runs each kind of op on each ring in the whole run.
        self.totals = [[[0, 0, 0, 0] for _ in specs] for _ in self.tasks]
        for i, prog in enumerate(self.programs):
            for op in prog:
                ring, kind = self.ring_index.get(op.step.resource), _KIND.get(op.step.stage)
                if ring is not None and kind is not None:
                    self.totals[i][ring][kind] += 1
        for t in self.tasks:
            per_ring = []
            for res in specs:
                assert res.pipeline is not None
                per_ring.append(
                    (
                        arrivals_per_signal(t, res.pipeline, Role.PRODUCER),
                        arrivals_per_signal(t, res.pipeline, Role.CONSUMER),
                    )
                )
            self.arrivals.append(per_ring)

    def _lagging(self, state: State, r: int, kind: int, index: int) -> int | None:
        """A task that will run its op ``kind`` number ``index`` on ring ``r`` but has not yet."""
        for c in range(len(self.tasks)):
            if state.counts[c][r][kind] <= index < self.totals[c][r][kind]:
                return c
        return None

    def initial(self) -> State:
        return State(
            tuple(0 for _ in self.tasks),
            tuple(tuple(Bar() for _ in range(r.stages)) for r in self.rings),
            tuple(tuple(Bar() for _ in range(r.stages)) for r in self.rings),
            tuple(tuple((0, 0, 0, 0) for _ in self.rings) for _ in self.tasks),
        )

    def finished(self, state: State) -> bool:
        return all(pc == len(p) for pc, p in zip(state.pcs, self.programs, strict=True))

    def step(self, state: State, i: int) -> tuple[State, str] | None:
        """Task ``i`` runs its next op: None when it is blocked; else the new state and the
        reason it races ("" when it does not)."""
        op = self.programs[i][state.pcs[i]]
        pcs = (*state.pcs[:i], state.pcs[i] + 1, *state.pcs[i + 1 :])
        r = self.ring_index.get(op.step.resource)
        kind = _KIND.get(op.step.stage)
        if r is None or kind is None:  # work, try_* probes, resources without a pipeline
            return dataclasses.replace(state, pcs=pcs), ""
        ring = self.rings[r]
        k = state.counts[i][r][kind]
        s, rnd = k % ring.stages, k // ring.stages
        full, empty = list(state.full[r]), list(state.empty[r])
        commit_arrivals, release_arrivals = self.arrivals[i][r]
        race = ""
        if kind == ACQUIRE:
            if not empty[s].parity_passed(rnd - 1):
                return None
            late = self._lagging(state, r, RELEASE, k - ring.stages) if rnd else None
            if empty[s].phases < rnd:
                race = f"stage {s} refilled in round {rnd} before round {rnd - 1} was released"
            elif late is not None:
                held = state.counts[late][r][WAIT] > k - ring.stages
                race = f"stage {s} refilled in round {rnd} while {self.tasks[late].name} " + (
                    "still holds it" if held else "has not read it yet"
                )
            if ring.tma:
                full[s] = full[s].arrive(ring.full_expected, commit_arrivals, ring.nbytes)
        elif kind == COMMIT:
            if ring.tma:
                full[s] = full[s].land(ring.full_expected, ring.nbytes)
            else:
                full[s] = full[s].arrive(ring.full_expected, commit_arrivals)
        elif kind == WAIT:
            if not full[s].parity_passed(rnd):
                return None
            late = self._lagging(state, r, COMMIT, k)
            if full[s].phases < rnd + 1:
                race = f"stage {s} read in round {rnd} before its phase completed"
            elif late is not None:
                race = f"stage {s} read in round {rnd} before {self.tasks[late].name} filled it"
        else:
            empty[s] = empty[s].arrive(ring.empty_expected, release_arrivals)
        mine = list(state.counts[i][r])
        mine[kind] += 1
        task_counts = list(state.counts[i])
        task_counts[r] = (mine[0], mine[1], mine[2], mine[3])
        counts = (*state.counts[:i], tuple(task_counts), *state.counts[i + 1 :])
        new = State(
            pcs,
            (*state.full[:r], tuple(full), *state.full[r + 1 :]),
            (*state.empty[:r], tuple(empty), *state.empty[r + 1 :]),
            counts,
        )
        return new, race

    def path(self, parents: dict[State, tuple[State, int] | None], end: State) -> list[Event]:
        out: list[Event] = []
        link = parents[end]
        while link is not None:
            prev, i = link
            out.append((self.tasks[i].name, self.programs[i][prev.pcs[i]]))
            link = parents[prev]
        return out[::-1]


def explore(
    plan: KernelPlan,
    val: Valuation,
    *,
    programs: Callable[[KernelPlan, Valuation], Mapping[str, Sequence[Op]]] = simulated_programs,
    stop_early: bool = False,
) -> Exploration:
    """Search every interleaving of ``plan`` under ``val`` (see the module docstring).

    Args:
        plan: The kernel plan.
        val: The valuation to unroll the schedules with.
        programs: Turns the plan and valuation into each task's op sequence.
        stop_early: Stop at the first deadlock or race (the verdict stays exact; ``ends`` and
            ``states`` are then partial).
    """
    model = _Model(plan, programs(plan, val))
    start = model.initial()
    parents: dict[State, tuple[State, int] | None] = {start: None}
    queue = deque([start])
    deadlock: tuple[Event, ...] | None = None
    race: tuple[Event, ...] | None = None
    race_reason = ""
    ends: set[tuple[int, ...]] = set()
    while queue:
        state = queue.popleft()
        enabled = False
        for i, prog in enumerate(model.programs):
            if state.pcs[i] == len(prog):
                continue
            moved = model.step(state, i)
            if moved is None:
                continue
            enabled = True
            new, why = moved
            if why:
                if race is None:
                    race = (*model.path(parents, state), (model.tasks[i].name, prog[state.pcs[i]]))
                    race_reason = why
                continue
            if new not in parents:
                parents[new] = (state, i)
                queue.append(new)
        if not enabled:
            ends.add(state.pcs)
            if deadlock is None and not model.finished(state):
                deadlock = tuple(model.path(parents, state))
        if stop_early and (deadlock is not None or race is not None):
            break
    return Exploration(len(parents), deadlock, race, race_reason, frozenset(ends))


# =============================================================================================
# Building plans from a small text notation
# =============================================================================================

_OPS = {
    "acquire": ScheduleStage.ProducerAcquire,
    "try_acquire": ScheduleStage.ProducerTryAcquire,
    "load": ScheduleStage.ProducerWork,
    "commit": ScheduleStage.ProducerCommit,
    "wait": ScheduleStage.ConsumerWait,
    "try_wait": ScheduleStage.ConsumerTryWait,
    "use": ScheduleStage.ConsumerWork,
    "release": ScheduleStage.ConsumerRelease,
}

Item = str | Node
"""A body item: ``"R.op R.op ..."`` (ops: acquire, try_acquire, load, commit, wait, try_wait,
use, release) or a node."""


def ops(text: str) -> tuple[Step, ...]:
    """Steps from ``"P.acquire P.load P.commit"`` (ids are assigned by :func:`renumber`)."""
    out = []
    for token in text.split():
        resource, _, name = token.partition(".")
        stage = _OPS[name]
        out.append(Step(0, resource, stage, stage.op_name or name))
    return tuple(out)


def _body(items: Sequence[Item]) -> tuple[Node, ...]:
    out: list[Node] = []
    for item in items:
        out.extend(ops(item) if isinstance(item, str) else (item,))
    return tuple(out)


def bound(value: int | str | Bound) -> Bound:
    """``3`` -> constant, ``"n"`` -> runtime value, ``"@get_n"`` -> per-tile getter."""
    if isinstance(value, int):
        return ConstBound(value)
    if isinstance(value, str):
        return DynamicBound(value[1:]) if value.startswith("@") else RuntimeBound(value)
    return value


def loop(end: int | str | Bound, *body: Item) -> DomainLoop:
    """``for i in range(end): body``."""
    return DomainLoop(ConstBound(0), bound(end), ConstBound(1), None, _body(body))


def tiles(*body: Item) -> WorkTileLoop:
    """The persistent loop over work tiles (queue ``queue``)."""
    return WorkTileLoop("queue", None, _body(body))


def when(guard: BlockGuard, *body: Item) -> ConditionalBlock:
    """A guarded block."""
    return ConditionalBlock(guard, _body(body))


def renumber(body: tuple[Node, ...], start: int = 0) -> tuple[Node, ...]:
    """The same tree with step ids 0, 1, 2, ... in program order."""
    counter = itertools.count(start)

    def walk(nodes: tuple[Node, ...]) -> tuple[Node, ...]:
        out: list[Node] = []
        for n in nodes:
            if isinstance(n, Step):
                out.append(dataclasses.replace(n, id=next(counter)))
            else:
                out.append(dataclasses.replace(n, body=walk(n.body)))
        return tuple(out)

    return walk(body)


def make_plan(
    name: str,
    stages: Mapping[str, int],
    tasks: Sequence[tuple[str, int, Sequence[Item]]],
    *,
    kind: PipelineType = PipelineType.AsyncAsync,
    bytes_per_stage: int = 0,
    agent: str = "thread",
    groups: Mapping[str, tuple[int, int]] | None = None,
) -> KernelPlan:
    """A plan of ``tasks`` (name, warps, body) over pipelined resources ``stages``.

    Tasks get contiguous warp ranges; sources and destinations follow from the ops a task
    runs; each pipeline's groups are sized to the arrivals of the tasks that signal it, unless
    ``groups`` gives ``(producer, consumer)`` sizes.
    """
    bodies = {t: renumber(_body(body)) for t, _, body in tasks}
    steps = {t: [n for n, _ in iter_nodes(b) if isinstance(n, Step)] for t, b in bodies.items()}

    def touching(res: str, role: Role) -> list[str]:
        return [
            t
            for t, ss in steps.items()
            if any(s.resource == res and s.stage.role is role for s in ss)
        ]

    specs = []
    task_specs = []
    warp = 0
    for t, warps, _ in tasks:
        task_specs.append(
            TaskSpec(
                t,
                warp,
                warps,
                None,
                tuple(r for r in stages if t in touching(r, Role.CONSUMER)),
                tuple(r for r in stages if t in touching(r, Role.PRODUCER)),
                Schedule(t, tuple(sorted({s.resource for s in steps[t]})), bodies[t]),
            )
        )
        warp += warps
    for res, n in stages.items():
        probe = PipelineSpec(
            kind,
            n,
            bytes_per_stage,
            CooperativeGroupSpec(agent, 1),
            CooperativeGroupSpec(agent, 1),
        )
        sizes = [
            sum(
                arrivals_per_signal(ts, probe, role)
                for ts in task_specs
                if ts.name in touching(res, role)
            )
            for role in (Role.PRODUCER, Role.CONSUMER)
        ]
        prod, cons = groups[res] if groups and res in groups else (sizes[0], sizes[1])
        pipe = dataclasses.replace(
            probe,
            producer_group=CooperativeGroupSpec(agent, max(prod, 1)),
            consumer_group=CooperativeGroupSpec(agent, max(cons, 1)),
        )
        specs.append(
            ResourceSpec(
                res,
                pipeline=pipe,
                work=(
                    WorkMethodSpec("load", Role.PRODUCER),
                    WorkMethodSpec("use", Role.CONSUMER),
                ),
            )
        )
    if any(isinstance(n, WorkTileLoop) for b in bodies.values() for n, _ in iter_nodes(b)):
        specs.append(ResourceSpec("queue", kind="WorkQueue", is_work_queue=True))
    return KernelPlan(name, tuple(specs), tuple(task_specs))


# =============================================================================================
# An independent bracket checker and the valuations to brute-force
# =============================================================================================


def bracket_errors(schedule: Schedule) -> list[str]:
    """Bracket rules for schedules of steps, domain loops and work-tile loops.

    Per (resource, side): ``commit``/``release`` need an open stage, work needs one, a
    ``try_*`` is followed by its blocking call before any other op of that side, and every
    loop iteration, every tile and the whole schedule leave the stages as they found them.
    """
    errors: list[str] = []
    opens = {ScheduleStage.ProducerAcquire, ScheduleStage.ConsumerWait}
    closes = {ScheduleStage.ProducerCommit, ScheduleStage.ConsumerRelease}
    Side = tuple[str, Role]

    def walk(nodes: tuple[Node, ...], state: dict[Side, tuple[int, bool]]) -> None:
        for n in nodes:
            if isinstance(n, ConditionalBlock):
                raise ValueError("the oracle checks brackets of plans without condition blocks")
            if not isinstance(n, Step):
                inner = dict(state)
                walk(n.body, inner)
                if {k: v for k, v in inner.items() if v != (0, False)} != {
                    k: v for k, v in state.items() if v != (0, False)
                }:
                    errors.append(f"{n.describe()} is not balanced")
                continue
            side = (n.resource, n.stage.role)
            count, pending = state.get(side, (0, False))
            if pending and n.stage not in opens:
                errors.append(f"#{n.id} {n.describe()} follows a try_* of its side")
                pending = False
            if n.stage.is_try:
                pending = True
            elif n.stage in opens:
                count, pending = count + 1, False
            elif n.stage in closes:
                if count == 0:
                    errors.append(f"#{n.id} {n.describe()} closes no open stage")
                count = max(count - 1, 0)
            elif not n.is_auxiliary and count == 0:
                errors.append(f"#{n.id} {n.describe()} runs outside its bracket")
            state[side] = (count, pending)

    end: dict[Side, tuple[int, bool]] = {}
    walk(schedule.body, end)
    errors.extend(
        f"{r} ({role.value}) left open" for (r, role), v in end.items() if v != (0, False)
    )
    return errors


def loop_classes(plan: KernelPlan) -> dict[str, bool]:
    """Every non-constant loop class of the plan and whether it is per tile."""
    out: dict[str, bool] = {}
    for t in plan.tasks:
        for n, _ in iter_nodes(t.schedule.body):
            if isinstance(n, DomainLoop) and n.static_trip_count() is None:
                out[loop_key(n)] = out.get(loop_key(n), False) or is_per_tile(n)
    return out


def small_valuations(plan: KernelPlan, max_trip: int, pairs_up_to: int = 2) -> Iterator[Valuation]:
    """Every trip count 0..``max_trip``, the same for every loop class and every tile, with 1
    and 2 work tiles for persistent plans; then, for per-tile loops, two tiles with different
    trip counts up to ``pairs_up_to``. Smallest first."""
    classes = loop_classes(plan)
    persistent = any(
        isinstance(n, WorkTileLoop) for t in plan.tasks for n, _ in iter_nodes(t.schedule.body)
    )

    def valuation(n_tiles: int, per_tile: Sequence[int]) -> Valuation:
        values: dict[tuple[str, int], int] = {}
        for key, varies in classes.items():
            for tile in range(n_tiles) if varies else (-1,):
                values[(key, tile)] = per_tile[max(tile, 0)]
        return Valuation(n_tiles, values)

    for n in range(max_trip + 1 if classes else 1):
        for n_tiles in (1, 2) if persistent else (1,):
            yield valuation(n_tiles, (n, n))
    if persistent and any(classes.values()):
        for a, b in itertools.permutations(range(min(pairs_up_to, max_trip) + 1), 2):
            yield valuation(2, (a, b))


# =============================================================================================
# Random kernels (hypothesis)
# =============================================================================================

Edge = tuple[tuple[int, ...], tuple[int, ...], bool]
"""A pipelined resource: its producer tasks, its consumer tasks, and whether it is a back edge
(it flows from a later task to an earlier one)."""

TOPOLOGIES: dict[str, tuple[Edge, ...]] = {
    "chain2": (((0,), (1,), False),),
    "chain3": (((0,), (1,), False), ((1,), (2,), False)),
    "chain4": (((0,), (1,), False), ((1,), (2,), False), ((2,), (3,), False)),
    "fork": (((0,), (1, 2), False),),
    "fork_merge": (((0,), (1, 2), False), ((1, 2), (3,), False)),
    "merge": (((0, 1), (2,), False),),
    "merge_chain": (((0, 1), (2,), False), ((2,), (3,), False)),
    "diamond": (((0,), (1, 2), False), ((1,), (3,), False), ((2,), (3,), False)),
    "ring2": (((0,), (1,), False), ((1,), (0,), True)),
    "ring3": (((0,), (1,), False), ((1,), (2,), False), ((2,), (0,), True)),
    "ring4": (((0,), (1,), False), ((1,), (2,), False), ((2,), (3,), False), ((3,), (0,), True)),
}
"""Task graphs by name; resource ``i`` of a kernel is ``R{i}``."""


def _interleave(draw: st.DrawFn, seqs: Sequence[Sequence[str]]) -> list[str]:
    """A random interleaving that keeps each sequence's order."""
    rest = [list(s) for s in seqs if s]
    out: list[str] = []
    while rest:
        i = draw(st.integers(0, len(rest) - 1))
        out.append(rest[i].pop(0))
        if not rest[i]:
            rest.pop(i)
    return out


def _bracket(draw: st.DrawFn, res: str, role: Role, tries: bool) -> list[str]:
    probe = tries and draw(st.booleans())
    if role is Role.PRODUCER:
        return [f"{res}.try_acquire"] * probe + [f"{res}.acquire", f"{res}.load", f"{res}.commit"]
    return [f"{res}.try_wait"] * probe + [f"{res}.wait", f"{res}.use", f"{res}.release"]


@st.composite
def kernels(
    draw: st.DrawFn,
    *,
    valid: bool = True,
    topologies: Sequence[str] = tuple(TOPOLOGIES),
    max_stages: int = 3,
    bounds: Sequence[str] = ("const", "runtime", "dynamic"),
) -> KernelPlan:
    """Random kernels over one of ``topologies``; every loop has the same bound.

    ``valid``: each task runs one bracket per resource per loop iteration, forward-edge brackets
    in any interleaving, and a back edge's wait last in the iteration, so that no valuation can
    deadlock; persistent kernels may also open resources once per tile, around the loop. With
    ``valid=False`` a task may split its brackets over two consecutive loops, a resource may be
    opened twice per iteration, and every order (in the loops and around them) is allowed: the
    plans stay well bracketed and balanced, so only deadlocks remain possible.
    """
    name = draw(st.sampled_from(list(topologies)))
    edges = TOPOLOGIES[name]
    n_tasks = 1 + max(i for p, c, _ in edges for i in p + c)
    persistent = draw(st.booleans())
    kinds = [b for b in bounds if b != "dynamic" or persistent]
    kind = draw(st.sampled_from(kinds))
    end: int | str = (
        draw(st.integers(0, 3)) if kind == "const" else "k" if kind == "runtime" else "@Task.get_k"
    )
    tries = valid and draw(st.booleans())
    stages = {f"R{i}": draw(st.integers(1, max_stages)) for i in range(len(edges))}
    # Per task: loop-level brackets (forward / back-edge wait), tile-level pre and post parts.
    loop_parts: list[list[list[str]]] = [[] for _ in range(n_tasks)]
    back_parts: list[list[list[str]]] = [[] for _ in range(n_tasks)]
    pre: list[list[list[str]]] = [[] for _ in range(n_tasks)]
    post: list[list[list[str]]] = [[] for _ in range(n_tasks)]
    for i, (producers, consumers, back) in enumerate(edges):
        res = f"R{i}"
        tile_level = persistent and not (valid and back) and draw(st.booleans())
        times = 1 if valid else draw(st.integers(1, 2))
        commit_pre = True
        for role, members in ((Role.PRODUCER, producers), (Role.CONSUMER, consumers)):
            for t in members:
                for _ in range(times):
                    seq = _bracket(draw, res, role, tries)
                    if not tile_level:
                        (back_parts if back and role is Role.CONSUMER else loop_parts)[t].append(
                            seq
                        )
                        continue
                    # Where the bracket sits around the loop: all before, all after, or open
                    # before and closed after. A consumer waits before the loop only when every
                    # producer committed before its loop.
                    where = draw(st.sampled_from(["pre", "post", "span"]))
                    if valid and role is Role.CONSUMER and not commit_pre:
                        where = "post"
                    if role is Role.PRODUCER and where != "pre":
                        commit_pre = False
                    cut = {"pre": len(seq), "post": 0, "span": len(seq) - 2}[where]
                    pre[t].append(seq[:cut])
                    post[t].append(seq[cut:])
    tasks: list[tuple[str, int, Sequence[Item]]] = []
    for t in range(n_tasks):
        if valid:
            bodies = [_interleave(draw, loop_parts[t]) + _interleave(draw, back_parts[t])]
        else:
            split: list[list[list[str]]] = [[], []]
            for seq in loop_parts[t] + back_parts[t]:
                split[draw(st.integers(0, 1))].append(seq)
            bodies = [_interleave(draw, s) for s in split]
        loops: list[Item] = [loop(end, " ".join(b)) for b in bodies if b]
        body: list[Item] = [
            " ".join(_interleave(draw, pre[t])),
            *loops,
            " ".join(_interleave(draw, post[t])),
        ]
        warps = draw(st.sampled_from([1, 2, 4]))
        tasks.append((f"T{t}", warps, [tiles(*body)] if persistent else body))
    return make_plan(f"{name}_{kind}", stages, tasks)
