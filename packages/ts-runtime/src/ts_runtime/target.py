"""The compilation target: which architecture the kernel is compiled for."""

from __future__ import annotations

import os
import re

__all__ = ["DEFAULT_TARGET", "current_target", "is_blackwell_or_later"]

DEFAULT_TARGET = "sm_90a"
"""The target when ``CUTE_DSL_ARCH`` is not set: Hopper, TS's primary target."""


def current_target() -> str:
    """The architecture the DSL compiles for: ``CUTE_DSL_ARCH``, else :data:`DEFAULT_TARGET`."""
    return os.environ.get("CUTE_DSL_ARCH", "").strip() or DEFAULT_TARGET


def is_blackwell_or_later(target: str) -> bool:
    """True for ``sm_100`` and later (UMMA, TMEM and CLC exist); False for Hopper and older."""
    match = re.match(r"sm_(\d+)", target)
    return match is not None and int(match.group(1)) >= 100
