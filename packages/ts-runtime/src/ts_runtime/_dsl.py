"""The runtime's adapter to the CuTe DSL: the one ts_runtime module that imports ``cutlass``.

Every import is inside a function, so importing ts_runtime needs no DSL (planning and verifying
run on any laptop); the DSL loads when a kernel is compiled, allocated in SMEM or launched.
Lowering is ts_codegen's (its adapter is ``ts_codegen.dsl``); what is here is the host side:
compiling, tensors over memory, the SMEM block, dtypes, streams. import-linter holds every
other module to it (the ``dsl-adapters`` contract).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "async_thread_op",
    "byte_array",
    "compile_jit",
    "cosize",
    "cu_stream",
    "dtype",
    "fake_tensor",
    "from_dlpack",
    "gmem_pointer_maker",
    "max_active_clusters",
    "pointer_entry",
    "smem_allocator",
    "typed_view",
    "uint8",
]


# -- compiling and tensors on the host -------------------------------------------------------------
def compile_jit(fn: Any, *args: Any, options: str | None = None) -> Any:
    """``cute.compile(fn, *args)`` (with ``options`` when given)."""
    import cutlass.cute as cute

    return cute.compile(fn, *args) if options is None else cute.compile(fn, *args, options=options)


# An empty kernel in PTX: the driver JITs it for the GPU at hand (sm_90 PTX runs on Hopper and
# later), so the occupancy query needs no DSL compile, which may not nest inside one being traced.
_PROBE_PTX = b""".version 7.8
.target sm_90
.address_size 64
.visible .entry ts_occupancy_probe()
{
  ret;
}
"""


def _driver() -> Any:
    """``cuda.bindings.driver`` (CUDA's driver API; the DSL depends on it)."""
    from cuda.bindings import driver  # type: ignore[import-untyped]

    return driver


def _checked(result: Any) -> Any:
    """The value of a ``cuda.bindings.driver`` call; its error code raised as RuntimeError."""
    driver = _driver()
    err, *values = result
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver error {err!r}")
    return values[0] if len(values) == 1 else tuple(values)


def max_active_clusters(cluster_size: int) -> int:
    """The driver's occupancy answer for a one-CTA-an-SM kernel in ``cluster_size`` clusters.

    ``cuOccupancyMaxActiveClusters`` on a 128-thread probe kernel that asks for all of an SM's
    shared memory; it needs a current CUDA context. Safe to call while a kernel is traced.
    """
    driver = _driver()
    attr = driver.CUdevice_attribute
    device = _checked(driver.cuCtxGetDevice())
    major = _checked(
        driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)
    )
    if major < 9:  # no clusters before Hopper: one CTA an SM
        sms = _checked(
            driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device)
        )
        return int(sms) // cluster_size
    module = _checked(driver.cuModuleLoadData(_PROBE_PTX))
    try:
        kernel = _checked(driver.cuModuleGetFunction(module, b"ts_occupancy_probe"))
        smem = _checked(
            driver.cuDeviceGetAttribute(
                attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device
            )
        )
        fattr = driver.CUfunction_attribute
        _checked(
            driver.cuFuncSetAttribute(
                kernel, fattr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem
            )
        )
        _checked(
            driver.cuFuncSetAttribute(
                kernel, fattr.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1
            )
        )
        cluster = driver.CUlaunchAttribute()
        cluster.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        dim = cluster.value.clusterDim  # a view into the attribute's union
        dim.x, dim.y, dim.z = cluster_size, 1, 1
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = cluster_size, 1, 1
        config.blockDimX, config.blockDimY, config.blockDimZ = 128, 1, 1
        config.sharedMemBytes = smem
        config.numAttrs = 1
        config.attrs = [cluster]
        return int(_checked(driver.cuOccupancyMaxActiveClusters(kernel, config)))
    finally:
        driver.cuModuleUnload(module)  # unchecked: it must not hide the query's own error


def from_dlpack(tensor: Any, assumed_align: int | None = None) -> Any:
    """A CuTe tensor over a DLPack tensor's memory (no copy)."""
    from cutlass.cute.runtime import from_dlpack as _from_dlpack

    if assumed_align is None:
        return _from_dlpack(tensor)
    return _from_dlpack(tensor, assumed_align=assumed_align)


def fake_tensor(dtype: Any, extents: tuple[Any, ...], **options: Any) -> Any:
    """A compact fake tensor (no memory) for compiling on the CPU."""
    from cutlass.cute.runtime import make_fake_compact_tensor

    return make_fake_compact_tensor(dtype, extents, **options)


def dtype(name: str) -> Any:
    """The DSL element type called ``name`` (``"Float16"`` -> ``cutlass.Float16``)."""
    import cutlass

    return getattr(cutlass, name)


