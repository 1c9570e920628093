"""Argument checks of the runtime's public constructors, reported at the user's line.

``PipelineConfig``, ``Task``, ``TaskManager`` and ``SmemAllocation`` check every argument where
they are called: a wrong type or an out-of-range value raises a
:class:`~ts_runtime.errors.RuntimeConfigError` subclass whose message names the argument, what
it must be, and the user's source line (the innermost frame outside TS,
:func:`ts_ir.errors.caller_location`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from ts_ir import SourceLocation
from ts_ir.errors import caller_location, describe_value, is_int
from ts_runtime.errors import RuntimeConfigError

__all__ = [
    "argument_error",
    "at_line",
    "check_task_manager_arguments",
    "require_bool",
    "require_int",
    "require_optional_int",
    "require_str",
]

_E = TypeVar("_E", bound=RuntimeConfigError)


def at_line(message: str, location: SourceLocation | None = None) -> str:
    """``message`` followed by the user's line (``File "...", line N`` and its text)."""
    loc = caller_location(2) if location is None else location
    if loc.line <= 0:
        return message
    return message + "\n" + "\n".join("  " + part for part in loc.frame().splitlines())


def argument_error(
    message: str,
    *,
    fix: str,
    task: str = "",
    resource: str = "",
    cls: Callable[..., _E] = RuntimeConfigError,  # type: ignore[assignment]
) -> _E:
    """A runtime error for a bad argument, its message ending with the user's line."""
    return cls(at_line(message), task=task, resource=resource, fix=fix)


def require_int(
    value: object, argument: str, *, low: int, high: int, why: str = "", fix: str = ""
) -> int:
    """``value`` when it is an int (not a bool) in ``[low, high]``, else a typed error."""
    if is_int(value) and low <= value <= high:
        return value
    reason = f" ({why})" if why else ""
    raise argument_error(
        f"{argument} must be an int in [{low}, {high}]{reason}, got {describe_value(value)}",
        fix=fix or f"pass {argument.rsplit('.', 1)[-1]}= an int in [{low}, {high}]",
    )


def require_optional_int(
    value: object, argument: str, *, low: int, high: int, why: str = "", fix: str = ""
) -> int | None:
    """Like :func:`require_int`, but None is accepted too."""
    if value is None:
        return None
    return require_int(value, argument, low=low, high=high, why=why, fix=fix)


def require_bool(value: object, argument: str) -> bool:
    """``value`` when it is a bool, else a typed error (``1`` and ``"yes"`` are not bools)."""
    if isinstance(value, bool):
        return value
    raise argument_error(
        f"{argument} must be a bool, got {describe_value(value)}",
        fix=f"pass {argument.rsplit('.', 1)[-1]}=True or False",
    )


def require_str(value: object, argument: str, *, empty_ok: bool = True) -> str:
    """``value`` when it is a str (non-empty unless ``empty_ok``), else a typed error."""
    if isinstance(value, str) and (empty_ok or value):
        return value
    what = "a str" if empty_ok else "a non-empty str"
    raise argument_error(
        f"{argument} must be {what}, got {describe_value(value)}",
        fix=f"pass {argument.rsplit('.', 1)[-1]}= {what}",
    )


_PLAIN = (bool, int, float, complex, str, bytes, bytearray, list, tuple, dict, set, frozenset)
_TARGET = re.compile(r"sm_\d+[a-z]?")


