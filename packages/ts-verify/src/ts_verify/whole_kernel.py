"""Whole-kernel checks: equal bracket counts for all valuations, no deadlock, no race.

Two steps.

1. **Counts** (:mod:`ts_verify.counting`): for every pipelined resource, every task that opens
   its brackets must do so equally often (a consumer's ``skip_stage()`` counts as a wait), as
   a function of the symbols (trip counts, runtime conditions, skipped tiles, work tiles). The
   comparison is exact for every valuation; a difference comes with the smallest valuation
   that shows it and the counts there.
2. **Ordering**: with counts equal, what remains are deadlocks from the order of operations and
   the ring capacities, and races from wrong arrival counts. The kernel is split into parts that
   can deadlock on their own (:mod:`ts_verify.systems`: every ring, every block of several
   rings), and each part is run (:mod:`ts_verify.runs`; :mod:`ts_verify.simulate`, mbarrier
   phase/arrival/tx semantics) for every valuation of *its own* symbols up to a cut-off: every
   trip count from 0 to ``C = (slack + 2) * P + s`` (``slack``: the part's stages plus tasks;
   ``P``: the lcm of the loop's ``Every`` periods; ``s``: their latest start), both values of
   every condition, 0 to ``slack + 2`` work tiles with every combination of per-tile values on
   the first tile and on the others — or one tile when the part's work tiles are independent
   (:func:`tile_local`). ``docs/verification.rst`` gives the argument for the cut-off.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator

from ts_ir import (
    ConditionalBlock,
    DomainLoop,
    Every,
    FirstIteration,
    KernelPlan,
    Node,
    OpaqueCondition,
    Role,
    Schedule,
    ScheduleStage,
    Skippable,
    Step,
    TaskSpec,
    WorkTileLoop,
)
from ts_verify.counting import (
    Polynomial,
    count_polynomial,
    difference_witness,
    evaluate,
    every_count,
    factor_symbol,
    loop_base,
)
from ts_verify.diagnostics import Diagnostic, Trace
from ts_verify.kernel_checks import steps_by_resource, tasks_touching
from ts_verify.simulate import Outcome, simulate
from ts_verify.systems import System, systems
from ts_verify.unroll import Op, TileCache, Valuation, is_per_tile, loop_key, unroll

__all__ = [
    "MAX_CUTOFF",
    "Part",
    "PartSymbols",
    "TileAxes",
    "check_counts",
    "distinct_runs",
    "independent_tiles",
    "make_part",
    "part_valuations",
    "per_tile_values",
    "run_diagnostic",
    "run_valuation",
    "sequence_valuation",
    "sides_balance",
    "task_programs",
    "tile_axes",
    "tile_local",
    "too_long_loop",
    "valuations",
]

MAX_CUTOFF = 4096
"""The largest per-loop cut-off the ordering check runs (larger ones are reported, TS-V114)."""

_OPENS = {Role.PRODUCER: "ProducerAcquire", Role.CONSUMER: "ConsumerWait"}
# What moves each side's cursor one stage on: a consumer's skip_stage() as well as its wait.
_MOVES = {Role.PRODUCER: ("ProducerAcquire",), Role.CONSUMER: ("ConsumerWait", "ConsumerSkip")}


# -- counts -----------------------------------------------------------------------------------
def _opens(resource: str, users: tuple[TaskSpec, ...]) -> dict[str, tuple[TaskSpec, Polynomial]]:
    out = {}
    for t in users:
        steps = steps_by_resource(t).get(resource, ())
        for role in _OPENS:
            # Every task that runs this side's pipeline ops takes part, even one whose count is
            # identically 0 (say, a loop of 0 iterations): the others must then be 0 too.
            if any(s.stage.role is role and s.stage.is_pipeline_op for s in steps):
                label = f"{t.name} ({'acquires' if role is Role.PRODUCER else 'waits'})"
                out[label] = (t, count_polynomial(t.schedule, resource, _MOVES[role]))
    return out


def describe_symbol(symbol: str, value: int) -> str:
    """A witness entry in words."""
    if symbol == "tiles":
        return f"{value} work tile(s)"
    kind, _, rest = symbol.partition(" ")
    if kind == "loop":
        return f"domain_loop({rest}) runs {value} time(s)"
    if kind == "cond":
        key, _, scope = rest.rpartition("@")
        where = "in the tile" if scope == "tile" else "for the kernel"
        return f"condition `{key}` is {bool(value)} {where}"
    return f"`{rest}` {'keeps' if value else 'skips'} the tile"


def _off_step(task: TaskSpec, resource: str, stage: str, odd: set[str]) -> Step | None:
    """The task's opening step whose enclosing loop or guard the other tasks lack."""
    first = None
    for node, parents in task.schedule.walk():
        if isinstance(node, Step) and node.resource == resource and node.stage.value == stage:
            first = first or node
            for p in parents:
                if isinstance(p, DomainLoop) and f"loop {loop_key(p)}" in odd:
                    return node
                if isinstance(p, ConditionalBlock) and not isinstance(
                    p.guard, (OpaqueCondition, Skippable)
                ):
                    return node
    return first


