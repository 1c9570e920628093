"""The compilation target, as the checks see it: architecture, SMEM and TMEM per CTA.

A :class:`Target` is plain data (no CuTe DSL): ``ts_verify.verify(plan, target=...)`` checks
a plan against it (pipeline types the architecture cannot run, SMEM over the capacity), and the
runtime derives it from the architecture it compiles for (``CUTE_DSL_ARCH``).
"""

from __future__ import annotations

import dataclasses
import re

from ts_ir.errors import ArgumentError, describe_value, require_int
from ts_ir.smem import DEFAULT_SMEM_CAPACITY

__all__ = ["TMEM_COLUMNS", "Target"]

TMEM_COLUMNS = 512
"""Tensor-memory columns per SM on Blackwell (sm_100 and later); Hopper has none."""

_SM = re.compile(r"sm_(\d+)[a-z]?$")


@dataclasses.dataclass(frozen=True)
class Target:
    """What a kernel is compiled for, as far as static checks need it.

    Attributes:
        name: The architecture, ``sm_<major><minor>`` with an optional suffix (``"sm_90a"``).
        smem_capacity: Shared-memory bytes one CTA may use (the opt-in maximum).
        tmem_columns: Tensor-memory columns (0 where the architecture has no TMEM).
    """

    name: str = "sm_90a"
    smem_capacity: int = DEFAULT_SMEM_CAPACITY
    tmem_columns: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or _SM.match(self.name) is None:
            raise ArgumentError(
                "Target.name",
                f"a target is an architecture like 'sm_90a', got {describe_value(self.name)}",
                fix="pass Target.of('sm_90a') (Hopper) or Target.of('sm_100a') (Blackwell)",
            )
        require_int(self.smem_capacity, f"Target {self.name}: smem_capacity", low=1)
        require_int(self.tmem_columns, f"Target {self.name}: tmem_columns")

    @classmethod
    def of(cls, name: str, *, smem_capacity: int | None = None) -> Target:
        """The target ``name`` with its hardware's SMEM and TMEM (SMEM overridable)."""
        probe = cls(name)  # checks the name
        tmem = TMEM_COLUMNS if probe.is_blackwell_or_later else 0
        capacity = DEFAULT_SMEM_CAPACITY if smem_capacity is None else smem_capacity
        return cls(name, capacity, tmem)

    @property
    def sm(self) -> int:
        """The compute capability as a number (90 for ``sm_90a``)."""
        match = _SM.match(self.name)
        assert match is not None  # checked at construction
        return int(match.group(1))

    @property
    def is_blackwell_or_later(self) -> bool:
        """True from ``sm_100`` on: UMMA, TMEM and cluster launch control exist."""
        return self.sm >= 100

    @property
    def family(self) -> str:
        """``"blackwell"``, ``"hopper"`` or ``"older"`` (what a message names)."""
        if self.is_blackwell_or_later:
            return "blackwell"
        return "hopper" if self.sm >= 90 else "older"
