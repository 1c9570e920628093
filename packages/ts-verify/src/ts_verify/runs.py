"""The ordering runs: every part of the kernel for every valuation of its own symbols.

:mod:`ts_verify.whole_kernel` splits the kernel into parts and says which valuations prove
each; :func:`check_runs` runs them (or lets :mod:`ts_verify.depth` prove a ring without runs).
Parts whose consumers skip stages (``skip_stage()``) run the windows of :func:`skip_windows`
and check every run for stale waits (:func:`ts_verify.clocks.stale_wait`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from ts_ir import KernelPlan, ScheduleStage, TaskSpec
from ts_verify.clocks import stale_wait
from ts_verify.depth import depth_proves
from ts_verify.diagnostics import Diagnostic
from ts_verify.kernel_checks import skips_on
from ts_verify.simulate import simulate
from ts_verify.systems import System, systems
from ts_verify.unroll import Op, TileCache, Valuation
from ts_verify.whole_kernel import (
    Part,
    distinct_runs,
    independent_tiles,
    make_part,
    part_valuations,
    run_diagnostic,
    sequence_valuation,
    task_programs,
    tile_axes,
    too_long_loop,
)

__all__ = ["MAX_SEQUENCES", "check_runs", "skip_rings", "skip_windows"]


# -- consumers that skip stages ---------------------------------------------------------------
def skip_rings(part: Part) -> frozenset[str]:
    """The part's rings on which a consumer task skips stages (``skip_stage()``)."""
    return frozenset(
        step.resource
        for sched in part.schedules.values()
        for step in sched.steps()
        if step.stage.is_skip
    )


def _tile_of(op: Op) -> int:
    """The work tile an op runs in (its context starts ``tile t``), or -1."""
    head = op.context.split(",", 1)[0]
    return int(head[5:]) if head.startswith("tile ") else -1


def _fills(programs: dict[str, list[Op]], ring: str, tiles: int) -> list[int]:
    """How many stages of ``ring`` each work tile fills (its producers' most acquires)."""
    per: dict[str, list[int]] = {}
    for name, ops in programs.items():
        for op in ops:
            t = _tile_of(op)
            if (
                op.step.resource == ring
                and op.step.stage is ScheduleStage.ProducerAcquire
                and t >= 0
            ):
                per.setdefault(name, [0] * tiles)[t] += 1
    return [max(c) for c in zip(*per.values(), strict=True)] if per else [0] * tiles


def _window(programs: dict[str, list[Op]], tiles: int, stages: dict[str, int]) -> bool:
    """Whether a run of ``tiles`` tiles is a window :func:`skip_windows` needs.

    One ring must fill a stage in each tile and at most ``S - 1`` in the tiles between the
    first and the last (a fill and the wait one ring-length later lie at most that far apart).
    """
    if tiles <= 2:
        return True
    for ring, depth in stages.items():
        fills = _fills(programs, ring, tiles)
        if all(fills) and sum(fills[1:-1]) <= depth - 1:
            return True
    return False


def _may_extend(programs: dict[str, list[Op]], tiles: int, stages: dict[str, int]) -> bool:
    """Whether a run that starts with these ``tiles`` tiles can be a window of more tiles.

    A work tile's steps depend on its own values only (:func:`ts_verify.unroll.unroll`
    unrolls each tile from them), so appending tiles leaves these as they are, and in a
    longer run each of them is its first or a middle tile: one that fills no stage of a ring,
    or middle ones that fill more than ``S - 1`` together, rule the ring out.
    """
    if tiles <= 1:
        return True
    for ring, depth in stages.items():
        fills = _fills(programs, ring, tiles)
        if all(fills) and sum(fills[1:]) <= depth - 1:
            return True
    return False


