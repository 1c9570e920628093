"""Run ``run_gpu()`` of every compat program that has one, on a GPU; one JSON line each.

    .venv/bin/python bench/compat_gpu.py [--only SUBSTR] [--impl task_scheduling]

Each program (tests/compat/programs/pNN_*.py) runs in its own subprocess, so a hang or a crash
in one cannot stop the others. ``run_gpu`` runs the kernel on CUDA tensors, checks the result
with torch and prints PASS. ``--impl cutlass.experimental.task_scheduling`` runs the same
programs on the reference (import lines rewritten in a temporary copy).
"""

import argparse
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "compat" / "programs"


def child(path: str, impl: str) -> dict[str, Any]:
    src = Path(path).read_text()
    if impl != "task_scheduling":
        src = src.replace("from task_scheduling.", f"from {impl}.")
    tmp = Path(tempfile.mkdtemp(prefix="compat_gpu_")) / Path(path).name
    tmp.write_text(src)
    res: dict[str, Any] = {"ok": False}
    t0 = time.time()
    out = io.StringIO()
    try:
        spec = importlib.util.spec_from_file_location("compat_prog", tmp)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules["compat_prog"] = mod
        spec.loader.exec_module(mod)
        if not hasattr(mod, "run_gpu"):
            return {"ok": None, "skipped": "no run_gpu"}
        with redirect_stdout(out):
            mod.run_gpu()
        res["ok"] = "PASS" in out.getvalue()
    except BaseException as e:  # every failure is a result
        res["error"] = f"{type(e).__name__}: {str(e).strip()[:400]}"
        res["traceback"] = traceback.format_exc()[-1500:]
    res["s"] = round(time.time() - t0, 2)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--only", default="")
    ap.add_argument("--impl", default="task_scheduling")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print("COMPAT_RESULT " + json.dumps(child(a.child, a.impl)), flush=True)
        os._exit(0)  # skip the MLIR runtime's teardown
    passed = ran = 0
    for path in sorted(PROGRAMS.glob("p[0-9][0-9]_*.py")):
        if a.only not in path.stem or "def run_gpu" not in path.read_text():
            continue
        cmd = [sys.executable, __file__, "--child", str(path), "--impl", a.impl]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout, cwd=ROOT)
            lines = [x for x in p.stdout.splitlines() if x.startswith("COMPAT_RESULT ")]
            if lines:
                res = json.loads(lines[-1][len("COMPAT_RESULT ") :])
            else:
                tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1][:300]
                res = {"ok": False, "error": f"child rc={p.returncode}: {tail}"}
        except subprocess.TimeoutExpired:
            res = {"ok": False, "error": f"timed out after {a.timeout}s (hang?)"}
        ran += 1
        passed += bool(res.get("ok"))
        print(json.dumps({"program": path.stem, "impl": a.impl, **res}), flush=True)
    print(json.dumps({"impl": a.impl, "ran": ran, "passed": passed}), flush=True)
    return 0 if passed == ran else 1


if __name__ == "__main__":
    sys.exit(main())
