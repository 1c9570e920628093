"""Translation validation of every Blackwell example: its sm_100a PTX runs its verified plan.

Each example in ``examples/blackwell/`` is compiled for sm_100a in its own process
(``blackwell_capture_child.py``: the CuTe DSL reads the target when it is imported, this
session compiles for sm_90a) while :func:`ts_codegen.capture.capture_compiles` records the plans
lowered; the PTX must run each plan's barrier protocol (:func:`ts_runtime.check_ptx`), including
the Blackwell parts: ``tcgen05.commit`` arrivals (one per committing warp) and the CLC work
queue (the acquire arms the stage's full barrier for the 16-byte answer, one
``clusterlaunchcontrol.try_cancel`` completes it, the commit arrives nowhere).

The mutations edit the PTX of ``clc_copy`` and ``gemm`` (or their plans); the errors expected
are decided by hand from the mutation and the protocol, not read from the checker.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("cutlass")

from ts_ir import KernelPlan
from ts_ir.serialize import from_json
from ts_runtime.ptx_check import TranslationError, check_ptx

HERE = Path(__file__).resolve().parent
BLACKWELL = HERE.parent / "examples" / "blackwell"
CHILD = HERE / "blackwell_capture_child.py"
EXAMPLES = sorted(p.stem for p in BLACKWELL.glob("*.py") if not p.name.startswith("_"))

Captured = list[tuple[KernelPlan, str]]


# The CLC example with the reference's step names (fetch_work_tile, get_and_advance_work_tile).
REFERENCE_NAMES = HERE / "blackwell_clc_reference_names.py"
PROGRAMS = {**{e: BLACKWELL / f"{e}.py" for e in EXAMPLES}, "reference_names": REFERENCE_NAMES}


def _compile(program: Path, out: Path) -> Captured:
    out.mkdir()
    env = dict(os.environ, CUTE_DSL_ARCH="sm_100a")
    proc = subprocess.run(
        [sys.executable, str(CHILD), str(program), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=BLACKWELL,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    kernels: Captured = []
    for ptx_file in sorted(out.glob("*.ptx")):
        ptx = ptx_file.read_text()
        for plan_file in sorted(out.glob(f"{ptx_file.stem}.*.json")):
            plan = from_json(plan_file.read_text())
            assert isinstance(plan, KernelPlan)
            kernels.append((plan, ptx))
    return kernels


@pytest.fixture(scope="session")
def captured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Captured]:
    root = tmp_path_factory.mktemp("blackwell_ptx")
    # Two at a time: each child is one compile, mostly single-threaded.
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = {e: pool.submit(_compile, path, root / e) for e, path in PROGRAMS.items()}
        return {e: f.result() for e, f in done.items()}


def test_every_blackwell_example_is_checked() -> None:
    # Every example in the folder is compiled and checked; these at least (the group GEMMs:
    # a Merge released by tcgen05.commits, a Merge of TMEM and SMEM rings, a TMA Fork whose
    # second member waits on the first member's full barriers).
    expected = {"clc_copy", "gemm", "gemm_nvfp4", "umma_chain", "merge_gemm", "fork_gemm"}
    assert expected <= set(EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_runs_its_plan(example: str, captured: dict[str, Captured]) -> None:
    kernels = captured[example]
    assert kernels, f"{example}: compile_only() lowered no TS plan"
    for plan, ptx in kernels:
        report = check_ptx(plan, ptx)
        assert report.ok, report.as_text()
        assert len(report.rings) == sum(r.pipeline is not None for r in plan.resources)


@pytest.mark.parametrize("example", ["clc_copy", "gemm"])
def test_the_clc_request_is_read(example: str, captured: dict[str, Captured]) -> None:
    """One thread of the scheduler warp asks once per stage; the commit arrives nowhere."""
    plan, ptx = captured[example][0]
    text = check_ptx(plan, ptx).as_text()
    assert "task `sched` requests one CLC answer per stage of ring `tiles` (16 bytes" in text
    assert "task `sched` arrives 1x on ring `tiles` (full)" in text  # the acquire's arming
    # The full barrier counts that one arrival: a commit arriving too would overrun it.
    assert re.search(r"ring `tiles`: 2 stage\(s\), .* full count 1,", text), text


def _sub(ptx: str, pattern: str, repl: str) -> str:
    new, n = re.subn(pattern, repl, ptx, count=1, flags=re.M)
    assert n == 1, f"mutation {pattern!r} matched nothing"
    return new


def _line_of(ptx: str, pattern: str) -> int:
    (line,) = [i for i, text in enumerate(ptx.splitlines(), 1) if re.search(pattern, text)]
    return line


def _errors(plan: KernelPlan, ptx: str) -> list[TranslationError]:
    report = check_ptx(plan, ptx)
    assert not report.ok
    return list(report.errors)


def _with_bytes(plan: KernelPlan, ring: str, nbytes: int) -> KernelPlan:
    resources = []
    for r in plan.resources:
        if r.name == ring and r.pipeline is not None:
            pipe = dataclasses.replace(r.pipeline, bytes_per_stage=nbytes)
            r = dataclasses.replace(r, pipeline=pipe)
        resources.append(r)
    return dataclasses.replace(plan, resources=tuple(resources))


def test_clc_response_barrier_armed_with_other_bytes(captured: dict[str, Captured]) -> None:
    """The acquire arms the answer's barrier for 32 bytes, one answer brings 16: the consumers'
    waits would never finish. One TS-X103 at the arming, naming the scheduler task."""
    plan, ptx = captured["clc_copy"][0]
    arm = re.search(r"mov\.b32\s+(%r\d+), 16;\n\s*mbarrier\.arrive\.expect_tx", ptx)
    assert arm is not None
    bad = _sub(ptx, rf"mov\.b32\s+{re.escape(arm.group(1))}, 16;", f"mov.b32 {arm.group(1)}, 32;")
    (err,) = _errors(plan, bad)
    assert err.code == "TS-X103" and err.task == "sched" and err.resource == "tiles"
    assert err.line == _line_of(bad, r"mbarrier\.arrive\.expect_tx")
    assert "with 32 transaction bytes" in str(err) and "stage is 16 bytes" in str(err)


def test_clc_plan_with_other_bytes(captured: dict[str, Captured]) -> None:
    """A plan whose CLC stage is 32 bytes: both the arming (16) and the answer (16) differ."""
    plan, ptx = captured["clc_copy"][0]
    errors = _errors(_with_bytes(plan, "tiles", 32), ptx)
    assert [e.code for e in errors] == ["TS-X103", "TS-X103"]
    lines = {e.line for e in errors}
    assert lines == {
        _line_of(ptx, r"mbarrier\.arrive\.expect_tx"),
        _line_of(ptx, r"clusterlaunchcontrol\.try_cancel"),
    }
    assert any("complete 16 byte(s)" in str(e) and "arms it for 32" in str(e) for e in errors)


def test_clc_request_from_every_lane(captured: dict[str, Captured]) -> None:
    """Without the lane-0 guard the whole warp asks: 32 answers (32 clusters cancelled) complete
    512 bytes on a barrier armed for 16."""
    plan, ptx = captured["clc_copy"][0]
    guard = re.search(
        r"^\s*@(%p\d+) bra\s+(\$L__BB\d+_\d+);\n(?:.*\n){0,2}?\s*clusterlaunchcontrol\.try_cancel",
        ptx,
        flags=re.M,
    )
    assert guard is not None, "the try_cancel is guarded by a branch on the lane"
    bad = ptx.replace(guard.group(0), guard.group(0).split("\n", 1)[1], 1)
    (err,) = _errors(plan, bad)
    assert err.code == "TS-X103" and err.task == "sched" and err.resource == "tiles"
    assert err.line == _line_of(bad, r"clusterlaunchcontrol\.try_cancel")
    assert "issued by 32 thread(s)" in str(err) and "512 byte(s)" in str(err)


def test_clc_answer_on_the_empty_barrier(captured: dict[str, Captured]) -> None:
    """The answer completes on the stage's empty barrier (two stages: full + 16 bytes): bytes on a
    barrier that expects none, and none on the full barrier the acquire armed."""
    plan, ptx = captured["clc_copy"][0]
    bad = _sub(
        ptx,
        r"(clusterlaunchcontrol\.try_cancel\S*\s+\[[^\]]+\], \[%r\d+)\+8\]",
        r"\g<1>+24]",
    )
    errors = _errors(plan, bad)
    assert [e.code for e in errors] == ["TS-X103", "TS-X103"]
    on_empty, missing = errors
    assert on_empty.line == _line_of(bad, r"clusterlaunchcontrol\.try_cancel")
    assert "on the empty barrier of ring `tiles`" in str(on_empty)
    assert missing.resource == "tiles" and "no clusterlaunchcontrol.try_cancel" in str(missing)


def test_tcgen05_commit_on_the_wrong_barrier(captured: dict[str, Captured]) -> None:
    """The MMA warp's accumulator commit (the last tcgen05.commit, after the K loop) lands on the
    accumulator's empty barrier (two stages: full + 16 bytes): the producer arrives where only
    the epilogue releases, and nothing arrives on the full barriers the epilogue waits on."""
    plan, ptx = captured["gemm"][0]
    commits = [m for m in re.finditer(r"tcgen05\.commit\S*\s+\[(%r\d+)\+(\d+)\]", ptx)]
    assert len(commits) == 2
    acc = commits[-1]
    moved = acc.group(0).replace(f"+{acc.group(2)}]", f"+{int(acc.group(2)) + 16}]")
    bad = ptx[: acc.start()] + moved + ptx[acc.end() :]
    errors = _errors(plan, bad)
    assert sorted(e.code for e in errors) == ["TS-X102", "TS-X105"]
    wrong = next(e for e in errors if e.code == "TS-X105")
    assert wrong.task == "mma" and wrong.resource == "acc"
    assert wrong.line == bad[: acc.start()].count("\n") + 1
    assert "arrives on the empty barrier of ring `acc`" in str(wrong)
    silent = next(e for e in errors if e.code == "TS-X102")
    assert silent.resource == "acc" and "never arrives on them" in str(silent)


def test_the_reference_clc_step_names_compile_to_the_same_kernel(
    captured: dict[str, Captured],
) -> None:
    """``fetch_work_tile`` / ``get_and_advance_work_tile`` (the reference's names on its CLC
    queue) are the request and the read of the answer: the same PTX as TS's names (the
    ``WorkTileInfo`` the read returns is unused there), and it runs its plan."""
    ((plan, ptx),) = captured["reference_names"]
    ((_, ours),) = captured["clc_copy"]
    assert ptx == ours
    assert check_ptx(plan, ptx).ok
    labels = {
        t.name: [s.label for s in t.schedule.steps() if not s.stage.is_pipeline_op]
        for t in plan.tasks
    }
    # get_and_advance_work_tile is the same read, returning the tile as a WorkTileInfo.
    assert labels == {
        "copy": ["copy_tile", "read_next_work_tile"],
        "sched": ["fetch_work_tile", "read_next_work_tile"],
    }


def _dealloc_guard(ptx: str) -> tuple[str, str]:
    """The PTX with the branch that keeps all but one epilogue warp from the dealloc removed,
    and with the dealloc removed."""
    lines = ptx.splitlines(keepends=True)
    (at,) = [i for i, line in enumerate(lines) if "tcgen05.dealloc" in line]
    guard = max(i for i in range(at) if re.match(r"\s*@%p\d+ bra\s", lines[i]))
    assert at - guard <= 4, "the guard sits right before the dealloc"
    unguarded = "".join(lines[:guard] + lines[guard + 1 :])
    no_free = "".join(lines[:at] + lines[at + 1 :])
    return unguarded, no_free


def test_tmem_freed_by_every_epilogue_warp(captured: dict[str, Captured]) -> None:
    """``tcgen05.dealloc`` is a whole warp's: run by all four epilogue warps it would free the
    columns four times. TS-X105 at the dealloc, naming the epilogue."""
    plan, ptx = captured["umma_chain"][0]
    bad, _ = _dealloc_guard(ptx)
    (err,) = _errors(plan, bad)
    assert err.code == "TS-X105" and err.task == "epilogue"
    assert err.line == _line_of(bad, r"tcgen05\.dealloc")
    assert "128 thread(s) of warp(s) [0, 1, 2, 3]" in str(err)


def test_tmem_never_freed(captured: dict[str, Captured]) -> None:
    """The plan frees the TMEM in the epilogue (``TensorMemory.free``); a PTX without the
    dealloc leaks it (the next CTA on the SM would wait for columns for ever)."""
    plan, ptx = captured["umma_chain"][0]
    _, bad = _dealloc_guard(ptx)
    (err,) = _errors(plan, bad)
    assert err.code == "TS-X105" and err.task == "epilogue"
    assert "the PTX has no tcgen05.dealloc" in str(err)


def test_tmem_placement_is_read(captured: dict[str, Captured]) -> None:
    plan, ptx = captured["gemm"][0]
    text = check_ptx(plan, ptx).as_text()
    assert "task `mma` allocates the TMEM in warp" in text
    assert "task `epilogue` frees the TMEM in warp" in text
