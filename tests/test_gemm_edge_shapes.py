"""The TS GEMM on empty and tiny problems (GPU): every shape is right or never launched.

An empty M or N once killed the process (a fast-divmod divisor of 0 built on the host);
K = 0 must give C = beta * C (+ bias), here 0. Runs where torch, the CuTe DSL and a CUDA GPU
are; skipped elsewhere.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("cutlass")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "hopper"
SHAPES = [
    (0, 1501, 707),
    (1003, 0, 707),
    (0, 0, 0),
    (1003, 1501, 0),
    (1, 1, 1),
    (1, 8, 8),
    (7, 9, 13),
    (128, 256, 64),
    (129, 257, 65),
    (4096, 1, 64),
    (1, 4096, 64),
    (64, 64, 4096),
]


@pytest.fixture(scope="module")
def gemm() -> Any:
    sys.path.insert(0, str(EXAMPLES))  # the example imports its sibling modules
    module = importlib.import_module("gemm")
    cfg = module.GemmConfig()
    return module, cfg, module.compile_for_gpu(cfg)


@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gemm_shape(gemm: Any, mnk: tuple[int, int, int]) -> None:
    module, cfg, compiled = gemm
    result = module.run_case(cfg, compiled, mnk, iters=1, timed=False)
    for name in compiled:
        assert result[name]["ok"], (name, mnk, result[name])
