"""Drive CUTLASS's own CuTe DSL Hopper persistent GEMM example on TS's GEMM tensors.

The example (``examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm/dense_gemm_persistent.py``
in github.com/NVIDIA/cutlass) is NVIDIA's code: it is never part of this repository.
``tools/fetch_cute_example.sh`` puts it at ``.gpu/cute_example/dense_gemm_persistent.py``
(git-ignored) and ``bench/gemm_sweep.py --cute-example PATH`` loads it from there. This module
only knows the example's public face: a kernel class built from the accumulator type, the CTA
tile, the cluster shape, a swizzle size and the raster order, called (through ``cute.compile``)
with ``M x K x L`` A, ``N x K x L`` B and ``M x N x L`` C tensors, the number of clusters that
fit on the GPU and a CUDA stream. TS's GEMM tensors are its ``L = 1`` case.
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

DEFAULT_PATH = (
    Path(__file__).resolve().parent.parent / ".gpu" / "cute_example" / "dense_gemm_persistent.py"
)
KERNEL_CLASS = "HopperWgmmaGemmPersistentKernel"
TILE = (128, 256)  # the configuration the GEMM sweep compares against
CLUSTER = (2, 1)
SMS = 132


@contextmanager
def _quiet() -> Iterator[None]:
    """The example (written for an older DSL) uses APIs that 4.8 deprecates: not ours to fix."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


def load(path: Path) -> ModuleType:
    """The example file as a module.

    Raises:
        FileNotFoundError: No file at ``path`` (run ``tools/fetch_cute_example.sh``).
        AttributeError: The file has no ``HopperWgmmaGemmPersistentKernel``.
    """
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no CuTe example there (run tools/fetch_cute_example.sh)")
    spec = importlib.util.spec_from_file_location("cute_example_dense_gemm_persistent", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with _quiet():
        spec.loader.exec_module(module)
    if not hasattr(module, KERNEL_CLASS):
        raise AttributeError(f"{path} has no {KERNEL_CLASS}: not the CuTe persistent GEMM example")
    return module


def make_kernel(
    module: ModuleType, tile: tuple[int, int] = TILE, cluster: tuple[int, int] = CLUSTER
) -> Any:
    """The example's kernel object: fp32 accumulation, no swizzle, rastered along M."""
    import cutlass

    with _quiet():
        return getattr(module, KERNEL_CLASS)(cutlass.Float32, tile, cluster, 1, True)


def compile_fake(path: Path, dtype: str = "bf16") -> Any:
    """CPU: compile the example for sm_90a with fake ``M x K x 1`` / ``N x K x 1`` / ``M x N x 1``
    tensors (dynamic extents, 16-byte aligned pitches), as the sweep calls it."""
    import cuda.bindings.driver as cuda  # type: ignore[import-untyped]
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_tensor

    element = {"bf16": cutlass.BFloat16, "fp16": cutlass.Float16}[dtype]
    m, n, k = (cute.sym_int32() for _ in range(3))
    lda, ldb, ldc = (cute.sym_int64(divisibility=8) for _ in range(3))

    def fake(rows: Any, cols: Any, ld: Any) -> Any:
        return make_fake_tensor(element, (rows, cols, 1), (ld, 1, 0), assumed_align=16)

    module = load(path)
    kernel = make_kernel(module)
    clusters = SMS // (CLUSTER[0] * CLUSTER[1])
    with _quiet():
        # sm_90a whatever CUTE_DSL_ARCH the process started with (the example is Hopper-only)
        return cute.compile(
            kernel,
            fake(m, k, lda),
            fake(n, k, ldb),
            fake(m, n, ldc),
            clusters,
            cuda.CUstream(0),
            options="--gpu-arch sm_90a",
        )


def _as_mkl(t: Any) -> Any:
    """A row-major ``rows x cols`` torch view as a CuTe ``rows x cols x 1`` tensor (dynamic)."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    rows, cols = t.shape
    # L's stride: one whole matrix further (a 16-byte multiple, as TMA wants for every stride)
    view = torch.as_strided(t, (rows, cols, 1), (t.stride(0), 1, rows * t.stride(0)))
    return from_dlpack(view, assumed_align=16).mark_layout_dynamic(leading_dim=1)


class CuteExample:
    """The example compiled once (dynamic shapes) on the GPU, launched on TS's tensors.

    ``launcher(a, b, c)`` gives a no-argument call that computes ``C = A @ B^T`` for K-major
    ``A`` (``M x K``), ``B`` (``N x K``) and row-major ``C`` (``M x N``), on torch's current
    stream (the one the sweep times on).
    """

    def __init__(self, path: Path) -> None:
        import cutlass.utils
        import torch

        # HardwareInfo asks the driver directly: it needs the driver initialised and a current
        # context, which torch makes only lazily (else CUDA_ERROR_NOT_INITIALIZED).
        torch.zeros(1, device="cuda")
        self.module = load(path)
        self.kernel = make_kernel(self.module)
        with _quiet():  # as the example itself asks the driver
            info = cutlass.utils.HardwareInfo()
            self.clusters = info.get_max_active_clusters(CLUSTER[0] * CLUSTER[1])
        self.compiled: Any = None

    def launcher(self, a: Any, b: Any, c: Any) -> Callable[[], None]:
        import cuda.bindings.driver as cuda
        import cutlass.cute as cute
        import torch

        args = (_as_mkl(a), _as_mkl(b), _as_mkl(c))
        stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
        if self.compiled is None:
            with _quiet():
                self.compiled = cute.compile(self.kernel, *args, self.clusters, stream)
        compiled = self.compiled
        return lambda: compiled(*args, stream)
