"""PDL: the barriers lower to griddepcontrol where the schedule puts them; the launch attribute.

The PTX of the example pair (``examples/hopper/pdl_pair.py``) is read kernel by kernel: the
grid wait must come before the shift kernel's first global load, and the trigger after the
scale kernel's last global store (the positions the schedules ask for, read from the text).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

# The smoke subset (the oldest Python runs only it): one kernel of each kind.
pytestmark = pytest.mark.smoke

pytest.importorskip("cutlass")

N = 4096


@pytest.fixture(scope="module")
def example(load_example: Callable[[str], Any]) -> Any:
    return load_example("pdl_pair")


@pytest.fixture(scope="module")
def args() -> tuple[Any, ...]:
    import cutlass

    from ts_runtime.harness import fake_tensor

    return (*(fake_tensor(cutlass.Float32, N) for _ in range(3)), cutlass.Int32(N))


def _kernels(ptx: str) -> dict[str, str]:
    """Each ``.entry``'s body by order of appearance: scale first, then shift."""
    parts = re.split(r"^\.visible \.entry ", ptx, flags=re.M)[1:]
    assert len(parts) == 2, "the pair compiles to two kernels"
    return {"scale": parts[0], "shift": parts[1]}


def _lines(body: str, opcode: str) -> list[int]:
    return [i for i, line in enumerate(body.splitlines()) if line.strip().startswith(opcode)]


@pytest.mark.parametrize("side", ["ts", "twin"])
def test_griddepcontrol_where_the_schedule_puts_it(
    example: Any, args: tuple[Any, ...], side: str
) -> None:
    from ts_runtime.harness import ptx_of

    kernels = _kernels(ptx_of(example.KERNELS[side], *args))
    scale, shift = kernels["scale"], kernels["shift"]
    assert not _lines(scale, "griddepcontrol.wait") and not _lines(shift, "griddepcontrol.launch")
    (wait,) = _lines(shift, "griddepcontrol.wait")
    assert wait < min(_lines(shift, "ld.global")), "the wait precedes every read of mid"
    (launch,) = _lines(scale, "griddepcontrol.launch_dependents")
    assert launch > max(_lines(scale, "st.global")), "the trigger follows the loop's stores"


def test_pair_matches_twin(example: Any) -> None:
    out = example.compile_only(N)
    assert out["verified"] is True
    assert out["same_counts"] and out["ts_total"] <= out["twin_total"]


def test_use_pdl_changes_only_the_launch(example: Any, args: tuple[Any, ...]) -> None:
    """With and without PDL the kernels are the same; only the host's launch config differs."""
    from ts_runtime import compile_kernel

    with_pdl = compile_kernel(example.ts_pair(True), *args)
    without = compile_kernel(example.ts_pair(False), *args)
    assert with_pdl.as_text("ptx") == without.as_text("ptx")
    a, b = with_pdl.as_text("mlir").splitlines(), without.as_text("mlir").splitlines()
    assert len(a) == len(b) and sum(x != y for x, y in zip(a, b, strict=True)) == 1


def test_launch_passes_use_pdl_to_the_dsl() -> None:
    from ts_codegen.dsl.launch import launch

    seen: dict[str, Any] = {}

    class Launchable:
        def __init__(self, params: tuple[Any, ...]) -> None:
            seen["params"] = params

        def launch(self, **options: Any) -> None:
            seen.update(options)

    launch(Launchable, [1, 2], grid=(3, 1, 1), block=(64, 1, 1), use_pdl=True)
    assert seen == {"params": (1, 2), "grid": [3, 1, 1], "block": [64, 1, 1], "use_pdl": True}
    seen.clear()
    launch(Launchable, [], grid=(1, 1, 1), block=(32, 1, 1))
    assert "use_pdl" not in seen  # the DSL's default (no PDL) stays implicit


def test_use_pdl_without_a_wait_is_refused(example: Any) -> None:
    """The scale kernel never waits: launched with PDL it would race with its predecessor."""
    from ts_runtime.errors import RuntimeConfigError
    from ts_runtime.pdl import check_pdl_launch, waits_for_grid

    assert waits_for_grid(example.PLANS["shift"]) and not waits_for_grid(example.PLANS["scale"])
    check_pdl_launch("pdl_shift", example.PLANS["shift"])
    with pytest.raises(RuntimeConfigError, match=r"TS-R005: Kernel `pdl_scale`.launch\(use_pdl"):
        check_pdl_launch("pdl_scale", example.PLANS["scale"])


def test_wait_after_the_reads_is_rejected(example: Any) -> None:
    """The shift kernel with its wait moved after the loop: TS-V230 at the read's line."""
    from task_scheduling import domain_loop, schedule
    from task_scheduling.kernel import GmemVector, Kernel, Tasks
    from task_scheduling.resources import PdlWaitBarrier
    from task_scheduling.task import Task

    def late_wait(k: Any, mid: Any, dst: Any, n: Any) -> Tasks:
        m = GmemVector(name="mid", tensor=mid)
        d = GmemVector(name="dst", tensor=dst)
        wait = PdlWaitBarrier(name="pdl_wait")

        @schedule
        def shift(wait: Any, mid: Any, dst: Any) -> None:
            with domain_loop(n):
                dst.store(element=mid.load())
            wait.wait_griddep()

        task = Task([wait, m], [d], 0, 8, schedule=shift(wait, m, d), name="shift")
        return Tasks([task], {d: [m, wait]})

    report = Kernel(late_wait).verify().report
    (d,) = [d for d in report.diagnostics if d.code == "TS-V230"]
    assert d.task == "shift" and d.resource == "mid" and "mid.load" in d.step
    assert d.location is not None and "dst.store(element=mid.load())" in d.location.text
    assert not report.ok
