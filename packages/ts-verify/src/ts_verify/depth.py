"""A ring proven free of deadlocks and races from each task's bracket depth alone.

For one ring (a part of :mod:`ts_verify.systems` that is not a cycle) whose producer tasks
only produce it and whose consumer tasks only consume it, with arrival counts right and the
bracket counts equal (checked before), let

* ``D_P`` be the most stages a producer task ``P`` holds acquired but not committed just before
  one of its ``acquire`` calls, over every trip count, condition and tile count, and
* ``D_C`` the most stages a consumer task ``C`` holds waited on but not released just before
  one of its ``wait`` calls.

**Claim.** If ``D_P + D_C < S`` (``S`` the ring's stages) for every producer ``P`` and consumer
``C``, the ring alone never deadlocks, whatever the valuation.

*Proof.* The ``k``-th acquire of any producer uses stage ``k % S`` and needs every consumer to
have released index ``k - S``; the ``k``-th wait of any consumer needs every producer to have
committed index ``k`` (with right arrival counts a phase completes exactly then, and a parity
wait cannot pass two phases early, since no producer runs more than ``S`` indices ahead of the
slowest release). Take a state where no task can move and some task is blocked. If only
consumers are blocked, take one at wait ``w``: some producer has committed at most ``w`` < ``N``
(the common count) indices, so it has not finished and is blocked too. So some producer ``P``
is blocked at acquire ``a``: some consumer ``C`` has released ``r <= a - S`` < ``N`` indices, so
``C`` is blocked, at wait ``w`` with ``w - r <= D_C``. Some producer ``P'`` has committed
``c <= w`` indices and is blocked at acquire ``a' = c + (a' - c) <= w + D_P'``. Then
``a' <= r + D_C + D_P' <= a - S + D_C + D_P' < a``. Repeating from ``P'`` gives an infinite
strictly decreasing sequence of acquire indices among finitely many blocked producers, which is
impossible. Races (a stage refilled or read out of turn) need a phase to complete early, which
right arrival counts exclude; leftovers need unequal counts, excluded by the count check. ∎

``D`` is computed on the schedule tree, not by running it: every loop body and every guarded
block whose net effect on the depth is zero (each acquire committed, each wait released, inside
it) leaves the depth where it found it, so the largest depth before an opening call is the
largest over the tree, for any trip count, condition or tile count. A block or loop body with a
nonzero net effect (a lagged release, a prologue fill) gives no answer here, and the part is run
instead (:func:`ts_verify.runs.check_runs`).
"""

from __future__ import annotations

from ts_ir import KernelPlan, Node, Role, Schedule, ScheduleStage, Step

__all__ = ["bracket_depth", "depth_proves"]

_OPEN = {Role.PRODUCER: ScheduleStage.ProducerAcquire, Role.CONSUMER: ScheduleStage.ConsumerWait}
_CLOSE = {
    Role.PRODUCER: ScheduleStage.ProducerCommit,
    Role.CONSUMER: ScheduleStage.ConsumerRelease,
}


def _walk(body: tuple[Node, ...], ring: str, role: Role, depth: int) -> tuple[int, int] | None:
    """``(depth after body, most depth before an opening call)``, or None when not constant."""
    most = -1
    for node in body:
        if isinstance(node, Step):
            if node.resource != ring:
                continue
            if node.stage is _OPEN[role]:
                most = max(most, depth)
                depth += 1
            elif node.stage is _CLOSE[role]:
                depth -= 1
                if depth < 0:
                    return None
            continue
        inner = _walk(node.body, ring, role, depth)
        if inner is None or inner[0] != depth:
            return None  # a body that does not end where it began: its effect varies
        most = max(most, inner[1])  # loops, work tiles and guarded blocks alike
    return depth, most


def bracket_depth(schedule: Schedule, ring: str, role: Role) -> int | None:
    """``D`` of the module docstring for one task and one side, or None (not constant)."""
    found = _walk(schedule.body, ring, role, 0)
    if found is None or found[0] != 0:
        return None
    return max(found[1], 0)


def _roles(schedule: Schedule, ring: str) -> set[Role]:
    return {
        n.stage.role
        for n, _ in schedule.walk()
        if isinstance(n, Step) and n.resource == ring and n.stage.is_pipeline_op
    }


def depth_proves(plan: KernelPlan, ring: str, tasks: tuple[str, ...]) -> bool:
    """True when the claim of the module docstring proves ``ring`` (its tasks ``tasks``)."""
    spec = next(r.pipeline for r in plan.resources if r.name == ring)
    if spec is None:
        return False
    depths: dict[Role, list[int]] = {Role.PRODUCER: [], Role.CONSUMER: []}
    for name in tasks:
        sched = plan.task(name).schedule
        if any(
            isinstance(n, Step) and n.resource == ring and n.stage.is_skip for n, _ in sched.walk()
        ):
            return False  # consumers taking turns: a wait's order is a matter of runs
        roles = _roles(sched, ring)
        if len(roles) != 1:
            return False  # both sides in one task: its own order matters
        role = roles.pop()
        d = bracket_depth(sched, ring, role)
        if d is None:
            return False
        depths[role].append(d)
    if not depths[Role.PRODUCER] or not depths[Role.CONSUMER]:
        return False
    return max(depths[Role.PRODUCER]) + max(depths[Role.CONSUMER]) < spec.stages
