"""Catalog entries of the schedule rules (``TS-T001``..``TS-T014``, ``TS-T021``).

Names, tokens, blocks, bounds and iteration predicates.
"""

from __future__ import annotations

from functools import partial

from ts_ir import CatalogEntry, entry_from_text

__all__ = ["SCHEDULE_ENTRIES"]

_entry = partial(entry_from_text, "ts-trace")

SCHEDULE_ENTRIES: tuple[CatalogEntry, ...] = (
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
        without `returns=` leaves nothing to route, nor does a producer work (it writes into
        its resource), and a call with one output returns one token, which cannot be unpacked
        into several.
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
        "TS-T021",
        "bad `every()` period or start",
        "pass ints: `loop.every(period, start=s)` with period >= 1 and start >= 0",
        """
        `loop.every(period, start=s)` opens a block that runs on iterations `s`, `s + period`,
        `s + 2 * period` and so on of its domain loop. The period is an int of at least 1 and
        the start an int of at least 0, both within int32 like the loop counter. A float, a
        bool, a string or a runtime value cannot be decided from the iteration count, so it is
        rejected at the line that opened the block.
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8) as loop:
                with loop.every(0):
                    ring.acquire()
                    ring.load()
                    ring.commit()

        load_task(src, ring)
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8) as loop:
                with loop.every(2):
                    ring.acquire()
                    ring.load()
                    ring.commit()

        load_task(src, ring)
        """,
    ),
)
