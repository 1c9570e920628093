"""The code generator's error has a catalog code; its message ends with the code's page."""

from __future__ import annotations

import pytest

pytest.importorskip("cutlass")

from ts_codegen import LoweringError
from ts_ir import entry, see_also

# The smoke subset (the oldest Python runs only it): one kernel of each kind.
pytestmark = pytest.mark.smoke


def test_lowering_error_code_and_page() -> None:
    e = entry(LoweringError.code)
    assert e.layer == "ts-codegen" and all([e.title, e.explanation, e.wrong, e.right, e.fix])
    text = str(LoweringError("task `t`: work_tile_loop(wq) is not lowered yet"))
    assert text.startswith("TS-C001: task `t`: work_tile_loop(wq)")
    assert text.endswith(f"see: {see_also('TS-C001')}")
