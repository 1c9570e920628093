"""NVIDIA's Hopper-capable TS tutorials, run through ``task_scheduling`` and through the reference.

For each of the four copy / persistent tutorials (read from ``$TS_TUTORIALS_DIR``, by default
``../shared/conformance/nvidia-ts-tutorials``; never copied into the repository) this loads the
tutorial twice: as published (the reference, ``cutlass.experimental.task_scheduling``) and with
only its import lines rewritten to ``task_scheduling`` (TS). Both versions first run the
tutorial's own check (its ``run_*`` function, which asserts against torch and prints PASS), then
the kernel is timed on a larger input with CUDA events, the two implementations interleaved
round by round (order rotated), best round each, and checked again afterwards.

Prints one JSON line per tutorial: ``{"tutorial", "passed": {"ts", "reference"}, "ms": {...},
"ts_speed_vs_reference"}`` (``> 1`` means TS is faster; the target is ``>= 0.98``).

Usage (on the GPU machine): ``python bench/tutorials.py [--rounds 6] [--iters 50]``
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

REFERENCE = "cutlass.experimental.task_scheduling"
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = ROOT.parent / "shared" / "conformance" / "nvidia-ts-tutorials"

_PERSISTENT = "03_persistent_scheduling_dynamic_domain_ts"
TUTORIALS = {
    "01_copy_grid_stride": "01_copy_basics_ts/01_copy_grid_stride.py",
    "01_copy_tma": "01_copy_basics_ts/02_copy_tma.py",
    "03_persistent_skip": f"{_PERSISTENT}/01_copy_persistent_skip_tile.py",
    "03_varlen_dynamic": f"{_PERSISTENT}/02_copy_varlen_dynamic_domain.py",
}


def load(path: Path, impl: str, tmp: Path) -> Any:
    """Import the tutorial at ``path`` with its TS imports pointing at ``impl``."""
    text = path.read_text()
    if impl != REFERENCE:
        text = text.replace(REFERENCE, impl)
    tag = "ref" if impl == REFERENCE else "ts"
    name = f"tutorial_{path.stem}_{tag}"
    copy = tmp / f"{name}.py"
    copy.write_text(text)
    spec = importlib.util.spec_from_file_location(name, copy)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# -- per tutorial: its own check, and a timed launch on a larger input -----------------------


def check(key: str, m: Any) -> None:
    """The tutorial's own run function (asserts against torch, prints PASS)."""
    if key == "01_copy_grid_stride":
        m.run_gmem_copy_kernel_prim()
    elif key == "01_copy_tma":
        m.run_tma_copy_kernel_prim((256, 512), False)
    elif key == "03_persistent_skip":
        m.run_copy_persistent_skip((256, 512))
    else:
        m.run_varlen_copy(8)


def timed(key: str, m: Any) -> tuple[Callable[[], None], Callable[[], None]]:
    """(launch, verify): the compiled kernel on a larger input, and its torch check."""
    import cutlass
    import cutlass.cute as cute
    import cutlass.utils as utils
    import torch
    from cutlass.cute.runtime import from_dlpack

    if key == "01_copy_grid_stride":
        n = 1 << 26
        a = torch.randint(-32768, 32768, (n,), dtype=torch.int16, device="cuda")
        b = torch.zeros_like(a)
        ta, tb = from_dlpack(a), from_dlpack(b)
        f = cute.compile(m.gmem_copy_kernel_host, n, ta, tb, 264, 8)
        return (lambda: f(n, ta, tb, 264)), (lambda: torch.testing.assert_close(b, a))
    if key == "01_copy_tma":
        rc = (4096, 8192)
        a = torch.randn(*rc, device="cuda").to(torch.float16)
        b = torch.zeros_like(a)
        ta, tb = from_dlpack(a), from_dlpack(b)
        f = cute.compile(m.tma_copy_kernel_host, rc, ta, tb, False)
        return (lambda: f(rc, ta, tb, False)), (lambda: torch.testing.assert_close(b, a))
    if key == "03_persistent_skip":
        rc = (4096, 8192)
        a = torch.randn(*rc, device="cuda").to(torch.float16)
        b = torch.zeros_like(a)
        ta, tb = from_dlpack(a), from_dlpack(b)
        tiles = rc[1] // m.tile_size
        f = cute.compile(m.tma_copy_persistent_skip_kernel_host, rc, ta, tb, tiles, 4)
        return (lambda: f(rc, ta, tb)), (lambda: torch.testing.assert_close(b, a))
    # varlen: 4096 segments of up to 4096 elements
    gen = torch.Generator().manual_seed(0)
    segs = 4096
    lengths = torch.randint(1, 4097, (segs,), generator=gen)
    offsets = torch.zeros(segs + 1, dtype=torch.int32)
    offsets[1:] = torch.cumsum(lengths, 0)
    a = torch.randn(int(offsets[-1]), device="cuda")
    b = torch.zeros(segs, int(lengths.max()), device="cuda")
    off = offsets.cuda()
    ta = from_dlpack(a).mark_layout_dynamic()
    tb = from_dlpack(b).mark_layout_dynamic()
    to = from_dlpack(off).mark_layout_dynamic()
    clusters = utils.HardwareInfo().get_max_active_clusters(1)
    f = cute.compile(m.host_function, ta, tb, to, segs, clusters)
    ref = torch.zeros_like(b)
    for i in range(segs):
        s, e = int(offsets[i]), int(offsets[i + 1])
        ref[i, : e - s] = a[s:e]
    del cutlass
    return (lambda: f(ta, tb, to, segs)), (lambda: torch.testing.assert_close(b, ref))


def time_ms(launch: Callable[[], None], iters: int) -> float:
    import torch

    launch()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        launch()
    stop.record()
    torch.cuda.synchronize()
    return float(start.elapsed_time(stop)) / iters


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--only", default="", help="comma-separated tutorial keys")
    args = ap.parse_args()
    base = Path(os.environ.get("TS_TUTORIALS_DIR", str(DEFAULT_DIR)))
    keys = [k for k in TUTORIALS if not args.only or k in args.only.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="ts_tutorials_"))
    impls = {"reference": REFERENCE, "ts": "task_scheduling"}
    for key in keys:
        row: dict[str, Any] = {"tutorial": key, "passed": {}, "ms": {}}
        launches: dict[str, tuple[Callable[[], None], Callable[[], None]]] = {}
        for label, impl in impls.items():
            try:
                module = load(base / TUTORIALS[key], impl, tmp)
                check(key, module)
                launches[label] = timed(key, module)
                row["passed"][label] = True
            except Exception as err:  # report, keep going with the other side
                row["passed"][label] = False
                row.setdefault("error", {})[label] = f"{type(err).__name__}: {err}"[:400]
        best: dict[str, float] = {}
        order = list(launches)
        for r in range(args.rounds):
            for label in order[r % len(order) :] + order[: r % len(order)]:
                ms = time_ms(launches[label][0], args.iters)
                best[label] = min(best.get(label, ms), ms)
        for label, (_, verify) in launches.items():
            try:
                verify()
            except AssertionError as err:
                row["passed"][label] = False
                row.setdefault("error", {})[label] = f"after timing: {err}"[:400]
        row["ms"] = {k: round(v, 4) for k, v in best.items()}
        if "ts" in best and "reference" in best:
            row["ts_speed_vs_reference"] = round(best["reference"] / best["ts"], 4)
        print(json.dumps(row, sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
