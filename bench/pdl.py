"""Programmatic dependent launch on the GPU: the PDL pair with and without PDL, TS and twin.

Runs ``examples/hopper/pdl_pair.py`` (kernel 1 writes ``mid = 2 * src``, kernel 2 waits with
``griddepcontrol.wait`` and writes ``dst = mid + 1``) at several sizes; small sizes are where
the launch gap that PDL hides is a large part of the pair's time. Prints one JSON line per
size::

    python bench/pdl.py [--sizes 65536,1048576,16777216] [--iters 200] [--rounds 5]

``ts_pdl_speedup`` (``twin_pdl_speedup``) is the pair's time launched without PDL over its
time with PDL, both in the same run on the same tensors (> 1: PDL saves time);
``ts_over_twin`` is the twin pair's time over the TS pair's (with PDL; goal >= 0.98). ``ok``
is every pair's result checked against torch. Exits 2 without a GPU or torch.
"""

from __future__ import annotations

import argparse
import json
import sys

from _examples import load_example

from task_scheduling.harness import gpu_ready


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="PDL pair: with vs without PDL (GPU)")
    parser.add_argument("--sizes", default="65536,1048576,16777216", help="elements, comma list")
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    if not gpu_ready(__file__):
        return 2
    example = load_example("pdl_pair", "bench_hopper")
    failed = False
    for n in (int(s) for s in args.sizes.split(",")):
        out = example.run_on_gpu(n, args.iters, rounds=args.rounds)
        ok = all(out[k]["ok"] for k in ("ts", "twin", "ts_serial", "twin_serial"))
        failed |= not ok
        line = {
            "bench": "pdl",
            "n": n,
            "ok": ok,
            "ts_pdl_speedup": round(out["ts_pdl_speedup"], 4),
            "twin_pdl_speedup": round(out["twin_pdl_speedup"], 4),
            "ts_over_twin": round(out["ts_over_twin"], 4),
            "us": {
                k: round(out[k]["ms"] * 1e3, 2) for k in ("ts", "ts_serial", "twin", "twin_serial")
            },
            "iters": args.iters,
            "rounds": args.rounds,
        }
        print(json.dumps(line, sort_keys=True), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
