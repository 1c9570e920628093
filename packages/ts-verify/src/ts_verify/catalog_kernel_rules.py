"""Catalog entries of the cross-task and whole-kernel checks (``TS-V2xx``, ``TS-V3xx``)."""

from __future__ import annotations

from functools import partial

from ts_ir import CatalogEntry, entry_from_text

__all__ = ["KERNEL_ENTRIES"]

_entry = partial(entry_from_text, "ts-verify")

KERNEL_ENTRIES: tuple[CatalogEntry, ...] = (
    # -- across tasks --------------------------------------------------------------------------
    _entry(
        "TS-V201",
        "pipelined resource without producer",
        "give some task the resource in its dst_resources and acquire/commit it in the schedule",
        """
        The consumers of a pipelined resource wait on full barriers whose phases only a
        producer's commits complete. If no task produces the resource (it is in no task's
        `dst_resources`, or no schedule acquires and commits it), the first wait blocks
        forever.
        """,
        """
        plan = build_plan(
            [TaskDeclaration([ring], [dst], 0, 4, store_task(ring, dst), name="storer")],
            {dst: [ring]})
        """,
        """
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
            {ring: [src], dst: [ring]})
        """,
    ),
    _entry(
        "TS-V202",
        "pipelined resource without consumer",
        "give some task the resource in its src_resources and wait/release it in the schedule",
        """
        The producer of a pipelined resource waits on empty barriers whose phases only the
        consumers' releases complete. If no task consumes the resource (it is in no task's
        `src_resources`, or no schedule waits for and releases it), the producer fills every
        stage once and then blocks in `acquire()` forever.
        """,
        """
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader")],
            {ring: [src]})
        """,
        """
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
            {ring: [src], dst: [ring]})
        """,
    ),
    _entry(
        "TS-V203",
        "arrival count does not match the cooperative group",
        "make the pipeline's "
        "group size equal the arrivals of the tasks that signal (threads, warps or one leader)",
        """
        An mbarrier phase completes when the expected number of arrivals has arrived. The
        pipeline's cooperative groups set that number for each side (threads or warps), and
        `SignalingThreads` says which threads of each task arrive. If the tasks that signal
        make fewer arrivals, the phase never completes (a deadlock); if they make more, it
        completes early and a stage is reused while some threads still use it (a race).
        """,
        """
        ring = Ring(name="ring", pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync, 2, 0, group, CooperativeGroupSpec("thread", 256)))
        """,
        """
        # the storer is one 4-warp task: 128 threads arrive
        ring = Ring(name="ring", pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync, 2, 0, group, CooperativeGroupSpec("thread", 128)))
        """,
    ),
    _entry(
        "TS-V204",
        "tasks share warps",
        "give tasks disjoint warp ranges",
        """
        Each task is a warp-specialized role: the warps of its range run its schedule and
        nothing else. The kernel dispatches each warp to exactly one role, so overlapping
        ranges would leave one task short of warps, and its barriers short of arrivals.
        """,
        """
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst], 2, 4, store_task(ring, dst), name="storer")],
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
        "TS-V205",
        "task outside the block",
        "launch enough warps for every task, or move the task",
        """
        The CTA launches `block_warps` warps (by default, enough for every task). A task whose
        warp range starts below 0 or ends past the launched warps would never run in full,
        and the arrivals its barriers expect would never come.
        """,
        """
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
            {ring: [src], dst: [ring]},
            block_warps=4)
        """,
        """
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
            {ring: [src], dst: [ring]},
            block_warps=8)
        """,
    ),
    _entry(
        "TS-V206",
        "registers differ within a warpgroup",
        "give the 4 warps of a warpgroup one num_registers (setmaxnreg applies per warpgroup)",
        """
        On Hopper, `setmaxnreg` moves registers between warpgroups (4 consecutive warps,
        starting at a multiple of 4), and every warp of a warpgroup must execute it with the
        same count. Two tasks that share a warpgroup therefore cannot ask for different
        register budgets: give them one count, or place them in different warpgroups.
        """,
        """
        half = CooperativeGroupSpec("thread", 64)  # 2-warp tasks
        ring = Ring(name="ring", pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync, 2, 0, half, half))
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 2, load_task(src, ring), 40, name="loader"),
             TaskDeclaration([ring], [dst], 2, 2, store_task(ring, dst), 232, name="storer")],
            {ring: [src], dst: [ring]})
        """,
        """
        half = CooperativeGroupSpec("thread", 64)  # 2-warp tasks
        ring = Ring(name="ring", pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync, 2, 0, half, half))
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 2, load_task(src, ring), 40, name="loader"),
             TaskDeclaration([ring], [dst], 4, 2, store_task(ring, dst), 232, name="storer")],
            {ring: [src], dst: [ring]})
        """,
    ),
    _entry(
        "TS-V207",
        "register file exceeded",
        "lower num_registers so that the sum over warps of 32 x registers stays within 65536",
        """
        An SM has 65536 32-bit registers, and a CTA's warps share them: with `setmaxnreg`, the
        sum over all warps of 32 threads times the task's `num_registers` must fit. A kernel
        that asks for more cannot be resident (the register increase would wait forever).
        Producer tasks that only issue TMA loads need few registers: lower their budget to
        leave more for the math warps.
        """,
        """
        ring = Ring(name="ring", pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync, 2, 0, group, CooperativeGroupSpec("thread", 256)))
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), 232, name="loader"),
             TaskDeclaration([ring], [dst], 4, 8, store_task(ring, dst), 232, name="storer")],
            {ring: [src], dst: [ring]})
        """,
        """
        ring = Ring(name="ring", pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync, 2, 0, group, CooperativeGroupSpec("thread", 256)))
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), 40, name="loader"),
             TaskDeclaration([ring], [dst], 4, 8, store_task(ring, dst), 232, name="storer")],
            {ring: [src], dst: [ring]})
        """,
    ),
    _entry(
        "TS-V208",
        "bad register count",
        "use a multiple of 8 in [24, 256]",
        """
        A task's `num_registers` is the `setmaxnreg` target of its warps. The instruction
        takes an immediate register count per thread that must be a multiple of 8 between 24
        and 256; any other value does not assemble, so the verifier rejects it before code is
        generated.
        """,
        """
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), 100, name="loader"),
             TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
            {ring: [src], dst: [ring]})
        """,
        """
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), 104, name="loader"),
             TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
            {ring: [src], dst: [ring]})
        """,
    ),
    _entry(
        "TS-V209",
        "shared memory exceeded",
        "use fewer stages or smaller tiles",
        """
        All shared-memory regions of the kernel (every stage of every ring, staging buffers,
        and the mbarriers themselves) must fit in the CTA's shared memory: 227 KiB (232448
        bytes) on an H100. The verifier lays the regions out with their alignments and
        reports the total; a kernel that needs more cannot launch.
        """,
        """
        ring = Ring(name="ring", smem_bytes=2 * 128 * 1024, pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync, 2, 0, group, group))
        """,
        """
        ring = Ring(name="ring", smem_bytes=2 * 64 * 1024, pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync, 2, 0, group, group))
        """,
    ),
    _entry(
        "TS-V210",
        "aliased SMEM live together",
        "alias only regions whose resources are never used by the same tasks at once",
        """
        Regions in different phases of an alias group share the same bytes, so their
        resources must never be live at the same time. A ring's stage is live from its
        acquire to its release; a buffer without a pipeline at each use, and until its
        asynchronous read (a TMA store) is waited for. The verifier runs the whole kernel for
        every trip count, tile count and condition up to its cut-off and accepts the alias
        only when, in every run, each use of one ends before each use of the other starts in
        the order that program order and the barriers enforce (happens-before). The declared
        dependency graph plays no part: it is a claim, not an order.
        """,
        """
        ring = Ring(name="ring", smem_bytes=64 * 1024, pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync, 2, 0, group, group))
        dst = Sink(name="dst", smem_bytes=32 * 1024)
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
            {ring: [src], dst: []},
            smem_alias_groups=[[["ring.tiles"], ["dst.tiles"]]])
        """,
        """
        @schedule
        def drain_then_store(ring, dst):
            with domain_loop(8):
                ring.wait()
                ring.read()
                ring.release()
            dst.store()  # after the ring's last use

        ring = Ring(name="ring", smem_bytes=64 * 1024, pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync, 2, 0, group, group))
        dst = Sink(name="dst", smem_bytes=32 * 1024)
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst], 4, 4, drain_then_store(ring, dst), name="storer")],
            {ring: [src], dst: [ring]},
            smem_alias_groups=[[["ring.tiles"], ["dst.tiles"]]])
        """,
    ),
    _entry(
        "TS-V211",
        "dependency graph violated",
        "route only values of the resource's upstreams "
        "(as declared in the dependency graph) into its producer work",
        """
        Producer work may only be fed values from its resource's upstreams in the dependency
        graph (`{downstream: [upstreams]}`). The graph is what the runtime and the verifier
        know about the order of the kernel's data (it is also what allows SMEM aliasing); a
        value routed from an unlisted resource is a dependency they do not see.
        """,
        """
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
            {dst: [ring]})
        """,
        """
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
            {ring: [src], dst: [ring]})
        """,
    ),
    _entry(
        "TS-V212",
        "unknown resource",
        "declare every resource a schedule uses",
        """
        Every resource that a schedule or the dependency graph names must be declared in the
        plan: the verifier needs its pipeline and the code generator its storage. `build_plan`
        collects them from the task declarations, so this happens to plans that were edited
        or written by hand (or loaded from JSON).
        """,
        """
        plan = dataclasses.replace(
            plan, dependencies=(*plan.dependencies, DependencyEdge("scales", "ring")))
        """,
        """
        scales = Source(name="scales")
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
            {ring: [src, scales], dst: [ring]})
        """,
    ),
    _entry(
        "TS-V213",
        "work-tile loops disagree",
        "iterate one work queue in every persistent task",
        """
        In a persistent kernel every task walks the same sequence of work tiles, so that stage
        k of every pipeline belongs to the same tile in all tasks. Tasks that iterate
        different work queues may each see another tile order, and the stages they exchange
        would belong to different tiles.
        """,
        """
        @schedule
        def load_task(tiles, src, ring):
            with work_tile_loop(tiles):
                tiles.next_tile()
                with domain_loop(Gemm.k_blocks):
                    coord = src.tile_coord()
                    ring.acquire()
                    ring.load(coord=coord)
                    ring.commit()

        @schedule
        def store_task(tiles, ring, dst):
            with work_tile_loop(tiles):
                tiles.next_tile()
                with domain_loop(Gemm.k_blocks):
                    ring.wait()
                    ring.read()
                    dst.store()
                    ring.release()

        other = Tiles(name="other")
        plan = build_plan(
            [TaskDeclaration([tiles, src], [ring], 0, 4, load_task(tiles, src, ring)),
             TaskDeclaration([other, ring], [dst], 4, 4, store_task(other, ring, dst))],
            {ring: [src], dst: [ring]})
        """,
        """
        @schedule
        def load_task(tiles, src, ring):
            with work_tile_loop(tiles):
                tiles.next_tile()
                with domain_loop(Gemm.k_blocks):
                    coord = src.tile_coord()
                    ring.acquire()
                    ring.load(coord=coord)
                    ring.commit()

        @schedule
        def store_task(tiles, ring, dst):
            with work_tile_loop(tiles):
                tiles.next_tile()
                with domain_loop(Gemm.k_blocks):
                    ring.wait()
                    ring.read()
                    dst.store()
                    ring.release()

        plan = build_plan(
            [TaskDeclaration([tiles, src], [ring], 0, 4, load_task(tiles, src, ring)),
             TaskDeclaration([tiles, ring], [dst], 4, 4, store_task(tiles, ring, dst))],
            {ring: [src], dst: [ring]})
        """,
    ),
    # -- whole kernel --------------------------------------------------------------------------
    _entry(
        "TS-V214",
        "malformed declaration",
        "pass ints where counts are expected, a traced schedule (the @schedule function called "
        "with its resources) and the bytes each stage of a TMA ring receives",
        """
        Stage counts, warp counts, register counts and group sizes are whole numbers; a
        task's schedule is the traced schedule (the `@schedule` function called with its
        resources), not the function itself. A TMA ring must expect the bytes its loads
        bring (`bytes_per_stage > 0`): with 0 the full barrier completes on the producer's
        arrival alone and the consumer reads the stage before the data lands.
        """,
        """
        tma = PipelineSpec(PipelineType.TmaAsync, 2, 0, CooperativeGroupSpec("thread", 1), group)
        ring = Ring(name="ring", pipeline_config=tma)
        """,
        """
        tma = PipelineSpec(PipelineType.TmaAsync, 2, 4096, CooperativeGroupSpec("thread", 1), group)
        ring = Ring(name="ring", pipeline_config=tma)
        """,
    ),
    _entry(
        "TS-V215",
        "dependency graph has a cycle",
        "list as upstreams only the resources whose data a resource is made from",
        """
        The dependency graph (`{downstream: [upstreams]}`) says which resource is made from
        which. A cycle says each of its resources is made from the others, so the graph orders
        none of their data. It is a warning, not an error: whether the kernel is correct is
        decided by its schedules, which the verifier checks in full (SMEM aliasing, for one, is
        decided from the schedules, never from the graph). A cycle is usually a typo, an
        upstream listed on the wrong side.
        """,
        """
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
            {ring: [src, dst], dst: [ring]})
        """,
        """
        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
            {ring: [src], dst: [ring]})
        """,
    ),
    _entry(
        "TS-V216",
        "pipeline type the target cannot run",
        "on Hopper (sm_90a) use TmaAsync or AsyncAsync; UMMA and CLC pipelines need sm_100a",
        """
        UMMA pipelines (TmaUmma, UmmaAsync, AsyncUmma, UmmaUmma) signal through tcgen05
        commits and CLC pipelines fetch work from the cluster launch controller, Blackwell
        (sm_100a) hardware that Hopper does not have. Verified against a target
        (`verify(plan, target=Target.of("sm_90a"))`, which the runtime always passes), such a
        pipeline is reported with the Hopper pipeline type to use instead.
        """,
        """
        from ts_ir import Target

        target = Target.of("sm_90a")
        ring = Ring(name="ring", pipeline_config=PipelineSpec(
            PipelineType.TmaUmma, 2, 4096, CooperativeGroupSpec("thread", 1), group))
        """,
        """
        from ts_ir import Target

        target = Target.of("sm_90a")
        ring = Ring(name="ring", pipeline_config=PipelineSpec(
            PipelineType.TmaAsync, 2, 4096, CooperativeGroupSpec("thread", 1), group))
        """,
    ),
    _entry(
        "TS-V217",
        "UMMA side counted in warps",
        "count a UMMA side's group in threads, one per warp that commits",
        """
        A UMMA side (the producer of `UmmaAsync`, the consumer of `TmaUmma` and `AsyncUmma`,
        both sides of `UmmaUmma`) signals with `tcgen05.commit`, which one elected thread of
        each committing warp executes: one arrival per warp. A group counted in warps asks
        the barrier for 32 arrivals per warp, so its phase never completes.
        """,
        """
        # the storer's 4 warps release with tcgen05.commit: 4 arrivals, not 4 x 32
        ring = Ring(name="ring", pipeline_config=PipelineSpec(
            PipelineType.TmaUmma, 2, 4096, CooperativeGroupSpec("thread", 1),
            CooperativeGroupSpec("warp", 4)))
        """,
        """
        ring = Ring(name="ring", pipeline_config=PipelineSpec(
            PipelineType.TmaUmma, 2, 4096, CooperativeGroupSpec("thread", 1),
            CooperativeGroupSpec("thread", 4)))
        """,
    ),
    _entry(
        "TS-V218",
        "CLC response bytes wrong",
        "pass num_bytes=16 (one cluster-launch-control response) to the ClcFetchAsync pipeline",
        """
        A `ClcFetchAsync` producer arms the stage's full barrier with the bytes it expects, and
        the cluster launch controller's answer (16 bytes) completes the phase. With more bytes
        the phase never completes; with fewer it completes before the answer has landed, and
        the consumer reads a stale work tile.
        """,
        """
        ring = Ring(name="ring", pipeline_config=PipelineSpec(
            PipelineType.ClcFetchAsync, 2, 32, CooperativeGroupSpec("thread", 1), group))
        """,
        """
        ring = Ring(name="ring", pipeline_config=PipelineSpec(
            PipelineType.ClcFetchAsync, 2, 16, CooperativeGroupSpec("thread", 1), group))
        """,
    ),
    _entry(
        "TS-V219",
        "TMEM over budget",
        "allocate at most the target's TMEM columns (512 on sm_100a): fewer accumulator stages, "
        "a narrower tile, or aliased blocks",
        """
        Blackwell UMMA accumulates in tensor memory, 512 columns per SM, allocated with
        `tcgen05.alloc`. A layout wider than the columns the target has (or than the kernel's
        `tmem_capacity_columns`) never gets its allocation: the allocating warp waits forever
        before any task starts. Hopper has no TMEM at all, so there any TMEM block is too much.
        """,
        """
        from ts_ir import TmemAllocationSpec

        # two accumulator stages of 256 fp32 columns, plus a third
        acc = TmemAllocationSpec("acc", 512, 0, "ring")
        plan = dataclasses.replace(plan, tmem=(acc, TmemAllocationSpec("acc2", 256, 512, "ring")))
        """,
        """
        from ts_ir import TmemAllocationSpec

        plan = dataclasses.replace(plan, tmem=(TmemAllocationSpec("acc", 512, 0, "ring"),))
        """,
    ),
    _entry(
        "TS-V301",
        "bracket counts differ between tasks",
        "make every task that touches a pipeline "
        "run its brackets the same number of times for every trip count and condition",
        """
        The producers and consumers of a pipeline must run their brackets equally often:
        every committed stage is waited for and released exactly once, for every trip count,
        condition and skipped tile. The verifier compares the counts as polynomials in these
        run-time values; where they differ, one side stops early and the other then waits
        forever on a barrier phase that never completes.
        """,
        """
        @schedule
        def store_task(ring, dst):
            with domain_loop(Gemm.k_blocks):
                ring.wait()
                ring.read()
                dst.store()
                ring.release()
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(Gemm.k_blocks):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()

        @schedule
        def store_task(ring, dst):
            with domain_loop(Gemm.k_blocks):
                ring.wait()
                ring.read()
                dst.store()
                ring.release()
        """,
    ),
    _entry(
        "TS-V302",
        "deadlock",
        "reorder the schedules so no task waits on a stage that another "
        "blocked task must first produce or release, or add stages",
        """
        The verifier runs the tasks against a model of the mbarriers (phase bits, arrival
        counts, transaction bytes). A deadlock is a state where every unfinished task waits
        for a barrier phase that only another waiting task could complete: two tasks that
        wait for each other's pipelines, or a producer that fills more stages than the ring
        holds before it publishes what its consumer waits for first. The report shows the
        interleaving and the barrier states.
        """,
        """
        header = Ring(name="header", pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync, 1, 0, group, group))

        @schedule
        def load_task(src, ring, header):
            with domain_loop(8):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()
            header.acquire()
            header.load()
            header.commit()

        @schedule
        def store_task(ring, header, dst):
            header.wait()
            header.read()
            header.release()
            with domain_loop(8):
                ring.wait()
                ring.read()
                dst.store()
                ring.release()

        plan = build_plan(
            [TaskDeclaration([src], [ring, header], 0, 4, load_task(src, ring, header)),
             TaskDeclaration([ring, header], [dst], 4, 4, store_task(ring, header, dst))],
            {ring: [src], header: [], dst: [ring]})
        """,
        """
        header = Ring(name="header", pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync, 1, 0, group, group))

        @schedule
        def load_task(src, ring, header):
            header.acquire()
            header.load()
            header.commit()
            with domain_loop(8):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()

        @schedule
        def store_task(ring, header, dst):
            header.wait()
            header.read()
            header.release()
            with domain_loop(8):
                ring.wait()
                ring.read()
                dst.store()
                ring.release()

        plan = build_plan(
            [TaskDeclaration([src], [ring, header], 0, 4, load_task(src, ring, header)),
             TaskDeclaration([ring, header], [dst], 4, 4, store_task(ring, header, dst))],
            {ring: [src], header: [], dst: [ring]})
        """,
    ),
    _entry(
        "TS-V303",
        "race",
        "fix the arrival counts or the brackets so a stage is never written while it is read",
        """
        A race is a stage that is written while a task still reads it: the stage's empty
        barrier completed its phase before every reader had released the stage, so the
        producer's next acquire went through. It comes from arrival counts that are too small
        for the tasks that read (below, two consumer tasks and a group sized for one) or from
        brackets that release too early. The report shows the interleaving that reaches the
        overwrite.
        """,
        """
        ring = Ring(name="ring", pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync, 1, 0, group, group))  # counts one consumer task
        flag = Ring(name="flag", pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync, 1, 0, group, group))

        @schedule
        def load_task(src, ring, flag):
            with domain_loop(2):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()
            flag.acquire()
            flag.load()
            flag.commit()

        @schedule
        def store_task(ring, dst):
            with domain_loop(2):
                ring.wait()
                ring.read()
                dst.store()
                ring.release()

        @schedule
        def check_task(ring, flag, dst):  # keeps stage 0 until the flag is set
            ring.wait()
            flag.wait()
            flag.read()
            flag.release()
            ring.read()
            dst.store()
            ring.release()
            ring.wait()
            ring.read()
            dst.store()
            ring.release()

        plan = build_plan(
            [TaskDeclaration([src], [ring, flag], 0, 4, load_task(src, ring, flag)),
             TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst)),
             TaskDeclaration([ring, flag], [dst], 8, 4, check_task(ring, flag, dst))],
            {ring: [src], flag: [], dst: [ring]})
        """,
        """
        # both consumer tasks arrive (256 threads); a second stage lets check_task keep one
        ring = Ring(name="ring", pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync, 2, 0, group, CooperativeGroupSpec("thread", 256)))
        flag = Ring(name="flag", pipeline_config=PipelineSpec(
            PipelineType.AsyncAsync, 1, 0, group, group))

        @schedule
        def load_task(src, ring, flag):
            with domain_loop(2):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord=coord)
                ring.commit()
            flag.acquire()
            flag.load()
            flag.commit()

        @schedule
        def store_task(ring, dst):
            with domain_loop(2):
                ring.wait()
                ring.read()
                dst.store()
                ring.release()

        @schedule
        def check_task(ring, flag, dst):  # keeps stage 0 until the flag is set
            ring.wait()
            flag.wait()
            flag.read()
            flag.release()
            ring.read()
            dst.store()
            ring.release()
            ring.wait()
            ring.read()
            dst.store()
            ring.release()

        plan = build_plan(
            [TaskDeclaration([src], [ring, flag], 0, 4, load_task(src, ring, flag)),
             TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst)),
             TaskDeclaration([ring, flag], [dst], 8, 4, check_task(ring, flag, dst))],
            {ring: [src], flag: [], dst: [ring]})
        """,
    ),
)