def _symbols_of(poly: Polynomial) -> set[str]:
    return {factor_symbol(f) for m in poly for f in m}


def check_counts(plan: KernelPlan) -> list[Diagnostic]:
    """TS-V301 for every resource whose tasks open its brackets unequally often."""
    out = []
    touching = tasks_touching(plan)
    for res in plan.resources:
        if res.pipeline is None:
            continue
        polys = _opens(res.name, touching.get(res.name, ()))
        if len(polys) < 2:
            continue
        names = list(polys)
        ref_name = names[0]
        ref = polys[ref_name][1]
        for name in names[1:]:
            poly = polys[name][1]
            witness = difference_witness(ref, poly)
            if witness is None:
                continue
            counts = ", ".join(f"{n} {evaluate(p, witness)}x" for n, (_, p) in polys.items())
            when = "; ".join(describe_symbol(s, v) for s, v in witness.items()) or "always"
            mine, theirs = _symbols_of(poly), _symbols_of(ref)
            odd = mine ^ theirs
            # The off side: the one with a loop or guard the other lacks; else the reference.
            off_label = name if mine - theirs else ref_name
            off_task = polys[off_label][0]
            stage = "ProducerAcquire" if "(acquires)" in off_label else "ConsumerWait"
            step = _off_step(off_task, res.name, stage, odd)
            out.append(
                Diagnostic(
                    "TS-V301",
                    f"the tasks on `{res.name}` open its stages unequally often; the smallest "
                    f"case: {when}: {counts}. The side that runs more often waits forever (or "
                    "overruns the ring)",
                    task=off_task.name,
                    resource=res.name,
                    step="" if step is None else f"#{step.id} {step.describe()}",
                    location=None if step is None else step.location,
                    fix="make every task run the pipeline under the same loops and conditions "
                    "(the same bound objects, getters and keys)",
                )
            )
            break
    return out


# -- the symbols of one part ------------------------------------------------------------------
@dataclasses.dataclass
class PartSymbols:
    """What one part's schedules read: loop classes, periods, conditions, skips, opens."""

    kernel_loops: set[str] = dataclasses.field(default_factory=set)  # one value per kernel
    tile_loops: set[str] = dataclasses.field(default_factory=set)  # one value per work tile
    periods: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)  # lcm, start
    statics: dict[str, int] = dataclasses.field(default_factory=dict)  # class -> trip count
    conds: set[tuple[Hashable, str]] = dataclasses.field(default_factory=set)  # (key, scope)
    skips: set[str] = dataclasses.field(default_factory=set)
    tiles: bool = False
    # loop class -> the most ring operations that open a stage in one iteration (any task)
    opens: dict[str, int] = dataclasses.field(default_factory=dict)
    # loop class -> (its base class, start, step): trips derived from the base's (loop_base)
    derived: dict[str, tuple[str, int, int]] = dataclasses.field(default_factory=dict)


