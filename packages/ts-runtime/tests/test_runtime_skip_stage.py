"""Translation validation of ``skip_stage()``: no barrier operation, but the consumer moves on.

Two consumer tasks take a ring's stages in turns, each skipping the other's: ``even`` waits on
its stages first, ``odd`` skips first, so its first wait is on a later stage than 0. The PTX
check follows the plan's skips (:func:`ts_runtime.ptx_plan.first_wait_states`): the compiled
kernels pass, and the PTX of a lowering that ignored the skips (the same tasks without them)
is reported against the plan with skips, and the other way round.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("cutlass")

import cutlass
import cutlass.cute as cute

from ts_codegen import dsl, emit_tasks
from ts_ir import CooperativeGroupSpec, KernelPlan, PipelineSpec, PipelineType, TaskSpec
from ts_runtime.ptx_check import check_ptx
from ts_runtime.ptx_plan import first_wait_states
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


def _take(ring: ResourceProxy, depth: int) -> None:
    """``depth`` stages waited (all before the first release: a lagged consumer when > 1)."""
    for _ in range(depth):
        ring.wait()
    for _ in range(depth):
        ring.drain()
        ring.release()


def _pass(ring: ResourceProxy, depth: int) -> None:
    for _ in range(depth):
        ring.skip_stage()


def turns(depth: int, first: bool, skips: bool) -> Callable[..., Any]:
    """Each turn ``depth`` stages of its own, the other task's ``depth`` skipped (``skips``)."""

    @schedule
    def consume(ring: ResourceProxy) -> None:
        with domain_loop("n"):
            _pass(ring, 0 if first or not skips else depth)
            _take(ring, depth)
            _pass(ring, depth if first and skips else 0)

    return consume


def blocks(first: bool, skips: bool) -> Callable[..., Any]:
    """Per tile ``k`` stages (a runtime count) of its own and the other task's ``k``, one loop
    each, as CUTLASS's ping-pong. Alone it races (ts-verify: ``odd`` may skip a whole ring
    ahead, where a fresh barrier passes its parity; CUTLASS orders the warpgroups' main loops
    by a barrier of their own), but what the PTX check reads does not depend on that: runtime
    counts of skips before and between waits."""

    @schedule
    def consume(ring: ResourceProxy) -> None:
        with domain_loop("n"):
            for mine in (first, not first):
                with domain_loop("k"):
                    if mine:
                        _take(ring, 1)
                    elif skips:
                        ring.skip_stage()

    return consume


def make_plan(kind: str, *, skips: bool = True) -> tuple[KernelPlan, Ring]:
    """The producer (warp 0), ``even`` (warp 1, its stages first) and ``odd`` (warp 2)."""
    ring = Ring(
        name="ring", pipeline_config=PipelineSpec(PipelineType.AsyncAsync, STAGES, 0, WARP, WARP)
    )
    depth = 2 if kind == "lagged" else 1

    def fill(r: ResourceProxy) -> None:
        r.acquire()
        r.fill()
        r.commit()

    @schedule
    def produce(r: ResourceProxy) -> None:
        with domain_loop("n"):
            if kind == "blocks":  # the two tasks' k stages of a tile pair
                for _ in range(2):
                    with domain_loop("k"):
                        fill(r)
            else:
                for _ in range(2 * depth):
                    fill(r)

    def consumer(first: bool) -> Callable[..., Any]:
        return blocks(first, skips) if kind == "blocks" else turns(depth, first, skips)

    tasks = [
        TaskDeclaration([], [ring], 0, 1, produce(ring), name="producer"),
        TaskDeclaration([ring], [], 1, 1, consumer(True)(ring), name="even"),
        TaskDeclaration([ring], [], 2, 1, consumer(False)(ring), name="odd"),
    ]
    return build_plan(tasks, {ring: []}, name=f"turns_{kind}"), ring


_PTX: dict[tuple[str, bool], str] = {}


