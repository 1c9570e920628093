"""The Hopper GEMM on the host: inputs, the torch reference, checks, timing.

Used by ``gemm.py``, ``bench/gemm.py`` and ``bench/gemm_sweep.py``. FP8 (``dtype="e4m3"``):
A and B are ``torch.float8_e4m3fn`` (rounded from randn), C is bf16, the scales fp32 (random in
``[0.5, 1.5)``); the reference is the fp32 product of the same FP8 values times the same
scales, and ``torch._scaled_mm`` is the baseline.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
from _gemm_config import (
    GemmConfig,
)
from _timing import MEASURE_S, GraphTimer, best_of_rounds, cu_stream, steady_iters, time_ms
from cutlass.tensor_utils import LayoutEnum

from task_scheduling.kernel import RuntimeConfigError, UnsupportedOnTarget

TMA_ALIGN = 16  # bytes: TMA wants 16-byte aligned base addresses and leading strides
DTYPE_ALIASES = {"fp8": "e4m3"}  # CLI spellings of a GemmConfig dtype
REL_TOL = 1e-2
"""Tolerance of ``check``: max |C - ref| <= REL_TOL * max |ref| (ref in fp32 from the same
inputs; a bf16 / fp16 C alone rounds by up to 2^-8 relative)."""


TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "e4m3": "float8_e4m3fn"}
"""torch's name of each ``GemmConfig`` dtype (``torch.<name>``)."""


def _torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, TORCH_DTYPES[name])


