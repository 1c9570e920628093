"""A TS kernel as a PyTorch operator: eager, torch.compile(fullgraph=True), CUDA graphs.

Runs where torch and a CUDA GPU are (the H200 machine); skipped elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("cutlass")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

# Inductor (torch 2.11) calls its own deprecated torch.jit.script_method while compiling: not
# ours to fix, and the test run turns warnings into errors.
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning"
)


@pytest.fixture(scope="module")
def copy_op(load_example: Callable[[str], Any]) -> Any:
    from ts_runtime.torch_op import torch_op

    example = load_example("tma_copy")
    return torch_op(
        "ts_tests::tma_copy", example.KERNELS["two_tiles"], outputs=lambda x: torch.empty_like(x)
    )


def _src() -> Any:
    return torch.randn(1024, 512, device="cuda", dtype=torch.float16)


def test_eager(copy_op: Any) -> None:
    x = _src()
    assert torch.equal(copy_op(x), x)
    compiles = copy_op.compiles
    assert torch.equal(copy_op(x * 2), x * 2)
    assert copy_op.compiles == compiles  # same signature: no new compile


def test_torch_compile_fullgraph(copy_op: Any) -> None:
    def copy_twice(x: Any) -> Any:
        return copy_op(x + 1) * 2

    double_copy = torch.compile(copy_twice, fullgraph=True)

    x = _src()
    torch.testing.assert_close(double_copy(x), (x + 1) * 2)


def test_cuda_graph(copy_op: Any) -> None:
    x = _src()
    copy_op(x)  # warm up: compile and load outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = copy_op(x)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, x)


def test_misaligned_tensor_is_a_typed_error(copy_op: Any) -> None:
    from ts_runtime import RuntimeConfigError

    x = torch.randn(1024 * 512 + 1, device="cuda", dtype=torch.float16)[1:].view(1024, 512)
    with pytest.raises(RuntimeConfigError, match="not 16-byte aligned"):
        copy_op(x)


def test_empty_tensor_needs_no_launch(copy_op: Any) -> None:
    x = torch.empty(0, 512, device="cuda", dtype=torch.float16)
    assert copy_op(x).shape == (0, 512)


@pytest.fixture(scope="module")
def gemm_op(load_example: Callable[[str], Any]) -> Any:
    """The TS GEMM (128 x 256 tiles, bf16) as ``c = a @ b.T`` for K-major ``a``, ``b``."""
    import cutlass.cute as cute

    from ts_runtime.torch_op import torch_op

    example = load_example("gemm")
    launch = example.gemm_kernel(example.GemmConfig()).jit_launcher

    @cute.jit
    def gemm_abt(a: Any, b: Any, c: Any, stream: Any = None) -> None:
        launch(a, b, c, None, None, stream)

    def out(a: Any, b: Any) -> Any:
        return torch.empty(a.shape[0], b.shape[0], dtype=a.dtype, device=a.device)

    def k_is_zero(a: Any, b: Any, c: Any) -> None:
        c.zero_()

    return torch_op("ts_tests::gemm", gemm_abt, outputs=out, num_inputs=2, if_empty=k_is_zero)


def test_gemm_in_a_compiled_module(gemm_op: Any) -> None:
    weight = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16) / 32
    layer: Any = torch.nn.Linear(1024, 512, bias=False, device="cuda", dtype=torch.bfloat16)
    layer.weight.data.copy_(weight)
    layer.forward = lambda x: torch.relu(gemm_op(x, layer.weight))  # the TS GEMM inside

    model = torch.compile(layer, fullgraph=True)
    x = torch.randn(384, 1024, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        got = model(x)
        want = torch.relu(x.float() @ weight.float().T).to(torch.bfloat16)
    torch.testing.assert_close(got, want, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("mnk", [(0, 512, 1024), (384, 0, 1024), (384, 512, 0)])
def test_gemm_op_on_empty_problems(gemm_op: Any, mnk: tuple[int, int, int]) -> None:
    m, n, k = mnk
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    got = gemm_op(a, b)
    torch.cuda.synchronize()
    assert got.shape == (m, n)
    torch.testing.assert_close(got, torch.zeros(m, n, device="cuda", dtype=torch.bfloat16))


def test_empty_input_without_if_empty_is_a_typed_error() -> None:
    from ts_runtime import RuntimeConfigError
    from ts_runtime.torch_op import torch_op

    def never(*args: Any) -> None:
        raise AssertionError("no launch, no compile")

    def out(a: Any, b: Any) -> Any:
        return torch.empty(a.shape[0], b.shape[0], dtype=a.dtype, device=a.device)

    op = torch_op("ts_tests::strict_gemm", never, outputs=out, num_inputs=2)
    a = torch.empty(4, 0, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(RuntimeConfigError, match="input 0 has the shape \\(4, 0\\)"):
        op(a, a)
