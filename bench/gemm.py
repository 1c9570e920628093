"""Persistent Hopper GEMM on the GPU: the TS kernel and its hand-written twin vs ``torch.matmul``.

For each shape, on the same random inputs in one process, prints one JSON line: each kernel's
TFLOP/s (after checking it against an fp32 reference), ``torch.matmul``'s (cuBLAS) and their
ratio; with ``--dtype fp8`` (e4m3 in, bf16 out) ``torch._scaled_mm``'s on the same inputs and
scales instead. Every kernel is compiled once (dynamic shapes) and reused for all shapes. The
twelve-shape sweep is ``bench/gemm_sweep.py``. Usage (GPU)::

    source .gpu/setup.sh && python3 bench/gemm.py
    source .gpu/setup.sh && python3 bench/gemm.py --tile 128x256 --cluster 2x1 --dtype fp16
    source .gpu/setup.sh && python3 bench/gemm.py --dtype fp8 --scale tensor
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "hopper"))

SHAPES: tuple[tuple[int, int, int], ...] = (
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (4096, 4096, 14336),
    (8192, 1024, 8192),
)


def main(argv: list[str] | None = None) -> int:
    gemm: Any = importlib.import_module("gemm")  # examples/hopper/gemm.py

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=50, help="timed launches per kernel")
    gemm.add_config_args(parser)
    args = parser.parse_args(argv)

    cache: dict[Any, dict[str, Any]] = {}

    def compiled_for(shape_cfg: Any) -> dict[str, Any]:
        """Every kernel compiled once per configuration (dynamic shapes otherwise)."""
        if shape_cfg not in cache:
            cache[shape_cfg] = gemm.compile_for_gpu(shape_cfg)  # {"ts": ..., "twin": ...}
        return cache[shape_cfg]

    ok = True
    for mnk in SHAPES:
        # --config auto: the per-shape table's schedule; the swizzle is fitted to the shape
        # (a few compiled variants at most).
        shape_cfg, source = gemm.config_for(args, mnk)
        compiled = compiled_for(shape_cfg)
        r = gemm.run_case(shape_cfg, compiled, mnk, args.iters)
        r["bench"], r["config_source"] = "gemm", source
        if "ts" in r:
            r["ts_over_twin"] = r["ts"]["tflops"] / r["twin"]["tflops"]
        ok &= all(r[name]["ok"] for name in compiled)
        print(json.dumps(r, sort_keys=True), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
