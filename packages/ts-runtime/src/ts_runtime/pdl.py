"""Programmatic dependent launch (PDL): ``PdlWaitBarrier`` and ``PdlLaunchBarrier``.

Two kernels on one stream normally run one after the other. Launched with PDL
(``kernel.launch(..., use_pdl=True)``), the second may start while the first still runs, so its
prologue (barrier setup, descriptor prefetch, the loads of data the first kernel does not write)
overlaps the first one's tail. Two barrier resources say where the kernels meet:

* :class:`PdlWaitBarrier` — ``wait_griddep()`` runs ``griddepcontrol.wait``: the task blocks
  until the previous kernel has finished and its writes are visible. List it as an upstream of
  every resource made from the previous kernel's output (``{smem_a: [gmem_a, pdl_wait]}``);
  ts-verify then requires the wait before every read of that data in the tasks that make it
  (TS-V230).
* :class:`PdlLaunchBarrier` — ``launch_griddep()`` runs ``griddepcontrol.launch_dependents``:
  the next kernel may start launching once every CTA has triggered (or exited). It only moves
  the next kernel's start earlier; ts-verify warns when it runs more than once per CTA or only
  on some paths (TS-V231).

Both are barriers (``is_barrier=True``): no payload, no pipeline; the work calls stand alone in
a schedule, outside any bracket. They run on Hopper (sm_90a) and Blackwell alike.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ts_ir import KernelPlan, WorkAttr
from ts_runtime._arguments import at_line
from ts_runtime.errors import RuntimeConfigError
from ts_trace import MemoryResource, consumer_work, producer_work

__all__ = [
    "PDL_BARRIER_TYPES",
    "PdlLaunchBarrier",
    "PdlWaitBarrier",
    "check_pdl_launch",
    "waits_for_grid",
]


@dataclasses.dataclass(kw_only=True)
class PdlWaitBarrier(MemoryResource):
    """The grid-dependency wait of a kernel launched with PDL (a source of the waiting task).

    Example::

        pdl_wait = PdlWaitBarrier(name="pdl_wait")
        ...
        @schedule
        def load(src, ring, pdl_wait):
            pdl_wait.wait_griddep()          # before the first read of src
            with domain_loop(...):
                ...
        Task([src, pdl_wait], [ring], ...)   # graph: {ring: [src, pdl_wait], ...}
    """

    is_barrier: bool = True

    @consumer_work(work_attrs=WorkAttr.GRID_WAIT)
    def wait_griddep(self, stage_info: Any) -> None:
        """``griddepcontrol.wait``: wait for the previous kernel's grid and its memory."""
        from ts_codegen.dsl.launch import grid_dependency_wait

        grid_dependency_wait()


@dataclasses.dataclass(kw_only=True)
class PdlLaunchBarrier(MemoryResource):
    """The trigger that lets the next kernel start early (a destination of the triggering task).

    Call ``launch_griddep()`` once, after the task's last work that the next kernel need not
    wait for (its grid wait still waits for all of this kernel).
    """

    is_barrier: bool = True

    @producer_work(work_attrs=WorkAttr.GRID_LAUNCH)
    def launch_griddep(self, stage_info: Any) -> None:
        """``griddepcontrol.launch_dependents``: the next grid may start launching."""
        from ts_codegen.dsl.launch import launch_dependents

        launch_dependents()


PDL_BARRIER_TYPES: tuple[type[MemoryResource], ...] = (PdlWaitBarrier, PdlLaunchBarrier)
"""The PDL barrier classes, for ``isinstance`` checks."""


def waits_for_grid(plan: KernelPlan) -> bool:
    """True when some task of ``plan`` runs a grid-dependency wait (``WorkAttr.GRID_WAIT``)."""
    return any(
        s.is_work and s.attrs & WorkAttr.GRID_WAIT for t in plan.tasks for s in t.schedule.steps()
    )


def check_pdl_launch(kernel: str, plan: KernelPlan) -> None:
    """Refuse ``use_pdl=True`` for a kernel that never waits for the previous grid.

    Launched with PDL, such a kernel runs alongside the previous kernel with nothing ordering
    them: it may read that kernel's output before it is written, or overwrite what it still
    reads.

    Raises:
        RuntimeConfigError: When no task of ``plan`` runs a grid-dependency wait.
    """
    if not waits_for_grid(plan):
        raise RuntimeConfigError(
            at_line(
                f"Kernel `{kernel}`.launch(use_pdl=True): no task of the kernel waits for the "
                "previous kernel (no PdlWaitBarrier.wait_griddep() in any schedule), so with "
                "PDL it would run unordered with the kernel before it on the stream"
            ),
            fix="add a PdlWaitBarrier to the tasks that read the previous kernel's output and "
            "call wait_griddep() before their first read, or launch without use_pdl",
        )
