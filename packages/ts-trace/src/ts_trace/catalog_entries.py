"""The ts-trace part of the error catalog: every ``TS-Txxx`` code, explained with an example.

:mod:`ts_trace.errors` registers :data:`TRACE_ENTRIES` in the :mod:`ts_ir.catalog` registry.
The examples of every layer share :data:`EXAMPLES_PRELUDE` (the resources and schedules of the
copy kernel of "Your first schedule"); verifier examples that do not build a ``plan`` of their
own are checked against the plan that :data:`EXAMPLES_PLAN` builds.
"""

from __future__ import annotations

import textwrap

from ts_ir import CatalogEntry

__all__ = ["EXAMPLES_PLAN", "EXAMPLES_PRELUDE", "TRACE_ENTRIES"]

EXAMPLES_PRELUDE = '''\
import dataclasses
from typing import Any, ClassVar

from ts_ir import (CooperativeGroupSpec, DependencyEdge, Every, PipelineSpec, PipelineType,
                   SmemAllocationSpec, WorkAttr)
from ts_trace import (MemoryResource, TaskDeclaration, TaskLocalVariable, build_plan,
                      consumer_work, domain_loop, producer_work, schedule, when_false,
                      when_true, work_tile_loop)


@dataclasses.dataclass(kw_only=True)
class Source(MemoryResource):
    """Global input: the coordinate of the next tile, and whether that tile is valid."""

    coord: TaskLocalVariable = TaskLocalVariable.uninitialized()
    valid: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.coord = TaskLocalVariable(dtype="Int32", default=0)
        self.valid = TaskLocalVariable(dtype="Boolean", default=True)

    @consumer_work(returns=coord)
    def tile_coord(self, stage_info: Any) -> Any: ...

    @consumer_work(returns=(coord, valid))
    def checked_coord(self, stage_info: Any) -> Any: ...


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    """A pipelined shared-memory ring (smem_bytes: all of its stages)."""

    smem_bytes: int = 0

    def get_smem_requirements(self) -> list[Any]:
        if not self.smem_bytes:
            return []
        return [SmemAllocationSpec(f"{self.name}.tiles", self.smem_bytes, 1024, "Float16")]

    @producer_work
    def load(self, stage_info: Any, *, coord: Any = None) -> None:
        """TMA-load tile `coord` into the acquired stage."""

    @consumer_work
    def read(self, stage_info: Any) -> None:
        """Read the waited stage into registers."""

    @consumer_work(work_attrs=WorkAttr.ASYNC_READ)
    def mma(self, stage_info: Any) -> None:
        """Issue WGMMA on the waited stage (it reads the stage until retired)."""

    @consumer_work(work_attrs=WorkAttr.ASYNC_WAIT_ALL)
    def mma_wait(self, stage_info: Any) -> None:
        """wgmma.wait_group 0: retire every WGMMA in flight."""


@dataclasses.dataclass(kw_only=True)
class Sink(MemoryResource):
    """Global output, written through an optional shared-memory staging buffer."""

    smem_bytes: int = 0

    def get_smem_requirements(self) -> list[Any]:
        if not self.smem_bytes:
            return []
        return [SmemAllocationSpec(f"{self.name}.tiles", self.smem_bytes, 1024, "Float16")]

    @producer_work
    def store(self, stage_info: Any) -> None:
        """Write the tile out."""


@dataclasses.dataclass(kw_only=True)
class Tiles(MemoryResource):
    """The persistent work queue."""

    is_work_queue: ClassVar[bool] = True
    tile: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.tile = TaskLocalVariable(dtype="WorkTileInfo", default=None)

    def is_past_end(self, work_tile: Any) -> bool:
        return work_tile is None

    @consumer_work(returns=tile)
    def next_tile(self, stage_info: Any) -> Any: ...


class Gemm:
    """The task class: per-tile loop lengths."""

    def k_blocks(self, work_tile_coord: Any) -> Any: ...


group = CooperativeGroupSpec("thread", 128)  # one 4-warp task on each side
src, dst, tiles = Source(name="src"), Sink(name="dst"), Tiles(name="tiles")
ring = Ring(name="ring", pipeline_config=PipelineSpec(PipelineType.AsyncAsync, 2, 0, group, group))


@schedule
def load_task(src, ring):
    with domain_loop(8):
        coord = src.tile_coord()
        ring.acquire()
        ring.load(coord=coord)
        ring.commit()


@schedule
def store_task(ring, dst):
    with domain_loop(8):
        ring.wait()
        ring.read()
        dst.store()
        ring.release()
'''
"""Resources and schedules that every catalog example starts from (the copy kernel)."""

