"""Compile the compat programs for sm_90a on the CPU, in this process.

The target and the PTX dump are read from the environment when cutlass is first imported, so
they are set here, before any test module (or program) imports it.
"""

import os
import tempfile

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
os.environ.setdefault("CUTE_DSL_KEEP", "ptx")
os.environ.setdefault("CUTE_DSL_DUMP_DIR", tempfile.mkdtemp(prefix="ts_compat_ptx_"))
