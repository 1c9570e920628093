"""WorkQueue and TileSchedulerConfig: construction, typed errors, and verified persistent plans."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ts_ir import (
    CooperativeGroupSpec,
    PipelineSpec,
    PipelineType,
    TileSchedulerType,
    WorkAttr,
)
from ts_runtime import (
    RuntimeConfigError,
    Task,
    TaskManager,
    TileSchedulerConfig,
    UnsupportedOnTarget,
    WorkQueue,
)
from ts_trace import (
    MemoryResource,
    ResourceProxy,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
    work_tile_loop,
)
from ts_verify import VerificationError

STATIC = TileSchedulerConfig.create_static_persistent_tile_scheduler_params(None)


def _async(stages: int, producer: int, consumer: int) -> PipelineSpec:
    return PipelineSpec(
        PipelineType.AsyncAsync,
        stages,
        0,
        CooperativeGroupSpec("thread", producer),
        CooperativeGroupSpec("thread", consumer),
    )


def test_static_queue_is_a_work_queue_resource() -> None:
    wq = WorkQueue(STATIC, name="tiles")
    assert type(wq).is_work_queue
    assert wq.tile_scheduler_config.tile_scheduler_type is TileSchedulerType.StaticPersistent
    assert not wq.tile_scheduler_config.is_dynamic
    assert set(type(wq).work_methods()) == {
        "fetch_next_tile",
        "fetch_work_tile",
        "get_and_advance_work_tile",
        "is_last_tile",  # a TS extension (static schedules)
        "read_next_tile",
        "read_next_work_tile",
    }


def test_subclass_keeps_the_positional_config() -> None:
    @dataclasses.dataclass(kw_only=True)
    class Padded(WorkQueue):
        tiles_m: Any = None

        def beyond(self, work_tile: Any) -> Any:
            return work_tile[0] >= self.tiles_m

    wq = Padded(STATIC, name="padded", tiles_m=3)
    assert wq.tiles_m == 3 and wq.tile_scheduler_config is STATIC
    assert wq.beyond((3, 0, 0)) and not wq.beyond((2, 0, 0))


def test_queue_without_config_names_the_fix() -> None:
    with pytest.raises(RuntimeConfigError, match=r"TS-R005.*not a TileSchedulerConfig") as info:
        WorkQueue("static", name="tiles")
    assert info.value.resource == "tiles"
    assert "create_static_persistent_tile_scheduler_params" in info.value.fix


def test_clc_is_rejected_on_hopper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_90a")
    with pytest.raises(UnsupportedOnTarget, match=r"TS-R002.*Blackwell.*sm_90a") as info:
        TileSchedulerConfig.create_clc_dynamic_persistent_tile_scheduler_params(None, None)
    assert info.value.target == "sm_90a"
    assert "create_atomic_dynamic_persistent_tile_scheduler_params" in info.value.fix


def test_atomic_scheduler_refuses_clusters() -> None:
    class Params:
        cluster_shape_mn = (2, 1)

    with pytest.raises(RuntimeConfigError, match=r"TS-R005.*single CTAs.*\(2, 1\)") as info:
        TileSchedulerConfig.create_atomic_dynamic_persistent_tile_scheduler_params(Params(), 0)
    assert "static scheduler for clusters" in info.value.fix


def test_atomic_scheduler_needs_counters_and_a_pipeline() -> None:
    with pytest.raises(RuntimeConfigError, match="counters"):
        TileSchedulerConfig.create_atomic_dynamic_persistent_tile_scheduler_params(None, None)
    cfg = TileSchedulerConfig.create_atomic_dynamic_persistent_tile_scheduler_params(None, 0)
    assert cfg.is_dynamic
    with pytest.raises(RuntimeConfigError, match=r"`tiles`.*pipeline_config is None") as info:
        WorkQueue(cfg, name="tiles")
    assert "create_async_async_pipeline_cfg" in info.value.fix
    WorkQueue(cfg, name="tiles", pipeline_config=_async(2, 32, 32))


# ---------------------------------------------------------------------------------------------
# persistent plans on the host: verified for every tile count, or rejected with a line
# ---------------------------------------------------------------------------------------------


def empty_tile(work_queue: Any, work_tile: Any) -> Any:
    return work_tile.tile_idx[0] == 0


class ChunkTask(Task):
    def chunks(self, work_tile_coord: Any) -> Any:
        return work_tile_coord[0]


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    @producer_work
    def fill(self, stage_info: Any) -> None:
        """Write a stage."""

    @consumer_work
    def drain(self, stage_info: Any) -> None:
        """Read a stage."""


@schedule
def fetcher(wq: ResourceProxy, ring: ResourceProxy) -> None:
    with work_tile_loop(wq, skip_if=empty_tile) as tiles:
        wq.acquire()
        wq.fetch_next_tile()
        wq.commit()
        with tiles.skippable(), domain_loop(ChunkTask.chunks):
            ring.acquire()
            ring.fill()
            ring.commit()


@schedule
def reader(wq: ResourceProxy, ring: ResourceProxy) -> None:
    with work_tile_loop(wq, skip_if=empty_tile) as tiles:
        wq.wait()
        wq.read_next_tile()
        wq.release()
        with tiles.skippable(), domain_loop(ChunkTask.chunks):
            ring.wait()
            ring.drain()
            ring.release()


@schedule
def reader_skipping_the_handoff(wq: ResourceProxy, ring: ResourceProxy) -> None:
    with work_tile_loop(wq, skip_if=empty_tile) as tiles, tiles.skippable():
        wq.wait()
        wq.read_next_tile()
        wq.release()
        with domain_loop(ChunkTask.chunks):
            ring.wait()
            ring.drain()
            ring.release()


def _manager(read: Any, fetch: Any = fetcher) -> TaskManager:
    cfg = TileSchedulerConfig.create_atomic_dynamic_persistent_tile_scheduler_params(None, 0)
    wq = WorkQueue(cfg, name="tiles", pipeline_config=_async(2, 32, 32))
    ring = Ring(name="ring", pipeline_config=_async(4, 32, 32))
    tasks = [
        ChunkTask([], [wq, ring], 0, 1, schedule=fetch(wq, ring), name="fetch"),
        ChunkTask([wq, ring], [], 1, 1, schedule=read(wq, ring), name="read"),
    ]
    return TaskManager(tasks, {ring: [wq]}, name="dynamic_chunks")


def test_dynamic_queue_plan_is_proven_for_all_tile_counts() -> None:
    tm = _manager(reader)
    assert tm.report.ok
    assert any("skipped tiles" in p for p in tm.report.proven)


def test_skipping_the_handoff_on_one_side_is_rejected_with_the_line() -> None:
    with pytest.raises(VerificationError) as info:
        _manager(reader_skipping_the_handoff)
    text = str(info.value)
    assert "tiles" in text and "read" in text
    assert "reader_skipping_the_handoff" in text or "test_runtime_work_queue.py" in text


@schedule
def reference_fetcher(wq: ResourceProxy, ring: ResourceProxy) -> None:
    with work_tile_loop(wq, skip_if=empty_tile) as tiles:
        wq.acquire()
        wq.fetch_work_tile()  # the reference's name of fetch_next_tile
        wq.commit()
        with tiles.skippable(), domain_loop(ChunkTask.chunks):
            ring.acquire()
            ring.fill()
            ring.commit()


@schedule
def reference_reader(wq: ResourceProxy, ring: ResourceProxy) -> None:
    with work_tile_loop(wq, skip_if=empty_tile) as tiles:
        wq.wait()
        wq.get_and_advance_work_tile()  # the reference's read of the waited stage
        wq.release()
        with tiles.skippable(), domain_loop(ChunkTask.chunks):
            ring.wait()
            ring.drain()
            ring.release()


def _shape(tm: TaskManager) -> list[list[tuple[str, str, tuple[str, ...], str]]]:
    return [
        [(s.resource, s.stage.value, tuple(s.outputs), s.label) for s in t.schedule.steps()]
        for t in tm.plan.tasks
    ]


def test_reference_step_names_on_a_dynamic_queue_are_its_steps() -> None:
    """The reference spells a dynamic queue's steps fetch_work_tile / get_and_advance_work_tile:
    the same request and the same read of the waited stage, returning the tile (work_tile, a
    WorkTileInfo) where read_next_tile returns its index (next_tile), so the plan is TS's own
    but for those two steps' labels and that output, and it is proven the same way."""
    ours, theirs = _manager(reader), _manager(reference_reader, reference_fetcher)
    assert theirs.report.ok
    got, want = _shape(theirs), _shape(ours)
    read = ("tiles", "ConsumerWork", ("work_tile",), "read_next_work_tile")
    assert read in got[1]
    assert got[1] == [read if s[3] == "read_next_tile" else s for s in want[1]]
    fetch = [step for step in got[0] if step[0] == "tiles"]
    assert fetch[1] == ("tiles", "ProducerWork", (), "fetch_work_tile")
    assert [s[:3] for s in got[0]] == [s[:3] for s in want[0]]


