"""A deliberately broken kernel, and how the debug mode turns its hang into a message.

The producer task forgets ``commit()``, so the consumer's first ``wait()`` never returns. The
verifier catches this before anything is compiled (TS-V101); here verification is turned off
(``skip_validation=True``) to show the runtime safety net: with
``TaskManager(debug_bounded_waits=True)`` (or ``Task(debug_print=True)`` for one task) every
blocking wait first polls its barrier a bounded number of times, and when it never flips the
thread prints the task, resource, stage and phase and executes ``trap`` instead of hanging the
GPU.

Usage::

    python examples/hopper/debug_hang.py --compile-only   # CPU: the PTX has the probe + trap
    python examples/hopper/debug_hang.py                  # GPU: traps with the message
"""

from __future__ import annotations

import dataclasses
import os
import sys
import warnings
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe

from task_scheduling import consumer_work, domain_loop, producer_work, schedule
from task_scheduling.harness import ExampleCLI, ptx_of
from task_scheduling.resources import MemoryResource, PipelineConfig
from task_scheduling.schedule_builder import ResourceProxy
from task_scheduling.task import Task
from task_scheduling.task_manager import TaskManager

LIMIT_NOTE = "TS debug: task `consume` waits forever on resource `ring`"


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    """A 2-stage ring whose stages carry nothing (the protocol is what matters here)."""

    @producer_work
    def fill(self, stage_info: Any) -> None:
        """Nothing to write."""

    @consumer_work
    def drain(self, stage_info: Any) -> None:
        """Nothing to read."""


@schedule
def produce(ring: ResourceProxy) -> None:
    """Broken: the stage is filled but never committed."""
    with domain_loop(4):
        ring.acquire()
        ring.fill()


@schedule
def consume(ring: ResourceProxy) -> None:
    """Waits for stages that never become full."""
    with domain_loop(4):
        ring.wait()
        ring.drain()
        ring.release()


def build(debug: bool) -> TaskManager:
    """The broken kernel's manager, verification off (its errors become warnings)."""
    ring = Ring(
        name="ring",
        pipeline_config=PipelineConfig.create_async_async_pipeline_cfg(
            2,
            cpipe.CooperativeGroup(cpipe.Agent.Thread, 32),
            cpipe.CooperativeGroup(cpipe.Agent.Thread, 32),
        ),
    )
    tasks = [
        Task([], [ring], 0, 1, schedule=produce(ring), name="produce"),
        Task([ring], [], 1, 1, schedule=consume(ring), name="consume"),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TaskManager(
            tasks, {ring: []}, skip_validation=True, debug_bounded_waits=debug, name="debug_hang"
        )


def _launcher(debug: bool) -> Any:
    @cute.kernel
    def kernel() -> None:
        tm = build(debug)
        tm.setup_resources_and_tasks()
        tm.run()

    @cute.jit
    def launch(dummy: cutlass.Int32) -> None:
        kernel().launch(grid=(1, 1, 1), block=(64, 1, 1))

    return launch


def compile_only() -> dict[str, Any]:
    """Compile with and without the debug mode; report what the PTX has."""
    out: dict[str, Any] = {"example": "debug_hang"}
    for debug in (False, True):
        ptx = ptx_of(_launcher(debug), cutlass.Int32(0))
        out["debug" if debug else "plain"] = {
            "trap": ptx.count("trap;"),
            "vprintf": ptx.count("vprintf"),
        }
    return out


def run_on_gpu() -> dict[str, Any]:
    """Run the debug build: it must trap (not hang) and print the message."""
    compiled = cute.compile(_launcher(True), cutlass.Int32(0))
    import torch

    try:
        compiled(cutlass.Int32(0))
        torch.cuda.synchronize()
        trapped = False
    except Exception as exc:  # the trap surfaces as a CUDA launch failure
        trapped = True
        print(f"launch failed as expected: {type(exc).__name__}", file=sys.stderr)
    return {"example": "debug_hang", "trapped": trapped}


def main(argv: list[str] | None = None) -> int:
    cli = ExampleCLI(__doc__, __file__, iters=None)
    cli.parse(argv)
    return cli.run(
        compile_only,
        run_on_gpu,
        compile_ok=lambda out: bool(out["debug"]["trap"] and not out["plain"]["trap"]),
        gpu_ok=lambda out: bool(out["trapped"]),
    )


if __name__ == "__main__":
    sys.exit(main())
