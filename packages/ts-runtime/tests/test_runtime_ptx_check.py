"""Translation validation: every Hopper example's PTX runs its verified plan's barrier protocol,
and a wrong count, parity, byte count or register budget in the PTX (or the plan) is reported
with its code, ring, task and PTX line.

Each example is compiled once per session (``compile_only``, as ``--compile-only`` does) while
:func:`ts_codegen.capture.capture_compiles` records the plans lowered and the PTX produced.
The mutations edit the PTX text of the TMA copy and the GEMM, or their plans; the expected
errors are decided by hand from the mutation, not by the checker.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cutlass")

from ts_ir import KernelPlan
from ts_runtime.ptx_cfg import PtxFormatError
from ts_runtime.ptx_check import TranslationError, check_ptx

# Scripts beside the examples that compile no kernel of their own.
NOT_KERNELS = {"gemm_tune": "the GEMM tuner, which compiles gemm.py's configurations"}
EXAMPLES = sorted(
    p.stem
    for p in (Path(__file__).resolve().parents[3] / "examples" / "hopper").glob("*.py")
    if not p.name.startswith("_") and p.stem not in NOT_KERNELS
)

Captured = list[tuple[KernelPlan, str]]


@pytest.fixture(scope="session")
def captured(load_example: Callable[[str], Any]) -> dict[str, Captured]:
    from ts_codegen.capture import capture_compiles

    out: dict[str, Captured] = {}
    for name in EXAMPLES:
        module = load_example(name)
        with capture_compiles() as cap:
            module.compile_only()
        out[name] = [(plan, c.ptx) for c in cap.compiles for plan in c.plans]
    return out


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_runs_its_plan(example: str, captured: dict[str, Captured]) -> None:
    kernels = captured[example]
    assert kernels, f"{example}: compile_only() lowered no TS plan"
    for plan, ptx in kernels:
        report = check_ptx(plan, ptx)
        assert report.ok, report.as_text()
        assert len(report.rings) == sum(r.pipeline is not None for r in plan.resources)


def _tma(captured: dict[str, Captured]) -> tuple[KernelPlan, str]:
    return captured["tma_copy"][0]


def _sub(ptx: str, pattern: str, repl: str) -> str:
    new, n = re.subn(pattern, repl, ptx, count=1, flags=re.M)
    assert n == 1, f"mutation {pattern!r} matched nothing"
    return new


def _line_of(ptx: str, pattern: str) -> int:
    for i, line in enumerate(ptx.splitlines(), 1):
        if re.search(pattern, line):
            return i
    raise AssertionError(pattern)


def _only(plan: KernelPlan, ptx: str, code: str) -> TranslationError:
    report = check_ptx(plan, ptx)
    assert report.codes() and set(report.codes()) == {code}, report.as_text()
    return report.errors[0]


def test_empty_barrier_counting_threads_is_the_h200_hang(captured: dict[str, Captured]) -> None:
    """The bug of the first H200 run: the empty barrier counts the 256 consumer threads while
    PipelineTmaAsync arrives once per warp (8 warps)."""
    plan, ptx = _tma(captured)
    init = re.search(r"mov\.b32\s+(%r\d+), 8;\n\s*mbarrier\.init", ptx)
    assert init is not None
    bad = _sub(ptx, rf"mov\.b32\s+{re.escape(init.group(1))}, 8;", f"mov.b32 {init.group(1)}, 256;")
    err = _only(plan, bad, "TS-X102")
    assert err.resource == "smem" and err.task == "store"
    assert err.line == _line_of(bad, r"mbarrier\.arrive\.shared")
    assert "count 256" in str(err) and "should count 8" in str(err)


def test_wrong_tx_bytes(captured: dict[str, Captured]) -> None:
    plan, ptx = _tma(captured)
    bad = _sub(ptx, r"mov\.b32\s+(%r\d+), 32768;", r"mov.b32 \1, 16384;")
    err = _only(plan, bad, "TS-X103")
    assert err.task == "load" and err.line == _line_of(bad, "expect_tx")
    assert "16384" in str(err) and "32768" in str(err)


def test_plan_with_other_stage_bytes(captured: dict[str, Captured]) -> None:
    plan, ptx = _tma(captured)
    ring = next(r for r in plan.resources if r.pipeline is not None)
    assert ring.pipeline is not None
    pipe = dataclasses.replace(ring.pipeline, bytes_per_stage=65536)
    other = dataclasses.replace(
        plan,
        resources=tuple(
            dataclasses.replace(r, pipeline=pipe) if r is ring else r for r in plan.resources
        ),
    )
    assert _only(other, ptx, "TS-X103").resource == ring.name


def test_plan_with_other_stages(captured: dict[str, Captured]) -> None:
    plan, ptx = _tma(captured)
    ring = next(r for r in plan.resources if r.pipeline is not None)
    assert ring.pipeline is not None
    pipe = dataclasses.replace(ring.pipeline, stages=ring.pipeline.stages + 1)
    other = dataclasses.replace(
        plan,
        resources=tuple(
            dataclasses.replace(r, pipeline=pipe) if r is ring else r for r in plan.resources
        ),
    )
    err = _only(other, ptx, "TS-X101")
    assert "initialises 4 mbarrier(s)" in str(err) and "need 6" in str(err)


def _consumer_parity(ptx: str) -> str:
    """The parity register of the consumer's wait on the full barrier (offset 65536)."""
    full = re.search(r"add\.s32\s+(%r\d+), %r\d+, 65536;", ptx)
    assert full is not None
    wait = re.search(rf"try_wait\.parity\.shared\.b64 P1, \[{full.group(1)}\], (%r\d+)", ptx)
    assert wait is not None
    return wait.group(1)


