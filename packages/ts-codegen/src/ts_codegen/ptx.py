"""PTX instruction counts per kind, for comparing a TS kernel with its hand-written twin.

Pure text processing (no CuTe DSL import).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping

__all__ = ["DEFAULT_KINDS", "count_instructions", "diff_counts", "opcode_counts"]

_INSTR = re.compile(r"^\s*(?:@!?%\w+\s+)?([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*)\b", re.M)

DEFAULT_KINDS: tuple[str, ...] = (
    "ld.global",
    "st.global",
    "ld.shared",
    "st.shared",
    "mbarrier.init",
    "mbarrier.try_wait",
    "mbarrier.arrive",
    "mbarrier.arrive.expect_tx",
    "cp.async.bulk.tensor",
    "cp.async.bulk.commit_group",
    "cp.async.bulk.wait_group",
    "setmaxnreg.inc",
    "setmaxnreg.dec",
    "bar.sync",
    "fence",
    "bra",
)


def opcode_counts(ptx: str) -> Counter[str]:
    """Count every instruction by its full opcode (``ld.global.b16``, ``bra.uni`` ...)."""
    counts: Counter[str] = Counter()
    for line in ptx.splitlines():
        s = line.strip()
        if not s or s.startswith(("//", ".", "$", "{", "}")) or s.endswith(":"):
            continue
        m = _INSTR.match(s)
        if m:
            counts[m.group(1)] += 1
    return counts


def count_instructions(ptx: str, kinds: Iterable[str] = DEFAULT_KINDS) -> dict[str, int]:
    """Instructions per kind.

    A kind counts every opcode that starts with it: ``ld.global`` counts ``ld.global.b16`` and
    ``ld.global.v4.u32``.
    """
    ops = opcode_counts(ptx)
    return {k: sum(n for op, n in ops.items() if op == k or op.startswith(k + ".")) for k in kinds}


def diff_counts(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """The kinds whose counts differ, as ``kind: (a, b)``."""
    return {k: (a.get(k, 0), b.get(k, 0)) for k in sorted({*a, *b}) if a.get(k, 0) != b.get(k, 0)}