def skip_windows(
    part: Part, tasks: dict[str, TaskSpec], stages: dict[str, int]
) -> list[Valuation] | None:
    """The runs that prove a part whose consumers skip stages of the rings ``stages`` names.

    The part's work tiles are independent (:func:`independent_tiles`, skips counted as a wait
    and a release), so runs of one tile prove it free of deadlocks. What is left is a wait
    that passes on a stale phase (:func:`ts_verify.clocks.stale_wait`): fill ``k - S`` not
    ordered before wait ``k``. Removing whole tiles from a run only shrinks happens-before
    (program order and each wait's enabling commits stay; an acquire's enabling release
    goes, at most), and keeps the distance of two ring operations when no removed tile lies
    between them; a removed tile that fills no stage of the ring lies between them without
    changing it. So a stale wait of any run shows in the run of the tiles from the one of fill
    ``k - S`` to the one of wait ``k``, without the tiles between that fill no stage: at most
    ``S + 1`` tiles, each filling a stage, the ones between filling at most ``S - 1``. Every
    sequence of per-tile values that makes such a window runs, not only first/others: which
    tiles a consumer skips is what matters. Sequences grow a tile at a time, and a prefix
    that no window extends (``_may_extend``) is not grown, so the runs are the windows
    (a per-tile ``K`` gives few: the middle tiles' fills sum to at most ``S - 1``), not every
    sequence.

    Returns:
        The valuations, smallest first; None when more than :data:`MAX_SEQUENCES` sequences
        would be tried (TS-V115).
    """
    axes = tile_axes(part)
    longest = max(stages.values()) + 1
    cache: TileCache = {}
    tried = 0
    found: list[tuple[int, Valuation]] = []
    for glob in axes.globs():
        grow: list[tuple[tuple[int, ...], ...]] = [()]
        while grow:
            seq = grow.pop()
            tried += 1
            if tried > MAX_SEQUENCES:
                return None
            size, val = sequence_valuation(part, axes, glob, seq)
            programs = task_programs(part.schedules, tasks, val, cache)
            if _window(programs, len(seq), stages):
                found.append((size, val))
            if len(seq) < longest and _may_extend(programs, len(seq), stages):
                grow.extend((*seq, v) for v in axes.per_tile)
    found.sort(key=lambda x: x[0])
    return [v for _, v in found]


def _whole(plan: KernelPlan) -> list[tuple[System, int]]:
    rings = tuple(r.name for r in plan.resources if r.pipeline is not None)
    slack = sum(r.pipeline.stages for r in plan.resources if r.pipeline is not None)
    return [
        (System(rings, tuple(t.name for t in plan.tasks), cycle=False), slack + len(plan.tasks))
    ]


