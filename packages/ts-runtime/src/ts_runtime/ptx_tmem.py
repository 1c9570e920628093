"""Translation validation of the TMEM lifetime: which warp allocates and which frees.

When the plan places the kernel's tensor memory (work with ``WorkAttr.TMEM_ALLOC`` /
``TMEM_DEALLOC``, e.g. ``TensorMemory.allocate()`` / ``free()``), ts-verify proves every use
ordered between the two (TS-V222 to TS-V224) from *which task* runs them. The PTX must agree:

* a ``tcgen05.alloc`` / ``tcgen05.dealloc`` is ``.sync.aligned``: one whole warp runs it, and
  exactly one warp (two warps allocating would take the columns twice, two freeing would free
  them twice);
* that warp belongs to a task whose schedule makes the allocating (freeing) work, so the
  order the verifier proved is the order that runs (an allocation moved into another task
  would let its users run before it);
* an allocation or free the plan makes (a step that can run, :func:`ts_runtime.ptx_plan.can_run`)
  is in the PTX.

Each difference is ``TS-X105`` (an operation run by tasks the plan does not give it). A kernel
whose plan places no TMEM lifetime may allocate in its own code around ``run()`` (the
reference's way): those instructions are not the plan's and are not checked.
"""

from __future__ import annotations

from collections.abc import Iterable

from ts_ir import WARP_SIZE, KernelPlan, Step, WorkAttr
from ts_runtime.ptx_clc import Finding
from ts_runtime.ptx_plan import can_run
from ts_runtime.ptx_protocol import TmemOp

__all__ = ["check_tmem"]

_WORK = {"alloc": WorkAttr.TMEM_ALLOC, "dealloc": WorkAttr.TMEM_DEALLOC}
_WHAT = {"alloc": "allocates", "dealloc": "frees"}


def _planned(plan: KernelPlan, attr: WorkAttr) -> set[str]:
    """The tasks whose schedules make a work with ``attr`` that can run."""
    return {
        t.name
        for t in plan.tasks
        for node, chain in t.schedule.walk()
        if isinstance(node, Step) and node.attrs & attr and can_run(chain)
    }


def check_tmem(plan: KernelPlan, ops: Iterable[TmemOp]) -> list[Finding]:
    """Compare the PTX's TMEM allocation and free with the plan's (module docstring)."""
    ops = list(ops)
    out: list[Finding] = []
    for kind, attr in _WORK.items():
        planned = _planned(plan, attr)
        if not planned:
            continue  # the program's own TMEM (or none): not the plan's
        sites = [op for op in ops if op.kind == kind and op.threads]
        if not sites:
            out.append(
                Finding(
                    "TS-X105",
                    f"task(s) {', '.join(f'`{t}`' for t in sorted(planned))} "
                    f"{_WHAT[kind]} the kernel's TMEM in the plan, but the PTX has no "
                    f"tcgen05.{kind}",
                    task=", ".join(sorted(planned)),
                )
            )
        for op in sites:
            warps = sorted({t // WARP_SIZE for t in op.threads})
            tasks = [t for t in plan.tasks if any(w in t.warps for w in warps)]
            names = ", ".join(t.name for t in tasks)
            strangers = [t.name for t in tasks if t.name not in planned]
            whole = all(
                {w * WARP_SIZE + lane for lane in range(WARP_SIZE)} <= op.threads for w in warps
            )
            if strangers:
                out.append(
                    Finding(
                        "TS-X105",
                        f"`{op.instr.text.split()[0]}` is run by task(s) "
                        f"{', '.join(f'`{n}`' for n in strangers)}, whose schedule makes no "
                        f"work that {_WHAT[kind]} TMEM (the plan's: "
                        f"{', '.join(f'`{n}`' for n in sorted(planned))})",
                        task=", ".join(strangers),
                        line=op.instr.line,
                    )
                )
            elif len(warps) != 1 or not whole:
                out.append(
                    Finding(
                        "TS-X105",
                        f"`{op.instr.text.split()[0]}` is run by {len(op.threads)} thread(s) "
                        f"of warp(s) {warps}; a TMEM {kind} is one whole warp's",
                        task=names,
                        line=op.instr.line,
                    )
                )
            else:
                out.append(
                    Finding(
                        "",
                        f"task `{names}` {_WHAT[kind]} the TMEM in warp {warps[0]} "
                        f"(line {op.instr.line})",
                    )
                )
    return out