EXAMPLES_PLAN = """\
plan = build_plan(
    [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
     TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
    {ring: [src], dst: [ring]},
    name="copy")
"""
"""How verifier examples that build no ``plan`` of their own are turned into a kernel plan."""


def _entry(
    code: str, title: str, fix: str, explanation: str, wrong: str, right: str
) -> CatalogEntry:
    return CatalogEntry(
        code=code,
        title=title,
        explanation=" ".join(explanation.split()),
        wrong=textwrap.dedent(wrong).strip("\n"),
        right=textwrap.dedent(right).strip("\n"),
        fix=fix,
        layer="ts-trace",
    )


TRACE_ENTRIES: tuple[CatalogEntry, ...] = (
    _entry(
        "TS-T001",
        "reserved name used as a work method",
        "rename the method; acquire, try_acquire, commit, wait, try_wait and release are "
        "pipeline operations",
        """
        Inside a schedule every resource offers the pipeline operations `acquire`,
        `try_acquire`, `commit`, `wait`, `try_wait` and `release`: they lower to the waits and
        arrivals on the resource's mbarriers. A work method with one of these names would be
        confused with the operation, so the resource class is rejected when it is defined.
        """,
        """
        @dataclasses.dataclass(kw_only=True)
        class Staging(MemoryResource):
            @producer_work
            def commit(self, stage_info: Any) -> None:
                \"\"\"Write the tile to shared memory.\"\"\"
        """,
        """
        @dataclasses.dataclass(kw_only=True)
        class Staging(MemoryResource):
            @producer_work
            def write_tile(self, stage_info: Any) -> None:
                \"\"\"Write the tile to shared memory.\"\"\"
        """,
    ),
    _entry(
        "TS-T002",
        "unknown work method",
        "call a method decorated with @producer_work or @consumer_work on this resource",
        """
        In a schedule, a resource argument only knows its pipeline operations and the methods
        decorated with `@producer_work` or `@consumer_work`: those are the things a task can do
        to it at run time. Any other attribute (a typo, a plain helper method, a field such
        as `pipeline_config`) stops the trace at that line, with a did-you-mean suggestion when
        a work method has a similar name.
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord = src.tile_coord()
                ring.acquire()
                ring.lod(coord=coord)
                ring.commit()

        load_task(src, ring)
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()

        load_task(src, ring)
        """,
    ),
    _entry(
        "TS-T003",
        "data-flow token used after it went stale",
        "use the token returned by the latest call that writes this output",
        """
        A consumer work call stores its result in a task-local variable of the resource (a
        register of the task) and returns a token that stands for the stored value. A later
        call that writes the same variable overwrites that register, so the earlier token no
        longer holds the value it was returned with. TS rejects the use instead of silently
        routing the newer value.
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord = src.tile_coord()
                src.tile_coord()  # prefetch: overwrites `coord`
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()

        load_task(src, ring)
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                src.tile_coord()
                coord = src.tile_coord()  # the latest value
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()

        load_task(src, ring)
        """,
    ),
    _entry(
        "TS-T004",
        "data-flow token used outside the block that produced it",
        "produce the value in the enclosing block, or move the use inside the block",
        """
        A token produced inside a `domain_loop`, `when_true` or other block refers to a value
        written in that block. After the block it may hold the value of any iteration, or no
        value at all when the block did not run (zero trips, a false condition). Values flow
        into inner blocks, never out of them.
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord = src.tile_coord()
            ring.acquire()
            ring.load(coord=coord)
            ring.commit()

        load_task(src, ring)
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()

        load_task(src, ring)
        """,
    ),
    _entry(
        "TS-T005",
        "data-flow token from another schedule",
        "tokens only flow within the schedule function that produced them",
        """
        Each task runs on its own warps with its own registers, and a token names a
        task-local variable of the schedule that traced it. Smuggled into another schedule
        (through a list, a global or a closure) it would read a register that the other task
        never wrote. Data crosses tasks only through resources: produce it into a pipelined
        resource in one task and consume it in the other.
        """,
        """
        coords = []

        @schedule
        def index_task(src):
            coords.append(src.tile_coord())

        @schedule
        def load_task(src, ring):
            ring.acquire()
            ring.load(coord=coords[0])
            ring.commit()

        index_task(src)
        load_task(src, ring)
        """,
        """
        @schedule
        def load_task(src, ring):
            coord = src.tile_coord()
            ring.acquire()
            ring.load(coord=coord)
            ring.commit()

        load_task(src, ring)
        """,
    ),
    _entry(
        "TS-T006",
        "value is not a routable data-flow token",
        "declare the output with @consumer_work(returns=...) and pass the token by keyword",
        """
        Only outputs declared with `@consumer_work(returns=...)` are kept at run time (in
        task-local variables), so only they can be routed into later work calls. A work method
        without `returns=` leaves nothing to route, and a call with one output returns one
        token, which cannot be unpacked into several.
        """,
        """
        @schedule
        def load_task(src, ring):
            coord, valid = src.tile_coord()  # tile_coord has one output
            ring.acquire()
            ring.load(coord=coord)
            ring.commit()

        load_task(src, ring)
        """,
        """
        @schedule
        def load_task(src, ring):
            coord, valid = src.checked_coord()  # returns=(coord, valid)
            ring.acquire()
            ring.load(coord=coord)
            ring.commit()

        load_task(src, ring)
        """,
    ),
    _entry(
        "TS-T007",
        "work_tile_loop misplaced",
        "open exactly one work_tile_loop, at the top level of the schedule",
        """
        A persistent task iterates the work queue once, in a `work_tile_loop` that is the
        outermost loop of its schedule: every task fetches the tiles in the same order, which
        is how the stages they exchange belong to the same tile. A second `work_tile_loop`, one
        nested in another block, or one over a resource that is not a work queue cannot be
        lowered to the persistent tile scheduler.
        """,
        """
        @schedule
        def load_task(tiles, src, ring):
            with domain_loop(2), work_tile_loop(tiles):
                tiles.next_tile()
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()

        load_task(tiles, src, ring)
        """,
        """
        @schedule
        def load_task(tiles, src, ring):
            with work_tile_loop(tiles):
                tiles.next_tile()
                with domain_loop(2):
                    coord = src.tile_coord()
                    ring.acquire()
                    ring.load(coord=coord)
                    ring.commit()

        load_task(tiles, src, ring)
        """,
    ),
    _entry(
        "TS-T008",
        "iteration predicate outside a domain loop",
        "put the block inside `with domain_loop(...)`",
        """
        `first_iter()`, `last_iter()`, `every(n)` and `when_true(Every(n))` test the iteration
        counter of the innermost `domain_loop`: they lower to comparisons of that counter.
        Outside every loop there is no counter, and an outer loop's predicate cannot be used
        inside an inner loop, where the counter is the inner one.
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(8) as k:
                ring.wait()
                ring.read()
                ring.release()
            with k.last_iter():
                dst.store()

        store_task(ring, dst)
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(8) as k:
                ring.wait()
                ring.read()
                ring.release()
                with k.last_iter():
                    dst.store()

        store_task(ring, dst)
        """,
    ),
    _entry(
        "TS-T009",
        "when_false on an iteration predicate",
        "use when_true with the complementary predicate; when_false takes work-call outputs only",
        """
        `when_false` negates a run-time value read from a task-local variable. The complement
        of an iteration predicate (every iteration but the first, or but every second one) is
        not always one contiguous region of the lowered loop, so it cannot be negated: state
        the complementary predicate itself with `when_true`.
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(8):
                ring.wait()
                ring.read()
                with when_false(Every(2)):
                    dst.store()
                ring.release()

        store_task(ring, dst)
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(8):
                ring.wait()
                ring.read()
                with when_true(Every(2, start=1)):
                    dst.store()
                ring.release()

        store_task(ring, dst)
        """,
    ),
    _entry(
        "TS-T010",
        "nested condition blocks",
        "use sibling blocks; only skippable() may contain a condition block",
        """
        Each condition block lowers to one predicated region, and the verifier counts the
        brackets run under each condition. A block inside another block would need the
        conjunction of two conditions, which the schedule grammar does not express: use
        sibling blocks, or let a work method compute the combined condition and test its
        output. Only a `skippable()` region may contain condition blocks.
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8) as k:
                coord, valid = src.checked_coord()
                with when_true(valid), k.every(2):
                    ring.acquire()
                    ring.load(coord=coord)
                    ring.commit()

        load_task(src, ring)
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                # checked_coord() folds "every second iteration" into `valid`
                coord, valid = src.checked_coord()
                with when_true(valid):
                    ring.acquire()
                    ring.load(coord=coord)
                    ring.commit()

        load_task(src, ring)
        """,
    ),
    _entry(
        "TS-T011",
        "skippable() without skip_if",
        "pass skip_if=... to work_tile_loop, and call skippable() inside that loop",
        """
        `skippable()` marks the part of a work-tile iteration that is left out for the tiles
        that the loop's `skip_if` predicate rejects, while the queue bookkeeping still runs in
        every task so that all tasks stay on the same tile. Without `skip_if` nothing decides
        which tiles skip, and outside its `work_tile_loop` there is no tile.
        """,
        """
        @schedule
        def load_task(tiles, src, ring):
            with work_tile_loop(tiles) as t:
                tiles.next_tile()
                with t.skippable():
                    coord = src.tile_coord()

        load_task(tiles, src, ring)
        """,
        """
        @schedule
        def load_task(tiles, src, ring):
            with work_tile_loop(tiles, skip_if=Tiles.is_past_end) as t:
                tiles.next_tile()
                with t.skippable():
                    coord = src.tile_coord()

        load_task(tiles, src, ring)
        """,
    ),
    _entry(
        "TS-T012",
        "bad domain_loop bounds",
        "give 1 to 3 range-style bounds with a non-zero step",
        """
        `domain_loop` takes `range`-style bounds: `(end)`, `(start, end)` or
        `(start, end, step)`, each an int, a run-time integer or a per-tile method of the task
        class; the step must not be 0 and `unroll` must be a positive int. A token is not a
        bound: the trip count is computed when the loop starts, by a method the runtime calls
        for each work tile.
        """,
        """
        @schedule
        def load_task(src, ring):
            n = src.tile_coord()
            with domain_loop(n):
                ring.acquire()
                ring.load()
                ring.commit()

        load_task(src, ring)
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(Gemm.k_blocks):
                ring.acquire()
                ring.load()
                ring.commit()

        load_task(src, ring)
        """,
    ),
    _entry(
        "TS-T013",
        "callable bound is not a class-accessed method",
        "pass MyTask.get_domain "
        "(the function on the class, taking self and the work-tile coordinate)",
        """
        A per-tile trip count is a method of the task class, passed as accessed on the class
        (`Gemm.k_blocks`): the runtime calls it as `(self, work_tile_coord)` for every work
        tile, and the verifier knows that two loops over the same method run equally often.
        A bound method of some instance, a lambda or a free function has neither the call
        convention nor that identity.
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(Gemm().k_blocks):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()

        load_task(src, ring)
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(Gemm.k_blocks):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()

        load_task(src, ring)
        """,
    ),
    _entry(
        "TS-T014",
        "condition is not a work-call output",
        "pass a token returned by a "
        "@consumer_work call, or an iteration predicate such as Every(2)",
        """
        A condition block is decided on the GPU, so its condition must be a run-time value: a
        token returned by a consumer work call (read from its task-local variable) or an
        iteration predicate. A Python `if` on a token, or `when_true` on a bool or constant,
        would be decided once while tracing, leaving the block always or never in the kernel;
        TS refuses to guess.
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord, valid = src.checked_coord()
                if valid:
                    ring.acquire()
                    ring.load(coord=coord)
                    ring.commit()

        load_task(src, ring)
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord, valid = src.checked_coord()
                with when_true(valid):
                    ring.acquire()
                    ring.load(coord=coord)
                    ring.commit()

        load_task(src, ring)
        """,
    ),
    _entry(
        "TS-T015",
        "schedule construct used outside @schedule",
        "call it inside a function decorated with @schedule",
        """
        `domain_loop`, `work_tile_loop`, `when_true` and `when_false` record blocks into the
        schedule being traced; they do nothing at run time by themselves. Outside a function
        decorated with `@schedule`, or in a helper called after the trace ended, there is no
        schedule to record into.
        """,
        """
        def load_task(src, ring):
            with domain_loop(8):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()

        load_task(src, ring)
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()

        load_task(src, ring)
        """,
    ),
    _entry(
        "TS-T016",
        "schedule argument is not a resource",
        "pass MemoryResource instances to the schedule function",
        """
        A schedule is traced with the task's resources: each argument becomes a proxy that
        records what the task does to that resource. Other values (numbers, tensors,
        configuration objects) have nothing to record; close over them instead. Two resources
        with the same name are rejected too, since the plan could not tell them apart.
        """,
        """
        @schedule
        def load_task(src, ring, trips):
            with domain_loop(trips):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()

        load_task(src, ring, 8)
        """,
        """
        TRIPS = 8

        @schedule
        def load_task(src, ring):
            with domain_loop(TRIPS):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()

        load_task(src, ring)
        """,
    ),
    _entry(
        "TS-T017",
        "bad work-call arguments",
        "work calls take keyword arguments only; TS supplies stage_info",
        """
        Work calls take keyword arguments only: each keyword names a parameter of the work
        method and routes a token into it, so the plan records which value feeds which
        parameter. TS passes `stage_info` (the stage index, phase and loop position) itself.
        Positional arguments, unknown keywords and arguments to pipeline operations are
        rejected.
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord)
                ring.commit()

        load_task(src, ring)
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()

        load_task(src, ring)
        """,
    ),
    _entry(
        "TS-T018",
        "bad task-local variable",
        "declare `x: TaskLocalVariable = "
        "TaskLocalVariable.uninitialized()` and assign TaskLocalVariable(dtype=..., "
        "default=...) in __post_init__",
        """
        A task-local variable is a per-task register that keeps a consumer work's output
        between calls. It is declared as a dataclass field with
        `TaskLocalVariable.uninitialized()` and assigned its own
        `TaskLocalVariable(dtype=..., default=...)` in `__post_init__`, so that every resource
        instance gets its own slot with a known type and initial value.
        """,
        """
        @dataclasses.dataclass(kw_only=True)
        class Counter(MemoryResource):
            count: TaskLocalVariable = TaskLocalVariable.uninitialized()

            @consumer_work(returns=count)
            def bump(self, stage_info: Any) -> Any: ...

        @schedule
        def count_task(counter):
            counter.bump()

        count_task(Counter(name="counter"))
        """,
        """
        @dataclasses.dataclass(kw_only=True)
        class Counter(MemoryResource):
            count: TaskLocalVariable = TaskLocalVariable.uninitialized()

            def __post_init__(self) -> None:
                self.count = TaskLocalVariable(dtype="Int32", default=0)

            @consumer_work(returns=count)
            def bump(self, stage_info: Any) -> Any: ...

        @schedule
        def count_task(counter):
            counter.bump()

        count_task(Counter(name="counter"))
        """,
    ),
    _entry(
        "TS-T019",
        "bad work declaration",
        "decorate methods as @consumer_work(returns=...) "
        "with task-local outputs of the same resource",
        """
        A consumer work's `returns=` names the task-local variables of its own resource where
        its outputs are stored. A name the resource does not declare leaves the output
        nowhere to go. Producer work writes into the resource itself and declares no outputs.
        """,
        """
        @dataclasses.dataclass(kw_only=True)
        class Counter(MemoryResource):
            count: TaskLocalVariable = TaskLocalVariable.uninitialized()

            def __post_init__(self) -> None:
                self.count = TaskLocalVariable(dtype="Int32", default=0)

            @consumer_work(returns="cnt")
            def bump(self, stage_info: Any) -> Any: ...

        @schedule
        def count_task(counter):
            counter.bump()

        count_task(Counter(name="counter"))
        """,
        """
        @dataclasses.dataclass(kw_only=True)
        class Counter(MemoryResource):
            count: TaskLocalVariable = TaskLocalVariable.uninitialized()

            def __post_init__(self) -> None:
                self.count = TaskLocalVariable(dtype="Int32", default=0)

            @consumer_work(returns=count)
            def bump(self, stage_info: Any) -> Any: ...

        @schedule
        def count_task(counter):
            counter.bump()

        count_task(Counter(name="counter"))
        """,
    ),
    _entry(
        "TS-T020",
        "bad kernel declaration",
        "give tasks and resources unique names and list "
        "every resource a schedule uses among the task's sources or destinations",
        """
        `build_plan` turns the task declarations into a kernel plan: each task's warps, the
        resources it consumes (`src_resources`) and produces (`dst_resources`), and the
        dependency graph. Every resource a schedule touches must be listed by its task, since
        barrier initialization and arrival counts follow from these lists; names must be
        unique because diagnostics, barriers and generated code refer to them.
        """,
        """
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [], 4, 4, store_task(ring, dst), name="storer")],
            {ring: [src], dst: [ring]})
        """,
        """
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
            {ring: [src], dst: [ring]})
        """,
    ),
)
"""The entries of every ``TS-Txxx`` code, sorted by code."""
