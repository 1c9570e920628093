"""Tests of ts_ir.render."""

from __future__ import annotations

import dataclasses
import re

import pytest

from ts_ir import (
    DependencyEdge,
    KernelPlan,
    ResourceSpec,
    Schedule,
    TaskSpec,
    TileSchedulerType,
    render_mermaid,
    render_plan_table,
    render_schedule,
)


def test_render_schedule_producer(producer_schedule: Schedule) -> None:
    assert render_schedule(producer_schedule).splitlines() == [
        "schedule load_schedule(wq, ab)  @ gemm.py:7",
        "  work_tile_loop(wq)  @ gemm.py:8",
        "    domain_loop(0, <K>, 1)  @ gemm.py:9",
        "      #0 ProdAcq-> ab.acquire  @ gemm.py:10",
        "      #1 ProdWrk-> ab.copy  @ gemm.py:11",
        "      #2 ProdCmt-> ab.commit  @ gemm.py:12",
    ]


def test_render_schedule_routes_outputs_and_guards(consumer_schedule: Schedule) -> None:
    lines = render_schedule(consumer_schedule).splitlines()
    assert lines[0] == "schedule mma_schedule(wq, ab, acc)"
    assert "    domain_loop(0, 8, 1, unroll=2)" in lines
    assert "      when(first_iter)" in lines
    assert "        #3 ProdAux-> acc.zero" in lines
    assert "      #4 <-ConsWai ab.wait  @ gemm.py:21" in lines
    assert "      #5 <-ConsWrk ab.fetch -> tile" in lines
    assert "      #6 ProdWrk-> acc.mma(a<=#5.tile, scale=1.5)" in lines
    assert lines.index("      when(last_iter)") + 1 == lines.index("        #8 ProdWrk-> acc.store")
    assert len(lines) == 11


def _columns(table: str) -> list[list[str]]:
    rows = table.splitlines()
    header, rule, body = rows[0], rows[1], rows[2:]
    split = rule.index("+")
    # Every content row shares the column boundary drawn by the rule.
    for row in [header, *body]:
        if len(row) > split:
            assert row[split - 1 : split + 2] == " | ", row
    cols: list[list[str]] = [[], []]
    for row in [header, *body]:
        cols[0].append(row[: split - 1].rstrip())
        cols[1].append(row[split + 2 :].rstrip())
    return cols


def test_plan_table(sample_plan: KernelPlan) -> None:
    table = render_plan_table(sample_plan)
    load, mma = _columns(table)
    assert load[0] == "load (w4, 40 regs)"
    assert mma[0] == "mma (w0-3, 232 regs)"
    assert load[1:] == [
        "while work_tile_loop(wq):",
        "  for domain_loop(0, <K>, 1):",
        "    #0 ProdAcq-> ab.acquire",
        "    #1 ProdWrk-> ab.copy",
        "    #2 ProdCmt-> ab.commit",
        "  end",
        "end",
        *[""] * 7,
    ]
    assert mma[1:] == [
        "while work_tile_loop(wq):",
        "  for domain_loop(0, 8, 1, unroll=2):",
        "    if first_iter:",
        "      #3 ProdAux-> acc.zero",
        "    end",
        "    #4 <-ConsWai ab.wait",
        "    #5 <-ConsWrk ab.fetch",
        "    #6 ProdWrk-> acc.mma",
        "    #7 <-ConsRel ab.release",
        "    if last_iter:",
        "      #8 ProdWrk-> acc.store",
        "    end",
        "  end",
        "end",
    ]
    for step_id in range(9):
        assert table.count(f"#{step_id} ") == 1
    assert table.isascii()
    assert all(line == line.rstrip() for line in table.splitlines())


def test_plan_table_widths_fit_content(sample_plan: KernelPlan) -> None:
    rule = render_plan_table(sample_plan).splitlines()[1]
    left, right = rule.split("-+-")
    assert len(left) == len("  for domain_loop(0, <K>, 1):")
    assert len(right) == len("  for domain_loop(0, 8, 1, unroll=2):")


