"""``ts_runtime.harness.max_active_clusters``: the persistent grid follows the machine's GPU.

Without a GPU (torch sees none, or is missing) the grid is an H200's; with one, the driver's
occupancy answer (``ts_runtime._dsl.max_active_clusters``), asked once per cluster size. A
stand-in torch and driver play the GPU here: a 114-SM H100 PCIe whose GPCs hold 56 clusters
of two.
"""

from __future__ import annotations

import sys
import types

import pytest

from ts_runtime import _dsl, harness


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(harness, "_ACTIVE_CLUSTERS", {})


def _fake_gpu(monkeypatch: pytest.MonkeyPatch, answers: dict[int, int]) -> list[int]:
    asked: list[int] = []
    cuda = types.SimpleNamespace(is_available=lambda: True)
    torch = types.SimpleNamespace(cuda=cuda, zeros=lambda *a, **k: None)

    def ask_driver(size: int) -> int:
        asked.append(size)
        return answers[size]

    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(_dsl, "max_active_clusters", ask_driver)
    return asked


def test_without_a_gpu_the_grid_is_an_h200s(monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = types.SimpleNamespace(is_available=lambda: False)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    assert [harness.max_active_clusters(s) for s in (1, 2)] == [132, 66]
    assert harness.max_active_clusters(2) == harness.FALLBACK_SMS // 2
    monkeypatch.setitem(sys.modules, "torch", None)  # not installed: ImportError
    assert harness.max_active_clusters(1) == 132


def test_with_a_gpu_the_driver_decides_once_per_size(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _fake_gpu(monkeypatch, {1: 114, 2: 56})
    assert harness.max_active_clusters() == 114
    assert harness.max_active_clusters(2) == 56
    assert harness.max_active_clusters(2) == 56
    assert asked == [1, 2]  # cached: the compiled kernel and the host sizes see one answer


def test_a_failed_driver_query_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_gpu(monkeypatch, {})

    def refuse(size: int) -> int:
        raise RuntimeError("CUDA driver error <CUresult.CUDA_ERROR_INVALID_VALUE: 1>")

    monkeypatch.setattr(_dsl, "max_active_clusters", refuse)
    from ts_runtime.errors import RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match=r"occupancy query failed.*INVALID_VALUE") as err:
        harness.max_active_clusters(8)
    assert "max_active_clusters(8)" in str(err.value) and err.value.fix
    assert harness._ACTIVE_CLUSTERS == {}  # nothing cached: the next call asks again


@pytest.mark.parametrize("size", [0, -2, 17, 2.0, True, "2"])
def test_a_cluster_size_that_is_no_cluster_is_a_typed_error(size: object) -> None:
    from ts_runtime.errors import RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match="a cluster holds 1 to 16 CTAs") as err:
        harness.max_active_clusters(size)  # type: ignore[arg-type]
    assert repr(size) in str(err.value) and err.value.fix


def test_the_real_driver_agrees_with_the_dsl_and_answers_inside_a_trace() -> None:
    """On a GPU: the probe's answer is the DSL's ``HardwareInfo`` one, and asking while a kernel
    is being traced works (``HardwareInfo`` compiles a kernel itself, which may not nest)."""
    torch = pytest.importorskip("torch")
    hardware_info = pytest.importorskip("cutlass.utils").HardwareInfo
    if harness.gpu_missing() is not None:
        pytest.skip("needs a Hopper GPU")
    import cutlass.cute as cute

    torch.zeros(1, device="cuda")
    for size in (1, 2, 4):
        assert _dsl.max_active_clusters(size) == hardware_info().get_max_active_clusters(size)
    seen: list[int] = []

    @cute.jit
    def traced() -> None:
        seen.append(harness.max_active_clusters(2))

    cute.compile(traced)
    assert seen == [_dsl.max_active_clusters(2)] and seen[0] > 0
