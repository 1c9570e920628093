"""Catalog entries of the per-task checks (``TS-V1xx``): brackets, roles, balance."""

from __future__ import annotations

from functools import partial

from ts_ir import CatalogEntry, entry_from_text

__all__ = ["TASK_ENTRIES"]

_entry = partial(entry_from_text, "ts-verify")

TASK_ENTRIES: tuple[CatalogEntry, ...] = (
    # -- per task: brackets and roles ----------------------------------------------------------
    _entry(
        "TS-V101",
        "commit without acquire",
        "call acquire() on the resource before its commit()",
        """
        A producer works on a stage between `acquire()`, which waits on the stage's empty
        mbarrier until the consumers have released it, and `commit()`, which arrives on its
        full mbarrier. A commit without its acquire arrives on the full barrier of a stage
        this task never took: the phase completes early, or the next phase starts one arrival
        short, and consumers read a stage that was not written.
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()
                ring.commit()
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()
        """,
    ),
    _entry(
        "TS-V102",
        "release without wait",
        "call wait() before release(); release each stage once",
        """
        A consumer reads a stage between `wait()`, which waits on the stage's full mbarrier
        for the current phase, and `release()`, which arrives on its empty mbarrier and hands
        the stage back to the producer. A release without its wait, or a second release of one
        stage, is an extra arrival on the empty barrier: the producer may refill a stage that
        is still being read.
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(8):
                ring.wait()
                ring.read()
                ring.release()
                dst.store()
                ring.release()
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(8):
                ring.wait()
                ring.read()
                dst.store()
                ring.release()
        """,
    ),
    _entry(
        "TS-V103",
        "acquire never committed",
        "commit() every acquired stage in the same block",
        """
        Every stage a producer acquires must be committed in the same block (the same loop
        iteration, the same condition block): the commit is the arrival, or the TMA
        transaction bytes, that completes the phase of the stage's full barrier. A stage left
        uncommitted never becomes visible, and its consumers wait on the full barrier forever.
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()
        """,
    ),
    _entry(
        "TS-V104",
        "wait never released",
        "release() every waited stage in the same block",
        """
        Every stage a consumer waits for must be released in the same block: the release is
        the arrival that completes the phase of the stage's empty barrier. A stage that is
        never released is never handed back, so once the producer has gone round the ring it
        waits on that empty barrier forever.
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(8):
                ring.wait()
                ring.read()
                dst.store()
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(8):
                ring.wait()
                ring.read()
                dst.store()
                ring.release()
        """,
    ),
    _entry(
        "TS-V105",
        "try_* without its blocking call",
        "follow try_acquire()/try_wait() with acquire()/wait() on the same resource, in the "
        "same block, before any other operation on it",
        """
        `try_acquire()` and `try_wait()` probe the barrier of the next stage without blocking
        (`mbarrier.try_wait`), so the task can do other work while the stage becomes ready;
        the next `acquire()` or `wait()` on the resource uses the probe's result. The probe is
        for one stage and phase: if another operation on the resource comes first, or the
        blocking call is in another block, the result is stale or never used.
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(8):
                ring.wait()
                ring.read()
                ring.try_wait()  # probes the next stage before this one is released
                dst.store()
                ring.release()
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(8):
                ring.try_wait()  # probe, then block only if the stage is not ready yet
                ring.wait()
                ring.read()
                dst.store()
                ring.release()
        """,
    ),
    _entry(
        "TS-V106",
        "producer work outside acquire/commit",
        "move the work between acquire() and "
        "commit(), or mark it WorkAttr.AUXILIARY if it moves no payload",
        """
        Producer work writes the payload of a stage, so it must run between `acquire()` (the
        stage is free) and `commit()` (the stage is published). Outside that bracket it writes
        into a stage that consumers may still be reading, or one already handed over to them.
        Work that moves no payload (descriptor prefetch, bookkeeping) can be declared with
        `work_attrs=WorkAttr.AUXILIARY`.
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord = src.tile_coord()
                ring.acquire()
                ring.commit()
                ring.load(coord=coord)
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()
        """,
    ),
    _entry(
        "TS-V107",
        "consumer work outside wait/release",
        "move the work between wait() and "
        "release(), or mark it WorkAttr.AUXILIARY if it moves no payload",
        """
        Consumer work reads the payload of a stage, so it must run between `wait()` (the stage
        is full) and `release()` (the stage goes back to the producer). After the release the
        producer may already be overwriting the stage; before the wait it may not have been
        written yet. Work that reads no payload can be declared with
        `work_attrs=WorkAttr.AUXILIARY`.
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(8):
                ring.wait()
                ring.release()
                ring.read()
                dst.store()
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(8):
                ring.wait()
                ring.read()
                ring.release()
                dst.store()
        """,
    ),
    _entry(
        "TS-V108",
        "pipeline operation on a resource without a pipeline",
        "give the resource a pipeline_config, or drop the acquire/commit/wait/release calls",
        """
        `acquire`, `commit`, `wait` and `release` operate on the mbarriers of the resource's
        pipeline (a full and an empty barrier per stage). A resource declared without
        `pipeline_config`, such as a global-memory input or output, has no barriers: there is
        nothing to wait on or arrive at.
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(8):
                ring.wait()
                ring.read()
                dst.acquire()
                dst.store()
                dst.commit()
                ring.release()
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(8):
                ring.wait()
                ring.read()
                dst.store()
                ring.release()
        """,
    ),
    _entry(
        "TS-V109",
        "producer operation on a resource the task does not produce",
        "add the resource to the task's dst_resources",
        """
        A task declaration lists the resources the task produces (`dst_resources`) and
        consumes (`src_resources`); the pipeline's arrival counts and the warps that signal
        its barriers follow from these lists. Producer operations (acquire, commit, producer
        work) on a resource that is not among the task's destinations are signals from warps
        that the producer side does not count.
        """,
        """
        plan = build_plan(
            [TaskDeclaration([src, ring], [], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
            {ring: [src], dst: [ring]})
        """,
        """
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
            {ring: [src], dst: [ring]})
        """,
    ),
    _entry(
        "TS-V110",
        "consumer operation on a resource the task does not consume",
        "add the resource to the task's src_resources",
        """
        A task declaration lists the resources the task consumes (`src_resources`) and
        produces (`dst_resources`); the pipeline's arrival counts and the warps that signal
        its barriers follow from these lists. Consumer operations (wait, release, consumer
        work) on a resource that is not among the task's sources are signals from warps that
        the consumer side does not count.
        """,
        """
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([], [ring, dst], 4, 4, store_task(ring, dst), name="storer")],
            {ring: [src], dst: [ring]})
        """,
        """
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
            {ring: [src], dst: [ring]})
        """,
    ),
    _entry(
        "TS-V111",
        "block changes the pipeline state",
        "make every condition block (and every "
        "loop iteration) leave each acquire/commit and wait/release bracket as it found it",
        """
        Each condition block and each loop iteration must leave every acquire/commit and
        wait/release bracket as it found it. The stage index and phase bit of a pipeline
        advance with every bracket, in every task; a bracket opened outside a block and closed
        only when a run-time condition holds makes this task's position in the ring depend on
        a value the other tasks do not see. Commit the stage in every case: an unused stage
        still completes its phase.
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord, valid = src.checked_coord()
                ring.acquire()
                with when_true(valid):
                    ring.load(coord=coord)
                    ring.commit()
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord, valid = src.checked_coord()
                ring.acquire()
                with when_true(valid):
                    ring.load(coord=coord)
                ring.commit()
        """,
    ),
    _entry(
        "TS-V112",
        "bad loop structure",
        "balance first_iter()/last_iter() blocks so a loop of any "
        "trip count (including 0) leaves the brackets as it found them",
        """
        A software-pipelined loop keeps one stage open across iterations: it waits for the
        first stage in `first_iter()`, then in every iteration waits for the next stage before
        releasing the current one, and releases the last stage in `last_iter()`. These blocks
        must balance for any trip count, including 1, where the first and the last iteration
        are the same: otherwise the loop ends holding a stage or releases one it never waited
        for.
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(7) as k:
                with k.first_iter():
                    ring.wait()
                ring.read()
                dst.store()
                ring.wait()
                ring.release()
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(7) as k:  # 7 iterations drain the 8 stages of load_task
                with k.first_iter():
                    ring.wait()
                ring.read()
                dst.store()
                ring.wait()
                ring.release()
                with k.last_iter():
                    ring.read()
                    dst.store()
                    ring.release()
        """,
    ),
    _entry(
        "TS-V113",
        "stage freed while an asynchronous read may use it",
        "retire the read first: work marked WorkAttr.ASYNC_WAIT_ALL (wait_group 0) or "
        "ASYNC_WAIT_PRIOR (wait_group 1) before the release or commit",
        """
        WGMMA and TMA stores keep reading shared memory after they are issued, until
        `wgmma.wait_group` or `cp.async.bulk.wait_group.read` retires them. Releasing (or
        committing) the stage before that hands it to the producer while the read is in
        flight, and the next load overwrites the operands. Retire the read first with work
        marked `WorkAttr.ASYNC_WAIT_ALL` (wait_group 0), or `WorkAttr.ASYNC_WAIT_PRIOR`
        (wait_group 1) to keep the newest read in flight. A read that takes a token from
        another ring's read (a WGMMA on ring `a`'s stage with ring `b`'s stage index) reads
        both stages: `b`'s stays in flight with it.
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(8):
                ring.wait()
                ring.mma()  # WorkAttr.ASYNC_READ
                ring.release()
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(8):
                ring.wait()
                ring.mma()  # WorkAttr.ASYNC_READ
                ring.mma_wait()  # WorkAttr.ASYNC_WAIT_ALL
                ring.release()
        """,
    ),
    _entry(
        "TS-V114",
        "loop too long to prove",
        "use iteration-predicate periods and starts below a few hundred, or constant loops of at "
        "most 4096 iterations",
        """
        A ring whose tasks keep each acquire/commit and wait/release inside one loop
        iteration or block is proven from their bracket depths alone. Any other part (a lagged
        release, a cycle of several rings) is run for every trip count up to a cut-off that
        grows with the period and start of the loop's `every()` blocks. A period or start in
        the millions (or a constant loop of millions of ring operations) would need runs that
        long, so the plan is rejected instead of being checked only in part.
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8192):
                ring.acquire()
                ring.load(coord=src.tile_coord())
                ring.commit()

        @schedule
        def store_task(ring, dst):
            with domain_loop(8192) as k:
                ring.wait()
                ring.read()
                dst.store()
                with k.every(1, start=1):
                    ring.release()  # the previous stage
                with k.last_iter():
                    ring.release()
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(8):
                ring.wait()
                ring.read()
                dst.store()
                ring.release()
        """,
    ),
    _entry(
        "TS-V115",
        "skip_stage that cannot be proven",
        "release every held stage before skip_stage(), keep the ring's interleave stride 1, "
        "and balance the ring in every work tile",
        """
        `ring.skip_stage()` moves a consumer task past one stage without waiting for it or
        releasing it: another consumer task of the ring waits for and releases that stage
        (ping-pong math warpgroups sharing one operand ring). The wait and release cursors
        move together, so a task that still holds a stage would release the wrong one; a
        ring dealt out to interleaved lanes has no single next stage to skip. In a persistent
        kernel every work tile must move every task's cursor equally (waits plus skips), which
        is what lets the verifier prove each wait ordered after the fill one ring-length
        earlier for every sequence of tiles (see the verification guide).
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(8):
                ring.wait()
                ring.read()
                ring.skip_stage()
                dst.store()
                ring.release()
        """,
        """
        @schedule
        def even_task(ring, dst):  # stages 0, 2, 4, ...; odd_task takes the others
            with domain_loop(4):
                ring.wait()
                ring.read()
                dst.store()
                ring.release()
                ring.skip_stage()


        @schedule
        def odd_task(ring, dst):
            with domain_loop(4):
                ring.skip_stage()
                ring.wait()
                ring.read()
                dst.store()
                ring.release()


        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst], 4, 4, even_task(ring, dst), name="even"),
             TaskDeclaration([ring], [dst], 8, 4, odd_task(ring, dst), name="odd")],
            {ring: [src], dst: [ring]},
            name="copy")
        """,
    ),
)
