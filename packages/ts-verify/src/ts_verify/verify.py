"""``verify(plan) -> Report``: every check, in the order that gives the clearest message.

Per-task bracket checks run first, so a missing ``commit`` is reported as a missing commit, not
as the deadlock it causes. Cross-task declarations come next. Only a plan that passes both is
checked as a whole (bracket counts, then deadlocks and races), because a broken bracket makes
every run fail in ways that repeat the first message. The one exception is a wrong arrival count
(TS-V203): the schedules are sound, and the run shows the deadlock or race the count causes.
"""

from __future__ import annotations

import time

from ts_ir import KernelPlan, Target, expand_groups
from ts_verify.aliasing import alias_pairs, check_aliasing
from ts_verify.brackets import check_task_brackets
from ts_verify.clc import check_clc
from ts_verify.declarations import check_declarations
from ts_verify.diagnostics import Diagnostic, Report, Severity
from ts_verify.groups import check_groups
from ts_verify.kernel_checks import check_kernel
from ts_verify.lanes import split_lanes
from ts_verify.runs import check_runs
from ts_verify.tmem_lifetime import check_tmem_lifetime, check_tmem_order
from ts_verify.whole_kernel import check_counts

__all__ = ["verify"]

_RUN_ANYWAY = frozenset({"TS-V203"})
"""Codes after which the whole-kernel checks still run (the schedules themselves are sound)."""


def verify(plan: KernelPlan, *, target: Target | None = None) -> Report:
    """Check a kernel plan statically; see :mod:`ts_verify` for what is checked.

    Args:
        plan: The kernel plan (from ``ts_trace.build_plan`` or the runtime's ``TaskManager``).
        target: What the kernel is compiled for: its pipeline types must run there (TS-V216)
            and its SMEM fit the target's capacity as well as the plan's (TS-V209). Without
            one, only the plan's own capacity is checked.

    Returns:
        The report; call :meth:`Report.raise_for_errors` to turn errors into an exception.
    """
    start = time.perf_counter()
    # A pipeline group's collapsed step is that step on every member: checked as written, then
    # written out, so that every other check sees plain rings (ts_verify.groups).
    malformed = check_groups(plan)
    if not malformed:
        plan = expand_groups(plan)
        malformed = check_declarations(plan)
    if not malformed:
        # Interleaved rings are checked lane by lane: one ring of stages / stride per lane.
        plan, malformed = split_lanes(plan)
    if malformed:
        # Every other check computes with these values: report them alone, typed.
        seconds = (("seconds", time.perf_counter() - start),)
        return Report(plan.name, tuple(malformed), (), seconds)
    found: list[Diagnostic] = []
    for task in plan.tasks:
        found.extend(check_task_brackets(plan, task))
    found.extend(check_kernel(plan, target))
    found.extend(check_clc(plan))
    found.extend(check_tmem_lifetime(plan))
    # Warnings (a dependency cycle) are reported and change nothing else.
    warned = [d for d in found if d.severity is not Severity.ERROR]
    found = [d for d in found if d.severity is Severity.ERROR]
    proven: list[str] = []
    stats: dict[str, float] = {}
    # A wrong arrival count leaves every schedule well formed, so the whole-kernel run still
    # applies and shows what the count does: a deadlock or a race, with its interleaving.
    whole = all(d.code in _RUN_ANYWAY for d in found)
    counts = check_counts(plan) if whole else []
    found.extend(counts)
    if whole and not counts:
        if not found:
            proven.append(
                "every pipeline's brackets run equally often in every task, for all "
                "trip counts, conditions and skipped tiles"
            )
        aliased = bool(alias_pairs(plan)) and not found
        runs, stats = check_runs(plan, arrivals_ok=not found, whole_later=aliased)
        found.extend(runs)
        if aliased and not found:
            # Aliased SMEM needs the plan free of deadlocks: happens-before is that of the
            # runs that finish. Those runs are of the whole kernel, so they also stand for a
            # part of check_runs that holds every ring and task (left out there).
            aliasing, alias_runs = check_aliasing(plan)
            found.extend(aliasing)
            stats["alias_runs"] = alias_runs
        if not found:
            # A dealloc must follow every use of TMEM: happens-before, as for aliasing.
            freed, tmem_runs = check_tmem_order(plan)
            found.extend(freed)
            if tmem_runs:
                stats["tmem_runs"] = tmem_runs
        if not found:
            proven.append(
                f"no deadlock and no race for every trip count, tile count and runtime "
                f"condition: {int(stats['parts'])} ring(s) and ring cycle(s); "
                f"{int(stats.get('by_depth', 0))} proven from the tasks' bracket depths "
                f"(below the ring depth), the rest run for every valuation of their own "
                f"symbols up to the cut-off ({int(stats['runs'])} runs against mbarrier "
                f"phase/arrival/tx semantics)"
            )
            if aliased:
                proven.append(
                    f"aliased SMEM is never live together: {len(alias_pairs(plan))} pair(s), "
                    f"by happens-before in {int(stats['alias_runs'])} runs of the whole kernel"
                )
    stats["seconds"] = time.perf_counter() - start
    # Warnings first, where the kernel-wide checks found them.
    diagnostics = (*warned, *found)
    return Report(plan.name, diagnostics, tuple(proven), tuple(sorted(stats.items())))
