"""Regenerate the timeline pictures committed under docs/_static/timelines/.

One SVG per bundled example (a verified run: every non-constant loop runs 3 times, 2 work
tiles) and one counterexample (docs/verification.rst's deadlocking segment copy). Run after
changing an example or the renderer::

    python tools/render_timelines.py
"""

from __future__ import annotations

from pathlib import Path

from ts_cli.main import main

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "_static" / "timelines"
BROKEN = ROOT / "docs" / "_static" / "timelines" / "segment_deadlock.py"


def render() -> list[Path]:
    """Write every picture; return their paths."""
    OUT.mkdir(parents=True, exist_ok=True)
    written = []
    for example in sorted((ROOT / "examples" / "schedules").glob("*.py")):
        target = OUT / f"{example.stem}.svg"
        main(["timeline", str(example), "-o", str(target)])
        written.append(target)
    target = OUT / "segment_deadlock.svg"
    main(["timeline", f"{BROKEN}:kernel", "-o", str(target)])
    written.append(target)
    return written


if __name__ == "__main__":
    for path in render():
        print(path.relative_to(ROOT))
