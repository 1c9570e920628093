"""The suite's compile budget: a run over ``compile_budget`` (pyproject.toml) fails.

Every CuTe DSL compile of a test run is counted, see ``tools/compile_count``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools" / "compile_count"))

pytest_plugins = ["ts_compile_budget"]
