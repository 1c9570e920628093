"""What the registers of a kernel's PTX hold, as far as the barrier protocol needs to know.

Two evaluations over the register definitions of a :class:`ts_runtime.ptx_cfg.PtxKernel`:

* **per thread** (:meth:`Values.concrete`): the value a register has in thread ``t`` of the
  CTA when it depends only on ``%tid`` and constants (the warp index the task dispatch
  branches on, the lane a signal is guarded by, ``elect.sync``'s leader), else None. With it,
  :meth:`Values.reach` finds the blocks each thread may execute: a branch whose predicate is
  known for the thread takes one edge, any other branch both. That attributes every
  instruction to the warps (hence the tasks) that run it and counts the threads that run it.
* **affine** (:meth:`Values.affine`): a register as ``constant + sum(coefficient * atom)``,
  where an atom is the dynamic SMEM base or a register the evaluation does not look through
  (a loop-carried one, or the result of a non-linear operation). A barrier address reads as
  ``smem + offset + 8 * stage`` this way.

NVVM's PTX is close to SSA: a register written once holds one value, which both evaluations
compute from its definition; a register written several times is a loop-carried value (a phi
web), which they treat as unknown. ``shfl.sync.idx`` from lane 0 is a broadcast, and
``elect.sync`` elects lane 0 (the leader is the lowest active lane; TS elects in converged
warps).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from ts_runtime.ptx_cfg import Instr, PtxKernel

__all__ = ["Affine", "Values", "defined_registers", "parse_address", "parse_int"]

_NO_DEST = (
    "st",
    "red",
    "bar",
    "barrier",
    "fence",
    "membar",
    "setmaxnreg",
    "bra",
    "ret",
    "exit",
    "trap",
    "prefetch",
    "griddepcontrol",
    "call",
    "cp",
    "wgmma",
    "tcgen05",
    "nanosleep",
    "pmevent",
    "stmatrix",
)
_NO_DEST_MBARRIER = (
    "mbarrier.init",
    "mbarrier.expect_tx",
    "mbarrier.complete_tx",
    "mbarrier.inval",
    "clusterlaunchcontrol.try_cancel",  # its answer goes to memory, not to a register
)


def parse_int(text: str) -> int | None:
    """An integer immediate (``8``, ``-4``, ``0x20``, ``0F3f800000`` is not one), else None."""
    t = text.strip()
    try:
        if t.lower().startswith(("0x", "-0x")):
            return int(t, 16)
        if t.lstrip("-").isdigit():
            return int(t)
    except ValueError:
        return None
    return None


def parse_address(operand: str) -> tuple[str, int] | None:
    """``[%r5+65536]`` -> ``("%r5", 65536)``; ``[%r15]`` -> ``("%r15", 0)``; else None."""
    t = operand.strip()
    if not (t.startswith("[") and t.endswith("]")):
        return None
    inner = t[1:-1].replace(" ", "")
    if "," in inner or not inner:
        return None
    for k in range(1, len(inner)):
        if inner[k] in "+-" and inner[k - 1] not in "+-":
            base, off = inner[:k], parse_int(inner[k + 1 :] if inner[k] == "+" else inner[k:])
            return (base, off) if off is not None else None
    return inner, 0


def defined_registers(ins: Instr) -> tuple[str, ...]:
    """The registers an instruction writes."""
    if not ins.args or ins.parts[0] in _NO_DEST or ins.opcode.startswith(_NO_DEST_MBARRIER):
        return ()
    if ins.has("mbarrier.try_wait") or ins.has("mbarrier.test_wait"):
        return tuple(r for r in ins.args[0].split("|") if r.startswith(("%", "P")) or "@asm" in r)
    dest = ins.args[0]
    if dest.startswith("{"):
        return tuple(r.strip() for r in dest.strip("{}").split(",") if r.strip())
    return tuple(r for r in dest.split("|") if r and r != "_")


@dataclasses.dataclass(frozen=True)
class Affine:
    """``const + sum(coef * atom)``; atoms: ``"smem"`` or a register name."""

    const: int
    terms: tuple[tuple[str, int], ...] = ()

    def plus(self, other: Affine, sign: int = 1) -> Affine:
        """``self + sign * other``."""
        terms = dict(self.terms)
        for atom, coef in other.terms:
            terms[atom] = terms.get(atom, 0) + sign * coef
        return Affine(
            self.const + sign * other.const, tuple(sorted((a, c) for a, c in terms.items() if c))
        )

    def scaled(self, k: int) -> Affine:
        """``k * self``."""
        return Affine(self.const * k, tuple((a, c * k) for a, c in self.terms if c * k))

    def coef(self, atom: str) -> int:
        """The coefficient of ``atom`` (0 when absent)."""
        return dict(self.terms).get(atom, 0)

    def others(self, *atoms: str) -> tuple[tuple[str, int], ...]:
        """The terms whose atom is not one of ``atoms``."""
        return tuple((a, c) for a, c in self.terms if a not in atoms)


SMEM = "smem"
"""The atom of the dynamic SMEM base (``__dynamic_shmem__0`` and friends)."""

_WIDTH = {"8": 8, "16": 16, "32": 32, "64": 64}


def _typed(value: int, ty: str) -> int:
    bits = _WIDTH.get(ty[1:], 32) if ty[:1] in "usb" else 32
    v = value & ((1 << bits) - 1)
    if ty.startswith("s") and v >> (bits - 1):
        v -= 1 << bits
    return v


_CMP: dict[str, Callable[[int, int], bool]] = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "lo": lambda a, b: a < b,
    "ls": lambda a, b: a <= b,
    "hi": lambda a, b: a > b,
    "hs": lambda a, b: a >= b,
}


class Values:
    """Register values of one kernel (module docstring).

    Args:
        kernel: The parsed kernel.
    """

    def __init__(self, kernel: PtxKernel) -> None:
        self.kernel = kernel
        self.defs: dict[str, list[Instr]] = {}
        for ins in kernel.instrs:
            for reg in defined_registers(ins):
                self.defs.setdefault(reg, []).append(ins)
        self._conc: dict[tuple[str, int], int | None] = {}
        self._aff: dict[str, Affine] = {}
        self._block_of: dict[int, int] | None = None

    def single_def(self, reg: str) -> Instr | None:
        """The one instruction that writes ``reg``, or None (never, or several times)."""
        d = self.defs.get(reg)
        return d[0] if d is not None and len(d) == 1 else None

    def local_def(self, reg: str, use: Instr) -> Instr | None:
        """The unguarded write of ``reg`` earlier in ``use``'s basic block, if any.

        That write reaches ``use`` whatever else writes ``reg`` (NVVM reuses a register of a
        loop's phi web for a constant operand elsewhere, e.g. an arrive's count).
        """
        if self._block_of is None:
            self._block_of = self.kernel.block_of()
        block = self._block_of.get(use.index)
        for ins in reversed(self.kernel.instrs[: use.index]):
            if self._block_of.get(ins.index) != block:
                return None
            if reg in defined_registers(ins):
                return None if ins.pred else ins
        return None

    # -- per thread -------------------------------------------------------------------------
    def concrete_at(self, operand: str, use: Instr, thread: int) -> int | None:
        """:meth:`concrete` of ``operand`` as read by ``use`` (its block's own write first)."""
        ins = self.local_def(operand, use)
        if ins is None:
            return self.concrete(operand, thread)
        return self.evaluate(ins, operand, thread)

    def concrete(
        self, operand: str, thread: int, override: Mapping[str, int | None] | None = None
    ) -> int | None:
        """The value of ``operand`` in ``thread`` when it follows from ``%tid`` and constants.

        ``override`` fixes registers (and bypasses the cache): what a loop's state registers
        hold when :mod:`ts_runtime.ptx_protocol` runs one iteration's update.
        """
        imm = parse_int(operand)
        if imm is not None:
            return imm
        if override is not None and operand in override:
            return override[operand]
        if operand == "%tid.x":
            return thread
        if operand in ("%tid.y", "%tid.z"):
            return 0
        if operand == "%laneid":
            return thread % 32
        key = (operand, thread)
        if override is None and key in self._conc:
            return self._conc[key]
        if override is None:
            self._conc[key] = None  # a cycle through a definition reads as unknown
        ins = self.single_def(operand)
        value = None if ins is None else self.evaluate(ins, operand, thread, override)
        if override is None:
            self._conc[key] = value
        return value

    def evaluate(
        self,
        ins: Instr,
        dest: str,
        thread: int,
        override: Mapping[str, int | None] | None = None,
        local: Mapping[str, int | None] | None = None,
    ) -> int | None:
        """The value ``ins`` writes to ``dest`` in ``thread`` (None when unknown).

        ``local`` holds values written earlier in a block being run (they shadow the rest).
        """

        def val(op: str) -> int | None:
            if local is not None and op in local:
                return local[op]
            return self.concrete(op, thread, override)

        p = ins.parts
        head, ty = p[0], p[-1]
        a = ins.args
        if head in ("mov", "cvt", "cvta") and len(a) == 2:
            return val(a[1])
        if head == "shfl" and len(p) > 2 and p[2] == "idx" and len(a) >= 3:
            if parse_int(a[2]) == 0:
                return (
                    val(a[1])
                    if local is not None
                    else self.concrete(a[1], thread - thread % 32, override)
                )
            return None
        if head == "elect":
            return int(thread % 32 == 0) if dest != a[0].split("|")[0] else 0
        if head == "selp" and len(a) == 4:
            c = val(a[3])
            return None if c is None else val(a[1] if c else a[2])
        if head == "setp" and len(a) >= 3:
            x, y = val(a[1]), val(a[2])
            cmp = _CMP.get(p[1])
            if x is None or y is None or cmp is None:
                return None
            r = cmp(_typed(x, ty), _typed(y, ty))
            return int(r) if dest == a[0].split("|")[0] else int(not r)
        if head == "not" and len(a) == 2:
            x = val(a[1])
            return None if x is None else (int(not x) if ty == "pred" else ~x)
        if len(a) == 3 and head in _BINARY:
            x, y = val(a[1]), val(a[2])
            if ty == "pred" and head in ("and", "or") and (x is None or y is None):
                # One known operand may decide: a dispatch test `warp > 0 || tile >= n`.
                known = x if y is None else y
                if known is not None and bool(known) == (head == "or"):
                    return known
                return None
            if x is None or y is None:
                return None
            return _BINARY[head](_typed(x, ty) if ty != "pred" else x, y)
        if head == "mad" and len(a) == 4:
            x, y, z = val(a[1]), val(a[2]), val(a[3])
            return None if x is None or y is None or z is None else x * y + z
        return None

    def reach(self, thread: int) -> set[int]:
        """The blocks ``thread`` may execute (branches it cannot decide take both edges)."""
        seen = {0}
        todo = [0]
        blocks = self.kernel.blocks
        while todo:
            b = blocks[todo.pop()]
            succs = b.succs
            term = b.terminator
            if term is not None and term.pred and len(succs) == 2:
                c = self.concrete(term.pred, thread)
                if c is not None:
                    taken = bool(c) != term.negated
                    succs = [succs[0]] if taken else [succs[1]]
            for s in succs:
                if s not in seen:
                    seen.add(s)
                    todo.append(s)
        return seen

    def runs(self, ins: Instr, thread: int) -> bool:
        """Whether a reached instruction runs in ``thread`` (its guard is not known false)."""
        if not ins.pred:
            return True
        c = self.concrete(ins.pred, thread)
        return c is None or bool(c) != ins.negated

    # -- affine ----------------------------------------------------------------------------
    def affine(self, operand: str) -> Affine:
        """``operand`` as an affine form over the SMEM base and opaque registers."""
        imm = parse_int(operand)
        if imm is not None:
            return Affine(imm)
        if operand in self.kernel.shared_symbols:
            return Affine(0, ((SMEM, 1),))
        if operand in self._aff:
            return self._aff[operand]
        self._aff[operand] = Affine(0, ((operand, 1),))  # cycles stay opaque
        ins = self.single_def(operand)
        out = Affine(0, ((operand, 1),)) if ins is None else self._affine_of(ins, operand)
        self._aff[operand] = out
        return out

    def _affine_of(self, ins: Instr, dest: str) -> Affine:
        head, a = ins.parts[0], ins.args
        opaque = Affine(0, ((dest, 1),))
        if head in ("mov", "cvt", "cvta", "mapa") and len(a) >= 2:
            # mapa: the same offset in a peer CTA's SMEM (a cluster barrier's remote arrive).
            return self.affine(a[1])
        if head == "shfl" and len(a) >= 3 and parse_int(a[2]) == 0:
            return self.affine(a[1])
        if head in ("add", "sub") and len(a) == 3:
            return self.affine(a[1]).plus(self.affine(a[2]), 1 if head == "add" else -1)
        if head == "shl" and len(a) == 3:
            k = parse_int(a[2])
            return opaque if k is None else self.affine(a[1]).scaled(1 << k)
        if head == "mul" and len(a) == 3 and "hi" not in ins.parts:
            x, y = self.affine(a[1]), self.affine(a[2])
            if not x.terms:
                return y.scaled(x.const)
            if not y.terms:
                return x.scaled(y.const)
        if head == "mad" and len(a) == 4 and "hi" not in ins.parts:
            x, y = self.affine(a[1]), self.affine(a[2])
            if not x.terms:
                return y.scaled(x.const).plus(self.affine(a[3]))
            if not y.terms:
                return x.scaled(y.const).plus(self.affine(a[3]))
        return opaque

    def slot_address(self, operand: str) -> Affine | None:
        """``operand`` as ``base + 8 * index`` with ``index`` one register when it is so.

        :meth:`address` expands the index too (``%r59 - (%r59 & -4)`` for a stage computed
        ``mod`` the stages from a warp's lane): here a register scaled by 8 (an mbarrier
        slot) stays one term, so the index a barrier array is read with is its register.
        """
        parsed = parse_address(operand)
        if parsed is None:
            return None
        base, off = parsed
        return self._slots(base, 0).plus(Affine(off))

    def _slots(self, operand: str, depth: int) -> Affine:
        ins = self.single_def(operand) if depth < 16 else None
        if ins is None or operand in self.kernel.shared_symbols:
            return self.affine(operand)
        head, a = ins.parts[0], ins.args
        if head in ("mov", "cvt", "cvta", "mapa") and len(a) >= 2:
            return self._slots(a[1], depth + 1)
        if head in ("add", "sub") and len(a) == 3:
            x, y = self._slots(a[1], depth + 1), self._slots(a[2], depth + 1)
            return x.plus(y, 1 if head == "add" else -1)
        if head == "shl" and len(a) == 3 and parse_int(a[2]) == 3 and a[1].startswith("%"):
            return Affine(0, ((a[1], 8),))
        plain_mul = head == "mul" and "hi" not in ins.parts and "wide" not in ins.parts
        if plain_mul and len(a) == 3 and parse_int(a[2]) == 8 and a[1].startswith("%"):
            return Affine(0, ((a[1], 8),))
        return self.affine(operand)

    def address(self, operand: str) -> Affine | None:
        """A memory operand ``[reg+off]`` as an affine form (None when not an address)."""
        parsed = parse_address(operand)
        if parsed is None:
            return None
        base, off = parsed
        return self.affine(base).plus(Affine(off))


_BINARY: dict[str, Callable[[int, int], int]] = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "shl": lambda x, y: x << y,
    "shr": lambda x, y: x >> y,
    "and": lambda x, y: x & y,
    "or": lambda x, y: x | y,
    "xor": lambda x, y: x ^ y,
    "min": min,
    "max": max,
    "div": lambda x, y: x // y if y else 0,
    "rem": lambda x, y: x % y if y else 0,
}
