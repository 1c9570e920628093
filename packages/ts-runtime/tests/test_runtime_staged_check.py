"""``Compiled.check()``: translation validation of a staged kernel's PTX against its plan."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

cutlass = pytest.importorskip("cutlass")

import cutlass.cute as cute  # noqa: E402 (after the skip)
from cutlass import Int32  # noqa: E402

from ts_ir import CooperativeGroupSpec, PipelineSpec, PipelineType  # noqa: E402
from ts_runtime import Task  # noqa: E402
from ts_runtime.errors import RuntimeConfigError  # noqa: E402
from ts_runtime.staged import Compiled, Kernel, KernelContext, Tasks  # noqa: E402
from ts_trace import (  # noqa: E402
    MemoryResource,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
)


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    @producer_work
    def fill(self, stage_info: Any) -> None:
        """Nothing to write: the protocol is what is checked."""

    @consumer_work
    def drain(self, stage_info: Any) -> None:
        """Nothing to read."""


def _kernel(stages: int) -> Kernel:
    def ring_tasks(k: KernelContext, n: Any) -> Tasks:
        group = CooperativeGroupSpec("thread", 32)
        ring = Ring(
            name="ring",
            pipeline_config=PipelineSpec(PipelineType.AsyncAsync, stages, 0, group, group),
        )

        @schedule
        def produce(r: Any) -> None:
            with domain_loop(n):
                r.acquire()
                r.fill()
                r.commit()

        @schedule
        def consume(r: Any) -> None:
            with domain_loop(n):
                r.wait()
                r.drain()
                r.release()

        return Tasks(
            [
                Task([], [ring], 0, 1, schedule=produce(ring), name="produce"),
                Task([ring], [], 1, 1, schedule=consume(ring), name="consume"),
            ],
            {ring: []},
        )

    kernel = Kernel(ring_tasks, name=f"ring{stages}")

    @kernel.launcher
    @cute.jit
    def launch(n: Int32) -> None:
        kernel.launch(n, grid=(1, 1, 1))

    return kernel


def test_check_compares_the_ptx_with_the_plan_it_was_compiled_from() -> None:
    two, three = _kernel(2), _kernel(3)
    compiled = two.compile(cutlass.Int32(8))
    assert compiled.plan is two.plan().plan
    report = compiled.check()
    assert report.ok, report.as_text()
    # The same PTX against another plan (3 stages, not 2): the barriers differ.
    other = dataclasses.replace(compiled, plan=three.plan().plan)
    assert not other.check().ok


def test_check_needs_the_plan() -> None:
    compiled = _kernel(2).compile(cutlass.Int32(8))
    with pytest.raises(RuntimeConfigError, match="carries no plan"):
        Compiled(compiled.kernel).check()
