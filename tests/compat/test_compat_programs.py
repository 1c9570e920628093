"""Small reference-style programs (tests/compat/programs) trace, verify and compile for sm_90a.

Each ``pNN_*.py`` is a kernel written against the reference's API (only its import lines name
``task_scheduling``); ``compile_fake(arch)`` compiles it with fake tensors. Each ``nNN_*.py`` is
a wrong program that the reference refuses too: TS must refuse it with a typed error that is a
``ValueError``, as the reference's is. bench/compat_reference.py runs the same programs on the
reference; bench/compat_gpu.py runs their ``run_gpu()`` on a GPU.
"""

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("cutlass")

# The persistent programs (p15, p17, p24) build CUTLASS's PersistentTileSchedulerParams, as a
# program for the reference must (its TileSchedulerConfig takes them; TS reads their fields and
# builds no CUTLASS object itself). CUTLASS 4.8 deprecates the class, and its constructor makes a
# FastDivmodDivisor, deprecated too; the kernel call rebuilds both. Those two messages are
# ignored here, for these programs only: project code uses ts_codegen.TileRaster.
pytestmark = [
    pytest.mark.smoke,
    pytest.mark.filterwarnings(
        r"ignore:Migrated to examples/CuTeDSL/helpers/static_persistent_tile_scheduler\.py"
        r":DeprecationWarning:(ts_compat_p\d+_|cutlass\.utils\.static_persistent_tile_scheduler)"
    ),
    pytest.mark.filterwarnings(
        r"ignore:FastDivmodDivisor is deprecated in favor of cute\.FastDivmodDivisorV2"
        r":DeprecationWarning:cutlass\."
    ),
]

PROGRAMS = Path(__file__).parent / "programs"
POSITIVE = sorted(p.stem for p in PROGRAMS.glob("p[0-9][0-9]_*.py"))
NEGATIVE = sorted(p.stem for p in PROGRAMS.glob("n[0-9][0-9]_*.py"))
ARCH = "sm_90a"

# Programs the reference accepts that TS still refuses: the gap, stated precisely.
GAPS: dict[str, str] = {}


def _load(stem: str) -> ModuleType:
    name = f"ts_compat_{stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, PROGRAMS / f"{stem}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _ptx(compiled: Any) -> str:
    ptx = getattr(getattr(compiled, "artifacts", None), "PTX", None)
    if isinstance(ptx, bytes):
        ptx = ptx.decode()
    text = str(ptx or "")
    if ".version" not in text and os.path.exists(text):
        text = Path(text).read_text()
    return text


def _marks(stem: str) -> list[pytest.MarkDecorator]:
    if stem in GAPS:
        return [pytest.mark.xfail(strict=True, reason=GAPS[stem])]
    return []


def test_enough_programs() -> None:
    assert len(POSITIVE) >= 30
    gpu = [s for s in POSITIVE if hasattr(_load(s), "run_gpu")]
    assert len(gpu) * 3 >= len(POSITIVE), gpu


def test_every_gpu_run_says_pass() -> None:
    """bench/compat_gpu.py counts a GPU run as passed only when it prints PASS."""
    silent = [
        p.stem
        for p in sorted(PROGRAMS.glob("p[0-9][0-9]_*.py"))
        if "def run_gpu" in p.read_text() and 'print("PASS")' not in p.read_text()
    ]
    assert not silent, f"run_gpu without print('PASS'): {silent}"


@pytest.mark.parametrize("stem", [pytest.param(s, marks=_marks(s)) for s in POSITIVE])
def test_program_compiles(stem: str) -> None:
    module = _load(stem)
    assert os.environ["CUTE_DSL_ARCH"] == ARCH
    ptx = _ptx(module.compile_fake(ARCH))
    assert ".entry" in ptx, f"{stem}: no kernel in the PTX"
    assert f".target {ARCH}" in ptx
    for feature in getattr(module, "EXPECT_PTX", ()):
        assert feature in ptx, f"{stem}: no {feature!r} in the PTX"
    for feature in getattr(module, "FORBID_PTX", ()):
        assert feature not in ptx, f"{stem}: unexpected {feature!r} in the PTX"
    check = getattr(module, "check_host", None)
    if check is not None:  # host-side facts the program recorded while tracing
        check()


@pytest.mark.parametrize("stem", [pytest.param(s, marks=_marks(s)) for s in NEGATIVE])
def test_wrong_program_is_a_typed_value_error(stem: str) -> None:
    module = _load(stem)
    with pytest.raises(ValueError) as info:
        module.compile_fake(ARCH)
    err = info.value
    # A typed TS error, not a ValueError from deep inside the DSL.
    assert type(err).__module__.split(".")[0].startswith("ts_"), type(err)
    for word in getattr(module, "EXPECT_ERROR", ()):
        assert word in str(err), f"{stem}: {word!r} not in {err}"


