"""A value a task rebinds on a shared DSL object stays in the task's branch (``BranchState``).

The shape of the bug it mends: a UMMA work method's ``tiled_mma.set(...)`` stores a new SSA value
in an object (``TiledMma -> trait -> value``) that another task reads too; lowered inside one
task's ``if`` branch, that value does not dominate the next task, and the DSL rejects the kernel.
Here the same shape, in a few lines: without ``restore()`` the compile fails with the DSL's
dominance error, with it the kernel compiles.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("cutlass")

import cutlass
import cutlass.cute as cute

from ts_codegen import dsl
from ts_codegen.dsl.branch_state import BranchState

# The smoke subset (the oldest Python runs only it): one kernel of each kind.
pytestmark = pytest.mark.smoke


class _Trait:  # as the DSL's atoms hold their runtime state: an SSA value in an attribute
    def __init__(self, value: Any) -> None:
        self.value = value


class _Atom:
    def __init__(self, value: Any) -> None:
        self.trait = _Trait(value)


class _Resource:
    def __init__(self, value: Any) -> None:
        self.atom = _Atom(value)
        self.others = [_Atom(value)]  # reached through a list too


def _compile(restore: bool) -> list[int]:
    rebound: list[int] = []

    @cute.jit
    def branch_then_use(x: cutlass.Int32) -> None:
        res = _Resource((x + 1).ir_value())
        state = BranchState([res])

        def task(carried: list[Any]) -> list[Any]:  # one task's branch rebinds shared state
            res.atom.trait.value = (x * 2).ir_value()
            res.others[0].trait.value = (x * 3).ir_value()
            return carried

        dsl.if_then(x > 3, [], task)
        if cutlass.const_expr(restore):  # type: ignore[attr-defined]
            rebound.append(state.restore())
        cute.printf(
            "%d %d", cutlass.Int32(res.atom.trait.value), cutlass.Int32(res.others[0].trait.value)
        )

    cute.compile(branch_then_use, cutlass.Int32(5))
    return rebound


def test_restored_values_dominate_what_follows() -> None:
    assert _compile(restore=True) == [2]


def test_without_restore_the_dsl_rejects_the_kernel() -> None:
    # The oracle is the DSL's own IR verifier, not BranchState.
    with pytest.raises(Exception, match="does not dominate"):
        _compile(restore=False)
