"""Translation validation of the register budgets (``TS-X106``): ``setmaxnreg`` per warpgroup.

A task's ``num_registers`` is a promise about the warpgroup it runs in: every ``setmaxnreg``
run by a warp of that warpgroup must set that count, in the direction the launch budget implies
(``.inc`` above it, ``.dec`` below), and one such instruction must be run by all four of the
warpgroup's warps (``setmaxnreg`` is warpgroup-wide: a warp left out would keep the launch
budget). A warpgroup whose tasks declare no budget must run none.
"""

from __future__ import annotations

from ts_ir import WARP_SIZE, WARPGROUP_WARPS, KernelPlan
from ts_runtime.ptx_clc import Finding
from ts_runtime.ptx_protocol import Protocol

__all__ = ["check_registers"]


def check_registers(plan: KernelPlan, protocol: Protocol) -> list[Finding]:
    """The ``TS-X106`` differences, and a line of what held per warpgroup with a budget."""
    found: list[Finding] = []
    threads = protocol.threads
    baseline = min(256, (65536 // max(threads, 1)) // 8 * 8)
    groups = (threads // WARP_SIZE + WARPGROUP_WARPS - 1) // WARPGROUP_WARPS
    for g in range(groups):
        warps = set(range(g * WARPGROUP_WARPS, (g + 1) * WARPGROUP_WARPS))
        tasks = [t for t in plan.tasks if warps & set(t.warps)]
        want = {t.num_registers for t in tasks if t.num_registers is not None}
        ops = [r for r in protocol.registers if {t // WARP_SIZE for t in r.threads} & warps]
        names = ", ".join(f"`{t.name}`" for t in tasks) or "no task"
        if not want:
            found += [
                Finding(
                    "TS-X106",
                    f"warpgroup {g} ({names}) runs `{r.instr.text}`, but its tasks declare no "
                    "register budget",
                    task=names,
                    line=r.instr.line,
                )
                for r in ops
            ]
            continue
        n = want.pop()
        good = [r for r in ops if r.count == n and r.increase == (n > baseline)]
        found += [
            Finding(
                "TS-X106",
                f"warpgroup {g} ({names}) runs `{r.instr.text}`; its tasks declare {n} "
                f"registers ({'.inc' if n > baseline else '.dec'} from the launch budget of "
                f"{baseline})",
                task=names,
                line=r.instr.line,
            )
            for r in ops
            if r not in good
        ]
        full = [r for r in good if {t // WARP_SIZE for t in r.threads} >= warps]
        if not full:
            found.append(
                Finding(
                    "TS-X106",
                    f"warpgroup {g} ({names}): no setmaxnreg {n} is run by all four of its warps",
                    task=names,
                    line=ops[0].instr.line if ops else 0,
                )
            )
        else:
            found.append(Finding("", f"warpgroup {g}: setmaxnreg {n} (line {full[0].instr.line})"))
    return found