def test_plan_table_default_registers_and_no_tasks(sample_plan: KernelPlan) -> None:
    task = dataclasses.replace(sample_plan.tasks[0], num_registers=None, num_warps=2)
    table = render_plan_table(dataclasses.replace(sample_plan, tasks=(task,)))
    assert table.splitlines()[0] == "load (w4-5)"
    assert render_plan_table(dataclasses.replace(sample_plan, tasks=())) == "kernel gemm: no tasks"


def test_plan_table_and_mermaid_show_cta_gates_and_schedulers(sample_plan: KernelPlan) -> None:
    task = dataclasses.replace(sample_plan.tasks[0], cta_rank=0)
    wq = dataclasses.replace(
        sample_plan.resource("wq"), scheduler=TileSchedulerType.StaticPersistent
    )
    plan = dataclasses.replace(
        sample_plan,
        tasks=(task, *sample_plan.tasks[1:]),
        resources=(wq, *sample_plan.resources[1:]),
    )
    assert render_plan_table(plan).splitlines()[0].startswith("load (w4, 40 regs, CTA 0 only) |")
    lines = [line.strip() for line in render_mermaid(plan).splitlines()]
    assert 'r0_wq["wq<br/>WorkQueue<br/>StaticPersistent scheduler"]' in lines
    assert 't0_load(["load<br/>w4, 40 regs, CTA 0 only"])' in lines
    assert 't1_mma(["mma<br/>w0-3, 232 regs"])' in lines


_ID = r"[A-Za-z_][A-Za-z0-9_]*"


def test_mermaid(sample_plan: KernelPlan) -> None:
    text = render_mermaid(sample_plan)
    lines = [line.strip() for line in text.splitlines()]
    assert lines[0] == "flowchart LR"
    assert 'r1_ab["ab<br/>SmemBuffer<br/>pipeline TmaAsync x4 stages"]' in lines
    assert 'r0_wq["wq<br/>WorkQueue"]' in lines
    assert 't0_load(["load<br/>w4, 40 regs"])' in lines
    assert 't1_mma(["mma<br/>w0-3, 232 regs"])' in lines
    edges = [line for line in lines if "--" in line or "-.->" in line]
    assert sorted(edges) == sorted(
        [
            "t0_load -->|produces| r1_ab",
            "r0_wq -->|consumed by| t0_load",
            "t1_mma -->|produces| r2_acc",
            "r0_wq -->|consumed by| t1_mma",
            "r1_ab -->|consumed by| t1_mma",
            "r1_ab -.-> r2_acc",
        ]
    )
    for line in edges:
        for node_id in re.split(r"\s+-->\|[^|]*\|\s+|\s+-\.->\s+", line):
            assert re.fullmatch(_ID, node_id), node_id


def test_mermaid_sanitizes_and_keeps_ids_unique(sample_plan: KernelPlan) -> None:
    resources = (ResourceSpec('a.b "x"'), ResourceSpec('a-b "x"'), ResourceSpec("9 lives"))
    task = TaskSpec(
        "my task!", 0, 1, None, ('a.b "x"',), ("9 lives", "ghost"), sample_plan.tasks[0].schedule
    )
    plan = KernelPlan("k", resources, (task,), (DependencyEdge('a-b "x"', "9 lives"),))
    text = render_mermaid(plan, direction="TB")
    assert text.startswith("flowchart TB\n")
    decls = re.findall(r"^\s+(\S+?)(?:\[\"|\(\[\")", text, flags=re.MULTILINE)
    assert len(decls) == len(set(decls)) == 5
    for node_id in decls:
        assert re.fullmatch(_ID, node_id), node_id
    assert '"a.b #quot;x#quot;<br/>MemoryResource"' in text
    assert "ghost<br/>undeclared" in text
    assert text.index("ghost<br/>undeclared") < text.index("-->|produces| r3_ghost")


def test_mermaid_rejects_bad_direction(sample_plan: KernelPlan) -> None:
    with pytest.raises(ValueError, match="direction must be one of"):
        render_mermaid(sample_plan, direction="up")


def test_stages_render_as_text(sample_plan: KernelPlan) -> None:
    from ts_ir import render_plan_table, render_schedule

    assert sample_plan.as_text() == render_plan_table(sample_plan)
    schedule = sample_plan.tasks[0].schedule
    assert schedule.as_text() == render_schedule(schedule)
