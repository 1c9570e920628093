"""The long soundness run: random ring plans, ts-verify vs an independent brute-force oracle.

Usage: ``python bench/verify_soundness.py [PLANS] [FIRST_SEED]``. Prints one JSON line: plans
checked, disagreements (unsound proofs and false alarms, with their seeds), plans the oracle
found bad, seconds. The oracle tries trip counts up to ``MAX_TRIP`` (5); a plan the verifier
rejects but that short run passes is re-checked up to ``LONG_TRIP`` (12) and counted as
confirmed when it fails there (a deadlock needing longer loops than the short run tries).
The generator and the oracle are ``packages/ts-verify/tests/ring_oracle.py``.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packages/ts-verify/tests"))

from ring_oracle import generate, oracle_ok, to_plan

from ts_verify import verify

LONG_TRIP = 12
"""How far the oracle re-checks a plan the verifier rejects but the short oracle run passes."""


def main() -> None:
    plans = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    first = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    start = time.perf_counter()
    unsound: list[int] = []
    false_alarms: list[int] = []
    beyond: list[int] = []
    bad = 0
    for seed in range(first, first + plans):
        gen = generate(random.Random(seed))
        ok = verify(to_plan(gen)).ok
        expected = oracle_ok(gen)
        bad += not expected
        if ok and not expected:
            unsound.append(seed)
        elif expected and not ok:
            # The oracle tries trip counts up to MAX_TRIP only; the verifier proves all of them.
            # A rejection is confirmed when the oracle, run further, fails too.
            if oracle_ok(gen, LONG_TRIP):
                false_alarms.append(seed)
            else:
                beyond.append(seed)
    print(
        json.dumps(
            {
                "plans": plans,
                "first_seed": first,
                "oracle_bad": bad,
                "unsound": unsound[:20],
                "false_alarms": false_alarms[:20],
                "confirmed_beyond_oracle_range": len(beyond),
                "beyond_seeds": beyond[:20],
                "long_trip": LONG_TRIP,
                "disagreements": len(unsound) + len(false_alarms),
                "seconds": round(time.perf_counter() - start, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
