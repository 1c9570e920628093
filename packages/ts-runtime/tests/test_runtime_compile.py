"""Kernels written with Task / TaskManager compile for sm_90a on the CPU; the compile cache."""

from __future__ import annotations

from typing import Any

import pytest

from ts_runtime import CompileCache, compile_kernel, from_torch, plan_fingerprint

# The smoke subset (the oldest Python runs only it): one kernel of each kind.
pytestmark = pytest.mark.smoke

cutlass = pytest.importorskip("cutlass")


def _fake(shape: tuple[int, ...], **kw: Any) -> Any:
    from cutlass.cute.runtime import make_fake_compact_tensor

    return make_fake_compact_tensor(cutlass.Float16, shape, **kw)


def _ptx(fn: Any, *args: Any) -> dict[str, int]:
    from ts_codegen import count_instructions
    from ts_codegen.dsl import compile_ptx

    _, ptx = compile_ptx(fn, *args)
    counts: dict[str, int] = count_instructions(ptx)
    return counts


@pytest.fixture(scope="module")
def kernels() -> Any:
    import runtime_kernels

    return runtime_kernels


def test_grid_stride_copy_ptx(kernels: Any) -> None:
    n = 1 << 20
    counts = _ptx(kernels.grid_stride_copy, _fake((n,)), _fake((n,)), cutlass.Int32(n))
    # unroll=4: four element copies per trip of the unrolled body, no pipeline.
    assert counts["ld.global"] == 4 and counts["st.global"] == 4
    assert counts["mbarrier.try_wait"] == 0 and counts["bar.sync"] == 0
    tm = kernels.MANAGERS[-1]
    assert tm.report.ok and tm.plan.task("copy").num_warps == 8


def test_get_domain_bound_ptx(kernels: Any) -> None:
    n = 1 << 20
    counts = _ptx(kernels.dynamic_copy, _fake((n,)), _fake((n,)), cutlass.Int32(n))
    assert counts["ld.global"] == 4 and counts["st.global"] == 4
    schedule = kernels.MANAGERS[-1].plan.task("copy").schedule
    assert "CopyTask.get_domain" in schedule.as_text()  # the plan keeps the per-tile bound


def test_tma_copy_ptx(kernels: Any) -> None:
    shape = (1024, 1024)
    src = _fake(shape, stride_order=(1, 0), assumed_align=16)
    dst = _fake(shape, stride_order=(1, 0), assumed_align=16)
    counts = _ptx(kernels.tma_copy, src, dst)
    assert counts["cp.async.bulk.tensor"] >= 1
    assert counts["mbarrier.try_wait"] >= 2  # producer empty-wait, consumer full-wait
    assert counts["mbarrier.arrive.expect_tx"] >= 1
    assert counts["mbarrier.init"] == 2 * kernels.STAGES
    assert counts["setmaxnreg.inc"] == 1 and counts["setmaxnreg.dec"] == 1
    assert counts["st.global"] >= 1 and counts["ld.shared"] >= 1
    tm = kernels.MANAGERS[-1]
    assert tm.smem_allocator.layout.placement("smem.tiles").offset == 0
    assert tm.smem_allocator.total == 65536 + 16 * kernels.STAGES


def test_compile_cache_hits_and_misses(kernels: Any) -> None:
    cache = CompileCache()
    n = 1 << 16
    args = (_fake((n,)), _fake((n,)), cutlass.Int32(n))
    first = compile_kernel(kernels.grid_stride_copy, *args, cache=cache)
    assert (cache.hits, cache.misses, len(cache)) == (0, 1, 1)
    # Same shapes and dtypes, another scalar value: a hit (the scalar is a runtime argument).
    again = compile_kernel(
        kernels.grid_stride_copy, _fake((n,)), _fake((n,)), cutlass.Int32(7), cache=cache
    )
    assert again is first and (cache.hits, cache.misses) == (1, 1)
    # Another shape: a miss.
    compile_kernel(
        kernels.grid_stride_copy, _fake((2 * n,)), _fake((2 * n,)), cutlass.Int32(n), cache=cache
    )
    assert (cache.hits, cache.misses, len(cache)) == (1, 2, 2)
    # The plan fingerprint and cache_key_extra join the key.
    plan = kernels.MANAGERS[-1].plan
    compile_kernel(kernels.grid_stride_copy, *args, plan=plan, cache=cache)
    assert cache.misses == 3
    compile_kernel(kernels.grid_stride_copy, *args, plan=plan, cache=cache)
    assert cache.hits == 2
    compile_kernel(kernels.grid_stride_copy, *args, plan=plan, cache_key_extra="v2", cache=cache)
    assert cache.misses == 4
    cache.clear()
    assert len(cache) == 0 and cache.hits == cache.misses == 0