def _keep(node: Node, rings: frozenset[str]) -> bool:
    if isinstance(node, Step):
        # Work on the part's rings stays: it places the trace's steps among the waits.
        return node.resource in rings and not node.stage.is_try
    return any(_keep(n, rings) for n in node.body)


def _prune(body: tuple[Node, ...], rings: frozenset[str]) -> tuple[Node, ...]:
    """Only the part's pipeline operations and the loops and blocks around them."""
    out: list[Node] = []
    for node in body:
        if not _keep(node, rings):
            continue
        if isinstance(node, Step):
            out.append(node)
        else:
            out.append(dataclasses.replace(node, body=_prune(node.body, rings)))
    return tuple(out)


def _collect(body: tuple[Node, ...], sym: PartSymbols, loop: DomainLoop | None, scope: str) -> None:
    for node in body:
        if isinstance(node, Step):
            continue
        if isinstance(node, DomainLoop):
            n = node.static_trip_count()
            key = loop_key(node)
            if n is None:
                # A per-tile getter outside a work-tile loop is read once (for the block).
                per_tile = is_per_tile(node) and scope == "tile"
                (sym.tile_loops if per_tile else sym.kernel_loops).add(key)
                base = None if per_tile else loop_base(node)
                if base is not None:
                    # Runs give it the trips its base loop's value implies, as the counts do.
                    sym.derived[key] = base
                    sym.kernel_loops.add(base[0])
            else:
                sym.statics[key] = n
            sym.periods.setdefault(key, (1, 0))
            sym.opens[key] = max(sym.opens.get(key, 1), _opening_steps(node.body))
            _collect(node.body, sym, node, scope)
            continue
        if isinstance(node, WorkTileLoop):
            sym.tiles = True
            _collect(node.body, sym, loop, "tile")
            continue
        guard = node.guard
        if isinstance(guard, OpaqueCondition):
            sym.conds.add((guard.key, scope))
        elif isinstance(guard, Skippable):
            sym.skips.add("")
        elif isinstance(guard, Every) and loop is not None:
            key = loop_key(loop)
            period, start = sym.periods.get(key, (1, 0))
            sym.periods[key] = (math.lcm(period, guard.period), max(start, guard.start))
        _collect(node.body, sym, loop, scope)


_OPENS_HORIZON = 64
"""Iterations of one loop examined for its opens per iteration (beyond: all blocks fire)."""


def _opening_steps(body: tuple[Node, ...]) -> int:
    """The most acquires (or waits) on one ring that one iteration of a loop runs.

    Inner loops count once. ``every()`` blocks of this loop count in the iterations where they
    fire (``every(2)`` and ``every(2, start=1)`` halves never fire together), so the iterations
    up to the latest start plus the lcm of the periods decide it; ``first_iter()`` fires in
    iteration 0 only; ``last_iter()`` and every other guard may fire in any iteration.
    """
    own = [n.guard for n in _own_blocks(body) if isinstance(n.guard, Every)]
    horizon = max((g.start for g in own), default=0) + math.lcm(*(g.period for g in own))
    if horizon > _OPENS_HORIZON:
        return _opens_in(body, None)
    return max(_opens_in(body, i) for i in range(horizon))


def _own_blocks(body: tuple[Node, ...]) -> Iterator[ConditionalBlock]:
    """The guarded blocks of a loop body outside nested loops."""
    for node in body:
        if isinstance(node, ConditionalBlock):
            yield node
            yield from _own_blocks(node.body)


def _opens_in(body: tuple[Node, ...], i: int | None) -> int:
    """Opens per ring in iteration ``i`` of the loop of ``body`` (None: every block fires)."""
    counts: dict[tuple[str, str], int] = {}

    def walk(nodes: tuple[Node, ...], own: bool) -> None:
        for node in nodes:
            if isinstance(node, Step):
                if node.stage.value in _OPENS.values() or node.stage.is_skip:
                    # A skip moves the consumer's cursor as a wait does: the two add up.
                    key = (node.resource, node.stage.role.value)
                    counts[key] = counts.get(key, 0) + 1
            elif isinstance(node, ConditionalBlock):
                guard = node.guard
                # Iteration i of a loop that goes on past it (a last_iter() may fire anyway).
                if (
                    own
                    and i is not None
                    and isinstance(guard, (Every, FirstIteration))
                    and not guard.fires(i, i + 2)
                ):
                    continue
                walk(node.body, own)
            else:
                walk(node.body, own=False)

    walk(body, own=True)
    return max(counts.values(), default=1)


