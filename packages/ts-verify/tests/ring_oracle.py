"""Random ring plans and a brute-force oracle written apart from ts-verify.

A plan is generated as plain data (:class:`Gen`): tasks, each a list of *segments*; a segment
is a loop over a bound (a constant or one of a few runtime symbols) around ring operations,
optionally under a keyed runtime flag, optionally split into ``every(2)`` and
``every(2, start=1)`` halves. The same data is lowered to a ts-ir plan for the verifier and
interpreted here, by the oracle, with its own expansion and its own ring model: a ring of
``S`` stages is two arrays of phase counters; the k-th acquire waits until the empty barrier
of stage ``k % S`` has completed ``k // S`` phases, the k-th wait until the full barrier of
that stage has completed ``k // S + 1``; a commit / release completes one phase (one task per
side, one arrival per phase). A run that stops with a task unfinished, or with a ring filled
and drained a different number of times, is a failure. The oracle tries every valuation of the
symbols from 0 to ``MAX_TRIP`` and both values of every flag: a plan is bad iff one fails.
Nothing here imports ts-verify.
"""

from __future__ import annotations

import dataclasses
import itertools
import random

from ts_ir import (
    ConditionalBlock,
    ConstBound,
    CooperativeGroupSpec,
    DomainLoop,
    Every,
    KernelPlan,
    Node,
    OpaqueCondition,
    PipelineSpec,
    PipelineType,
    ResourceSpec,
    RuntimeBound,
    Schedule,
    ScheduleStage,
    Step,
    TaskSpec,
)

MAX_TRIP = 5
SYMBOLS = ("n", "m")
FLAGS = ("f", "g")


@dataclasses.dataclass(frozen=True)
class Segment:
    """``loop(bound) { ops }``: ops are (ring, side) with side 'p' (acquire/commit) or 'c'."""

    bound: int | str
    ops: tuple[tuple[str, str], ...]
    flag: str | None = None
    negated: bool = False
    split: bool = False


@dataclasses.dataclass(frozen=True)
class Gen:
    stages: dict[str, int]
    tasks: dict[str, tuple[Segment, ...]]


# -- the oracle ---------------------------------------------------------------------------------
def _expand(segs: tuple[Segment, ...], val: dict[str, int]) -> list[tuple[str, str]]:
    """The flat list of (ring, op) with op in acquire/commit/wait/release."""
    out: list[tuple[str, str]] = []
    for seg in segs:
        if seg.flag is not None and bool(val[seg.flag]) == seg.negated:
            continue
        n = seg.bound if isinstance(seg.bound, int) else val[seg.bound]
        # A split segment runs its ops from one guarded copy in even iterations and from the
        # other in odd ones: every iteration still runs them once, in the same order.
        for _ in range(n):
            for ring, side in seg.ops:
                pair = ("acquire", "commit") if side == "p" else ("wait", "release")
                out.extend((ring, op) for op in pair)
    return out


def _run(gen: Gen, val: dict[str, int]) -> bool:
    """True when the tasks finish with every ring filled as often as drained."""
    progs = {t: _expand(segs, val) for t, segs in gen.tasks.items()}
    pc = dict.fromkeys(progs, 0)
    full = {r: [0] * s for r, s in gen.stages.items()}
    empty = {r: [0] * s for r, s in gen.stages.items()}
    used = {(t, r, op): 0 for t in progs for r in gen.stages for op in ("acquire", "wait")}
    moved = True
    while moved:
        moved = False
        for t, prog in progs.items():
            while pc[t] < len(prog):
                ring, op = prog[pc[t]]
                depth = gen.stages[ring]
                if op in ("acquire", "wait"):
                    k = used[(t, ring, op)]
                    stage, rnd = k % depth, k // depth
                    ready = (
                        empty[ring][stage] >= rnd
                        if op == "acquire"
                        else (full[ring][stage] >= rnd + 1)
                    )
                    if not ready:
                        break
                    used[(t, ring, op)] = k + 1
                elif op == "commit":
                    k = used[(t, ring, "acquire")] - 1
                    full[ring][k % depth] += 1
                else:
                    k = used[(t, ring, "wait")] - 1
                    empty[ring][k % depth] += 1
                pc[t] += 1
                moved = True
    if any(pc[t] < len(p) for t, p in progs.items()):
        return False
    for ring in gen.stages:
        fills = sum(used[(t, ring, "acquire")] for t in progs)
        drains = sum(used[(t, ring, "wait")] for t in progs)
        if fills != drains:
            return False
    return True


def oracle_ok(gen: Gen, max_trip: int = MAX_TRIP) -> bool:
    """Whether every valuation up to ``max_trip`` (and every flag value) runs to the end."""
    names = [*SYMBOLS, *FLAGS]
    ranges = [range(max_trip + 1)] * len(SYMBOLS) + [range(2)] * len(FLAGS)
    return all(_run(gen, dict(zip(names, vs, strict=True))) for vs in itertools.product(*ranges))


