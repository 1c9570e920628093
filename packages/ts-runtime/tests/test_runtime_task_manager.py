"""Task / TaskManager on the host: plan, checks, verification (no GPU, no compilation)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
from runtime_host_kernels import (
    GlobalOut,
    StageBuffer,
    build,
    load_schedule,
    store_schedule,
    tma_config,
)

from ts_ir import CooperativeGroupSpec as G
from ts_ir import KernelPlan, PipelineType
from ts_runtime import (
    GroupSizeError,
    PipelineConfig,
    RuntimeConfigError,
    SmemBudgetError,
    Task,
    TaskDeclarationError,
    TaskManager,
    UnsupportedFeatureError,
    UnsupportedOnTarget,
)
from ts_verify import VerificationError


def test_tma_copy_plan_builds_and_verifies() -> None:
    tm = build()
    plan = tm.plan
    assert isinstance(plan, KernelPlan)
    assert [t.name for t in plan.tasks] == ["load", "store"]
    assert plan.task("store").warps == range(4, 12)
    spec = plan.resource("smem").pipeline
    assert spec is not None and spec.type is PipelineType.TmaAsync and spec.stages == 4
    assert tm.report.ok
    assert plan.resource("smem").smem[0].size_bytes == 4 * 128 * 64 * 2
    assert tm.smem_allocator.total == 65536 + 64


def test_construction_does_not_need_the_dsl() -> None:
    # TaskManager construction is pure Python; the code generator is imported by run() only.
    build()
    assert "ts_runtime.task_manager" in sys.modules


def test_print_and_verify_and_mermaid(capsys: pytest.CaptureFixture[str]) -> None:
    tm = build()
    report = tm.print_and_verify()
    out = capsys.readouterr().out
    assert report.ok and "verified" in out and "smem" in out and "capacity" in out
    mermaid = tm.get_marmaid_string_dependency_graph()
    assert mermaid.startswith("flowchart TD")
    assert "smem" in mermaid and "store" in mermaid
    assert tm.get_marmaid_string_dependency_graph("LR").startswith("flowchart LR")


def test_verbose_prints(capsys: pytest.CaptureFixture[str]) -> None:
    build(verbose=True)
    assert "verified" in capsys.readouterr().out


def test_cutlass_groups() -> None:
    cpipe = pytest.importorskip("cutlass.pipeline")
    cfg = PipelineConfig.create_tma_async_pipeline_cfg(
        4,
        128 * 64 * 2,
        cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
        cpipe.CooperativeGroup(cpipe.Agent.Thread, 256),
    )
    assert build(config=cfg).report.ok


# -- the three misuses: typed errors naming task and resource ----------------------------------


def test_group_size_contradicting_warp_count() -> None:
    with pytest.raises(GroupSizeError) as info:
        build(consumer_threads=128)  # the store task has 8 warps = 256 threads
    err = info.value
    assert err.task == "store" and err.resource == "smem"
    text = str(err)
    assert "`smem`" in text and "`store`" in text and "256" in text and "128" in text
    assert "deadlock" not in text  # 256 arrivals > 128: the phase completes early
    assert "CooperativeGroup(Agent.Thread, 256)" in text


def test_group_size_too_small_side_is_a_deadlock() -> None:
    with pytest.raises(GroupSizeError, match="deadlock") as info:
        build(consumer_threads=512)
    assert info.value.task == "store"


def test_smem_over_budget() -> None:
    with pytest.raises(SmemBudgetError) as info:
        build(stages=16)  # 16 x 16 KiB = 256 KiB
    err = info.value
    assert err.resource == "smem" and err.task in ("load", "store")
    text = str(err)
    assert "`smem`" in text and "232448" in text and "load" in text and "store" in text


def test_smem_capacity_override() -> None:
    """A capacity the caller gave that the kernel exceeds: the error names the call that set it
    first (that number may be the one to change), then the largest allocation's class."""
    with pytest.raises(SmemBudgetError) as info:
        build(smem_capacity_bytes=32 * 1024)
    text = str(info.value)
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\w+)', text)
    helper = Path(sys.modules[build.__module__].__file__ or "")
    call = 1 + next(
        i for i, line in enumerate(helper.read_text().splitlines()) if "return TaskManager(" in line
    )
    (first_file, first_line, first_fn), second = frames[0], frames[1]
    assert (Path(first_file).name, int(first_line), first_fn) == (helper.name, call, "build")
    assert second[2] == "StageBuffer"
    assert "the capacity (32768 B) is set at" in text
    assert "smem_capacity_bytes" in info.value.fix
    # The target's own capacity is no line of the user's: only the allocation is named.
    with pytest.raises(SmemBudgetError) as info:
        build(stages=16)
    assert "the capacity" not in str(info.value)