def ptx_of(kind: str, *, skips: bool = True) -> str:
    """The PTX of :func:`make_plan`'s kernel; every loop runs a kernel argument's count."""
    if (kind, skips) not in _PTX:
        plan, ring = make_plan(kind, skips=skips)

        @cute.kernel
        def kernel(n: cutlass.Int32, k: cutlass.Int32) -> None:
            bounds = {
                t.name: [(0, n, 1)] + [(0, k, 1)] * (2 if kind == "blocks" else 0)
                for t in plan.tasks
            }
            emit_tasks(plan, [ring], bounds=bounds)

        @cute.jit
        def launch(n: cutlass.Int32, k: cutlass.Int32) -> None:
            kernel(n, k).launch(grid=(1, 1, 1), block=(96, 1, 1))

        _, _PTX[(kind, skips)] = dsl.compile_ptx(launch, cutlass.Int32(8), cutlass.Int32(5))
    return _PTX[(kind, skips)]


KINDS = ["turns", "lagged", "blocks"]


@pytest.mark.parametrize("kind", ["turns", "lagged"])
def test_the_plans_verify(kind: str) -> None:
    verify = pytest.importorskip("ts_verify").verify
    report = verify(make_plan(kind)[0])
    assert report.ok, report.as_text()


@pytest.mark.parametrize("kind", KINDS)
def test_the_ptx_runs_the_plan(kind: str) -> None:
    report = check_ptx(make_plan(kind)[0], ptx_of(kind))
    assert report.ok, report.as_text()
    text = report.as_text()
    for task in ("even", "odd"):
        assert f"task `{task}` waits on ring `ring` (full) from where its skip_stage()s" in text
    assert "task `producer` waits on ring `ring` (empty) from parity 1" in text


@pytest.mark.parametrize(("kind", "first"), [("turns", (1, 0)), ("lagged", (2, 0))])
def test_a_lowering_that_ignores_the_skips_is_reported(kind: str, first: tuple[int, int]) -> None:
    # The PTX of the same tasks without skips: `odd` first waits on stage 0, not after its skips.
    report = check_ptx(make_plan(kind)[0], ptx_of(kind, skips=False))
    assert report.codes() == ["TS-X104"], report.as_text()
    (err,) = report.errors
    assert err.task == "odd" and err.resource == "ring"
    assert "first waits on stage / parity [(0, 0)]" in str(err)
    assert f"(stage, parity) [{first}] after the skip_stage()s before it" in str(err)


def test_skips_the_plan_does_not_make_are_reported() -> None:
    report = check_ptx(make_plan("turns", skips=False)[0], ptx_of("turns"))
    assert report.codes() == ["TS-X104"], report.as_text()
    assert report.errors[0].task == "odd"
    assert "first waits on stage / parity [(1, 0)]" in str(report.errors[0])


# -- where a consumer that skips first waits, read from the plan -------------------------------


def _task(body: Callable[[ResourceProxy], None]) -> TaskSpec:
    ring = Ring(name="ring")
    plan = build_plan(
        [TaskDeclaration([ring], [], 0, 1, schedule(body)(ring), name="t")], {ring: []}
    )
    return plan.tasks[0]


def _states(ks: range | list[int]) -> frozenset[tuple[int, int]]:
    return frozenset((k % STAGES, (k // STAGES) % 2) for k in ks)


def test_first_wait_after_constant_skips() -> None:
    def five(ring: ResourceProxy) -> None:
        _pass(ring, 5)  # past the ring once: stage 1, parity flipped
        _take(ring, 1)
        _pass(ring, 1)
        _take(ring, 1)

    assert first_wait_states(_task(five), "ring", STAGES) == {(1, 1)}


def test_first_wait_after_skips_that_may_not_run() -> None:
    def maybe(ring: ResourceProxy) -> None:
        with domain_loop(3) as loop:
            with loop.first_iter():
                ring.skip_stage()
            _take(ring, 1)

    assert first_wait_states(_task(maybe), "ring", STAGES) == _states([0, 1])


def test_first_wait_after_a_loop_of_skips() -> None:
    def looped(ring: ResourceProxy) -> None:
        with domain_loop("k"):
            ring.skip_stage()
        _take(ring, 1)

    # any number of skips: every stage on either parity
    assert first_wait_states(_task(looped), "ring", STAGES) == _states(range(2 * STAGES))


def test_first_wait_inside_the_loop_of_a_turn() -> None:
    def odd(ring: ResourceProxy) -> None:
        with domain_loop("n"):
            _pass(ring, 3)
            _take(ring, 1)

    assert first_wait_states(_task(odd), "ring", STAGES) == {(3, 0)}
