"""Dump the Hopper GEMM's PTX, ptxas's notes and (where the CUDA tools have ``nvdisasm``) its
SASS, for the TS kernel and its twin, one configuration with and without deferred stores.

A deferred store whose K loop zeroes the total in its first iteration runs at 0.58-0.75 of
the plain kernel on every FP8 shape, a loss paid in every K block: the PTX carries that zeroing
into every block as 64 ``selp.f32`` and 128 more ``mov`` per thread, which is why the tile's
first promotion assigns the total instead. The SASS says what runs: a CPU machine may have
``ptxas`` but no disassembler, the GPU machine's CUDA toolkit has both.

Writes ``{who}_{plain|defer}.ptx`` / ``.ptxas.txt`` / ``.sass`` into the folder given (no GPU
needed; ``CUTE_DSL_ARCH`` defaults to ``sm_90a``). Usage::

    python tools/gemm_sass.py OUT [--tile 128x128] [--cluster 2x1]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "hopper"))
os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")


def _pair(text: str) -> tuple[int, int]:
    a, b = text.lower().split("x")
    return int(a), int(b)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--tile", type=_pair, default=(128, 128))
    parser.add_argument("--cluster", type=_pair, default=(2, 1))
    args = parser.parse_args()
    from ts_codegen.dsl import compile_ptx

    gemm = importlib.import_module("gemm")
    args.out.mkdir(parents=True, exist_ok=True)
    plain = gemm.GemmConfig(
        dtype="e4m3", scale="tensor", tile_mn=args.tile, cluster_mn=args.cluster
    )
    cuda = os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/cuda/bin"])
    ptxas, nvdisasm = shutil.which("ptxas", path=cuda), shutil.which("nvdisasm", path=cuda)
    for tag, cfg in (("plain", plain), ("defer", dataclasses.replace(plain, defer_store=True))):
        for who, kernel in gemm.kernels(cfg):
            stem = args.out / f"{who}_{tag}"
            _, ptx = compile_ptx(kernel, *gemm.fake_operands(cfg))
            stem.with_suffix(".ptx").write_text(ptx)
            if ptxas is None:
                continue
            cubin = stem.with_suffix(".cubin")
            cmd = [ptxas, "-arch=sm_90a", "-v", str(stem.with_suffix(".ptx")), "-o", str(cubin)]
            notes = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
            stem.with_suffix(".ptxas.txt").write_text(notes)
            if nvdisasm is not None:
                sass = subprocess.run(
                    [nvdisasm, "-c", "-g", str(cubin)], capture_output=True, text=True, check=True
                ).stdout
                stem.with_suffix(".sass").write_text(sass)
            cubin.unlink()
            print(stem.name, "sass" if nvdisasm else "no nvdisasm", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
