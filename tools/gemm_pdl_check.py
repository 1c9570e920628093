"""GPU check of the GEMM's programmatic dependent launch (``GemmConfig.pdl``): back-to-back
GEMMs on one stream, each launched with PDL, must still see each other's results.

* **Read after write:** ``C1 = A_i @ B^T`` then ``D_i = C1 @ E^T`` (``C1`` is the second
  GEMM's A), for several ``A_i`` in a row with no host synchronisation between them. A second
  GEMM that read ``C1`` before the first had written it gives ``D_i`` of another ``A_i``.
* **Write after write:** ``C = A @ B^T`` and ``C = A2 @ B2^T`` alternating into one ``C``;
  the last one must win. Then a ``K = 0`` GEMM (its math task stores zeros without ever
  waiting on the A/B ring) after a full one: ``C`` must end all zero.

* **Negative control** (``negative_control``): the read-after-write chain once more, with the
  second GEMM launched on another stream and no event, so nothing orders it after the first
  (a long one: K = 16384). Its small grid leaves most SMs free, so it runs at once and reads a
  ``C1`` not yet written. The check must see that (``detected``), else it could not see a lost
  dependency either, and it fails.

One JSON line per configuration (``ok`` and the largest relative error) and one for the
control; exit status 1 when any is wrong or the control goes unseen. Usage (GPU)::

    python tools/gemm_pdl_check.py
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "hopper"))

CONFIGS: list[dict[str, Any]] = [
    {},
    {"scheduler": "dynamic"},
    {"tile_mn": (128, 256), "cluster_mn": (2, 1)},
    {"tile_mn": (128, 192), "cluster_mn": (2, 1), "kernel": "pingpong-skip"},
    {"tile_mn": (64, 128), "kernel": "pingpong"},
    {"tile_mn": (128, 128), "tail_split": 2},
    {"tile_mn": (128, 128), "split_k": 2},
]
ROUNDS = 8


def rel_err(got: Any, want: Any) -> float:
    return float((got.float() - want).norm() / want.norm().clamp_min(1e-30))


def launchers(gemm: Any, host: Any, cfg: Any) -> Any:
    """``launcher(a, b, c, stream=None)``: a call of the TS GEMM ``c = a @ b^T`` (on torch's
    current stream, or on the torch ``stream``)."""
    kernel = gemm.compile_for_gpu(cfg, only=("ts",))["ts"]

    def launcher(a: Any, b: Any, c: Any, stream: Any = None) -> Any:
        m, n = c.shape
        counters = host.make_counters_tensor(cfg, m, n)
        workspace = host.make_workspace(cfg, m, n)
        args = host.kernel_args(cfg, a, b, c, None, counters, None, None, workspace)
        if stream is not None:
            return host.on_stream(cfg, kernel, args, stream)
        return lambda: kernel(*args)

    return launcher


def randn(seed: int) -> Any:
    """``rand(rows, cols)``: bf16 normal values on the GPU, from one seeded generator."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    return lambda rows, cols: torch.randn(
        rows, cols, device="cuda", dtype=torch.bfloat16, generator=gen
    )


def check_config(gemm: Any, host: Any, fields: dict[str, Any]) -> dict[str, Any]:
    import torch

    cfg = gemm.GemmConfig(**fields)
    launcher, rand = launchers(gemm, host, cfg), randn(7)
    m, n, k, p = 1000, 768, 512, 640  # ragged, and short kernels: the most overlap
    b, e = rand(n, k), rand(p, n)
    c1 = host.make_output(cfg, m, n)
    a_s = [rand(m, k) for _ in range(ROUNDS)]
    d_s = [host.make_output(cfg, m, p) for _ in range(ROUNDS)]
    calls = []
    for a, d in zip(a_s, d_s, strict=True):
        calls += [launcher(a, b, c1), launcher(c1, e, d)]
    for call in calls:  # no synchronisation between the launches
        call()
    torch.cuda.synchronize()
    errs = []
    for a, d in zip(a_s, d_s, strict=True):
        mid = (a.float() @ b.float().T).to(torch.bfloat16)
        errs.append(rel_err(d, mid.float() @ e.float().T))
    # write after write: X and Y alternate into one C, then K = 0 after a full GEMM
    c = host.make_output(cfg, m, n)
    a2, b2 = rand(m, k), rand(n, k)
    x, y = launcher(a_s[0], b, c), launcher(a2, b2, c)
    for _ in range(ROUNDS):
        x()
        y()
    torch.cuda.synchronize()
    errs.append(rel_err(c, a2.float() @ b2.float().T))
    z = host.make_output(cfg, m, n)
    a0, b0 = host.make_inputs(cfg, (m, n, 0))
    full, zero = launcher(a_s[0], b, z), launcher(a0, b0, z)
    for _ in range(ROUNDS):
        full()
        zero()
    torch.cuda.synchronize()
    zeros_ok = bool((z == 0).all())
    worst = max(errs)
    ok = worst < 1e-2 and zeros_ok
    return {"config": fields, "pdl": cfg.pdl, "max_rel_err": worst, "k0_zeros": zeros_ok, "ok": ok}


def negative_control(gemm: Any, host: Any) -> dict[str, Any]:
    """The read-after-write chain with nothing ordering its second GEMM after the first (see
    the module docstring): ``detected`` when some ``D`` is wrong, as it must be."""
    import torch

    cfg = gemm.GemmConfig()
    launcher, rand = launchers(gemm, host, cfg), randn(11)
    m, n, k, p = 1000, 768, 16384, 640  # a long first GEMM, a short second one
    b, e = rand(n, k), rand(p, n)
    other = torch.cuda.Stream()
    errs = []
    for _ in range(ROUNDS):
        a, c1, d = rand(m, k), host.make_output(cfg, m, n), host.make_output(cfg, m, p)
        c1.zero_()
        first, second = launcher(a, b, c1), launcher(c1, e, d, stream=other)
        torch.cuda.synchronize()  # C1 is zero and nothing runs when the round starts
        first()
        second()  # on the other stream, no event: it may read C1 before the first wrote it
        torch.cuda.synchronize()
        mid = (a.float() @ b.float().T).to(torch.bfloat16)
        errs.append(rel_err(d, mid.float() @ e.float().T))
    wrong = sum(err >= 1e-2 for err in errs)
    detected = wrong > 0
    return {
        "control": "second GEMM on another stream, no event",
        "rounds_wrong": wrong,
        "rounds": ROUNDS,
        "max_rel_err": max(errs),
        "detected": detected,
        "ok": detected,
    }


def main() -> int:
    host = importlib.import_module("_gemm_host")  # examples/hopper/, on sys.path above
    gemm = importlib.import_module("gemm")

    ok = True
    for fields in CONFIGS:
        try:
            r = check_config(gemm, host, fields)
        except Exception as ex:  # report and go on: one broken config must not hide the rest
            r = {"config": fields, "ok": False, "error": f"{type(ex).__name__}: {ex}"[:500]}
        ok = ok and r["ok"]
        print(json.dumps(r), flush=True)
    try:
        r = negative_control(gemm, host)
    except Exception as ex:
        r = {"control": "error", "ok": False, "error": f"{type(ex).__name__}: {ex}"[:500]}
    print(json.dumps(r), flush=True)
    return 0 if ok and r["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
