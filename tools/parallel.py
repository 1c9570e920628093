"""Run shell commands a few at a time; print each one's output whole when it ends.

    python tools/parallel.py [--jobs N] -- "CMD1" "CMD2" ...

Exits non-zero when any command failed, after all of them ran, and names the failures. Used by
``./run test`` for checks that are independent of each other (mypy per package) on a machine
with a few cores.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import subprocess
import sys
import time


def _run(cmd: str) -> tuple[str, int, str, float]:
    t0 = time.monotonic()
    proc = subprocess.run(
        cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False
    )
    return cmd, proc.returncode, proc.stdout, time.monotonic() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("commands", nargs="+")
    args = parser.parse_args(argv)
    failed: list[str] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for cmd, rc, out, seconds in pool.map(_run, args.commands):
            print(f"$ {cmd}  ({seconds:.0f}s, exit {rc})\n{out}", end="", flush=True)
            if rc != 0:
                failed.append(cmd)
    for cmd in failed:
        print(f"FAILED: {cmd}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
