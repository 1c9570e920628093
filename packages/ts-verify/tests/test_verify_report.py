"""The report: text and JSON renderings, counterexample traces, severities, the code catalog."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from verify_testkit import Dst, Src, consume, marker_line, plan_of, produce, ring, task, tma_pipe

import ts_verify
from ts_ir import SourceLocation
from ts_trace import domain_loop, schedule
from ts_verify import (
    VERIFY_CATALOG,
    BarrierState,
    Diagnostic,
    Report,
    Severity,
    Trace,
    TraceEvent,
    VerificationError,
    verify,
)

SOURCES = Path(ts_verify.__file__).parent


def line_of(marker: str) -> int:
    """The line of this file marked ``# marker``."""
    return marker_line(__file__, marker)


def _crossed_tma_plan(src: Src, dst: Dst) -> Any:
    """The producer arms a TMA stage of `x`, then waits for `y`, which the consumer fills only
    after it has drained `x`: a deadlock with transaction bytes still pending on `x`."""
    x = ring("x", spec=tma_pipe(2, 4096))
    y = ring("y", 1)

    @schedule
    def producer(s: Any, a: Any, b: Any) -> None:
        with domain_loop(2):
            a.acquire()  # arm
            b.wait()  # blocked-producer
            b.read()
            a.store(item=s.load())
            a.commit()
            b.release()

    @schedule
    def consumer(a: Any, b: Any, d: Any) -> None:
        with domain_loop(2):
            a.wait()  # blocked-consumer
            d.write(item=a.read())
            a.release()
            b.acquire()
            b.store()
            b.commit()

    return plan_of(
        task("loader", producer(src, x, y), [src, y], [x]),
        task("storer", consumer(x, y, dst), [x], [y, dst], warp=4),
        name="crossed",
    )


def test_deadlock_trace_as_text(src: Src, dst: Dst) -> None:
    report = verify(_crossed_tma_plan(src, dst))
    assert report.codes() == ["TS-V215", "TS-V302"], report.as_text()  # the rings' cycle
    d = report.errors[0]
    assert d.trace is not None
    lines = d.trace.as_text().splitlines()
    assert lines[0] == "  when: always"
    steps = [line for line in lines if re.match(r"  +\d+\. ", line)]
    assert steps == [
        f"    1. loader  #0 x.acquire -> stage 0, round 0  [i=0]  ({__file__}:{line_of('arm')})"
    ]
    assert lines[2:4] == [
        "  blocked: loader: waits at y.wait (stage 0, round 0) needs the producers to fill "
        "stage 0 (0 of 1 fills done)",
        "  blocked: storer: waits at x.wait (stage 0, round 0) needs the producers to fill "
        "stage 0 (0 of 1 fills done)",
    ]
    # The armed stage: one arrival of one expected, but 4096 bytes still in flight.
    assert lines[4:] == ["  barrier x.full[0]: phase 0 (0 done), arrivals 1/1, tx 4096"]
    assert (d.task, d.resource, d.step) == ("loader", "y", "#1 y.wait")
    assert d.location is not None and d.location.line == line_of("blocked-producer")


def test_trace_numbers_steps_and_aligns_tasks() -> None:
    here = SourceLocation("k.py", 3)
    trace = Trace(
        (("trips of domain_loop(0, <n>, 1)", "3"), ("work tiles", "2")),
        (
            TraceEvent(1, "load", 0, "#0 smem.acquire -> stage 0, round 0", here),
            TraceEvent(2, "mma_warpgroup", 4, "#4 smem.wait -> stage 0, round 0", here),
        ),
        (("load", "waits at smem.acquire"),),
        (BarrierState("smem", "empty", 1, 1, 3, 64, 128, 0),),
    )
    assert trace.as_text().splitlines() == [
        "  when: trips of domain_loop(0, <n>, 1) = 3, work tiles = 2",
        "    1. load           #0 smem.acquire -> stage 0, round 0  (k.py:3)",
        "    2. mma_warpgroup  #4 smem.wait -> stage 0, round 0  (k.py:3)",
        "  blocked: load: waits at smem.acquire",
        "  barrier smem.empty[1]: phase 1 (3 done), arrivals 64/128, tx 0",
    ]


def test_barrier_state_describe() -> None:
    b = BarrierState("ab", "full", 2, 0, 4, 0, 1, 49152)
    assert b.describe() == "ab.full[2]: phase 0 (4 done), arrivals 0/1, tx 49152"


def test_deadlock_report_as_json(src: Src, dst: Dst) -> None:
    data = json.loads(verify(_crossed_tma_plan(src, dst)).to_json())
    assert data["plan"] == "crossed" and data["ok"] is False
    cycle, d = data["diagnostics"]
    assert cycle["code"] == "TS-V215" and cycle["severity"] == "warning"
    assert d["code"] == "TS-V302" and d["title"] == "deadlock" and d["severity"] == "error"
    assert d["fix"] == VERIFY_CATALOG["TS-V302"][1]
    assert d["location"] == {
        "file": __file__,
        "line": line_of("blocked-producer"),
        "text": "b.wait()  # blocked-producer",
        "function": "producer",
    }
    trace = d["trace"]
    assert trace["valuation"] == []
    assert [e["task"] for e in trace["events"]] == ["loader"]
    assert trace["events"][0]["location"]["line"] == line_of("arm")
    assert [b for b, _ in trace["blocked"]] == ["loader", "storer"]
    assert trace["barriers"] == [
        {
            "resource": "x",
            "barrier": "full",
            "stage": 0,
            "phase": 0,
            "completed": 0,
            "arrivals": 1,
            "expected": 1,
            "tx_bytes": 4096,
        }
    ]
    assert data["proven"] == [
        "every pipeline's brackets run equally often in every task, for all trip counts, "
        "conditions and skipped tiles"
    ]
    assert data["stats"]["runs"] >= 1


