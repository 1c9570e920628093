"""Reference-style programs that must trace, verify and compile unchanged (drop-in behaviour).

Each kernel here is written the way a program for the reference is: resources whose work
methods assign through ``self`` under runtime ``if``, positional work-call arguments, the
``advance_on_*`` pipeline options with schedules that hold two stages, runtime-bounded loops
with ``last_iter()``, a TMA ring whose consumer group is counted per warp.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ts_ir import CooperativeGroupSpec, PipelineSpec, PipelineType
from ts_runtime import Task, TaskManager
from ts_trace import MemoryResource, consumer_work, domain_loop, producer_work
from ts_trace import schedule as ts_schedule

cutlass = pytest.importorskip("cutlass")


@pytest.fixture(scope="module")
def kernels() -> Any:
    import runtime_compat_kernels

    return runtime_compat_kernels


def _compile(fn: Any, *args: Any) -> dict[str, int]:
    from ts_codegen import count_instructions
    from ts_codegen.dsl import compile_ptx

    _, ptx = compile_ptx(fn, *args)
    counts: dict[str, int] = count_instructions(ptx)
    return counts


def _fake(n: int) -> Any:
    from cutlass.cute.runtime import make_fake_compact_tensor

    return make_fake_compact_tensor(cutlass.Int32, (n,), assumed_align=16)


def test_self_assignment_positional_arguments_and_advance_options_compile(kernels: Any) -> None:
    counts = _compile(kernels.lagged_ring, _fake(1024), _fake(1024), cutlass.Int32(1024))
    assert counts["mbarrier.try_wait"] >= 2 and counts["mbarrier.arrive"] >= 2
    tm = kernels.LAST[-1]
    assert tm.report.ok
    put = next(s for s in tm.plan.task("fill").schedule.steps() if s.label == "put")
    assert [r.argument for r in put.inputs] == ["value"] and put.constants == (("scale", 2),)


def test_last_iter_in_runtime_start_end_step_loop_compiles(kernels: Any) -> None:
    counts = _compile(kernels.strided_marks, _fake(4096), cutlass.Int32(0), cutlass.Int32(4096))
    assert counts["st.global"] >= 1  # the two marks may merge into one predicated store


# -- a TMA ring's consumer group counted per warp ----------------------------------------------


@dataclasses.dataclass(kw_only=True)
class Tiles(MemoryResource):
    @producer_work
    def load(self, stage_info: Any) -> None: ...

    @consumer_work
    def use(self, stage_info: Any) -> None: ...


def _tma_ring_manager(consumer_size: int, cluster: tuple[int, int]) -> TaskManager:
    spec = PipelineSpec(
        PipelineType.TmaAsync,
        2,
        4096,
        CooperativeGroupSpec("thread", 1),
        CooperativeGroupSpec("thread", consumer_size),
        cluster_mn=cluster,
    )
    ring = Tiles(name="ring", pipeline_config=spec)

    @ts_schedule
    def load(r: Any) -> None:
        with domain_loop(8):
            r.acquire()
            r.load()
            r.commit()

    @ts_schedule
    def use(r: Any) -> None:
        with domain_loop(8):
            r.wait()
            r.use()
            r.release()

    return TaskManager(
        [
            Task([], [ring], 0, 1, schedule=load(ring), name="load"),
            Task([ring], [], 4, 4, schedule=use(ring), name="use"),
        ],
        {ring: []},
    )


@pytest.mark.parametrize(
    ("consumer_size", "cluster"),
    [(4, (1, 1)), (128, (1, 1)), (8, (2, 1)), (8, (1, 2)), (128, (2, 1)), (12, (2, 2))],
)
def test_tma_consumer_group_per_warp_or_per_thread(
    consumer_size: int, cluster: tuple[int, int]
) -> None:
    # PipelineTmaAsync's count: one arrival per consumer warp on each CTA that multicast into
    # the stage (1, 2, 2 and 3 CTAs here), or TS's thread count; both are 128 threads.
    pipeline = _tma_ring_manager(consumer_size, cluster).plan.resource("ring").pipeline
    assert pipeline is not None and pipeline.consumer_group.size == 128


def test_tma_consumer_group_of_one_ctas_warps_on_a_multicast_is_refused() -> None:
    from ts_runtime.errors import GroupSizeError

    # 4 warps x 2 CTAs arrive on each empty barrier: a group of 4 would complete it early.
    with pytest.raises(GroupSizeError, match=r"TS-R003.*") as info:
        _tma_ring_manager(4, (2, 1))
    assert "CooperativeGroup(Agent.Thread, 8)" in str(info.value)


def test_errors_are_value_errors() -> None:
    from ts_codegen import LoweringError
    from ts_runtime.errors import RuntimeConfigError
    from ts_trace import PlanError, ResourceDeclarationError, ScheduleError
    from ts_verify import VerificationError

    for err in (
        LoweringError,
        VerificationError,
        RuntimeConfigError,
        PlanError,
        ResourceDeclarationError,
        ScheduleError,
    ):
        assert issubclass(err, ValueError), err


def test_run_only_on_cta_id_compiles_to_a_cluster_rank_test(kernels: Any) -> None:
    from ts_codegen.dsl import compile_ptx

    _, ptx = compile_ptx(kernels.cta_gated, _fake(4096))
    assert "%cluster_ctarank" in ptx  # the task runs on one CTA rank of its cluster


def test_dynamic_get_and_advance_work_tile_returns_a_work_tile_info(kernels: Any) -> None:
    """On a dynamic queue the reference's ``get_and_advance_work_tile`` returns the next tile
    as a ``WorkTileInfo``: a work method reads its ``tile_idx`` / ``is_valid_tile`` (TS's own
    ``read_next_tile`` returns the index). Recorded as ``read_next_work_tile``."""
    counts = _compile(kernels.next_tile, _fake(kernels.NEXT_ROWS), _fake(2))
    # The record's store; the fetch publishes the index in SMEM and the read takes it back.
    assert counts["st.global"] >= 1 and counts["st.shared"] >= 1 and counts["ld.shared"] >= 1
    tm = kernels.LAST[-1]
    assert tm.report.ok
    steps = tm.plan.task("follow").schedule.steps()
    read = next(s for s in steps if s.resource == "tiles" and s.stage.value == "ConsumerWork")
    assert (read.label, tuple(read.outputs)) == ("read_next_work_tile", ("work_tile",))
    record = next(s for s in steps if s.label == "record")
    assert [r.argument for r in record.inputs] == ["tile"]
