"""The barrier protocol a compiled kernel executes, recovered from its PTX.

:func:`recover` lists every operation on an mbarrier (``mbarrier.init`` and its count, each
arrive with the arrivals and transaction bytes it adds, each wait with its parity operand,
each TMA / bulk copy that completes transaction bytes on a barrier, ``tcgen05.commit``, each
CLC ``try_cancel`` whose answer completes bytes on a barrier), every ``setmaxnreg``, every TMA
copy into SMEM and every ``tcgen05.alloc`` / ``dealloc``, each with the set of threads of the
CTA that may run it (:meth:`ts_runtime.ptx_values.Values.reach`) and its address as an
affine form over the dynamic SMEM base. :func:`state_machine` recovers how a wait's stage
index and parity registers start and advance by running the blocks that update them on
concrete values.

Nothing here knows the plan: :mod:`ts_runtime.ptx_check` compares the two.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from ts_runtime.ptx_cfg import Instr, PtxKernel
from ts_runtime.ptx_values import SMEM, Affine, Values, defined_registers, parse_int

__all__ = [
    "BarrierOp",
    "Protocol",
    "RegisterOp",
    "StateMachine",
    "TmaStore",
    "TmemOp",
    "WaitSite",
    "barrier_operand",
    "constant_inits",
    "not_advancing",
    "recover",
    "state_machine",
]


@dataclasses.dataclass(frozen=True)
class BarrierOp:
    """One instruction that acts on an mbarrier.

    Attributes:
        kind: ``init``, ``arrive`` (arrivals, maybe with tx bytes), ``expect_tx`` (tx bytes
            only), ``wait``, ``complete_tx`` (a TMA / bulk copy's bytes), ``commit``
            (``tcgen05.commit``: one arrival when the MMAs before it finish) or
            ``clc_response`` (``clusterlaunchcontrol.try_cancel``: its 16-byte answer's
            bytes).
        instr: The instruction.
        address: The barrier's address (None when it is not a ``[reg+offset]`` operand).
        count: ``init``: the arrival count; ``arrive``: arrivals per executing thread;
            ``complete_tx``: bytes when the instruction states them; else None.
        tx_bytes: Transaction bytes an ``arrive`` / ``expect_tx`` announces (None: none or
            not a constant).
        parity: A wait's parity operand.
        threads: The threads of the CTA that may run it.
    """

    kind: str
    instr: Instr
    address: Affine | None
    count: int | None
    tx_bytes: int | None
    parity: str
    threads: frozenset[int]

    @property
    def warps(self) -> frozenset[int]:
        """The warps that may run it."""
        return frozenset(t // 32 for t in self.threads)


@dataclasses.dataclass(frozen=True)
class RegisterOp:
    """A ``setmaxnreg`` (``increase``: ``.inc``) and the threads that may run it."""

    instr: Instr
    count: int | None
    increase: bool
    threads: frozenset[int]


@dataclasses.dataclass(frozen=True)
class TmaStore:
    """A TMA / bulk copy that writes SMEM: its destination and the barrier it completes."""

    instr: Instr
    destination: Affine | None
    barrier: Affine | None


@dataclasses.dataclass(frozen=True)
class TmemOp:
    """A ``tcgen05.alloc`` / ``tcgen05.dealloc`` (``kind``) and the threads that may run it."""

    kind: str
    instr: Instr
    threads: frozenset[int]


@dataclasses.dataclass(frozen=True)
class Protocol:
    """Everything :func:`recover` found (module docstring)."""

    kernel: PtxKernel
    values: Values
    barriers: tuple[BarrierOp, ...]
    registers: tuple[RegisterOp, ...]
    smem_writes: tuple[TmaStore, ...]
    threads: int
    tmem: tuple[TmemOp, ...] = ()


def _threads_running(
    values: Values, reach: list[set[int]], block: int, ins: Instr
) -> frozenset[int]:
    return frozenset(t for t, blocks in enumerate(reach) if block in blocks and values.runs(ins, t))


def _const(values: Values, operand: str, use: Instr) -> int | None:
    v = parse_int(operand)
    if v is not None:
        return v
    # Constant registers (``mov.b32 %r18, 32768``) are the same in every thread.
    return values.concrete_at(operand, use, 0)


def _barrier_op(values: Values, ins: Instr, threads: frozenset[int]) -> BarrierOp | None:
    a = ins.args
    addr = next((values.address(x) for x in a if x.startswith("[")), None)
    if ins.has("mbarrier.init") and len(a) == 2:
        return BarrierOp(
            "init", ins, values.address(a[0]), _const(values, a[1], ins), None, "", threads
        )
    if ins.has("mbarrier.try_wait") or ins.has("mbarrier.test_wait") or ins.has("mbarrier.wait"):
        parity = a[2] if "parity" in ins.parts and len(a) > 2 else ""
        return BarrierOp("wait", ins, values.address(a[1]), None, None, parity, threads)
    if ins.has("mbarrier.arrive") or ins.has("mbarrier.arrive_drop"):
        extra = [x for x in a if not x.startswith("[")][1:]  # after the state destination
        if "expect_tx" in ins.parts:
            tx = _const(values, extra[0], ins) if extra else None
            return BarrierOp("arrive", ins, addr, 1, tx, "", threads)
        count = _const(values, extra[0], ins) if extra else 1
        return BarrierOp("arrive", ins, addr, count, None, "", threads)
    if ins.has("mbarrier.expect_tx"):
        return BarrierOp("expect_tx", ins, addr, None, _const(values, a[-1], ins), "", threads)
    if ins.has("cp.async.mbarrier.arrive"):
        return BarrierOp("arrive", ins, addr, 1, None, "", threads)
    if ins.has("tcgen05.commit") and any("arrive" in p for p in ins.parts):
        return BarrierOp("commit", ins, addr, 1, None, "", threads)
    if ins.has("clusterlaunchcontrol.try_cancel") and len(a) >= 2:
        # try_cancel [answer], [mbarrier]: the hardware writes the 16-byte answer and
        # completes 16 bytes on the barrier (checked by ts_runtime.ptx_clc).
        return BarrierOp("clc_response", ins, values.address(a[1]), 16, None, "", threads)
    if ins.has("cp") and any("complete_tx" in p for p in ins.parts):
        mbar = [x for x in a if x.startswith("[")]
        size = None
        if not ins.has("cp.async.bulk.tensor") and len(a) >= 4:
            size = _const(values, a[2], ins)
        barrier = values.address(mbar[-1]) if len(mbar) >= 2 else None
        return BarrierOp("complete_tx", ins, barrier, size, None, "", threads)
    return None


def recover(kernel: PtxKernel) -> Protocol:
    """The barrier operations, ``setmaxnreg`` s and SMEM-writing copies of ``kernel``."""
    values = Values(kernel)
    threads = kernel.threads or 32
    reach = [values.reach(t) for t in range(threads)]
    block_of = kernel.block_of()
    barriers: list[BarrierOp] = []
    registers: list[RegisterOp] = []
    writes: list[TmaStore] = []
    tmem: list[TmemOp] = []
    for ins in kernel.instrs:
        head = ins.parts[0]
        if head not in ("mbarrier", "cp", "tcgen05", "setmaxnreg", "clusterlaunchcontrol"):
            continue
        running = _threads_running(values, reach, block_of[ins.index], ins)
        if head == "setmaxnreg":
            n = _const(values, ins.args[0], ins) if ins.args else None
            registers.append(RegisterOp(ins, n, "inc" in ins.parts, running))
            continue
        if ins.has("tcgen05.alloc") or ins.has("tcgen05.dealloc"):
            tmem.append(TmemOp(ins.parts[1], ins, running))
            continue
        op = _barrier_op(values, ins, running)
        if op is not None:
            barriers.append(op)
        if op is not None and op.kind == "clc_response":
            # The answer is written into SMEM too: it must stay clear of the barriers.
            writes.append(TmaStore(ins, values.address(ins.args[0]), op.address))
        elif ins.has("cp") and "bulk" in ins.parts and ins.args:
            # cp.async.bulk{.tensor.Nd}.<dst space>.<src space>...: the first state space
            # named is the destination's; the first operand is its address.
            spaces = [p for p in ins.parts if p.split("::")[0] in ("shared", "global")]
            if spaces and spaces[0].startswith("shared"):
                barrier = op.address if op is not None else None
                writes.append(TmaStore(ins, values.address(ins.args[0]), barrier))
    return Protocol(
        kernel, values, tuple(barriers), tuple(registers), tuple(writes), threads, tuple(tmem)
    )


def barrier_operand(op: BarrierOp) -> str:
    """The ``[...]`` operand naming the barrier an operation acts on ("" when none)."""
    a = op.instr.args
    mem = [x for x in a if x.startswith("[")]
    if op.kind == "init":
        return a[0] if a else ""
    if op.kind == "wait":
        return a[1] if len(a) > 1 else ""
    if op.kind in ("complete_tx", "clc_response"):
        return mem[-1] if len(mem) >= 2 else ""
    return mem[0] if mem else ""


def constant_inits(protocol: Protocol) -> list[tuple[int, BarrierOp]]:
    """The ``mbarrier.init`` s at constant SMEM offsets, by offset."""
    out = [
        (op.address.const, op)
        for op in protocol.barriers
        if op.kind == "init"
        and op.address is not None
        and op.address.coef(SMEM) == 1
        and not op.address.others(SMEM)
    ]
    return sorted(out, key=lambda s: s[0])


# -- how a wait's stage index and phase advance -------------------------------------------------
@dataclasses.dataclass(frozen=True)
class WaitSite:
    """A wait of one task on one side of one ring: where its stage index and parity come from.

    Attributes:
        instr: The wait instruction.
        index_reg: The register holding the stage index (None: a constant stage).
        index_const: The constant stage (when ``index_reg`` is None).
        parity: The parity operand (a register or an immediate).
    """

    instr: Instr
    index_reg: str | None
    index_const: int
    parity: str


@dataclasses.dataclass(frozen=True)
class StateMachine:
    """The (stage, parity) states a task's waits on one ring side see, as the PTX runs.

    Attributes:
        first: The states of the first wait reached from the kernel's entry (None: unknown).
        next_states: Per wait (instruction index) and state tried there, the states the next
            wait on the same ring side sees, along every path; None when a path could not be
            followed (a value that does not follow from the state, or too many paths).
    """

    first: frozenset[tuple[int | None, int | None]] | None
    next_states: dict[tuple[int, tuple[int, int]], frozenset[tuple[int | None, int | None]] | None]


def _slice(values: Values, regs: Iterable[str]) -> set[str]:
    """The loop-carried registers the values of ``regs`` are computed from (with themselves)."""
    seen: set[str] = set()
    todo = list(regs)
    out: set[str] = set()
    while todo:
        r = todo.pop()
        if r in seen:
            continue
        seen.add(r)
        defs = values.defs.get(r, [])
        if len(defs) > 1:
            out.add(r)
        for ins in defs:
            todo.extend(a for a in ins.args[1:] if a.startswith("%") and not a.startswith("%tid"))
    return out


_MAX_VISITS = 4000


def _read(
    values: Values,
    op: str | None,
    thread: int,
    env: dict[str, int | None],
    local: dict[str, int | None],
) -> int | None:
    if op is None:
        return None
    if op in local:
        return local[op]
    return values.concrete(op, thread, env)


def _follow(
    protocol: Protocol,
    sites: dict[int, WaitSite],
    tracked: list[str],
    start: tuple[int, int, dict[str, int | None]],
    thread: int,
) -> frozenset[tuple[int | None, int | None]] | None:
    """The states of the first wait of ``sites`` that each path from ``start`` reaches.

    ``start`` is (block, instruction index, tracked values).
    """
    values = protocol.values
    blocks = protocol.kernel.blocks
    results: set[tuple[int | None, int | None]] = set()
    seen: set[tuple[int, int, tuple[int | None, ...]]] = set()
    b0, pos0, env0 = start
    todo = [(b0, pos0, tuple(env0.get(r) for r in tracked))]
    visits = 0
    while todo:
        b, pos, state = todo.pop()
        if (b, pos, state) in seen:
            continue
        seen.add((b, pos, state))
        visits += 1
        if visits > _MAX_VISITS:
            return None
        env: dict[str, int | None] = dict(zip(tracked, state, strict=True))
        local: dict[str, int | None] = {}

        block = blocks[b]
        reached = False
        for ins in block.instrs:
            if ins.index < pos:
                continue
            site = sites.get(ins.index)
            if site is not None:
                i = _read(values, site.index_reg, thread, env, local)
                results.add(
                    (
                        site.index_const if i is None and not site.index_reg else i,
                        _read(values, site.parity, thread, env, local),
                    )
                )
                reached = True
                break
            for dest in defined_registers(ins):
                v = values.evaluate(ins, dest, thread, env, local)
                if dest in env:
                    env[dest] = v
                else:
                    local[dest] = v
        if reached:
            continue
        succs = block.succs
        term = block.terminator
        if term is not None and term.pred and len(succs) == 2:
            c = _read(values, term.pred, thread, env, local)
            if c is not None:
                succs = [succs[0]] if bool(c) != term.negated else [succs[1]]
        nxt = tuple(env[r] for r in tracked)
        todo.extend((s, blocks[s].instrs[0].index if blocks[s].instrs else 0, nxt) for s in succs)
    return frozenset(results)


_MAX_RUNS = 27
"""Most assignments of run constants :func:`_explored` tries (each one exploration)."""

_Key = tuple[int, tuple[int, int]]


def _in_cycle(kernel: PtxKernel, block: int) -> bool:
    """Whether control can come back to ``block`` (its instructions may run more than once)."""
    seen: set[int] = set()
    todo = list(kernel.blocks[block].succs)
    while todo:
        b = todo.pop()
        if b == block:
            return True
        if b not in seen:
            seen.add(b)
            todo.extend(kernel.blocks[b].succs)
    return False


def _run_constants(values: Values, tracked: Iterable[str], thread: int) -> dict[str, list[int]]:
    """Unknown values the tracked registers' updates select on, each computed once per run.

    E.g. ``selp.b32 %r242, 1, 0, %p32`` with ``%p32 = (%r60 != 0)``, ``%r60`` a runtime flag
    loaded once before a loop: the phase a wait starts on depends on the flag, and a branch
    on the same flag (maybe through another ``setp``) decides which waits run. The root
    (``%r60``) gets one value from each region its comparisons with constants tell apart,
    so a path sees the predicates of one run together.
    """
    kernel = values.kernel
    block_of = kernel.block_of()
    roots: set[str] = set()
    seen: set[str] = set()
    todo = [a for r in tracked for ins in values.defs.get(r, []) for a in ins.args[1:]]
    while todo:
        r = todo.pop()
        if r in seen or not r.startswith("%p"):
            continue
        seen.add(r)
        ins = values.single_def(r)
        if ins is None or ins.parts[0] != "setp" or values.concrete(r, thread) is not None:
            continue
        x = ins.args[1]
        root = values.single_def(x)
        if root is None or values.concrete(ins.args[2], thread) is None:
            continue
        if not _in_cycle(kernel, block_of[root.index]):
            roots.add(x)
    out: dict[str, list[int]] = {}
    for x in sorted(roots):
        consts = {
            c
            for ins in kernel.instrs
            if ins.parts[0] == "setp" and len(ins.args) >= 3 and ins.args[1] == x
            for c in [values.concrete(ins.args[2], thread)]
            if c is not None
        }
        out[x] = sorted({c + d for c in consts for d in (-1, 0, 1)})
    return out


def _explore(
    protocol: Protocol,
    sites: dict[int, WaitSite],
    tracked: list[str],
    fixed: dict[str, int | None],
    thread: int,
) -> tuple[set[tuple[int, int]], dict[_Key, set[tuple[int, int]]]] | None:
    """Every (stage, parity) each wait is reached with from the kernel's entry, and the next.

    The tracked registers run concretely from the entry (``fixed`` holds run-constant
    predicates); each state is (block, position, tracked values, last wait and its state).
    None when a wait's state is unknown on some path or the states do not stay few.
    """
    values = protocol.values
    blocks = protocol.kernel.blocks
    first: set[tuple[int, int]] = set()
    nxt: dict[_Key, set[tuple[int, int]]] = {}
    names = [*tracked, *fixed]
    Last = tuple[int, tuple[int, int]] | None
    todo: list[tuple[int, int, tuple[int | None, ...], Last]] = [
        (0, 0, tuple(fixed.get(r) for r in names), None)
    ]
    seen: set[tuple[int, int, tuple[int | None, ...], Last]] = set()
    while todo:
        item = todo.pop()
        if item in seen:
            continue
        seen.add(item)
        if len(seen) > 4 * _MAX_VISITS:
            return None
        b, pos, state, last = item
        env: dict[str, int | None] = dict(zip(names, state, strict=True))
        local: dict[str, int | None] = {}
        block = blocks[b]
        stopped = False
        for ins in block.instrs:
            if ins.index < pos:
                continue
            site = sites.get(ins.index)
            if site is not None:
                i = _read(values, site.index_reg, thread, env, local)
                i = site.index_const if site.index_reg is None else i
                p = _read(values, site.parity, thread, env, local)
                if i is None or p is None:
                    return None
                if last is None:
                    first.add((i, p))
                else:
                    nxt[last].add((i, p))
                nxt.setdefault((ins.index, (i, p)), set())
                saved = tuple(env[r] for r in names)
                todo.append((b, ins.index + 1, saved, (ins.index, (i, p))))
                stopped = True
                break
            for dest in defined_registers(ins):
                if dest in fixed:
                    continue  # a run constant keeps the value tried
                v = values.evaluate(ins, dest, thread, env, local)
                if dest in env:
                    env[dest] = v
                else:
                    local[dest] = v
        if stopped:
            continue
        succs = block.succs
        term = block.terminator
        if term is not None and term.pred and len(succs) == 2:
            c = _read(values, term.pred, thread, env, local)
            if c is not None:
                succs = [succs[0]] if bool(c) != term.negated else [succs[1]]
        after = tuple(env[r] for r in names)
        todo.extend(
            (s, blocks[s].instrs[0].index if blocks[s].instrs else 0, after, last) for s in succs
        )
    return first, nxt


def _explored(
    protocol: Protocol, sites: dict[int, WaitSite], tracked: list[str], thread: int
) -> StateMachine | None:
    """:class:`StateMachine` from :func:`_explore`, over both values of each run constant."""
    splits = _run_constants(protocol.values, tracked, thread)
    runs: list[dict[str, int | None]] = [{}]
    for reg, candidates in splits.items():
        runs = [{**run, reg: v} for run in runs for v in candidates]
        if len(runs) > _MAX_RUNS:
            return None
    first: set[tuple[int | None, int | None]] = set()
    nxt: dict[_Key, set[tuple[int | None, int | None]]] = {}
    for fixed in runs:
        found = _explore(protocol, sites, [r for r in tracked if r not in fixed], fixed, thread)
        if found is None:
            return None
        first |= found[0]
        for key, states in found[1].items():
            nxt.setdefault(key, set()).update(states)
    return StateMachine(frozenset(first), {k: frozenset(v) for k, v in nxt.items()})


def state_machine(
    protocol: Protocol, sites: Iterable[WaitSite], stages: int, thread: int
) -> StateMachine:
    """Follow a task's waits on one ring side (:class:`StateMachine`).

    The loop-carried registers the stage and parity are computed from are tracked as
    concrete values (unknown at the kernel's entry); branches known in ``thread`` (the
    task's warp tests) take one edge, others both. From the entry, the first wait reached
    gives the starting state; from each wait, with each state a (stage, parity) the wait's
    registers can hold, the next wait reached gives the state it advanced to.
    """
    values = protocol.values
    by_index = {s.instr.index: s for s in sites}
    regs = [r for s in by_index.values() for r in (s.index_reg, s.parity) if r and r[0] == "%"]
    tracked = sorted(_slice(values, regs) | {r for r in regs if len(values.defs.get(r, [])) != 1})
    # Precise first: the states each wait is really reached with, from the entry on.
    explored = _explored(protocol, by_index, tracked, thread)
    if explored is not None:
        return explored
    # Else each wait on its own, with every state its registers can hold, the rest unknown.
    first = _follow(protocol, by_index, tracked, (0, 0, {}), thread)
    block_of = protocol.kernel.block_of()
    nxt: dict[tuple[int, tuple[int, int]], frozenset[tuple[int | None, int | None]] | None] = {}
    for site in by_index.values():
        fixed_p = values.concrete(site.parity, thread)
        fixed_i = site.index_const if site.index_reg is None else None
        for i in range(stages) if fixed_i is None else [fixed_i]:
            for p in (0, 1) if fixed_p is None else [fixed_p]:
                env: dict[str, int | None] = {}
                if site.index_reg:
                    env[site.index_reg] = i
                if site.parity in tracked:
                    env[site.parity] = p
                start = (block_of[site.instr.index], site.instr.index + 1, env)
                nxt[(site.instr.index, (i, p))] = _follow(
                    protocol, by_index, tracked, start, thread
                )
    return StateMachine(first, nxt)


def index_term(address: Affine, base: int) -> tuple[str | None, int | None]:
    """A barrier address ``smem + base + 8 * index`` -> (index register, constant index).

    ``(None, k)``: the constant slot ``k``; ``(reg, None)``: slot ``reg``; ``(None, None)``:
    not of that form.
    """
    rest = address.others(SMEM)
    if address.coef(SMEM) != 1:
        return None, None
    offset = address.const - base
    if not rest:
        return (None, offset // 8) if offset % 8 == 0 else (None, None)
    if len(rest) == 1 and rest[0][1] == 8 and offset == 0:
        return rest[0][0], None
    return None, None


def _advance(i: int, p: int, k: int, stages: int) -> tuple[int, int]:
    return (i + k) % stages, p ^ (((i + k) // stages) & 1)


def not_advancing(
    next_states: dict[tuple[int, tuple[int, int]], frozenset[tuple[int | None, int | None]] | None],
    stages: int,
    step: int,
) -> int | None:
    """The first wait (instruction index) whose next states are not an advance, or None.

    From a wait, every state tried must reach the next wait advanced by the same k stages
    (some k >= 1 common to all states, a multiple of the interleave ``step``; k = 0 is a
    bounded wait polling again).
    """
    common: dict[int, set[int]] = {}
    for (w, (i, p)), seen in next_states.items():
        if seen is None:
            return w
        if not seen:
            continue  # no path reaches another wait: the last one
        ks: set[int] = set()
        for i2, p2 in seen:
            fits = {
                k
                for k in range(2 * stages + 1)
                if _advance(i, p, k, stages) == (i2 if i2 is not None else -1, p2)
            }
            if not fits:
                return w
            ks |= fits
        common[w] = common[w] & ks if w in common else ks
    for w, ks in common.items():
        if not any(k >= 1 and k % step == 0 for k in ks):
            return w
    return None
