"""Which split-K shape and kernel fails on the GPU: each (kernel, shape) in its own process.

An illegal address poisons the CUDA context, so one failing case would hide every later one in
a single process (as in ``tests/test_gemm_edge_shapes.py -k split``). Prints one JSON line per
case. GPU only::

    CUDA_LAUNCH_BLOCKING=1 python3 tools/split_k_probe.py
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "bf16-split4": (
        {"tile_mn": (128, 128), "split_k": 4},
        [(1003, 1501, 0), (128, 1024, 320), (129, 257, 257), (7, 9, 512), (300, 200, 4096)],
    ),
    "e4m3-split2": (
        {"dtype": "e4m3", "scale": "tensor", "tile_mn": (128, 128), "split_k": 2},
        [(1003, 1501, 0), (129, 257, 896), (128, 1024, 1664), (1, 1, 256)],
    ),
}
CHILD = """
import sys, json
sys.path.insert(0, {examples!r})
import gemm
cfg = gemm.GemmConfig(**{options!r})
compiled = gemm.compile_for_gpu(cfg, only=({kernel!r},))
for mnk in {shapes!r}:
    for rep in range(2):
        print("CASE", json.dumps([list(mnk), rep]), flush=True)
        r = gemm.run_case(cfg, compiled, tuple(mnk), iters=1, timed=False)
        print("RESULT", json.dumps(r[{kernel!r}]), flush=True)
"""


def main() -> int:
    for name, (options, shapes) in CASES.items():
        for kernel in ("ts", "twin"):
            code = CHILD.format(
                examples=str(ROOT / "examples" / "hopper"),
                options=options,
                kernel=kernel,
                shapes=shapes,
            )
            p = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, timeout=240, cwd=ROOT
            )
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith(("CASE", "RESULT"))]
            print(
                json.dumps(
                    {
                        "config": name,
                        "kernel": kernel,
                        "rc": p.returncode,
                        "trail": lines[-6:],
                        "err": p.stderr.strip()[-600:],
                    }
                ),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
