"""Translation validation: does the compiled kernel run the barrier protocol the plan proved?

ts-verify proves a :class:`ts_ir.KernelPlan`; what runs is the PTX that ts-codegen and the
CuTe DSL's ``cutlass.pipeline`` classes made of it. :func:`check_ptx` recovers the protocol
from the PTX (:mod:`ts_runtime.ptx_protocol`) and compares it with the plan:

* **barriers** (``TS-X101``): one array of ``2 x stages`` mbarriers per pipelined resource, in
  the plan's resource order, full barriers then empty ones, one constant count per side
  (barriers the program initialises beside them, outside that run, are its own: ignored);
* **arrivals** (``TS-X102``): every arrive site of a task counts, per phase, what the plan's
  signals make (the arrivals one signal makes against the group size) times the
  threads of the task that run it (``tcgen05.commit``: the warps); a ring whose signals
  the plan shows never run (:func:`ts_runtime.ptx_plan.can_run`) needs none;
* **bytes** (``TS-X103``): ``expect_tx`` announces ``bytes_per_stage``; TMA / bulk copies
  complete bytes only on full barriers of TMA rings, CLC answers (``try_cancel``) only on
  those of CLC rings, as many as armed (:mod:`ts_runtime.ptx_clc`);
* **parity** (``TS-X104``): producers wait on empty barriers starting on parity 1, consumers
  on full barriers starting on parity 0, both flipping exactly when the stage index wraps;
  a consumer that skips stages (``skip_stage()``, no barrier operation) first waits where its
  skips before that wait may have moved it (:func:`ts_runtime.ptx_plan.first_wait_states`);
* **roles** (``TS-X105``): each operation is run by tasks whose schedules use that ring and
  side, on an address that is a barrier of the plan;
* **registers** (``TS-X106``): ``setmaxnreg`` per warpgroup as the tasks declare
  (:mod:`ts_runtime.ptx_registers`);
* **SMEM** (``TS-X107``): copies into SMEM stay clear of the barriers, which fit the capacity;
* **TMEM** (``TS-X105``): the plan's allocation and free run in one warp of the tasks whose
  schedules make them (:mod:`ts_runtime.ptx_tmem`).

Every difference is a :class:`TranslationError` naming the resource, the task and the PTX
line. What it assumes is in ``docs/verification.rst`` (translation validation).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import ClassVar

from ts_ir import (
    WARP_SIZE,
    KernelPlan,
    PipelineSpec,
    Role,
    ScheduleStage,
    TaskSpec,
    register,
    see_also,
)
from ts_runtime.catalog_translation import TRANSLATION_ENTRIES
from ts_runtime.ptx_cfg import entry_names, parse_kernel
from ts_runtime.ptx_clc import ClcRequest, Finding, check_requests
from ts_runtime.ptx_plan import first_wait_states, plan_arrivals, roles, warp_lane_tasks
from ts_runtime.ptx_protocol import (
    BarrierOp,
    Protocol,
    WaitSite,
    barrier_operand,
    constant_inits,
    index_term,
    not_advancing,
    recover,
    state_machine,
)
from ts_runtime.ptx_registers import check_registers
from ts_runtime.ptx_tmem import check_tmem
from ts_runtime.ptx_values import SMEM, Affine
from ts_verify import multicast_peers

register(TRANSLATION_ENTRIES)

__all__ = ["RingBarriers", "TranslationError", "TranslationReport", "check_ptx"]


class TranslationError(ValueError):
    """The compiled kernel disagrees with the verified plan (a ``TS-X1xx`` code).

    Attributes:
        code: The catalog code.
        resource: The ring concerned ("" when none).
        task: The task concerned ("" when none).
        line: The PTX line (0 when none).
        fix: How to fix it.
    """

    code: str
    _codes: ClassVar[frozenset[str]] = frozenset(e.code for e in TRANSLATION_ENTRIES)

    def __init__(
        self, code: str, message: str, *, resource: str = "", task: str = "", line: int = 0
    ) -> None:
        if code not in self._codes:
            raise ValueError(f"unknown translation-validation code {code}")
        self.code, self.resource, self.task, self.line = code, resource, task, line
        self.fix = next(e.fix for e in TRANSLATION_ENTRIES if e.code == code)
        where = f" (PTX line {line})" if line else ""
        super().__init__(f"{code}: {message}{where}\n  fix: {self.fix}\n  see: {see_also(code)}")


@dataclasses.dataclass(frozen=True)
class RingBarriers:
    """Where a ring's mbarriers are and what they count, as the PTX initialises them.

    Attributes:
        resource: The ring's resource name.
        offset: SMEM offset of its first (full) barrier.
        stages: Stages (the array holds ``2 * stages`` barriers).
        full_count: The full barriers' arrival count (None when not one constant).
        empty_count: The empty barriers' count.
        init_line: The PTX line of its first ``mbarrier.init``.
    """

    resource: str
    offset: int
    stages: int
    full_count: int | None
    empty_count: int | None
    init_line: int

    def side(self, slot_offset: int) -> tuple[str, int] | None:
        """``("full" | "empty", stage)`` of an offset inside the array, else None."""
        rel = slot_offset - self.offset
        if rel < 0 or rel >= 16 * self.stages or rel % 8:
            return None
        k = rel // 8
        return ("full", k) if k < self.stages else ("empty", k - self.stages)


@dataclasses.dataclass(frozen=True)
class TranslationReport:
    """What :func:`check_ptx` found.

    Attributes:
        kernel: The PTX entry checked.
        rings: The rings' barriers as recovered.
        errors: Every difference from the plan.
        checked: What was compared, one line each (for ``as_text``).
    """

    kernel: str
    rings: tuple[RingBarriers, ...]
    errors: tuple[TranslationError, ...]
    checked: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """True when the PTX runs the plan's protocol."""
        return not self.errors

    def codes(self) -> list[str]:
        """The codes of the errors, in order."""
        return [e.code for e in self.errors]

    def raise_for_errors(self) -> None:
        """Raise the first error (the others are in :attr:`errors`)."""
        if self.errors:
            raise self.errors[0]

    def as_text(self) -> str:
        """What was checked and every error."""
        head = f"translation validation of {self.kernel}: " + (
            "the PTX runs the plan's barrier protocol"
            if self.ok
            else f"{len(self.errors)} difference(s) from the plan"
        )
        lines = [head, *(f"  {c}" for c in self.checked)]
        lines += [str(e) for e in self.errors]
        return "\n".join(lines)


