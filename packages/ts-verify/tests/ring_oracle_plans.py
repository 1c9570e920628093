"""Random ring plans for the soundness oracle, and their lowering to ts-ir.

:func:`generate` draws a :class:`ring_oracle.Gen`: 2 to 3 tasks, 1 to 3 rings of depth 1 to
3 between them (one producer and one consumer task each), each ring run by one or two loop
*segments* per side. A segment is a loop over a constant, a runtime symbol or (in persistent
plans) a per-tile getter around the ring's bracket, optionally

* under a runtime flag (around the loop or inside it),
* split into ``every(2)`` and ``every(2, start=1)`` halves,
* lagged: a consumer releasing the stage of ``L`` iterations ago (``every(1, start=L)`` plus
  ``L`` releases after a constant loop), the ``first``/``last``-iteration lag-1 pattern on
  either side, or a prologue fill; broken variants too (``L`` releases after a runtime loop,
  one tail release too few or too many),
* in a persistent plan: in a ``skippable`` region around the loop or inside it.

The consumer mirrors the producer's segments most of the time (a plan that may be right) and
otherwise draws its own (so that bounds, flags, splits and skips sometimes differ). Persistent
plans wrap every task in a work-tile loop over one queue, with a skip predicate per task (the
same name in most tasks). Some plans alias the SMEM of two rings, most often with the consumer
of the first producing the second after it (the shape that can be right), with a random
dependency edge between them (declared, not enforced: the verifier must not trust it).

:func:`to_plan` lowers a generated plan to a :class:`ts_ir.KernelPlan` (one 1-warp task per
task, 1-arrival groups, one ``<ring>.tiles`` SMEM allocation per aliased ring).
"""

from __future__ import annotations

import dataclasses
import itertools
import random

from ring_oracle import (
    FLAGS,
    GETTERS,
    PREDICATES,
    SYMBOLS,
    Gen,
    Guard,
    Loop,
    Node,
    Ops,
    Tiles,
    When,
)

from ts_ir import (
    FIRST_ITER,
    LAST_ITER,
    SKIPPABLE,
    BlockGuard,
    ConditionalBlock,
    ConstBound,
    CooperativeGroupSpec,
    DependencyEdge,
    DomainLoop,
    DynamicBound,
    Every,
    KernelPlan,
    OpaqueCondition,
    PipelineSpec,
    PipelineType,
    ResourceSpec,
    RuntimeBound,
    Schedule,
    ScheduleStage,
    SmemAllocationSpec,
    Step,
    TaskSpec,
    WorkTileLoop,
)
from ts_ir import Node as IrNode

__all__ = ["generate", "to_plan"]

_PAIR = {"p": ("acquire", "commit"), "c": ("wait", "release")}


@dataclasses.dataclass(frozen=True)
class _Shape:
    """One segment of one side of a ring, before it is made into nodes."""

    ring: str
    side: str  # "p" or "c"
    bound: int | str
    flag: str | None = None
    negated: bool = False
    flag_inside: bool = False
    split: bool = False
    lag: str = ""  # "", "lag1", "lagL", "prologue"
    lag_l: int = 0
    tail: int = 0  # releases after a lagL loop
    skip: str = ""  # "", "around", "inside"


def _segment(s: _Shape) -> tuple[Node, ...]:
    """The nodes of one segment."""
    first, second = _PAIR[s.side]
    plain: tuple[Node, ...] = (Ops(((s.ring, first), (s.ring, second))),)
    after: tuple[Node, ...] = ()
    if s.lag == "lag1":
        # The stage of the previous iteration is closed in every iteration but the first, the
        # last one on the last iteration.
        body: tuple[Node, ...] = (
            Ops(((s.ring, first),)),
            When(Guard("every", period=1, start=1), (Ops(((s.ring, second),)),)),
            When(Guard("last"), (Ops(((s.ring, second),)),)),
        )
    elif s.lag == "lagL":
        body = (
            Ops(((s.ring, first),)),
            When(Guard("every", period=1, start=s.lag_l), (Ops(((s.ring, second),)),)),
        )
        after = (Ops(((s.ring, second),) * s.tail),) if s.tail else ()
    elif s.lag == "prologue":
        if s.side == "p":
            # One stage filled ahead on the first iteration: n + 1 fills for n >= 1.
            body = (When(Guard("first"), plain), *plain)
        else:
            body = (
                When(Guard("first"), (Ops(((s.ring, "wait"),)),)),
                *plain,
                When(Guard("last"), (Ops(((s.ring, "release"),)),)),
            )
    elif s.split:
        body = (
            When(Guard("every", period=2), plain),
            When(Guard("every", period=2, start=1), plain),
        )
    else:
        body = plain
    if s.flag is not None and s.flag_inside:
        body = (When(Guard("flag", s.flag, s.negated), body),)
    if s.skip == "inside":
        body = (When(Guard("skippable"), body),)
    out: tuple[Node, ...] = (Loop(s.bound, body), *after)
    if s.skip == "around":
        out = (When(Guard("skippable"), out),)
    if s.flag is not None and not s.flag_inside:
        out = (When(Guard("flag", s.flag, s.negated), out),)
    return out


