"""One conformance case, compiled by the shared harness with translation validation on.

Run as ``python translation_child.py HARNESS CASE DUMP_DIR``: imports the shared harness
(``run_tutorials.py``, read in place, never copied), compiles the case through
``task_scheduling`` while :func:`ts_codegen.capture.capture_compiles` records the plans the
tutorial's kernel lowered, then checks the dumped PTX against each plan
(:func:`ts_runtime.check_ptx`) and prints one line ``TSX_RESULT {json}``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path


def main(harness: str, case: str, dump: str) -> dict[str, object]:
    spec = importlib.util.spec_from_file_location("run_tutorials", harness)
    assert spec is not None and spec.loader is not None
    rt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rt)
    plans: list[object] = []
    rel, arch, builder = rt.CASES[case]

    def with_capture(module: object, target: str) -> object:
        # Called by the harness after it set the DSL's environment and imported the
        # tutorial: the CuTe DSL (imported by ts_codegen) must not be imported before.
        thunk = builder(module, target)

        def run() -> None:
            from ts_codegen.capture import capture_compiles

            with capture_compiles() as cap:
                thunk()
            plans.extend(cap.pending)
            plans.extend(p for c in cap.compiles for p in c.plans)

        return run

    rt.CASES[case] = (rel, arch, with_capture)
    res = rt.child(case, "task_scheduling", dump)
    out: dict[str, object] = {"compiled": bool(res.get("ok")), "error": res.get("error", "")}
    ptx_file = Path(dump) / (case.replace("@", "__") + ".ptx")
    if not res.get("ok") or not ptx_file.is_file():
        return out
    ptx = ptx_file.read_text()
    from ts_runtime import check_ptx

    reports = [check_ptx(plan, ptx) for plan in plans]  # type: ignore[arg-type]
    out.update(
        plans=len(plans),
        ok=bool(reports) and all(r.ok for r in reports),
        rings=[len(r.rings) for r in reports],
        text="\n".join(r.as_text() for r in reports),
    )
    return out


if __name__ == "__main__":
    result = main(*sys.argv[1:4])
    print("TSX_RESULT " + json.dumps(result), flush=True)
    os._exit(0)  # as the harness does: skip the MLIR runtime's teardown