def test_valid_report_as_text_and_json(src: Src, dst: Dst) -> None:
    buf = ring("buf")
    plan = plan_of(
        task("p", produce(src, buf), [src], [buf]),
        task("c", consume(buf, dst), [buf], [dst], warp=4),
        name="copy",
    )
    report = verify(plan)
    lines = report.as_text().splitlines()
    assert lines[0] == "copy: verified"
    assert [line.split(":")[0] for line in lines[1:]] == ["  proven", "  proven"]
    data = json.loads(report.to_json(indent=None))
    assert data["ok"] is True and data["diagnostics"] == []
    assert data["stats"]["by_depth"] == 1 and data["stats"]["seconds"] >= 0
    assert "\n" not in report.to_json(indent=None)


def _warning() -> Diagnostic:
    return Diagnostic("TS-V204", "just a note", task="t", severity=Severity.WARNING)


def test_severity() -> None:
    assert [s.value for s in Severity] == ["error", "warning"]
    error = Diagnostic("TS-V302", "stuck", task="t")
    assert error.severity is Severity.ERROR
    report = Report("k", (error, _warning()))
    assert report.errors == (error,)
    assert not report.ok
    assert report.as_text(errors_only=True).count("TS-V204") == 0
    assert "warning TS-V204 (tasks share warps): just a note" in report.as_text()


def test_warnings_do_not_fail() -> None:
    report = Report("k", (_warning(),), ("a claim",))
    assert report.ok and report.errors == ()
    report.raise_for_errors()
    text = report.as_text()
    assert text.startswith("k: verified\n  proven: a claim\nwarning TS-V204")
    assert json.loads(report.to_json())["diagnostics"][0]["severity"] == "warning"


def test_verification_error_carries_the_report() -> None:
    report = Report("k", (Diagnostic("TS-V302", "stuck", task="t"), _warning()))
    with pytest.raises(VerificationError) as err:
        report.raise_for_errors()
    assert err.value.report is report
    message = str(err.value)
    assert message.startswith("k: 1 error(s)\nerror TS-V302 (deadlock): stuck\n  in task `t`")
    assert "TS-V204" not in message


def test_diagnostic_text_without_location_uses_the_catalog_fix() -> None:
    d = Diagnostic("TS-V207", "too many registers")
    assert d.as_text().splitlines() == [
        "error TS-V207 (register file exceeded): too many registers",
        "  fix: " + VERIFY_CATALOG["TS-V207"][1],
        "  see: ts explain TS-V207",
    ]
    assert d.to_dict()["fix"] == VERIFY_CATALOG["TS-V207"][1]
    assert d.title == "register file exceeded"


def test_catalog_is_well_formed() -> None:
    assert list(VERIFY_CATALOG) == sorted(VERIFY_CATALOG)
    for code, (title, fix) in VERIFY_CATALOG.items():
        assert re.fullmatch(r"TS-V[123]\d\d", code)
        assert title and title == title.strip() and not title.endswith(".")
        assert fix and fix[0].islower()


def _codes_in_sources() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted(SOURCES.glob("*.py")):
        for code in re.findall(r"TS-V\d{3}", path.read_text()):
            found.setdefault(code, set()).add(path.name)
    return found


def test_every_code_in_the_sources_is_in_the_catalog() -> None:
    used = _codes_in_sources()
    assert set(used) - set(VERIFY_CATALOG) == set()


def test_every_catalog_code_is_reported_somewhere() -> None:
    """No dead catalog entry: each code is emitted by a checking module."""
    used = {code for code, files in _codes_in_sources().items() if files - {"diagnostics.py"}}
    assert set(VERIFY_CATALOG) - used == set()


def test_public_api() -> None:
    assert set(ts_verify.__all__) == {
        "VERIFY_CATALOG",
        "BarrierState",
        "Diagnostic",
        "Report",
        "Severity",
        "Trace",
        "TraceEvent",
        "VerificationError",
        "split_lanes",
        "verify",
        # What the layers above use (ts-cli's timelines; every check is verify()'s).
        "Valuation",
        "is_per_tile",
        "loop_key",
        "run_valuation",
        # ts-runtime's PipelineConfig names the same Hopper alternative as TS-V216.
        "HOPPER_ALTERNATIVE",
        # ts-runtime reads a multicast TMA ring's per-warp consumer group as the verifier does.
        "multicast_peers",
        "per_warp_consumer_group",
        # ts-runtime's translation validation counts a tcgen05.commit as the verifier does.
        "umma_arrivals",
    }
