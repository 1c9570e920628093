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


def _never_firing_kernel() -> Kernel:
    """fuzz22 of ``bench/fuzz_gpu.py`` (seed 0), reduced: ring ``late``'s only loop runs once,
    under ``every(3, start=1)``, which fires on no iteration of it."""

    def tasks(k: KernelContext, n: Any) -> Tasks:
        group = CooperativeGroupSpec("thread", 32)
        ring = Ring(
            name="ring",
            pipeline_config=PipelineSpec(PipelineType.AsyncAsync, 2, 0, group, group),
        )
        late = Ring(
            name="late",
            pipeline_config=PipelineSpec(PipelineType.AsyncAsync, 3, 0, group, group),
        )

        @schedule
        def produce(r: Any, s: Any) -> None:
            with domain_loop(n):
                r.acquire()
                r.fill()
                r.commit()
            with domain_loop(1) as loop, loop.every(3, start=1):
                s.acquire()
                s.fill()
                s.commit()

        @schedule
        def consume(r: Any, s: Any) -> None:
            with domain_loop(n):
                r.wait()
                r.drain()
                r.release()
            with domain_loop(1) as loop, loop.every(3, start=1):
                s.wait()
                s.drain()
                s.release()

        return Tasks(
            [
                Task([], [ring, late], 0, 1, schedule=produce(ring, late), name="produce"),
                Task([ring, late], [], 1, 1, schedule=consume(ring, late), name="consume"),
            ],
            {ring: [], late: []},
        )

    kernel = Kernel(tasks, name="never_firing")

    @kernel.launcher
    @cute.jit
    def launch(n: Int32) -> None:
        kernel.launch(n, grid=(1, 1, 1))

    return kernel


def test_a_ring_whose_steps_never_run_needs_no_arrivals() -> None:
    compiled = _never_firing_kernel().compile(cutlass.Int32(8))
    report = compiled.check()
    assert report.ok, report.as_text()
    # The compiler folded ring `late`'s brackets away: its barriers are initialised, and no
    # arrive or wait acts on them (what the validator must not call a missing signal).
    late = next(r for r in report.rings if r.resource == "late")
    assert late.stages == 3
    assert not any("`late`" in line and "arrives" in line for line in report.checked)
