"""The docs' layer diagram (docs/layers.txt) is drawn from the import-linter contracts."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "layer_diagram.py"

pytestmark = pytest.mark.skipif(not TOOL.is_file(), reason="tools/ is not part of this checkout")


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    if sys.version_info < (3, 11):
        pytest.skip("the tool reads pyproject.toml with tomllib (Python 3.11+)")
    spec = importlib.util.spec_from_file_location("layer_diagram", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_diagram_is_current(tool: ModuleType) -> None:
    out = subprocess.run(
        [sys.executable, str(TOOL), "--check"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert (ROOT / "docs" / "layers.txt").read_text() == tool.render(tool.contracts())


def test_every_contract_is_drawn(tool: ModuleType) -> None:
    text = (ROOT / "docs" / "layers.txt").read_text()
    found = tool.contracts()
    assert len(found) >= 6
    for c in found:
        assert f"[{c['id']}]" in text, c["id"]
    # The stack reads top-down in the layers contract's order.
    layers = next(c for c in found if c["id"] == "layers")["layers"]
    tops = [text.index(f"[ {name.strip('()')}") for name in layers if "|" not in name]
    assert tops == sorted(tops)
    assert "cutlass, cuda imported only by ts_codegen.dsl, ts_runtime._dsl" in text


def test_a_changed_contract_changes_the_diagram(tool: ModuleType) -> None:
    found = tool.contracts()
    extra = {
        "id": "probe",
        "name": "probe",
        "type": "forbidden",
        "source_modules": ["ts_ir"],
        "forbidden_modules": ["ts_cli"],
    }
    assert "- ts_ir never imports ts_cli  [probe]" in tool.render([*found, extra])
    assert tool.render([*found, extra]) != (ROOT / "docs" / "layers.txt").read_text()
