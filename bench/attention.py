"""Attention forward on the GPU: the TS kernel vs ``scaled_dot_product_attention`` (cuDNN, flash).

For each shape of ``SHAPES``, on the same random inputs in one process, prints one JSON line: the
TS kernel's max error against an fp32 reference and its TFLOP/s (``4 B H S^2 D / time``, halved
for causal), SDPA's with the cuDNN and the flash backend (``torch.nn.attention.sdpa_kernel``),
and the same-run ratios. Then the packed variable-length batches (``"bench":
"attention_varlen"``): TS on the packed batch against SDPA called once per sequence
(``cudnn_per_seq``, ``flash_per_seq``: SDPA takes no packed batch) and flash-attn's
``flash_attn_varlen_func`` if installed; TFLOP/s count the (query, key) pairs computed. A
failing case prints its error and the run goes on. Usage (GPU)::

    source .gpu/setup.sh && python3 bench/attention.py [--dtype fp16] [--iters 30]
    source .gpu/setup.sh && python3 bench/attention.py --quick   # one small shape per family
    source .gpu/setup.sh && python3 bench/attention.py --stagger # also TS with the math order

``cute_fmha``: CUTLASS's own CuTe DSL Hopper FMHA example (tile 64 x 128, persistent) on the same
inputs, checked against the same fp32 reference and timed the same way, with
``ts_over_cute_fmha``; ``bench/_cute_fmha.py`` drives it from ``--cute-fmha PATH`` (default
``.gpu/cute_example/fmha.py``, put there by ``tools/fetch_cute_fmha.sh``; absent: the column
says so). Cases the example refuses (D = 256 at that tile) say n/a.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import sys
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "hopper"))


def _host() -> Any:
    """examples/hopper/_attention_host.py (the example's torch entry and GPU check)."""
    return importlib.import_module("_attention_host")


# (B, S, H, D, causal): the four anchor shapes, then D = 64 / causal variants and D = 256.
SHAPES: tuple[tuple[int, int, int, int, bool], ...] = (
    (4, 4096, 16, 128, False),
    (4, 4096, 16, 128, True),
    (16, 1024, 16, 128, False),
    (2, 8192, 16, 64, False),
    (2, 8192, 16, 64, True),
    (2, 4096, 16, 256, False),
    (2, 4096, 16, 256, True),
)
QUICK: tuple[tuple[int, int, int, int, bool], ...] = (
    (1, 1000, 2, 128, False),
    (1, 1000, 2, 128, True),
    (2, 777, 3, 64, False),
    (2, 777, 3, 64, True),
    (1, 1000, 2, 256, False),
    (2, 777, 3, 256, True),
)
QUICK_GQA = (2, 777, 4, 128, True, 2)  # (B, S, H, D, causal, Hkv)
# (sequences, total tokens, H, D, causal): packed batches of random odd lengths, one empty
VARLEN: tuple[tuple[int, int, int, int, bool], ...] = (
    (8, 16384, 16, 128, False),
    (8, 16384, 16, 128, True),
)
QUICK_VARLEN: tuple[tuple[int, int, int, int, bool], ...] = ((5, 1500, 2, 128, True),)


def sdpa_ms(q: Any, k: Any, v: Any, causal: bool, backend: Any, iters: int) -> float:
    """Milliseconds per SDPA call with ``backend`` only."""
    import torch
    from torch.nn.attention import sdpa_kernel

    f = torch.nn.functional.scaled_dot_product_attention
    kw = {"enable_gqa": True} if k.shape[1] != q.shape[1] else {}
    with sdpa_kernel([backend]):
        return float(_host().time_ms(lambda: f(q, k, v, is_causal=causal, **kw), iters))


def run_shape(
    b: int,
    s: int,
    h: int,
    d: int,
    causal: bool,
    dtype: str,
    iters: int,
    hkv: int = 0,
    stagger: bool = False,
    fmha: tuple[Any, str] = (None, "no --cute-fmha"),
) -> dict[str, Any]:
    """One JSON record: TS (checked), cuDNN and flash SDPA, ratios; with ``stagger`` also TS
    with the math-order handoff (``ts_stagger``, checked too); ``fmha``: the CuTe FMHA
    example's driver and why it is absent (``_cute_fmha.open_column``)."""
    import torch
    from torch.nn.attention import SDPBackend

    host = _host()
    flops, run_case = host.flops, host.run_case

    out: dict[str, Any] = {"bench": "attention"}
    out["ts"] = run_case(b, s, h, d, causal, dtype, hkv, iters=iters)
    variants = ["ts"]
    if stagger:
        out["ts_stagger"] = run_case(b, s, h, d, causal, dtype, hkv, iters=iters, stagger=True)
        variants.append("ts_stagger")
    torch.manual_seed(0)
    tdt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    q = torch.randn(b, h, s, d, device="cuda", dtype=tdt)
    k, v = (torch.randn(b, hkv or h, s, d, device="cuda", dtype=tdt) for _ in "kv")
    work = flops(b, h, s, d, causal)
    for name, backend in (
        ("cudnn", SDPBackend.CUDNN_ATTENTION),
        ("flash", SDPBackend.FLASH_ATTENTION),
    ):
        try:
            out[name] = {"tflops": work / sdpa_ms(q, k, v, causal, backend, iters) / 1e9}
        except Exception as e:  # a backend may not take this shape / dtype
            out[name] = {"error": f"{type(e).__name__}: {e}"}
    from _cute_fmha import column  # beside this file

    bar = max(4.0 * out["ts"].get("sdpa_max_abs_err", 0.0), 1e-2)  # TS's own pass bar
    out["cute_fmha"] = column(*fmha, host, q, k, v, causal, work, iters, bar)
    for variant in variants:
        ts = out[variant].get("tflops")
        for name in ("cudnn", "flash", "cute_fmha"):
            if ts and "tflops" in out[name]:
                out[f"{variant}_over_{name}"] = ts / out[name]["tflops"]
    return out


def run_varlen(
    b: int, total: int, h: int, d: int, causal: bool, dtype: str, iters: int
) -> dict[str, Any]:
    """One JSON record for a packed batch: TS (every sequence checked) against SDPA run one
    sequence at a time (cuDNN, flash: SDPA has no packed-batch entry), and against
    flash-attn's ``flash_attn_varlen_func`` when that package is installed."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    host = _host()
    lens = host.varlen_lengths(b, total)
    out: dict[str, Any] = {"bench": "attention_varlen", "lens": lens}
    out["ts"] = host.run_varlen_case(lens, lens, h, d, causal, dtype, iters=iters)
    work = sum(host.varlen_flops(n, n, h, d, causal) for n in lens)
    torch.manual_seed(0)
    tdt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    seqs = [
        tuple(torch.randn(1, h, n, d, device="cuda", dtype=tdt) for _ in "qkv") for n in lens if n
    ]
    f = torch.nn.functional.scaled_dot_product_attention

    def loop() -> None:
        for q, k, v in seqs:
            f(q, k, v, is_causal=causal)

    baselines = []
    for name, backend in (
        ("cudnn_per_seq", SDPBackend.CUDNN_ATTENTION),
        ("flash_per_seq", SDPBackend.FLASH_ATTENTION),
    ):
        try:
            with sdpa_kernel([backend]):
                out[name] = {"tflops": work / host.time_ms(loop, iters) / 1e9}
            baselines.append(name)
        except Exception as e:  # a backend may not take this shape / dtype
            out[name] = {"error": f"{type(e).__name__}: {e}"}
    try:
        from flash_attn import flash_attn_varlen_func  # type: ignore[import-not-found]

        cu = torch.tensor([0, *itertools.accumulate(lens)], dtype=torch.int32, device="cuda")
        q, k, v = (torch.randn(sum(lens), h, d, device="cuda", dtype=tdt) for _ in "qkv")
        m = max(lens)

        def packed() -> None:
            flash_attn_varlen_func(q, k, v, cu, cu, m, m, causal=causal)

        out["flash_attn_varlen"] = {"tflops": work / host.time_ms(packed, iters) / 1e9}
        baselines.append("flash_attn_varlen")
    except ImportError:
        out["flash_attn_varlen"] = {"error": "flash_attn not installed"}
    ts = out["ts"].get("tflops")
    for name in baselines:
        if ts:
            out[f"ts_over_{name}"] = ts / out[name]["tflops"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="fp16", choices=("fp16", "bf16"))
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="small shapes, odd lengths")
    parser.add_argument("--stagger", action="store_true", help="also TS with the math order")
    parser.add_argument(
        "--cute-fmha",
        type=Path,
        default=None,
        metavar="PATH",
        help="CUTLASS's Hopper fmha.py (tools/fetch_cute_fmha.sh; default "
        ".gpu/cute_example/fmha.py): time it too",
    )
    args = parser.parse_args(argv)
    from _cute_fmha import open_column

    fmha = open_column(args.cute_fmha)
    ok = True
    cases = [(*c, 0) for c in (QUICK if args.quick else SHAPES)]
    cases += [QUICK_GQA] if args.quick else []
    for b, s, h, d, causal, hkv in cases:
        shape = {"b": b, "s": s, "h": h, "hkv": hkv or h, "d": d, "causal": causal}
        shape["dtype"] = args.dtype
        try:
            r = run_shape(b, s, h, d, causal, args.dtype, args.iters, hkv, args.stagger, fmha)
            ok &= all(bool(r[t].get("ok")) for t in ("ts", "ts_stagger") if t in r)
        except Exception as e:  # keep going: whoever runs this cannot debug interactively
            traceback.print_exc()
            r = {"bench": "attention", **shape, "error": f"{type(e).__name__}: {e}"}
            ok = False
        print(json.dumps(r, sort_keys=True), flush=True)
    for b, total, h, d, causal in QUICK_VARLEN if args.quick else VARLEN:
        shape = {"sequences": b, "total": total, "h": h, "d": d, "causal": causal}
        try:
            r = run_varlen(b, total, h, d, causal, args.dtype, args.iters)
            ok &= bool(r["ts"].get("ok"))
        except Exception as e:
            traceback.print_exc()
            r = {"bench": "attention_varlen", **shape, "error": f"{type(e).__name__}: {e}"}
            ok = False
        print(json.dumps({**shape, **r}, sort_keys=True), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
