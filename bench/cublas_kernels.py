"""Which kernels cuBLAS runs for the GEMM sweep's shapes (torch's profiler; GPU only).

One JSON line per shape and dtype: the kernels ``torch.matmul`` (bf16) or
``torch._scaled_mm`` (e4m3, tensor scales, bf16 out, accurate accumulation) launch, with their
mean time. The names tell the tile, cluster and whether a stream-K or split-K kernel ran,
which says what a TS configuration has to match on that shape. Usage::

    source .gpu/setup.sh && python3 bench/cublas_kernels.py
    source .gpu/setup.sh && python3 bench/cublas_kernels.py --shape 3000 5000 4000
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_sweep import SHAPES


def kernels(fn: Any, iters: int) -> list[dict[str, Any]]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        if e.device_type.name == "CUDA" and e.count:
            us = getattr(e, "device_time_total", getattr(e, "cuda_time_total", 0)) / e.count
            rows.append({"kernel": e.key, "calls": e.count, "us": round(us, 2)})
    return rows


def main(argv: list[str] | None = None) -> int:
    import torch

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", type=int, nargs=3, action="append", metavar=("M", "N", "K"))
    p.add_argument("--iters", type=int, default=20)
    args = p.parse_args(argv)
    for m, n, k in args.shape or SHAPES:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        rows = kernels(functools.partial(torch.matmul, a, b.t()), args.iters)
        print(json.dumps({"mnk": [m, n, k], "dtype": "bf16", "kernels": rows}), flush=True)
        a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda")
        call = functools.partial(torch._scaled_mm, a8, b8.t(), one, one, out_dtype=torch.bfloat16)
        try:
            rows = kernels(call, args.iters)
        except RuntimeError as err:  # _scaled_mm takes dimensions that are multiples of 16
            rows = [{"error": str(err).splitlines()[0]}]
        print(json.dumps({"mnk": [m, n, k], "dtype": "e4m3", "kernels": rows}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