def check_task_manager_arguments(
    tasks: object,
    resource_dependency_graph: object,
    *,
    smem_allocator: object,
    flags: dict[str, object],
    smem_capacity_bytes: object,
    name: object,
    block_warps: object,
    target: object,
) -> None:
    """The argument checks of ``TaskManager(...)``, before anything is planned.

    Args:
        tasks: ``tasks`` as passed.
        resource_dependency_graph: The graph as passed.
        smem_allocator: The allocator as passed.
        flags: The bool options by name (``skip_validation``, ``verbose`` ...).
        smem_capacity_bytes: As passed.
        name: As passed.
        block_warps: As passed.
        target: As passed.
    """
    from ts_runtime.task import MAX_WARPS, Task
    from ts_trace import MemoryResource

    if isinstance(tasks, (str, bytes, Mapping)) or not isinstance(tasks, Iterable):
        raise argument_error(
            f"TaskManager(tasks={tasks!r:.60}): tasks must be a list of Task, got "
            f"{type(tasks).__name__}",
            fix="pass tasks=[Task(...), ...]",
        )
    if isinstance(tasks, (list, tuple)):
        if not tasks:
            raise argument_error(
                "TaskManager needs at least one task, got tasks=[]",
                fix="pass tasks=[Task(...), ...]",
            )
        for t in tasks:
            if not isinstance(t, Task):
                raise argument_error(
                    f"TaskManager: tasks lists {t!r:.60} ({type(t).__name__}), which is not a Task",
                    fix="build every task with Task(src, dst, warp_idx, num_warps, "
                    "schedule=my_schedule(...))",
                )
    if not isinstance(resource_dependency_graph, Mapping):
        raise argument_error(
            f"TaskManager(resource_dependency_graph={resource_dependency_graph!r:.60}): the "
            f"graph must be a dict, got {type(resource_dependency_graph).__name__}",
            fix="pass {downstream: [upstreams...]} listing every resource of the tasks",
        )
    if not resource_dependency_graph:
        raise argument_error(
            "TaskManager: the resource dependency graph is empty",
            fix="pass {downstream: [upstreams...]} listing every resource of the tasks",
        )
    for down, ups in resource_dependency_graph.items():
        if not isinstance(down, MemoryResource):
            raise argument_error(
                f"TaskManager: the dependency graph has the key {down!r:.60}, which is not a "
                "MemoryResource",
                fix="key the graph by resources: {downstream: [upstreams...]}",
            )
        if not isinstance(ups, (list, tuple, set, frozenset)) or not all(
            isinstance(u, MemoryResource) for u in ups
        ):
            raise argument_error(
                f"TaskManager: the dependency graph maps `{getattr(down, 'name', '')}` to "
                f"{ups!r:.60}, which is not a list of MemoryResource",
                resource=str(getattr(down, "name", "")),
                fix="map every resource to the list of resources it is produced from ([] if none)",
            )
    if smem_allocator is not None and (
        isinstance(smem_allocator, _PLAIN) or not hasattr(smem_allocator, "allocate")
    ):
        raise argument_error(
            f"TaskManager(smem_allocator={smem_allocator!r:.60}): expected an SmemAllocator or "
            f"None, got {type(smem_allocator).__name__}",
            fix="pass smem_allocator=SmemAllocator() holding the resources' allocations",
        )
    for flag, value in flags.items():
        require_bool(value, f"TaskManager.{flag}")
    require_optional_int(
        smem_capacity_bytes, "TaskManager.smem_capacity_bytes", low=1, high=2**31 - 1
    )
    require_str(name, "TaskManager.name", empty_ok=False)
    require_optional_int(
        block_warps,
        "TaskManager.block_warps",
        low=1,
        high=MAX_WARPS,
        why=f"a CTA has at most {MAX_WARPS} warps",
    )
    if block_warps is not None and isinstance(tasks, (list, tuple)):
        end = max((t.warp_idx + t.num_warps for t in tasks), default=0)
        if block_warps < end:  # type: ignore[operator]
            raise argument_error(
                f"TaskManager(block_warps={block_warps}): the tasks use warps up to {end - 1}, "
                f"so the block needs at least {end} warps",
                fix=f"pass block_warps >= {end}, or None (the end of the last task's warps)",
            )
    if target is not None and (not isinstance(target, str) or not _TARGET.fullmatch(target)):
        raise argument_error(
            f"TaskManager(target={target!r:.60}): the target must be an architecture such as "
            f"'sm_90a', got {type(target).__name__}",
            fix="pass target='sm_90a' (Hopper) or leave it None (CUTE_DSL_ARCH)",
        )
