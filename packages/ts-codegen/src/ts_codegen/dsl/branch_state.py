"""Keep a task's rebinding of shared DSL values inside the task's own branch.

Every task is lowered inside its own ``if warp in range`` branch. A DSL value made in that
branch exists only there, but DSL objects can rebind their values in place: a UMMA work
method's ``tiled_mma.set(tcgen05.Field.ACCUMULATE, ...)`` stores a new SSA value inside the
``TiledMma`` it was given. When that object is a field of a resource that another task uses too,
the next task lowered would read a value that does not dominate it, and the DSL rejects the
whole kernel ("operand does not dominate this use") depending only on the order the tasks are
listed in.

The tasks are separate programs running on separate warps: what one task sets is not meant to
reach another. So before each task is lowered the SSA values held in the attributes of the
objects reachable from the resources are recorded, and afterwards each attribute the task
rebound is set back. That can only mend IR, never break it: a value made inside a branch is
unusable after it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cutlass._mlir import ir as _mlir_ir

_Value: Any = getattr(_mlir_ir, "Value")  # noqa: B009 (the bindings ship no type stubs)

__all__ = ["BranchState"]

_DEPTH = 4  # resource -> TiledMma -> its trait -> the trait's value, with one level to spare
_LEAVES = (str, bytes, int, float, bool, complex, type(None), type)


class BranchState:
    """The SSA values bound in attributes of the objects reachable from ``roots``."""

    def __init__(self, roots: Iterable[Any]) -> None:
        self._bound: list[tuple[Any, str, Any]] = []
        seen: set[int] = set()
        for root in roots:
            self._walk(root, _DEPTH, seen)

    def _walk(self, obj: Any, depth: int, seen: set[int]) -> None:
        if depth < 0 or isinstance(obj, _LEAVES) or id(obj) in seen or callable(obj):
            return
        seen.add(id(obj))
        if isinstance(obj, (list, tuple, set, frozenset)):
            children: Iterable[Any] = obj
        elif isinstance(obj, dict):
            children = obj.values()
        else:
            attrs = getattr(obj, "__dict__", None)
            if not isinstance(attrs, dict):
                return
            for name, value in attrs.items():
                if isinstance(value, _Value):
                    self._bound.append((obj, name, value))
            children = [v for v in attrs.values() if not isinstance(v, _Value)]
        for child in children:
            self._walk(child, depth - 1, seen)

    def restore(self) -> int:
        """Bind every recorded attribute that was rebound back to its value; how many were."""
        rebound = 0
        for obj, name, value in self._bound:
            if vars(obj).get(name) is not value:
                setattr(obj, name, value)
                rebound += 1
        return rebound
