"""Which plans a compilation lowered, and the PTX it produced: for translation validation.

:func:`capture_compiles` collects, while active, every plan :func:`ts_codegen.emit_tasks`
lowers and every PTX text :func:`ts_codegen.dsl.compile_ptx` returns, paired per compile: a
:class:`Compiled` holds the plans lowered since the previous compile and that compile's PTX.
ts-runtime's translation validation (``ts compile --check``) compares the two; the kernels
themselves are unchanged (recording happens on the host, while the kernel is traced).
Compiles that do not go through ``compile_ptx`` (a program's own ``cute.compile``) leave their
plans in :attr:`Capture.pending`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from ts_ir import KernelPlan

__all__ = ["Capture", "Compiled", "capture_compiles", "note_compiled", "note_lowered"]


@dataclasses.dataclass(frozen=True)
class Compiled:
    """One compile: the plans it lowered (none for a hand-written kernel) and its PTX."""

    plans: tuple[KernelPlan, ...]
    ptx: str


@dataclasses.dataclass
class Capture:
    """What :func:`capture_compiles` recorded.

    Attributes:
        compiles: Every compile through ``compile_ptx``, in order.
        pending: Plans lowered since the last such compile.
    """

    compiles: list[Compiled] = dataclasses.field(default_factory=list)
    pending: list[KernelPlan] = dataclasses.field(default_factory=list)


_ACTIVE: list[Capture] = []


@contextmanager
def capture_compiles() -> Iterator[Capture]:
    """Record lowered plans and compiled PTX until the block ends (nests)."""
    capture = Capture()
    _ACTIVE.append(capture)
    try:
        yield capture
    finally:
        _ACTIVE.remove(capture)


def note_lowered(plan: KernelPlan) -> None:
    """Called by :func:`ts_codegen.emit_tasks` for the plan it lowers, as written.

    With its pipeline groups: the lowering writes them out per member (:mod:`ts_codegen.groups`).
    """
    for capture in _ACTIVE:
        capture.pending.append(plan)


def note_compiled(ptx: str) -> None:
    """Called by :func:`ts_codegen.dsl.compile_ptx` with the PTX it returns."""
    for capture in _ACTIVE:
        capture.compiles.append(Compiled(tuple(capture.pending), ptx))
        capture.pending.clear()
