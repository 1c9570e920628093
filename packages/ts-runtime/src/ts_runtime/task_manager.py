"""``TaskManager``: plan, check and verify a kernel's tasks, then lower them in the kernel.

Lifecycle (inside the ``@cute.kernel``)::

    tm = TaskManager(tasks, {dst: [smem]}, smem_allocator=alloc)   # plan + checks + verify
    tm.setup_resources_and_tasks()                                 # SMEM block, context
    tm.run()                                                       # pipelines, warp dispatch

Construction is pure Python (no GPU, no CuTe DSL): it builds the :class:`ts_ir.KernelPlan`
with :func:`ts_trace.build_plan`, raises a typed error for the mistakes that would otherwise
surface late (a Blackwell pipeline type on Hopper, a cooperative-group size that contradicts
the warp counts of the tasks that signal, SMEM over budget), each naming the task and the
resource, and then proves the plan with :func:`ts_verify.verify`. ``run()`` lowers the plan
with :func:`ts_codegen.emit_tasks`.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ts_ir import (
    WARP_SIZE,
    CooperativeGroupSpec,
    KernelPlan,
    Role,
    ScheduleStage,
    SmemLayout,
    SmemLayoutError,
    TaskSpec,
    plan_smem_layout,
    render_mermaid,
)
from ts_ir.smem import DEFAULT_SMEM_CAPACITY
from ts_runtime._arguments import at_line, check_task_manager_arguments
from ts_runtime.errors import (
    GroupSizeError,
    RuntimeConfigError,
    SmemBudgetError,
    UnsupportedFeatureError,
    UnsupportedOnTarget,
)
from ts_runtime.memory import ResourceContext, SmemAllocator
from ts_runtime.pipeline_config import blackwell_alternative
from ts_runtime.target import current_target, is_blackwell_or_later
from ts_runtime.task import Task
from ts_trace import MemoryResource, build_plan, resource_name
from ts_verify import Report, VerificationError, arrivals_per_signal, split_lanes, verify

__all__ = ["TaskManager"]

_SIDE_OPS = {
    Role.PRODUCER: (
        ScheduleStage.ProducerTryAcquire,
        ScheduleStage.ProducerAcquire,
        ScheduleStage.ProducerCommit,
    ),
    Role.CONSUMER: (
        ScheduleStage.ConsumerTryWait,
        ScheduleStage.ConsumerWait,
        ScheduleStage.ConsumerRelease,
    ),
}


def _uses_side(task: TaskSpec, resource: str, role: Role) -> bool:
    return any(s.resource == resource and s.stage in _SIDE_OPS[role] for s in task.schedule.steps())


def _check_cta_gates(tasks: Sequence[Task]) -> None:
    """Tasks that share a pipelined resource run on the same CTA ranks.

    A task restricted to one CTA rank may share rings only with tasks restricted the same way.
    The plan is verified per CTA. Where every task on a ring runs on the same CTA rank, that
    CTA runs the verified protocol and the others do not touch the ring; a ring between a
    restricted and an unrestricted task would see only one side in the other CTAs (a hang),
    unless the signals are routed to the leader CTA, which is not lowered.
    """
    for t in tasks:
        if t.run_only_on_cta_id is None:
            continue
        rings = {id(r): r for r in t.resources if getattr(r, "pipeline_config", None)}
        for u in tasks:
            if u is t or u.run_only_on_cta_id == t.run_only_on_cta_id:
                continue
            shared = [r for r in u.resources if id(r) in rings]
            if shared:
                name = resource_name(shared[0])
                raise UnsupportedFeatureError(
                    f"task `{t.name}` runs only on CTA {t.run_only_on_cta_id} of its cluster, "
                    f"but task `{u.name}` (run_only_on_cta_id={u.run_only_on_cta_id}) shares "
                    f"the pipelined resource `{name}` with it: in the other CTAs one side of "
                    "the ring would wait forever",
                    task=t.name,
                    resource=name,
                    fix=f"give `{u.name}` run_only_on_cta_id={t.run_only_on_cta_id} too",
                )


def _check_queue_steps(tasks: Sequence[Task], plan: KernelPlan) -> None:
    """``get_and_advance_work_tile`` is the static queue's step; a dynamic queue hands over.

    A dynamic queue's tiles travel through its pipeline (``fetch_next_tile`` /
    ``read_next_tile``). The reference-style static step there would read the current tile and
    skip the hand-over: refused at the user's line rather than lowered into a wrong kernel.
    """
    queues: dict[str, Any] = {
        resource_name(r): r
        for t in tasks
        for r in t.resources
        if getattr(type(r), "is_work_queue", False)
        and getattr(getattr(r, "tile_scheduler_config", None), "is_dynamic", False)
    }
    for spec in plan.tasks:
        for step in spec.schedule.steps():
            if step.resource in queues and step.label == "get_and_advance_work_tile":
                cfg = queues[step.resource].tile_scheduler_config
                raise RuntimeConfigError(
                    f"{step.location}: task `{spec.name}` calls "
                    f"`{step.resource}.get_and_advance_work_tile()`, but the queue's "
                    f"{cfg.tile_scheduler_type.value} scheduler hands each tile over through "
                    "its pipeline, which that step does not read",
                    task=spec.name,
                    resource=step.resource,
                    fix="call fetch_next_tile() in the fetching task and read_next_tile() in "
                    "the others (docs/persistent.rst), or use the static scheduler",
                )


def _per_warp_tma_groups(plan: KernelPlan) -> KernelPlan:
    """Read a TMA ring's consumer group counted per warp as the thread count it stands for.

    ``PipelineTmaAsync`` arrives on the empty barrier once per consumer warp, so reference
    programs size its consumer group either in threads (128 for 4 warps) or in warps (4). The
    plan counts threads; a group whose size equals the consumer tasks' warps (and not their
    threads) is the per-warp spelling of the same barrier and is rewritten to threads.
    """
    resources = []
    for spec in plan.resources:
        p = spec.pipeline
        if p is not None and p.type.producer_is_tma and p.consumer_group.agent == "thread":
            users = [t for t in plan.tasks if _uses_side(t, spec.name, Role.CONSUMER)]
            warps = sum(t.num_warps for t in users)
            if users and p.consumer_group.size == warps != warps * WARP_SIZE:
                group = CooperativeGroupSpec("thread", warps * WARP_SIZE)
                spec = dataclasses.replace(
                    spec, pipeline=dataclasses.replace(p, consumer_group=group)
                )
        resources.append(spec)
    return dataclasses.replace(plan, resources=tuple(resources))


class TaskManager:
    """Owns a kernel's tasks and resources: plans, checks, verifies and lowers them.

    Args:
        tasks: The kernel's tasks.
        resource_dependency_graph: ``{downstream: [upstreams...]}`` over resources; must not be
            empty.
        smem_allocator: The SMEM allocator holding the resources' allocations (its layout is
            computed now if needed); None when no resource needs SMEM data.
        skip_validation: Turn check and verification errors into warnings (an unsupported
            target or option still raises: it cannot be compiled).
        verbose: Print the plan table and the verification report at construction.
        smem_capacity_bytes: SMEM bytes per CTA (default 232448).
        name: Kernel name for messages and the plan.
        block_warps: Warps launched per CTA, when not the end of the last task's range.
        target: Compilation target (default: ``CUTE_DSL_ARCH``, else ``sm_90a``).
        debug_bounded_waits: Lower every blocking wait of every task as a bounded wait that
            prints the task, resource, stage and phase and traps when the barrier never flips
            (``Task(debug_print=True)`` does it for one task).
        **reference_options: ``dma_consumer_release_labels``, ``iket_enable_profiling``,
            ``iket_profiling_stages``, ``iket_profiling_resources``, ``tmem_allocator``,
            ``tmem_ptr_i32``, ``tmem_capacity_columns`` and ``assume_pdl_wait_completed`` are
            not supported yet and must keep their defaults; ``exhaustive_deadlock_race_check``
            is accepted for compatibility (TS always proves the plan free of deadlocks and
            races for every trip count).

    Raises:
        UnsupportedOnTarget: A pipeline type the target cannot run.
        GroupSizeError: A cooperative-group size that contradicts the signaling tasks.
        SmemBudgetError: SMEM over the capacity.
        ts_verify.VerificationError: The verifier found errors.
        ts_trace.PlanError: Inconsistent tasks or graph (duplicate names, unlisted resources).
    """

    def __init__(
        self,
        tasks: Sequence[Task],
        resource_dependency_graph: Mapping[MemoryResource, Sequence[MemoryResource]],
        *,
        smem_allocator: SmemAllocator | Any = None,
        skip_validation: bool = False,
        verbose: bool = False,
        smem_capacity_bytes: int | None = None,
        name: str = "kernel",
        block_warps: int | None = None,
        target: str | None = None,
        dma_consumer_release_labels: Mapping[Any, Any] | None = None,
        iket_enable_profiling: bool = False,
        iket_profiling_stages: Any = None,
        iket_profiling_resources: Any = None,
        tmem_allocator: Any = None,
        tmem_ptr_i32: Any = None,
        tmem_capacity_columns: int | None = None,
        exhaustive_deadlock_race_check: bool = True,
        assume_pdl_wait_completed: bool = False,
        debug_bounded_waits: bool = False,
    ) -> None:
        check_task_manager_arguments(
            tasks,
            resource_dependency_graph,
            smem_allocator=smem_allocator,
            flags={
                "skip_validation": skip_validation,
                "verbose": verbose,
                "exhaustive_deadlock_race_check": exhaustive_deadlock_race_check,
                "debug_bounded_waits": debug_bounded_waits,
            },
            smem_capacity_bytes=smem_capacity_bytes,
            name=name,
            block_warps=block_warps,
            target=target,
        )
        del exhaustive_deadlock_race_check  # always exhaustive
        unsupported = {
            "dma_consumer_release_labels": (dma_consumer_release_labels, None),
            "iket_enable_profiling": (iket_enable_profiling, False),
            "iket_profiling_stages": (iket_profiling_stages, None),
            "iket_profiling_resources": (iket_profiling_resources, None),
            "tmem_allocator": (tmem_allocator, None),
            "tmem_ptr_i32": (tmem_ptr_i32, None),
            "tmem_capacity_columns": (tmem_capacity_columns, None),
            "assume_pdl_wait_completed": (assume_pdl_wait_completed, False),
        }
        for opt, (value, default) in unsupported.items():
            if default is None:
                bad = value is not None and not (hasattr(value, "__len__") and len(value) == 0)
            else:
                bad = value != default
            if bad:
                raise UnsupportedFeatureError(
                    f"TaskManager({opt}={value!r}) is not supported by this TS version",
                    fix=f"leave {opt} at {default!r}",
                )
        tasks = list(tasks)
        if not tasks:
            raise RuntimeConfigError("TaskManager needs at least one task")
        for t in tasks:
            if not isinstance(t, Task):
                raise RuntimeConfigError(f"TaskManager: {t!r} is not a Task")
        if not resource_dependency_graph:
            raise RuntimeConfigError(
                "TaskManager: the resource dependency graph is empty",
                fix="pass {downstream: [upstreams...]} listing every resource of the tasks",
            )
        _check_cta_gates(tasks)
        self.tasks: list[Task] = tasks
        self.resource_dependency_graph = dict(resource_dependency_graph)
        self.skip_validation = skip_validation
        self.verbose = verbose
        self.debug_bounded_waits = debug_bounded_waits
        self.target = target or current_target()
        self.smem_capacity_bytes = smem_capacity_bytes or DEFAULT_SMEM_CAPACITY
        self._smem_allocator = smem_allocator
        self.resources: list[MemoryResource] = self._collect_resources()
        alias_groups: tuple[tuple[tuple[str, ...], ...], ...] = ()
        if isinstance(smem_allocator, SmemAllocator):
            if not smem_allocator.is_laid_out:
                smem_allocator.compute_layout(self.smem_capacity_bytes)
            alias_groups = smem_allocator.alias_groups_by_name()
        self._plan = build_plan(
            [t.declaration() for t in tasks],
            self.resource_dependency_graph,
            name=name,
            smem_alias_groups=alias_groups,
            smem_capacity=self.smem_capacity_bytes,
            block_warps=block_warps,
        )
        self._plan = _per_warp_tma_groups(self._plan)
        _check_queue_steps(tasks, self._plan)
        self._check_target()
        self._validated(self._check_group_sizes)
        self._validated(self._check_smem)
        self._report = verify(self._plan)
        if not self._report.ok:
            if skip_validation:
                warnings.warn(self._report.as_text(errors_only=True), stacklevel=2)
            else:
                raise VerificationError(self._report)
        self._context: ResourceContext | None = None
        self._setup_done = False
        self._run_done = False
        if verbose:
            self.print_and_verify()

    # -- construction helpers ------------------------------------------------------------------

    def _collect_resources(self) -> list[MemoryResource]:
        seen: dict[int, MemoryResource] = {}
        for t in self.tasks:
            for r in t.resources:
                seen.setdefault(id(r), r)
        for down, ups in self.resource_dependency_graph.items():
            for r in (down, *ups):
                seen.setdefault(id(r), r)
        return list(seen.values())

    def _validated(self, check: Any) -> None:
        try:
            check()
        except RuntimeConfigError as err:
            if not self.skip_validation:
                raise
            warnings.warn(str(err), stacklevel=3)

    def _tasks_using(self, resource: str) -> list[str]:
        return [t.name for t in self._plan.tasks if resource in (*t.sources, *t.destinations)]

    def _check_target(self) -> None:
        if is_blackwell_or_later(self.target):
            return
        for spec in self._plan.resources:
            p = spec.pipeline
            if p is None or not p.type.needs_blackwell:
                continue
            users = self._tasks_using(spec.name)
            task = users[0] if users else ""
            raise UnsupportedOnTarget(
                f"resource `{spec.name}` (used by task(s) {', '.join(users) or 'none'}) has a "
                f"{p.type.value} pipeline, which needs Blackwell (UMMA/TMEM or CLC); the target "
                f"is {self.target}",
                pipeline_type=p.type.value,
                target=self.target,
                task=task,
                resource=spec.name,
                fix=f"on Hopper use {blackwell_alternative(p.type)}",
            )

    def _check_group_sizes(self) -> None:
        # Interleaved rings are counted per lane (each lane's tasks arrive on its stages).
        plan, lane_errors = split_lanes(self._plan)
        if lane_errors:
            return  # the verifier reports them
        for spec in plan.resources:
            p = spec.pipeline
            if p is None:
                continue
            for role, group in (
                (Role.PRODUCER, p.producer_group),
                (Role.CONSUMER, p.consumer_group),
            ):
                users = [t for t in plan.tasks if _uses_side(t, spec.name, role)]
                if not users:
                    continue  # the verifier reports a side nobody runs
                counts = [(t, arrivals_per_signal(t, p, role)) for t in users]
                total = sum(n for _, n in counts)
                if total == group.size:
                    continue
                side = "producer" if role is Role.PRODUCER else "consumer"
                parts = ", ".join(
                    f"task `{t.name}` ({t.num_warps} warp{'s' if t.num_warps != 1 else ''}) {n}"
                    for t, n in counts
                )
                unit = "thread" if group.agent == "thread" else "warp"
                loc = users[0].location
                where = f" (task `{users[0].name}` declared at {loc.file}:{loc.line})"
                raise GroupSizeError(
                    f"resource `{spec.name}`: the {side} group has {group.size} {unit}(s), "
                    f"but the tasks that signal on it arrive {total} times per phase ({parts}); "
                    + (
                        "the barrier phase would never complete (deadlock)"
                        if total < group.size
                        else "the phase would complete early and a stage be reused while in use"
                    )
                    + where,
                    task=users[0].name,
                    resource=spec.name,
                    fix=f"build the {side} group as CooperativeGroup(Agent.{unit.title()}, "
                    f"{total}) or change the task's num_warps",
                )

    def _smem_layout(self) -> SmemLayout:
        alloc = self._smem_allocator
        if isinstance(alloc, SmemAllocator):
            plan_layout = plan_smem_layout(self._plan)
            own = alloc.layout
            # The allocator may hold allocations no resource declares; count the larger.
            return own if own.total >= plan_layout.total else plan_layout
        return plan_smem_layout(self._plan)

    def _check_smem(self) -> None:
        try:
            layout = self._smem_layout()
        except SmemLayoutError:
            return  # malformed declarations: the verifier reports them (TS-V209)
        if layout.total <= self.smem_capacity_bytes:
            return
        owner: dict[str, str] = {}
        for spec in self._plan.resources:
            for a in spec.smem:
                owner[a.name] = spec.name
        by_resource: dict[str, int] = {}
        for pl in layout.placements:
            res = owner.get(pl.name, pl.name)
            by_resource[res] = by_resource.get(res, 0) + pl.size
        for spec in self._plan.resources:
            if spec.pipeline is not None:
                by_resource[spec.name] = by_resource.get(spec.name, 0) + spec.pipeline.barrier_bytes
        biggest = max(by_resource, key=lambda r: by_resource[r]) if by_resource else ""
        users = self._tasks_using(biggest)
        usage = ", ".join(
            f"`{r}` {n} B" for r, n in sorted(by_resource.items(), key=lambda kv: -kv[1])
        )
        raise SmemBudgetError(
            at_line(
                f"the kernel needs {layout.total} bytes of shared memory (data "
                f"{layout.data_bytes} B + mbarriers {layout.barrier_bytes} B), over the "
                f"{self.smem_capacity_bytes} B per CTA by "
                f"{layout.total - self.smem_capacity_bytes} B; largest: resource `{biggest}` "
                f"used by task(s) {', '.join(users) or 'none'} ({usage})"
            ),
            task=users[0] if users else "",
            resource=biggest,
            fix=f"reduce `{biggest}`'s stages or tile size, or alias buffers that are never "
            "live together (SmemAllocator.add_alias_group)",
        )

    # -- queries -------------------------------------------------------------------------------

    @property
    def plan(self) -> KernelPlan:
        """The kernel plan (what was verified and is lowered)."""
        return self._plan

    @property
    def report(self) -> Report:
        """The verification report."""
        return self._report

    @property
    def smem_allocator(self) -> Any:
        """The SMEM allocator given at construction (or None)."""
        return self._smem_allocator

    def print_and_verify(self) -> Report:
        """Print the plan table, the SMEM usage and the verification report; return the report."""
        print(self._plan.as_text())
        if self._plan.resources and any(r.smem or r.pipeline for r in self._plan.resources):
            print(self._smem_layout().report())
        print(self._report.as_text())
        return self._report

    def get_marmaid_string_dependency_graph(
        self,
        direction: str = "TD",
        include_resource_details: bool = True,
        collapse_work_queue_edges: bool = True,
    ) -> str:
        """The resource / task graph as a Mermaid flowchart (documented spelling "marmaid")."""
        del include_resource_details, collapse_work_queue_edges  # always detailed, not collapsed
        return render_mermaid(self._plan, direction)

    # -- inside the kernel ---------------------------------------------------------------------

    def setup_resources_and_tasks(self) -> ResourceContext:
        """Allocate the SMEM block and build the :class:`ResourceContext` (once, in the kernel).

        The pipelines and their mbarriers are created by :meth:`run`, which also makes their
        initialisation visible (fence + CTA barrier); a user fence / barrier in between is
        harmless.
        """
        if self._setup_done:
            raise RuntimeError("TaskManager.setup_resources_and_tasks() may run only once")
        alloc = self._smem_allocator
        base = None
        if isinstance(alloc, SmemAllocator):
            alloc.allocate()
            base = alloc.smem_base
        self._context = ResourceContext(smem_base=base, smem_allocator=alloc)
        self._setup_done = True
        return self._context

    @property
    def context(self) -> ResourceContext | None:
        """The context every work call sees as ``stage_info.context`` (after setup)."""
        return self._context

    def run(self) -> dict[str, Any]:
        """Emit every task at this point of the kernel: pipelines, warp dispatch, schedules.

        Returns:
            The ``cutlass.pipeline`` objects by resource name.
        """
        if not self._setup_done:
            raise RuntimeError("TaskManager.run(): call setup_resources_and_tasks() first")
        if self._run_done:
            raise RuntimeError("TaskManager.run() may run only once")
        import ts_codegen

        bounds: dict[str, list[tuple[Any, Any, Any] | None]] = {}
        for t in self.tasks:
            if t.debug_print:
                print(f"task {t.name}:\n{t.schedule.as_text()}")
            if t.has_runtime_bounds():
                # Per-tile bounds come as the task's methods; the lowering calls them with
                # each work tile's coordinate.
                bounds[t.name] = t.loop_bounds()
        debug = [t.name for t in self.tasks if t.debug_print or self.debug_bounded_waits]
        alloc = self._smem_allocator
        self._run_done = True
        return ts_codegen.emit_tasks(
            self._plan,
            {resource_name(r): r for r in self.resources},
            bounds=bounds,
            smem_allocator=alloc,
            context=self._context,
            debug=debug,
            task_caches={t.name: t.make_task_cache for t in self.tasks},
            cta_gates={
                t.name: t.run_only_on_cta_id for t in self.tasks if t.run_only_on_cta_id is not None
            },
        )