def _skip_predicates(body: tuple[Node, ...]) -> set[str]:
    return {n.skip_if or "" for n in body if isinstance(n, WorkTileLoop)}


def cutoff(slack: int, period: int, start: int) -> int:
    """The largest trip count a part needs: ``(slack + 2) * period + start``."""
    return (slack + 2) * period + start


@dataclasses.dataclass(frozen=True)
class Part:
    """A part of the kernel ready to run: its pruned schedules, symbols and cut-offs."""

    system: System
    slack: int
    schedules: dict[str, Schedule]
    sym: PartSymbols
    reach: dict[str, int]


def make_part(plan: KernelPlan, system: System, slack: int) -> Part:
    """The part of ``plan`` that ``system`` names: its tasks with only its rings' steps."""
    rings = frozenset(system.rings)
    schedules = {}
    sym = PartSymbols()
    for name in system.tasks:
        sched = plan.task(name).schedule
        pruned = dataclasses.replace(sched, body=_prune(sched.body, rings))
        schedules[name] = pruned
        _collect(pruned.body, sym, None, "kernel")
        if any(
            isinstance(n, ConditionalBlock) and isinstance(n.guard, Skippable)
            for n, _ in pruned.walk()
        ):
            sym.skips.discard("")
            sym.skips |= _skip_predicates(pruned.body)
    loops = sym.kernel_loops | sym.tile_loops
    # The slack counts items (stages, tasks). A task whose iteration opens m stages absorbs m
    # items of a ring per iteration, so another task's loop over the same class may need m
    # times as many trips to exhaust the buffering: the slack is scaled by the most opens of
    # one ring per iteration (an oracle plan with 2 waits per iteration on a 3-ring cycle of
    # 1-stage rings hung at 9 trips, past the unscaled cut-off of 8; see test_verify_oracle).
    reach = {k: cutoff(slack * sym.opens.get(k, 1), *sym.periods.get(k, (1, 0))) for k in loops}
    # A base loop's value sets the trips of the loops derived from it (loop_base): it runs far
    # enough for each of them to reach its own cut-off, plus one common period of their
    # residues, so that a run shortened by whole periods still finds each derived loop past
    # its cut-off with the same residues.
    common: dict[str, int] = {}
    for key, (base, start, step) in sym.derived.items():
        reach[base] = max(reach[base], start + step * reach[key])
        common[base] = math.lcm(common.get(base, 1), step * sym.periods.get(key, (1, 0))[0])
    for base, period in common.items():
        reach[base] += period
    return Part(system, slack, schedules, sym, reach)


@dataclasses.dataclass(frozen=True)
class TileAxes:
    """The symbols a valuation of a part sets: kernel-wide ones, and per work tile ones."""

    glob_loops: list[str]
    tile_loops: list[str]
    glob_conds: list[Hashable]
    tile_conds: list[Hashable]
    skips: list[str]
    glob_ranges: list[range]
    per_tile: list[tuple[int, ...]]  # every combination of one tile's values

    def globs(self) -> Iterator[tuple[int, ...]]:
        """Every combination of the kernel-wide values."""
        return itertools.product(*self.glob_ranges)


def tile_axes(part: Part) -> TileAxes:
    """The part's symbols and the values each takes up to its cut-off."""
    sym = part.sym
    glob_loops = sorted(sym.kernel_loops - set(sym.derived))
    tile_loops = sorted(sym.tile_loops)
    glob_conds = sorted((k for k, scope in sym.conds if scope == "kernel"), key=str)
    tile_conds = sorted((k for k, scope in sym.conds if scope == "tile"), key=str)
    skips = sorted(sym.skips)
    glob_ranges = [range(part.reach[k] + 1) for k in glob_loops] + [range(2)] * len(glob_conds)
    tile_ranges = (
        [range(part.reach[k] + 1) for k in tile_loops]
        + [range(2)] * len(tile_conds)
        + [range(2)] * len(skips)
    )
    per_tile = list(itertools.product(*tile_ranges))
    return TileAxes(glob_loops, tile_loops, glob_conds, tile_conds, skips, glob_ranges, per_tile)


