"""``skip_stage()``: a consumer's cursors move on one stage with no barrier operation.

Two consumer tasks take a ring's stages in turns (``even`` the even stages, ``odd`` the odd
ones), each skipping the other's. Compiled for sm_90a on the CPU: the skips add no barrier
instruction to the PTX, and each skip advances the task's states exactly as far as a wait and
a release together (one state, or a lagged consumer's wait and release states). Skips the
lowering cannot emit are refused, naming the task and step, before any code is emitted.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("cutlass")

import cutlass
import cutlass.cute as cute

from ts_codegen import LoweringError, TaskLowering, dsl, emit_tasks
from ts_ir import CooperativeGroupSpec, KernelPlan, PipelineSpec, PipelineType
from ts_trace import (
    MemoryResource,
    ResourceProxy,
    TaskDeclaration,
    build_plan,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
)

# The smoke subset (the oldest Python runs only it): one kernel of each kind.
pytestmark = pytest.mark.smoke

STAGES = 4
WARP = CooperativeGroupSpec("thread", 32)


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    @producer_work
    def fill(self, stage_info: Any) -> None:
        del stage_info

    @consumer_work
    def drain(self, stage_info: Any) -> None:
        del stage_info


def producer(per_turn: int) -> Callable[..., Any]:
    @schedule
    def produce(ring: ResourceProxy) -> None:
        with domain_loop("n"):
            for _ in range(per_turn):
                ring.acquire()
                ring.fill()
                ring.commit()

    return produce


def consumer(depth: int, *, skip_first: bool, skips: bool = True) -> Callable[..., Any]:
    """Per turn: ``depth`` stages waited (all before the first release when ``depth`` > 1, a
    lagged consumer), and ``depth`` stages skipped before or after them."""

    def skip(ring: ResourceProxy) -> None:
        for _ in range(depth if skips else 0):
            ring.skip_stage()

    @schedule
    def consume(ring: ResourceProxy) -> None:
        with domain_loop("n"):
            if skip_first:
                skip(ring)
            for _ in range(depth):
                ring.wait()
            for _ in range(depth):
                ring.drain()
                ring.release()
            if not skip_first:
                skip(ring)

    return consume


def make_plan(depth: int = 1, *, skips: bool = True, **pipeline: Any) -> tuple[KernelPlan, Ring]:
    """A producer (warp 0) filling ``2 * depth`` stages a turn; ``even`` (warp 1) and ``odd``
    (warp 2) each drain ``depth`` of them and skip the other's (``skips``)."""
    spec = PipelineSpec(PipelineType.AsyncAsync, STAGES, 0, WARP, WARP, **pipeline)
    ring = Ring(name="ring", pipeline_config=spec)
    tasks = [
        TaskDeclaration([], [ring], 0, 1, producer(2 * depth)(ring), name="producer"),
        TaskDeclaration(
            [ring], [], 1, 1, consumer(depth, skip_first=False, skips=skips)(ring), name="even"
        ),
        TaskDeclaration(
            [ring], [], 2, 1, consumer(depth, skip_first=True, skips=skips)(ring), name="odd"
        ),
    ]
    return build_plan(tasks, {ring: []}, name="turns"), ring


def compile_ptx(plan: KernelPlan, ring: Ring) -> str:
    """The PTX of ``plan`` lowered into a kernel whose loops run ``n`` (a kernel argument) times."""

    @cute.kernel
    def kernel(n: cutlass.Int32) -> None:
        emit_tasks(plan, [ring], bounds={t.name: [(0, n, 1)] for t in plan.tasks})

    @cute.jit
    def launch(n: cutlass.Int32) -> None:
        kernel(n).launch(grid=(1, 1, 1), block=(96, 1, 1))

    _, ptx = dsl.compile_ptx(launch, cutlass.Int32(8))
    assert ".entry" in ptx, "no PTX kept (CUTE_DSL_KEEP / CUTE_DSL_DUMP_DIR)"
    return ptx


def barrier_ops(ptx: str) -> list[str]:
    """Every mbarrier instruction of the kernel (the blocking waits' inline asm included)."""
    body = ptx[ptx.index(".entry") :]
    return [m.group(1) for m in re.finditer(r"^\s*(mbarrier\.[\w.:]+)", body, flags=re.M)]