# -- lowering to ts-ir --------------------------------------------------------------------------
# One runtime placeholder per symbol (equal symbols are the same value; no arithmetic, so the
# verifier keys it by name, and the names differ).
_OBJECTS = {s: type(f"sym_{s}", (), {})() for s in SYMBOLS}


def _bound(b: int | str) -> ConstBound | RuntimeBound:
    if isinstance(b, int):
        return ConstBound(b)
    return RuntimeBound(type(_OBJECTS[b]).__name__, _OBJECTS[b])


def to_plan(gen: Gen) -> KernelPlan:
    """The generated plan as ts-ir (one 1-warp task per task, 1-arrival groups)."""
    group = CooperativeGroupSpec("warp", 1)
    resources = tuple(
        ResourceSpec(
            r,
            pipeline=PipelineSpec(PipelineType.AsyncAsync, s, 0, group, group),
        )
        for r, s in gen.stages.items()
    )
    tasks = []
    for w, (name, segs) in enumerate(gen.tasks.items()):
        ids = itertools.count()
        body: list[Node] = []

        def ops(seg: Segment, ids: itertools.count[int] = ids) -> tuple[Node, ...]:
            out: list[Node] = []
            for ring, side in seg.ops:
                names = (
                    (ScheduleStage.ProducerAcquire, ScheduleStage.ProducerCommit)
                    if side == "p"
                    else (ScheduleStage.ConsumerWait, ScheduleStage.ConsumerRelease)
                )
                out.extend(Step(next(ids), ring, st, st.op_name) for st in names)
            return tuple(out)

        for seg in segs:
            if seg.split:
                inner: tuple[Node, ...] = (
                    ConditionalBlock(Every(2), ops(seg)),
                    ConditionalBlock(Every(2, 1), ops(seg)),
                )
            else:
                inner = ops(seg)
            loop: Node = DomainLoop(ConstBound(0), _bound(seg.bound), ConstBound(1), None, inner)
            if seg.flag is not None:
                loop = ConditionalBlock(OpaqueCondition(seg.flag, seg.negated), (loop,))
            body.append(loop)
        srcs = tuple(sorted({r for s in segs for r, side in s.ops if side == "c"}))
        dsts = tuple(sorted({r for s in segs for r, side in s.ops if side == "p"}))
        tasks.append(TaskSpec(name, w, 1, None, srcs, dsts, Schedule(name, (), tuple(body))))
    return KernelPlan("random", resources, tuple(tasks))


# -- the generator ------------------------------------------------------------------------------
def generate(rng: random.Random) -> Gen:
    """A random plan: 2 to 3 tasks, 1 to 3 rings between them, 1 to 3 segments per task."""
    n_tasks = rng.randint(2, 3)
    names = [f"t{i}" for i in range(n_tasks)]
    stages = {f"r{i}": rng.randint(1, 3) for i in range(rng.randint(1, 3))}
    ends = {r: rng.sample(names, 2) for r in stages}  # (producer, consumer)
    bounds: list[int | str] = [*SYMBOLS, 1, 2, 3]
    tasks: dict[str, list[Segment]] = {t: [] for t in names}
    for ring in stages:
        # The producer gets one or two segments; the consumer mirrors them most of the time
        # (a plan that may be right) and otherwise draws its own (bounds, flags and splits
        # from small pools, so that they sometimes match and sometimes do not).
        shape = []
        for _ in range(rng.randint(1, 2)):
            flag = rng.choice([None, None, *FLAGS])
            neg = flag is not None and rng.random() < 0.3
            shape.append((rng.choice(bounds), flag, neg, rng.random() < 0.2))
        producer, consumer = ends[ring]
        mirror = rng.random() < 0.75
        for who, side in ((producer, "p"), (consumer, "c")):
            for bound, flag, neg, split in shape:
                if side == "c" and not mirror:
                    flag = rng.choice([None, *FLAGS])
                    bound, neg, split = rng.choice(bounds), rng.random() < 0.3, False
                tasks[who].append(Segment(bound, ((ring, side),), flag, neg, split))
    for t in names:
        rng.shuffle(tasks[t])
        # Sometimes two segments of a task merge into one loop (interleaved rings).
        segs = tasks[t]
        if len(segs) >= 2 and rng.random() < 0.4 and segs[0].bound == segs[1].bound:
            a, b = segs[0], segs[1]
            if a.flag == b.flag and a.negated == b.negated and not (a.split or b.split):
                segs[:2] = [Segment(a.bound, a.ops + b.ops, a.flag, a.negated)]
    return Gen(stages, {t: tuple(s) for t, s in tasks.items() if s})