def test_consumer_starting_on_parity_one(captured: dict[str, Captured]) -> None:
    plan, ptx = _tma(captured)
    parity = _consumer_parity(ptx)
    # The consumer's parity starts as a copy of the stage index's 0 (mov %rA, 0; mov %rB, %rA)
    # or as its own 0: make it start at 1.
    start = re.search(rf"mov\.b32\s+{re.escape(parity)}, (%r\d+|0);", ptx)
    assert start is not None
    bad = _sub(ptx, rf"mov\.b32\s+{re.escape(parity)}, (%r\d+|0);", f"mov.b32 {parity}, 1;")
    err = _only(plan, bad, "TS-X104")
    assert err.task == "store" and err.resource == "smem"
    assert "first waits on stage / parity" in str(err) and ", 1)]" in str(err)


def test_parity_that_never_flips(captured: dict[str, Captured]) -> None:
    plan, ptx = _tma(captured)
    parity = _consumer_parity(ptx)
    bad = _sub(
        ptx,
        rf"xor\.b32\s+{re.escape(parity)}, {re.escape(parity)}, (%r\d+);",
        f"mov.b32 {parity}, {parity};",
    )
    err = _only(plan, bad, "TS-X104")
    assert err.task == "store" and "flipping exactly when the" in str(err)


def test_wait_on_the_wrong_side(captured: dict[str, Captured]) -> None:
    plan, ptx = _tma(captured)
    # The consumer's wait address: full barrier (65536) -> empty barrier (65552).
    bad = _sub(ptx, r"(add\.s32\s+%r\d+, %r\d+, )65536;", r"\g<1>65552;")
    codes = check_ptx(plan, bad).codes()
    assert "TS-X105" in codes


def test_wrong_register_budget(captured: dict[str, Captured]) -> None:
    plan, ptx = _tma(captured)
    bad = _sub(
        ptx, r"setmaxnreg\.inc\.sync\.aligned\.u32\s+232;", "setmaxnreg.inc.sync.aligned.u32 240;"
    )
    err = _only(plan, bad, "TS-X106")
    assert "store" in err.task and err.line == _line_of(bad, "setmaxnreg.inc")


def test_tma_into_the_barriers(captured: dict[str, Captured]) -> None:
    plan, ptx = _tma(captured)
    # The load's destination slot (stage << 15) moved up by one stage: stage 1 lands on the
    # mbarriers at 65536.
    bad = _sub(
        ptx,
        r"(cp\.async\.bulk\.tensor\.2d\.shared::cta\.global\S*\s+)\[(%r\d+)\]",
        r"\1[\2+32768]",
    )
    assert _only(plan, bad, "TS-X107").line == _line_of(bad, r"shared::cta\.global")


def test_gemm_release_arrivals(captured: dict[str, Captured]) -> None:
    """The GEMM's two release sites (every iteration but the first, and the last) each count."""
    plan, ptx = captured["gemm"][0]
    bad = _sub(ptx, r"(mbarrier\.arrive\.shared\.b64 %rd\d+, \[%r\d+\+\d+\], )(%r\d+);", r"\g<1>2;")
    err = _only(plan, bad, "TS-X102")
    assert err.task == "mma" and err.resource == "ab"


