"""Emit every task of a kernel plan inside the user's ``@cute.kernel``.

:func:`emit_tasks` is called from the kernel body at trace time. It

1. creates the pipeline of every pipelined resource (``cutlass.pipeline``), its mbarriers in
   SMEM, and makes their initialisation visible with one fence + CTA barrier;
2. asks every work queue for its tile source (:class:`ts_codegen.TileSource`), which may carve
   SMEM slots, and reads the warp index once (warp-uniform);
3. per task: opens ``if start <= warp < end`` (omitted when the task spans the whole block),
   applies ``setmaxnreg`` for the task's warpgroups (``.inc`` above the CTA's starting
   budget, ``.dec`` otherwise), and lowers the task's schedule (:func:`ts_codegen.lower_task`).

A warpgroup shared by several tasks gets its ``setmaxnreg`` in a block of its own before the
task dispatch (all four warps must execute it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ts_codegen import capture, dsl
from ts_codegen.dsl.branch_state import BranchState
from ts_codegen.dsl.groups import share_full_barriers
from ts_codegen.groups import fork_shared_full, fork_tx_bytes, lowered_plan
from ts_codegen.lower import LoweringError, lower_task
from ts_codegen.work_queues import TileSource
from ts_ir import WARP_SIZE, WARPGROUP_WARPS, KernelPlan, PipelineType, TaskSpec
from ts_trace import MemoryResource, resource_name

__all__ = ["emit_tasks", "resources_by_name"]

_LOWERED_PIPELINES = tuple(PipelineType)
"""Every kind: the Blackwell ones compile for sm_100a (ts-verify refuses them for Hopper)."""

_SINGLE_CTA_BLACKWELL = frozenset(
    {PipelineType.AsyncUmma, PipelineType.UmmaUmma, PipelineType.ClcFetchAsync}
)
"""Blackwell kinds lowered for one-CTA clusters only (TmaUmma / UmmaAsync span clusters)."""


def resources_by_name(
    resources: Mapping[str, MemoryResource] | Iterable[MemoryResource],
) -> dict[str, MemoryResource]:
    """Resources keyed by their TS name."""
    if isinstance(resources, Mapping):
        return dict(resources)
    return {resource_name(r): r for r in resources}


def _register_plan(plan: KernelPlan) -> tuple[dict[str, int | None], dict[int, int]]:
    """Per task: the fused setmaxnreg count (or None); per shared warpgroup: its count."""
    by_wg: dict[int, set[int]] = {}
    tasks_in_wg: dict[int, set[str]] = {}
    for t in plan.tasks:
        for w in t.warps:
            wg = w // WARPGROUP_WARPS
            tasks_in_wg.setdefault(wg, set()).add(t.name)
            if t.num_registers is not None:
                by_wg.setdefault(wg, set()).add(t.num_registers)
    for wg, counts in by_wg.items():
        if len(counts) > 1:
            raise LoweringError(
                f"warpgroup {wg} has tasks with different register counts {sorted(counts)}; "
                "setmaxnreg applies to whole warpgroups"
            )
    fused: dict[str, int | None] = {}
    shared: dict[int, int] = {}
    for t in plan.tasks:
        wgs = {w // WARPGROUP_WARPS for w in t.warps}
        whole = t.warp_start % WARPGROUP_WARPS == 0 and t.num_warps % WARPGROUP_WARPS == 0
        alone = all(tasks_in_wg[wg] == {t.name} for wg in wgs)
        if t.num_registers is not None and whole and alone:
            fused[t.name] = t.num_registers
        else:
            fused[t.name] = None
            for wg in wgs:
                if wg in by_wg:
                    shared[wg] = next(iter(by_wg[wg]))
    return fused, shared


def _emit_pipelines(
    plan: KernelPlan, allocator: Any, groups_of: KernelPlan | None = None
) -> dict[str, Any]:
    """Every ring's pipeline; TMA Fork members per ``groups_of`` (the plan before expansion)."""
    shared_full = fork_shared_full(groups_of) if groups_of is not None else {}
    tx_override = fork_tx_bytes(groups_of) if groups_of is not None else {}
    pipelines: dict[str, Any] = {}
    for spec in plan.resources:
        p = spec.pipeline
        if p is None:
            continue
        if p.type not in _LOWERED_PIPELINES:
            raise LoweringError(
                f"resource `{spec.name}`: pipeline type {p.type.value} is not lowered"
            )
        if p.type in _SINGLE_CTA_BLACKWELL and p.cluster_mn != (1, 1):
            raise LoweringError(
                f"resource `{spec.name}`: a {p.type.value} pipeline over a {p.cluster_mn} cluster "
                "(CLC answers multicast to a cluster, AsyncUmma / UmmaUmma across CTAs) is not "
                "lowered yet; TmaUmma and UmmaAsync rings are, or use one CTA per cluster"
            )
        pipelines[spec.name] = dsl.make_pipeline(
            p.type.value,
            stages=p.stages,
            producer=(p.producer_group.agent, p.producer_group.size),
            consumer=(p.consumer_group.agent, p.consumer_group.size),
            tx_bytes=tx_override.get(spec.name, p.bytes_per_stage),
            storage=dsl.barrier_storage(allocator, p.stages),
            cluster_mn=p.cluster_mn,
        )
    for member, first in shared_full.items():
        # One TMA load fills every Fork member's view: all wait on the first's full barriers.
        pipelines[member] = share_full_barriers(pipelines[member], pipelines[first])
    # A ring of one CTA (1 x 1: a math-order token beside multicast operand rings) keeps its
    # barriers to its CTA and fits any cluster; the rings that span one must agree on it.
    clusters = {spec.pipeline.cluster_mn for spec in plan.resources if spec.pipeline} - {(1, 1)}
    if len(clusters) > 1:
        raise LoweringError(
            f"the pipelines span different clusters {sorted(clusters)}; a kernel launches one "
            "cluster shape"
        )
    if pipelines:
        dsl.pipelines_ready(clusters.pop() if clusters else (1, 1))
    return pipelines


