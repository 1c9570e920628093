"""Counts this process's CuTe DSL compiles when ``TS_COMPILE_LOG`` is set (ts_compile_count)."""

import ts_compile_count

ts_compile_count.install_from_env()
