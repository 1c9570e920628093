"""Compile for sm_90a on the CPU, with PTX kept in a temporary folder."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

# Before cutlass is imported anywhere: target and PTX dump are read from the environment.
os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
os.environ.setdefault("CUTE_DSL_KEEP", "ptx")
os.environ.setdefault("CUTE_DSL_DUMP_DIR", tempfile.mkdtemp(prefix="ts_runtime_ptx_"))

# The helper modules beside the tests (runtime_*.py), importable under --import-mode=importlib.
sys.path.insert(0, str(Path(__file__).parent))
