"""Compile the compat programs for sm_90a on the CPU, in this process.

The target and the PTX dump are read from the environment when cutlass is first imported, so
they are set here, before any test module (or program) imports it.
"""

import os
import tempfile

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
os.environ.setdefault("CUTE_DSL_KEEP", "ptx")
# A folder per process: pytest-xdist's workers inherit the environment, and two processes that
# keep PTX files of the same kernel name in one folder read each other's PTX.
if "PYTEST_XDIST_WORKER" in os.environ or "CUTE_DSL_DUMP_DIR" not in os.environ:
    os.environ["CUTE_DSL_DUMP_DIR"] = tempfile.mkdtemp(prefix="ts_compat_ptx_")
