"""Catalog entries of calls and declarations (``TS-T015``..``TS-T020``, ``TS-T022``)."""

from __future__ import annotations

from functools import partial

from ts_ir import CatalogEntry, entry_from_text

__all__ = ["DECLARATION_ENTRIES"]

_entry = partial(entry_from_text, "ts-trace")

DECLARATION_ENTRIES: tuple[CatalogEntry, ...] = (
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
        "bind each argument to a parameter of the work method once; TS supplies stage_info",
        """
        A work call binds its arguments to the work method's parameters after `stage_info`,
        as a Python call would: positionally in parameter order, or by keyword. Each argument
        routes a token (or passes a constant) into that parameter, so the plan records which
        value feeds which parameter. TS passes `stage_info` (the stage index, phase and loop
        position) itself. More positional arguments than the method has, unknown keywords, a
        parameter given twice and arguments to pipeline operations are rejected.
        """,
        """
        @schedule
        def load_task(src, ring):
            with domain_loop(8):
                coord = src.tile_coord()
                ring.acquire()
                ring.load(coord)  # `coord` is keyword-only in Ring.load
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
    _entry(
        "TS-T022",
        "bad resource or schedule declaration",
        "give a resource a str `name`, a bool `is_barrier` and a pipeline (or None) as "
        "`pipeline_config`; decorate functions with `@schedule`",
        """
        A resource is created with keyword fields: its `name` (a str, unique in the kernel),
        `is_barrier` (a bool) and `pipeline_config` (a `PipelineConfig`, a `PipelineSpec` or
        None), plus the fields its class declares. The plan is built from these values, so a
        number where a pipeline belongs, or an argument the class does not have, is rejected
        at the line that created the resource. Likewise `@schedule` decorates a function.
        """,
        """
        ring = Ring(name="ring", pipeline_config=4)
        """,
        """
        pipeline = PipelineSpec(PipelineType.AsyncAsync, 4, 0, group, group)
        ring = Ring(name="ring", pipeline_config=pipeline)
        """,
    ),
)