def _draw(
    rng: random.Random, ring: str, bounds: list[int | str], flags: list[str], skips: bool
) -> _Shape:
    flag = rng.choice([None, None, *flags]) if flags else None
    shape = _Shape(
        ring,
        "p",
        rng.choice(bounds),
        flag,
        flag is not None and rng.random() < 0.3,
        flag is not None and rng.random() < 0.3,
        rng.random() < 0.15,
        skip=rng.choice(["", "around", "inside"]) if skips else "",
    )
    return shape


def _consumer_lag(rng: random.Random, shape: _Shape) -> tuple[_Shape, _Shape]:
    """``shape`` (the producer's) and a lagged consumer for it, right or broken."""
    kind = rng.choice(["lag1", "lagL", "lagL", "prologue"])
    shape = dataclasses.replace(shape, split=False)
    if kind == "prologue":
        return dataclasses.replace(shape, lag=kind), dataclasses.replace(shape, side="c", lag=kind)
    if kind == "lag1":
        return shape, dataclasses.replace(shape, side="c", lag=kind)
    lag = rng.randint(1, 3)
    # Mostly the right tail; sometimes one too few or too many.
    tail = max(lag + rng.choice([0, 0, 0, 0, -1, 1]), 0)
    if rng.random() < 0.7:
        # A constant loop, mostly long enough for the lag: the shape that can be right.
        shape = dataclasses.replace(shape, bound=rng.randint(max(lag - 1, 0), 4))
    return shape, dataclasses.replace(shape, side="c", lag=kind, lag_l=lag, tail=tail)


def _outside(shape: _Shape) -> _Shape:
    """A lagged loop's body is not balanced per iteration: its flag and skippable region go
    around the loop (a guard inside would break the bracket rule that every guarded block
    leaves the stages as it found them, which the verifier enforces on purpose)."""
    skip = "around" if shape.skip else ""
    return dataclasses.replace(shape, flag_inside=False, skip=skip)