def _tile_sources(
    plan: KernelPlan, live: Mapping[str, MemoryResource], allocator: Any
) -> dict[str, TileSource]:
    sources: dict[str, TileSource] = {}
    for spec in plan.resources:
        if not spec.is_work_queue:
            continue
        make = getattr(live[spec.name], "ts_tile_source", None)
        if make is None:
            continue  # a queue no task iterates with work_tile_loop needs no source
        source = make()
        if not isinstance(source, TileSource):
            raise LoweringError(
                f"resource `{spec.name}`: ts_tile_source() returned {source!r}, not a TileSource"
            )
        source.prepare(allocator, 0 if spec.pipeline is None else spec.pipeline.stages)
        sources[spec.name] = source
    return sources


def emit_tasks(
    plan: KernelPlan,
    resources: Mapping[str, MemoryResource] | Iterable[MemoryResource],
    *,
    bounds: Mapping[str, Sequence[tuple[Any, Any, Any] | None]] | None = None,
    smem_allocator: Any = None,
    context: Any = None,
    debug: bool | Iterable[str] = False,
    task_caches: Mapping[str, Callable[[], Any]] | None = None,
    cta_gates: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Lower every task of ``plan`` at the current point of the kernel being traced.

    Args:
        plan: The (verified) kernel plan.
        resources: The live resources, by name or as an iterable.
        bounds: Per task name, the values of its runtime domain-loop bounds (see
            :func:`ts_codegen.lower_task`).
        smem_allocator: A ``cutlass.utils.SmemAllocator`` to carve barrier storage from (a new
            one when None).
        context: Passed to every work call as ``stage_info.context``.
        debug: Bounded, trapping waits (see :func:`ts_codegen.lower_task`) for every task
            (True) or for the tasks named.
        task_caches: Per task name, what ``stage_info.task_cache`` is (called for every
            work call of that task).
        cta_gates: Per task name, the one CTA rank in its cluster the task runs on
            (``run_only_on_cta_id``); other tasks run on every CTA.

    Returns:
        The created pipelines by resource name.

    Raises:
        LoweringError: A resource missing, a pipeline type, group or construct not lowered yet,
            or register counts that differ within a warpgroup.
    """
    # Groups are emitted as verified: their collapsed steps on every member (ts_codegen.groups).
    written, plan = plan, lowered_plan(plan)
    # As written: translation validation writes the groups out itself and needs to know
    # which TMA Fork members share full barriers (ts_runtime.ptx_check).
    capture.note_lowered(written)
    live = resources_by_name(resources)
    specs = {r.name: r for r in plan.resources}
    for t in plan.tasks:
        for name in (*t.sources, *t.destinations):
            if name not in live:
                raise LoweringError(f"task `{t.name}` uses resource `{name}`, which was not given")
    if smem_allocator is None:
        # One allocator for every barrier array and slot: separate ones would overlap.
        smem_allocator = dsl.new_smem_allocator()
    pipelines = _emit_pipelines(plan, smem_allocator, written)
    queues = _tile_sources(plan, live, smem_allocator)
    debug_tasks = {t.name for t in plan.tasks} if debug is True else set(debug or ())
    block_warps = plan.num_warps
    baseline = dsl.block_threads_default(block_warps * WARP_SIZE)
    fused, shared = _register_plan(plan)
    warp = dsl.warp_index() if len(plan.tasks) > 1 or shared else None
    for wg, count in sorted(shared.items()):
        lo = wg * WARPGROUP_WARPS

        def set_regs(carried: list[Any], count: int = count) -> list[Any]:
            dsl.set_max_registers(count, increase=count > baseline)
            return carried

        dsl.if_then(dsl.in_range(warp, lo, lo + WARPGROUP_WARPS), [], set_regs)
    all_bounds = bounds or {}
    for task in plan.tasks:

        def run(carried: list[Any], task: TaskSpec = task) -> list[Any]:
            # What the task rebinds on shared DSL objects stays in its branch (branch_state).
            state = BranchState(live.values())
            regs = fused[task.name]
            if regs is not None:
                dsl.set_max_registers(regs, increase=regs > baseline)
            lower_task(
                task,
                live,
                specs,
                pipelines,
                bounds=all_bounds.get(task.name, ()),
                context=context,
                queues=queues,
                debug=task.name in debug_tasks,
                task_cache=(task_caches or {}).get(task.name),
            )
            state.restore()
            return carried

        gate = (cta_gates or {}).get(task.name)
        cond = None
        if not (task.warp_start == 0 and task.warp_end >= block_warps):
            cond = dsl.in_range(warp, task.warp_start, task.warp_end)
        if gate is not None:
            on_cta = dsl.cta_rank_in_cluster() == gate
            cond = on_cta if cond is None else cond & on_cta
        if cond is None:
            run([])
        else:
            dsl.if_then(cond, [], run)
    return pipelines