def test_get_and_advance_work_tile_stays_the_static_step_on_a_static_queue() -> None:
    cfg = TileSchedulerConfig.create_static_persistent_tile_scheduler_params(None)
    wq = WorkQueue(cfg, name="tiles")
    assert wq.ts_work_label("get_and_advance_work_tile") == "get_and_advance_work_tile"
    method = WorkQueue.work_methods()["get_and_advance_work_tile"]
    assert method.attrs & WorkAttr.AUXILIARY and method.outputs == ("work_tile",)


def test_static_queue_fetch_is_a_no_op_and_its_read_is_refused() -> None:
    """Both names of the fetch do nothing on a static queue (every CTA computes its tiles);
    reading a fetched tile there has no answer to read: a typed error naming the queue."""
    wq = WorkQueue(STATIC, name="tiles")
    assert wq.fetch_work_tile(None) is None
    assert wq.fetch_next_tile(None) is None
    for read in (wq.read_next_tile, wq.read_next_work_tile):
        with pytest.raises(RuntimeConfigError, match=r"`tiles`.*no answer to read") as info:
            read(None)
        assert info.value.resource == "tiles"
        assert "get_and_advance_work_tile()" in info.value.fix


def test_only_a_static_queue_knows_its_last_tile() -> None:
    """``is_last_tile`` peeks at the CTA's next tile, which a static schedule knows in advance
    (``StageInfo.peek_work_tile``); a dynamic queue fetches it at run time: a typed error."""
    from ts_runtime.blocks import tile_queue
    from ts_trace import StageInfo

    last = StageInfo(0, 0, 0, 1, None, "is_last_tile", None, None)
    dynamic = tile_queue(object(), object(), consumer_threads=256)
    with pytest.raises(RuntimeConfigError, match="fetches the next tile at run time") as info:
        dynamic.is_last_tile(last)
    assert info.value.resource == "WorkQueue" and "static scheduler" in info.value.fix

    class _Tile:
        is_valid_tile = False  # the CTA's next tile is past the grid

    static = WorkQueue(STATIC, name="wq")
    seen = dataclasses.replace(last, peek_work_tile=lambda: _Tile())
    assert bool(static.is_last_tile(seen)) is True
