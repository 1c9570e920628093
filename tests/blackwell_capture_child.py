"""Compile one Blackwell example for sm_100a and write the plans it lowered and its PTX.

Run as ``CUTE_DSL_ARCH=sm_100a python blackwell_capture_child.py EXAMPLE.py OUT_DIR``: loads the
example, calls its ``compile_only()`` inside :func:`ts_codegen.capture.capture_compiles` (as
``ts compile --check`` does) and writes, per compile ``i``, ``OUT_DIR/i.ptx`` and each plan it
lowered as ``OUT_DIR/i.j.json`` (:func:`ts_ir.serialize.to_json`). Its own process because the
CuTe DSL reads the target when it is first imported (``test_blackwell_examples.py`` does the
same).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path


def main(example: str, out: str) -> None:
    path = Path(example).resolve()
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)

    from ts_codegen.capture import capture_compiles
    from ts_ir.serialize import to_json

    with capture_compiles() as cap:
        module.compile_only()
    for i, compiled in enumerate(cap.compiles):
        (Path(out) / f"{i}.ptx").write_text(compiled.ptx)
        for j, plan in enumerate(compiled.plans):
            (Path(out) / f"{i}.{j}.json").write_text(to_json(plan))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
    sys.stdout.flush()
    os._exit(0)  # skip the MLIR runtime's teardown, as the examples' harness does
