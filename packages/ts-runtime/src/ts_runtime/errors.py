"""Typed errors of the runtime layer, raised before anything is compiled.

Every error names what it is about (``task``, ``resource``) as attributes and in its message,
and says how to fix it (``fix``). They derive from :class:`ValueError`, as the reference's
validation errors do.
"""

from __future__ import annotations

from typing import ClassVar

from ts_ir import register, see_also
from ts_runtime.catalog_entries import RUNTIME_ENTRIES

register(RUNTIME_ENTRIES)

__all__ = [
    "GroupSizeError",
    "RuntimeConfigError",
    "SmemBudgetError",
    "TaskDeclarationError",
    "UnsupportedFeatureError",
    "UnsupportedOnTarget",
]


class RuntimeConfigError(ValueError):
    """A kernel declaration the runtime rejects before compilation.

    Attributes:
        task: The task concerned ("" when none).
        resource: The resource concerned ("" when none).
        fix: How to fix it ("" when obvious from the message).
    """

    code: ClassVar[str] = "TS-R005"

    def __init__(self, message: str, *, task: str = "", resource: str = "", fix: str = "") -> None:
        self.task = task
        self.resource = resource
        self.fix = fix
        text = f"{self.code}: {message}"
        if fix:
            text += f"\n  fix: {fix}"
        super().__init__(f"{text}\n  see: {see_also(self.code)}")


class UnsupportedFeatureError(RuntimeConfigError):
    """A documented option that this implementation does not lower yet, set to a non-default."""

    code: ClassVar[str] = "TS-R001"


class UnsupportedOnTarget(RuntimeConfigError):
    """A pipeline type (or feature) that the compilation target cannot run.

    Attributes:
        pipeline_type: Name of the pipeline type (e.g. ``"TmaUmma"``).
        target: The target architecture (e.g. ``"sm_90a"``).
    """

    code: ClassVar[str] = "TS-R002"

    def __init__(
        self,
        message: str,
        *,
        pipeline_type: str = "",
        target: str = "",
        task: str = "",
        resource: str = "",
        fix: str = "",
    ) -> None:
        self.pipeline_type = pipeline_type
        self.target = target
        super().__init__(message, task=task, resource=resource, fix=fix)


class GroupSizeError(RuntimeConfigError):
    """A pipeline's cooperative-group size contradicts the warp counts of the tasks that signal."""

    code: ClassVar[str] = "TS-R003"


class SmemBudgetError(RuntimeConfigError):
    """The kernel's shared memory (data plus mbarriers) exceeds the per-CTA capacity."""

    code: ClassVar[str] = "TS-R004"


class TaskDeclarationError(RuntimeConfigError):
    """A task declared with impossible arguments (warp range, register count, schedule)."""

    code: ClassVar[str] = "TS-R005"
