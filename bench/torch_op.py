"""Launch overhead of a TS kernel called from PyTorch, against calling the compiled kernel.

The TMA copy (``examples/hopper/tma_copy.py``, ``two_tiles``) on a small tensor, so that the
time per call is the host's launch path, not the copy. Cases, each timed over ``--iters``
calls after a warm-up, best of ``--rounds`` interleaved rounds:

* ``direct``: the compiled kernel called with CuTe tensors made once (the floor);
* ``op``: the ``torch.library`` operator (``ts_runtime.torch_op``), eager: output allocation,
  DLPack views and the compile-cache lookup on every call;
* ``compiled``: the operator inside a ``torch.compile(fullgraph=True)`` function;
* ``compiled_torch_copy``: torch's own copy (``clone``) inside the same kind of function: what
  ``torch.compile`` itself costs per call, for comparison;
* ``graph``: the operator captured in a CUDA graph, replayed.

One JSON line per case: microseconds per call and the ratio to ``direct``. Usage::

    python bench/torch_op.py [--rounds 5] [--iters 2000]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from _examples import load_example

ROOT = Path(__file__).resolve().parent.parent
SHAPE = (128, 256)  # two 64 x 256 tiles


def _example(name: str) -> ModuleType:
    return load_example(name, "bench_hopper")


def _per_call_us(fn: Callable[[], Any], iters: int) -> float:
    import torch

    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters * 1e6


def main() -> None:
    import cutlass.cute as cute
    import torch
    from cuda.bindings import driver as cuda
    from cutlass.cute.runtime import from_dlpack

    from ts_runtime.torch_op import torch_op

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=2000)
    args = parser.parse_args()

    example = _example("tma_copy")
    kernel = example.KERNELS["two_tiles"]
    op = torch_op("ts_bench::tma_copy", kernel, outputs=lambda x: torch.empty_like(x))
    x = torch.randn(*SHAPE, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    src, dst = from_dlpack(x, assumed_align=16), from_dlpack(y, assumed_align=16)
    direct = cute.compile(kernel.jit_launcher, src, dst, stream)
    compiled_fn = torch.compile(lambda t: op(t), fullgraph=True)
    compiled_clone = torch.compile(lambda t: t.clone(), fullgraph=True)
    assert torch.equal(op(x), x) and torch.equal(compiled_fn(x), x)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = op(x)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(captured, x)

    cases: dict[str, Callable[[], Any]] = {
        "direct": lambda: direct(src, dst, stream),
        "op": lambda: op(x),
        "compiled": lambda: compiled_fn(x),
        "compiled_torch_copy": lambda: compiled_clone(x),
        "graph": graph.replay,
    }
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(args.rounds):
        for name, fn in cases.items():
            best[name] = min(best[name], _per_call_us(fn, args.iters))
    for name, us in best.items():
        print(
            json.dumps(
                {
                    "bench": "torch_op",
                    "case": name,
                    "shape": list(SHAPE),
                    "us_per_call": round(us, 2),
                    "vs_direct": round(us / best["direct"], 2),
                    "gpu": torch.cuda.get_device_name(),
                }
            )
        )


if __name__ == "__main__":
    main()
