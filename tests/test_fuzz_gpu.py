"""bench/fuzz_gpu.py: the host model of the fuzzed kernels, the broken variants, compile-only.

The host model (``bench/_fuzz_shapes.py``) is what the GPU run trusts for the right answer
and for the inputs on which a broken kernel must trap, so it is checked here against values
worked out by hand. The verifier must reject every kind of mutation; the ``--compile-only``
mode (generate, verify, compile for sm_90a with fake tensors) runs on a handful of seeds.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"


def _load(name: str) -> Any:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))  # the bench modules import each other by name
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


shapes = _load("_fuzz_shapes")


def _shape(depth: int, bound: int | str, guard: str = "", **kw: Any) -> Any:
    """One ring from task 0 (1 warp) to task 1 (1 warp), one segment."""
    seg = shapes.Segment(0, bound, guard, salt=1)
    return shapes.Shape(0, (1, 1), (shapes.Ring(depth, 0, 1),), (seg,), **kw)


def _inputs(trips: tuple[int, ...] = (3, 0, 0), tiles: int = 1, skips: tuple[int, ...] = ()) -> Any:
    pad = (0,) * (shapes.MAX_TILES - len(skips))
    return shapes.Inputs(trips, (1, 0), tiles, skips + pad)


def test_expected_sums_by_hand() -> None:
    shape = _shape(2, "n0")
    out = shapes.expected(shape, _inputs((3, 0, 0), tiles=2))
    # Tile 1, ring 0, consumer thread 5: iterations 0, 1, 2 of salt 1, lane 5.
    base = (1 * 1 + 0) * 2 * 64
    assert out[base + 5] == sum(((1 * 512 + 1) * 64 + i) * 64 + 5 for i in range(3))
    assert out[base + 64 + 5] == 0  # no mismatches
    assert sum(out[2 * 2 * 64 :]) == 0  # tiles past the input's 2 stay zero


def test_expected_two_warp_consumer_reads_the_producers_slots() -> None:
    shape = dataclasses.replace(_shape(1, 1), warps=(1, 2))
    out = shapes.expected(shape, _inputs())
    # Thread 37 of the 2-warp consumer reads slot 37 % 32 of the 1-warp producer.
    assert out[37] == ((1 * 512 + 0) * 64 + 0) * 64 + 5


def test_guards_fire_as_documented() -> None:
    for guard, fired in (("first", [0]), ("last", [4]), ("split", [0, 1, 2, 3, 4])):
        ops = shapes.program(_shape(2, 5, guard), _inputs(), 0, 1)
        assert [i for _, _, step, _, i in ops if step == "wait"] == fired
    every = dataclasses.replace(
        _shape(2, 7, "every"), segments=(shapes.Segment(0, 7, "every", period=3, start=1),)
    )
    ops = shapes.program(every, _inputs(), 0, 0)
    assert [i for _, _, step, _, i in ops if step == "acquire"] == [1, 4]


def test_lagged_consumer_releases_the_previous_stage() -> None:
    ops = shapes.program(_shape(2, 3, "lag"), _inputs(), 0, 1)
    assert [(s, i) for _, _, s, _, i in ops] == [
        ("wait", 0),
        ("wait", 1),
        ("release", 0),
        ("wait", 2),
        ("release", 1),
        ("release", 2),
    ]


def test_skipped_tiles_skip_the_skippable_segments_only() -> None:
    shape = _shape(2, 2, persistent=True, ctas=2)
    skippable = dataclasses.replace(
        shape, segments=(dataclasses.replace(shape.segments[0], skippable=True),)
    )
    inputs = _inputs(tiles=3, skips=(0, 1, 0))
    assert len(shapes.program(shape, inputs, 1, 0)) == 4  # CTA 1: tile 1, two fills
    assert shapes.program(skippable, inputs, 1, 0) == []


def test_simulate_finds_the_deadlocks() -> None:
    inputs = _inputs((3, 0, 0))
    assert shapes.simulate(_shape(2, "n0"), inputs) is None
    assert shapes.simulate(_shape(1, "n0", "lag"), inputs) is not None  # holds 2 of 1 stage
    cases = {
        "drop_release": ("t0", "r0", "acquire"),  # the third fill waits for a free stage
        "group_size": ("t0", "r0", "acquire"),
        "drop_commit": ("t1", "r0", "wait"),
        "off_by_one": ("t1", "r0", "wait"),  # the consumer waits for a fourth fill
    }
    for mutation, where in cases.items():
        stuck = shapes.simulate(_shape(2, "n0", mutation=mutation, target=0), inputs)
        assert stuck is not None and where in stuck.waits, mutation
    # Two stages hold the first two fills: dropping the releases hangs only from the third.
    short = _inputs((2, 0, 0))
    assert shapes.simulate(_shape(2, "n0", mutation="drop_release", target=0), short) is None


def test_generated_shapes_are_well_formed_and_round_trip() -> None:
    for seed in range(200):
        shape = shapes.generate(seed)
        assert shapes.Shape.from_json(shape.to_json()) == shape
        assert {t for r in shape.rings for t in (r.producer, r.consumer)} == set(
            range(len(shape.warps))
        )
        assert all(r.producer < r.consumer for r in shape.rings)  # no cycles
        assert all(shape.rings[s.ring].depth >= 2 for s in shape.segments if s.guard == "lag")
        rng = random.Random(seed)
        assert shapes.simulate(shape, shapes.random_inputs(shape, rng)) is None


def test_every_mutation_changes_the_program() -> None:
    kinds = set()
    for seed in range(120):
        broken = shapes.mutate(shapes.generate(seed), random.Random(seed))
        kinds.add(broken.mutation)
        assert broken.mutation in shapes.MUTATIONS
    assert kinds == set(shapes.MUTATIONS)


# -- with the CuTe DSL ------------------------------------------------------------------------
def _variant(kind: str) -> Any:
    """A broken variant of each kind, found from the first seeds."""
    for seed in range(200):
        rng = random.Random(seed)
        base = shapes.generate(seed)
        for _ in range(30):
            broken = shapes._mutate_once(base, rng)
            if (
                broken is not None
                and broken.mutation == kind
                and shapes._differs(base, broken, rng)
            ):
                return broken
    raise AssertionError(f"no {kind} variant in the first seeds")


@pytest.mark.parametrize("kind", sorted(shapes.MUTATIONS))
def test_the_verifier_rejects_each_mutation(kind: str) -> None:
    pytest.importorskip("cutlass")
    fuzz = _load("fuzz_gpu")
    broken = _variant(kind)
    why = fuzz.rejected(broken)
    assert why and not why.startswith("malformed"), (kind, broken)
    assert fuzz.rejected(dataclasses.replace(broken, mutation="", target=-1)) == ""


def test_compile_only_mode() -> None:
    pytest.importorskip("cutlass")
    cmd = [sys.executable, str(BENCH / "fuzz_gpu.py"), "--compile-only", "--valid", "3"]
    cmd += ["--broken", "16", "--jobs", "1", "--trap-sample", "1", "--seed", "7"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    summary = lines[-1]["summary"]
    assert done.returncode == 0, (summary, done.stderr[-2000:])
    assert summary["compiled"] == 3 and summary["debug_traps"]
    assert summary["translation_failures"] == []  # Compiled.check() on every valid kernel
    assert summary["by_verifier"] == 16 and summary["missed"] == []
    assert summary["unverified_compiled"] == 1
    assert any(line.get("kind") == "compile" for line in lines)


# The three kernels of ``--compile-only --valid 125 --seed 0`` that translation validation
# once reported (false alarms, each ``generate(seed)`` of ``valid_shapes``), pinned as JSON:
# fuzz22 / fuzz34, a ring whose only loop runs once under an ``every(3, start=1|2)`` that
# never fires (the compiler drops its brackets; the plan shows they never run); fuzz4, a
# 1-stage ring whose phase after a ``when_false(flag)`` segment is a ``selp`` on the flag
# (the validator follows the flag's two values, not a phase unknown at the loop).
_REPORTED = {
    "fuzz4": '{"ctas": 3, "mutation": "", "persistent": false, "rings": [{"consumer": 1, '
    '"depth": 1, "producer": 0}, {"consumer": 1, "depth": 1, "producer": 0}, {"consumer": 1, '
    '"depth": 4, "producer": 0}], "seed": 4, "segments": [{"bound": 1, "flag": "f1", "guard": '
    '"flag", "negated": true, "period": 1, "ring": 0, "salt": 1, "skippable": false, "start": '
    '0}, {"bound": 3, "flag": "", "guard": "", "negated": false, "period": 1, "ring": 0, '
    '"salt": 2, "skippable": false, "start": 0}, {"bound": 5, "flag": "", "guard": "", '
    '"negated": false, "period": 1, "ring": 1, "salt": 3, "skippable": false, "start": 0}, '
    '{"bound": "n0", "flag": "f0", "guard": "flag_in", "negated": true, "period": 1, "ring": '
    '1, "salt": 4, "skippable": false, "start": 0}, {"bound": "n1", "flag": "", "guard": "", '
    '"negated": false, "period": 1, "ring": 2, "salt": 5, "skippable": false, "start": 0}, '
    '{"bound": "n1", "flag": "", "guard": "split", "negated": false, "period": 1, "ring": 2, '
    '"salt": 6, "skippable": false, "start": 0}], "target": -1, "warps": [1, 1]}',
    "fuzz22": '{"ctas": 1, "mutation": "", "persistent": false, "rings": [{"consumer": 1, '
    '"depth": 1, "producer": 0}, {"consumer": 1, "depth": 2, "producer": 0}, {"consumer": 1, '
    '"depth": 3, "producer": 0}], "seed": 22, "segments": [{"bound": 3, "flag": "", "guard": '
    '"first", "negated": false, "period": 1, "ring": 0, "salt": 1, "skippable": false, '
    '"start": 0}, {"bound": "n2", "flag": "", "guard": "", "negated": false, "period": 1, '
    '"ring": 0, "salt": 2, "skippable": false, "start": 0}, {"bound": "n0", "flag": "f1", '
    '"guard": "flag_in", "negated": true, "period": 1, "ring": 1, "salt": 3, "skippable": '
    'false, "start": 0}, {"bound": 1, "flag": "", "guard": "every", "negated": false, '
    '"period": 3, "ring": 2, "salt": 4, "skippable": false, "start": 1}], "target": -1, '
    '"warps": [1, 1]}',
}


@pytest.mark.parametrize("name", sorted(_REPORTED))
def test_translation_validation_of_once_reported_kernels(name: str) -> None:
    pytest.importorskip("cutlass")
    fuzz = _load("fuzz_gpu")
    shape = shapes.Shape.from_json(_REPORTED[name])
    assert shape.name == name and fuzz.rejected(shape) == ""
    result = fuzz.compile_shape(shape.to_json())
    assert result["compiled"], result
    assert result["translation"] == [], result


# -- the GPU run's bookkeeping, with the worker processes replaced ---------------------------
def _worker_output(*lines: Any) -> str:
    return "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)


def test_valid_batch_counts_wrong_results_and_hangs(monkeypatch: pytest.MonkeyPatch) -> None:
    fuzz = _load("fuzz_gpu")
    a, b, c = (shapes.generate(seed) for seed in range(3))
    calls: list[list[str]] = []
    ok = {"runs": 4, "wrong": 0, "wrong_inputs": [], "compile_s": 1.0, "run_s": 0.1}

    def worker(args: list[str], timeout: float) -> tuple[int | None, str]:
        calls.append(args)
        if len(calls) == 1:  # a: right; b: one wrong input; c: traps
            out = _worker_output(
                {"start": a.name},
                {"shape": a.name, **ok},
                {"start": b.name},
                {"shape": b.name, **ok, "wrong": 1, "wrong_inputs": [{"sums_differ": [[0, 0]]}]},
                {"start": c.name},
                "TS debug: task `t1` waits forever on resource `r0` (consumer_wait, stage 0)",
                {"died": c.name, "inputs": {"tiles": 1}, "error": "AcceleratorError: trap"},
            )
            return 3, out
        raise AssertionError("every shape was run: no second worker is due")

    monkeypatch.setattr(fuzz, "_subprocess", worker)
    stats = fuzz.gpu_valid_batch(0, [a, b, c], 4, 0)
    assert stats["kernels_run"] == 9 and stats["wrong_results"] == 1 and stats["hangs"] == 1
    hang = [f for f in stats["failures"] if "hang" in f]
    assert hang[0]["shape"] == c.name and "t1" in hang[0]["debug"][0]
    assert len(calls) == 1


def test_valid_batch_restarts_after_a_trap(monkeypatch: pytest.MonkeyPatch) -> None:
    fuzz = _load("fuzz_gpu")
    a, b = shapes.generate(0), shapes.generate(1)
    ok = {"runs": 2, "wrong": 0, "wrong_inputs": [], "compile_s": 1.0, "run_s": 0.1}
    outputs = [
        (3, _worker_output({"start": a.name}, {"died": a.name, "error": "trap"})),
        (0, _worker_output({"start": b.name}, {"shape": b.name, **ok})),
    ]
    monkeypatch.setattr(fuzz, "_subprocess", lambda args, timeout: outputs.pop(0))
    stats = fuzz.gpu_valid_batch(0, [a, b], 2, 0)
    assert stats["hangs"] == 1 and stats["kernels_run"] == 3 and not outputs


def test_trap_check_wants_the_stuck_task_and_ring(monkeypatch: pytest.MonkeyPatch) -> None:
    fuzz = _load("fuzz_gpu")
    broken = _shape(2, "n0", mutation="drop_commit", target=0)
    right = "TS debug: task `t1` waits forever on resource `r0` (consumer_wait, stage 0, phase 0)"
    wrong = "TS debug: task `t7` waits forever on resource `r9` (consumer_wait, stage 0, phase 0)"
    for line, verdict in ((right, "trap"), (wrong, "trap_wrong_message")):
        out = (3, _worker_output({"start": broken.name}, line))
        monkeypatch.setattr(fuzz, "_subprocess", lambda args, timeout, out=out: out)
        assert fuzz.trap_check(broken, 0)["verdict"] == verdict
    finished = (0, _worker_output({"start": broken.name}, {"finished": broken.name}))
    monkeypatch.setattr(fuzz, "_subprocess", lambda args, timeout: finished)
    assert fuzz.trap_check(broken, 0)["verdict"] == "no_trap"
    monkeypatch.setattr(fuzz, "_subprocess", lambda args, timeout: (None, ""))
    assert fuzz.trap_check(broken, 0)["verdict"] == "compile_failed"