def sequence_valuation(
    part: Part, axes: TileAxes, glob: tuple[int, ...], seq: tuple[tuple[int, ...], ...]
) -> tuple[int, Valuation]:
    """The valuation of kernel-wide values ``glob`` and per-tile values ``seq``, and its size.

    ``seq`` has one entry a work tile. Runs are ordered by size, smallest first, so that a
    reported counterexample is small.
    """
    n_gl = len(axes.glob_loops)
    trips = {(k, -1): v for k, v in zip(axes.glob_loops, glob, strict=False)}
    for k, (b, start, step) in part.sym.derived.items():
        trips[(k, -1)] = every_count(step, start, trips[(b, -1)])
    conds: dict[tuple[Hashable, int], bool] = {
        (k, -1): bool(v) for k, v in zip(axes.glob_conds, glob[n_gl:], strict=True)
    }
    skips: dict[tuple[str, int], bool] = {}
    n_l, n_c = len(axes.tile_loops), len(axes.tile_conds)
    for t, values in enumerate(seq):
        if not values:
            continue
        trips.update({(k, t): v for k, v in zip(axes.tile_loops, values, strict=False)})
        conds.update({(k, t): bool(v) for k, v in zip(axes.tile_conds, values[n_l:], strict=False)})
        skips.update({(k, t): not v for k, v in zip(axes.skips, values[n_l + n_c :], strict=False)})
    size = sum(glob) + len(seq) + sum(sum(v) for v in seq[:2])
    return size, Valuation(len(seq), trips, conds, frozenset(), skips)


def part_valuations(
    part: Part, max_tiles: int | None = None, *, sequences: bool = False
) -> Iterator[Valuation]:
    """Every valuation of the part's own symbols up to its cut-offs, smallest first.

    ``max_tiles`` stops at that many work tiles (default: the cut-off, ``slack + 2``; see
    :func:`tile_local` for why one is enough for deadlocks and
    ``ts_verify.aliasing`` for why two are for aliasing). The per-tile values vary on the
    first tile and on the others; with ``sequences``, every sequence of them.
    """
    axes = tile_axes(part)
    per_tile = axes.per_tile
    if not part.sym.tiles:
        max_tiles = 1
    elif max_tiles is None:
        max_tiles = part.slack + 2
    found: list[tuple[int, Valuation]] = []
    for glob in axes.globs():
        for tiles in range(max_tiles + 1) if part.sym.tiles else (1,):
            if sequences:
                seqs: Iterable[tuple[tuple[int, ...], ...]] = itertools.product(
                    per_tile, repeat=tiles
                )
            else:
                firsts = per_tile if tiles else [()]
                rests = per_tile if tiles > 1 else [()]
                seqs = (
                    (first, *[rest] * (tiles - 1)) if tiles else ()
                    for first, rest in itertools.product(firsts, rests)
                )
            found.extend(sequence_valuation(part, axes, glob, seq) for seq in seqs)
    found.sort(key=lambda x: x[0])
    return (v for _, v in found)


def per_tile_values(part: Part) -> int:
    """How many combinations of per-tile values one work tile of the part can take."""
    sym = part.sym
    n = 1 << (sum(1 for _, scope in sym.conds if scope == "tile") + len(sym.skips))
    return n * math.prod([part.reach[k] + 1 for k in sym.tile_loops])


# -- parts whose work tiles are independent --------------------------------------------------
_SIDES = {
    ScheduleStage.ProducerAcquire: 0,
    ScheduleStage.ProducerCommit: 1,
    ScheduleStage.ConsumerWait: 2,
    ScheduleStage.ConsumerRelease: 3,
}


