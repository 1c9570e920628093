"""``TaskManager``: the reference's front door, a shim over the stages of :mod:`ts_runtime.stages`.

Lifecycle (inside the ``@cute.kernel``)::

    tm = TaskManager(tasks, {dst: [smem]}, smem_allocator=alloc)   # plan + verify
    tm.setup_resources_and_tasks()                                 # SMEM block, context
    tm.run()                                                       # pipelines, warp dispatch

Construction is pure Python (no GPU, no CuTe DSL): it checks the reference's arguments, then
runs :func:`~ts_runtime.stages.plan_tasks` and :func:`~ts_runtime.stages.verify_plan` (every
check is ts-verify's; a Blackwell pipeline type on Hopper, a cooperative-group size that
contradicts the tasks and SMEM over budget come back as the typed errors below, each naming the
task and the resource). ``run()`` is :func:`~ts_runtime.stages.lower_plan`. The staged
:class:`~ts_runtime.staged.Kernel` runs the same three stages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ts_ir import KernelPlan, SmemLayout, plan_smem_layout, render_mermaid
from ts_ir.errors import caller_location
from ts_runtime._arguments import check_task_manager_arguments
from ts_runtime.errors import UnsupportedFeatureError
from ts_runtime.memory import ResourceContext, SmemAllocator
from ts_runtime.stages import (
    collect_resources,
    lower_plan,
    plan_tasks,
    setup_context,
    target_of,
    verify_plan,
)
from ts_runtime.task import Task
from ts_runtime.tmem import TmemDeclaration
from ts_trace import MemoryResource
from ts_verify import Report

__all__ = ["TaskManager"]


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
            ``iket_profiling_stages``, ``iket_profiling_resources`` and
            ``assume_pdl_wait_completed`` are not supported yet and must keep their defaults;
            ``tmem_allocator`` (a :class:`~ts_runtime.tmem.TmemAllocator`),
            ``tmem_capacity_columns`` (default: the target's, 512 on sm_100a) and
            ``tmem_ptr_i32`` (the SMEM word holding the TMEM address, when it is not the SMEM
            allocator's ``add_tmem_ptr`` slot) describe tensor memory (Blackwell);
            ``exhaustive_deadlock_race_check`` is accepted for compatibility (TS always proves
            the plan free of deadlocks and races for every trip count).

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
        self.tasks: list[Task] = list(tasks)
        self.resource_dependency_graph = dict(resource_dependency_graph)
        self.skip_validation = skip_validation
        self.verbose = verbose
        self.debug_bounded_waits = debug_bounded_waits
        self._target = target_of(target, smem_capacity_bytes)
        self.target = self._target.name
        self.smem_capacity_bytes = self._target.smem_capacity
        self._smem_allocator = smem_allocator
        self._tmem = TmemDeclaration.of(tmem_allocator, tmem_capacity_columns, tmem_ptr_i32)
        self.resources: list[MemoryResource] = collect_resources(
            self.tasks, self.resource_dependency_graph
        )
        self._plan = plan_tasks(
            self.tasks,
            self.resource_dependency_graph,
            target=self._target,
            smem_allocator=smem_allocator,
            name=name,
            block_warps=block_warps,
            tmem=self._tmem,
        )
        # stacklevel 2: a warning (skip_validation) points at the user's TaskManager(...) line.
        self._report = verify_plan(
            self._plan,
            self._target,
            skip_validation=skip_validation,
            stacklevel=2,
            # An explicit capacity is the user's number: a budget error names this call.
            capacity_at=None if smem_capacity_bytes is None else caller_location(),
        )
        self._context: ResourceContext | None = None
        self._setup_done = False
        self._run_done = False
        if verbose:
            self.print_and_verify()

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
    def tmem_allocator(self) -> Any:
        """The TMEM allocator given at construction (or None)."""
        return self._tmem.allocator

    @property
    def smem_allocator(self) -> Any:
        """The SMEM allocator given at construction (or None)."""
        return self._smem_allocator

    def _smem_layout(self) -> SmemLayout:
        return plan_smem_layout(self._plan)

    def print_and_verify(self) -> Report:
        """Print the plan table, the SMEM usage and the verification report; return the report."""
        print(self._plan.as_text())
        if self._plan.smem_extra or any(r.smem or r.pipeline for r in self._plan.resources):
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
        self._context = setup_context(self._smem_allocator, self._tmem.ptr_i32)
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
        self._run_done = True
        return lower_plan(
            self._plan,
            self.tasks,
            self.resources,
            smem_allocator=self._smem_allocator,
            context=self._context,
            debug_bounded_waits=self.debug_bounded_waits,
        )