def generate(rng: random.Random, small: bool = False) -> Gen:
    """A random plan; see the module docstring.

    ``small`` keeps rings at 1 or 2 stages, and a plan with a per-tile bound to one ring
    between two tasks, so that the verifier's cut-offs (which grow with the stages and tasks of
    a ring cycle, and square with per-tile values) stay within a CI budget.
    """
    persistent = rng.random() < 0.35
    # Per-tile values multiply the oracle's runs (2^tiles per flag or predicate, 3^tiles or more
    # per per-tile bound): a persistent plan gets a small budget of them ("b": a flag or skip
    # predicate, "k": a per-tile bound) and at most one runtime symbol.
    budget = rng.choice(["", "b", "b", "bb", "k", "k", "kb"]) if persistent else ""
    one_ring = small and "k" in budget
    n_tasks = 2 if one_ring else rng.randint(2, 3)
    names = [f"t{i}" for i in range(n_tasks)]
    n_rings = 1 if one_ring else rng.randint(1, 3)
    stages = {f"r{i}": rng.randint(1, 2 if small else 3) for i in range(n_rings)}
    ends = {r: tuple(rng.sample(names, 2)) for r in stages}  # (producer, consumer)
    features: set[str] = set()
    if persistent:
        features.add("persistent")
        n_bin = budget.count("b")
        n_flags = rng.randint(0, n_bin)
        flags = list(FLAGS[:n_flags])
        preds = list(PREDICATES[: n_bin - n_flags])
        bounds: list[int | str] = [1, 2, 3]
        bounds += [GETTERS[0]] * 2 if "k" in budget else [SYMBOLS[0]]
    else:
        flags, preds = list(FLAGS), []
        bounds = [*SYMBOLS, 1, 2, 3]
    aliases: tuple[tuple[str, str], ...] = ()
    ordered: tuple[str, str] | None = None
    if len(stages) >= 2 and rng.random() < 0.3:
        a, b = rng.sample(sorted(stages), 2)
        aliases = ((a, b),)
        features.add("aliasing")
        if rng.random() < 0.7:
            # The consumer of `a` produces `b` (the hand-off that can be right).
            relay = ends[a][1]
            ends[b] = (relay, rng.choice([t for t in names if t != relay]))
            if rng.random() < 0.8:
                ordered = (a, b)
    shapes: dict[str, list[_Shape]] = {t: [] for t in names}
    for ring in stages:
        producer, consumer = ends[ring]
        for _ in range(rng.randint(1, 2)):
            shape = _draw(rng, ring, bounds, flags, bool(preds))
            draw = rng.random()
            if draw < 0.1:
                # A lagged producer: commits the stage of the previous iteration.
                shape = dataclasses.replace(shape, lag="lag1", split=False)
                mine = dataclasses.replace(shape, side="c", lag="")
            elif draw < 0.28:
                shape, mine = _consumer_lag(rng, shape)
            elif draw < 0.82:
                mine = dataclasses.replace(shape, side="c")
            else:
                other = _draw(rng, ring, bounds, flags, bool(preds))
                mine = dataclasses.replace(other, side="c", split=False)
            if shape.lag or mine.lag:
                shape, mine = _outside(shape), _outside(mine)
            for s in (shape, mine):
                if isinstance(s.bound, str) and s.bound in GETTERS:
                    features.add("tile_bounds")
                if s.lag:
                    features.add("lags")
                if s.flag is not None:
                    features.add("flags")
                if s.skip:
                    features.add("skips")
            shapes[producer].append(shape)
            shapes[consumer].append(mine)
    tasks: dict[str, tuple[Node, ...]] = {}
    for t in names:
        segs = shapes[t]
        if not segs:
            continue
        rng.shuffle(segs)
        if ordered is not None:
            # Every segment of the first aliased ring before every segment of the second.
            rank = {ordered[0]: 0, ordered[1]: 1}
            segs.sort(key=lambda s: rank.get(s.ring, 0))
        body: list[Node] = []
        i = 0
        while i < len(segs):
            s = segs[i]
            nxt = segs[i + 1] if i + 1 < len(segs) else None
            if (
                nxt is not None
                and rng.random() < 0.4
                and not (s.lag or nxt.lag or s.split or nxt.split)
                and dataclasses.replace(nxt, ring=s.ring, side=s.side) == s
            ):
                # Two segments with the same loop merge into one (interleaved rings).
                a_ops = _PAIR[s.side]
                b_ops = _PAIR[nxt.side]
                merged = Ops(
                    tuple((s.ring, o) for o in a_ops) + tuple((nxt.ring, o) for o in b_ops)
                )
                node = _segment(s)
                body.extend(_replace_ops(node, merged))
                i += 2
                continue
            body.extend(_segment(s))
            i += 1
        if persistent:
            pred = rng.choice(preds) if preds and rng.random() < 0.9 else None
            if pred is None and any(s.skip for s in segs):
                pred = rng.choice(preds)
            tasks[t] = (Tiles(pred, tuple(body)),)
        else:
            tasks[t] = tuple(body)
    deps: tuple[tuple[str, str], ...] = ()
    if aliases:
        a, b = aliases[0]
        deps = rng.choice([(), ((a, b),), ((b, a),), ((a, b), (b, a))])
    return Gen(stages, tasks, aliases, deps, frozenset(features))