def _sides(stage: ScheduleStage) -> tuple[int, ...]:
    """The sides an operation moves: a ``skip_stage()`` moves a wait's and a release's."""
    if stage.is_skip:
        return (2, 3)
    side = _SIDES.get(stage)
    return () if side is None else (side,)


def _outside_tiles(nodes: tuple[Node, ...]) -> bool:
    for node in nodes:
        if isinstance(node, Step):
            if node.stage.is_pipeline_op:
                return True
        elif isinstance(node, WorkTileLoop):
            continue
        elif _outside_tiles(node.body):
            return True
    return False


def tile_local(part: Part) -> bool:
    """True when every ring operation of the part's tasks is inside their work-tile loops.

    Such a part is proven by runs of *one* work tile, for every value of the per-tile
    symbols, when every tile balances each ring (each task acquires and commits, or waits
    and releases, the same number of stages in the tile; :func:`sides_balance`). Why: in a
    deadlock of a run with tiles ``v_0 .. v_n``, take the blocked task in the earliest tile
    ``t``. A wait it blocks on needs a commit that, by the balance, lies in tile ``t`` of the
    producer; an acquire needs a release of an earlier index, in a tile ``<= t`` of the
    consumer. Either task has not run it, so it is blocked too, in tile ``t`` (not earlier,
    by the choice of ``t``). No operation of a tile before ``t`` needs one of a later tile
    (the same argument), so they can all run first and leave every ring drained: all
    stages free, only the stage index and phase moved on. A drained ring behaves the same
    from any stage and phase (its barriers are symmetric under rotation), so tile ``t``
    alone deadlocks from a fresh ring: a run of one tile with ``v_t`` finds it. Races need
    a wrong arrival count (such kernels run whole) or a wait two phases ahead, which
    sequential counters with waits proven in order exclude.
    """
    return part.sym.tiles and not any(_outside_tiles(s.body) for s in part.schedules.values())


def sides_balance(part: Part, tasks: dict[str, TaskSpec]) -> bool:
    """Whether every run of one tile balances every ring, side by side.

    Every task whose schedule acquires (waits on) a ring acquires and commits (waits and
    releases) it as often as every other task of the ring does, in every run of one tile. So
    in every run, the ``k``-th operation of any side of a ring lies in the same tile of every
    task, which is what :func:`tile_local`'s argument needs. Counted per side, not per task:
    a task on both sides of a ring (a tile scheduler filling and reading its queue) balances
    too. A task whose schedule has a side counts on it even in a tile that runs none of it.
    """
    roles: dict[str, set[tuple[str, int]]] = {}
    for name, sched in part.schedules.items():
        for step in sched.steps():
            for side in _sides(step.stage):
                first = side - side % 2  # the side's opening operation: acquire 0, wait 2
                roles.setdefault(step.resource, set()).update({(name, first), (name, first + 1)})
    one = (v for v in part_valuations(part, max_tiles=1) if v.tiles == 1)
    for _, programs in distinct_runs(part, tasks, one):
        counts = Counter(
            (name, op.step.resource, side)
            for name, ops in programs.items()
            for op in ops
            for side in _sides(op.step.stage)
        )
        for ring, pairs in roles.items():
            if len({counts[(name, ring, side)] for name, side in pairs}) > 1:
                return False
    return True


def independent_tiles(part: Part, tasks: dict[str, TaskSpec]) -> bool:
    """:func:`tile_local` and every run of one tile balances every ring (:func:`sides_balance`)."""
    return tile_local(part) and sides_balance(part, tasks)


def distinct_runs(
    part: Part, tasks: dict[str, TaskSpec], vals: Iterable[Valuation]
) -> Iterator[tuple[Valuation, dict[str, list[Op]]]]:
    """Each valuation of ``vals`` with the tasks' programs, leaving out repeated programs.

    Every valuation of the cut-off set runs: stopping early would claim a proof not made. The
    model reads only the sequence of steps, so valuations that give every task the same steps
    (a flag that skips the loop whose trip count varies, ...) run once: the smallest comes
    first, so a reported counterexample is unchanged.
    """
    seen: set[tuple[tuple[int, ...], ...]] = set()
    cache: TileCache = {}
    for val in vals:
        programs = task_programs(part.schedules, tasks, val, cache)
        key = tuple(tuple(id(op.step) for op in ops) for ops in programs.values())
        if key not in seen:
            seen.add(key)
            yield val, programs


