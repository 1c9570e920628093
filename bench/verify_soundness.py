"""The long soundness run: random ring plans, ts-verify vs an independent brute-force oracle.

Usage::

    python bench/verify_soundness.py [PLANS] [FIRST_SEED] [--jobs N [--chunks LOG.jsonl]]
    python bench/verify_soundness.py --merge CHUNKS.jsonl

Prints one JSON line: plans checked, plans the oracle found bad, disagreements (unsound
proofs and false alarms, with their seeds), seconds, and per feature (persistent, skips,
flags, per-tile bounds, lags, aliasing) the plans, the oracle-bad ones and the
disagreements. ``--merge`` adds up the lines of several chunks (runs over consecutive seed
ranges) into one line. ``--jobs N`` runs the seed range as chunks in N processes and prints
the merged line (``seconds`` then adds up the chunks' CPU time; ``wall_seconds`` is the run's).

The generator is ``packages/ts-verify/tests/ring_oracle_plans.py``, the oracle
``packages/ts-verify/tests/ring_oracle.py`` (it imports nothing from ts-verify). The oracle
tries symbol values up to ``MAX_TRIP`` (5) and up to ``MAX_TILES`` (4) work tiles with every
per-tile assignment of flags, skips and per-tile bounds (up to ``MAX_TRIP // tiles``, at
least 2). A plan the verifier rejects but that short run passes is re-checked up to
``LONG_TRIP`` trips and ``LONG_TILES`` tiles, and counted as confirmed when it fails there (a
failure that needs longer loops or more tiles than the short run).
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packages/ts-verify/tests"))

from ring_oracle import oracle_ok
from ring_oracle_plans import generate, to_plan

from ts_verify import verify

LONG_TRIP = 12
"""How far the oracle re-checks trip counts of a plan the verifier rejects and it passes."""

LONG_TILES = 6
"""How many work tiles that re-check tries."""


FEATURES = ("persistent", "skips", "flags", "tile_bounds", "lags", "aliasing")
SEEDS_SHOWN = 20
PROGRESS = 1000


def run(plans: int, first: int) -> dict[str, Any]:
    """Compare the verifier with the oracle on ``plans`` seeds from ``first``."""
    start = time.perf_counter()
    unsound: list[int] = []
    false_alarms: list[int] = []
    beyond: list[int] = []
    bad = 0
    verify_s = oracle_s = slowest = 0.0
    slowest_seed = first
    per = {f: {"plans": 0, "oracle_bad": 0, "disagreements": 0} for f in FEATURES}
    for seed in range(first, first + plans):
        gen = generate(random.Random(seed))
        t = time.perf_counter()
        ok = verify(to_plan(gen)).ok
        spent_verify = time.perf_counter() - t
        verify_s += spent_verify
        if spent_verify > slowest:
            slowest, slowest_seed = spent_verify, seed
        t = time.perf_counter()
        expected = oracle_ok(gen)
        oracle_s += time.perf_counter() - t
        bad += not expected
        wrong = False
        if ok and not expected:
            unsound.append(seed)
            wrong = True
        elif expected and not ok:
            # The verifier proves all trip and tile counts, the short oracle run tries a few.
            if oracle_ok(gen, LONG_TRIP, LONG_TILES):
                false_alarms.append(seed)
                wrong = True
            else:
                beyond.append(seed)
        for f in gen.features:
            per[f]["plans"] += 1
            per[f]["oracle_bad"] += not expected
            per[f]["disagreements"] += wrong
        if (seed - first + 1) % PROGRESS == 0:
            # Progress on stderr (stdout keeps its one JSON line).
            done, spent = seed - first + 1, time.perf_counter() - start
            print(
                f"{done} plans, {len(unsound)} unsound, {len(false_alarms)} false alarms, "
                f"{spent:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    return {
        "plans": plans,
        "first_seed": first,
        "oracle_bad": bad,
        "disagreements": len(unsound) + len(false_alarms),
        "unsound": unsound[:SEEDS_SHOWN],
        "false_alarms": false_alarms[:SEEDS_SHOWN],
        "confirmed_beyond_oracle_range": len(beyond),
        "beyond_seeds": beyond[:SEEDS_SHOWN],
        "long_trip": LONG_TRIP,
        "long_tiles": LONG_TILES,
        "features": per,
        "verify_seconds": round(verify_s, 1),
        "slowest_verify": [round(slowest, 3), slowest_seed],
        "oracle_seconds": round(oracle_s, 1),
        "seconds": round(time.perf_counter() - start, 1),
    }


def merge(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """One result for consecutive chunks."""
    lines = sorted(lines, key=lambda d: d["first_seed"])
    for a, b in itertools.pairwise(lines):
        if a["first_seed"] + a["plans"] != b["first_seed"]:
            raise SystemExit(f"chunks are not consecutive: {a['first_seed']} + {a['plans']}")
    out: dict[str, Any] = {"plans": sum(d["plans"] for d in lines)}
    out["first_seed"] = lines[0]["first_seed"]
    for key in ("oracle_bad", "disagreements", "confirmed_beyond_oracle_range"):
        out[key] = sum(d[key] for d in lines)
    for key in ("unsound", "false_alarms", "beyond_seeds"):
        out[key] = [s for d in lines for s in d[key]][:SEEDS_SHOWN]
    for key in ("long_trip", "long_tiles"):
        out[key] = lines[0][key]
    out["features"] = {
        f: {k: sum(d["features"][f][k] for d in lines) for k in lines[0]["features"][f]}
        for f in FEATURES
    }
    for key in ("verify_seconds", "oracle_seconds", "seconds"):
        out[key] = round(sum(d[key] for d in lines), 1)
    out["slowest_verify"] = max((d["slowest_verify"] for d in lines), default=[0.0, 0])
    out["chunks"] = len(lines)
    return out


def _chunk(bounds: tuple[int, int]) -> dict[str, Any]:
    return run(*bounds)


def run_parallel(plans: int, first: int, jobs: int, log: Path | None = None) -> dict[str, Any]:
    """``run`` over chunks of the seed range in ``jobs`` processes, merged.

    ``log`` gets each chunk's line as it ends (``--merge`` adds up consecutive ones).
    """
    start = time.perf_counter()
    size = max(1, min(500, plans // (4 * jobs) or 1))  # small chunks keep the cores busy
    chunks = [(min(size, first + plans - s), s) for s in range(first, first + plans, size)]
    lines = []
    with multiprocessing.Pool(jobs) as pool:
        for line in pool.imap_unordered(_chunk, chunks):
            lines.append(line)
            if log is not None:  # each chunk as it ends: a cut-off run still counts its chunks
                with log.open("a") as f:
                    f.write(json.dumps(line) + "\n")
    out = merge(lines)
    out["jobs"] = jobs
    out["wall_seconds"] = round(time.perf_counter() - start, 1)
    return out


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--merge":
        text = Path(sys.argv[2]).read_text().splitlines()
        print(json.dumps(merge([json.loads(x) for x in text if x.strip()])))
        return
    args = sys.argv[1:]
    jobs, log = 1, None
    if "--jobs" in args:
        i = args.index("--jobs")
        jobs = int(args[i + 1])
        del args[i : i + 2]
    if "--chunks" in args:
        i = args.index("--chunks")
        log = Path(args[i + 1])
        del args[i : i + 2]
    plans = int(args[0]) if args else 100_000
    first = int(args[1]) if len(args) > 1 else 0
    result = run(plans, first) if jobs == 1 else run_parallel(plans, first, jobs, log)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
