"""The host harness of examples, tests and benchmarks (ts_runtime.harness).

The CPU parts run everywhere (torch and the DSL replaced by stand-ins where a GPU would be
needed); compiling needs the CuTe DSL, running needs torch and a Hopper GPU.
"""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest
from test_runtime_staged import copy_tasks

from ts_runtime import harness
from ts_runtime.harness import Case, ExampleCLI
from ts_runtime.staged import Kernel


def _fake_torch(available: bool, capability: tuple[int, int] = (9, 0)) -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_available=lambda: available,
        get_device_capability=lambda: capability,
        get_device_name=lambda: "NVIDIA Test GPU",
        synchronize=lambda: None,
    )
    return torch


# -- gpu_missing / gpu_ready ----------------------------------------------------------------------
def test_no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` fails as if not installed
    problem = harness.gpu_missing()
    assert problem is not None
    assert "`pip install torch`" in problem and problem.endswith(harness.INSTEAD)


def test_no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(False))
    problem = harness.gpu_missing()
    assert problem is not None and problem.startswith("no CUDA GPU here")


def test_not_a_hopper_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(True, (10, 0)))
    problem = harness.gpu_missing()
    assert problem is not None and "this GPU is NVIDIA Test GPU (sm_100)" in problem
    assert "built for sm_90a" in problem
    assert harness.gpu_missing((10, 0)) is None


def test_gpu_ready_says_why_on_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(True))
    assert harness.gpu_ready("/x/copy.py")
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(False))
    assert not harness.gpu_ready("/x/copy.py")
    assert capsys.readouterr().err.startswith("copy.py: no CUDA GPU here")


# -- the command line -----------------------------------------------------------------------------
def test_cli_shape_options_and_multiples() -> None:
    cli = ExampleCLI("Copy.\n\nMore.", "copy.py", shape={"m": 128, "n": 512}, multiple_of=(64, 256))
    args = cli.parse(["--n", "768", "--iters", "5"])
    assert args.shape == (128, 768) and args.iters == 5 and not args.compile_only
    assert cli.parser.description == "Copy."
    with pytest.raises(SystemExit) as info:
        cli.parse(["--m", "100"])
    assert info.value.code == 2
    # The tile may depend on the other options.
    assert cli.parse(["--m", "96"], multiple_of=lambda a: (32, 256)).shape == (96, 512)


def test_cli_without_iters_or_shape() -> None:
    cli = ExampleCLI(None, "hang.py", iters=None)
    args = cli.parse(["--compile-only"])
    assert args.compile_only and args.shape == () and not hasattr(args, "iters")


def test_cli_compile_only_prints_one_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    cli = ExampleCLI("Copy.", "copy.py")
    cli.parse(["--compile-only"])
    never = pytest.fail
    assert cli.run(lambda: {"same_counts": True, "b": 1, "a": 2}, never) == 0
    out = capsys.readouterr().out
    assert out == json.dumps({"a": 2, "b": 1, "same_counts": True}) + "\n"
    assert cli.run(lambda: {"same_counts": False}, never) == 1
    assert cli.run(lambda: {"x": 0}, never, compile_ok=lambda o: o["x"] == 0) == 0


def test_cli_gpu_run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    cli = ExampleCLI("Copy.", "copy.py")
    cli.parse([])
    monkeypatch.setitem(sys.modules, "torch", None)
    assert cli.run(pytest.fail, pytest.fail) == 2  # no torch: said why, nothing run
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("copy.py: the GPU run needs PyTorch")
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(True))
    good = {"ts": {"ok": True, "ms": 1.0}, "twin": {"ok": True}, "torch": {"ms": 2.0}}
    assert cli.run(pytest.fail, lambda: good) == 0
    assert cli.run(pytest.fail, lambda: {**good, "twin": {"ok": False}}) == 1
    assert cli.run(pytest.fail, lambda: {"n": 3}) == 1  # nothing was checked
    assert cli.run(pytest.fail, lambda: {"trapped": True}, gpu_ok=lambda o: o["trapped"]) == 0


# -- timing and running ---------------------------------------------------------------------------
def test_time_rounds_interleaves_and_keeps_the_best(monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []
    times = iter([3.0, 5.0, 4.0, 2.0, 6.0, 1.0])

    def fake_time_ms(fn: Any, iters: int, warmup: int = 3) -> float:
        order.append(fn())
        return next(times)

    monkeypatch.setattr(harness, "time_ms", fake_time_ms)
    calls = {"ts": lambda: "ts", "twin": lambda: "twin"}
    best = harness.time_rounds(calls, iters=10, rounds=3)
    assert order == ["ts", "twin", "twin", "ts", "ts", "twin"]  # the order rotates
    assert best == {"ts": 2.0, "twin": 1.0}


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """torch and ``cute.compile`` stand-ins: 'compiling' returns the function itself."""
    launched: list[str] = []
    cutlass = types.ModuleType("cutlass")
    cute = types.ModuleType("cutlass.cute")
    cute.compile = lambda fn, *args: fn  # type: ignore[attr-defined]
    cutlass.cute = cute  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cutlass", cutlass)
    monkeypatch.setitem(sys.modules, "cutlass.cute", cute)
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(True))
    monkeypatch.setattr(harness, "time_ms", lambda fn, iters, warmup=3: 2.0 if fn() else 4.0)
    yield launched


def test_run_on_gpu_checks_times_and_compares(fake_gpu: list[str]) -> None:
    def kernel(name: str) -> Any:
        def launch(out: list[str]) -> bool:
            fake_gpu.append(name)
            out.append(name)
            return name == "ts"  # the "faster" one (see the fixture's time_ms)

        return launch

    resets: list[str] = []

    def case(name: str) -> Case:
        out: list[str] = []
        if name == "ts":
            return Case([out], lambda: out == ["ts"], reset=lambda: resets.append(name))
        return Case([out], lambda: {"ok": True, "err": 0.5}, launches=2)

    result = harness.run_on_gpu(
        {"ts": kernel("ts"), "twin": kernel("twin")},
        case,
        iters=5,
        rounds=1,
        bytes_moved=4_000_000,
        baselines={"torch": lambda: False},
    )
    assert fake_gpu == ["ts", "twin", "twin", "ts", "twin"]  # 1 + 2 checked launches, timing
    assert resets == ["ts"]
    assert result["ts"] == {"ok": True, "ms": 2.0, "GBps": 2.0}
    assert result["twin"] == {"ok": True, "err": 0.5, "ms": 4.0, "GBps": 1.0}
    assert result["torch"] == {"ms": 4.0, "GBps": 1.0}
    assert result["ts_over_twin"] == 2.0


def test_a_failed_check_is_reported_not_raised(fake_gpu: list[str]) -> None:
    result = harness.run_on_gpu(
        [("ts", lambda: None)], lambda name: Case([], lambda: False), iters=1
    )
    assert result["ts"]["ok"] is False and "ts_over_twin" not in result


# -- host stages and compiling --------------------------------------------------------------------
def test_kernel_items_and_verified() -> None:
    kern = Kernel(copy_tasks, name="copy")
    launcher = object()
    kern.launcher(launcher)
    assert harness.kernel_items({"ts": kern, "twin": len}) == [("ts", launcher), ("twin", len)]
    assert harness.kernel_items([("a", len)]) == [("a", len)]
    assert harness.verified(kern) is True
    assert harness.verified(kern.plan().plan) is True


def test_verified_raises_on_an_error() -> None:
    from ts_ir import CooperativeGroupSpec, PipelineSpec, PipelineType
    from ts_trace import MemoryResource, TaskDeclaration, build_plan, domain_loop, schedule
    from ts_verify import VerificationError

    @schedule
    def fill(r: Any) -> None:
        with domain_loop(4):
            r.acquire()  # never committed

    @schedule
    def drain(r: Any) -> None:
        with domain_loop(4):
            r.wait()
            r.release()

    group = CooperativeGroupSpec("thread", 32)
    ring = MemoryResource(
        name="ring", pipeline_config=PipelineSpec(PipelineType.AsyncAsync, 2, 0, group, group)
    )
    plan = build_plan(
        [
            TaskDeclaration([], [ring], 0, 1, fill(ring), name="fill"),
            TaskDeclaration([ring], [], 1, 1, drain(ring), name="drain"),
        ],
        {ring: []},
        name="hang",
    )
    with pytest.raises(VerificationError):
        harness.verified(plan)


def test_fake_tensor_and_compile_only() -> None:
    cutlass = pytest.importorskip("cutlass")
    from runtime_staged_kernels import kern, twin

    v = harness.fake_tensor(cutlass.Float16, 4096, align=16)
    m = harness.fake_tensor(cutlass.Float16, (64, 256), row_major=True)
    assert tuple(v.shape) == (4096,) and tuple(m.shape) == (64, 256)
    assert tuple(m.stride)[1] == 1  # row-major: the last mode is contiguous
    args = (v, harness.fake_tensor(cutlass.Float16, 4096, align=16), cutlass.Int32(4096))
    out = harness.compile_only(
        "copy", {"ts": kern, "twin": twin}, args, plan=kern, ops=True, n=4096
    )
    assert out["example"] == "copy" and out["n"] == 4096 and out["verified"] is True
    assert out["ts"]["ld.global"] == out["twin"]["ld.global"] > 0
    assert out["ts_total"] == sum(out["ts_ops"].values()) <= out["twin_total"]
    assert out["same_counts"] == (out["ts"] == out["twin"])
    assert "ld.global" in harness.ptx_of(twin, *args)


def test_run_on_gpu_for_real() -> None:
    torch = pytest.importorskip("torch")
    cutlass = pytest.importorskip("cutlass")
    if harness.gpu_missing() is not None:
        pytest.skip("needs a Hopper GPU")
    from runtime_staged_kernels import kern, twin

    n = 1 << 20
    src = torch.randn(n, device="cuda", dtype=torch.float16)

    def case(name: str) -> Case:
        dst = torch.zeros_like(src)
        args = (harness.to_cute(src), harness.to_cute(dst), cutlass.Int32(n))
        return Case(args, lambda: torch.equal(dst, src), reset=dst.zero_)

    copy = torch.empty_like(src)
    out = harness.run_on_gpu(
        {"ts": kern, "twin": twin},
        case,
        iters=5,
        rounds=2,
        bytes_moved=4 * n,
        baselines={"torch": lambda: copy.copy_(src)},
    )
    assert out["ts"]["ok"] and out["twin"]["ok"]
    assert out["ts"]["ms"] > 0 and out["torch"]["GBps"] > 0 and out["ts_over_twin"] > 0
    assert harness.to_cute(None) is None
