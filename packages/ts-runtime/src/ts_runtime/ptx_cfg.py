"""A compiled kernel's PTX as instructions, basic blocks and a control-flow graph.

Translation validation (:mod:`ts_runtime.ptx_check`) reads the PTX the CuTe DSL produced for a
kernel, not the code generator's intentions: this module turns the text of one ``.entry``
into :class:`Instr` s (each with its 1-based line in the PTX, for messages), :class:`Block` s
and their successors. Pure text processing, no CuTe DSL.

Inline assembly (between ``// begin inline asm`` and ``// end inline asm``) is kept in the
block that contains it: its instructions count (an ``mbarrier.try_wait`` spin loop is written
that way), its own labels and branches do not (they stay inside the asm statement, whose spin
loop ends when the barrier completes). Registers an asm statement declares (``.reg .pred P1``)
are renamed per statement so that two statements' ``P1`` are two registers.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Sequence

__all__ = [
    "Block",
    "Instr",
    "PtxFormatError",
    "PtxKernel",
    "entry_names",
    "parse_kernel",
    "split_args",
]


class PtxFormatError(ValueError):
    """The text is not the PTX of a kernel this module can read (no ``.entry``, unbalanced)."""


_LABEL = re.compile(r"^([$A-Za-z_][\w$]*):\s*$")
_PRED = re.compile(r"^@(!?)([%\w:]+)\s+")
_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$]+)")
_TERMINATORS = ("bra", "ret", "exit", "brx")


@dataclasses.dataclass(frozen=True)
class Instr:
    """One PTX instruction.

    Attributes:
        index: Position in the kernel's instruction list.
        line: 1-based line number in the PTX text.
        opcode: The full opcode (``mbarrier.try_wait.parity.shared.b64``).
        args: The operands, as written (``[%r5+65536]``, ``%r51``, ``{%r1, %r2}``).
        pred: The guard predicate register, or "" for an unguarded instruction.
        negated: The guard is ``@!pred``.
        in_asm: Written inside an inline asm statement.
        text: The instruction's text, for messages.
    """

    index: int
    line: int
    opcode: str
    args: tuple[str, ...]
    pred: str = ""
    negated: bool = False
    in_asm: bool = False
    text: str = ""

    def has(self, prefix: str) -> bool:
        """The opcode is ``prefix`` or starts with ``prefix.``."""
        return self.opcode == prefix or self.opcode.startswith(prefix + ".")

    @property
    def parts(self) -> tuple[str, ...]:
        """The opcode split at its dots."""
        return tuple(self.opcode.split("."))


@dataclasses.dataclass
class Block:
    """A basic block: a label (or none) and the instructions up to the next branch or label.

    Attributes:
        index: Position in :attr:`PtxKernel.blocks`.
        label: The block's label ("" for a block that starts after a branch).
        instrs: Its instructions (inline asm included).
        succs: Indices of the blocks control may reach next.
    """

    index: int
    label: str
    instrs: list[Instr]
    succs: list[int] = dataclasses.field(default_factory=list)

    @property
    def terminator(self) -> Instr | None:
        """The last instruction when it is a branch or a return, else None."""
        if self.instrs and not self.instrs[-1].in_asm:
            last = self.instrs[-1]
            if last.parts[0] in _TERMINATORS:
                return last
        return None


@dataclasses.dataclass
class PtxKernel:
    """One ``.entry`` of a PTX module.

    Attributes:
        name: The entry's name.
        instrs: Every instruction, in order.
        blocks: The basic blocks; block 0 is the entry.
        threads: Threads per block from ``.reqntid`` / ``.maxntid`` (0 when not declared).
        shared_symbols: Names of the module's ``.shared`` arrays (the dynamic SMEM base).
    """

    name: str
    instrs: list[Instr]
    blocks: list[Block]
    threads: int
    shared_symbols: frozenset[str]

    def block_of(self) -> dict[int, int]:
        """The block index of every instruction index."""
        return {i.index: b.index for b in self.blocks for i in b.instrs}


def split_args(text: str) -> tuple[str, ...]:
    """Operands split at top-level commas (not inside ``[]``, ``{}`` or ``()``)."""
    out: list[str] = []
    depth = 0
    cur = ""
    for ch in text:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return tuple(out)


def entry_names(ptx: str) -> list[str]:
    """The names of every ``.entry`` in a PTX module, in order."""
    return [m.group(1) for m in map(_ENTRY.match, ptx.splitlines()) if m]


def _entry_lines(ptx: str, name: str | None) -> tuple[str, int, list[tuple[int, str]]]:
    """The entry's name, thread count and body lines (1-based number, text)."""
    lines = ptx.splitlines()
    start = None
    for i, line in enumerate(lines):
        m = _ENTRY.match(line)
        if m and (name is None or m.group(1) == name):
            start, name = i, m.group(1)
            break
    if start is None or name is None:
        raise PtxFormatError(
            "no .entry in the PTX" if name is None else f"no .entry named {name!r} in the PTX"
        )
    threads = 0
    i = start
    while i < len(lines) and lines[i].strip() != "{":
        m = re.match(
            r"\s*\.(?:reqntid|maxntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", lines[i]
        )
        if m:
            threads = 1
            for g in m.groups():
                threads *= int(g) if g else 1
        i += 1
    if i == len(lines):
        raise PtxFormatError(f".entry {name} has no body")
    body: list[tuple[int, str]] = []
    depth = 0
    for j in range(i, len(lines)):
        text = lines[j]
        code = text.split("//", 1)[0]
        if "// begin inline asm" in text or "// end inline asm" in text:
            body.append((j + 1, text.strip()))
            continue
        depth += code.count("{") - code.count("}")
        body.append((j + 1, text.strip()))
        if depth == 0:
            break
    else:
        raise PtxFormatError(f".entry {name}: unbalanced braces")
    return name, threads, body[1:-1]