def test_cache_keys_with_a_stub_compiler() -> None:
    calls: list[tuple[Any, ...]] = []

    def compiler(fn: Any, *args: Any, **kw: Any) -> str:
        calls.append(args)
        return f"compiled#{len(calls)}"

    def jit_fn(*args: Any) -> None:
        pass

    cache = CompileCache(compiler)
    a = compile_kernel(jit_fn, _fake((64,)), 3, cache=cache)
    b = compile_kernel(jit_fn, _fake((64,)), 3, cache=cache)
    c = compile_kernel(jit_fn, _fake((64,)), 4, cache=cache)  # Python ints are constants
    d = compile_kernel(jit_fn, _fake((64, 2)), 3, cache=cache)
    assert a is b and a.compiled == "compiled#1"
    assert c.compiled == "compiled#2" and d.compiled == "compiled#3"
    assert len(calls) == 3


def test_plan_fingerprint_is_stable_and_sensitive() -> None:
    from runtime_host_kernels import build

    a, b = build(), build()
    assert plan_fingerprint(a) == plan_fingerprint(b.plan)
    assert plan_fingerprint(build(stages=3)) != plan_fingerprint(a)
    with pytest.raises(TypeError):
        plan_fingerprint(object())


def test_from_torch_rejects_other_objects() -> None:
    with pytest.raises(TypeError, match="torch"):
        from_torch([1, 2, 3])


def test_compiled_kernel_as_text_at_each_stage(kernels: Any) -> None:
    n = 1 << 12
    compiled = compile_kernel(
        kernels.grid_stride_copy, _fake((n,)), _fake((n,)), cutlass.Int32(n), cache=CompileCache()
    )
    mlir = compiled.as_text("mlir")
    assert mlir.startswith("module attributes") and "llvm.func" in mlir
    try:
        ptx = compiled.as_text("ptx")
    except ValueError as err:  # compiled without CUTE_DSL_KEEP=ptx
        assert "CUTE_DSL_KEEP=ptx" in str(err)
    else:
        assert ".target sm_90a" in ptx and "ld.global" in ptx
    with pytest.raises(ValueError, match="unknown stage 'sass'"):
        compiled.as_text("sass")


def test_persistent_guard_kernel_compiles(kernels: Any) -> None:
    """Per-tile domains, edge and every blocks, a carried value and when_false, in a while loop."""
    import cutlass
    from cutlass.cute.runtime import make_fake_compact_tensor

    from ts_codegen.dsl import compile_ptx

    out = make_fake_compact_tensor(cutlass.Int32, (100, 5), stride_order=(1, 0), assumed_align=4)
    lengths = make_fake_compact_tensor(cutlass.Int32, (100,), assumed_align=4)
    flags = make_fake_compact_tensor(cutlass.Int32, (100,), assumed_align=4)
    _, ptx = compile_ptx(kernels.guard_rows, out, lengths, flags)
    assert "elect.sync" in ptx  # lane-0 writes
    assert ptx.count("st.global") >= 6  # first, last, total, mark, zero, even
    assert "atom." not in ptx  # the static scheduler needs no atomics
    assert kernels.guards_reference([0, 3], [0, 1]) == [
        [-1, -1, -1, 1, 0],
        [100, 102, 6, -1, 4],
    ]
    assert kernels.MANAGERS[-1].report.ok


def test_a_collected_launchers_key_is_not_reused() -> None:
    """Launchers built per option (closures, like ``pdl_pair.ts_pair(flag)``) are distinct keys
    even when the first is dropped before the second is made: the key keeps its function alive,
    so the second cannot take the first's ``id()`` and hit its compiled kernel."""
    cache = CompileCache()

    def make(flag: bool) -> Any:
        def launcher() -> bool:
            return flag

        return launcher

    keys = [cache.key(make(flag), ())[0] for flag in (True, False, True, False)]
    assert len(set(keys)) == 4
