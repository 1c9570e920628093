"""Power and clocks under each GEMM contender: is a shape's loss energy or schedule?

On a power-capped GPU a kernel's speed is its work per joule: when two kernels both draw the
cap, the one that spends less energy per FLOP keeps the higher clock. The sweep's passes show
TS, its twin and CUTLASS's CuTe example all slowing together from pass to pass on bf16 4096³
(715 -> 678 TFLOP/s) while cuBLAS holds 709 (``bench/RESULTS.md``). This probe
says why: per shape, on the same inputs, TS (the table's configuration, or ``--config``
options), its twin, ``--versus`` configurations and ``torch.matmul`` each run back to back for
``--seconds`` while ``nvidia-smi`` samples the board's power draw, SM clock and temperature
every ``--sample-ms``; the contenders take turns (``--rounds`` rounds, a new order each
round). One JSON line per contender and round (TFLOP/s, watts, MHz, °C, TFLOP/s per kW), then
one per shape with each contender's medians and its ratios to torch (for FP8 ``torch`` is
``torch._scaled_mm`` with fast accumulation, ``torch_accurate`` without): ``tflops`` (speed),
``mhz`` (clock) and ``per_kw`` (work per energy). Plain GEMMs only (no alpha, beta or bias).
Usage (GPU)::

    source .gpu/setup.sh && python3 bench/gemm_power.py
    source .gpu/setup.sh && python3 bench/gemm_power.py --shape 4096 4096 4096 \\
        --versus "--tile 128x256 --cluster 2x1"
    source .gpu/setup.sh && python3 bench/gemm_power.py --dtype e4m3 --scale tensor
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "hopper"))
sys.path.append(str(Path(__file__).resolve().parent))  # gemm_sweep (after examples/hopper's gemm)

QUERY = "power.draw,clocks.sm,temperature.gpu"
SETTLE_S = 0.3  # the first samples of a turn still show the previous contender's state


class Sampler:
    """``nvidia-smi`` in loop mode on a thread: ``(host time, watts, MHz, °C)`` per line."""

    def __init__(self, sample_ms: int) -> None:
        cmd = ["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"]
        try:
            self.proc = subprocess.Popen(
                [*cmd, f"-lms={sample_ms}"], stdout=subprocess.PIPE, text=True
            )
        except FileNotFoundError:
            raise SystemExit(
                "gemm_power: nvidia-smi not found (the probe samples the board)"
            ) from None
        self.samples: list[tuple[float, float, float, float]] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                watts, mhz, temp = (float(x) for x in line.split(",")[:3])
            except ValueError:  # "[N/A]" or a partial line: skip it
                continue
            self.samples.append((time.monotonic(), watts, mhz, temp))

    def window(self, start: float, end: float) -> list[tuple[float, float, float, float]]:
        """The samples taken in ``[start + SETTLE_S, end]``."""
        return [s for s in self.samples if start + SETTLE_S <= s[0] <= end]

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait()


def run_turn(call: Any, flop: float, seconds: float, sampler: Sampler) -> dict[str, Any]:
    """``call`` back to back for ``seconds`` (in chunks, the queue kept short), with the
    samples of that window: TFLOP/s from CUDA events over the whole turn."""
    import torch
    from _timing import NOMINAL_FLOPS

    start_ev, end_ev = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    chunk = max(1, min(200, int(0.02 * NOMINAL_FLOPS / max(flop, 1.0))))  # ~20 ms of launches
    launches, t0 = 0, time.monotonic()
    start_ev.record()
    while time.monotonic() - t0 < seconds:
        for _ in range(chunk):
            call()
        launches += chunk
        torch.cuda.synchronize()
    end_ev.record()
    torch.cuda.synchronize()
    t1 = time.monotonic()
    ms = float(start_ev.elapsed_time(end_ev))
    window = sampler.window(t0, t1)
    out: dict[str, Any] = {"launches": launches, "tflops": flop * launches / (ms * 1e9)}
    if window:
        for i, key in ((1, "watts"), (2, "mhz"), (3, "temp_c")):
            out[key] = statistics.fmean(s[i] for s in window)
        out["per_kw"] = out["tflops"] / out["watts"] * 1000.0
    out["samples"] = len(window)
    return out


def refusal(cfg: Any) -> str | None:
    """Why the probe cannot time ``cfg``'s problem (``None``: it can): it times plain GEMMs,
    16-bit or FP8 with scales, against cuBLAS on the same inputs."""
    if cfg.alpha != 1.0 or cfg.beta != 0.0 or cfg.bias:
        return "the probe times plain GEMMs: leave out --alpha, --beta and --bias"
    if cfg.layout != "tn":
        return "the probe times the tn layout (A and B K-major), as the sweep does"
    return None


def bad_counts(seconds: float, rounds: int, sample_ms: int) -> str | None:
    """Why ``--seconds``, ``--rounds`` or ``--sample-ms`` make no measurement (``None``: fine)."""
    if not seconds > SETTLE_S:
        return (
            f"--seconds {seconds:g}: give more than {SETTLE_S:g} (the samples before are dropped)"
        )
    if rounds < 1:
        return f"--rounds {rounds}: give at least 1"
    if sample_ms < 1:
        return f"--sample-ms {sample_ms}: give at least 1"
    return None


def contenders(gemm: Any, sweep: Any, args: Any, mnk: tuple[int, int, int]) -> dict[str, Any]:
    """TS, its twin, each ``--versus`` configuration (``gemm_sweep.versus_variants``) and
    cuBLAS (``torch.matmul``; for FP8 ``torch._scaled_mm`` with fast and accurate
    accumulation) on one set of inputs, each TS kernel launched and checked against the fp32
    reference once (``_gemm_host.first_launch``): ``{name: call}``."""
    import torch

    host: Any = importlib.import_module("_gemm_host")
    cfg, source = gemm.config_for(args, mnk)
    kernels = [(name, cfg, k) for name, k in gemm.compile_for_gpu(cfg).items()]
    kernels += [(name, o, k) for name, (o, k) in sweep.versus_variants(gemm, args, mnk, {}).items()]
    a, b = host.make_inputs(cfg, mnk)
    sa, sb = host.make_scales(cfg, mnk[0], mnk[1])
    calls: dict[str, Any] = {}
    for name, kcfg, kernel in kernels:
        kargs, ok, err = host.first_launch(kcfg, kernel, a, b, None, sa, sb)
        if not ok:
            raise SystemExit(f"{name} on {mnk} ({source}): wrong result, error {err:.3g}")
        calls[name] = lambda kk=kernel, aa=kargs: kk(*aa)
    if cfg.fp8:
        calls.update(host._scaled_mm_calls(cfg, a, b, sa, sb)[0])  # torch, torch_accurate
    else:
        bt = b.t()
        calls["torch"] = lambda: torch.matmul(a, bt)
    return calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", type=int, nargs=3, action="append", metavar=("M", "N", "K"))
    parser.add_argument("--seconds", type=float, default=2.0, help="one turn's length")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sample-ms", type=int, default=20)
    parser.add_argument("--versus", action="append", default=[], metavar="FLAGS")
    gemm: Any = importlib.import_module("gemm")
    cli: Any = importlib.import_module("_gemm_cli")
    sweep: Any = importlib.import_module("gemm_sweep")
    gemm.add_config_args(parser)
    args = parser.parse_args(argv)
    why = refusal(cli.parse_config(args)) or bad_counts(args.seconds, args.rounds, args.sample_ms)
    if why:
        parser.error(why)
    shapes = [tuple(s) for s in args.shape or [(4096, 4096, 4096), (8192, 8192, 8192)]]
    sampler = Sampler(args.sample_ms)
    try:
        for mnk in shapes:
            calls = contenders(gemm, sweep, args, mnk)
            flop = 2.0 * mnk[0] * mnk[1] * mnk[2]
            turns: dict[str, list[dict[str, Any]]] = {name: [] for name in calls}
            order, rng = list(calls), random.Random(0)
            for r in range(args.rounds):
                rng.shuffle(order)
                for name in order:
                    turn = run_turn(calls[name], flop, args.seconds, sampler)
                    turns[name].append(turn)
                    line = {"bench": "gemm_power", "mnk": list(mnk), "contender": name, "round": r}
                    print(json.dumps({**line, **turn}), flush=True)
            print(json.dumps(shape_summary(list(mnk), turns)), flush=True)
    finally:
        sampler.close()
    return 0


BASELINES = ("torch", "torch_accurate")


def shape_summary(mnk: list[int], turns: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Each contender's medians over its rounds, and each kernel's ratios to each baseline's
    medians (``ts_over_torch_tflops``, ``ts_over_torch_accurate_per_kw``, ...)."""
    keys = ("tflops", "watts", "mhz", "temp_c", "per_kw")
    med = {
        name: {k: statistics.median(t[k] for t in ts) for k in keys if all(k in t for t in ts)}
        for name, ts in turns.items()
    }
    out: dict[str, Any] = {"bench": "gemm_power", "mnk": mnk, "summary": True, "median": med}
    for base in (b for b in BASELINES if b in med):
        for name, m in med.items():
            for k in ("tflops", "mhz", "per_kw"):
                if name not in BASELINES and k in m and k in med[base]:
                    out[f"{name}_over_{base}_{k}"] = m[k] / med[base][k]
    return out


if __name__ == "__main__":
    sys.exit(main())