def _statements(body: Sequence[tuple[int, str]]) -> Iterator[tuple[int, str, bool, int]]:
    """(line, statement, in_asm, asm statement number) for every statement or label."""
    in_asm = False
    asm_id = 0
    for line, text in body:
        if text.startswith("// begin inline asm"):
            in_asm, asm_id = True, asm_id + 1
            continue
        if text.startswith("// end inline asm"):
            in_asm = False
            continue
        code = text.split("//", 1)[0].strip()
        for piece in code.split(";"):
            piece = piece.strip().strip("{}").strip()
            if piece:
                yield line, piece, in_asm, asm_id


def parse_kernel(ptx: str, name: str | None = None) -> PtxKernel:
    """Parse one ``.entry`` (the first, or the one named) into instructions and blocks.

    Raises:
        PtxFormatError: No such entry, or its body cannot be delimited.
    """
    entry, threads, body = _entry_lines(ptx, name)
    shared = frozenset(re.findall(r"\.shared\s+(?:\.align\s+\d+\s+)?\.b8\s+([\w$]+)\s*\[", ptx))
    instrs: list[Instr] = []
    labels: list[tuple[int, str]] = []  # (instruction index, label) for labels outside asm
    asm_regs: dict[int, dict[str, str]] = {}
    for line, stmt, in_asm, asm_id in _statements(body):
        m = _LABEL.match(stmt)
        if m:
            if not in_asm:
                labels.append((len(instrs), m.group(1)))
            continue
        if stmt.startswith("."):  # .reg, .pragma, .loc ...
            if in_asm and stmt.startswith(".reg"):
                for reg in split_args(stmt.split(None, 2)[-1]):
                    asm_regs.setdefault(asm_id, {})[reg] = f"{reg}@asm{asm_id}"
            continue
        pm = _PRED.match(stmt)
        pred, negated = "", False
        if pm:
            negated, pred = pm.group(1) == "!", pm.group(2)
            stmt = stmt[pm.end() :]
        head, _, rest = stmt.partition(" ")
        args = split_args(rest.strip()) if rest.strip() else ()
        if in_asm and asm_id in asm_regs:
            renames = asm_regs[asm_id]
            args = tuple(_rename(a, renames) for a in args)
            pred = renames.get(pred, pred)
        if in_asm and head.split(".")[0] in _TERMINATORS:
            continue  # the asm statement's own spin loop
        instrs.append(Instr(len(instrs), line, head, args, pred, negated, in_asm, stmt))
    return PtxKernel(entry, instrs, _blocks(instrs, labels), threads, shared)


def _rename(arg: str, renames: dict[str, str]) -> str:
    return re.sub(r"[%\w]+", lambda m: renames.get(m.group(0), m.group(0)), arg)


def _blocks(instrs: list[Instr], labels: list[tuple[int, str]]) -> list[Block]:
    starts: dict[int, str] = {0: ""}
    for pos, label in labels:
        starts[pos] = label
    for ins in instrs:
        if not ins.in_asm and ins.parts[0] in _TERMINATORS:
            starts.setdefault(ins.index + 1, "")
    order = sorted(p for p in starts if p <= len(instrs))
    blocks: list[Block] = []
    by_label: dict[str, int] = {}
    for k, pos in enumerate(order):
        end = order[k + 1] if k + 1 < len(order) else len(instrs)
        if pos == len(instrs) and not starts[pos]:
            continue
        block = Block(len(blocks), starts[pos], instrs[pos:end])
        if block.label:
            by_label[block.label] = block.index
        blocks.append(block)
    for b in blocks:
        term = b.terminator
        falls = b.index + 1 < len(blocks)
        if term is None:
            if falls:
                b.succs.append(b.index + 1)
            continue
        if term.parts[0] == "bra":
            target = by_label.get(term.args[0]) if term.args else None
            if target is not None:
                b.succs.append(target)
            if term.pred and falls and b.index + 1 not in b.succs:
                b.succs.append(b.index + 1)
        elif term.pred and falls:  # a guarded ret / exit
            b.succs.append(b.index + 1)
    return blocks
