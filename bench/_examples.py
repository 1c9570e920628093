"""Load an example of ``examples/hopper`` as a module, as when it runs as a script."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

HOPPER = Path(__file__).resolve().parent.parent / "examples" / "hopper"


def load_example(name: str, prefix: str = "bench_hopper") -> ModuleType:
    """``examples/hopper/<name>.py``, its folder on ``sys.path`` (for the helpers beside it)."""
    path = HOPPER / f"{name}.py"
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(f"{prefix}_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
