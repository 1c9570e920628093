"""The Hopper GEMM's programmatic dependent launch (``GemmConfig.pdl``, on by default).

Launched with PDL, a GEMM may start while the kernel before it on the stream still runs. It is
right only if every task waits for that kernel's grid before its first global access: the
load task before its first TMA load (and the dynamic scheduler's counter), each math task
before its first store of C, which with ``K = 0`` comes without any wait on the A/B ring.
These tests read the plan (each task's steps before its tile loop), the PTX (the TS kernel
and the hand-written twin carry the same grid-dependency instructions) and the options.
The GPU check that back-to-back GEMMs see each other's writes is ``tools/gemm_pdl_check.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
from typing import Any

import pytest

pytest.importorskip("cutlass")
pytest.importorskip("ts_runtime")
pytest.importorskip("ts_verify")

from ts_ir import WorkAttr

FAMILIES = [
    {},
    {"scheduler": "dynamic"},
    {"tile_mn": (64, 128), "kernel": "pingpong"},
    {"tile_mn": (128, 192), "cluster_mn": (2, 1), "kernel": "pingpong-skip"},
    {"tile_mn": (128, 128), "tail_split": 2},
    {"tile_mn": (128, 128), "split_k": 2},
]


def _work(task: Any) -> list[Any]:
    return [s for s in task.schedule.steps() if s.is_work]


@pytest.mark.parametrize(
    "fields", FAMILIES, ids=lambda f: "-".join(map(str, f.values())) or "default"
)
def test_every_task_waits_for_the_previous_grid_first(gemm: Any, fields: dict[str, Any]) -> None:
    plan = gemm.make_plan(gemm.GemmConfig(**fields))
    for task in plan.tasks:
        work = _work(task)
        waits = [i for i, s in enumerate(work) if s.attrs & WorkAttr.GRID_WAIT]
        assert len(waits) == 1, task.name
        # only the task's own setup (barrier init, accumulator and epilogue setup) comes first
        assert all(s.label == "setup" for s in work[: waits[0]]), (task.name, work[: waits[0]])
        launches = [i for i, s in enumerate(work) if s.attrs & WorkAttr.GRID_LAUNCH]
        assert launches == ([waits[0] + 1] if task.name == "load" else []), task.name


def test_pdl_off_has_no_grid_dependency(gemm: Any) -> None:
    plan = gemm.make_plan(gemm.GemmConfig(pdl=False))
    attrs = WorkAttr.GRID_WAIT | WorkAttr.GRID_LAUNCH
    assert not any(s.attrs & attrs for t in plan.tasks for s in _work(t))


@pytest.mark.parametrize("pdl", [True, False])
def test_ptx_has_the_twins_grid_dependency_instructions(gemm: Any, pdl: bool) -> None:
    from task_scheduling.harness import ptx_of

    cfg = gemm.GemmConfig(kernel="pingpong", tile_mn=(64, 128), pdl=pdl)
    for name, kernel in gemm.kernels(cfg):  # the TS kernel and the twin
        ptx = ptx_of(kernel, *gemm.fake_operands(cfg))
        assert ptx.count("griddepcontrol.wait;") == (3 if pdl else 0), name  # load + 2 math
        assert ptx.count("griddepcontrol.launch_dependents;") == (1 if pdl else 0), name


def _args(*words: str) -> argparse.Namespace:
    cli = importlib.import_module("_gemm_cli")
    parser = argparse.ArgumentParser()
    cli.add_config_args(parser)
    return parser.parse_args(list(words))


def test_pdl_option_reaches_table_picks_and_versus(gemm: Any) -> None:
    cli = importlib.import_module("_gemm_cli")
    mnk = (3000, 5000, 4000)
    on, source = cli.config_for(_args(), mnk)
    off, _ = cli.config_for(_args("--pdl", "off"), mnk)
    assert source.startswith("table:") and on.pdl and not off.pdl
    assert off == dataclasses.replace(on, pdl=False)  # the same pick otherwise
    assert not cli.versus_config(on, ["--tile", "128x128", "--pdl", "off"], mnk).pdl
    assert cli.versus_config(on, ["--tile", "128x128"], mnk).pdl  # the problem's, by default
    assert not cli.versus_config(off, ["--tile", "128x128"], mnk).pdl


@pytest.mark.parametrize("value", ["off", 0, None])
def test_pdl_must_be_a_bool(gemm: Any, value: Any) -> None:
    from ts_runtime.errors import RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match=r"GemmConfig\(pdl=.*not a bool") as info:
        gemm.GemmConfig(pdl=value)
    assert "pdl=False" in info.value.fix
