"""Find the user's source line for error messages and the IR."""

from __future__ import annotations

import contextlib
import inspect
import linecache
import os
import sys
from types import FrameType

from ts_ir import UNKNOWN_LOCATION, SourceLocation

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SKIP_FILES = frozenset({os.path.abspath(contextlib.__file__)})


def _is_internal(frame: FrameType) -> bool:
    filename = os.path.abspath(frame.f_code.co_filename)
    return filename.startswith(_PACKAGE_DIR + os.sep) or filename in _SKIP_FILES


def location_of_frame(frame: FrameType) -> SourceLocation:
    """The location of ``frame``'s current line."""
    filename = frame.f_code.co_filename
    line = frame.f_lineno
    text = linecache.getline(filename, line).strip()
    return SourceLocation(file=filename, line=line, text=text, function=frame.f_code.co_name)


def user_location() -> SourceLocation:
    """The innermost stack frame outside ts-trace and contextlib: the user's line."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and _is_internal(frame):
        frame = frame.f_back
    return UNKNOWN_LOCATION if frame is None else location_of_frame(frame)


def definition_location(obj: object) -> SourceLocation:
    """Where a function or class is defined: its ``def`` / ``class`` line (best effort)."""
    target = inspect.unwrap(obj) if callable(obj) else obj  # type: ignore[arg-type]
    try:
        filename = inspect.getsourcefile(target)  # type: ignore[arg-type]
        lines, first = inspect.getsourcelines(target)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return UNKNOWN_LOCATION
    # Skip decorator lines so the location names the definition itself.
    offset = next(
        (i for i, text in enumerate(lines) if text.lstrip().startswith(_DEF_PREFIXES)), 0
    )
    text = lines[offset].strip() if lines else ""
    name = getattr(target, "__qualname__", "")
    return SourceLocation(filename or "<unknown>", first + offset, text, name)


_DEF_PREFIXES = ("def ", "async def ", "class ")