def test_not_a_kernel() -> None:
    with pytest.raises(PtxFormatError):
        check_ptx(KernelPlan(name="k", tasks=(), resources=()), ".version 8.8\n")


def test_error_codes_are_explained() -> None:
    from ts_ir import entry

    for code in ("TS-X101", "TS-X102", "TS-X103", "TS-X104", "TS-X105", "TS-X106", "TS-X107"):
        assert entry(code).layer == "ts-runtime"
    with pytest.raises(ValueError, match="unknown"):
        TranslationError("TS-X999", "nothing")


def test_a_barrier_of_the_programs_own_is_ignored(captured: dict[str, Captured]) -> None:
    """A program may initialise and use an mbarrier of its own beside the plan's rings (the
    split-K tutorial's reduction barrier): not the plan's, so neither counted nor reported."""
    plan, ptx = _tma(captured)
    init = re.search(r"mbarrier\.init\.shared\.b64\s+\[(%r\d+)\+(\d+)\], (%r\d+);", ptx)
    assert init is not None
    base, offset, count = init.group(1), int(init.group(2)), init.group(3)
    own = f"[{base}+{offset - 16}]"  # below the rings, one free slot between
    extra = f"mbarrier.init.shared.b64 {own}, {count};\n\tmbarrier.arrive.shared.b64 _, {own};\n\t"
    mixed = _sub(ptx, r"mbarrier\.init\.shared\.b64", extra + "mbarrier.init.shared.b64")
    report = check_ptx(plan, mixed)
    assert report.ok, report.as_text()
    assert f"SMEM [{offset - 16}]), ignored" in report.as_text()
    # Right next to the rings, the first run of slots is the wrong one: the run that checks
    # out is the plan's, so the barrier at the ring's other end is still the program's own.
    touching = _sub(
        ptx,
        r"mbarrier\.init\.shared\.b64",
        extra.replace(f"+{offset - 16}]", f"+{offset - 8}]") + "mbarrier.init.shared.b64",
    )
    report = check_ptx(plan, touching)
    assert report.ok, report.as_text()
    assert f"SMEM [{offset - 8}]), ignored" in report.as_text()


def _fork(captured: dict[str, Captured]) -> tuple[KernelPlan, str]:
    plan, ptx = captured["fork"][0]
    assert plan.groups, "the capture keeps the plan as written, with its Fork"
    return plan, ptx


def test_fork_member_waiting_on_its_own_full_barrier(captured: dict[str, Captured]) -> None:
    """A TMA Fork's second member has full barriers that nothing arrives on: a consumer waiting
    there would hang, so the check reports it (its consumers must wait on the first's)."""
    plan, ptx = _fork(captured)
    rings = {r.resource: r for r in check_ptx(plan, ptx).rings}
    first, member = rings["x_double"], rings["x_square"]
    lines = ptx.splitlines()
    last_wait = max(i for i, line in enumerate(lines) if "try_wait.parity" in line)
    at = max(
        i
        for i in range(last_wait)
        if re.match(rf"\s*add\.s32\s+%r\d+, %r\d+, {first.offset};", lines[i])
    )
    lines[at] = lines[at].replace(f"{first.offset};", f"{member.offset};")
    err = _only(plan, "\n".join(lines), "TS-X105")
    assert err.resource == "x_square" and err.task == "square"
    assert err.line == last_wait + 1 and "`x_double`" in str(err)


def test_fork_arming_other_bytes(captured: dict[str, Captured]) -> None:
    plan, ptx = _fork(captured)
    stage = next(r.pipeline for r in plan.resources if r.name == "x_double")
    assert stage is not None
    bad = _sub(ptx, rf"mov\.b32\s+(%r\d+), {stage.bytes_per_stage};", r"mov.b32 \1, 64;")
    err = _only(plan, bad, "TS-X103")
    assert err.resource == "x_double" and err.task == "load"
    assert "Fork's loads" in str(err) and str(stage.bytes_per_stage) in str(err)


def test_fork_read_without_its_group(captured: dict[str, Captured]) -> None:
    """Without the group, the second member's consumer waits on another ring's barrier."""
    plan, ptx = _fork(captured)
    report = check_ptx(dataclasses.replace(plan, groups=()), ptx)
    assert "TS-X105" in report.codes(), report.as_text()
    assert any(e.task == "square" and e.resource == "x_double" for e in report.errors)