def valuations(plan: KernelPlan) -> Iterator[Valuation]:
    """Every valuation the ordering check runs, part by part (for tests and tools)."""
    for system, slack in systems(plan):
        yield from part_valuations(make_part(plan, system, slack))


# -- runs -------------------------------------------------------------------------------------
def run_diagnostic(val: Valuation, outcome: Outcome, system: System) -> Diagnostic:
    """The diagnostic of a failed run, with its counterexample trace."""
    trace = Trace(
        val.describe(),
        tuple(outcome.events),
        tuple(outcome.blocked),
        tuple(b for b in outcome.barriers if b.completed or b.arrivals or b.tx_bytes),
    )
    task, op = outcome.culprit if outcome.culprit else ("", None)
    step = op.step if op is not None else None
    code = {"deadlock": "TS-V302", "race": "TS-V303"}.get(outcome.kind, "TS-V301")
    what = {"deadlock": "the kernel deadlocks", "race": "the kernel races"}.get(
        outcome.kind, "the brackets do not match up"
    )
    scope = (
        f" (a cycle through {', '.join(f'`{r}`' for r in system.rings)})" if system.cycle else ""
    )
    return Diagnostic(
        code,
        f"{what}{scope}: {outcome.message}",
        task=task,
        resource="" if step is None else step.resource,
        step="" if step is None else f"#{step.id} {step.describe()}",
        location=None if step is None else step.location,
        trace=trace,
    )


def _modelled(step: Step) -> bool:
    return step.stage.is_pipeline_op or not step.is_auxiliary


def task_programs(
    schedules: dict[str, Schedule],
    tasks: dict[str, TaskSpec],
    val: Valuation,
    cache: TileCache | None = None,
) -> dict[str, list[Op]]:
    """Every task's operations under ``val`` (auxiliary work left out).

    ``cache`` (see :func:`ts_verify.unroll.unroll`) is shared by the valuations of one part.
    """
    return {name: unroll(sched, val, _modelled, cache) for name, sched in schedules.items()}


def run_valuation(plan: KernelPlan, val: Valuation) -> Outcome:
    """Run every task of ``plan`` under ``val`` against the barrier model."""
    schedules = {t.name: t.schedule for t in plan.tasks}
    return simulate(plan, task_programs(schedules, {t.name: t for t in plan.tasks}, val))


def too_long_loop(plan: KernelPlan, part: Part) -> Diagnostic | None:
    """TS-V114 for a loop of the part whose cut-off is more than the verifier runs."""
    reaches = dict(part.reach)
    # Constant loops run exactly; one too long to run is reported like a huge cut-off.
    reaches.update({k: n for k, n in part.sym.statics.items() if n > MAX_CUTOFF})
    for key, reach in sorted(reaches.items()):
        if reach > MAX_CUTOFF:
            period, start = part.sym.periods.get(key, (1, 0))
            found = next(
                (
                    (n, t)
                    for t in part.system.tasks
                    for n, _ in plan.task(t).schedule.walk()
                    if isinstance(n, DomainLoop) and loop_key(n) == key
                ),
                None,
            )
            if found is None:
                continue  # a base class only (loop_base): its derived loops are reported
            loop, task = found
            return Diagnostic(
                "TS-V114",
                f"domain_loop({key}) (iteration predicates of period {period} from {start}) "
                f"needs runs of up to {reach} iterations to prove, more than the {MAX_CUTOFF} "
                "the verifier runs",
                task=task,
                resource=part.system.rings[0],
                step=loop.describe(),
                location=loop.location,
                fix="use a period and start below a few hundred, or a constant trip count",
            )
    return None