def test_blackwell_pipeline_on_hopper(monkeypatch: pytest.MonkeyPatch) -> None:
    # Built directly (the factories already refuse on sm_90): the TaskManager names the task.
    cfg = PipelineConfig(4, 16384, G("thread", 1), G("thread", 256), PipelineType.TmaUmma)
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_90a")
    with pytest.raises(UnsupportedOnTarget) as info:
        build(config=cfg)
    err = info.value
    assert err.resource == "smem" and err.task == "load"
    assert err.pipeline_type == "TmaUmma" and err.target == "sm_90a"
    assert "TmaAsync" in str(err) and "`smem`" in str(err) and "load" in str(err)


def test_skip_validation_turns_checks_into_warnings() -> None:
    with pytest.warns(UserWarning, match="smem"):
        tm = build(consumer_threads=128, skip_validation=True)
    assert not tm.report.ok  # the verifier saw it too (TS-V203)


def test_verification_error_raised() -> None:
    from ts_trace import ResourceProxy, domain_loop, schedule

    @schedule
    def no_commit(smem: ResourceProxy) -> None:
        with domain_loop(0, 8, 1):
            smem.acquire()
            smem.tma_load()

    smem = StageBuffer(name="smem", pipeline_config=tma_config())
    dst = GlobalOut(name="dst")
    tasks = [
        Task([], [smem], 0, 1, schedule=no_commit(smem), name="load"),
        Task([smem], [dst], 4, 8, schedule=store_schedule(smem, dst), name="store"),
    ]
    with pytest.raises(VerificationError, match="load"):
        TaskManager(tasks, {dst: [smem]})


# -- Task declaration --------------------------------------------------------------------------


def _smem() -> StageBuffer:
    return StageBuffer(name="smem", pipeline_config=tma_config())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"warp_idx": -1}, "warp_idx"),
        ({"num_warps": 0}, "num_warps"),
        ({"num_registers": 16}, "num_registers"),
        ({"num_registers": 100}, "num_registers"),
        ({"run_only_on_cta_id": -1}, "run_only_on_cta_id"),
    ],
)
def test_task_declaration_errors(kwargs: dict[str, Any], message: str) -> None:
    smem = _smem()
    args: dict[str, Any] = {"warp_idx": 0, "num_warps": 1}
    args.update(kwargs)
    warp_idx, num_warps = args.pop("warp_idx"), args.pop("num_warps")
    with pytest.raises(TaskDeclarationError, match=message):
        Task([], [smem], warp_idx, num_warps, schedule=load_schedule(smem), **args)


def test_task_needs_traced_schedule() -> None:
    with pytest.raises(TaskDeclarationError, match="traced schedule"):
        Task([], [], 0, 1, schedule=load_schedule)  # type: ignore[arg-type]


def test_task_attributes() -> None:
    smem = _smem()
    t = Task([], [smem], 0, 1, schedule=load_schedule(smem))
    assert t.name == "load_schedule"
    assert (t.warp_start, t.warp_end) == (0, 1)
    assert t.resources == [smem]
    assert t.domain == 64 and t.get_domain((0, 0, 0)) == 64
    assert t.make_task_cache() is None
    assert not t.has_runtime_bounds()
    assert t.loop_bounds() == [None]
    assert t.location.file == __file__


def test_runtime_bound_traced_outside_kernel_needs_values() -> None:
    from ts_trace import ResourceProxy, domain_loop, schedule

    class Placeholder:
        pass

    @schedule
    def load(smem: ResourceProxy) -> None:
        with domain_loop(0, Placeholder(), 1):
            smem.acquire()
            smem.tma_load()
            smem.commit()

    smem = _smem()
    t = Task([], [smem], 0, 1, schedule=load(smem))
    assert t.has_runtime_bounds()
    # The placeholder object is the traced value: it is handed to the lowering as the bound.
    [(start, end, step)] = t.loop_bounds()  # type: ignore[misc]
    assert start is None and step is None and isinstance(end, Placeholder)


def test_dynamic_domain_uses_get_domain() -> None:
    from ts_trace import ResourceProxy, domain_loop, schedule

    class MyTask(Task):
        def get_domain(self, work_tile_coord: Any) -> Any:
            return 10 * work_tile_coord[0]

    @schedule
    def load(smem: ResourceProxy) -> None:
        with domain_loop(MyTask.get_domain):
            smem.acquire()
            smem.tma_load()
            smem.commit()

    smem = _smem()
    t = MyTask([], [smem], 0, 1, schedule=load(smem))
    assert t.loop_bounds((3, 0, 0)) == [(None, 30, None)]


def test_unsupported_manager_options() -> None:
    smem = _smem()
    dst = GlobalOut(name="dst")
    tasks = [Task([], [smem], 0, 1, schedule=load_schedule(smem), name="load")]
    with pytest.raises(UnsupportedFeatureError, match="iket_enable_profiling"):
        TaskManager(tasks, {dst: [smem]}, iket_enable_profiling=True)
    # TMEM is supported (Blackwell); a wrong object for it is a typed error naming it.
    with pytest.raises(RuntimeConfigError, match="tmem_allocator"):
        TaskManager(tasks, {dst: [smem]}, tmem_allocator=object())


