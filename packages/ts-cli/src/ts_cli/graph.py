"""The resource graph as Graphviz DOT (Mermaid comes from :func:`ts_ir.render_mermaid`)."""

from __future__ import annotations

import json

from ts_ir import KernelPlan

__all__ = ["render_dot"]


def _quote(text: str) -> str:
    return json.dumps(text)


def render_dot(plan: KernelPlan) -> str:
    """Resources as boxes, tasks as ellipses; solid arrows for data, dashed for dependencies."""
    lines = [f"digraph {_quote(plan.name)} {{", "  rankdir=LR;", "  node [fontname=monospace];"]
    for r in plan.resources:
        label = f"{r.name}\\n{r.kind}"
        if r.pipeline is not None:
            label += f"\\n{r.pipeline.type.value} x{r.pipeline.stages}"
        lines.append(f'  {_quote("r:" + r.name)} [shape=box, label="{label}"];')
    for t in plan.tasks:
        label = f"{t.name}\\nwarps {t.warp_start}-{t.warp_end - 1}"
        if t.num_registers is not None:
            label += f", {t.num_registers} regs"
        lines.append(f'  {_quote("t:" + t.name)} [shape=ellipse, label="{label}"];')
        for dst in t.destinations:
            lines.append(f'  {_quote("t:" + t.name)} -> {_quote("r:" + dst)} [label="produces"];')
        for src in t.sources:
            lines.append(f'  {_quote("r:" + src)} -> {_quote("t:" + t.name)} [label="consumed"];')
    for e in plan.dependencies:
        lines.append(
            f"  {_quote('r:' + e.upstream)} -> {_quote('r:' + e.downstream)} [style=dashed];"
        )
    lines.append("}")
    return "\n".join(lines)
