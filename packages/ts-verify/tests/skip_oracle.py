"""A brute-force oracle for rings whose consumers may ``skip_stage``; imports nothing from TS.

**What it models.** A few straight-line task programs of ring operations (:class:`Op`) on rings
(:class:`RingSpec`: ``S`` stages, each a *full* and an *empty* mbarrier with an expected
arrival count). An mbarrier is ``(completed phases, arrivals in the current phase)``; once the
expected arrivals are in, a phase completes. ``try_wait.parity(p)`` passes iff ``completed % 2
!= p % 2``. Every task has, per ring, four cursors: acquires, commits, waits, releases.

* the k-th ``acquire`` (stage ``k % S``, round ``r = k // S``) passes iff the empty barrier
  passes parity ``r + 1``; the k-th ``commit`` arrives on the full barrier of stage ``k % S``
  with the op's count;
* the k-th ``wait`` passes iff the full barrier passes parity ``r``; the k-th ``release``
  arrives on the empty barrier of stage ``k % S`` with the op's count;
* ``skip`` moves the wait and release cursors on by one, touching no barrier.

**What it reports** over *every* interleaving (a search over states, memoised):

* ``race``: some ``wait`` on fill k passes while the full barrier has not completed exactly
  ``r + 1`` phases (``r - 1`` is the stale pass: parity tells phases apart modulo 2 only), or
  some ``acquire`` of fill k passes while the empty barrier has not completed exactly ``r``
  phases, or while a task still holds (waited on, not released) an earlier fill of that stage;
* ``deadlock``: a reachable state where some task is unfinished and none can move;
* ``leftover``: a run finishes with a task still holding a fill it waited on, or with a
  consumer task whose wait or release cursor (skips included) is not at the ring's number of
  fills, or with a stage whose empty barrier completed a different number of phases than its
  full barrier, or arrivals short of a phase (a fill released twice, or never);
* ``ok``: none of these.

When several occur, the first of race, deadlock, leftover is reported.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TypeVar

__all__ = ["OPS", "Op", "Result", "RingSpec", "explore"]

OPS = ("acquire", "commit", "wait", "release", "skip")


@dataclasses.dataclass(frozen=True)
class RingSpec:
    """A ring: its stages and the arrivals that complete a phase of its barriers."""

    stages: int
    full_expected: int = 1
    empty_expected: int = 1


@dataclasses.dataclass(frozen=True)
class Op:
    """One ring operation of a task; ``count``: the arrivals of a commit or release."""

    kind: str
    ring: str
    count: int = 1


@dataclasses.dataclass(frozen=True)
class Result:
    """The verdict (``ok``, ``race``, ``deadlock``, ``leftover``), a witness, the states seen."""

    verdict: str
    detail: str
    states: int


T = TypeVar("T")
Bar = tuple[int, int]
"""``(completed phases, arrivals in the current phase)``."""

# A state: pcs, then per ring (full bars, empty bars), per task and ring the cursors
# (acquires, commits, waits, releases), per task the held fills {(ring, fill)}.
State = tuple[
    tuple[int, ...],
    tuple[tuple[tuple[Bar, ...], tuple[Bar, ...]], ...],
    tuple[tuple[tuple[int, int, int, int], ...], ...],
    tuple[frozenset[tuple[int, int]], ...],
]


def _arrive(bar: Bar, count: int, expected: int) -> Bar:
    phases, arrivals = bar[0], bar[1] + count
    while arrivals >= expected:
        phases, arrivals = phases + 1, arrivals - expected
    return phases, arrivals


def _put(items: tuple[T, ...], i: int, value: T) -> tuple[T, ...]:
    return (*items[:i], value, *items[i + 1 :])


def _passes(bar: Bar, parity: int) -> bool:
    return bar[0] % 2 != parity % 2


def explore(rings: Mapping[str, RingSpec], programs: Mapping[str, Sequence[Op]]) -> Result:
    """Search every interleaving of ``programs`` over ``rings``; see the module docstring."""
    names = list(rings)
    specs = [rings[n] for n in names]
    tasks = list(programs)
    progs = [[(o.kind, names.index(o.ring), o.count) for o in programs[t]] for t in tasks]
    assert all(k in OPS for p in progs for k, _, _ in p)
    assert all(s.stages >= 1 and s.full_expected >= 1 and s.empty_expected >= 1 for s in specs)

    def step(state: State, t: int) -> tuple[State, str] | None:
        """Task ``t``'s next op: None while it blocks, else the new state and a race or ''."""
        pcs, bars, curs, held = state
        kind, ri, count = progs[t][pcs[t]]
        spec = specs[ri]
        full, empty = list(bars[ri][0]), list(bars[ri][1])
        acq, com, wt, rel = curs[t][ri]
        mine = set(held[t])
        race = ""
        where = f"{tasks[t]}: {names[ri]}.{kind}"
        if kind == "acquire":
            s, r = acq % spec.stages, acq // spec.stages
            if not _passes(empty[s], r + 1):
                return None
            holders = [
                tasks[u]
                for u, hs in enumerate(held)
                if any(g == ri and f < acq and f % spec.stages == s for g, f in hs)
            ]
            if empty[s][0] != r or holders:
                race = f"{where} of fill {acq} with empty phases {empty[s][0]}, held by {holders}"
            acq += 1
        elif kind == "commit":
            s = com % spec.stages
            full[s] = _arrive(full[s], count, spec.full_expected)
            com += 1
        elif kind == "wait":
            s, r = wt % spec.stages, wt // spec.stages
            if not _passes(full[s], r):
                return None
            if full[s][0] != r + 1:
                race = f"{where} of fill {wt} passes with full phases {full[s][0]} != {r + 1}"
            mine.add((ri, wt))
            wt += 1
        elif kind == "release":
            s = rel % spec.stages
            empty[s] = _arrive(empty[s], count, spec.empty_expected)
            mine.discard((ri, rel))
            rel += 1
        else:  # skip
            wt, rel = wt + 1, rel + 1
        return (
            _put(pcs, t, pcs[t] + 1),
            _put(bars, ri, (tuple(full), tuple(empty))),
            _put(curs, t, _put(curs[t], ri, (acq, com, wt, rel))),
            _put(held, t, frozenset(mine)),
        ), race

    start: State = (
        tuple(0 for _ in tasks),
        tuple((((0, 0),) * s.stages,) * 2 for s in specs),
        tuple(tuple((0, 0, 0, 0) for _ in specs) for _ in tasks),
        tuple(frozenset() for _ in tasks),
    )
    consumers = {(t, ri) for t, p in enumerate(progs) for k, ri, _ in p if k in OPS[2:]}
    seen = {start}
    stack = [start]
    deadlock = leftover = ""
    while stack:
        state = stack.pop()
        pcs, bars, curs, held = state
        live = [t for t in range(len(tasks)) if pcs[t] < len(progs[t])]
        if not live and not leftover:
            fills = [sum(c[ri][1] for c in curs) for ri in range(len(names))]
            leftover = "; ".join(
                [f"{tasks[t]} ends holding {sorted(h)}" for t, h in enumerate(held) if h]
                + [
                    f"{tasks[t]} passes {curs[t][ri][2:]} of {fills[ri]} {names[ri]} fills"
                    for t, ri in consumers
                    if curs[t][ri][2:] != (fills[ri], fills[ri])
                ]
                + [
                    f"{names[ri]} stage {s}: full {f}, empty {e}"
                    for ri, (fulls, empties) in enumerate(bars)
                    for s, (f, e) in enumerate(zip(fulls, empties, strict=True))
                    if f[0] != e[0] or f[1] or e[1]
                ]
            )
        moved = False
        for t in live:
            nxt = step(state, t)
            if nxt is None:
                continue
            moved = True
            new, race = nxt
            if race:
                return Result("race", race, len(seen))
            if new not in seen:
                seen.add(new)
                stack.append(new)
        if live and not moved and not deadlock:
            deadlock = "stuck at " + ", ".join(
                f"{tasks[t]}: {progs[t][pcs[t]][0]} {names[progs[t][pcs[t]][1]]}" for t in live
            )
    for verdict, detail in (("deadlock", deadlock), ("leftover", leftover)):
        if detail:
            return Result(verdict, detail, len(seen))
    return Result("ok", "", len(seen))
