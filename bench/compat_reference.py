"""Compile every compat program through TS and through the reference; one JSON line each.

    .venv/bin/python bench/compat_reference.py [--only SUBSTR] [--arch sm_90a]

Each program of tests/compat/programs is compiled twice, each time in its own subprocess: as
written (``task_scheduling``), and with its import lines rewritten to
``cutlass.experimental.task_scheduling`` in a temporary copy (the reference). A ``pNN`` program
is ok when it compiles; an ``nNN`` program (a wrong one) is ok when it raises a ``ValueError``.
Per side the line gives ok, the exception if any, and PTX instruction counts by family.
Not a test: it needs the reference, which CI does not install.
"""

import argparse
import collections
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "compat" / "programs"
REFERENCE = "cutlass.experimental.task_scheduling"
FAMILIES = (
    "mbarrier",
    "cp.async.bulk.tensor",
    "setmaxnreg",
    "ld.global",
    "st.global",
    "ld.shared",
    "st.shared",
    "bar.sync",
)
_OP = re.compile(r"^\s*(?:@!?%\w+\s+)?([a-z][a-z0-9_]*(?:\.[a-z0-9_:]+)*)")


def ptx_counts(ptx: str) -> dict[str, int]:
    ops: collections.Counter[str] = collections.Counter()
    for line in ptx.splitlines():
        s = line.split("//", 1)[0].strip()
        if not s or s.startswith((".", "{", "}", "$")) or s.endswith(":"):
            continue
        m = _OP.match(s)
        if m:
            ops[m.group(1)] += 1
    out = {
        f: sum(n for op, n in ops.items() if op == f or op.startswith(f + ".")) for f in FAMILIES
    }
    out["instructions"] = sum(ops.values())
    return out


def child(path: str, impl: str, arch: str) -> dict[str, Any]:
    os.environ["CUTE_DSL_ARCH"] = arch
    os.environ["CUTE_DSL_KEEP"] = "ptx"
    os.environ["CUTE_DSL_DUMP_DIR"] = tempfile.mkdtemp(prefix="compat_ptx_")
    os.environ["CUTE_DSL_DISABLE_FILE_CACHING"] = "1"
    src = Path(path).read_text()
    if impl != "task_scheduling":
        src = src.replace("from task_scheduling.", f"from {impl}.")
        src = src.replace("import task_scheduling.", f"import {impl}.")
    tmp = Path(tempfile.mkdtemp(prefix="compat_prog_")) / Path(path).name
    tmp.write_text(src)
    res: dict[str, Any] = {"ok": False}
    negative = Path(path).name.startswith("n")
    t0 = time.time()
    try:
        spec = importlib.util.spec_from_file_location("compat_prog", tmp)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules["compat_prog"] = mod
        spec.loader.exec_module(mod)
        compiled = mod.compile_fake(arch)
        ptx = str(getattr(getattr(compiled, "artifacts", None), "PTX", "") or "")
        if ".version" not in ptx and os.path.exists(ptx):
            ptx = Path(ptx).read_text()
        res["ok"] = not negative and ".entry" in ptx
        res["ptx"] = ptx_counts(ptx)
    except BaseException as e:  # every failure is a result
        res["ok"] = negative and isinstance(e, ValueError)
        res["error"] = f"{type(e).__module__}.{type(e).__name__}: {str(e).strip()[:300]}"
        res["value_error"] = isinstance(e, ValueError)
    res["s"] = round(time.time() - t0, 2)
    return res


def run_side(path: Path, impl: str, arch: str, timeout: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", str(path), "--impl", impl, "--arch", arch]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {timeout}s"}
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("COMPAT_RESULT "):
            result: dict[str, Any] = json.loads(line[len("COMPAT_RESULT ") :])
            return result
    tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1][:300]
    return {"ok": False, "error": f"child rc={p.returncode}: {tail}"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--only", default="")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--impl", default="task_scheduling", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print("COMPAT_RESULT " + json.dumps(child(a.child, a.impl, a.arch)), flush=True)
        os._exit(0)  # skip the MLIR runtime's teardown
    paths = sorted(PROGRAMS.glob("[pn][0-9][0-9]_*.py"))
    paths = [p for p in paths if a.only in p.stem]
    both = 0
    for path in paths:
        ts = run_side(path, "task_scheduling", a.arch, a.timeout)
        ref = run_side(path, REFERENCE, a.arch, a.timeout)
        both += bool(ts["ok"] and ref["ok"])
        line = {"program": path.stem, "arch": a.arch, "ts": ts, "reference": ref}
        if ts.get("ptx") and ref.get("ptx"):
            line["same_ptx_families"] = all(
                ts["ptx"][f] == ref["ptx"][f] for f in FAMILIES if f != "setmaxnreg"
            )
        print(json.dumps(line), flush=True)
    print(json.dumps({"programs": len(paths), "ok_both": both}), flush=True)
    return 0 if both == len(paths) else 1


if __name__ == "__main__":
    sys.exit(main())
