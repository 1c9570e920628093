"""The TS GEMM on empty and tiny problems (GPU): every shape is right or never launched.

An empty M or N once killed the process (a fast-divmod divisor of 0 built on the host);
K = 0 must give C = beta * C (+ bias), here 0. The same shapes in FP8 (e4m3 -> bf16, per-tensor
and rowwise scales; a ragged K on a 16-byte padded pitch), and the operands FP8 cannot take
(K-contiguous rows not a multiple of 16 bytes, an N-major operand) refused with a typed error
before any launch. Runs where torch, the CuTe DSL and a CUDA GPU are; skipped elsewhere.
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


CONFIGS = {
    "bf16": {},
    "e4m3-tensor": {"dtype": "e4m3", "scale": "tensor"},
    "e4m3-rowwise": {"dtype": "e4m3", "scale": "rowwise"},
}


def _module() -> Any:
    sys.path.insert(0, str(EXAMPLES))  # the example imports its sibling modules
    return importlib.import_module("gemm")


@pytest.fixture(scope="module", params=list(CONFIGS))
def gemm(request: pytest.FixtureRequest) -> Any:
    module = _module()
    cfg = module.GemmConfig(**CONFIGS[request.param])
    return module, cfg, module.compile_for_gpu(cfg)


@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gemm_shape(gemm: Any, mnk: tuple[int, int, int]) -> None:
    module, cfg, compiled = gemm
    result = module.run_case(cfg, compiled, mnk, iters=1, timed=False)
    for name in compiled:
        assert result[name]["ok"], (name, mnk, result[name])


def test_fp8_operands_fp8_cannot_take_are_refused_before_launch() -> None:
    """A contiguous FP8 operand with K = 13 (13-byte rows) and an N-major FP8 B."""
    from ts_runtime.errors import RuntimeConfigError, UnsupportedOnTarget

    cfg = _module().GemmConfig(dtype="e4m3", scale="tensor")
    host = importlib.import_module("_gemm_host")  # beside gemm.py
    fp8 = torch.float8_e4m3fn
    scales = host.make_scales(cfg, 7, 9)
    c = host.make_output(cfg, 7, 9)
    a = torch.randn(7, 13, device="cuda").to(fp8)
    b = torch.randn(9, 13, device="cuda").to(fp8)
    with pytest.raises(RuntimeConfigError, match="multiple of 16"):
        host.check_operands(cfg, a, b, c, None, *scales)
    a = torch.zeros(7, 32, device="cuda", dtype=fp8)
    b_n_major = torch.zeros(32, 9, device="cuda", dtype=fp8).t()  # 9 x 32, strides (1, 9)
    with pytest.raises(UnsupportedOnTarget, match="K-major"):
        host.check_operands(cfg, a, b_n_major, c, None, *scales)
