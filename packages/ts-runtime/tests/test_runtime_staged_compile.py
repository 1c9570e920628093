"""The staged front door, compiled: the generated kernel matches its hand-written twin."""

from __future__ import annotations

from typing import Any

import pytest

cutlass = pytest.importorskip("cutlass")


def _fake() -> Any:
    from cutlass.cute.runtime import make_fake_compact_tensor

    return make_fake_compact_tensor(cutlass.Float16, (4096,), assumed_align=16)


def test_compiled_kernel_matches_the_hand_written_twin() -> None:
    from runtime_staged_kernels import kern, twin

    from ts_codegen.dsl import compile_ptx
    from ts_codegen.ptx import opcode_counts

    args = (_fake(), _fake(), cutlass.Int32(4096))
    compiled = kern.compile(*args)
    assert kern.compile(*args).kernel is compiled.kernel  # cached
    assert "ld.global" in compiled.as_text()
    assert "llvm" in kern.lower(*args).as_text()
    _, twin_ptx = compile_ptx(twin, *args)
    ours, theirs = compiled.counts(), opcode_counts(twin_ptx)
    for op in ("ld.global.b16", "st.global.b16", "bra"):
        assert ours[op] == theirs[op], (op, ours, theirs)
    assert sum(ours.values()) <= sum(theirs.values())
