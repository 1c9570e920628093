"""TS-V224 with one work tile standing for all (``ts_verify.tmem_lifetime.one_tile_proves``).

The plans are persistent Blackwell GEMMs over a tile queue: ``load`` fills ``operands``,
``mma`` allocates TMEM before its tile loop and accumulates into ``acc`` (it owns a TMEM
block), ``epilogue`` reads ``acc``; optionally it hands each tile on to ``side`` through the
ring ``note`` (which owns a TMEM block too: ``side``'s read of it is a TMEM use). One task
frees TMEM after its tile loop.

The reduced check must find every plan at fault that the full enumeration (``reduce=False``,
every valuation up to the cut-off: the old check) finds. The full enumeration is the oracle
here: the tests compare the two on every plan of a handmade family and on random ring plans
given TMEM, and check the handmade verdicts against what the hardware does (a use that the
dealloc can overtake is a fault), decided by hand per shape.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest
from ring_oracle import is_persistent
from ring_oracle_plans import generate, to_plan

from ts_ir import (
    CooperativeGroupSpec,
    KernelPlan,
    Node,
    PipelineSpec,
    PipelineType,
    ResourceSpec,
    ScheduleStage,
    Step,
    TmemAllocationSpec,
    WorkAttr,
)
from ts_trace import (
    MemoryResource,
    TaskDeclaration,
    TaskLocalVariable,
    build_plan,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    when_true,
    work_tile_loop,
)
from ts_verify import runs, tmem_lifetime, verify, whole_kernel
from ts_verify.tmem_lifetime import check_tmem_order
from ts_verify.unroll import Valuation
from ts_verify.whole_kernel import Part


@dataclasses.dataclass(kw_only=True)
class Queue(MemoryResource):
    is_work_queue: ClassVar[bool] = True
    next_tile: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.next_tile = TaskLocalVariable(dtype="Int32", default=0)

    @producer_work
    def fetch_next_tile(self, stage_info: Any) -> None: ...

    @consumer_work(returns=next_tile)
    def read_next_tile(self, stage_info: Any) -> Any: ...


@dataclasses.dataclass(kw_only=True)
class Tmem(MemoryResource):
    @consumer_work(work_attrs=WorkAttr.TMEM_ALLOC)
    def allocate(self, stage_info: Any) -> None: ...

    @consumer_work(work_attrs=WorkAttr.TMEM_DEALLOC)
    def free(self, stage_info: Any) -> None: ...


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    @producer_work
    def fill(self, stage_info: Any) -> None: ...

    @consumer_work
    def drain(self, stage_info: Any) -> None: ...


@dataclasses.dataclass(kw_only=True)
class Flags(MemoryResource):
    hot: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.hot = TaskLocalVariable(dtype="Boolean", default=False)

    @consumer_work(returns=hot)
    def read(self, stage_info: Any) -> Any: ...


class Gemm:
    """Stand-in for a Task subclass: the K steps of a tile, computed per tile."""

    def k_tiles(self, work_tile_coord: Any) -> Any:
        return work_tile_coord


@dataclasses.dataclass(frozen=True)
class Shape:
    """One plan of the family.

    ``frees``: the task that frees TMEM after its tile loop (``"none"``: none does).
    ``side``: ``epilogue`` hands each tile to ``side`` through ``note`` (``note_stages``
    deep); ``hot``: ``side`` reads ``note``'s TMEM only when a per-tile flag is set;
    ``tail``: ``side`` tells ``epilogue`` it is done after its tile loop (ring ``fin``: a ring
    operation outside the tile loops). ``per_tile``: ``mma`` allocates and frees in every tile
    instead. ``k``: the K loop (a constant, or ``"tile"``: a per-tile getter). ``clc``: a
    scheduler task fetches each next tile into the queue's ring, which every task reads at
    the end of its tile (as ``examples/blackwell/gemm.py``'s tasks do).
    """

    frees: str = "epilogue"
    acc_stages: int = 2
    side: bool = False
    note_stages: int = 1
    hot: bool = False
    tail: bool = False
    per_tile: bool = False
    k: int | str = 2
    clc: bool = False


def _threads(n: int) -> CooperativeGroupSpec:
    return CooperativeGroupSpec("thread", n)


def _next_tile(wq: Any, shape: Shape) -> None:
    if shape.clc:
        wq.wait()
        wq.read_next_tile()
        wq.release()


def plan_of(shape: Shape) -> KernelPlan:
    readers = 128 + 32 * (3 + shape.side)  # the epilogue's warpgroup, the other tasks' warps
    clc = PipelineSpec(PipelineType.ClcFetchAsync, 2, 16, _threads(1), _threads(readers))
    wq = Queue(name="tiles", pipeline_config=clc if shape.clc else None)
    tmem, flags = Tmem(name="tmem"), Flags(name="flags")
    operands = Ring(
        name="operands",
        pipeline_config=PipelineSpec(PipelineType.AsyncUmma, 2, 0, _threads(32), _threads(1)),
    )
    acc = Ring(
        name="acc",
        pipeline_config=PipelineSpec(
            PipelineType.UmmaAsync, shape.acc_stages, 0, _threads(1), _threads(128)
        ),
    )
    note = Ring(
        name="note",
        pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync, shape.note_stages, 0, _threads(128), _threads(32)
        ),
    )
    fin = Ring(
        name="fin",
        pipeline_config=PipelineSpec(PipelineType.AsyncAsync, 1, 0, _threads(32), _threads(128)),
    )
    k = Gemm.k_tiles if shape.k == "tile" else shape.k

    @schedule
    def loader(wq: Any, operands: Any) -> None:
        with work_tile_loop(wq):
            with domain_loop(k):
                operands.acquire()
                operands.fill()
                operands.commit()
            _next_tile(wq, shape)

    @schedule
    def mma(wq: Any, tmem: Any, operands: Any, acc: Any) -> None:
        if not shape.per_tile:
            tmem.allocate()
        with work_tile_loop(wq):
            if shape.per_tile:
                tmem.allocate()
            acc.acquire()
            with domain_loop(k):
                operands.wait()
                acc.fill()
                operands.release()
            acc.commit()
            if shape.per_tile:
                tmem.free()
            _next_tile(wq, shape)
        if shape.frees == "mma":
            tmem.free()

    @schedule
    def epilogue(wq: Any, tmem: Any, acc: Any, note: Any, fin: Any) -> None:
        with work_tile_loop(wq):
            acc.wait()
            acc.drain()
            if shape.side:
                note.acquire()
                note.fill()
                note.commit()
            acc.release()
            _next_tile(wq, shape)
        if shape.tail:
            fin.wait()
            fin.release()
        if shape.frees == "epilogue":
            tmem.free()

    @schedule
    def side(wq: Any, tmem: Any, note: Any, flags: Any, fin: Any) -> None:
        with work_tile_loop(wq):
            hot = flags.read()
            note.wait()
            if shape.hot:
                with when_true(hot):
                    note.drain()
            else:
                note.drain()
            note.release()
            _next_tile(wq, shape)
        if shape.tail:
            fin.acquire()
            fin.commit()
        if shape.frees == "side":
            tmem.free()

    @schedule
    def scheduler(wq: Any) -> None:
        with work_tile_loop(wq):
            wq.acquire()
            wq.fetch_next_tile()
            wq.commit()
            _next_tile(wq, shape)

    ends = [fin] if shape.tail else []
    tasks = [
        TaskDeclaration(
            [wq, tmem, acc, *ends],
            [note] if shape.side else [],
            0,
            4,
            epilogue(wq, tmem, acc, note, fin),
            name="epilogue",
        ),
        TaskDeclaration([wq], [operands], 4, 1, loader(wq, operands), name="load"),
        TaskDeclaration(
            [wq, tmem, operands], [acc], 5, 1, mma(wq, tmem, operands, acc), name="mma"
        ),
    ]
    if shape.side:
        side_task = side(wq, tmem, note, flags, fin)
        tasks.append(TaskDeclaration([wq, tmem, note, flags], ends, 6, 1, side_task, name="side"))
    if shape.clc:
        tasks.append(TaskDeclaration([wq], [wq], 7, 1, scheduler(wq), name="sched"))
    graph: dict[Any, list[Any]] = {acc: [operands, wq], operands: [wq]}
    if shape.side:
        graph[note] = [acc]
    plan = build_plan(tasks, graph, name="tmem_order")
    blocks = [TmemAllocationSpec("acc", 256, 0, "acc")]
    if shape.side:
        blocks.append(TmemAllocationSpec("note", 128, 256, "note"))
    return dataclasses.replace(plan, tmem=tuple(blocks))


def _codes(found: tuple[list[Any], int]) -> list[str]:
    return [d.code for d in found[0]]


def _at_fault(shape: Shape) -> bool:
    """What the hardware does: can the dealloc overtake a use (the oracle of the family)?

    ``mma`` freeing after its loop overtakes the epilogue's ``tcgen05.ld`` of the last
    tiles (nothing of the epilogue comes back to ``mma`` after them); ``epilogue`` freeing
    while ``side`` still reads ``note`` (its release only lets a later ``acquire`` of
    ``epilogue`` pass) overtakes ``side``'s reads of the last tiles, unless ``side`` tells
    it through ``fin`` after its loop; freeing per tile right after ``acc.commit``
    overtakes that tile's epilogue.
    """
    if shape.per_tile or shape.frees == "mma":
        return True
    return shape.side and shape.frees == "epilogue" and not shape.tail


def _family() -> list[Shape]:
    out = []
    for frees, acc_stages, side, note_stages, hot, tail in itertools.product(
        ("epilogue", "mma", "side"), (1, 2), (False, True), (1, 2), (False, True), (False, True)
    ):
        if not side and (frees == "side" or note_stages == 2 or hot or tail):
            continue
        out.append(Shape(frees, acc_stages, side, note_stages, hot, tail))
    out.append(Shape(frees="none", per_tile=True))
    return out


def test_the_reduced_check_agrees_with_every_valuation_and_the_hardware() -> None:
    # Every plan of the family that the other checks pass: the reduced check (one work tile
    # where one_tile_proves) finds a fault exactly when the full enumeration does, and
    # exactly when the dealloc can overtake a use.
    judged = reduced = 0
    for shape in _family():
        plan = plan_of(shape)
        others = [c for c in verify(plan).codes() if c != "TS-V224"]
        assert not others, (shape, others)
        full, short = check_tmem_order(plan, reduce=False), check_tmem_order(plan)
        assert _codes(short) == _codes(full) == (["TS-V224"] if _at_fault(shape) else []), shape
        assert short[1] <= full[1]
        judged += 1
        reduced += short[1] < full[1]
    # The ten right plans whose tiles are independent take one tile.
    assert (judged, reduced) == (53, 10)


def test_the_reduction_is_taken_on_independent_tiles() -> None:
    # A K loop of a per-tile length: every first tile against every later one up to the
    # cut-off is hundreds of runs; one tile of each length is a dozen.
    plan = plan_of(Shape(k="tile"))
    report = verify(plan)
    assert report.ok, report.as_text()
    runs = dict(report.stats)["tmem_runs"]
    full = check_tmem_order(plan, reduce=False)
    assert full == ([], full[1]) and runs <= 12 and full[1] > 50 * runs


def test_a_fault_only_a_later_tile_shows_is_found_with_one_tile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `side` reads `note`'s TMEM only in tiles whose flag is set, and only the reads of the
    # last two tiles (`note` has two stages) can come after `epilogue`'s free: in a run of
    # three tiles or more, the first tile flagged and the others not shows nothing, the
    # first tile not flagged and the others flagged shows it. No fault of a plan that
    # one_tile_proves accepts needs two tiles (tmem_lifetime's docstring: the run of a faulty
    # use's tile alone is faulty too), so the reduction keeps one tile but every value of the
    # per-tile symbols on it; keeping fewer (no tile, or the first tile's flag clear, as in
    # the first valuation of a longer run) would miss this one. Both are tried below.
    shape = Shape(side=True, note_stages=2, hot=True)
    plan = plan_of(shape)
    found, runs = check_tmem_order(plan)
    assert [d.code for d in found] == ["TS-V224"] and runs <= 4
    d = found[0]
    assert (d.task, d.resource) == ("epilogue", "tmem")
    assert "note.drain` of task `side`" in d.message
    # One tile (the default count is left out), flagged.
    assert d.trace is not None and d.trace.valuation == (("flags.read.hot#0 (tile 0)", "True"),)

    real = whole_kernel.part_valuations

    def fewer(keep: Callable[[Valuation], bool]) -> list[str]:
        def vals(part: Part, tiles: int | None) -> Iterator[Valuation]:
            return (v for v in real(part, tiles) if keep(v))

        monkeypatch.setattr(tmem_lifetime, "part_valuations", vals)
        return _codes(check_tmem_order(plan))

    assert fewer(lambda v: v.tiles == 0) == []
    assert fewer(lambda v: not any(v.conditions.values())) == []
    assert fewer(lambda v: True) == ["TS-V224"]


def test_a_tile_scheduler_on_both_sides_of_its_queue_still_takes_one_tile() -> None:
    # The scheduler task fills and reads the queue's ring in every tile: counted per side
    # (whole_kernel.sides_balance), every tile balances it, and the reduction stands.
    judged = 0
    for shape in _family():
        if shape.acc_stages == 1 or shape.note_stages == 2 or shape.hot:
            continue
        plan = plan_of(dataclasses.replace(shape, clc=True))
        assert verify(plan).codes() == (["TS-V224"] if _at_fault(shape) else []), shape
        full, short = check_tmem_order(plan, reduce=False), check_tmem_order(plan)
        assert _codes(short) == _codes(full), shape
        if not full[0] and not shape.tail:
            assert short[1] * 5 < full[1], shape
        judged += 1
    assert judged == 9


def test_the_deadlock_check_takes_one_tile_with_a_scheduler_on_both_sides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The same per-side balance lets the deadlock check (runs.check_runs) run one
    # work tile where a scheduler task fills and reads its queue; its verdict is the one of
    # every valuation up to the cut-off (independent_tiles forced off), in fewer runs.
    judged = 0
    for shape in _family():
        plan = plan_of(dataclasses.replace(shape, clc=True))
        found, stats = runs.check_runs(plan)
        with monkeypatch.context() as m:
            m.setattr(runs, "independent_tiles", lambda part, tasks: False)
            full, full_stats = runs.check_runs(plan)
        assert [d.code for d in found] == [d.code for d in full], shape
        if not full and full_stats["runs"] > 0:
            assert stats["tile_local"] >= 1 and stats["runs"] < full_stats["runs"], shape
            judged += 1
    assert judged >= 9


def test_a_ring_outside_the_tile_loops_runs_every_valuation() -> None:
    # `side` tells `epilogue` through `fin` after its tile loop: the tiles are not
    # independent (a ring operation outside them), so every valuation runs, and the plan is
    # right (every read of `side` comes before `fin`'s commit, the free after its wait).
    plan = plan_of(Shape(side=True, tail=True))
    found, runs = check_tmem_order(plan)
    assert found == [] and runs == check_tmem_order(plan, reduce=False)[1] > 4


def test_a_lifetime_per_tile_runs_every_valuation() -> None:
    # An alloc and a dealloc inside the tile loop: one lifetime per tile, so a run of one
    # tile does not stand for the others; the full enumeration finds the free before the
    # epilogue's read of the tile.
    plan = plan_of(Shape(frees="none", per_tile=True))
    found, runs = check_tmem_order(plan)
    assert _codes((found, runs)) == ["TS-V224"]
    assert "acc.drain` of task `epilogue`" in found[0].message


# -- random ring plans with TMEM -------------------------------------------------------------
_ALLOC, _DEALLOC = WorkAttr.TMEM_ALLOC, WorkAttr.TMEM_DEALLOC
_USE = {
    ScheduleStage.ProducerAcquire: ScheduleStage.ProducerWork,
    ScheduleStage.ConsumerWait: ScheduleStage.ConsumerWork,
}


def _with_uses(body: tuple[Node, ...], ids: Iterator[int]) -> tuple[Node, ...]:
    """``body`` with a work call on the ring after every acquire and wait (renumbered)."""
    out: list[Node] = []
    for node in body:
        if isinstance(node, Step):
            out.append(dataclasses.replace(node, id=next(ids)))
            if node.stage in _USE:
                out.append(Step(next(ids), node.resource, _USE[node.stage], "use"))
        else:
            out.append(dataclasses.replace(node, body=_with_uses(node.body, ids)))
    return tuple(out)


def _tmem_plan(seed: int) -> KernelPlan | None:
    """A persistent random ring plan whose rings' work uses TMEM of some of them, allocated
    at the top of one task and freed at the end of one (the same or another), or None."""
    rng = random.Random(seed)
    gen = generate(rng, small=True)
    if not is_persistent(gen):
        return None
    plan = to_plan(gen)
    rings = [r.name for r in plan.resources if r.pipeline is not None]
    owners = rng.sample(rings, rng.randint(1, len(rings)))
    alloc, free = rng.randrange(len(plan.tasks)), rng.randrange(len(plan.tasks))
    tasks = []
    for i, task in enumerate(plan.tasks):
        ids = itertools.count()
        body: tuple[Node, ...] = ()
        if i == alloc:
            step = Step(next(ids), "tmem", ScheduleStage.ConsumerWork, "allocate", _ALLOC)
            body += (step,)
        body += _with_uses(task.schedule.body, ids)
        if i == free:
            body += (Step(next(ids), "tmem", ScheduleStage.ConsumerWork, "free", _DEALLOC),)
        tasks.append(
            dataclasses.replace(
                task,
                sources=task.sources + (("tmem",) if i in (alloc, free) else ()),
                schedule=dataclasses.replace(task.schedule, body=body),
            )
        )
    return dataclasses.replace(
        plan,
        resources=(*plan.resources, ResourceSpec("tmem")),
        tasks=tuple(tasks),
        tmem=tuple(TmemAllocationSpec(o, 64, 64 * j, o) for j, o in enumerate(owners)),
    )


def test_random_plans_reduced_and_full_agree() -> None:
    # Random persistent ring plans (flags, skips, per-tile bounds, lags) with TMEM: wherever
    # the other checks pass, the reduced check and the full enumeration give the same verdict.
    judged = faulty = reduced = 0
    for seed in range(600):
        plan = _tmem_plan(seed)
        if plan is None or any(c != "TS-V224" for c in verify(plan).codes()):
            continue
        full, short = check_tmem_order(plan, reduce=False), check_tmem_order(plan)
        assert _codes(short) == _codes(full), seed
        judged += 1
        faulty += bool(full[0])
        reduced += short[1] < full[1]
    assert judged >= 80 and 20 <= faulty < judged and reduced >= 20
