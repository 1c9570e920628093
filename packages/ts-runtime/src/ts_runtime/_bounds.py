"""The traced values of ``domain_loop`` bounds.

A schedule traced inside the ``@cute.kernel`` gets DSL values as loop bounds
(``domain_loop(bidx * bdim + tidx, n, gdim * bdim)``). The IR's
:class:`ts_ir.RuntimeBound` keeps the value next to its readable name (outside equality and
JSON); a :class:`~ts_runtime.task.Task` reads it back for the lowering.
"""

from __future__ import annotations

from typing import Any

from ts_ir import RuntimeBound

__all__ = ["MISSING", "runtime_value"]

MISSING: Any = object()
"""Returned by :func:`runtime_value` for a bound traced without a value (e.g. decoded JSON)."""


def runtime_value(bound: RuntimeBound) -> Any:
    """The traced value of ``bound``, or :data:`MISSING`."""
    return MISSING if bound.value is None else bound.value