def advances(monkeypatch: pytest.MonkeyPatch, plan: KernelPlan, ring: Ring) -> int:
    """How many stages the lowering advances pipeline states by, over the whole kernel."""
    moved: list[int] = []
    advance = dsl.state_advance

    def counting(state: Any, by: int = 1) -> Any:
        moved.append(by)
        return advance(state, by)

    with monkeypatch.context() as m:
        m.setattr(dsl, "state_advance", counting)
        compile_ptx(plan, ring)
    return sum(moved)


def test_the_turns_verify() -> None:
    verify = pytest.importorskip("ts_verify").verify
    for depth in (1, 2):
        report = verify(make_plan(depth)[0])
        assert report.ok, report.as_text()


@pytest.mark.parametrize("depth", [1, 2])
def test_a_skip_emits_no_barrier_operation(depth: int) -> None:
    with_skips = barrier_ops(compile_ptx(*make_plan(depth)))
    without = barrier_ops(compile_ptx(*make_plan(depth, skips=False)))
    assert sorted(with_skips) == sorted(without)
    # per turn: the producer's acquires and commits, each consumer's waits and releases
    assert with_skips.count("mbarrier.try_wait.parity.shared.b64") == 4 * depth
    assert with_skips.count("mbarrier.arrive.shared.b64") == 4 * depth


@pytest.mark.parametrize(
    ("depth", "per_skip"),
    [
        (1, 1),  # one state: the release advances it, the wait does not
        (2, 2),  # lagged: the wait advances the wait state, the release the release state
    ],
)
def test_a_skip_advances_as_far_as_a_wait_and_a_release(
    monkeypatch: pytest.MonkeyPatch, depth: int, per_skip: int
) -> None:
    skips = 2 * depth  # each consumer skips `depth` stages in its loop body
    with_skips = advances(monkeypatch, *make_plan(depth))
    without = advances(monkeypatch, *make_plan(depth, skips=False))
    assert with_skips - without == skips * per_skip


@schedule
def holds(ring: ResourceProxy) -> None:
    ring.wait()
    ring.skip_stage()
    ring.drain()
    ring.release()


def with_odd(odd: Callable[..., Any]) -> tuple[KernelPlan, Ring]:
    """:func:`make_plan` with ``odd``'s schedule replaced."""
    plan, ring = make_plan()
    tasks = tuple(
        dataclasses.replace(t, schedule=odd(ring)) if t.name == "odd" else t for t in plan.tasks
    )
    return dataclasses.replace(plan, tasks=tasks), ring


def lowering(plan: KernelPlan, ring: Ring, task: str) -> TaskLowering:
    (spec,) = [t for t in plan.tasks if t.name == task]
    return TaskLowering(spec, {"ring": ring}, {r.name: r for r in plan.resources}, {})


def test_a_skip_while_a_stage_is_held_is_refused() -> None:
    plan, ring = with_odd(holds)
    with pytest.raises(LoweringError, match=r"TS-C001: task `odd`, step ring\.skip_stage") as e:
        lowering(plan, ring, "odd").run()  # refused before any DSL code: no kernel is traced
    text = str(e.value)
    assert "while the task holds a stage of `ring` (release it first) is not lowered" in text
    assert "test_codegen_skip_stage.py" in text  # the user's line


def test_a_skip_on_interleaved_lanes_is_refused() -> None:
    plan, ring = make_plan(interleave=2)
    with pytest.raises(LoweringError, match="consumers move 2 stages at a time") as e:
        lowering(plan, ring, "even").run()
    assert "task `even`, step ring.skip_stage" in str(e.value)


def test_a_skip_without_a_pipeline_is_refused() -> None:
    ring = Ring(name="ring")

    @schedule
    def skip_only(r: ResourceProxy) -> None:
        r.skip_stage()
        r.drain()

    plan = build_plan([TaskDeclaration([ring], [], 0, 1, skip_only(ring), name="lone")], {ring: []})
    with pytest.raises(LoweringError, match=r"skip_stage\(\) on a resource without a pipeline"):
        lowering(plan, ring, "lone").run()


def test_a_skip_between_try_wait_and_wait_is_refused() -> None:
    # The probe's token is for the stage before the skip: the wait after it must not use it.
    @schedule
    def probes(ring: ResourceProxy) -> None:
        with domain_loop("n"):
            ring.try_wait()
            ring.skip_stage()
            ring.wait()
            ring.drain()
            ring.release()

    plan, ring = with_odd(probes)
    with pytest.raises(LoweringError, match=r"task `odd`, step ring\.skip_stage.*after a try_wait"):
        compile_ptx(plan, ring)
