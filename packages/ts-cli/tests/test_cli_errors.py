"""A new user's mistakes: a message naming what is wrong and the fix, the documented exit code,
no traceback, and with ``--json`` one JSON object on stdout (docs/cli.rst)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ts_cli import main
from ts_cli.explain import all_entries

import ts_ir

# The module (the package attribute `ts_cli.main` is the function).
main_module = importlib.import_module("ts_cli.main")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    """Run with ``--json``: stdout must be exactly one JSON object."""
    code, out, err = run(capsys, *argv)
    data = json.loads(out)
    assert isinstance(data, dict)
    return code, data, err


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- the kernel file's own mistakes -----------------------------------------------------------


def test_syntax_error_names_the_line_without_a_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = write(tmp_path, "syntax.py", "x = 1\ndef kernel(:\n    pass\n")
    code, out, err = run(capsys, "show", str(bad))
    assert code == 2 and out == ""
    assert "Traceback" not in err
    assert err.startswith("ts show: ") and "syntax.py, line 2: invalid syntax" in err
    assert "def kernel(:" in err


def test_import_error_names_the_module_and_the_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = write(tmp_path, "imports.py", "import os\nimport no_such_helper_module\n")
    code, _, err = run(capsys, "verify", str(bad))
    assert code == 2 and "Traceback" not in err
    assert "imports.py, line 2" in err and "no_such_helper_module" in err
    assert "installed in this Python" in err and "--traceback" in err


def test_a_missing_cuda_dsl_import_says_what_to_install(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A None entry makes `import cutlass` fail as if the CuTe DSL were not installed.
    monkeypatch.setitem(sys.modules, "cutlass", None)
    bad = write(tmp_path, "gpu_kernel.py", "import cutlass\n")
    code, data, err = run_json(capsys, "verify", "--json", str(bad))
    assert code == 2 and "Traceback" not in err
    assert "pip install nvidia-cutlass-dsl" in err
    assert data["ok"] is False and data["command"] == "verify"
    assert data["error"]["code"] == "missing-dependency"
    assert data["error"]["line"] == 1 and data["error"]["file"].endswith("gpu_kernel.py")


def test_an_exception_at_import_names_the_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = write(tmp_path, "raises.py", "\n\nraise RuntimeError('my own bug')\n")
    code, _, err = run(capsys, "graph", str(bad))
    assert code == 2 and "Traceback" not in err
    assert "raises.py, line 3: RuntimeError: my own bug" in err


def test_an_exception_in_the_kernel_function_names_its_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = write(
        tmp_path, "kraise.py", "def helper():\n    return 1 / 0\n\ndef kernel():\n    helper()\n"
    )
    code, _, err = run(capsys, "show", str(bad))
    assert code == 2 and "Traceback" not in err
    # The innermost line of the user's own file, with its source.
    assert "kraise.py, line 2, in helper: ZeroDivisionError: division by zero" in err
    assert "return 1 / 0" in err


def test_a_script_that_exits_when_imported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = write(
        tmp_path,
        "script.py",
        "import sys\n\ndef kernel(): ...\n\nsys.exit(3)\n",
    )
    code, data, err = run_json(capsys, "verify", "--json", str(script))
    assert code == 2 and "Traceback" not in err
    assert data["error"]["code"] == "kernel-failed" and data["error"]["line"] == 5
    assert "the file exited (sys.exit(3)) while ts imported it" in err
    assert 'if __name__ == "__main__":' in err


def test_traceback_flag_shows_the_full_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = write(tmp_path, "kraise.py", "def kernel():\n    return 1 / 0\n")
    code, _, err = run(capsys, "show", "--traceback", str(bad))
    assert code == 2
    assert "Traceback (most recent call last)" in err and "ZeroDivisionError" in err
    assert "--traceback` shows" not in err


def test_kernel_errors_with_a_ts_code_exit_1_and_point_at_ts_explain(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = write(
        tmp_path,
        "typo.py",
        "from ts_trace import MemoryResource, producer_work, schedule\n"
        "class R(MemoryResource):\n"
        "    @producer_work\n"
        "    def fill(self, stage_info): ...\n"
        "@schedule\n"
        "def s(r):\n"
        "    r.fil()\n"
        "def kernel():\n"
        "    return s(R(name='r'))\n",
    )
    code, data, err = run_json(capsys, "verify", "--json", str(bad))
    assert code == 1 and "Traceback" not in err
    assert data["error"]["code"] == "TS-T002"
    assert data["error"]["message"].endswith("see: ts explain TS-T002")
    # The command the message names works, offline.
    code, out, _ = run(capsys, "explain", "TS-T002")
    assert code == 0 and out.startswith(f"TS-T002: {ts_ir.entry('TS-T002').title}\n")


def test_what_the_kernel_prints_does_not_spoil_the_json(
    capsys: pytest.CaptureFixture[str], kernel_file: Path
) -> None:
    noisy = kernel_file.with_name("noisy.py")
    noisy.write_text("print('hello from the kernel file')\n" + kernel_file.read_text())
    code, data, err = run_json(capsys, "verify", "--json", str(noisy))
    assert code == 0 and data["ok"] is True
    assert "hello from the kernel file" in err


@pytest.mark.parametrize(
    ("spec", "kind", "message"),
    [
        ("missing.py", "no-kernel", "no such file: missing.py"),
        ("no.such.module:kernel", "no-kernel", "cannot import module"),
        (".", "no-kernel", "is not a kernel"),
    ],
)
def test_nothing_to_load_in_json(
    capsys: pytest.CaptureFixture[str], spec: str, kind: str, message: str
) -> None:
    code, data, err = run_json(capsys, "verify", "--json", spec)
    assert code == 2 and "Traceback" not in err
    assert data == {"ok": False, "command": "verify", "error": data["error"]}
    assert data["error"]["code"] == kind and message in data["error"]["message"]


def test_usage_errors_are_json_with_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, data, err = run_json(capsys, "verify", "--json")
    assert code == 2
    assert data["command"] == "verify" and data["error"]["code"] == "usage"
    assert "required: kernel" in data["error"]["message"]
    assert err.startswith("usage: ts verify")
    code, data, _ = run_json(capsys, "--json")
    assert code == 2 and data["error"]["code"] == "usage" and data["command"] is None


def test_usage_error_without_json_is_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "verify")
    assert code == 2 and out == ""
    assert "ts verify: the following arguments are required: kernel" in err


# --- outputs that cannot be written -----------------------------------------------------------


@pytest.mark.parametrize("where", ["missing_folder", "a_folder"])
def test_timeline_to_an_unwritable_path(
    capsys: pytest.CaptureFixture[str], kernel_file: Path, tmp_path: Path, where: str
) -> None:
    target = tmp_path / "no" / "such" / "x.svg" if where == "missing_folder" else tmp_path
    code, out, err = run(capsys, "timeline", str(kernel_file), "-o", str(target))
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.startswith(f"ts timeline: cannot write {target}: ")
    assert "give -o a file" in err


def test_compile_to_an_unwritable_ptx_dir(
    capsys: pytest.CaptureFixture[str],
    kernel_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Past the code-generator check, whether or not the CuTe DSL is installed here.
    monkeypatch.setattr(main_module, "_require_codegen", lambda kernel: None)
    blocker = write(tmp_path, "a_file", "")
    code, data, err = run_json(
        capsys, "compile", "--json", str(kernel_file), "--ptx-dir", str(blocker / "ptx")
    )
    assert code == 2 and "Traceback" not in err
    assert data["error"]["code"] == "cannot-write" and "--ptx-dir" in data["error"]["message"]


def test_compile_without_the_cute_dsl_exits_2_before_loading(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "cutlass", None)
    # Like every examples/hopper kernel, the file imports the DSL at the top.
    kernel = write(tmp_path, "hopper_kernel.py", "import cutlass\n")
    code, out, err = run(capsys, "compile", str(kernel))
    assert code == 2 and out == "" and "Traceback" not in err
    assert "nvidia-cutlass-dsl" in err and "`ts show` and `ts verify` work without" in err
    code, data, _ = run_json(capsys, "compile", "--json", str(kernel))
    assert code == 2 and data["error"]["code"] == "missing-dependency"


def test_compile_only_failure_names_the_users_line(
    capsys: pytest.CaptureFixture[str],
    kernel_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(main_module, "_require_codegen", lambda kernel: None)
    # The DSL reads these when first imported: keep the test's settings out of the process.
    for name in ("CUTE_DSL_ARCH", "CUTE_DSL_KEEP", "CUTE_DSL_DUMP_DIR"):
        monkeypatch.setenv(name, "")  # recorded, so that teardown restores the original
        monkeypatch.delenv(name)
    kernel = kernel_file.with_name("fails.py")
    kernel.write_text(kernel_file.read_text() + "\ndef compile_only():\n    raise OSError('no')\n")
    code, data, err = run_json(
        capsys, "compile", "--json", str(kernel), "--ptx-dir", str(tmp_path / "ptx")
    )
    assert code == 2 and "Traceback" not in err
    assert data["error"]["code"] == "kernel-failed"
    assert "compile_only" in data["error"]["message"] and "OSError: no" in err


# --- TS's own bugs ----------------------------------------------------------------------------


def test_an_internal_error_prints_the_traceback_and_exits_3(
    capsys: pytest.CaptureFixture[str], kernel_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(plan: object) -> None:
        raise RuntimeError("verifier bug")

    monkeypatch.setattr(main_module, "verify", broken)
    code, data, err = run_json(capsys, "verify", "--json", str(kernel_file))
    assert code == 3
    assert "Traceback" in err and "this is a bug in TS" in err and "ts doctor" in err
    assert data["ok"] is False and data["error"]["code"] == "internal-error"


# --- ts explain -------------------------------------------------------------------------------


def _installed_codes() -> list[str]:
    entries, _ = all_entries()
    return [e.code for e in entries]


@pytest.mark.parametrize("code", _installed_codes())
def test_explain_every_code_of_every_installed_layer(
    capsys: pytest.CaptureFixture[str], code: str
) -> None:
    e = ts_ir.entry(code)
    status, out, _ = run(capsys, "explain", code)
    assert status == 0
    assert out.startswith(f"{code}: {e.title}\nreported by {e.layer}\n")
    assert f"fix: {e.fix.split()[0]}" in out
    assert e.wrong.splitlines()[0] in out and e.right.splitlines()[-1] in out


def test_explain_knows_the_codes_of_trace_and_verify() -> None:
    # ts-cli's own dependencies: these codes are always explained, with or without the DSL.
    codes = _installed_codes()
    assert "TS-T003" in codes and "TS-V301" in codes and "TS-V302" in codes


def test_explain_accepts_loose_spellings(capsys: pytest.CaptureFixture[str]) -> None:
    expected = run(capsys, "explain", "TS-V301")[1]
    for spelling in ("ts-v301", "V301", "v-301", " TS-V301 "):
        assert run(capsys, "explain", spelling) == (0, expected, "")


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("TS-V999", "no diagnostic TS-V999 (the TS-V codes are TS-V101.."),
        ("TS-Q001", "no layer reports TS-Q001"),
        ("TS-X001", "no diagnostic TS-X001 (the TS-X codes are TS-X101.."),
        ("deadlock", "'deadlock' is not a diagnostic code"),
    ],
)
def test_explain_an_unknown_code(
    capsys: pytest.CaptureFixture[str], code: str, message: str
) -> None:
    kind = "unknown-code"
    if code == "TS-X001" and importlib.util.find_spec("ts_runtime") is None:
        # The layer that owns the TS-X codes is not installed: that is what it says.
        message = "TS-X001 is a ts-runtime code, and ts-runtime is not installed here"
        kind = "missing-dependency"
    status, out, err = run(capsys, "explain", code)
    assert status == 2 and out == "" and "Traceback" not in err
    assert err.startswith(f"ts explain: {message}")
    status, data, _ = run_json(capsys, "explain", "--json", code)
    assert status == 2 and data["error"]["code"] == kind


def test_explain_a_code_whose_layer_is_not_installed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ts_codegen", None)
    status, data, err = run_json(capsys, "explain", "--json", "TS-C001")
    assert status == 2 and "Traceback" not in err
    assert data["error"]["code"] == "missing-dependency"
    assert "pip install ts-codegen" in data["error"]["message"]


def test_explain_json_is_the_entry(capsys: pytest.CaptureFixture[str]) -> None:
    status, data, _ = run_json(capsys, "explain", "--json", "TS-V302")
    e = ts_ir.entry("TS-V302")
    assert status == 0 and data["ok"] is True
    assert (data["code"], data["title"], data["fix"]) == (e.code, e.title, e.fix)
    assert data["page"] == "errors/TS-V302.html"


def test_explain_without_a_code_lists_every_code(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain")
    assert status == 0
    for code in _installed_codes():
        assert f"\n{code} " in f"\n{out}"
    status, data, _ = run_json(capsys, "explain", "--json")
    assert status == 0 and [e["code"] for e in data["entries"]] == _installed_codes()


# --- version, doctor, python -m ---------------------------------------------------------------


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"ts (ts-cli) {main_module.__version__}; ts-ir {ts_ir.__version__}")


def test_doctor_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, data, _ = run_json(capsys, "doctor", "--json")
    assert code == 0 and data["ok"] is True
    assert data["distributions"]["ts-cli"] != "not installed" and "gpu" in data


def test_python_dash_m_ts_cli() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ts_cli", "--version"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0 and proc.stdout.startswith("ts (ts-cli) ")
    assert proc.stderr == ""  # no RuntimeWarning about ts_cli.main being imported twice


def test_ptx_dir_beats_an_inherited_dump_dir(tmp_path: Path) -> None:
    """An explicit ``--ptx-dir`` wins over CUTE_DSL_DUMP_DIR from the caller's environment."""
    args = main_module._parser().parse_args(
        ["compile", "--ptx-dir", str(tmp_path / "mine"), "k.py"]
    )
    os.environ["CUTE_DSL_DUMP_DIR"] = str(tmp_path / "inherited")  # restored by conftest
    main_module._prepare_ptx_dump(args)
    assert os.environ["CUTE_DSL_DUMP_DIR"] == str((tmp_path / "mine").resolve())
    args = main_module._parser().parse_args(["compile", "k.py"])
    main_module._prepare_ptx_dump(args)  # no flag: the caller's folder stays
    assert os.environ["CUTE_DSL_DUMP_DIR"] == str((tmp_path / "mine").resolve())
