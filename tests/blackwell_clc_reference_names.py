"""``examples/blackwell/clc_copy.py`` with the CLC steps spelled as the reference spells them.

The reference's dynamic ``WorkQueue`` asks for a tile with ``fetch_work_tile()`` and reads the
answer with ``get_and_advance_work_tile()``; TS's names are ``fetch_next_tile()`` /
``read_next_tile()``. This program is the example with only those names changed (its
``compile_only()`` swaps the example's two schedules for these): it must compile to the same
kernel, which ``tests/test_blackwell_translation.py`` checks.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from task_scheduling import schedule, work_tile_loop

_EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "blackwell" / "clc_copy.py"
_spec = importlib.util.spec_from_file_location("clc_copy", _EXAMPLE)
assert _spec is not None and _spec.loader is not None
clc_copy = importlib.util.module_from_spec(_spec)
sys.modules["clc_copy"] = clc_copy
_spec.loader.exec_module(clc_copy)


@schedule
def sched(wq: Any) -> None:
    with work_tile_loop(wq):
        wq.acquire()
        wq.fetch_work_tile()
        wq.commit()
        wq.wait()
        wq.get_and_advance_work_tile()
        wq.release()


@schedule
def copy(wq: Any, rows: Any) -> None:
    with work_tile_loop(wq):
        rows.copy_tile()
        wq.wait()
        wq.get_and_advance_work_tile()
        wq.release()


def compile_only() -> dict[str, Any]:
    """The example's compile, with these schedules."""
    # build() reads the module's schedules.
    setattr(clc_copy, "sched", sched)  # noqa: B010 (a module attribute mypy does not know)
    setattr(clc_copy, "copy", copy)  # noqa: B010
    result: dict[str, Any] = clc_copy.compile_only()
    return result
