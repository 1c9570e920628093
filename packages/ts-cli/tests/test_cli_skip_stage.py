"""A schedule with ``skip_stage()`` shown, verified and drawn by the CLI."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from ts_cli import main

TURNS = """
import dataclasses
from typing import Any
from ts_ir import CooperativeGroupSpec, PipelineSpec, PipelineType
from ts_trace import (MemoryResource, TaskDeclaration, build_plan, consumer_work, domain_loop,
                      producer_work, schedule)


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    @producer_work
    def fill(self, stage_info: Any) -> None: ...

    @consumer_work
    def drain(self, stage_info: Any) -> None: ...


@schedule
def loader(ring):
    with domain_loop(4):
        ring.acquire(); ring.fill(); ring.commit()


@schedule
def even(ring):
    with domain_loop(2):
        ring.wait(); ring.drain(); ring.release(); ring.skip_stage()


@schedule
def odd(ring):
    with domain_loop(2):
        ring.skip_stage(); ring.wait(); ring.drain(); ring.release()


def kernel():
    g = CooperativeGroupSpec("thread", 128)
    ring = Ring(name="ring", pipeline_config=PipelineSpec(PipelineType.AsyncAsync, 2, 0, g, g))
    tasks = [TaskDeclaration([], [ring], 0, 4, loader(ring), name="loader"),
             TaskDeclaration([ring], [], 4, 4, even(ring), name="even"),
             TaskDeclaration([ring], [], 8, 4, odd(ring), name="odd")]
    return build_plan(tasks, {ring: []}, name="turns")
"""


@pytest.fixture
def turns_file(tmp_path: Path) -> Path:
    path = tmp_path / "turns.py"
    path.write_text(textwrap.dedent(TURNS))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_show_names_the_skips(capsys: pytest.CaptureFixture[str], turns_file: Path) -> None:
    code, out = run(capsys, "show", str(turns_file))
    assert code == 0
    assert out.count("<-ConsSkip ring.skip_stage") == 2  # one per consumer task


def test_verify(capsys: pytest.CaptureFixture[str], turns_file: Path) -> None:
    code, out = run(capsys, "verify", str(turns_file))
    assert code == 0, out
    assert out.startswith("turns: verified")


def test_timeline_draws_skips_pale(
    capsys: pytest.CaptureFixture[str], turns_file: Path, tmp_path: Path
) -> None:
    svg = tmp_path / "turns.svg"
    code, out = run(capsys, "timeline", str(turns_file), "-o", str(svg))
    assert code == 0, out
    text = svg.read_text()
    # Each consumer skips the other's two stages: the odd stage 1 of each round, the even 0.
    labels = re.findall(r'fill-opacity="([\d.]+)"/><text[^>]*>ring</text><text[^>]*>([^<]*)<', text)
    skips = [label for opacity, label in labels if opacity == "0.4"]
    assert sorted(skips) == ["skip s0", "skip s0", "skip s1", "skip s1"]
    assert all(opacity == "0.85" for opacity, label in labels if not label.startswith("skip"))
