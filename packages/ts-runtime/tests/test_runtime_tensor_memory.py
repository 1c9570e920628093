"""``TensorMemory``: its declaration is checked where it is written, and its work is marked.

The PTX of its allocate / free is checked by ``tests/test_blackwell_examples.py``
(``umma_chain.py`` compiled for sm_100a); the lifetime rules by ts-verify's
``test_verify_tmem_lifetime.py``. Here: what needs neither a compile nor a plan.
"""

from __future__ import annotations

import types
from typing import Any

import pytest

from ts_ir import WorkAttr
from ts_runtime.errors import RuntimeConfigError
from ts_runtime.tensor_memory import TensorMemory
from ts_trace.work import get_work_info


def test_a_valid_declaration_keeps_its_warps() -> None:
    tmem = TensorMemory(name="tmem", num_columns=256, warp=5, free_warp=0)
    assert (tmem.num_columns, tmem.warp, tmem.free_warp) == (256, 5, 0)
    assert TensorMemory(name="t", num_columns=32, warp=2).free_warp == 2


@pytest.mark.parametrize("columns", [0, 16, 48, 1024, 256.0, None])
def test_columns_must_be_what_tcgen05_alloc_allocates(columns: Any) -> None:
    with pytest.raises(RuntimeConfigError, match=r"`tmem`: num_columns=.*power of two") as info:
        TensorMemory(name="tmem", num_columns=columns, warp=0)  # the declaration line
    assert info.value.resource == "tmem"
    assert "test_runtime_tensor_memory.py" in str(info.value)


@pytest.mark.parametrize(("field", "value"), [("warp", -1), ("warp", True), ("free_warp", "0")])
def test_warps_must_be_warp_indices(field: str, value: Any) -> None:
    kwargs: dict[str, Any] = {"warp": 1, field: value}
    with pytest.raises(RuntimeConfigError, match=rf"{field}=.* is not a warp index") as info:
        TensorMemory(name="tmem", num_columns=128, **kwargs)
    assert field in info.value.fix


def test_the_work_is_marked_for_the_verifier() -> None:
    alloc, free = (get_work_info(TensorMemory.__dict__[n]) for n in ("allocate", "free"))
    assert alloc is not None and alloc.attrs == WorkAttr.TMEM_ALLOC
    assert free is not None and free.attrs == WorkAttr.TMEM_DEALLOC


def test_a_kernel_without_the_tmem_pointer_word_is_told_how_to_reserve_it() -> None:
    tmem = TensorMemory(name="tmem", num_columns=128, warp=0)
    info = types.SimpleNamespace(context=types.SimpleNamespace(tmem_ptr_i32=None))
    with pytest.raises(RuntimeConfigError, match="no SMEM word for the TMEM address") as err:
        tmem._slot(info, "allocate")
    assert "add_tmem_ptr" in err.value.fix
