"""The typed error of the IR's public constructors, and where the user called them.

A user builds a few IR values by hand: iteration predicates (:class:`~ts_ir.guards.Every`),
pipeline specs, bounds, and looks enumerations up by value. A wrong type or an out-of-range
value there raises :class:`ArgumentError` (``TS-I001``): it names the argument, what it must
be and the user's source line, and ends with the address of the code's catalog page. It is a
``ValueError`` like every TS error, and also a ``TypeError``, which the constructors raised
for wrong types before, so ``except TypeError`` written for them keeps working.

:func:`caller_location` finds the user's line: the innermost stack frame that is not in a TS
package (nor in ``contextlib``, ``dataclasses``, ``enum`` or ``functools``, which TS calls
through). The other layers use it for their own constructors' errors too.
"""

from __future__ import annotations

import linecache
import sys
from types import FrameType
from typing import TYPE_CHECKING, ClassVar, TypeGuard

from ts_ir.catalog import CatalogEntry, docs_url, entry_from_text, register

if TYPE_CHECKING:
    # ts_ir.schedule imports the enumerations, which raise ArgumentError: import it lazily.
    from ts_ir.schedule import SourceLocation

__all__ = [
    "INT32_MAX",
    "IR_ENTRIES",
    "ArgumentError",
    "caller_location",
    "describe_value",
    "is_int",
    "require_int",
]

INT32_MAX = 2**31 - 1
"""The largest value of a 32-bit signed integer (loop counts and indices on the GPU)."""

_TS_PACKAGES = frozenset(
    {"ts_ir", "ts_trace", "ts_verify", "ts_codegen", "ts_runtime", "ts_cli", "task_scheduling"}
)
_PASS_THROUGH = frozenset({"contextlib", "dataclasses", "enum", "functools"})


def _is_internal(frame: FrameType) -> bool:
    module = str(frame.f_globals.get("__name__", ""))
    return module.split(".", 1)[0] in _TS_PACKAGES or module in _PASS_THROUGH


def caller_location(skip: int = 1) -> SourceLocation:
    """The user's line: the innermost frame outside TS and the modules TS calls through.

    Methods that ``dataclasses`` generates for TS classes (``__init__`` calling
    ``__post_init__``) run with their module's globals, so they count as TS frames too.

    Args:
        skip: Frames to skip before looking (1: the caller of this function).
    """
    from ts_ir.schedule import UNKNOWN_LOCATION, SourceLocation

    frame: FrameType | None = sys._getframe(skip)
    while frame is not None and _is_internal(frame):
        frame = frame.f_back
    if frame is None:
        return UNKNOWN_LOCATION
    filename, line = frame.f_code.co_filename, frame.f_lineno
    text = linecache.getline(filename, line).strip()
    return SourceLocation(filename, line, text, frame.f_code.co_name)


def describe_value(value: object) -> str:
    """``repr`` of a value with its type, shortened: ``2.5 (float)``."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def is_int(value: object) -> TypeGuard[int]:
    """True for a Python int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def require_int(
    value: object,
    argument: str,
    *,
    low: int = 0,
    high: int = INT32_MAX,
    fix: str = "",
    why: str = "",
) -> int:
    """``value`` if it is an int (not a bool) in ``[low, high]``, else :class:`ArgumentError`.

    Args:
        value: What the user passed.
        argument: The argument's name as the message shows it (``PipelineSpec.stages``).
        low: Smallest accepted value.
        high: Largest accepted value.
        fix: How to fix it (default: the accepted range).
        why: The rule, in words, to open the message with (e.g. "a pipeline needs at least
            one stage").
    """
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return value
    detail = f"{argument} must be an int in [{low}, {high}], got {describe_value(value)}"
    raise ArgumentError(
        argument,
        f"{why} ({detail})" if why else detail,
        fix=fix or f"pass an int in [{low}, {high}] as {argument.rsplit('.', 1)[-1]}",
    )


class ArgumentError(ValueError, TypeError):
    """A public IR constructor got an argument of the wrong type or out of range (``TS-I001``).

    Attributes:
        code: ``TS-I001``.
        argument: The argument, as ``Callee.name`` (e.g. ``Every.period``).
        detail: What is wrong, naming the argument (the message's first line).
        location: The user's source line (found on the stack when not given).
        fix: How to fix it.
    """

    code: ClassVar[str] = "TS-I001"

    def __init__(
        self,
        argument: str,
        detail: str,
        *,
        fix: str = "",
        location: SourceLocation | None = None,
    ) -> None:
        self.argument = argument
        self.detail = detail
        self.location = caller_location(2) if location is None else location
        self.fix = fix or _ENTRY.fix
        lines = [f"{self.code}: {detail}"]
        if self.location.line > 0:
            lines.extend("  " + part for part in self.location.frame().splitlines())
        lines.append(f"  fix: {self.fix}")
        lines.append(f"  see: {docs_url(self.code)}")
        super().__init__("\n".join(lines))


_ENTRY = entry_from_text(
    "ts-ir",
    "TS-I001",
    "wrong argument to an IR constructor",
    "pass a value of the documented type and range (an int, not a bool, float or string)",
    """
    The values a kernel author builds by hand, such as `Every(period, start)`, pipeline and
    SMEM specs, loop bounds and enumerations looked up by value, are checked where they are
    built: each argument must have its documented type and range. A bool is not an int here,
    and a number in a string is not a number: such values would otherwise be carried into the
    plan and surface much later, or as a hang on the GPU. The message names the argument and
    the line that passed it.
    """,
    """
    @schedule
    def load_task(src, ring):
        with domain_loop(8):
            with when_true(Every(2.5)):
                ring.acquire()
                ring.load()
                ring.commit()

    load_task(src, ring)
    """,
    """
    @schedule
    def load_task(src, ring):
        with domain_loop(8):
            with when_true(Every(2)):
                ring.acquire()
                ring.load()
                ring.commit()

    load_task(src, ring)
    """,
)

IR_ENTRIES: tuple[CatalogEntry, ...] = (_ENTRY,)
"""The catalog entries of the IR layer (``TS-Ixxx``)."""

register(IR_ENTRIES)