def test_run_only_on_cta_id_needs_the_ring_partners_on_the_same_cta() -> None:
    smem = _smem()
    dst = GlobalOut(name="dst")

    def tasks(store_cta: int | None) -> list[Task]:
        return [
            Task([], [smem], 0, 1, schedule=load_schedule(smem), run_only_on_cta_id=0),
            Task(
                [smem],
                [dst],
                4,
                8,
                schedule=store_schedule(smem, dst),
                name="store",
                run_only_on_cta_id=store_cta,
            ),
        ]

    with pytest.raises(UnsupportedFeatureError, match="run_only_on_cta_id") as info:
        TaskManager(tasks(None), {dst: [smem]})
    assert info.value.task == "load_schedule" and info.value.resource == "smem"
    assert info.value.code == "TS-R001"  # the verifier's TS-V250, raised typed
    assert TaskManager(tasks(0), {dst: [smem]}).report.ok


def test_empty_graph_and_no_tasks() -> None:
    smem = _smem()
    t = Task([], [smem], 0, 1, schedule=load_schedule(smem))
    with pytest.raises(RuntimeConfigError, match="empty"):
        TaskManager([t], {})
    with pytest.raises(RuntimeConfigError, match="at least one task"):
        TaskManager([], {smem: []})


def test_run_before_setup() -> None:
    tm = build()
    with pytest.raises(RuntimeError, match="setup_resources_and_tasks"):
        tm.run()


# -- one set of checks: ts-verify's, for both front doors ------------------------------------------


def test_the_allocators_own_allocations_are_in_the_plan_and_the_budget() -> None:
    from ts_runtime import SmemAllocation, SmemAllocator

    smem = StageBuffer(name="smem", pipeline_config=tma_config())
    dst = GlobalOut(name="dst")
    alloc = SmemAllocator()
    alloc.add_resource(smem)
    alloc.add(SmemAllocation("scratch", 200 * 1024))  # no resource declares it
    tasks = [
        Task([], [smem], 0, 1, schedule=load_schedule(smem), name="load"),
        Task([smem], [dst], 4, 8, schedule=store_schedule(smem, dst), name="store"),
    ]
    with pytest.raises(SmemBudgetError) as info:
        TaskManager(tasks, {dst: [smem]}, smem_allocator=alloc)
    err = info.value
    # 200 KiB of scratch + 4 stages of 16 KiB + 4 x 16 B of mbarriers, over 232448.
    total = 200 * 1024 + 4 * 16384 + 64
    assert err.resource == "scratch" and f"needs {total} bytes" in str(err)
    assert "test_runtime_task_manager.py" in str(err)  # the user's line
    with pytest.warns(UserWarning, match="scratch"):
        tm = TaskManager(tasks, {dst: [smem]}, smem_allocator=alloc, skip_validation=True)
    assert [a.name for a in tm.plan.smem_extra] == ["scratch"]
    assert tm.report.codes() == ["TS-V209"]


def test_task_manager_and_kernel_verify_through_the_same_stage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ts_runtime.stages
    from ts_ir import Target
    from ts_runtime.staged import Kernel, KernelContext, Tasks

    calls: list[tuple[str, Target | None]] = []
    from ts_verify import verify as real

    def spy(plan: KernelPlan, *, target: Target | None = None) -> Any:
        calls.append((plan.name, target))
        return real(plan, target=target)

    monkeypatch.setattr(ts_runtime.stages, "verify", spy)
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_90a")
    build()

    def declare(k: KernelContext) -> Tasks:
        smem = StageBuffer(name="smem", pipeline_config=tma_config())
        dst = GlobalOut(name="dst")
        return Tasks(
            [
                Task([], [smem], 0, 1, schedule=load_schedule(smem), name="load"),
                Task([smem], [dst], 4, 8, schedule=store_schedule(smem, dst), name="store"),
            ],
            {dst: [smem]},
        )

    assert Kernel(declare, name="staged_copy").verify().ok
    assert calls == [("tma_copy", Target.of("sm_90a")), ("staged_copy", Target.of("sm_90a"))]


def test_the_group_size_error_is_the_verifiers_finding() -> None:
    with pytest.raises(GroupSizeError) as info:
        build(consumer_threads=128)
    # The code of the typed error is the runtime's; the finding (and its words) ts-verify's.
    with pytest.warns(UserWarning) as warned:
        tm = build(consumer_threads=128, skip_validation=True)
    assert str(warned[0].message).startswith("TS-R003") and "TS-V203" in tm.report.codes()
    text = str(info.value)
    assert text.startswith("TS-R003: resource `smem`: the consumer group has 128 thread(s)")
    assert "runtime_host_kernels.py" in text  # the release in the user's schedule