def check_runs(
    plan: KernelPlan, *, arrivals_ok: bool = True, whole_later: bool = False
) -> tuple[list[Diagnostic], dict[str, float]]:
    """Run every part for every valuation of its symbols; the first failure is reported.

    With a wrong arrival count (``arrivals_ok=False``) a phase can complete early, so what a
    wait means depends on the whole kernel's interleaving: the kernel then runs as one part.
    With ``whole_later`` a part that holds every ring and every task is left out: the caller
    runs the whole kernel for the same valuations afterwards (the SMEM alias check does, and
    reports what such a run finds).
    """
    stats = dict.fromkeys(("runs", "events", "parts", "by_depth", "tile_local"), 0.0)
    tasks = {t.name: t for t in plan.tasks}
    stages = {r.name: r.pipeline.stages for r in plan.resources if r.pipeline is not None}
    rings = set(stages)
    skips_run = False
    for system, slack in systems(plan) if arrivals_ok else _whole(plan):
        stats["parts"] += 1
        if arrivals_ok and skips_on_any(plan, system):
            # Any ring may order a wait after the fill one ring-length earlier (the turn
            # tokens between ping-pong math tasks do): the stale-wait check runs the whole
            # kernel, once, for every part with a consumer that skips.
            if skips_run:
                continue
            skips_run = True
            system, slack = _whole(plan)[0]
        elif arrivals_ok and not system.cycle and depth_proves(plan, system.rings[0], system.tasks):
            stats["by_depth"] += 1  # proven for every valuation at once (ts_verify.depth)
            continue
        elif whole_later and set(system.rings) == rings and len(system.tasks) == len(tasks):
            continue
        part = make_part(plan, system, slack)
        too_long = too_long_loop(plan, part)
        if too_long is not None:
            return [too_long], stats
        skipping = {r: stages[r] for r in skip_rings(part)}
        one_tile = arrivals_ok and independent_tiles(part, tasks)
        stats["tile_local"] += one_tile
        runs: Iterable[tuple[Valuation, dict[str, list[Op]]]]
        if skipping and part.sym.tiles and arrivals_ok:
            if not one_tile:
                return [_unbalanced_skips(plan, part, skipping)], stats
            windows = skip_windows(part, tasks, skipping)
            if windows is None:
                return [_too_many_sequences(plan, part, skipping)], stats
            runs = distinct_runs(part, tasks, windows)
        else:
            runs = distinct_runs(part, tasks, part_valuations(part, 1 if one_tile else None))
        for val, programs in runs:
            outcome = simulate(plan, programs)
            stats["runs"] += 1
            stats["events"] += len(outcome.records)
            if outcome.kind == "ok" and skipping:
                stale = stale_wait(outcome.records, stages, frozenset(skipping))
                if stale is not None:
                    record, why = stale
                    culprit = (record.task, record.op)
                    outcome = dataclasses.replace(
                        outcome, kind="race", culprit=culprit, message=why
                    )
            if outcome.kind != "ok":
                return [run_diagnostic(val, outcome, system)], stats
    return [], stats


def skips_on_any(plan: KernelPlan, system: System) -> bool:
    """Whether a task of ``system`` skips stages of one of its rings."""
    users = [plan.task(t) for t in system.tasks]
    return any(skips_on(ring, users) for ring in system.rings)


MAX_SEQUENCES = 50_000
"""The most sequences of per-tile values the stale-wait windows run; more is TS-V115."""


def _too_many_sequences(plan: KernelPlan, part: Part, skipping: dict[str, int]) -> Diagnostic:
    """TS-V115: the windows of :func:`skip_windows` would be too many runs."""
    ring = sorted(skipping)[0]
    return Diagnostic(
        "TS-V115",
        f"consumers skip stages of `{ring}` ({skipping[ring]} stages), and proving every wait "
        f"exact needs every sequence of per-tile values that fills the ring over up to "
        f"{skipping[ring] + 1} work tiles: more than the {MAX_SEQUENCES} sequences the "
        "verifier tries",
        resource=ring,
        fix="give the ring fewer stages, or fewer per-tile values (run-time conditions, skip "
        "predicates, per-tile loop bounds) in the tasks that touch it",
    )


def _unbalanced_skips(plan: KernelPlan, part: Part, skipping: dict[str, int]) -> Diagnostic:
    """TS-V115: a part whose consumers skip stages, without independent work tiles."""
    ring = sorted(skipping)[0]
    task, step = next(
        (name, s)
        for name, sched in part.schedules.items()
        for s in sched.steps()
        if s.resource == ring and s.stage.is_skip
    )
    return Diagnostic(
        "TS-V115",
        f"`{task}` skips stages of `{ring}`, but the work tiles of its part do not each "
        "balance every ring (every task moving its place in each ring equally often per tile, "
        "waits and skips counted alike, with every ring operation inside the work-tile loop): "
        "which stages a task skips would then depend on the whole sequence of tiles, which the "
        "verifier does not enumerate",
        task=task,
        resource=ring,
        step=f"#{step.id} {step.describe()}",
        location=step.location,
        fix="skip and wait for the same count of stages in every tile in every task (the other "
        "tasks' tiles included), or wait for and release every stage",
    )
