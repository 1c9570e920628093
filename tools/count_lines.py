"""Code lines of each example's TS kernel against its hand-written twin.

A code line is a line with code on it: blank lines, comment-only lines and docstrings do not
count. An example marks its parts with banner comments (``# TS kernel ...``,
``# Hand-written twin ...``); a part runs to the next banner. What both share (tile helpers,
TMA atoms, the CLI) is outside both parts. Prints one JSON line per example and exits 1 when a
target in ``TARGETS`` is missed (the ratio TS / twin must be at most the target).

Usage: ``python tools/count_lines.py [--check]``
"""

from __future__ import annotations

import ast
import io
import json
import sys
import tokenize
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "hopper"

PARTS: dict[str, dict[str, list[str]]] = {
    # example: {part: [file, ...]}, each file's part found by its banner
    "grid_stride_copy": {"ts": ["grid_stride_copy.py"], "twin": ["grid_stride_copy.py"]},
    "tma_copy": {"ts": ["tma_copy.py"], "twin": ["tma_copy.py"]},
    "persistent_copy": {"ts": ["persistent_copy.py"], "twin": ["persistent_copy.py"]},
    "bias_act_copy": {"ts": ["bias_act_copy.py"], "twin": ["bias_act_copy.py"]},
    "varlen_copy": {"ts": ["varlen_copy.py"], "twin": ["varlen_copy.py"]},
    "gemm": {"ts": ["gemm.py"], "twin": ["_gemm_twin.py"]},
    "pdl_pair": {"ts": ["pdl_pair.py"], "twin": ["pdl_pair.py"]},
    "merge_copy": {"ts": ["merge_copy.py"], "twin": ["merge_copy.py"]},
    "fork": {"ts": ["fork.py"], "twin": ["fork.py"]},
    "fork_gemm": {"ts": ["fork_gemm.py"], "twin": ["fork_gemm.py"]},
    "merge_gemm": {"ts": ["merge_gemm.py"], "twin": ["merge_gemm.py"]},
}
TARGETS = {"tma_copy": 1.0, "gemm": 0.7, "fork_gemm": 1.0, "persistent_copy": 1.0}
"""The line-count targets: TS code lines at most this many times the twin's."""

BANNERS = {"ts": "# TS kernel", "twin": "# Hand-written twin"}


def code_lines(source: str) -> set[int]:
    """Line numbers holding code (not blank, not comments, not docstrings)."""
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (
            tokenize.COMMENT,
            tokenize.NL,
            tokenize.NEWLINE,
            tokenize.INDENT,
            tokenize.DEDENT,
            tokenize.ENDMARKER,
        ):
            continue
        lines.update(range(tok.start[0], tok.end[0] + 1))
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                end = body[0].end_lineno or body[0].lineno
                lines.difference_update(range(body[0].lineno, end + 1))
    return lines


def part_range(source: str, banner: str) -> range:
    """The lines from ``banner`` to the next banner comment (or the end)."""
    text = source.splitlines()
    start = next((i for i, line in enumerate(text) if line.startswith(banner)), None)
    if start is None:
        raise SystemExit(f"no banner {banner!r}")
    end = next(
        (i for i in range(start + 2, len(text)) if text[i].startswith("# ----")),
        len(text),
    )
    return range(start + 1, end + 1)


def count(example: str) -> dict[str, object]:
    out: dict[str, object] = {"example": example}
    for part, files in PARTS[example].items():
        total = 0
        for name in files:
            source = (EXAMPLES / name).read_text()
            total += len(code_lines(source) & set(part_range(source, BANNERS[part])))
        out[part] = total
    ts, twin = out["ts"], out["twin"]
    assert isinstance(ts, int) and isinstance(twin, int)
    out["ratio"] = round(ts / twin, 2)
    if example in TARGETS:
        out["target"] = TARGETS[example]
        out["meets_target"] = ts / twin <= TARGETS[example]
    return out


def main() -> int:
    failed = False
    for example in PARTS:
        result = count(example)
        failed |= result.get("meets_target") is False
        print(json.dumps(result))
    return 1 if failed and "--check" in sys.argv else 0


if __name__ == "__main__":
    sys.exit(main())
