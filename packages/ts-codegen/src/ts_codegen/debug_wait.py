"""Debug bounded waits: a pipeline wait that never completes reports itself and traps.

A deadlocked warp-specialized kernel just hangs: some warps block forever in
``mbarrier.try_wait`` and nothing says which task, resource or stage. With debugging on, the
lowering calls :func:`bounded_wait` right before every blocking pipeline wait (``producer_acquire``,
``consumer_wait``). It emits, at kernel trace time:

1. a *probe*: a loop of at most ``limit`` ``mbarrier.try_wait.parity`` on the barrier and phase
   the blocking call is about to wait on (the stage's *empty* barrier with the producer state's
   phase for an acquire, its *full* barrier with the consumer state's phase for a wait);
2. if the phase did not complete within ``limit`` tries: one ``printf`` line naming the task,
   the resource, the step, the stage index, the phase and the block and thread index, for
   example (one line, wrapped here)::

       TS debug: task `load` waits forever on resource `smem`
       (consumer_wait, stage 3, phase 1) block 5 thread 128

   then a PTX ``trap;``, which aborts the kernel (the host sees a launch failure);
3. nothing else: when the probe succeeds, the blocking call the lowering emits next finds the
   phase complete and returns at once.

The first lane of every warp that times out prints one line (the thread index names the warp);
every timed-out thread traps. When
the phase is already complete the probe costs one ``try_wait``; the message and the trap sit in
a branch that is only taken on a timeout.

This module imports no cutlass: every CuTe DSL call goes through :mod:`ts_codegen.dsl`.
:func:`~ts_codegen.dsl.wait_barrier` finds the barrier through the pipeline's
``sync_object_empty`` / ``sync_object_full`` fields and their ``get_barrier(index)``, the objects
``cutlass.pipeline.PipelineAsync.producer_acquire`` / ``consumer_wait`` wait through.
"""

from __future__ import annotations

from typing import Any

from ts_codegen import dsl

__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "bounded_wait", "message_format"]

DEFAULT_LIMIT: int = 1 << 20
"""Default number of ``try_wait`` tries before a wait is reported as a hang.

Each failed ``try_wait`` may suspend the thread for a system-dependent time before it gives up,
so the wall time this bound stands for depends on the GPU; it is meant to lie well beyond any
legitimate wait. Pass a smaller ``limit`` for a faster report, a larger one if a slow but live
kernel is reported.
"""

MAX_LIMIT: int = 2**31 - 1
"""The largest ``limit``: the try counter is a signed 32-bit value."""


def _escape(text: str) -> str:
    """``text`` made safe to splice into a ``cute.printf`` format string, on one line.

    ``%`` starts a C conversion and ``{}`` a DSL placeholder: either in a task or resource name
    would consume one of the runtime arguments. Control characters would break the line.
    """
    out = "".join(c if c.isprintable() else "?" for c in text)
    return out.replace("%", "%%").replace("{}", "{ }")


def message_format(task: str, resource: str, step: str) -> str:
    """The ``printf`` format of a timed-out wait (without the newline ``printf`` appends).

    The four ``{}`` placeholders take, in order, the stage index, the phase, the linear block
    index and the linear thread index (runtime values).

    Args:
        task: The waiting task's name.
        resource: The resource whose pipeline it waits on.
        step: The blocking step, e.g. ``"producer_acquire"`` or ``"consumer_wait"``.

    Returns:
        The format string, with ``task``, ``resource`` and ``step`` escaped.
    """
    return (
        f"TS debug: task `{_escape(task)}` waits forever on resource `{_escape(resource)}` "
        f"({_escape(step)}, stage {{}}, phase {{}}) block {{}} thread {{}}"
    )


def _check(task: str, resource: str, step: str, limit: int) -> None:
    """Reject arguments that would make a useless probe or message (before emitting any IR)."""
    for name, value in (("task", task), ("resource", resource), ("step", step)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"bounded_wait: {name} must be a non-empty string, got {value!r}")
    # bool is an int subclass; a limit of True is a bug in the caller, not 1 try.
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"bounded_wait: limit must be an int, got {type(limit).__name__}")
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"bounded_wait: limit must be in [1, {MAX_LIMIT}], got {limit}")


def bounded_wait(
    pipe: Any,
    state: Any,
    *,
    producer: bool,
    task: str,
    resource: str,
    step: str,
    limit: int = DEFAULT_LIMIT,
) -> None:
    """Emit a bounded probe of the wait ``state`` is about to do; print and trap on a timeout.

    Call it at kernel trace time (inside a ``@cute.kernel``), right before the blocking
    ``producer_acquire`` (``producer=True``) or ``consumer_wait`` (``producer=False``) with the
    same pipeline and state; that blocking call is still emitted by the caller and, after a
    successful probe, returns at once. It also works after a ``producer_try_acquire`` /
    ``consumer_try_wait``: a completed phase stays complete until this thread moves on.

    Args:
        pipe: The resource's ``cutlass.pipeline`` object (``PipelineAsync``,
            ``PipelineTmaAsync``).
        state: The waiting side's ``PipelineState`` (its ``index`` and ``phase`` may be
            runtime values, e.g. loop-carried).
        producer: Whether this is a producer acquire (empty barrier) or a consumer wait
            (full barrier).
        task: The task's name, for the message.
        resource: The resource's name, for the message.
        step: The step's kind, for the message (``"producer_acquire"``, ``"consumer_wait"``).
        limit: The most ``try_wait`` tries before the wait counts as a hang.

    Raises:
        ValueError: An empty name or ``limit`` outside ``[1, MAX_LIMIT]``.
        TypeError: ``limit`` is not an int, or ``pipe`` has no barriers to probe.
    """
    _check(task, resource, step, limit)
    fmt = message_format(task, resource, step)
    barrier = dsl.wait_barrier(pipe, state, producer=producer)
    phase = dsl.state_phase(state)
    done = dsl.poll_barrier(barrier, phase, limit)

    def say(carried: list[Any]) -> list[Any]:
        # Block and thread indices are read here, on the cold path only.
        dsl.device_print(
            fmt,
            dsl.state_index(state),
            phase,
            dsl.block_index_linear(),
            dsl.thread_index_linear(),
        )
        return carried

    def report(carried: list[Any]) -> list[Any]:
        # One line per waiting warp (its first lane), not one per thread; every thread traps.
        dsl.if_then(dsl.thread_index_linear() % 32 == 0, [], say)
        dsl.trap()
        return carried

    dsl.if_then(~done, [], report)
