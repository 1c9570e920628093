"""``Task``: a contiguous warp range, the resources it reads and writes, and one schedule.

A task is built inside the ``@cute.kernel`` (or on the host, to plan and verify without a
GPU)::

    sched = copy_schedule(src, dst)                 # traced ts_ir.Schedule
    task = Task([src], [dst], 0, 8, schedule=sched, name="copy")

Loop bounds that are DSL values at trace time (``domain_loop(start, n, stride)``) are kept and
handed to the lowering. A bound given as a task method accessed on the class
(``domain_loop(MyTask.get_domain)``) is resolved per CTA by calling that method on the task
with the work-tile coordinate (the block index for non-persistent tasks); override
:meth:`Task.get_domain` in a subclass for that.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any

from ts_ir import (
    UNKNOWN_LOCATION,
    ConstBound,
    DomainLoop,
    DynamicBound,
    RuntimeBound,
    Schedule,
    SourceLocation,
    iter_nodes,
)
from ts_runtime import _bounds
from ts_runtime._arguments import at_line
from ts_runtime.errors import TaskDeclarationError
from ts_trace import MemoryResource, TaskDeclaration, resource_name

__all__ = [
    "MAX_CLUSTER_CTAS",
    "MAX_REGISTERS",
    "MAX_WARPS",
    "MIN_REGISTERS",
    "Task",
    "user_location",
]

MIN_REGISTERS = 24
"""Smallest ``setmaxnreg`` count the hardware accepts."""

MAX_REGISTERS = 256
"""Largest ``setmaxnreg`` count."""

MAX_WARPS = 32
"""Warps in a CTA at most (1024 threads)."""

MAX_CLUSTER_CTAS = 16
"""CTAs in a thread-block cluster at most (16 with the non-portable cluster size)."""


def _uncalled_hint(value: object) -> str:
    if callable(value) and hasattr(value, "__wrapped__"):
        fn = getattr(value, "__name__", "the schedule")
        return f": `{fn}` is the @schedule function itself, passed without calling it"
    return f" ({type(value).__name__})"


_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))


def _is_internal(frame: FrameType) -> bool:
    filename = os.path.abspath(frame.f_code.co_filename)
    return filename.startswith(_RUNTIME_DIR + os.sep)


def user_location(skip: int = 1) -> SourceLocation:
    """The innermost stack frame outside ts-runtime: the user's line."""
    import linecache

    frame: FrameType | None = sys._getframe(skip)
    while frame is not None and _is_internal(frame):
        frame = frame.f_back
    if frame is None:
        return UNKNOWN_LOCATION
    filename, line = frame.f_code.co_filename, frame.f_lineno
    text = linecache.getline(filename, line).strip()
    return SourceLocation(filename, line, text, frame.f_code.co_name)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Task:
    """Binds the warps ``[warp_idx, warp_idx + num_warps)`` to resources and one schedule.

    Args:
        src_resources: Resources the task consumes from.
        dst_resources: Resources the task produces into.
        warp_idx: First warp of the task (a Python int).
        num_warps: Number of warps.
        schedule: The traced schedule (call the ``@schedule`` function with the resources).
        num_registers: ``setmaxnreg`` target per thread (24..256, a multiple of 8), or None.
        name: Task name ("" means the schedule's name).
        debug_print: Print the task's schedule when it is lowered, and lower its blocking
            waits as bounded waits that trap with a message (see ``TaskManager``).
        run_only_on_cta_id: Run the task only on this CTA rank of its cluster (rank 0 without
            clusters). Every task that shares a pipelined resource with it must be restricted
            to the same rank (``ts_verify`` checks it, TS-V250).

    Raises:
        TaskDeclarationError: A warp range, register count or schedule that cannot work.
    """

    def __init__(
        self,
        src_resources: Sequence[MemoryResource],
        dst_resources: Sequence[MemoryResource],
        warp_idx: int,
        num_warps: int,
        *,
        schedule: Schedule,
        num_registers: int | None = None,
        name: str = "",
        debug_print: bool = False,
        run_only_on_cta_id: int | None = None,
    ) -> None:
        self.location = user_location()
        if not isinstance(name, str):
            raise TaskDeclarationError(
                at_line(f"Task: name={name!r:.60} must be a str, got {type(name).__name__}"),
                fix="pass name='loader' (or leave it '' for the schedule's name)",
            )
        if not isinstance(schedule, Schedule):
            raise TaskDeclarationError(
                at_line(
                    f"Task {name or '?'}: schedule={schedule!r:.60} is not a traced schedule"
                    + _uncalled_hint(schedule)
                ),
                task=name,
                fix="pass schedule=my_schedule(res_a, res_b), the result of calling the "
                "@schedule function with the task's resources",
            )
        self.name = name or schedule.name
        where = f"task `{self.name}` ({self.location.file}:{self.location.line})"
        if not _is_int(warp_idx) or not 0 <= warp_idx < MAX_WARPS:
            raise TaskDeclarationError(
                f"{where}: warp_idx={warp_idx!r:.40} must be a Python int in [0, {MAX_WARPS - 1}]"
                " (warp ranges are fixed at compile time; a CTA has at most 32 warps)",
                task=self.name,
            )
        if not _is_int(num_warps) or not 1 <= num_warps <= MAX_WARPS - warp_idx:
            raise TaskDeclarationError(
                f"{where}: num_warps={num_warps!r:.40} must be a Python int in "
                f"[1, {MAX_WARPS - warp_idx}] (warps {warp_idx}.. of a CTA of at most "
                f"{MAX_WARPS} warps)",
                task=self.name,
            )
        if num_registers is not None and (
            not _is_int(num_registers)
            or not MIN_REGISTERS <= num_registers <= MAX_REGISTERS
            or num_registers % 8
        ):
            raise TaskDeclarationError(
                f"{where}: num_registers={num_registers!r} is not a setmaxnreg count",
                task=self.name,
                fix=f"use a multiple of 8 in [{MIN_REGISTERS}, {MAX_REGISTERS}], or None",
            )
        if run_only_on_cta_id is not None and (
            not _is_int(run_only_on_cta_id) or not 0 <= run_only_on_cta_id < MAX_CLUSTER_CTAS
        ):
            raise TaskDeclarationError(
                f"{where}: run_only_on_cta_id={run_only_on_cta_id!r:.40} must be None or an int "
                f"in [0, {MAX_CLUSTER_CTAS - 1}] (a CTA rank within its cluster)",
                task=self.name,
            )
        if not isinstance(debug_print, bool):
            raise TaskDeclarationError(
                f"{where}: debug_print={debug_print!r:.40} must be a bool",
                task=self.name,
                fix="pass debug_print=True or False",
            )
        for side, resources in (("src_resources", src_resources), ("dst_resources", dst_resources)):
            if not isinstance(resources, (list, tuple)):
                raise TaskDeclarationError(
                    f"{where}: {side}={resources!r:.40} must be a list of MemoryResource, got "
                    f"{type(resources).__name__}",
                    task=self.name,
                    fix=f"pass {side}=[res_a, ...] (or [])",
                )
            for r in resources:
                if not isinstance(r, MemoryResource):
                    raise TaskDeclarationError(
                        f"{where}: {side} lists {r!r}, which is not a MemoryResource",
                        task=self.name,
                    )
        self.src_resources: list[MemoryResource] = list(src_resources)
        self.dst_resources: list[MemoryResource] = list(dst_resources)
        self.warp_idx = warp_idx
        self.num_warps = num_warps
        self.schedule = schedule
        self.num_registers = num_registers
        self.debug_print = debug_print
        self.run_only_on_cta_id = run_only_on_cta_id
        self.default_num_registers: int | None = None
        self._loops: list[DomainLoop] = [
            n for n, _ in iter_nodes(schedule.body) if isinstance(n, DomainLoop)
        ]
        # Runtime values of the bounds, read now: the schedule was traced just before.
        self._traced: list[tuple[Any, Any, Any]] = [
            tuple(  # type: ignore[misc]
                _bounds.runtime_value(b) if isinstance(b, RuntimeBound) else None
                for b in (loop.start, loop.end, loop.step)
            )
            for loop in self._loops
        ]

    # -- warp range ----------------------------------------------------------------------------

    @property
    def warp_start(self) -> int:
        """First warp of the task."""
        return self.warp_idx

    @property
    def warp_end(self) -> int:
        """One past the last warp of the task."""
        return self.warp_idx + self.num_warps

    @property
    def resources(self) -> list[MemoryResource]:
        """The src resources, then the dst resources."""
        return [*self.src_resources, *self.dst_resources]

    # -- domain --------------------------------------------------------------------------------

    @property
    def domain(self) -> Any:
        """The end bound of the task's first domain loop (an int, a DSL value, or None)."""
        if not self._loops:
            return None
        end = self._loops[0].end
        if isinstance(end, ConstBound):
            return end.value
        value = self._traced[0][1]
        return None if value is _bounds.MISSING else value

    def get_domain(self, tile_coord: Any) -> Any:
        """The domain-loop end for a work tile; override for dynamic domains.

        A schedule that passes ``MyTask.get_domain`` as a ``domain_loop`` bound gets this
        method's result, called with the work-tile coordinate, as that bound. The default
        returns :attr:`domain`.
        """
        del tile_coord  # the reference's parameter name, for callers that pass it by keyword
        return self.domain

    def is_selected(self) -> Any:
        """Whether the calling warp runs this task (kernel trace time: a DSL ``Boolean``).

        Its warp is in ``[warp_start, warp_end)`` and, with ``run_only_on_cta_id``, its CTA has
        that rank in the cluster. Kernel code around ``TaskManager.run()`` uses it to bracket
        work for some tasks' warps (e.g. reading the TMEM address after its allocation).
        """
        from ts_runtime import _dsl

        return _dsl.warp_in_range(self.warp_start, self.warp_end, self.run_only_on_cta_id)

    def make_task_cache(self) -> object:
        """Per-task payload for ``StageInfo.task_cache``; override to precompute values."""
        return None

    def has_runtime_bounds(self) -> bool:
        """True when a domain loop has a bound that is not a constant."""
        return any(
            not isinstance(b, ConstBound)
            for loop in self._loops
            for b in (loop.start, loop.end, loop.step)
        )

    def loop_bounds(self, work_tile_coord: Any = None) -> list[tuple[Any, Any, Any] | None]:
        """Values of every domain loop's non-constant bounds, in pre-order (for the lowering).

        Constant bounds are None. A runtime bound is the DSL value traced with the schedule; a
        task-method bound is that method's result for ``work_tile_coord``, or, when no
        coordinate is given, the bound method itself (the lowering calls it per work tile).

        Raises:
            TaskDeclarationError: A runtime bound whose value was not traced in this process
                (the schedule was traced with placeholders, e.g. on the host).
        """
        out: list[tuple[Any, Any, Any] | None] = []
        for loop, traced in zip(self._loops, self._traced, strict=True):
            vals: list[Any] = []
            for b, v, what in zip(
                (loop.start, loop.end, loop.step), traced, ("start", "end", "step"), strict=True
            ):
                if isinstance(b, ConstBound):
                    vals.append(None)
                elif isinstance(b, DynamicBound):
                    method = getattr(self, b.getter.rsplit(".", 1)[-1], None)
                    if method is None:
                        raise TaskDeclarationError(
                            f"task `{self.name}`: {loop.describe()} at {loop.location} takes its "
                            f"{what} from {b.getter}, which task class {type(self).__name__} "
                            "does not have",
                            task=self.name,
                            fix=f"build the task as an instance of the class defining {b.getter}",
                        )
                    vals.append(method if work_tile_coord is None else method(work_tile_coord))
                elif v is _bounds.MISSING:
                    raise TaskDeclarationError(
                        f"task `{self.name}`: the {what} bound of {loop.describe()} at "
                        f"{loop.location} is a runtime value that was not traced in this "
                        "kernel",
                        task=self.name,
                        fix="trace the schedule inside the @cute.kernel with the real bound "
                        "values, or override Task.loop_bounds",
                    )
                else:
                    vals.append(v)
            out.append(None if all(v is None for v in vals) else (vals[0], vals[1], vals[2]))
        return out

    # -- planning ------------------------------------------------------------------------------

    def declaration(self) -> TaskDeclaration:
        """The task as a :class:`ts_trace.TaskDeclaration` (what the plan is built from)."""
        return TaskDeclaration(
            self.src_resources,
            self.dst_resources,
            self.warp_idx,
            self.num_warps,
            self.schedule,
            self.num_registers,
            self.name,
            self.location,
            self.run_only_on_cta_id,
        )

    def __repr__(self) -> str:
        src = ", ".join(resource_name(r) for r in self.src_resources)
        dst = ", ".join(resource_name(r) for r in self.dst_resources)
        return (
            f"Task({self.name!r}, warps {self.warp_start}..{self.warp_end - 1}, "
            f"src=[{src}], dst=[{dst}])"
        )
