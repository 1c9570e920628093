"""Checks across tasks: who produces and consumes what, arrivals, warps, registers, SMEM.

These need no interleaving: they compare declarations (pipeline groups, warp ranges, register
budgets, SMEM) with what the schedules do.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence

from ts_ir import (
    WARP_SIZE,
    WARPGROUP_WARPS,
    CooperativeGroupSpec,
    KernelPlan,
    PipelineSpec,
    ResourceSpec,
    Role,
    ScheduleStage,
    Step,
    Target,
    TaskSpec,
    TileSchedulerType,
    WorkTileLoop,
)
from ts_verify.blackwell import check_blackwell_rings, umma_arrivals
from ts_verify.budgets import check_budgets
from ts_verify.diagnostics import Diagnostic, Severity
from ts_verify.pdl import check_pdl
from ts_verify.tmem import check_tmem

__all__ = [
    "REGISTER_FILE",
    "arrivals_per_signal",
    "check_kernel",
    "multicast_peers",
    "per_warp_consumer_group",
    "skips_on",
    "steps_by_resource",
    "tasks_touching",
]

REGISTER_FILE = 65536
"""32-bit registers per SM (sm_90)."""


_STATIC = TileSchedulerType.StaticPersistent

_BY_RESOURCE: dict[int, tuple[TaskSpec, dict[str, tuple[Step, ...]]]] = {}


def steps_by_resource(task: TaskSpec) -> dict[str, tuple[Step, ...]]:
    """The task's steps grouped by resource.

    Cached by identity: plans are immutable, and hashing a task would walk its whole schedule.
    """
    hit = _BY_RESOURCE.get(id(task))
    if hit is not None and hit[0] is task:
        return hit[1]
    grouped: dict[str, list[Step]] = defaultdict(list)
    for s in task.schedule.steps():
        grouped[s.resource].append(s)
    result = {r: tuple(steps) for r, steps in grouped.items()}
    if len(_BY_RESOURCE) > 1024:
        _BY_RESOURCE.clear()
    _BY_RESOURCE[id(task)] = (task, result)
    return result


def tasks_touching(plan: KernelPlan) -> dict[str, tuple[TaskSpec, ...]]:
    """For every resource, the tasks whose schedules use it, in task order.

    One pass over the plan, so that checks per resource cost the tasks that use it, not all of
    them (a chain of n tasks has n resources: asking every task would be quadratic).
    """
    users: dict[str, list[TaskSpec]] = defaultdict(list)
    for t in plan.tasks:
        for resource in steps_by_resource(t):
            users[resource].append(t)
    return {r: tuple(ts) for r, ts in users.items()}


def _ops(task: TaskSpec, resource: str, stages: tuple[ScheduleStage, ...]) -> list[Step]:
    return [s for s in steps_by_resource(task).get(resource, ()) if s.stage in stages]


_SIDE_OPS = {
    role: tuple(s for s in ScheduleStage if s.is_pipeline_op and s.role is role) for role in Role
}
"""The pipeline operations of each side (acquire / commit / try_acquire; wait / release ...)."""


def arrivals_per_signal(task: TaskSpec, pipeline: PipelineSpec, role: Role) -> int:
    """How many arrivals one commit (producer) or release (consumer) of ``task`` makes."""
    umma = umma_arrivals(task, pipeline, role)
    if umma is not None:
        return umma  # tcgen05.commit: one elected thread per signaling warp
    if role is Role.PRODUCER:
        group, signaling = pipeline.producer_group, pipeline.producer_signaling
        if pipeline.type.producer_expects_tx:
            return 1  # one elected thread arms the barrier with the transaction bytes (TMA, CLC)
    else:
        group, signaling = pipeline.consumer_group, pipeline.consumer_signaling
    if signaling.has_task_warp_leader():
        return group.arrivals_for(1)  # only the task's first warp signals
    # All, or CtaLeader: the leader CTA of a cluster signals, i.e. every CTA of a one-CTA
    # cluster (the per-CTA protocol is what is checked; the runtime refuses CtaLeader rings
    # over clusters of several CTAs).
    return group.arrivals_for(task.num_warps)


def _releases_per_warp(pipeline: PipelineSpec) -> bool:
    """A TMA ring read by threads: ``PipelineTmaAsync`` releases once per consumer warp.

    (A UMMA consumer's ``tcgen05.commit`` is one arrival per warp too, but its group is
    counted that way in every spelling, so it is exact as written.)
    """
    return pipeline.type.producer_is_tma and not pipeline.type.consumer_is_umma


def multicast_peers(pipeline: PipelineSpec) -> int:
    """The CTAs whose consumers release each stage of one CTA's copy of a TMA ring.

    On a cluster ``(CM, CN)`` a TMA producer multicasts into the CTAs of its cluster row and
    column, and a consumer's release arrives on the empty barrier of every CTA that multicast
    into the stage: ``CM + CN - 1`` CTAs (the CTA itself counted once, as ``PipelineTmaAsync``
    counts with ``mcast_mode_mn=(1, 1)``). Threads (``TmaAsync`` / ``TmaWgmma``) arrive once
    per warp and peer; a UMMA consumer (``TmaUmma``) releases with one ``tcgen05.commit`` per
    committing warp whose multicast mask holds those CTAs, one arrival on each. 1 for every
    other ring (a UMMA-filled ring over a cluster of one-CTA UMMAs is the CTA's own).
    """
    cm, cn = pipeline.cluster_mn
    return cm + cn - 1 if pipeline.type.producer_is_tma else 1


def _umma_over_cluster(pipeline: PipelineSpec) -> bool:
    """A TMA ring over a cluster whose consumer releases with a multicast ``tcgen05.commit``."""
    return (
        pipeline.type.producer_is_tma
        and pipeline.type.consumer_is_umma
        and multicast_peers(pipeline) > 1
    )


def per_warp_consumer_group(
    pipeline: PipelineSpec, consumers: Sequence[TaskSpec], resource: str = ""
) -> CooperativeGroupSpec | None:
    """The thread group that a TMA ring's consumer group counted per warp stands for.

    ``PipelineTmaAsync`` arrives on a stage's empty barrier once per consumer warp and per
    CTA that multicast into the stage (:func:`multicast_peers`), and initialises the barrier
    with the group's size as given: reference programs size the group as ``warps x peers``
    (4 for a 4-warp consumer, 8 on a 2-CTA cluster), TS's own ones in threads (128). The plan
    counts threads (one arrival per thread of one CTA; the lowering derives the barrier's
    count), so the per-warp size becomes the threads it stands for.

    A ``TmaUmma`` ring over a cluster is spelled alike: its UMMA consumer's commits are one
    arrival per committing warp (the plan's count, one CTA's), and reference programs size
    the group ``commits x peers`` (``CM + CN - 1`` for one MMA warp), the count the barrier
    of each CTA receives from the CTAs in the commit's multicast mask. That size becomes the
    one CTA's count; the lowering multiplies it back.

    When the consumers skip stages on ``resource`` (they take turns, and each stage is
    released by one of them alone), the group stands for one task's arrivals, and the tasks
    must arrive alike.

    Returns:
        The thread group, or None when the group is not the per-warp count of ``consumers``
        (then it is judged as written: a thread count, or a wrong count that TS-V203 names),
        or is also their thread count.
    """
    group = pipeline.consumer_group
    each = [arrivals_per_signal(t, pipeline, Role.CONSUMER) for t in consumers]
    if resource and skips_on(resource, consumers):
        if len(set(each)) != 1:
            return None  # tasks that arrive unalike: TS-V203 names each
        arrivals = each[0]
    else:
        arrivals = sum(each)
    if consumers and group.agent == "thread" and _umma_over_cluster(pipeline):
        if group.size == arrivals * multicast_peers(pipeline):
            return CooperativeGroupSpec("thread", arrivals)
        return None
    if not consumers or group.agent != "thread" or not _releases_per_warp(pipeline):
        return None
    warps = arrivals // WARP_SIZE
    if group.size != warps * multicast_peers(pipeline) or group.size == warps * WARP_SIZE:
        return None
    return CooperativeGroupSpec("thread", warps * WARP_SIZE)


def _arrivals(plan: KernelPlan) -> Iterator[Diagnostic]:
    touching = tasks_touching(plan)
    for res in plan.resources:
        if res.pipeline is None:
            continue
        sides = (
            (Role.PRODUCER, ScheduleStage.ProducerCommit, res.pipeline.producer_group.size),
            (Role.CONSUMER, ScheduleStage.ConsumerRelease, res.pipeline.consumer_group.size),
        )
        for role, signal, expected in sides:
            users = [t for t in touching.get(res.name, ()) if _ops(t, res.name, _SIDE_OPS[role])]
            signals = [(t, _ops(t, res.name, (signal,))) for t in users]
            signals = [(t, ops) for t, ops in signals if ops]
            if not users:
                code = "TS-V201" if role is Role.PRODUCER else "TS-V202"
                op = "acquire()/commit()" if role is Role.PRODUCER else "wait()/release()"
                yield Diagnostic(
                    code,
                    f"`{res.name}` has a pipeline but no task runs {op} on it; the other side "
                    "would wait forever",
                    resource=res.name,
                    location=res.location,
                )
                continue
            if not signals:
                continue  # the per-task checks report the missing commit/release
            # Every task on this side counts, also one that lacks its commit/release (the
            # per-task checks report that): the group size is judged against the tasks.
            if role is Role.CONSUMER and skips_on(res.name, users):
                # Consumers that skip take turns: each stage is released by one of them alone.
                for t, ops in signals:
                    own = arrivals_per_signal(t, res.pipeline, role)
                    if own != expected:
                        yield _arrival_mismatch(res, role, expected, own, [t], (t, ops), True)
                continue
            total = sum(arrivals_per_signal(t, res.pipeline, role) for t in users)
            if total != expected:
                yield _arrival_mismatch(res, role, expected, total, users, signals[0])


def skips_on(resource: str, tasks: Iterable[TaskSpec]) -> bool:
    """Whether a task of ``tasks`` runs ``skip_stage()`` on ``resource``."""
    return any(_ops(t, resource, (ScheduleStage.ConsumerSkip,)) for t in tasks)


def _arrival_mismatch(
    res: ResourceSpec,
    role: Role,
    expected: int,
    total: int,
    users: list[TaskSpec],
    first_signal: tuple[TaskSpec, list[Step]],
    turns: bool = False,
) -> Diagnostic:
    """TS-V203, in the words of the reference's API (the group a user builds).

    ``turns``: the consumers skip stages (``skip_stage``), so each stage is released by one
    task alone, and the group must count one task's arrivals, not all of theirs.
    """
    assert res.pipeline is not None
    side = "producer" if role is Role.PRODUCER else "consumer"
    group = res.pipeline.producer_group if role is Role.PRODUCER else res.pipeline.consumer_group
    unit = "thread" if group.agent == "thread" else "warp"
    parts = ", ".join(
        f"task `{t.name}` ({t.num_warps} warp{'s' if t.num_warps != 1 else ''}) "
        f"{arrivals_per_signal(t, res.pipeline, role)}"
        for t in users
    )
    effect = (
        "the barrier phase never completes (deadlock)"
        if total < expected
        else "the phase completes early and the stage is reused while in use (race)"
    )
    task, ops = first_signal
    first = ops[0]
    fix = f"build the {side} group as CooperativeGroup(Agent.{unit.title()}, {total})"
    if role is Role.CONSUMER and group.agent == "thread" and _releases_per_warp(res.pipeline):
        # The reference's spelling of the same barrier: one arrival per warp and peer CTA.
        peers = multicast_peers(res.pipeline)
        per_warp = total // WARP_SIZE * peers
        where = f" on each of the {peers} CTAs that multicast into a stage" if peers > 1 else ""
        fix += (
            f" or CooperativeGroup(Agent.Thread, {per_warp}) (PipelineTmaAsync's count: one "
            f"arrival per consumer warp{where})"
        )
    if role is Role.CONSUMER and _umma_over_cluster(res.pipeline):
        peers = multicast_peers(res.pipeline)
        fix += (
            f" (one CTA's commits) or CooperativeGroup(Agent.Thread, {total * peers}) (what "
            f"each CTA's empty barrier receives: one tcgen05.commit arrival per committing "
            f"warp of each of the {peers} CTAs of its cluster row and column, whose TMA loads "
            "fill the stage and whose commits carry it in their multicast mask)"
        )
    if turns:
        effect += (
            "; its consumers skip stages (skip_stage), so each stage is released by one task "
            "alone and the group counts one task's arrivals"
        )
    return Diagnostic(
        "TS-V203",
        f"resource `{res.name}`: the {side} group has {group.size} {unit}(s) and expects "
        f"{expected} arrivals per phase, but the tasks that signal on it arrive {total} times "
        f"per phase ({parts}); {effect}",
        task=task.name,
        resource=res.name,
        step=f"#{first.id} {first.describe()}",
        location=first.location,
        fix=f"{fix}, or change the signaling tasks' num_warps or which of their threads signal",
    )


def _warps(plan: KernelPlan) -> Iterator[Diagnostic]:
    tasks = list(plan.tasks)
    for a in tasks:
        if a.warp_start < 0 or a.num_warps < 1:
            yield Diagnostic(
                "TS-V205",
                f"task `{a.name}` has warp range [{a.warp_start}, {a.warp_end})",
                task=a.name,
                location=a.location,
                fix="use warp_idx >= 0 and num_warps >= 1",
            )
        if plan.block_warps is not None and a.warp_end > plan.block_warps:
            yield Diagnostic(
                "TS-V205",
                f"task `{a.name}` uses warps {a.warp_start}..{a.warp_end - 1} but the block has "
                f"{plan.block_warps} warps",
                task=a.name,
                location=a.location,
            )
    # Which tasks claim each warp: linear in warps, and every overlapping pair once.
    owners: dict[int, list[int]] = defaultdict(list)
    for i, t in enumerate(tasks):
        for w in t.warps:
            owners[w].append(i)
    pairs = sorted({(i, j) for ids in owners.values() for i in ids for j in ids if i < j})
    for i, j in pairs:
        a, b = tasks[i], tasks[j]
        shared = set(a.warps) & set(b.warps)
        yield Diagnostic(
            "TS-V204",
            f"tasks `{a.name}` (warps {a.warp_start}..{a.warp_end - 1}) and `{b.name}` "
            f"(warps {b.warp_start}..{b.warp_end - 1}) share warps "
            f"{sorted(shared)}; a warp runs one task",
            task=b.name,
            location=b.location,
        )


def _registers(plan: KernelPlan) -> Iterator[Diagnostic]:
    by_group: dict[int, dict[int | None, list[TaskSpec]]] = defaultdict(lambda: defaultdict(list))
    for t in plan.tasks:
        regs = t.num_registers
        if regs is not None and (regs % 8 or not 24 <= regs <= 256):
            yield Diagnostic(
                "TS-V208",
                f"task `{t.name}` asks for {regs} registers per thread; setmaxnreg takes a "
                "multiple of 8 in [24, 256]",
                task=t.name,
                location=t.location,
            )
        for w in t.warps:
            by_group[w // WARPGROUP_WARPS][regs].append(t)
    for group, budgets in sorted(by_group.items()):
        if len(budgets) > 1:
            names = "; ".join(
                f"{', '.join(sorted({t.name for t in ts}))}: {r if r is not None else 'default'}"
                for r, ts in budgets.items()
            )
            task = next(iter(budgets.values()))[0]
            yield Diagnostic(
                "TS-V206",
                f"warpgroup {group} (warps {group * 4}..{group * 4 + 3}) mixes register "
                f"budgets ({names})",
                task=task.name,
                location=task.location,
            )
    warps = max(plan.num_warps, 1)
    default = min(256, REGISTER_FILE // (warps * WARP_SIZE)) // 8 * 8
    total = 0
    for group in range((warps + WARPGROUP_WARPS - 1) // WARPGROUP_WARPS):
        asked = by_group.get(group, {})
        budget = max((r if r is not None else default for r in asked), default=default)
        total += budget * WARP_SIZE * min(WARPGROUP_WARPS, warps - group * WARPGROUP_WARPS)
    if total > REGISTER_FILE:
        # Point at the task with the largest explicit budget (the one to lower first).
        biggest = max(plan.tasks, key=lambda t: t.num_registers or 0, default=None)
        yield Diagnostic(
            "TS-V207",
            f"the tasks ask for {total} registers in all, more than the {REGISTER_FILE} of "
            "the register file",
            task="" if biggest is None else biggest.name,
            location=None if biggest is None else biggest.location,
            fix="lower num_registers of the tasks (the largest first) or use fewer warps",
        )


def _dependencies(plan: KernelPlan) -> Iterator[Diagnostic]:
    names = {r.name for r in plan.resources}
    for e in plan.dependencies:
        for r in (e.upstream, e.downstream):
            if r not in names:
                yield Diagnostic("TS-V212", f"the dependency graph names unknown `{r}`", resource=r)
    for t in plan.tasks:
        steps = {s.id: s for s in t.schedule.steps()}
        for s in steps.values():
            if s.stage.role is not Role.PRODUCER or not s.is_work:
                continue
            ups = set(plan.upstreams_of(s.resource))
            for route in s.inputs:
                src = steps[route.source_step].resource
                if src != s.resource and src not in ups:
                    yield Diagnostic(
                        "TS-V211",
                        f"{s.describe()} is fed `{route.output}` from `{src}`, but the dependency "
                        f"graph does not list `{src}` as an upstream of `{s.resource}`",
                        task=t.name,
                        resource=s.resource,
                        step=f"#{s.id} {s.describe()}",
                        location=s.location,
                        fix=f"add {src} to resource_dependency_graph[{s.resource}]",
                    )


def _work_queues(plan: KernelPlan) -> Iterator[Diagnostic]:
    queues: dict[str, list[str]] = defaultdict(list)
    loops: dict[str, tuple[str, WorkTileLoop]] = {}
    for t in plan.tasks:
        for n in t.schedule.body:
            if isinstance(n, WorkTileLoop):
                queues[n.work_queue].append(t.name)
                loops.setdefault(n.work_queue, (t.name, n))
    if len(queues) > 1:
        detail = "; ".join(f"{q}: {', '.join(ts)}" for q, ts in queues.items())
        # Point at the first loop over the second queue (the odd one out, in plan order).
        name, loop = loops[list(queues)[1]]
        yield Diagnostic(
            "TS-V213",
            f"persistent tasks iterate different work queues ({detail}); tasks that share "
            "pipelines must see the same tiles",
            task=name,
            resource=loop.work_queue,
            step=f"work_tile_loop({loop.work_queue})",
            location=loop.location,
            fix=f"iterate `{next(iter(queues))}` in every persistent task",
        )


def _cta_gates(plan: KernelPlan) -> Iterator[Diagnostic]:
    """TS-V250: tasks that share a ring run on the same CTA ranks.

    The plan is verified per CTA. Where every task on a ring runs on one CTA rank, that CTA
    runs the verified protocol and the others never touch the ring; a ring between a gated and
    an ungated (or otherwise gated) task has one side only in the other CTAs, which hangs,
    unless signals were routed across the cluster, which TS does not lower. Reported once per
    gated task, for its first such partner (a pair gated to two ranks, once).
    """
    rings = {r.name for r in plan.resources if r.pipeline is not None}
    reported: set[frozenset[str]] = set()
    for t in plan.tasks:
        if t.cta_rank is None:
            continue
        mine = [r for r in (*t.sources, *t.destinations) if r in rings]
        for u in plan.tasks:
            if u is t or u.cta_rank == t.cta_rank or frozenset((t.name, u.name)) in reported:
                continue
            shared = [r for r in mine if r in (*u.sources, *u.destinations)]
            if not shared:
                continue
            reported.add(frozenset((t.name, u.name)))
            yield Diagnostic(
                "TS-V250",
                f"task `{t.name}` runs only on CTA {t.cta_rank} of its cluster "
                f"(run_only_on_cta_id={t.cta_rank}), but task `{u.name}` "
                f"(run_only_on_cta_id={u.cta_rank}) shares the pipelined resource "
                f"`{shared[0]}` with it: in the other CTAs one side of the ring would wait "
                "forever",
                task=t.name,
                resource=shared[0],
                location=t.location,
                fix=f"give `{u.name}` run_only_on_cta_id={t.cta_rank} too",
            )
            break


_STATIC_STEP = "get_and_advance_work_tile"
"""The reference's per-tile queue step: the current tile, read without the queue's pipeline."""


def _queue_steps(plan: KernelPlan) -> Iterator[Diagnostic]:
    """TS-V251: a dynamic queue's tiles are read through its pipeline, not the static step.

    A dynamic scheduler claims each tile at run time and hands it over through the queue's
    pipeline (``fetch_next_tile`` / ``read_next_tile``); the static step would read the current
    tile and skip the hand-over, so the tasks would disagree on their tiles.
    """
    dynamic = {
        r.name: r.scheduler
        for r in plan.resources
        if r.is_work_queue and r.scheduler is not None and r.scheduler is not _STATIC
    }
    for t in plan.tasks:
        for s in t.schedule.steps():
            scheduler = dynamic.get(s.resource)
            if scheduler is None or s.label != _STATIC_STEP:
                continue
            yield Diagnostic(
                "TS-V251",
                f"task `{t.name}` calls `{s.resource}.{_STATIC_STEP}()`, but the queue's "
                f"{scheduler.value} scheduler hands each tile over through its pipeline, which "
                "that step does not read",
                task=t.name,
                resource=s.resource,
                step=f"#{s.id} {s.describe()}",
                location=s.location,
                fix="call fetch_next_tile() in the fetching task and read_next_tile() in the "
                "others (docs/persistent.rst), or use the static scheduler",
            )


def _dependency_cycles(plan: KernelPlan) -> Iterator[Diagnostic]:
    """TS-V215 (a warning) for each cycle of the declared dependency graph.

    A cycle says each of its resources is made from the others' data: no order of the kernel's
    data follows from the graph, so it is worth a look, but the schedules alone decide whether
    the kernel is correct (a value fed back from one tile to the next is a cycle too).
    """
    ups: dict[str, list[str]] = {}
    for e in plan.dependencies:
        ups.setdefault(e.downstream, []).append(e.upstream)
    reported: set[frozenset[str]] = set()
    for start in sorted(ups):
        # Depth-first walk from `start` along upstream edges; a path back to `start` is a cycle.
        stack: list[tuple[str, list[str]]] = [(start, [start])]
        seen: set[str] = set()
        while stack:
            node, path = stack.pop()
            for up in ups.get(node, ()):
                if up == start:
                    members = frozenset(path)
                    if members not in reported:
                        reported.add(members)
                        chain = " <- ".join(f"`{r}`" for r in [*path, start])
                        yield Diagnostic(
                            "TS-V215",
                            f"the dependency graph has a cycle: {chain} (each is declared as "
                            "made from the next)",
                            resource=start,
                            severity=Severity.WARNING,
                            fix="list as upstreams only the resources whose data a resource "
                            "is made from",
                        )
                elif up not in seen:
                    seen.add(up)
                    stack.append((up, [*path, up]))


def check_kernel(plan: KernelPlan, target: Target | None = None) -> list[Diagnostic]:
    """Every cross-task check, in a stable order (with the target's, when one is given)."""
    out: list[Diagnostic] = []
    for check in (_warps, _registers, _arrivals, check_blackwell_rings):
        out.extend(check(plan))
    out.extend(check_budgets(plan, target))
    out.extend(check_tmem(plan, target))
    later = (_dependencies, _dependency_cycles, _work_queues, _cta_gates, _queue_steps, check_pdl)
    for check in later:
        out.extend(check(plan))
    return out
