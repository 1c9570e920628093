"""Readable renderings of the IR: schedule trees, per-task step tables and Mermaid graphs.

All output is plain ASCII-safe text (names are printed as given) meant for terminals, error
reports and documentation; none of it is parsed back.
"""

from __future__ import annotations

import re

from ts_ir.plan import KernelPlan, TaskSpec
from ts_ir.schedule import (
    UNKNOWN_LOCATION,
    DomainLoop,
    Node,
    Schedule,
    SourceLocation,
    Step,
    WorkTileLoop,
)

__all__ = ["render_mermaid", "render_plan_table", "render_schedule"]

_INDENT = "  "
_MERMAID_DIRECTIONS = ("LR", "RL", "TB", "TD", "BT")


def _at(location: SourceLocation) -> str:
    # Unknown locations would only add "<unknown>:0" noise to every line.
    return "" if location == UNKNOWN_LOCATION else f"  @ {location}"


def _step_text(step: Step) -> str:
    args = [f"{r.argument}<=#{r.source_step}.{r.output}" for r in step.inputs]
    args += [f"{name}={value!r}" for name, value in step.constants]
    call = f"({', '.join(args)})" if args else ""
    outs = f" -> {', '.join(step.outputs)}" if step.outputs else ""
    return f"#{step.id} {step.stage} {step.describe()}{call}{outs}"


def _render_nodes(body: tuple[Node, ...], depth: int, lines: list[str]) -> None:
    for node in body:
        pad = _INDENT * depth
        if isinstance(node, Step):
            lines.append(f"{pad}{_step_text(node)}{_at(node.location)}")
        else:
            lines.append(f"{pad}{node.describe()}{_at(node.location)}")
            _render_nodes(node.body, depth + 1, lines)


def render_schedule(schedule: Schedule) -> str:
    """Render a schedule as an indented tree, one line per node.

    Steps read ``#id <stage> resource.label(arg<=#src.output, const=value) -> outputs``; the
    stage is its short label (``ProdAcq->``, ``<-ConsWrk`` ...). Containers show their
    ``describe()``. Known source locations follow as ``  @ file:line``.
    """
    lines = [f"schedule {schedule.name}({', '.join(schedule.resources)}){_at(schedule.location)}"]
    _render_nodes(schedule.body, 1, lines)
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Plan table
# --------------------------------------------------------------------------------------------


def _task_cells(body: tuple[Node, ...], depth: int, cells: list[str]) -> None:
    for node in body:
        pad = _INDENT * depth
        if isinstance(node, Step):
            cells.append(f"{pad}#{node.id} {node.stage} {node.describe()}")
            continue
        if isinstance(node, DomainLoop):
            opener = f"for {node.describe()}:"
        elif isinstance(node, WorkTileLoop):
            opener = f"while {node.describe()}:"
        else:
            opener = f"if {node.guard.describe()}:"
        cells.append(pad + opener)
        _task_cells(node.body, depth + 1, cells)
        cells.append(f"{pad}end")


def _task_resources(task: TaskSpec) -> str:
    last = task.warp_end - 1
    warps = f"w{task.warp_start}" if task.num_warps == 1 else f"w{task.warp_start}-{last}"
    regs = "" if task.num_registers is None else f", {task.num_registers} regs"
    gate = "" if task.cta_rank is None else f", CTA {task.cta_rank} only"
    return warps + regs + gate


def render_plan_table(plan: KernelPlan) -> str:
    """Render the plan as a table with one column per task and one row per step.

    Each column lists its task's program top to bottom: steps as ``#id <stage>
    resource.label`` and structure markers (``while work_tile_loop(...):``, ``for
    domain_loop(...):``, ``if <guard>:``, ``end``) as cells of their own, indented by nesting
    depth. Shorter columns are padded with blanks.
    """
    if not plan.tasks:
        return f"kernel {plan.name}: no tasks"
    headers = [f"{t.name} ({_task_resources(t)})" for t in plan.tasks]
    columns: list[list[str]] = []
    for task in plan.tasks:
        cells: list[str] = []
        _task_cells(task.schedule.body, 0, cells)
        columns.append(cells)
    widths = [max(len(c) for c in (h, *col)) for h, col in zip(headers, columns, strict=True)]
    num_rows = max(len(col) for col in columns)

    def row(cells: list[str]) -> str:
        return " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    lines = [row(headers), "-+-".join("-" * w for w in widths)]
    for i in range(num_rows):
        lines.append(row([col[i] if i < len(col) else "" for col in columns]))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Mermaid
# --------------------------------------------------------------------------------------------


def _mermaid_id(prefix: str, index: int, name: str) -> str:
    # The index keeps ids unique even when two names sanitize to the same text.
    return f"{prefix}{index}_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"


def _mermaid_text(text: str) -> str:
    # Inside a quoted label only the quote itself needs an entity.
    return text.replace('"', "#quot;")


def render_mermaid(plan: KernelPlan, direction: str = "LR") -> str:
    """Render the resource graph of a plan as a Mermaid ``flowchart``.

    Resources are rectangles (name, kind and pipeline), tasks are stadiums (name and warps).
    Edges: ``task -->|produces| resource``, ``resource -->|consumed by| task`` and dependency
    edges ``upstream -.-> downstream``. Names referenced but not declared as resources still get
    a node, labelled "undeclared", so the graph shows the dangling reference.

    Args:
        plan: The kernel plan.
        direction: Flowchart direction: ``LR``, ``RL``, ``TB``, ``TD`` or ``BT``.

    Raises:
        ValueError: ``direction`` is not a Mermaid direction.
    """
    if direction not in _MERMAID_DIRECTIONS:
        raise ValueError(f"direction must be one of {', '.join(_MERMAID_DIRECTIONS)}")
    lines = [f"flowchart {direction}"]
    resource_ids: dict[str, str] = {}

    def resource_node(name: str, label: str) -> str:
        if name not in resource_ids:
            node_id = _mermaid_id("r", len(resource_ids), name)
            resource_ids[name] = node_id
            lines.append(f'    {node_id}["{_mermaid_text(label)}"]')
        return resource_ids[name]

    for r in plan.resources:
        parts = [r.name, r.kind]
        if r.pipeline is not None:
            parts.append(f"pipeline {r.pipeline.type.value} x{r.pipeline.stages} stages")
        if r.scheduler is not None:
            parts.append(f"{r.scheduler.value} scheduler")
        resource_node(r.name, "<br/>".join(parts))

    def ref(name: str) -> str:
        return resource_node(name, f"{name}<br/>undeclared")

    for i, t in enumerate(plan.tasks):
        task_id = _mermaid_id("t", i, t.name)
        label = _mermaid_text(f"{t.name}<br/>{_task_resources(t)}")
        lines.append(f'    {task_id}(["{label}"])')
        # ref() may declare a node, so resolve ids before writing the edge line.
        for dst in t.destinations:
            dst_id = ref(dst)
            lines.append(f"    {task_id} -->|produces| {dst_id}")
        for src in t.sources:
            src_id = ref(src)
            lines.append(f"    {src_id} -->|consumed by| {task_id}")
    for e in plan.dependencies:
        up, down = ref(e.upstream), ref(e.downstream)
        lines.append(f"    {up} -.-> {down}")
    return "\n".join(lines)
