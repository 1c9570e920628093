"""The staged front door, compiled: the generated kernel matches its hand-written twin."""

from __future__ import annotations

from typing import Any

import pytest

# The smoke subset (the oldest Python runs only it): one kernel of each kind.
pytestmark = pytest.mark.smoke

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


def test_smem_tensors_over_budget_are_refused_before_code_generation() -> None:
    """In the kernel every SMEM tensor is sized from its layout; over budget, compiling stops
    with TS-R004 at the tensor's line (the host plan could not size the DSL layout)."""
    from runtime_staged_kernels import staged_smem_kernel as kernel

    from ts_runtime import SmemBudgetError

    args = (_fake(), _fake(), cutlass.Int32(4096))
    assert "ld.global" in kernel(100_000).compile(*args).as_text()  # 200_000 B fit
    big = kernel(120_000)  # 240_000 B do not
    assert big.verify().ok  # on the host the layout is a factory: not sized
    with pytest.raises(SmemBudgetError) as info:
        big.compile(*args)
    text = str(info.value)
    assert "TS-R004" in text and "k.smem_tensor[0]" in text and "240000" in text
    assert "# staged in SMEM" in text  # the declaration's line, not the DSL's


def test_a_work_call_that_leaves_out_a_required_input_is_a_typed_error_at_its_line() -> None:
    from runtime_staged_kernels import copy_kernel

    from ts_codegen import LoweringError

    def body(src: Any, dst: Any) -> None:
        src.load()
        dst.store()  # leaves out `element`

    with pytest.raises(LoweringError) as info:
        copy_kernel(body).compile(_fake(), _fake(), cutlass.Int32(4096))
    text = str(info.value)
    assert "TS-C001" in text and "leaves out `element`" in text and "element=..." in text
    assert f"{__file__}:" in text and "Destination.store requires" in text


def test_routing_a_producer_works_result_is_a_typed_error_at_its_line() -> None:
    from runtime_staged_kernels import copy_kernel

    from ts_trace import ScheduleError

    def body(src: Any, dst: Any) -> None:
        done = dst.store(element=src.load())
        dst.store(element=done)  # a producer work returns nothing to route

    with pytest.raises(ScheduleError) as info:
        copy_kernel(body).compile(_fake(), _fake(), cutlass.Int32(4096))
    text = str(info.value)
    assert info.value.code == "TS-T006" and "a producer work" in text
    assert "dst.store(element=done)" in text  # the user's line
