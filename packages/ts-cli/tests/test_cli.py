"""Every subcommand on a good kernel, a broken kernel and bad arguments."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from ts_cli import main

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "schedules"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_show_prints_one_column_per_task(
    capsys: pytest.CaptureFixture[str], kernel_file: Path
) -> None:
    code, out, _ = run(capsys, "show", str(kernel_file))
    assert code == 0
    header = out.splitlines()[0]
    assert "loader (w0-3)" in header and "writer (w4-7)" in header
    assert "for domain_loop(0, Seg.length(tile), 1):" in out
    assert "ProdAcq-> ring.acquire" in out and "<-ConsRel header.release" in out


def test_show_tree(capsys: pytest.CaptureFixture[str], kernel_file: Path) -> None:
    code, out, _ = run(capsys, "show", "--tree", str(kernel_file))
    assert code == 0
    assert "# task loader (warps 0..3)" in out
    assert "schedule good_loader(ring, header)" in out


def test_verify_good_kernel(capsys: pytest.CaptureFixture[str], kernel_file: Path) -> None:
    code, out, _ = run(capsys, "verify", str(kernel_file))
    assert code == 0
    assert out.startswith("segments: verified")


def test_verify_broken_kernel_exits_1_with_the_counterexample(
    capsys: pytest.CaptureFixture[str], kernel_file: Path
) -> None:
    code, out, _ = run(capsys, "verify", f"{kernel_file}:broken")
    assert code == 1
    assert out.startswith("segments: 1 error(s)")
    assert "TS-V302" in out and "blocked: loader" in out and "blocked: writer" in out
    assert f"{kernel_file.name}" in out


def test_verify_json(capsys: pytest.CaptureFixture[str], kernel_file: Path) -> None:
    code, out, _ = run(capsys, "verify", "--json", f"{kernel_file}:broken")
    assert code == 1
    data = json.loads(out)
    assert data["ok"] is False
    assert [d["code"] for d in data["diagnostics"]] == ["TS-V302"]


def test_graph_mermaid_and_dot(capsys: pytest.CaptureFixture[str], kernel_file: Path) -> None:
    code, out, _ = run(capsys, "graph", str(kernel_file))
    assert code == 0 and out.startswith("flowchart")
    code, out, _ = run(capsys, "graph", "--format", "dot", str(kernel_file))
    assert code == 0 and out.startswith('digraph "segments" {')
    assert '"t:loader" -> "r:ring" [label="produces"];' in out
    assert '"r:header" -> "t:writer" [label="consumed"];' in out


def test_timeline_of_a_verified_run(
    capsys: pytest.CaptureFixture[str], kernel_file: Path, tmp_path: Path
) -> None:
    svg = tmp_path / "run.svg"
    code, out, _ = run(capsys, "timeline", str(kernel_file), "-o", str(svg), "--iterations", "4")
    assert code == 0 and "wrote" in out
    text = svg.read_text()
    assert text.startswith("<svg") and text.rstrip().endswith("</svg>")
    assert "segments: verified run" in text
    # 1 header + 4 ring fills, each acquire/fill/commit, and the writer's matching ops.
    assert text.count("<rect") >= 5 * 3
    assert "marker-end" in text  # barrier hand-offs drawn as arrows


def test_timeline_of_a_counterexample(
    capsys: pytest.CaptureFixture[str], kernel_file: Path, tmp_path: Path
) -> None:
    svg = tmp_path / "deadlock.svg"
    code, _, _ = run(capsys, "timeline", f"{kernel_file}:broken", "-o", str(svg))
    assert code == 1
    text = svg.read_text()
    assert "segments: counterexample" in text
    assert text.count(">blocked<") == 2


def test_compile_needs_the_code_generator_and_a_compile_function(
    capsys: pytest.CaptureFixture[str], kernel_file: Path
) -> None:
    code, _, err = run(capsys, "compile", str(kernel_file))
    assert code == 2
    if importlib.util.find_spec("cutlass") is None:
        assert "ts-codegen" in err
    else:
        assert "has no compile_only() function" in err


def test_doctor_lists_every_layer(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "doctor")
    assert code == 0
    for dist in ("ts-ir", "ts-trace", "ts-verify", "ts-cli", "nvidia-cutlass-dsl"):
        assert f"{dist}: " in out
    assert out.startswith("python: ")
    assert "gpu: " in out


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("missing.py", "no such file"),
        ("json:nothing", "has no function nothing()"),
        ("no.such.module:kernel", "cannot import module"),
    ],
)
def test_bad_kernel_specs(capsys: pytest.CaptureFixture[str], spec: str, message: str) -> None:
    code, _, err = run(capsys, "show", spec)
    assert code == 2
    assert message in err


def test_function_must_return_a_plan(capsys: pytest.CaptureFixture[str], kernel_file: Path) -> None:
    code, _, err = run(capsys, "verify", f"{kernel_file}:not_a_plan")
    assert code == 2 and "returned int, not a KernelPlan" in err


def test_tracing_error_in_the_kernel_names_its_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "typo.py"
    bad.write_text(
        "from ts_trace import MemoryResource, producer_work, schedule\n"
        "class R(MemoryResource):\n"
        "    @producer_work\n"
        "    def fill(self, stage_info): ...\n"
        "@schedule\n"
        "def s(r):\n"
        "    r.fil()\n"
        "def kernel():\n"
        "    return s(R(name='r'))\n"
    )
    code, _, err = run(capsys, "show", str(bad))
    assert code == 1
    assert "TS-T002" in err and "did you mean `fill`" in err and "line 7" in err


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="examples are not shipped with the wheel")
@pytest.mark.parametrize("example", sorted(p.stem for p in EXAMPLES.glob("*.py")))
def test_every_bundled_example_verifies(capsys: pytest.CaptureFixture[str], example: str) -> None:
    pytest.importorskip(
        "task_scheduling", reason="the examples import the task_scheduling facade (tests all)"
    )
    code, out, _ = run(capsys, "verify", str(EXAMPLES / f"{example}.py"))
    assert code == 0, out


def test_console_script_runs_as_a_module() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ts_cli", "doctor"], capture_output=True, text=True, check=True
    )
    assert "ts-cli: " in proc.stdout


@pytest.mark.skipif(not (EXAMPLES.parent / "hopper").is_dir(), reason="examples not shipped")
def test_compile_a_hopper_example(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("cutlass")
    example = EXAMPLES.parent / "hopper" / "grid_stride_copy.py"
    code, out, _ = run(capsys, "compile", str(example), "--ptx-dir", str(tmp_path))
    assert code == 0, out
    data = json.loads(out)
    assert data["same_counts"] is True and data["ts"]["ld.global"] == 4
    assert data["ptx_dir"]  # where the DSL keeps the PTX (fixed when it is first imported)


def test_compile_check_validates_the_translation(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``ts compile --check``: the TMA copy's PTX runs its verified plan's barrier protocol."""
    pytest.importorskip("cutlass")
    example = EXAMPLES.parent / "hopper" / "tma_copy.py"
    code, out, err = run(capsys, "compile", str(example), "--check", "--ptx-dir", str(tmp_path))
    assert code == 0, out + err
    data = json.loads(out)
    assert data["ok"] is True and len(data["translation"]) == 1
    assert data["translation"][0]["ok"] is True and data["translation"][0]["errors"] == []


def test_kernel_file_imports_its_sibling(
    capsys: pytest.CaptureFixture[str], kernel_file: Path, tmp_path: Path
) -> None:
    """As a script could: a kernel file may import a helper module from its own folder."""
    folder = tmp_path / "kernels"
    folder.mkdir()
    (folder / "shared_plan.py").write_text(kernel_file.read_text())
    (folder / "main_kernel.py").write_text("from shared_plan import kernel  # noqa: F401\n")
    assert main(["show", str(folder / "main_kernel.py")]) == 0
    assert "shared_plan" not in capsys.readouterr().err
    assert str(folder) not in sys.path  # the folder is only on the path while loading
