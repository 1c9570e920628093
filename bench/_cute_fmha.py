"""Drive CUTLASS's own CuTe DSL Hopper FMHA example on TS's attention tensors.

The example (``examples/python/CuTeDSL/cute/hopper/kernel/attention/fmha.py`` in
github.com/NVIDIA/cutlass, with the ``helpers`` package it imports) is NVIDIA's code: it is
never part of this repository. ``tools/fetch_cute_fmha.sh`` puts it at
``.gpu/cute_example/fmha.py`` (git-ignored) and ``bench/attention.py --cute-fmha PATH`` loads it
from there. This module only knows the example's public face:

- a kernel class built from the two accumulator types, the ``(M, N, D)`` MMA tile (two
  warpgroups of ``M`` rows make one CTA tile), a persistent flag and a mask type
  (``fmha_helpers.MaskEnum``), with a static ``can_implement`` that says which configurations
  it takes;
- called (through ``cute.compile``) with 5-mode tensors ``q, o: (S, D, Hr, Hkv, B)``,
  ``k, v: (S, D, 1, Hkv, B)`` (``D`` contiguous; query head ``i`` reads key / value head
  ``i // Hr``, torch's GQA convention) and an fp32 ``lse: (S, 1, Hr, Hkv, B)``, the softmax scale
  in base 2 and base e, an output scale, the left / right window sizes (``None`` = no window;
  causal is a right window of 0) and a CUDA stream.

TS's ``(B, H, S, D)`` tensors are views of that order (no copy), so both kernels read the same
bytes. The configuration is the one the attention benchmark compares against: tile 64 x 128,
persistent, fp32 accumulation.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

DEFAULT_PATH = Path(__file__).resolve().parent.parent / ".gpu" / "cute_example" / "fmha.py"
KERNEL_CLASS = "HopperFusedMultiHeadAttentionForward"
TILE = (64, 128)  # the configuration bench/attention.py compares against
PERSISTENT = True
_HELPERS = "helpers.fmha_helpers"


@contextmanager
def _quiet() -> Iterator[None]:
    """The example (written for an older DSL) uses APIs that 4.8 deprecates, and its mask
    unrolls a 64-step constant loop that the DSL warns about: not ours to fix. Where warnings
    are errors (pytest here) that warning would even fail the trace: the DSL turns any
    exception in its loop-bound check into "bounds not constant"."""
    from cutlass.base_dsl.ast_helpers import DSLOptimizationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", DSLOptimizationWarning)
        yield


def load(path: Path) -> ModuleType:
    """The example file as a module (its ``helpers`` package must sit beside it).

    Raises:
        FileNotFoundError: No file at ``path`` (run ``tools/fetch_cute_fmha.sh``).
        AttributeError: The file has no ``HopperFusedMultiHeadAttentionForward``.
    """
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no CuTe FMHA example there (run tools/fetch_cute_fmha.sh)"
        )
    # The example imports ``helpers`` as a top-level package (CUTLASS's examples/python/CuTeDSL
    # on the path); the fetch script puts it in the example's folder.
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location("cute_example_fmha", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with _quiet():
        spec.loader.exec_module(module)
    if not hasattr(module, KERNEL_CLASS):
        raise AttributeError(f"{path} has no {KERNEL_CLASS}: not the CuTe Hopper FMHA example")
    return module


def _element(dtype: str) -> Any:
    import cutlass

    return {"fp16": cutlass.Float16, "bf16": cutlass.BFloat16}[dtype]


class Refused(Exception):
    """A case the example does not take in the compared configuration (its ``can_implement``)."""


def refusal(module: ModuleType, b: int, s: int, h: int, hkv: int, d: int, dtype: str) -> str:
    """Why the example does not take this case in the compared configuration ("" if it does),
    in the example's own words (its ``can_implement``): e.g. D = 256 needs a non-persistent
    64 x 256 tile there, so the 64 x 128 persistent column is n/a for it."""
    import cutlass

    element = _element(dtype)
    with _quiet():
        ok, why = getattr(module, KERNEL_CLASS).can_implement(
            (b, s, h, d),
            (b, s, hkv, d),
            element,
            element,
            cutlass.Float32,
            cutlass.Float32,
            TILE,
            PERSISTENT,
            1.0 / math.sqrt(d),
            (-1, -1),  # no sliding window (causal is passed at the call)
            1,
        )
    return "" if ok else f"the example refuses it: {why}"


def mask_type(s: int, causal: bool) -> Any:
    """The example's mask for a self-attention of length ``s``: causal is its window mask
    with a right window of 0; otherwise the residual mask when the last key tile is partial,
    else the window mask with no window (as the example's own runner picks)."""
    masks = importlib.import_module(_HELPERS).MaskEnum
    if not causal and s % TILE[1]:
        return masks.RESIDUAL_MASK
    return masks.WINDOW_MASK


def make_kernel(module: ModuleType, d: int, mask: Any) -> Any:
    """The example's kernel object: fp32 accumulation for both GEMMs, tile 64 x 128 x D,
    persistent."""
    import cutlass

    with _quiet():
        return getattr(module, KERNEL_CLASS)(
            cutlass.Float32, cutlass.Float32, (*TILE, d), PERSISTENT, mask
        )


def scalars(d: int, causal: bool) -> tuple[Any, ...]:
    """The call's arguments after the tensors, before the stream: TS's softmax scale
    ``1 / sqrt(D)`` (base 2 and base e), output scale 1, no left window, a right window of 0
    for causal (else none)."""
    import cutlass

    scale = 1.0 / math.sqrt(d)
    right = cutlass.Int32(0) if causal else None
    return (
        cutlass.Float32(scale * math.log2(math.e)),
        cutlass.Float32(scale),
        cutlass.Float32(1.0),
        None,
        right,
    )


SMS = 132  # H100 / H200


class _FixedSms:
    """Stands in for ``cutlass.utils.HardwareInfo`` where there is no GPU driver."""

    def get_device_multiprocessor_count(self) -> int:
        return SMS


@contextmanager
def _without_driver() -> Iterator[None]:
    """The persistent grid's size is the SM count, read from the driver while the kernel is
    traced (the helpers module calls ``HardwareInfo()``): on a machine without one, trace it
    with the H200's 132."""
    helpers = importlib.import_module(_HELPERS)
    real = getattr(helpers, "HardwareInfo")  # noqa: B009 (a module's attribute: mypy)
    setattr(helpers, "HardwareInfo", _FixedSms)  # noqa: B010
    try:
        yield
    finally:
        setattr(helpers, "HardwareInfo", real)  # noqa: B010


def compile_fake(
    path: Path, dtype: str = "fp16", d: int = 128, causal: bool = False, ragged: bool = False
) -> Any:
    """CPU: compile the example for sm_90a with fake 5-mode tensors laid out as
    ``CuteFmha.launcher`` passes TS's ``(B, H, S, D)`` tensors (every extent and stride
    dynamic except ``D``'s unit stride, 16-byte aligned); ``ragged``: the mask for an ``S``
    that is not a multiple of the key tile."""
    import cuda.bindings.driver as cuda  # type: ignore[import-untyped]
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_tensor

    element = _element(dtype)
    s, dd, hr, hkv, b = (cute.sym_int32() for _ in range(5))
    one = cute.sym_int32()

    def fake(elem: Any, shape: tuple[Any, ...], divisibility: int) -> Any:
        # (S, D, Hr, Hkv, B) with D contiguous; the other strides whole rows / heads / batches
        strides: tuple[Any, ...] = (cute.sym_int64(divisibility=divisibility), 1)
        strides += tuple(cute.sym_int64(divisibility=divisibility) for _ in range(3))
        return make_fake_tensor(elem, shape, strides, assumed_align=16)

    q, o = fake(element, (s, dd, hr, hkv, b), 8), fake(element, (s, dd, hr, hkv, b), 8)
    k, v = fake(element, (s, dd, one, hkv, b), 8), fake(element, (s, dd, one, hkv, b), 8)
    lse = fake(cutlass.Float32, (s, one, hr, hkv, b), 1)
    module = load(path)
    kernel = make_kernel(module, d, mask_type(TILE[1] + int(ragged), causal))
    with _quiet(), _without_driver():
        # sm_90a whatever CUTE_DSL_ARCH the process started with (the example is Hopper-only)
        return cute.compile(
            kernel,
            q,
            k,
            v,
            o,
            lse,
            *scalars(d, causal),
            cuda.CUstream(0),
            options="--gpu-arch sm_90a",
        )


def _five_mode(t: Any, groups: int) -> Any:
    """A ``(B, H, S, D)`` torch tensor as the example's ``(S, D, Hr, Hkv, B)`` (a view; ``D``
    may be 1 for the LSE, ``groups`` = ``Hr``)."""
    from cutlass.cute.runtime import from_dlpack

    b, h, s, d = t.shape
    view = t.view(b, h // groups, groups, s, d).permute(3, 4, 2, 1, 0)
    return from_dlpack(view, assumed_align=16).mark_layout_dynamic(leading_dim=1)


class CuteFmha:
    """The example compiled once per (dtype, D, mask, GQA group), launched on TS's tensors.

    ``launcher(q, k, v, causal)`` gives a no-argument call that writes softmax(QK^T / sqrt(D))V
    for ``(B, H, S, D)`` ``q`` and ``(B, Hkv, S, D)`` ``k``, ``v`` into ``self.o`` (same
    shape as ``q``) and the natural-log LSE into ``self.lse`` (``(B, H, S, 1)``, fp32), on torch's
    current stream (the one the bench times on).
    """

    def __init__(self, path: Path) -> None:
        import torch

        # The persistent grid asks the driver for the SM count: it needs a current context,
        # which torch makes only lazily (else CUDA_ERROR_NOT_INITIALIZED).
        torch.zeros(1, device="cuda")
        self.module = load(path)
        self.compiled: dict[tuple[Any, ...], Any] = {}
        self.o: Any = None
        self.lse: Any = None

    def launcher(self, q: Any, k: Any, v: Any, causal: bool) -> Callable[[], None]:
        """Raises ``Refused`` for a case the example does not take (see ``refusal``)."""
        import cuda.bindings.driver as cuda
        import cutlass.cute as cute
        import torch

        b, h, s, d = q.shape
        hkv = k.shape[1]
        dtype = {torch.float16: "fp16", torch.bfloat16: "bf16"}[q.dtype]
        why = refusal(self.module, b, s, h, hkv, d, dtype)
        if why:
            raise Refused(why)
        self.o = torch.empty_like(q)
        self.lse = torch.empty(b, h, s, 1, device=q.device, dtype=torch.float32)
        g = h // hkv
        args = (
            _five_mode(q, g),
            _five_mode(k, 1),
            _five_mode(v, 1),
            _five_mode(self.o, g),
            _five_mode(self.lse, g),
            *scalars(d, causal),
        )
        stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
        mask = mask_type(s, causal)
        # Hr too: a mode of extent 1 (no GQA) may be traced as a constant
        key = (dtype, d, causal, mask, g)
        if key not in self.compiled:
            with _quiet():
                self.compiled[key] = cute.compile(make_kernel(self.module, d, mask), *args, stream)
        compiled = self.compiled[key]
        return lambda: compiled(*args, stream)


def check(
    host: ModuleType, q: Any, k: Any, v: Any, o: Any, lse: Any, causal: bool
) -> dict[str, Any]:
    """Max errors of ``o`` and ``lse`` (``(B, H, S, 1)``) against ``host.reference`` (the
    fp32 oracle bench/attention.py checks TS with) on the same slices TS is checked on: up to
    four KV heads' query groups of the first and of the last batch (the oracle holds H S^2
    floats)."""
    b, h = q.shape[:2]
    hkv = k.shape[1]
    g = h // hkv
    kvh = max(1, min(hkv, 4 // g))
    err = lse_err = 0.0
    for bi, hk in ((0, 0), (b - 1, hkv - kvh)):
        heads = slice(hk * g, (hk + kvh) * g)
        ref_o, ref_lse = host.reference(
            q[bi : bi + 1, heads],
            k[bi : bi + 1, hk : hk + kvh],
            v[bi : bi + 1, hk : hk + kvh],
            causal,
            None,
        )
        err = max(err, (o[bi : bi + 1, heads].float() - ref_o).abs().max().item())
        mine_lse = lse[bi : bi + 1, heads, :, 0]
        lse_err = max(lse_err, (mine_lse - ref_lse).abs().max().item())
    return {"max_abs_err": err, "lse_max_abs_err": lse_err}


def column(
    fmha: CuteFmha | None,
    note: str,
    host: ModuleType,
    q: Any,
    k: Any,
    v: Any,
    causal: bool,
    work: float,
    iters: int,
    bar: float,
) -> dict[str, Any]:
    """bench/attention.py's ``cute_fmha`` entry for one shape: checked (``ok``: both errors
    within TS's own bar ``bar`` for O and 1e-2 for the LSE) and timed with ``host.time_ms``
    like the SDPA columns, on the same tensors; ``{"skipped": why}`` without the example or for
    a case it refuses, ``{"error": ...}`` when it fails."""
    if fmha is None:
        return {"skipped": note}
    import torch

    try:
        launch = fmha.launcher(q, k, v, causal)  # compiles on the first call per configuration
        launch()
        torch.cuda.synchronize()
        out = check(host, q, k, v, fmha.o, fmha.lse, causal)
        out["ok"] = bool(out["max_abs_err"] <= bar and out["lse_max_abs_err"] < 1e-2)
        out["tflops"] = work / host.time_ms(launch, iters) / 1e9
    except Refused as e:  # n/a for this shape, not a failure
        return {"skipped": f"n/a: {e}"}
    except Exception as e:  # keep the run going: the other columns still stand
        return {"error": f"{type(e).__name__}: {e}"}
    return out


def open_column(path: Path | None) -> tuple[CuteFmha | None, str]:
    """The driver for ``--cute-fmha PATH`` (``None`` = the default path), or ``None`` and a
    note saying why the column is skipped (no file, or it failed to load)."""
    path = path if path is not None else DEFAULT_PATH
    if not path.is_file():
        return None, f"{path} not found (run tools/fetch_cute_fmha.sh)"
    try:
        return CuteFmha(path), ""
    except Exception as e:  # e.g. a file from a CUTLASS revision this DSL does not run
        return None, f"{path}: {type(e).__name__}: {e}"