def _matrix(cfg: GemmConfig, rows: int, cols: int, layout: LayoutEnum, gen: Any) -> Any:
    """A random ``rows x cols`` view: ``cols`` contiguous for ROW_MAJOR, else ``rows``.

    TMA needs 16-byte aligned strides, so the contiguous extent gets a padded pitch (the
    tensor is a view of a wider buffer; the pad is never read). FP8 values are randn rounded
    to e4m3 (randn has no 8-bit dtype).
    """
    import torch

    per = TMA_ALIGN * 8 // cfg.element.width  # elements per 16 bytes
    row_major = layout == LayoutEnum.ROW_MAJOR
    outer, inner = (rows, cols) if row_major else (cols, rows)
    size = (outer, -(-inner // per) * per)
    if cfg.fp8:
        full = torch.randn(*size, device="cuda", generator=gen).to(_torch_dtype(cfg.dtype))
    else:
        full = torch.randn(*size, device="cuda", dtype=_torch_dtype(cfg.dtype), generator=gen)
    return full[:, :inner] if row_major else full[:, :inner].t()


def fake_operands(cfg: GemmConfig) -> tuple[Any, ...]:
    """Fake A, B (majors by ``cfg.layout``), N-major C and the bias (None unless ``cfg.bias``),
    the counters (None unless dynamic), then, with ``cfg.scale``, no stream and the scales.

    Dynamic shapes and leading strides (16-byte multiples): a K-major ``rows x K`` operand has
    strides ``(ld, 1)``, an M- / N-major one ``(1, ld)``.
    """
    from cutlass.cute.runtime import make_fake_tensor

    m, n, k = (cute.sym_int32() for _ in range(3))
    lda, ldb = (cute.sym_int64(divisibility=TMA_ALIGN * 8 // cfg.element.width) for _ in "ab")
    ldc = cute.sym_int64(divisibility=TMA_ALIGN * 8 // cfg.out_element.width)

    def fake(
        dtype: Any, rows: Any, cols: Any, ld: Any, layout: LayoutEnum = LayoutEnum.ROW_MAJOR
    ) -> Any:
        stride = (ld, 1) if layout == LayoutEnum.ROW_MAJOR else (1, ld)
        return make_fake_tensor(dtype, (rows, cols), stride, assumed_align=16)

    def vector(dtype: Any, size: Any, align: int = 16) -> Any:
        return make_fake_tensor(dtype, (size,), (1,), assumed_align=align)

    bias = vector(cfg.out_element, n) if cfg.bias else None
    counters = vector(cutlass.Int32, 2, 4) if cfg.dynamic else None
    if cfg.split:  # one counter per output tile, and the partial tiles' workspace
        counters = vector(cutlass.Int32, cute.sym_int32(), 4)
    operands = (
        fake(cfg.element, m, k, lda, cfg.a_layout),
        fake(cfg.element, n, k, ldb, cfg.b_layout),
        fake(cfg.out_element, m, n, ldc),
        bias,
        counters,
    )
    scales: tuple[Any, ...] = (None, None)
    if cfg.scaled:
        rows, cols = (m, n) if cfg.scale == "rowwise" else (1, 1)
        scales = (vector(cutlass.Float32, rows), vector(cutlass.Float32, cols))
    if cfg.split:
        return (*operands, None, *scales, vector(cutlass.Float32, cute.sym_int32()))
    return (*operands, None, *scales) if cfg.scaled else operands


def make_inputs(cfg: GemmConfig, mnk: tuple[int, int, int], seed: int = 0) -> tuple[Any, Any]:
    """Random A (``M x K``) and B (``N x K``) on the GPU, strided by ``cfg.layout``.

    A K-major operand is a row-major view, an M- / N-major one the transpose of a row-major
    ``K x M`` / ``K x N`` buffer; either way the pitch is padded to 16 bytes.
    """
    import torch

    m, n, k = mnk
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return _matrix(cfg, m, k, cfg.a_layout, gen), _matrix(cfg, n, k, cfg.b_layout, gen)


def make_output(cfg: GemmConfig, m: int, n: int, seed: int = 1) -> Any:
    """An ``M x N`` output with a 16-byte aligned row pitch.

    NaN-filled (every element must be written), or random when ``beta != 0`` (the old C).
    """
    import torch

    np_, dt = -(-n // 8) * 8, _torch_dtype(cfg.out_dtype)
    if cfg.beta == 0.0:
        full = torch.full((m, np_), float("nan"), device="cuda", dtype=dt)
        return full[:, :n]
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(m, np_, device="cuda", dtype=dt, generator=gen)[:, :n]


def output_tiles(cfg: GemmConfig, m: int, n: int) -> int:
    """The ``ceil(M / BM) x ceil(N / BN)`` output tiles of an ``M x N`` problem."""
    return -(-m // cfg.tile_mn[0]) * -(-n // cfg.tile_mn[1])


def workspace_elements(cfg: GemmConfig, m: int, n: int) -> int:
    """Split-K: fp32 elements of the partial tiles, ``tiles x split_k x BM x BN``; a tail
    split: its tail tiles' only (``_gemm_split.tail_workspace_elements``); 0 without."""
    from _gemm_split import tail_workspace_elements

    if not cfg.split:
        return 0
    if cfg.tail or cfg.stream_k:
        return tail_workspace_elements(cfg, m, n)
    return output_tiles(cfg, m, n) * cfg.split_k * cfg.tile_mn[0] * cfg.tile_mn[1]


def make_counters_tensor(cfg: GemmConfig, m: int = 0, n: int = 0) -> Any:
    """Zeroed Int32 counters: the dynamic scheduler's two, or split-K's one per output tile of
    the ``M x N`` problem (a tail split's: per tail tile, ``_gemm_split.tail_tiles``; the
    tile's last item zeroes its counter again); None otherwise."""
    import torch
    from _gemm_split import tail_tiles

    if cfg.split:
        tail = cfg.tail or cfg.stream_k
        size = max(1, tail_tiles(cfg, m, n) if tail else output_tiles(cfg, m, n))
        return torch.zeros(size, dtype=torch.int32, device="cuda")
    return torch.zeros(2, dtype=torch.int32, device="cuda") if cfg.dynamic else None


def make_workspace(cfg: GemmConfig, m: int, n: int) -> Any:
    """Split-K's fp32 workspace for an ``M x N`` problem (``workspace_elements``; its contents
    need no initial value: every item writes its partial before the last one reads), else None.
    A tail split's holds its tail tiles' partials only.
    """
    import torch

    if not cfg.split:
        return None
    return torch.empty(max(1, workspace_elements(cfg, m, n)), device="cuda")


def to_counters(t: Any) -> Any:
    """The counters as a CuTe tensor (or None)."""
    from cutlass.cute.runtime import from_dlpack

    return None if t is None else from_dlpack(t, assumed_align=4)


def make_bias(cfg: GemmConfig, n: int, seed: int = 2) -> Any:
    """A random bias ``N``-vector when ``cfg.bias``, else None."""
    import torch

    if not cfg.bias:
        return None
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(n, device="cuda", dtype=_torch_dtype(cfg.out_dtype), generator=gen)


def make_scales(cfg: GemmConfig, m: int, n: int, seed: int = 3) -> tuple[Any, Any]:
    """fp32 ``(scale_a, scale_b)`` in ``[0.5, 1.5)`` as ``torch._scaled_mm`` takes them.

    ``"tensor"``: one element each (shape ``(1,)``); ``"rowwise"``: ``M x 1`` and ``1 x N``
    (contiguous; the kernel reads them as ``M``- and ``N``-vectors). ``(None, None)`` without
    ``cfg.scale``.
    """
    import torch

    if not cfg.scaled:
        return None, None
    gen = torch.Generator(device="cuda").manual_seed(seed)
    shape_a, shape_b = ((m, 1), (1, n)) if cfg.scale == "rowwise" else ((1,), (1,))
    scale_a = torch.rand(*shape_a, device="cuda", generator=gen) + 0.5
    return scale_a, torch.rand(*shape_b, device="cuda", generator=gen) + 0.5


def to_cute(t: Any) -> Any:
    """A torch tensor (or None) as a CuTe tensor with dynamic shape / pitch (one compile fits all).

    The contiguous mode (stride 1) stays static: mode 1 of a row-major matrix, mode 0 of a
    transposed view or of a vector. An FP8 tensor goes through DLPack as its bytes (uint8)
    and is then retyped: DLPack has no portable 8-bit float code.
    """
    import torch
    from cutlass.cute.runtime import from_dlpack

    if t is None:
        return None
    leading = 1 if t.dim() == 2 and t.stride(1) == 1 else 0
    if t.dtype != torch.float8_e4m3fn:
        return from_dlpack(t, assumed_align=16).mark_layout_dynamic(leading_dim=leading)
    x = from_dlpack(t.view(torch.uint8), assumed_align=16)
    x.element_type = cutlass.Float8E4M3FN
    return x.mark_layout_dynamic(leading_dim=leading)


OPERANDS = ("a", "b", "c", "bias", "counters", "stream", "scale_a", "scale_b", "workspace")
"""The launchers' parameters, in order (``gemm._launcher``)."""


def used_operands(cfg: GemmConfig) -> tuple[str, ...]:
    """The launcher parameters ``cfg`` uses, in order: the others are compile-time Nones.

    A parameter the configuration leaves out is not an argument of the compiled launcher at
    all (``gemm._launcher`` makes it a ``Constexpr``): each None passed at run time costs the
    DSL's argument packing ~4 us, 20 of the 40 us a plain GEMM call cost the host, which at
    2048^3 (a 24 us kernel) left the GPU idle for half of every launch.
    """
    used = {
        "bias": cfg.bias,
        "counters": cfg.dynamic or cfg.split,
        "scale_a": cfg.scaled,
        "scale_b": cfg.scaled,
        "workspace": cfg.split,
    }
    return tuple(name for name in OPERANDS if used.get(name, True))


def kernel_args(
    cfg: GemmConfig,
    a: Any,
    b: Any,
    c: Any,
    bias: Any = None,
    counters: Any = None,
    scale_a: Any = None,
    scale_b: Any = None,
    workspace: Any = None,
    stream: Any = None,
) -> tuple[Any, ...]:
    """The compiled launchers' arguments: ``used_operands(cfg)`` as CuTe values.

    The stream is a ``cuda.CUstream`` (None: torch's current stream), always passed: a kernel
    compiled without one launches on the default stream, which a CUDA-graph capture misses.
    The scales (``make_scales``'s shapes) go in as vectors.
    """
    values = {
        "a": lambda: to_cute(a),
        "b": lambda: to_cute(b),
        "c": lambda: to_cute(c),
        "bias": lambda: to_cute(bias),
        "counters": lambda: to_counters(counters),
        "stream": lambda: cu_stream() if stream is None else stream,
        "scale_a": lambda: to_cute(scale_a.reshape(-1)),
        "scale_b": lambda: to_cute(scale_b.reshape(-1)),
        "workspace": lambda: to_cute(workspace),
    }
    return tuple(values[name]() for name in used_operands(cfg))


def compile_args(cfg: GemmConfig, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``kernel_args``' values with a None for each parameter ``cfg`` does not use: what
    ``cute.compile`` takes (every parameter, the compile-time ones included)."""
    given = dict(zip(used_operands(cfg), args, strict=True))
    return tuple(given.get(name) for name in OPERANDS)


def check_operands(
    cfg: GemmConfig,
    a: Any,
    b: Any,
    c: Any,
    bias: Any = None,
    scale_a: Any = None,
    scale_b: Any = None,
) -> None:
    """Refuse, before any launch, operands the kernel cannot take.

    Reads only ``shape``, ``stride()``, ``dtype``, ``element_size()`` and ``data_ptr()``.
    TMA wants 16-byte aligned base addresses and leading strides (a K-major FP8 operand: a
    row pitch, so for a contiguous one ``K``, that is a multiple of 16); WGMMA reads FP8
    operands K-major only.

    Raises:
        UnsupportedOnTarget: An FP8 operand that is not K-major.
        RuntimeConfigError: Shapes that do not match, a wrong dtype, a major other than
            ``cfg.layout``'s, a misaligned pitch or base, scales of the wrong size.
    """
    m, n, k = a.shape[0], b.shape[0], a.shape[1]
    if tuple(b.shape) != (n, k) or tuple(c.shape) != (m, n):
        raise RuntimeConfigError(
            f"A {tuple(a.shape)}, B {tuple(b.shape)}, C {tuple(c.shape)} are not M x K, "
            "N x K, M x N",
            resource="ab",
            fix="pass B as N x K (C = A @ B^T)",
        )
    k_major = {"A": cfg.a_layout, "B": cfg.b_layout}
    for name, t, dtype in (("A", a, cfg.dtype), ("B", b, cfg.dtype), ("C", c, cfg.out_dtype)):
        want = TORCH_DTYPES[dtype]
        if str(t.dtype).removeprefix("torch.") != want:
            raise RuntimeConfigError(
                f"{name} is {t.dtype}, GemmConfig(dtype={cfg.dtype!r}) takes {want}",
                resource="c" if name == "C" else "ab",
                fix=f"convert {name} to torch.{want}",
            )
        if t.numel() == 0:
            continue  # nothing to load or store (torch gives empty tensors any strides)
        row_major = k_major.get(name, LayoutEnum.ROW_MAJOR) == LayoutEnum.ROW_MAJOR
        inner, outer = (1, 0) if row_major else (0, 1)
        if t.shape[inner] > 1 and t.stride(inner) != 1:
            what = ("K" if name != "C" else "N") if row_major else ("M" if name == "A" else "N")
            if cfg.fp8 and name != "C":
                raise UnsupportedOnTarget(
                    f"FP8 {name} is not K-major (strides {tuple(t.stride())}): WGMMA on "
                    "sm_90a reads 8-bit operands K-major only",
                    target="sm_90a",
                    resource="ab",
                    fix=f"pass {name}.contiguous() with K as its last, contiguous mode",
                )
            raise RuntimeConfigError(
                f"{name} {tuple(t.shape)} has strides {tuple(t.stride())}: layout "
                f"{cfg.layout!r} wants {what} contiguous",
                resource="c" if name == "C" else "ab",
                fix="pass a tensor with that major, or the layout that matches it",
            )
        pitch = t.stride(outer) * t.element_size()
        if (t.shape[outer] > 1 and pitch % TMA_ALIGN) or t.data_ptr() % TMA_ALIGN:
            raise RuntimeConfigError(
                f"{name} {tuple(t.shape)} has a pitch of {pitch} bytes (or a base address) "
                f"that is not a multiple of {TMA_ALIGN}: TMA cannot load it"
                + (" (an FP8 K must be a multiple of 16)" if cfg.fp8 and name != "C" else ""),
                resource="c" if name == "C" else "ab",
                fix=f"pad {name}'s rows to a multiple of {TMA_ALIGN} bytes "
                "(a view of a wider, zero-padded buffer)",
            )
    k_blocks = -(-k // cfg.tile_k)
    if cfg.split and k and cfg.split_k > k_blocks:
        raise RuntimeConfigError(
            f"GemmConfig(split_k={cfg.split_k}) splits K = {k} ({k_blocks} blocks of "
            f"{cfg.tile_k}) into more chunks than it has blocks",
            resource="c",
            fix=f"use split_k <= {k_blocks} (or split_k=1)",
        )
    if cfg.stream_k and cfg.max_active_clusters**2 * max(k_blocks, 1) >= 1 << 31:
        raise RuntimeConfigError(
            f"GemmConfig(stream_k=True): K = {k} ({k_blocks} blocks of {cfg.tile_k}) on "
            f"{cfg.max_active_clusters} clusters overflows the 32-bit unit arithmetic of the "
            "stream-K tail",
            resource="c",
            fix="use stream_k=False (or tail_split) for so long a K",
        )
    if workspace_elements(cfg, m, n) >= 1 << 31:
        raise RuntimeConfigError(
            f"GemmConfig(split_k={cfg.split_k}, tail_split={cfg.tail_split}, stream_k="
            f"{cfg.stream_k}): the {m} x {n} "
            f"problem's partial tiles need {workspace_elements(cfg, m, n)} fp32 elements, past "
            "the kernel's 32-bit indices",
            resource="c",
            fix="use a smaller split (split-K is for problems with few output tiles)",
        )
    if not cfg.scaled and (scale_a is not None or scale_b is not None):
        raise RuntimeConfigError(
            "scales given, but GemmConfig(scale='none') takes none",
            resource="c",
            fix="set GemmConfig(scale='tensor' or 'rowwise'), or pass no scales",
        )
    sizes = (m, n) if cfg.scale == "rowwise" else (1, 1)
    scales = zip(("scale_a", "scale_b"), (scale_a, scale_b), sizes, strict=True)
    for name, t, size in scales if cfg.scaled else ():
        ok = t is not None and str(t.dtype) == "torch.float32" and t.numel() == size
        # a vector in any 2-D shape (M x 1, 1 x N): its one extent > 1 is contiguous
        ok = ok and all(st == 1 for d, st in zip(t.shape, t.stride(), strict=True) if d > 1)
        if not ok or t.data_ptr() % TMA_ALIGN:
            raise RuntimeConfigError(
                f"{name} must be a contiguous fp32 tensor of {size} elements for "
                f"GemmConfig(scale={cfg.scale!r}), got "
                + ("None" if t is None else f"{t.dtype} {tuple(t.shape)}"),
                resource="c",
                fix="make it with make_scales (M x 1 / 1 x N, or one element each)",
            )
    if bias is not None and (bias.numel() != n or str(bias.dtype) != str(c.dtype)):
        raise RuntimeConfigError(
            f"bias must be an N-vector of C's dtype, got {bias.dtype} {tuple(bias.shape)}",
            resource="c",
            fix=f"pass an {n}-element {c.dtype} vector",
        )


def reference(
    cfg: GemmConfig,
    a: Any,
    b: Any,
    c_old: Any = None,
    bias: Any = None,
    scale_a: Any = None,
    scale_b: Any = None,
) -> Any:
    """``alpha * s * A @ B^T + beta * C_old + bias`` in fp32 (``s``: the scales, broadcast)."""
    ref = a.float() @ b.float().t()
    if cfg.scaled:
        ref = ref * scale_a.float() * scale_b.float()  # (1,) or (M, 1) and (1, N)
    if cfg.alpha != 1.0:
        ref = cfg.alpha * ref
    if cfg.beta != 0.0:
        ref = ref + cfg.beta * c_old.float()
    if bias is not None:
        ref = ref + bias.float()
    return ref


def check(
    c: Any,
    a: Any,
    b: Any,
    cfg: GemmConfig | None = None,
    c_old: Any = None,
    bias: Any = None,
    scale_a: Any = None,
    scale_b: Any = None,
) -> tuple[bool, float]:
    """Compare with an fp32 reference: ``max |C - ref| <= REL_TOL * max |ref|``.

    The error is relative to the reference's largest magnitude (the reference is computed from
    the same, already rounded, inputs, so only the accumulation order and C's rounding differ).
    """
    import torch

    if c.numel() == 0:
        return True, 0.0  # an empty C: nothing to compare (the kernel must not have crashed)
    ref = reference(cfg or GemmConfig(), a, b, c_old, bias, scale_a, scale_b)
    err = float((c.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-6))
    return bool(torch.isfinite(c).all()) and err < REL_TOL, err


def _scaled_mm_calls(
    cfg: GemmConfig, a: Any, b: Any, scale_a: Any, scale_b: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``torch._scaled_mm`` on the same FP8 inputs and scales, bf16 out: ``(calls, info)``.

    ``torch`` accumulates like the TS kernel without promotion (``use_fast_accum=True``:
    WGMMA's own accumulator), ``torch_accurate`` with cuBLAS's periodic promotion (the default),
    like the TS kernel with ``promote_every`` (``GemmConfig.promotion``). cuBLAS
    wants K and N multiples of 16: other shapes run on zero-padded copies (``info`` says so).
    """
    import torch

    m, n, k = a.shape[0], b.shape[0], a.shape[1]
    one = torch.ones(1, device="cuda")
    sa, sb = (scale_a, scale_b) if cfg.scaled else (one, one)
    kp, np_ = -(-k // 16) * 16, -(-n // 16) * 16
    info: dict[str, Any] = {"baseline": "torch._scaled_mm"}
    a_in, b_in = a.contiguous(), b.contiguous()
    if (kp, np_) != (k, n):
        info["baseline_padded_kn"] = [kp, np_]
        a_in = torch.zeros(m, kp, device="cuda", dtype=a.dtype)
        b_in = torch.zeros(np_, kp, device="cuda", dtype=b.dtype)
        a_in[:, :k], b_in[:n, :k] = a, b
        if cfg.scale == "rowwise":
            sb = torch.cat([sb, torch.ones(1, np_ - n, device="cuda")], dim=1)
    bt = b_in.t()  # column-major K x N, as _scaled_mm wants its second operand

    def call(fast: bool) -> Any:
        out = torch._scaled_mm(a_in, bt, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast)
        return out[:, :n]

    return {"torch": lambda: call(True), "torch_accurate": lambda: call(False)}, info


def first_launch(
    cfg: GemmConfig,
    kernel: Any,
    a: Any,
    b: Any,
    bias: Any = None,
    scale_a: Any = None,
    scale_b: Any = None,
) -> tuple[tuple[Any, ...], bool, float]:
    """Launch a compiled TS kernel once on ``a`` and ``b`` into a fresh C (with its counters
    and workspace) and check it: ``(its launch arguments, ok, error)``. The arguments launch
    it again on the same buffers; ``ok`` also requires the counters back at zero (the last
    CTA, or item, resets them for the next launch)."""
    import torch

    m, n = a.shape[0], b.shape[0]
    c = make_output(cfg, m, n)
    c_old = c.clone() if cfg.beta != 0.0 else None
    counters_t = make_counters_tensor(cfg, m, n)
    check_operands(cfg, a, b, c, bias, scale_a, scale_b)
    workspace = make_workspace(cfg, m, n)
    args = kernel_args(cfg, a, b, c, bias, counters_t, scale_a, scale_b, workspace)
    kernel(*args)
    torch.cuda.synchronize()
    ok, err = check(c, a, b, cfg, c_old, bias, scale_a, scale_b)
    if counters_t is not None:  # the last CTA (or item) zeroed the counters for the next run
        ok = ok and int(counters_t.abs().sum()) == 0
    return args, ok, err


def run_case(
    cfg: GemmConfig,
    compiled: dict[str, Any],
    mnk: tuple[int, int, int],
    iters: int,
    timed: bool = True,
    rounds: int = 6,
    extras: dict[str, Any] | None = None,
    graph: bool = False,
    variants: dict[str, tuple[GemmConfig, Any]] | None = None,
    measure_s: float = MEASURE_S,
) -> dict[str, Any]:
    """Run the compiled kernels and torch's GEMM on the same inputs; check, time, TFLOP/s.

    ``variants`` adds other TS configurations of the same problem: ``{name: (cfg, kernel)}``,
    each ``cfg`` computing what ``cfg`` does (``same_problem``) on another schedule, its
    compiled TS kernel launched on the same inputs (scales, bias, ``beta``'s C included),
    checked and timed like ``compiled``'s.

    ``extras`` adds other plain GEMMs (``C = A @ B^T``, no epilogue options) to the same run:
    ``{name: factory}``, ``factory(a, b, c)`` giving a no-argument launch (e.g. CUTLASS's
    CuTe example, ``bench/_cute_example.py``); each is checked and timed like the kernels, and
    one whose factory or first launch raises is reported (``{"error": ...}``) and not timed.

    torch's GEMM is ``torch.matmul`` (cuBLAS), or ``torch._scaled_mm`` for FP8 (same FP8
    inputs and scales, bf16 out; see ``_scaled_mm_calls``). Every kernel and torch's result is
    checked against the fp32 reference (``check``). Operands are checked before any launch
    (``check_operands``). Timing interleaves the contenders (``rounds`` rounds of every kernel
    and torch, in an order shuffled every round) and keeps each one's best round, so clock /
    power drift during the run biases none of them. A measurement is at least ``iters``
    launches and lasts at least ``measure_s`` seconds (``_timing.steady_iters``; 0: exactly
    ``iters``), so that each contender runs on the clocks its own power draw settles to.
    ``graph`` also times every contender's launches replayed from a CUDA graph
    (``_timing.GraphTimer``: the kernels without the host's per-call work), in the same rounds:
    ``graph_ms`` / ``graph_tflops`` and the ``*_graph`` ratios; a contender that cannot be
    captured gets ``graph_error``.
    """
    import torch

    m, n, k = mnk
    a, b = make_inputs(cfg, mnk)
    bias = make_bias(cfg, n)
    scale_a, scale_b = make_scales(cfg, m, n)
    flop = 2.0 * m * n * k
    result: dict[str, Any] = {"mnk": list(mnk), "config": dataclasses.asdict(cfg)}
    result["promotion"] = cfg.promotion  # the interval in effect (promote_every None: default)
    calls: dict[str, Any] = {}
    binds: dict[str, Any] = {}  # name -> (torch stream -> call on it), for graph timing
    ts_kernels = [(name, cfg, kernel) for name, kernel in compiled.items()]
    for name, (other, kernel) in (variants or {}).items():
        same_problem(cfg, other, name)
        ts_kernels.append((name, other, kernel))
    for name, kcfg, kernel in ts_kernels:
        args, ok, err = first_launch(kcfg, kernel, a, b, bias, scale_a, scale_b)
        result[name] = {"ok": ok, "rel_err": err}
        if name in (variants or {}):  # compiled's kernels run result["config"]
            result[name]["config"] = dataclasses.asdict(kcfg)
            # FP8 on a tile with no registers to promote accumulates like use_fast_accum:
            # the interval in effect tells such a contender from the entry it is timed against
            result[name]["promotion"] = kcfg.promotion
        calls[name] = lambda kk=kernel, aa=args: kk(*aa)
        binds[name] = lambda s, kk=kernel, aa=args, kc=kcfg: on_stream(kc, kk, aa, s)
    plain = dataclasses.replace(cfg, alpha=1.0, beta=0.0, bias=False, scale="none")
    for name, factory in (extras or {}).items():
        c = make_output(plain, m, n)
        try:
            call = factory(a, b, c)
            call()
            torch.cuda.synchronize()
        except Exception as e:  # an outside kernel: report it, keep measuring the others
            result[name] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"}
            continue
        ok, err = check(c, a, b, plain)
        result[name] = {"ok": ok, "rel_err": err}
        calls[name] = call
        binds[name] = lambda _s, f=factory, cc=c: f(a, b, cc)  # made on the current stream
    if not timed or flop == 0:
        return result  # an empty problem has nothing to time
    if cfg.fp8:
        torch_calls, info = _scaled_mm_calls(cfg, a, b, scale_a, scale_b)
        result.update(info)
        # The baseline's own error (its scales and rounding are the kernel's; alpha / beta /
        # bias are not part of it). A variant this torch / cuBLAS refuses is reported, not run.
        plain = dataclasses.replace(cfg, alpha=1.0, beta=0.0, bias=False)
        for name, call in torch_calls.items():
            try:
                out = call()
            except RuntimeError as e:
                result[name] = {"error": str(e).splitlines()[0][:300]}
                continue
            ok, err = check(out, a, b, plain, scale_a=scale_a, scale_b=scale_b)
            result[name] = {"ok": ok, "rel_err": err}
            calls[name] = call
            binds[name] = lambda _s, f=call: f
    else:
        bt = b.t()
        calls["torch"] = lambda: torch.matmul(a, bt)
        binds["torch"] = lambda _s: calls["torch"]
        result["baseline"] = "torch.matmul"
    iters = steady_iters(iters, flop, measure_s)
    result["iters"] = iters
    timers = _graph_timers(binds, iters, result) if graph else {}
    measures: dict[str, Any] = {}
    for name, call in calls.items():  # eager and graph timing of a contender side by side
        measures[name] = lambda c=call: time_ms(c, iters)
        if name in timers:
            measures[f"{name} (graph)"] = timers[name].ms
    best_all = best_of_rounds(measures, rounds)
    best = {name: best_all[name] for name in calls}
    best_graph = {name: best_all[f"{name} (graph)"] for name in timers}
    for name, ms in best.items():
        result.setdefault(name, {}).update(ms=ms, tflops=flop / (ms * 1e9))
    for name, ms in best_graph.items():
        result[name].update(graph_ms=ms, graph_tflops=flop / (ms * 1e9))
    for name in [*(n for n, _, _ in ts_kernels), *(n for n in extras or {} if n in calls)]:
        for base in ("torch", "torch_accurate"):
            if base in calls:
                result[f"{name}_over_{base}"] = result[name]["tflops"] / result[base]["tflops"]
            if name in best_graph and base in best_graph:
                result[f"{name}_over_{base}_graph"] = best_graph[base] / best_graph[name]
    return result


PROBLEM_FIELDS = ("dtype", "layout", "alpha", "beta", "bias", "scale")
"""``GemmConfig``'s fields that say what is computed; the others say how (the schedule, the
promotion interval)."""


def same_problem(cfg: GemmConfig, other: GemmConfig, name: str) -> None:
    """Refuse a ``run_case`` variant that computes something else than ``cfg``.

    Raises:
        RuntimeConfigError: A field of ``PROBLEM_FIELDS`` differs (the variant's check and its
            comparison with torch would be against another problem).
    """
    differ = [f for f in PROBLEM_FIELDS if getattr(cfg, f) != getattr(other, f)]
    if differ:
        mine = {f: getattr(cfg, f) for f in differ}
        theirs = {f: getattr(other, f) for f in differ}
        raise RuntimeConfigError(
            f"run_case variant {name!r} computes another problem: {theirs} against {mine}",
            resource=name,
            fix="give it the same dtype, layout, alpha, beta, bias and scale (only the "
            "schedule may differ)",
        )


def on_stream(cfg: GemmConfig, kernel: Any, args: tuple[Any, ...], stream: Any) -> Any:
    """A call of ``kernel(*args)`` (``kernel_args``) on the torch ``stream`` (its
    ``cuda.CUstream`` in the launchers' stream slot)."""
    slot = used_operands(cfg).index("stream")
    bound = (*args[:slot], cu_stream(stream), *args[slot + 1 :])
    return lambda: kernel(*bound)


def _graph_timers(binds: dict[str, Any], iters: int, result: dict[str, Any]) -> dict[str, Any]:
    """A ``GraphTimer`` per contender; one that cannot be captured is reported, not timed."""
    timers: dict[str, Any] = {}
    for name, bind in binds.items():
        try:
            timers[name] = GraphTimer(bind, iters)
        except Exception as e:  # e.g. a launch path that synchronizes: eager timing stays
            result.setdefault(name, {})["graph_error"] = f"{type(e).__name__}: {e}"[:300]
    return timers
