"""The Hopper GEMM on the host: inputs, the torch reference, timing, the CLI options.

Used by ``gemm.py`` and ``bench/gemm.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
from _gemm_steps import (
    CLUSTERS,
    DTYPES,
    KERNELS,
    LAYOUTS,
    SCHEDULERS,
    TILES,
    GemmConfig,
)
from cutlass.tensor_utils import LayoutEnum


def _torch_dtype(cfg: GemmConfig) -> Any:
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16}[cfg.dtype]


def _matrix(cfg: GemmConfig, rows: int, cols: int, layout: LayoutEnum, gen: Any) -> Any:
    """A random ``rows x cols`` view: ``cols`` contiguous for ROW_MAJOR, else ``rows``.

    TMA needs 16-byte aligned strides, so the contiguous extent gets a padded pitch (the
    tensor is a view of a wider buffer; the pad is never read).
    """
    import torch

    dt = _torch_dtype(cfg)
    if layout == LayoutEnum.ROW_MAJOR:
        pitch = -(-cols // 8) * 8
        return torch.randn(rows, pitch, device="cuda", dtype=dt, generator=gen)[:, :cols]
    pitch = -(-rows // 8) * 8
    return torch.randn(cols, pitch, device="cuda", dtype=dt, generator=gen)[:, :rows].t()


def fake_operands(cfg: GemmConfig) -> tuple[Any, Any, Any, Any, Any]:
    """Fake A, B (majors by ``cfg.layout``), N-major C and the bias (None unless ``cfg.bias``).

    Dynamic shapes and leading strides: a K-major ``rows x K`` operand has strides
    ``(ld, 1)``, an M- / N-major one ``(1, ld)``.
    """
    from cutlass.cute.runtime import make_fake_tensor

    m, n, k = (cute.sym_int32() for _ in range(3))
    lda, ldb, ldc = (cute.sym_int64(divisibility=8) for _ in range(3))

    def fake(rows: Any, cols: Any, ld: Any, layout: LayoutEnum = LayoutEnum.ROW_MAJOR) -> Any:
        stride = (ld, 1) if layout == LayoutEnum.ROW_MAJOR else (1, ld)
        return make_fake_tensor(cfg.element, (rows, cols), stride, assumed_align=16)

    bias = make_fake_tensor(cfg.element, (n,), (1,), assumed_align=16) if cfg.bias else None
    counters = make_fake_tensor(cutlass.Int32, (2,), (1,), assumed_align=4) if cfg.dynamic else None
    return (
        fake(m, k, lda, cfg.a_layout),
        fake(n, k, ldb, cfg.b_layout),
        fake(m, n, ldc),
        bias,
        counters,
    )


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

    np_ = -(-n // 8) * 8
    if cfg.beta == 0.0:
        full = torch.full((m, np_), float("nan"), device="cuda", dtype=_torch_dtype(cfg))
        return full[:, :n]
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(m, np_, device="cuda", dtype=_torch_dtype(cfg), generator=gen)[:, :n]


def make_counters_tensor(cfg: GemmConfig) -> Any:
    """The dynamic scheduler's two Int32 counters, zero (None for the static scheduler)."""
    import torch

    return torch.zeros(2, dtype=torch.int32, device="cuda") if cfg.dynamic else None


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
    return torch.randn(n, device="cuda", dtype=_torch_dtype(cfg), generator=gen)


def to_cute(t: Any) -> Any:
    """A torch tensor (or None) as a CuTe tensor with dynamic shape / pitch (one compile fits all).

    The contiguous mode (stride 1) stays static: mode 1 of a row-major matrix, mode 0 of a
    transposed view or of a vector.
    """
    from cutlass.cute.runtime import from_dlpack

    if t is None:
        return None
    leading = 1 if t.dim() == 2 and t.stride(1) == 1 else 0
    return from_dlpack(t, assumed_align=16).mark_layout_dynamic(leading_dim=leading)


def reference(cfg: GemmConfig, a: Any, b: Any, c_old: Any = None, bias: Any = None) -> Any:
    """``alpha * A @ B^T + beta * C_old + bias`` in fp32."""
    ref = a.float() @ b.float().t()
    if cfg.alpha != 1.0:
        ref = cfg.alpha * ref
    if cfg.beta != 0.0:
        ref = ref + cfg.beta * c_old.float()
    if bias is not None:
        ref = ref + bias.float()
    return ref


def check(
    c: Any, a: Any, b: Any, cfg: GemmConfig | None = None, c_old: Any = None, bias: Any = None
) -> tuple[bool, float]:
    """Compare with an fp32 reference; error relative to the reference's largest magnitude."""
    import torch

    if c.numel() == 0:
        return True, 0.0  # an empty C: nothing to compare (the kernel must not have crashed)
    ref = reference(cfg or GemmConfig(), a, b, c_old, bias)
    err = float((c.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-6))
    return bool(torch.isfinite(c).all()) and err < 1e-2, err