_WAITS = {"full": ScheduleStage.ConsumerWait, "empty": ScheduleStage.ProducerAcquire}
_SIGNALS = {"full": ScheduleStage.ProducerCommit, "empty": ScheduleStage.ConsumerRelease}


def _first_fits(
    i: int | None,
    p: int,
    start: int,
    step: int,
    lane: int | None,
    firsts: frozenset[tuple[int, int]] | None,
) -> bool:
    """Whether a first wait on stage ``i`` (None: unknown) and parity ``p`` fits the plan.

    ``firsts``: a consumer that skips stages, where its skips may have moved it; else the
    side's first parity ``start`` on stage 0 (with interleaving, the task's lane, or for warp
    lanes the warp's ``lane``).
    """
    if firsts is not None:
        return any(p == fp and i in (None, fi) for fi, fp in firsts)
    if p != start or i is None:
        return p == start
    return i < step and (lane is None or i == lane % step)


class _Checker:
    def __init__(
        self,
        plan: KernelPlan,
        protocol: Protocol,
        window: int = 0,
        forks: _Forks | None = None,
    ) -> None:
        self.plan = plan
        self.forks = forks or _Forks({}, {})
        self.p = protocol
        self.errors: list[TranslationError] = []
        self.checked: list[str] = []
        self.rings: list[RingBarriers] = []
        self.pipes: dict[str, PipelineSpec] = {
            r.name: r.pipeline for r in plan.resources if r.pipeline is not None
        }
        self.roles = {t.name: roles(t) for t in plan.tasks}
        self.live_roles = {t.name: roles(t, live_only=True) for t in plan.tasks}
        self.sites: dict[tuple[str, str, str], list[WaitSite]] = {}
        self.foreign: set[int] = set()
        self.window = window
        self.warp_lanes = warp_lane_tasks(plan)

    def error(
        self, code: str, message: str, *, resource: str = "", task: str = "", line: int = 0
    ) -> None:
        self.errors.append(TranslationError(code, message, resource=resource, task=task, line=line))

    def finding(self, f: Finding) -> None:
        """A finding of a part checked in its own module: an error, or a line of what held."""
        if f.code:
            self.error(f.code, f.message, resource=f.resource, task=f.task, line=f.line)
        else:
            self.checked.append(f.message)

    def tasks_of(self, op_warps: frozenset[int]) -> list[TaskSpec]:
        return [t for t in self.plan.tasks if any(w in op_warps for w in t.warps)]

    # -- barriers ------------------------------------------------------------------------------
    def barriers(self) -> None:
        inits = [op for op in self.p.barriers if op.kind == "init"]
        slots: list[tuple[int, BarrierOp]] = []
        for op in inits:
            a = op.address
            if a is None or a.coef(SMEM) != 1 or a.others(SMEM):
                self.error(
                    "TS-X101",
                    f"`{op.instr.text}` initialises a barrier at an address "
                    "that is not a constant SMEM offset",
                    line=op.instr.line,
                )
                continue
            slots.append((a.const, op))
        slots.sort(key=lambda s: s[0])
        want = sum(2 * p.stages for p in self.pipes.values())
        if len(slots) < want:
            names = ", ".join(f"`{n}` ({2 * p.stages})" for n, p in self.pipes.items()) or "none"
            self.error(
                "TS-X101",
                f"the PTX initialises {len(slots)} mbarrier(s), the plan's rings "
                f"need {want}: {names}",
                line=slots[0][1].instr.line if slots else 0,
            )
            return
        # A program may keep barriers of its own beside the plan's (a hand-written split-K
        # reduction's): the plan's are the first run of slots laid out as its rings.
        windows = self.windows(slots)
        start = windows[min(self.window, len(windows) - 1)] if windows else 0
        self.foreign = {o for o, _ in slots[:start] + slots[start + want :]}
        if self.foreign:
            self.checked.append(
                f"{len(self.foreign)} mbarrier(s) the plan does not own (SMEM "
                f"{sorted(self.foreign)}), ignored"
            )
        k = start
        for name, pipe in self.pipes.items():
            mine = slots[k : k + 2 * pipe.stages]
            k += 2 * pipe.stages
            start = mine[0][0]
            if [o for o, _ in mine] != [start + 8 * i for i in range(2 * pipe.stages)]:
                self.error(
                    "TS-X101",
                    f"ring `{name}`: its {2 * pipe.stages} mbarriers are not one "
                    "array of consecutive 8-byte slots",
                    resource=name,
                    line=mine[0][1].instr.line,
                )
            full = {op.count for _, op in mine[: pipe.stages]}
            empty = {op.count for _, op in mine[pipe.stages :]}
            ring = RingBarriers(
                name,
                start,
                pipe.stages,
                full.pop() if len(full) == 1 else None,
                empty.pop() if len(empty) == 1 else None,
                mine[0][1].instr.line,
            )
            if ring.full_count is None or ring.empty_count is None:
                self.error(
                    "TS-X101",
                    f"ring `{name}`: the stages' barriers are initialised with "
                    "different or non-constant counts",
                    resource=name,
                    line=ring.init_line,
                )
            self.rings.append(ring)
            if name in self.forks.shared:
                self.checked.append(
                    f"ring `{name}`: a TMA Fork member, it uses the full barriers of "
                    f"`{self.forks.shared[name]}`"
                )
            self.checked.append(
                f"ring `{name}`: {pipe.stages} stage(s), barriers at SMEM {start}.."
                f"{start + 16 * pipe.stages}, full count {ring.full_count}, "
                f"empty count {ring.empty_count}"
            )

    def windows(self, slots: list[tuple[int, BarrierOp]]) -> list[int]:
        """Where in ``slots`` the plan's barriers may start (none: TS-X101 says why).

        Every run of consecutive 8-byte slots as long as all its rings' arrays together.
        """
        want = sum(2 * p.stages for p in self.pipes.values())
        offsets = [o for o, _ in slots]
        return [
            i
            for i in range(len(slots) - want + 1)
            if offsets[i : i + want] == [offsets[i] + 8 * j for j in range(want)]
        ]

    def locate(self, op: BarrierOp) -> tuple[RingBarriers, str, str | None, int | None] | None:
        """(ring, side, index register, constant stage) of a barrier operation."""
        found = self._locate(op.address)
        if found is None or (found[2] is None and found[3] is None):
            # The stage index may be computed (a warp's lane, mod the stages): read the
            # address as base + 8 * one register.
            operand = barrier_operand(op)
            slots = self.p.values.slot_address(operand) if operand else None
            again = self._locate(slots)
            if again is not None and (again[2] is not None or again[3] is not None):
                return again
            return None
        return found

    def _locate(self, a: Affine | None) -> tuple[RingBarriers, str, str | None, int | None] | None:
        if a is None or a.coef(SMEM) != 1:
            return None
        for ring in self.rings:
            for side, base in (("full", ring.offset), ("empty", ring.offset + 8 * ring.stages)):
                if base <= a.const < base + 8 * ring.stages:
                    reg, const = index_term(a, base)
                    if const is not None and const >= ring.stages:
                        return None
                    return ring, side, reg, const
        return None

    # -- every operation -----------------------------------------------------------------------
    def operations(self) -> None:
        signals: dict[tuple[str, str], int] = {}
        requests: list[ClcRequest] = []
        for op in self.p.barriers:
            if op.kind == "init" or not op.threads:
                continue
            a = op.address
            if (
                a is not None
                and a.coef(SMEM) == 1
                and not a.others(SMEM)
                and a.const in self.foreign
            ):
                continue  # a barrier of the program's own, not the plan's
            where = self.locate(op)
            tasks = self.tasks_of(op.warps)
            if where is None:
                self.error(
                    "TS-X105",
                    f"`{op.instr.text}` acts on an address that is no barrier of the plan's rings",
                    line=op.instr.line,
                    task=", ".join(t.name for t in tasks),
                )
                continue
            ring, side, reg, const = where
            pipe = self.pipes[ring.resource]
            first = self.forks.shared.get(ring.resource)
            if side == "full" and first is not None:
                # Nothing arrives there: its waits would hang, its arrivals complete nothing.
                self.error(
                    "TS-X105",
                    f"`{op.instr.text}` acts on the full barrier of ring `{ring.resource}`, a "
                    f"TMA Fork member whose full barriers are those of `{first}`",
                    resource=ring.resource,
                    task=", ".join(t.name for t in tasks),
                    line=op.instr.line,
                )
                continue
            if not tasks:
                self.error(
                    "TS-X105",
                    f"the {side} barrier of ring `{ring.resource}` is used by "
                    f"warps {sorted(op.warps)}, which run no task",
                    resource=ring.resource,
                    line=op.instr.line,
                )
                continue
            if op.kind == "clc_response":
                requests.append(
                    ClcRequest(op.instr.line, op.instr.text, ring.resource, side, op.threads)
                )
                continue
            for task in tasks:
                roles = self.roles[task.name].get(ring.resource, set())
                sharers = self.forks.sharers(ring.resource) if side == "full" else []
                if op.kind == "wait":
                    # A TMA Fork member's consumers wait on the first member's full barrier.
                    member = next(
                        (
                            m
                            for m in sharers
                            if _WAITS[side] not in roles
                            and _WAITS[side] in self.roles[task.name].get(m, set())
                        ),
                        None,
                    )
                    if member is not None:
                        shared = dataclasses.replace(ring, resource=member)
                        roles = self.roles[task.name][member]
                        self.wait(op, shared, side, reg, const, task, roles)
                    else:
                        self.wait(op, ring, side, reg, const, task, roles)
                elif op.kind in ("arrive", "commit", "expect_tx"):
                    n = self.arrive(op, ring, side, task, roles, pipe)
                    if n:
                        # The shared full barrier's arrival is every member's commit.
                        for name in (ring.resource, *sharers):
                            signals[(name, side)] = signals.get((name, side), 0) + n
                elif op.kind == "complete_tx" and (side != "full" or not pipe.type.producer_is_tma):
                    self.error(
                        "TS-X103",
                        f"task `{task.name}`: a copy completes bytes on the {side} "
                        f"barrier of ring `{ring.resource}` ({pipe.type.value}), which "
                        "expects none",
                        resource=ring.resource,
                        task=task.name,
                        line=op.instr.line,
                    )
        for f in check_requests(
            requests,
            self.pipes,
            self.plan.tasks,
            lambda task, ring: self.live_roles[task].get(ring, set()),
            {r.resource: r.init_line for r in self.rings},
        ):
            self.finding(f)
        for ring in self.rings:
            pipe = self.pipes[ring.resource]
            for side in ("full", "empty"):
                # A signal the plan shows never runs (can_run) leaves no arrive in the PTX.
                signalled = any(
                    _SIGNALS[side] in self.live_roles[t.name].get(ring.resource, set())
                    for t in self.plan.tasks
                )
                if signalled and not signals.get((ring.resource, side)):
                    self.error(
                        "TS-X102",
                        f"ring `{ring.resource}`: the plan signals its {side} "
                        "barriers, the PTX never arrives on them",
                        resource=ring.resource,
                        line=ring.init_line,
                    )

    def wait(
        self,
        op: BarrierOp,
        ring: RingBarriers,
        side: str,
        reg: str | None,
        const: int | None,
        task: TaskSpec,
        roles: set[ScheduleStage],
    ) -> None:
        line, name = op.instr.line, ring.resource
        if _WAITS[side] not in roles:
            who = "consumer" if side == "full" else "producer"
            self.error(
                "TS-X105",
                f"task `{task.name}` waits on the {side} barrier of ring "
                f"`{name}`, but its schedule is no {who} that waits there",
                resource=name,
                task=task.name,
                line=line,
            )
            return
        site = WaitSite(op.instr, reg, const or 0, op.parity)
        self.sites.setdefault((task.name, name, side), []).append(site)

    def sequences(self) -> None:
        """Each task's waits on each ring side: first state, and how each advances."""
        tasks = {t.name: t for t in self.plan.tasks}
        rings = {r.resource: r for r in self.rings}
        for (tname, name, side), sites in self.sites.items():
            task, ring, pipe = tasks[tname], rings[name], self.pipes[name]
            start = 0 if side == "full" else 1
            who = "consumer" if side == "full" else "producer"
            # Producers wait on empty barriers, consumers on full ones: each side's cursor
            # moves by its own stride (interleave_stride=(p, p, c, c)).
            step, stages = max(pipe.side_stride(side == "empty"), 1), ring.stages
            line = sites[0].instr.line
            # With warp lanes, warp w of the task starts on its lane, stage w (mod the
            # stride), read from the warp index at run time: each warp is followed.
            lanes = tname in self.warp_lanes and pipe.interleave > 1
            warps: list[int | None] = [*range(task.num_warps)] if lanes else [None]
            # A consumer's skips move it on without a barrier operation: its first wait is
            # where they may have left it (the lowering refuses skips on interleaved rings).
            firsts: frozenset[tuple[int, int]] | None = None
            if side == "full" and ScheduleStage.ConsumerSkip in self.roles[tname].get(name, set()):
                firsts = first_wait_states(task, name, stages)
            for w in warps:
                who_w = who if w is None else f"{who}, warp {w}"
                sm = state_machine(self.p, sites, stages, (task.warp_start + (w or 0)) * WARP_SIZE)
                bad_first = [
                    (i, p)
                    for i, p in sm.first or ()
                    if p is not None and not _first_fits(i, p, start, step, w, firsts)
                ]
                if bad_first:
                    plan_first = (
                        f"parity {start} at stage 0 (or the task's interleave lane)"
                        if firsts is None
                        else f"(stage, parity) {sorted(firsts)} after the skip_stage()s before it"
                    )
                    self.error(
                        "TS-X104",
                        f"task `{tname}` ({who_w} of ring `{name}`) first waits on stage / "
                        f"parity {sorted(bad_first, key=str)}; the plan's first {side} phase is "
                        f"{plan_first}",
                        resource=name,
                        task=tname,
                        line=line,
                    )
                stuck = not_advancing(sm.next_states, stages, step)
                if stuck is not None:
                    at = self.p.kernel.instrs[stuck].line
                    self.error(
                        "TS-X104",
                        f"task `{tname}` ({who_w}): from its wait on ring `{name}` ({side}) at "
                        f"PTX line {at} to the next one, the stage / parity do not advance by "
                        f"whole stages with the parity flipping exactly when the stage wraps "
                        f"around {stages} stage(s)",
                        resource=name,
                        task=tname,
                        line=at,
                    )
                    break
            else:
                lanes_text = f", {len(warps)} warp lanes" if lanes else ""
                origin = f"parity {start}" if firsts is None else "where its skip_stage()s leave it"
                self.checked.append(
                    f"task `{tname}` waits on ring `{name}` ({side}) from {origin}, "
                    f"flipping on wrap ({len(sites)} wait site(s), first at line {line}"
                    f"{lanes_text})"
                )

    def arrive(
        self,
        op: BarrierOp,
        ring: RingBarriers,
        side: str,
        task: TaskSpec,
        roles: set[ScheduleStage],
        pipe: PipelineSpec,
    ) -> int:
        line, name = op.instr.line, ring.resource
        role = Role.PRODUCER if side == "full" else Role.CONSUMER
        signal = (
            ScheduleStage.ProducerAcquire
            if (side == "full" and pipe.type.producer_expects_tx)
            else _SIGNALS[side]
        )
        if signal not in roles and _SIGNALS[side] not in roles:
            self.error(
                "TS-X105",
                f"task `{task.name}` arrives on the {side} barrier of ring "
                f"`{name}`, but its schedule does not {'commit' if side == 'full' else 'release'}"
                " it",
                resource=name,
                task=task.name,
                line=line,
            )
            return 0
        if op.tx_bytes is not None or op.kind == "expect_tx":
            if side != "full" or not pipe.type.producer_expects_tx:
                self.error(
                    "TS-X103",
                    f"task `{task.name}` announces transaction bytes on the {side}"
                    f" barrier of ring `{name}` ({pipe.type.value})",
                    resource=name,
                    task=task.name,
                    line=line,
                )
            elif op.tx_bytes != self.forks.tx_bytes.get(name, pipe.bytes_per_stage):
                stage = self.forks.tx_bytes.get(name, pipe.bytes_per_stage)
                whose = "the Fork's loads into" if name in self.forks.tx_bytes else "the plan's"
                self.error(
                    "TS-X103",
                    f"task `{task.name}` arms the full barrier of ring `{name}` "
                    f"with {op.tx_bytes} transaction bytes, {whose} stage is "
                    f"{stage} bytes",
                    resource=name,
                    task=task.name,
                    line=line,
                )
            if op.kind == "expect_tx":
                return 0
        lanes = task.name in self.warp_lanes and pipe.interleave > 1
        # With warp lanes each warp signals its own lane's stage: one signal is one warp's.
        first = task.warp_start if lanes else task.warp_end - 1
        mine = [t for t in op.threads if task.warp_start <= t // WARP_SIZE <= first]
        per_signal = len(mine) * (op.count or 0)
        how = f"{len(mine)} thread(s) x {op.count}"
        if op.kind == "commit":
            # tcgen05.commit: one arrival per warp that runs it (an elected thread's).
            warps = {t // WARP_SIZE for t in mine}
            per_signal, how = len(warps), f"a tcgen05.commit by {len(warps)} warp(s)"
            peers = multicast_peers(pipe)
            if "multicast::cluster" in op.instr.parts and peers > 1:
                # A TMA ring over a cluster: each CTA of the stage's cluster row and column
                # runs this commit with a mask holding this CTA (the lowering's mask, a
                # run-time value the PTX does not show), one arrival each on its barrier.
                per_signal *= peers
                how += f" in each of the {peers} CTAs whose multicast masks hold this CTA"
        group = pipe.producer_group if role is Role.PRODUCER else pipe.consumer_group
        signaller = dataclasses.replace(task, num_warps=1) if lanes else task
        plan_per_signal = plan_arrivals(signaller, pipe, role)
        count = ring.full_count if side == "full" else ring.empty_count
        if op.count is None:
            self.error(
                "TS-X102",
                f"task `{task.name}` arrives on ring `{name}` ({side}) with a "
                "count that is not a constant",
                resource=name,
                task=task.name,
                line=line,
            )
            return 0
        if count is None or plan_per_signal <= 0 or group.size % plan_per_signal:
            return per_signal  # TS-X101 or the verifier reports these
        signals = group.size // plan_per_signal
        if count != signals * per_signal:
            self.error(
                "TS-X102",
                f"ring `{name}`: its {side} barriers count {count} arrival(s) per phase (PTX line "
                f"{ring.init_line}); the plan completes a phase with {signals} signal(s) of task "
                f"`{task.name}` ({group.size} {group.agent} arrival(s), {plan_per_signal} per "
                f"signal), and one signal here is {per_signal} arrival(s) ({how}), so the barrier "
                f"should count {signals * per_signal}",
                resource=name,
                task=task.name,
                line=line,
            )
        else:
            self.checked.append(
                f"task `{task.name}` arrives {per_signal}x on ring `{name}` "
                f"({side}), {signals} signal(s) per phase (line {line})"
            )
        return per_signal

    # -- SMEM ----------------------------------------------------------------------------------
    def smem(self) -> None:
        if not self.rings:
            return
        lo = min(r.offset for r in self.rings)
        hi = max(r.offset + 16 * r.stages for r in self.rings)
        if hi > self.plan.smem_capacity:
            self.error(
                "TS-X107",
                f"the mbarriers end at SMEM byte {hi}, past the plan's capacity "
                f"of {self.plan.smem_capacity}",
                line=self.rings[0].init_line,
            )
        writes = []
        for w in self.p.smem_writes:
            d = w.destination
            if d is None or d.coef(SMEM) != 1:
                continue
            rest = d.others(SMEM)
            ring = None
            if w.barrier is not None:
                op = BarrierOp("complete_tx", w.instr, w.barrier, None, None, "", frozenset())
                found = self.locate(op)
                ring = found[0] if found else None
            stride = rest[0][1] if len(rest) == 1 and rest[0][1] > 0 else 0
            writes.append((w, d, ring, stride))
        # A stage filled by several TMA boxes (a tile wider than its swizzle span) has one load
        # per box, each at its offset in the stage: the ring's buffer starts at its lowest box
        # and spans `stages` strides from there. A box one stride or more past the lowest
        # starts outside the first stage: its writes are counted from itself.
        starts: dict[tuple[str, int], int] = {}
        for _, d, ring, stride in writes:
            if ring is not None and stride:
                key = (ring.resource, stride)
                starts[key] = min(starts.get(key, d.const), d.const)
        for w, d, ring, stride in writes:
            if ring is not None and stride:
                start = starts[(ring.resource, stride)]
                end = (start if d.const - start < stride else d.const) + stride * ring.stages
            else:
                end = d.const + max(stride, 1)
            if d.const < hi and end > lo:
                self.error(
                    "TS-X107",
                    f"`{w.instr.text.split()[0]}` writes SMEM {d.const}..{end}, "
                    f"over the mbarriers at {lo}..{hi}",
                    resource=ring.resource if ring else "",
                    line=w.instr.line,
                )


@dataclasses.dataclass(frozen=True)
class _Forks:
    """The full barriers TMA Fork members share (:mod:`ts_codegen.groups`).

    ``shared``: each member after a Fork's first → the first member, whose full barriers it
    waits on; ``tx_bytes``: each first member → the bytes its full barrier is armed with.
    """

    shared: Mapping[str, str]
    tx_bytes: Mapping[str, int]

    def sharers(self, first: str) -> list[str]:
        return [m for m, f in self.shared.items() if f == first]


def _lowered(plan: KernelPlan) -> tuple[KernelPlan, _Forks]:
    """The plan the PTX runs (group steps written out per member) and its Forks' sharing."""
    if not plan.groups:
        return plan, _Forks({}, {})
    # Lazily: ts_codegen.groups is host-only, but ts_codegen's package pulls in more.
    from ts_codegen.groups import fork_shared_full, fork_tx_bytes, lowered_plan

    return lowered_plan(plan), _Forks(fork_shared_full(plan), fork_tx_bytes(plan))


def _check_entry(plan: KernelPlan, ptx: str, entry: str | None, forks: _Forks) -> TranslationReport:
    kernel = parse_kernel(ptx, entry)
    protocol = recover(kernel)
    best: TranslationReport | None = None
    # With barriers of the program's own beside the plan's, each place the plan's run of
    # barriers could start is tried (the plan's own makes no difference; else the fewest).
    window, windows = 0, 1
    while window < windows:
        checker = _Checker(plan, protocol, window, forks)
        checker.barriers()
        windows = max(1, len(checker.windows(constant_inits(protocol))))
        if not checker.errors:
            checker.operations()
            checker.sequences()
        for f in check_registers(plan, protocol):
            checker.finding(f)
        checker.smem()
        for f in check_tmem(plan, protocol.tmem):
            checker.finding(f)
        report = TranslationReport(
            kernel.name, tuple(checker.rings), tuple(checker.errors), tuple(checker.checked)
        )
        if report.ok:
            return report
        if best is None or len(report.errors) < len(best.errors):
            best = report
        window += 1
    assert best is not None
    return best


def check_ptx(plan: KernelPlan, ptx: str, entry: str | None = None) -> TranslationReport:
    """Compare the barrier protocol of a compiled kernel's PTX with its verified plan.

    Args:
        plan: The plan that ts-verify proved (the kernel's ``KernelPlan``). Its pipeline
            groups are written out per member as the lowering emits them; the members of a
            TMA ``Fork`` after the first wait on the first member's full barriers, armed with
            the bytes of every member the producer loads into.
        ptx: The PTX the kernel compiled to.
        entry: The ``.entry`` to check. Default: the only one; in a module of several (a
            program that compiles a hand-written kernel beside the TS one), the first that
            runs the plan's protocol, else the one with the fewest differences.

    Returns:
        The report; its ``errors`` are :class:`TranslationError` s (``TS-X1xx``).

    Raises:
        ts_runtime.ptx_cfg.PtxFormatError: The text holds no such kernel entry.
    """
    names: list[str | None] = [entry] if entry is not None else [*entry_names(ptx)] or [None]
    plan, forks = _lowered(plan)
    best: TranslationReport | None = None
    for name in names:
        report = _check_entry(plan, ptx, name, forks)
        if report.ok:
            return report
        if best is None or len(report.errors) < len(best.errors):
            best = report
    assert best is not None
    return best
