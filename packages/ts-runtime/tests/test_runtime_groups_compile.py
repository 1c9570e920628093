"""Thread-fed pipeline groups compiled (sm_90a, CPU): per-member barriers, translation-checked.

A Fork of ``AsyncAsync`` rings: the producer's ``group.commit()`` is a commit of each member,
one arrival on each member's full barrier (``ts_codegen.groups``); the PTX's barrier protocol
is the expanded plan's (``Compiled.check()``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

cutlass = pytest.importorskip("cutlass")

import cutlass.cute as cute  # noqa: E402 (after the skip)
from cutlass import Int32  # noqa: E402

from ts_ir import CooperativeGroupSpec, PipelineGroupMode, PipelineSpec, PipelineType  # noqa: E402
from ts_runtime import Task  # noqa: E402
from ts_runtime.staged import Kernel, KernelContext, Tasks  # noqa: E402
from ts_trace import (  # noqa: E402
    MemoryResource,
    PipelineGroup,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
)

# The smoke subset (the oldest Python runs only it): one kernel of each kind.
pytestmark = pytest.mark.smoke


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    @producer_work
    def fill(self, stage_info: Any) -> None:
        """Nothing to write: the protocol is what is checked."""

    @consumer_work
    def drain(self, stage_info: Any) -> None:
        """Nothing to read."""


def _fork() -> Kernel:
    def tasks(k: KernelContext, n: Any) -> Tasks:
        warp = CooperativeGroupSpec("thread", 32)
        a, b = (
            Ring(
                name=name,
                pipeline_config=PipelineSpec(PipelineType.AsyncAsync, 2, 0, warp, warp),
            )
            for name in ("fa", "fb")
        )
        g = PipelineGroup(name="g", members=[a, b], mode=PipelineGroupMode.Fork)

        @schedule
        def produce(grp: Any) -> None:
            with domain_loop(n):
                grp.fa.acquire()
                grp.fb.acquire()
                grp.fa.fill()
                grp.commit()

        @schedule
        def consume(r: Any) -> None:
            with domain_loop(n):
                r.wait()
                r.drain()
                r.release()

        return Tasks(
            [
                Task([], [a, b], 0, 1, schedule=produce(g), name="produce"),
                Task([a], [], 1, 1, schedule=consume(a), name="use_a"),
                Task([b], [], 2, 1, schedule=consume(b), name="use_b"),
            ],
            {a: [], b: []},
        )

    kernel = Kernel(tasks, name="thread_fork")

    @kernel.launcher
    @cute.jit
    def launch(n: Int32) -> None:
        kernel.launch(n, grid=(1, 1, 1))

    return kernel


def test_thread_fork_commits_each_member_and_passes_translation_validation() -> None:
    kernel = _fork()
    assert kernel.verify().ok, kernel.verify().as_text()
    compiled = kernel.compile(Int32(4))
    report = compiled.check()
    assert report.ok, report.errors
    counts = compiled.counts()
    arrives = sum(v for op, v in counts.items() if op.startswith("mbarrier.arrive"))
    # Two full-barrier arrivals from the group commit, one empty-barrier arrival per consumer.
    assert arrives == 4, counts
    assert not any("expect_tx" in op for op in counts)