# Programs whose compiled PTX is read back and compared with their verified plan (translation
# validation, ts_runtime.check_ptx): the pipeline options whose lowering is easiest to get
# subtly wrong (lanes, a stride per side, signaling over a cluster, releases into every CTA of a
# multicast). Warp lanes (p34) seed the cursor from the warp index at run time: the checker
# follows each warp of the task from its own thread.
TRANSLATION_CHECKED = [
    "p14_async_interleave_lanes",
    "p16_async_signaling_threads",
    "p32_async_cluster_cta_leader",
    "p33_cluster_one_cta_tasks",
    "p34_async_warp_lanes",
    "p35_async_stride_per_side",
    "p37_tma_multicast_cluster",
    "p38_async_stride_per_side_runtime",
    "p39_async_stride_per_side_runtime_lanes",
    "p41_async_warp_lanes_all_signal",
]


@pytest.mark.parametrize("stem", TRANSLATION_CHECKED)
def test_program_ptx_runs_its_verified_protocol(stem: str) -> None:
    from ts_codegen.capture import capture_compiles
    from ts_runtime import check_ptx

    module = _load(stem)
    with capture_compiles() as cap:
        ptx = _ptx(module.compile_fake(ARCH))
    plans = [*cap.pending, *(p for c in cap.compiles for p in c.plans)]
    assert plans, f"{stem}: no plan was lowered"
    for plan in plans:
        report = check_ptx(plan, ptx)
        assert report.ok, report.as_text()


def test_warp_lanes_that_all_start_on_stage_zero_are_reported() -> None:
    """p34 with the load task's cursor seeded with 0, not its warp index: warp 1 then waits
    on lane 0's first stage, not its own (the lane the plan gives it)."""
    import re

    from ts_codegen.capture import capture_compiles
    from ts_runtime import check_ptx

    module = _load("p34_async_warp_lanes")
    with capture_compiles() as cap:
        ptx = _ptx(module.compile_fake(ARCH))
    plan = [*cap.pending, *(p for c in cap.compiles for p in c.plans)][0]
    assert check_ptx(plan, ptx).ok
    # The loop's stage register starts as the warp index (its only copy from a register).
    seeds = re.findall(r"^\s*mov\.b32\s+(%r\d+), (%r\d+);$", ptx, flags=re.M)
    assert seeds, "no register copy seeds a cursor"
    reg, _ = seeds[0]
    bad = re.sub(rf"mov\.b32\s+{re.escape(reg)}, %r\d+;", f"mov.b32 {reg}, 0;", ptx, count=1)
    report = check_ptx(plan, bad)
    assert "TS-X104" in report.codes(), report.as_text()
    assert any("warp 1" in str(e) and e.task == "load" for e in report.errors), report.as_text()


def _instructions(ptx: str) -> list[str]:
    """The PTX's instruction lines, without names that differ between two compiles."""
    body = ptx[ptx.index(".entry") :]
    lines = [ln.split("//", 1)[0].strip() for ln in body.splitlines()]
    return [ln for ln in lines if ln and not ln.startswith((".", "{", "}", "$")) and ";" in ln]


def test_static_queue_fetch_step_lowers_to_nothing(tmp_path: Path) -> None:
    """p40's ``try_acquire(); acquire(); fetch_work_tile(); commit()`` on a static queue adds
    no instruction: the same program without those four lines compiles to the same PTX."""
    stem = "p40_static_queue_fetch_step"
    src = (PROGRAMS / f"{stem}.py").read_text()
    steps = ("wq.try_acquire()", "wq.acquire()", "wq.fetch_work_tile()", "wq.commit()")
    kept = [ln for ln in src.splitlines(keepends=True) if ln.strip() not in steps]
    assert len(src.splitlines()) - len(kept) == len(steps), "p40's fetch bracket moved"
    # A file of its own: the DSL reads a kernel's source back from its file.
    path = tmp_path / "p40_without_fetch.py"
    path.write_text("".join(kept))
    name = "ts_compat_p40_without_fetch"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    without = importlib.util.module_from_spec(spec)
    sys.modules[name] = without
    spec.loader.exec_module(without)
    ours = _instructions(_ptx(_load(stem).compile_fake(ARCH)))
    assert len(ours) > 20
    assert _instructions(_ptx(without.compile_fake(ARCH))) == ours
