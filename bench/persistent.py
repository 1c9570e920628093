"""Persistent kernels on the GPU: TS vs hand-written twin, and dynamic vs static scheduling.

Runs, on the same inputs in one process, and prints one JSON line per case:

* ``persistent_copy`` (static scheduler, over-launched skipped tiles) for several shapes: TS
  time / twin time and the bandwidth against ``torch`` copy;
* ``varlen_copy`` with the static and the dynamic scheduler on balanced segment lengths
  (zeros included, more segments than SMs): TS / twin;
* ``varlen_copy`` on an unbalanced workload (every 132nd segment ``--imbalance`` times longer,
  so the static scheduler gives all long segments to CTA 0): the dynamic scheduler's speedup
  over the static one (TS kernels both), and TS / twin for each.

Every case checks its output against torch (twice for the dynamic scheduler: the second launch
runs on the counters that the first one reset). Usage (GPU)::

    source .gpu/setup.sh && python3 bench/persistent.py
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "hopper"))


def main(argv: list[str] | None = None) -> int:
    import persistent_copy  # type: ignore[import-not-found]
    import varlen_copy  # type: ignore[import-not-found]

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--imbalance", type=int, default=64)
    args = parser.parse_args(argv)
    ok = True

    def emit(record: dict[str, Any]) -> None:
        print(json.dumps(record, sort_keys=True), flush=True)

    for shape, extra in (((8192, 8192), 5), ((16384, 32768), 131), ((4096, 4096), 7)):
        r = persistent_copy.run_on_gpu(shape, args.iters, extra)
        r["bench"] = "persistent_copy"
        r["ts_over_torch_bw"] = r["ts"]["GBps"] / r["torch"]["GBps"]
        ok &= r["ts"]["ok"] and r["twin"]["ok"]
        emit(r)

    balanced = varlen_copy.make_inputs(varlen_copy.segment_lengths(4000, 4, 1))
    for scheduler in varlen_copy.SCHEDULERS:
        r = varlen_copy.run_case(scheduler, balanced, args.iters)
        r.update(bench="varlen_copy", workload="balanced", segments=4000, mean=4)
        ok &= r["ts"]["ok"] and r["twin"]["ok"]
        emit(r)

    few = varlen_copy.make_inputs(varlen_copy.segment_lengths(50, 3, 1, seed=1))
    for scheduler in varlen_copy.SCHEDULERS:
        r = varlen_copy.run_case(scheduler, few, args.iters)
        r.update(bench="varlen_copy", workload="fewer segments than SMs", segments=50, mean=3)
        ok &= r["ts"]["ok"] and r["twin"]["ok"]
        emit(r)

    unbalanced = varlen_copy.make_inputs(varlen_copy.segment_lengths(2000, 2, args.imbalance))
    times: dict[str, float] = {}
    for scheduler in varlen_copy.SCHEDULERS:
        r = varlen_copy.run_case(scheduler, unbalanced, args.iters)
        r.update(bench="varlen_copy", workload="unbalanced", segments=2000, mean=2)
        r["imbalance"] = args.imbalance
        times[scheduler] = r["ts"]["ms"]
        ok &= r["ts"]["ok"] and r["twin"]["ok"]
        emit(r)
    emit(
        {
            "bench": "varlen_copy",
            "workload": "unbalanced",
            "dynamic_speedup_over_static": times["static"] / times["dynamic"],
            "static_ms": times["static"],
            "dynamic_ms": times["dynamic"],
        }
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