def time_ms(fn: Any, iters: int) -> float:
    """Mean milliseconds per call over ``iters`` back-to-back launches (after warm-up)."""
    import torch

    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return float(start.elapsed_time(end)) / iters


def run_case(
    cfg: GemmConfig,
    compiled: dict[str, Any],
    mnk: tuple[int, int, int],
    iters: int,
    timed: bool = True,
    rounds: int = 6,
) -> dict[str, Any]:
    """Run the compiled kernels and torch.matmul on the same inputs; check, time, TFLOP/s.

    Timing interleaves the contenders (``rounds`` rounds of every kernel and torch, in an order
    rotated every round) and keeps each one's best round, so clock / power drift during the run
    biases none of them.
    """
    import torch

    m, n, k = mnk
    a, b = make_inputs(cfg, mnk)
    bias = make_bias(cfg, n)
    flop = 2.0 * m * n * k
    result: dict[str, Any] = {"mnk": list(mnk), "config": dataclasses.asdict(cfg)}
    calls: dict[str, Any] = {}
    for name, kernel in compiled.items():
        c = make_output(cfg, m, n)
        c_old = c.clone() if cfg.beta != 0.0 else None
        counters_t = make_counters_tensor(cfg)
        args = (to_cute(a), to_cute(b), to_cute(c), to_cute(bias), to_counters(counters_t))
        kernel(*args)
        torch.cuda.synchronize()
        ok, err = check(c, a, b, cfg, c_old, bias)
        if counters_t is not None:  # the last CTA out zeroed the counters for the next launch
            ok = ok and int(counters_t.abs().sum()) == 0
        result[name] = {"ok": ok, "rel_err": err}
        calls[name] = lambda kk=kernel, aa=args: kk(*aa)
    if not timed or flop == 0:
        return result  # an empty problem has nothing to time
    bt = b.t()
    calls["torch"] = lambda: torch.matmul(a, bt)
    best = dict.fromkeys(calls, float("inf"))
    names = list(calls)
    for r in range(rounds):
        # Rotate the order every round: the first contender after a pause runs on cooler,
        # faster clocks, which would otherwise always favour the same kernel.
        for name in names[r % len(names) :] + names[: r % len(names)]:
            best[name] = min(best[name], time_ms(calls[name], iters))
    for name, ms in best.items():
        result.setdefault(name, {}).update(ms=ms, tflops=flop / (ms * 1e9))
    for name in compiled:
        result[f"{name}_over_torch"] = result[name]["tflops"] / result["torch"]["tflops"]
    return result


def parse_config(args: argparse.Namespace) -> GemmConfig:
    """A ``GemmConfig`` from the CLI options."""
    tile = tuple(int(x) for x in args.tile.split("x"))
    cluster = tuple(int(x) for x in args.cluster.split("x"))
    return GemmConfig(
        tile_mn=(tile[0], tile[1]),
        cluster_mn=(cluster[0], cluster[1]),
        dtype=args.dtype,
        stages=args.stages,
        swizzle=args.swizzle,
        layout=args.layout,
        alpha=args.alpha,
        beta=args.beta,
        bias=args.bias,
        scheduler=args.scheduler,
        kernel=args.kernel,
    )


def add_config_args(parser: argparse.ArgumentParser) -> None:
    """The kernel-configuration options (shared with ``bench/gemm.py``)."""
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--tile", choices=[f"{m}x{n}" for m, n in TILES], default="128x256")
    parser.add_argument("--cluster", choices=[f"{m}x{n}" for m, n in CLUSTERS], default="1x1")
    parser.add_argument("--scheduler", choices=list(SCHEDULERS), default="static")
    parser.add_argument(
        "--kernel",
        choices=list(KERNELS),
        default="cooperative",
        help="consumer warpgroups share each tile (cooperative) or take tiles in turns "
        "(pingpong: 64-row tiles)",
    )
    parser.add_argument("--stages", type=int, default=0, help="A/B stages (0: as many as fit)")
    parser.add_argument(
        "--swizzle", type=int, default=8, help="max tile-scheduler swizzle (fit to N per run)"
    )
    parser.add_argument(
        "--layout",
        choices=sorted(LAYOUTS),
        default="tn",
        help="operand majors, A then B (B read as K x N): tn = both K-major, nn = A M-major, "
        "tt = B N-major, nt = A M-major and B N-major",
    )
    parser.add_argument("--alpha", type=float, default=1.0, help="C = alpha * A @ B^T + ...")
    parser.add_argument("--beta", type=float, default=0.0, help="... + beta * C (C read first)")
    parser.add_argument("--bias", action="store_true", help="... + bias[n] (an N-vector)")
