"""Fixtures of the ts-cli tests: small kernel files written to a temporary folder."""

from __future__ import annotations

import os
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

KERNEL = """
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


class Seg:
    def length(self, work_tile_coord: Any) -> Any: ...


@schedule
def good_loader(ring, header):
    header.acquire(); header.fill(); header.commit()
    with domain_loop(Seg.length):
        ring.acquire(); ring.fill(); ring.commit()


@schedule
def bad_loader(ring, header):
    with domain_loop(Seg.length):
        ring.acquire(); ring.fill(); ring.commit()
    header.acquire(); header.fill(); header.commit()


@schedule
def writer(ring, header):
    header.wait(); header.drain(); header.release()
    with domain_loop(Seg.length):
        ring.wait(); ring.drain(); ring.release()


def _plan(loader):
    g = CooperativeGroupSpec("thread", 128)
    ring = Ring(name="ring", pipeline_config=PipelineSpec(PipelineType.AsyncAsync, 2, 0, g, g))
    header = Ring(name="header", pipeline_config=PipelineSpec(PipelineType.AsyncAsync, 1, 0, g, g))
    tasks = [TaskDeclaration([], [ring, header], 0, 4, loader(ring, header), name="loader"),
             TaskDeclaration([ring, header], [], 4, 4, writer(ring, header), name="writer")]
    return build_plan(tasks, {ring: [], header: []}, name="segments")


def kernel():
    return _plan(good_loader)


def broken():
    return _plan(bad_loader)


def not_a_plan():
    return 42
"""


@pytest.fixture
def kernel_file(tmp_path: Path) -> Path:
    path = tmp_path / "segments.py"
    path.write_text(textwrap.dedent(KERNEL))
    return path


# The DSL reads its dump folder once, when first imported in this process: keep its PTX out of
# the checkout (``ts compile`` without ``--ptx-dir`` would otherwise write into the cwd).
# A folder per process: pytest-xdist's workers inherit the environment, and two processes that
# keep PTX files of the same kernel name in one folder read each other's PTX.
if "PYTEST_XDIST_WORKER" in os.environ or "CUTE_DSL_DUMP_DIR" not in os.environ:
    os.environ["CUTE_DSL_DUMP_DIR"] = tempfile.mkdtemp(prefix="ts_cli_ptx_")


@pytest.fixture(autouse=True)
def _keep_dsl_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``ts compile`` sets the CuTe DSL's CUTE_DSL_* variables in-process; undo it per test.

    Each test runs in its own folder, so ``ts compile``'s default ``ts_ptx/`` lands there.
    """
    monkeypatch.chdir(tmp_path)
    saved = {k: v for k, v in os.environ.items() if k.startswith("CUTE_DSL_")}
    yield
    for name in [k for k in os.environ if k.startswith("CUTE_DSL_")]:
        del os.environ[name]
    os.environ.update(saved)
