"""Which kernels cuBLAS runs for the GEMM sweep's shapes (torch's profiler; GPU only).

One JSON line per shape and dtype: the kernels ``torch.matmul`` (bf16) or
``torch._scaled_mm`` (e4m3, tensor scales, bf16 out, accurate accumulation) launch, with their
mean time. The names tell the tile, cluster and whether a stream-K or split-K kernel ran,
which says what a TS configuration has to match on that shape. They say it in cuBLAS's
column-major frame, where torch's row-major ``C = A @ B`` is ``C^T = B^T A^T``: its M is our N.
So each ``nvjet`` kernel also gets ``ours``, the tile, cluster, K block and stages as
``GemmConfig`` names them (``nvjet_sm90_tst_152x256_64x4_1x2_...`` is our 256 x 152 tile in a
2 x 1 cluster, 64-wide K blocks, 4 stages: the name's ``1x2`` is column-major too).
Usage::

    source .gpu/setup.sh && python3 bench/cublas_kernels.py
    source .gpu/setup.sh && python3 bench/cublas_kernels.py --shape 3000 5000 4000
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_sweep import SHAPES

# nvjet_sm90_<kind>_<tile M'>x<tile N'>_<K block>x<stages>_<cluster M'>x<cluster N'>_...
_NVJET = re.compile(r"nvjet_sm\d+_[a-z]+_(\d+)x(\d+)_(\d+)x(\d+)_(\d+)x(\d+)_")


def ours(kernel: str) -> dict[str, Any] | None:
    """An ``nvjet`` kernel's configuration in our frame (M and N swapped), or None for
    another kernel (a memset, a kernel named otherwise)."""
    found = _NVJET.match(kernel)
    if found is None:
        return None
    tm, tn, k_block, stages, cm, cn = map(int, found.groups())
    return {"tile_mn": [tn, tm], "cluster_mn": [cn, cm], "k_block": k_block, "stages": stages}


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
            row: dict[str, Any] = {"kernel": e.key, "calls": e.count, "us": round(us, 2)}
            if (config := ours(e.key)) is not None:
                row["ours"] = config
            rows.append(row)
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
