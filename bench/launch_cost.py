"""Host cost of one GEMM launch from Python: TS, its twin, CUTLASS's CuTe example, torch.

A short kernel is only as fast as the host can issue it: at 2048^3 a GEMM runs ~24 us on the
H200, about what one Python call of a compiled CuTe DSL launcher can cost. This measures the
host side alone, on a problem small enough that the GPU never holds the host up (128^3 by
default): microseconds per call, the mean of ``--calls`` calls in a row, split into the DSL's
argument packing (``generate_execution_args``) and the compiled host function (TMA descriptors,
the launch itself), with ``--profile`` a profile of the TS call. One JSON line per contender.
Usage (GPU)::

    source .gpu/setup.sh && python3 bench/launch_cost.py \\
        --cute-example .gpu/cute_example/dense_gemm_persistent.py
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "hopper"))
sys.path.append(str(Path(__file__).resolve().parent))


def per_call_us(call: Callable[[], Any], calls: int) -> float:
    """Mean host microseconds of ``calls`` calls in a row (the GPU drained before and after)."""
    import torch

    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    host = time.perf_counter() - start
    torch.cuda.synchronize()
    return host / calls * 1e6


def main() -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mnk", type=int, nargs=3, default=(128, 128, 128))
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--cute-example", type=Path, default=None)
    parser.add_argument("--profile", action="store_true", help="profile the TS call")
    args = parser.parse_args()
    import _gemm_host as host
    import gemm

    m, n, k = args.mnk
    cfg = gemm.GemmConfig()
    compiled = gemm.compile_for_gpu(cfg)
    a, b = host.make_inputs(cfg, (m, n, k))
    contenders: dict[str, tuple[Callable[[], Any], Any, Any]] = {}
    for name, kernel in compiled.items():
        kargs = host.kernel_args(cfg, a, b, host.make_output(cfg, m, n))
        contenders[name] = (lambda kk=kernel, aa=kargs: kk(*aa), kernel, kargs)
    if args.cute_example is not None:
        from _cute_example import CuteExample

        example = CuteExample(args.cute_example)
        call = example.launcher(a, b, host.make_output(cfg, m, n))
        contenders["cute_example"] = (call, None, None)
    bt = b.t()
    contenders["torch"] = (lambda: torch.matmul(a, bt), None, None)
    for name, (call, kernel, kargs) in contenders.items():
        call()
        per_call_us(call, 100)  # warm
        line: dict[str, Any] = {"bench": "launch_cost", "name": name, "mnk": [m, n, k]}
        line["us_per_call"] = min(per_call_us(call, args.calls) for _ in range(3))
        if kernel is not None:  # the two halves of a compiled CuTe DSL call
            line["pack_us"] = min(
                per_call_us(lambda k=kernel, a=kargs: k.generate_execution_args(*a), args.calls)
                for _ in range(3)
            )
            exe, _keep = kernel.generate_execution_args(*kargs)
            line["host_fn_us"] = min(
                per_call_us(lambda k=kernel, e=exe: k.run_compiled_program(e), args.calls)
                for _ in range(3)
            )
        print(json.dumps(line), flush=True)
    if args.profile:
        call = contenders["ts"][0]
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.calls):
            call()
        prof.disable()
        torch.cuda.synchronize()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(20)
        print(text.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