def cu_stream(raw: int) -> Any:
    """A ``cuda.CUstream`` over a raw stream handle."""
    return _driver().CUstream(raw)


# -- raw pointers (the torch operator's fast path) -------------------------------------------------
def gmem_pointer_maker() -> tuple[Callable[..., Any], Any]:
    """``(make_ptr, gmem)``: ``make_ptr(dtype, address, gmem, align)`` is a global pointer.

    Returned as a pair so that a hot loop calls the DSL's function without a lookup.
    """
    from cutlass.cute import AddressSpace
    from cutlass.cute.runtime import make_ptr

    return make_ptr, AddressSpace.gmem


MAX_POINTERS = 6
"""Pointers :func:`pointer_entry` takes at most."""


def pointer_entry(launcher: Any, layouts: Sequence[tuple[Any, Any]]) -> Any:
    """A ``@cute.jit`` ``(p0, ..., pN-1, stream)`` viewing each pointer with its layout.

    One explicit parameter per pointer: the DSL passes a tuple argument much more slowly.
    Returns None for more than :data:`MAX_POINTERS` pointers.
    """
    import cutlass.cute as cute

    def call(ptrs: tuple[Any, ...], stream: Any) -> None:
        views = [
            cute.make_tensor(p, cute.make_layout(shape, stride=stride))
            for p, (shape, stride) in zip(ptrs, layouts, strict=True)
        ]
        launcher(*views, stream)

    @cute.jit
    def e1(p0, stream):  # type: ignore[no-untyped-def]
        call((p0,), stream)

    @cute.jit
    def e2(p0, p1, stream):  # type: ignore[no-untyped-def]
        call((p0, p1), stream)

    @cute.jit
    def e3(p0, p1, p2, stream):  # type: ignore[no-untyped-def]
        call((p0, p1, p2), stream)

    @cute.jit
    def e4(p0, p1, p2, p3, stream):  # type: ignore[no-untyped-def]
        call((p0, p1, p2, p3), stream)

    @cute.jit
    def e5(p0, p1, p2, p3, p4, stream):  # type: ignore[no-untyped-def]
        call((p0, p1, p2, p3, p4), stream)

    @cute.jit
    def e6(p0, p1, p2, p3, p4, p5, stream):  # type: ignore[no-untyped-def]
        call((p0, p1, p2, p3, p4, p5), stream)

    entries = (e1, e2, e3, e4, e5, e6)
    n = len(layouts)
    return entries[n - 1] if 1 <= n <= MAX_POINTERS else None


# -- shared memory and pipelines inside the kernel -------------------------------------------------
def smem_allocator() -> Any:
    """A new ``cutlass.memory.SmemAllocator`` (kernel trace time)."""
    from cutlass.memory import SmemAllocator

    return SmemAllocator()


def uint8() -> Any:
    """``cutlass.Uint8``."""
    import cutlass

    return cutlass.Uint8


def byte_array(ptr: Any, size: int) -> Any:
    """``size`` bytes at ``ptr`` as a ``cutlass.Array`` of ``Uint8``."""
    import cutlass

    return cutlass.Array(ptr, dtype=cutlass.Uint8, shape=(size,))


def typed_array(ptr: Any, element: Any, count: int) -> Any:
    """``count`` elements of ``element`` at byte pointer ``ptr`` as an SMEM ``cutlass.Array``."""
    import cutlass
    import cutlass.cute as cute

    typed = cute.recast_ptr(ptr, dtype=element)
    return cutlass.Array(typed, dtype=element, shape=(count,), addrspace=3)


def warp_in_range(start: int, end: int, cta_rank: int | None = None) -> Any:
    """``start <= warp < end`` (and this CTA's rank in its cluster is ``cta_rank``), a Boolean."""
    import cutlass.cute as cute

    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    selected = (warp >= start) & (warp < end)
    if cta_rank is not None:
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        selected = selected & (rank == cta_rank)
    return selected


def cosize(layout: Any) -> int:
    """Elements a layout spans (``cute.cosize``)."""
    import cutlass.cute as cute

    return int(cute.cosize(layout))


def typed_view(ptr: Any, element: Any, count: int, layout: Any = None) -> Any:
    """A tensor of ``element`` at byte pointer ``ptr``: 1-D of ``count``, or ``layout``."""
    import cutlass.cute as cute

    typed = cute.recast_ptr(ptr, dtype=element)
    return cute.make_tensor(typed, cute.make_layout(count) if layout is None else layout)


def async_thread_op() -> Any:
    """``cutlass.pipeline.PipelineOp.AsyncThread``; ``"AsyncThread"`` without the DSL."""
    try:
        from cutlass.pipeline import PipelineOp
    except ImportError:  # planning on a machine without the CuTe DSL
        return "AsyncThread"
    return PipelineOp.AsyncThread