def _replace_ops(nodes: tuple[Node, ...], ops: Ops) -> tuple[Node, ...]:
    """``nodes`` with every :class:`Ops` leaf replaced by ``ops``."""
    out: list[Node] = []
    for n in nodes:
        if isinstance(n, Ops):
            out.append(ops)
        elif isinstance(n, Loop):
            out.append(Loop(n.bound, _replace_ops(n.body, ops)))
        elif isinstance(n, When):
            out.append(When(n.guard, _replace_ops(n.body, ops)))
        else:
            out.append(Tiles(n.skip_if, _replace_ops(n.body, ops)))
    return tuple(out)


# -- lowering to ts-ir --------------------------------------------------------------------------
# One runtime placeholder per symbol (equal symbols are the same value; no arithmetic, so the
# verifier keys it by name, and the names differ).
_OBJECTS = {s: type(f"sym_{s}", (), {})() for s in SYMBOLS}

_STAGE = {
    "acquire": ScheduleStage.ProducerAcquire,
    "commit": ScheduleStage.ProducerCommit,
    "wait": ScheduleStage.ConsumerWait,
    "release": ScheduleStage.ConsumerRelease,
}


def _guard(g: Guard) -> BlockGuard:
    if g.kind == "flag":
        return OpaqueCondition(g.key, g.negated)
    if g.kind == "every":
        return Every(g.period, g.start)
    if g.kind == "first":
        return FIRST_ITER
    if g.kind == "last":
        return LAST_ITER
    return SKIPPABLE


def _lower(body: tuple[Node, ...], ids: itertools.count[int]) -> tuple[IrNode, ...]:
    out: list[IrNode] = []
    for node in body:
        if isinstance(node, Ops):
            for ring, op in node.ops:
                st = _STAGE[op]
                out.append(Step(next(ids), ring, st, st.op_name))
        elif isinstance(node, Loop):
            b = node.bound
            end: ConstBound | RuntimeBound | DynamicBound
            if isinstance(b, int):
                end = ConstBound(b)
            elif b.startswith("@"):
                # A per-tile getter: one value per work tile, the same in every task.
                end = DynamicBound(f"Tasks.{b[1:]}")
            else:
                end = RuntimeBound(type(_OBJECTS[b]).__name__, _OBJECTS[b])
            out.append(DomainLoop(ConstBound(0), end, ConstBound(1), None, _lower(node.body, ids)))
        elif isinstance(node, When):
            out.append(ConditionalBlock(_guard(node.guard), _lower(node.body, ids)))
        else:
            out.append(WorkTileLoop("queue", node.skip_if, _lower(node.body, ids)))
    return tuple(out)


def _ring_ops(body: tuple[Node, ...]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for node in body:
        if isinstance(node, Ops):
            out.extend(node.ops)
        else:
            out.extend(_ring_ops(node.body))
    return out


def to_plan(gen: Gen) -> KernelPlan:
    """The generated plan as ts-ir (one 1-warp task per task, 1-arrival groups)."""
    group = CooperativeGroupSpec("warp", 1)
    aliased = {r for pair in gen.aliases for r in pair}
    resources = [
        ResourceSpec(
            r,
            pipeline=PipelineSpec(PipelineType.AsyncAsync, s, 0, group, group),
            # One allocation for the whole ring: the alias group aliases whole rings.
            smem=(SmemAllocationSpec(f"{r}.tiles", 1024),) if r in aliased else (),
        )
        for r, s in gen.stages.items()
    ]
    tasks = []
    for w, (name, body) in enumerate(gen.tasks.items()):
        ops = _ring_ops(body)
        srcs = tuple(sorted({r for r, op in ops if op in ("wait", "release")}))
        dsts = tuple(sorted({r for r, op in ops if op in ("acquire", "commit")}))
        schedule = Schedule(name, (), _lower(body, itertools.count()))
        tasks.append(TaskSpec(name, w, 1, None, srcs, dsts, schedule))
    if any(isinstance(n, WorkTileLoop) for t in tasks for n in t.schedule.body):
        resources.append(ResourceSpec("queue", kind="WorkQueue", is_work_queue=True))
    return KernelPlan(
        "random",
        tuple(resources),
        tuple(tasks),
        dependencies=tuple(DependencyEdge(u, d) for u, d in gen.deps),
        smem_alias_groups=tuple(((f"{a}.tiles",), (f"{b}.tiles",)) for a, b in gen.aliases),
    )
