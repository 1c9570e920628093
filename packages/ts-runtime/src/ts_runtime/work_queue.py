"""The persistent work queue: ``TileSchedulerConfig`` and the ``WorkQueue`` resource.

A persistent kernel launches about one CTA per SM; every task of the CTA walks the same sequence
of work tiles in ``with work_tile_loop(wq):``. Two schedulers hand the tiles out:

* **static persistent** (``create_static_persistent_tile_scheduler_params``): CTA ``c`` of
  ``G`` runs tiles ``c, c + G, ...`` in the order of a ``ts_codegen.TileRaster`` (along M or
  N, swizzled for L2 reuse, clusters). The schedules need no queue steps.
* **atomic dynamic** (``create_atomic_dynamic_persistent_tile_scheduler_params``, Hopper): a
  CTA's first tile is its index; every further tile is claimed from a global counter by one
  fetching warp, which publishes it through the queue's own small SMEM pipeline (give the
  ``WorkQueue`` an AsyncAsync ``pipeline_config``) to the CTA's other tasks. The fetching task
  writes ``wq.acquire(); wq.fetch_next_tile(); wq.commit()`` in its tile loop, the others
  ``wq.wait(); wq.read_next_tile(); wq.release()``, so ts-verify checks this hand-off like any
  other pipeline. The last CTA to run out of tiles zeroes the counters: no host memset between
  launches.

* **CLC dynamic** (``create_clc_dynamic_persistent_tile_scheduler_params``, Blackwell): the
  grid holds one cluster per tile and one fetching warp cancels clusters that have not started
  (``clusterlaunchcontrol.try_cancel``) to take over their tiles. The answer lands in the
  queue's ``ClcFetchAsync`` ring, which every task reads, the fetching one too
  (``wq.wait(); wq.read_next_tile(); wq.release()``); the first failed request ends the loop.
  On Hopper targets it is rejected with :class:`~ts_runtime.UnsupportedOnTarget`.

The scheduler parameters are a ``ts_codegen.TileRaster``, or CUTLASS's deprecated
``PersistentTileSchedulerParams`` as the reference's programs pass them (their fields are read).

Example (inside a ``@cute.jit`` host function, then in the kernel)::

    params = ts_codegen.TileRaster((tiles_m, tiles_n, 1), (1, 1, 1), swizzle_size=1)
    cfg = TileSchedulerConfig.create_static_persistent_tile_scheduler_params(params)
    grid = cfg.grid_shape(132)
    ...
    wq = WorkQueue(cfg, name="tiles")
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ts_ir import TileSchedulerType, WorkAttr
from ts_runtime._arguments import at_line
from ts_runtime.errors import RuntimeConfigError, UnsupportedOnTarget
from ts_runtime.target import current_target, is_blackwell_or_later
from ts_trace import MemoryResource, TaskLocalVariable, consumer_work, producer_work

__all__ = ["TileSchedulerConfig", "WorkQueue"]


@dataclasses.dataclass(frozen=True)
class TileSchedulerConfig:
    """Which persistent scheduler a :class:`WorkQueue` uses, with its tile raster.

    Build it with one of the ``create_*`` factories.

    Attributes:
        tile_scheduler_type: The scheduler flavour.
        tile_scheduler_params: A ``ts_codegen.TileRaster`` (the problem in tiles, the cluster
            shape, swizzle and rasterization order), or CUTLASS ``PersistentTileSchedulerParams``.
        response_ptr: The SMEM CLC response buffer (CLC only; Blackwell).
        counters: A global Int32 tensor of 2 elements, zero before the first launch (atomic
            dynamic only; the kernel keeps it zero between launches).
    """

    tile_scheduler_type: TileSchedulerType
    tile_scheduler_params: Any
    response_ptr: Any = None
    counters: Any = None

    @staticmethod
    def create_static_persistent_tile_scheduler_params(
        tile_scheduler_params: Any,
    ) -> TileSchedulerConfig:
        """A static persistent schedule: CTA ``c`` runs tiles ``c, c + G, c + 2G, ...``."""
        return TileSchedulerConfig(TileSchedulerType.StaticPersistent, tile_scheduler_params)

    @staticmethod
    def create_clc_dynamic_persistent_tile_scheduler_params(
        tile_scheduler_params: Any, response_ptr: Any = None
    ) -> TileSchedulerConfig:
        """A CLC (cluster launch control) dynamic schedule: Blackwell (sm_100a) only.

        The grid holds one cluster per tile (:meth:`grid_shape`); a running CTA takes over the
        tiles of clusters that have not started yet. The ``WorkQueue`` needs a ``ClcFetchAsync``
        pipeline (``create_clc_fetch_async_pipeline_cfg(stages, 16, <one thread>, <every
        thread of every task in the loop>)``): one fetching task runs ``wq.acquire();
        wq.fetch_next_tile(); wq.commit()`` per tile, and every task, the fetching one too,
        ``wq.wait(); wq.read_next_tile(); wq.release()``.

        Args:
            tile_scheduler_params: A ``ts_codegen.TileRaster``, or CUTLASS
                ``ClcDynamicPersistentTileSchedulerParams`` / ``PersistentTileSchedulerParams``,
                with cluster shape 1 x 1.
            response_ptr: SMEM for the 16-byte responses, one per queue stage (16-byte
                aligned); None carves them from the kernel's SMEM.

        Raises:
            UnsupportedOnTarget: On Hopper (and older) targets (TS-R002).
            RuntimeConfigError: A cluster shape other than 1 x 1.
        """
        target = current_target()
        if not is_blackwell_or_later(target):
            raise UnsupportedOnTarget(
                at_line(
                    "TileSchedulerConfig.create_clc_dynamic_persistent_tile_scheduler_params: "
                    "CLC (clusterlaunchcontrol.try_cancel) needs Blackwell (sm_100a), but the "
                    f"target is {target}"
                ),
                pipeline_type="ClcFetchAsync",
                target=target,
                fix="on Hopper use create_atomic_dynamic_persistent_tile_scheduler_params"
                "(params, counters) (a global atomic tile counter) or the static scheduler",
            )
        cluster = tuple(getattr(tile_scheduler_params, "cluster_shape_mn", (1, 1)))
        if cluster != (1, 1):
            # A cluster's CTAs must all learn the same answer: that is a multicast ring over
            # the cluster, which the Blackwell lowering does not build yet.
            raise RuntimeConfigError(
                at_line(
                    "create_clc_dynamic_persistent_tile_scheduler_params: the CLC scheduler is "
                    f"lowered for single-CTA clusters, but the parameters have cluster shape "
                    f"{cluster}"
                ),
                fix="use cluster shape (1, 1, 1) with the CLC scheduler, or the static "
                "scheduler for clusters",
            )
        return TileSchedulerConfig(
            TileSchedulerType.ClcDynamicPersistent, tile_scheduler_params, response_ptr
        )

    @staticmethod
    def create_atomic_dynamic_persistent_tile_scheduler_params(
        tile_scheduler_params: Any, counters: Any
    ) -> TileSchedulerConfig:
        """A dynamic schedule on a global atomic tile counter (Hopper and later).

        Args:
            tile_scheduler_params: A ``ts_codegen.TileRaster`` (or CUTLASS
                ``PersistentTileSchedulerParams``) with cluster shape 1 x 1.
            counters: A global Int32 tensor of 2 elements, all zero before the first launch
                (e.g. ``torch.zeros(2, dtype=torch.int32)``); the kernel leaves it zero.
        """
        if counters is None:
            raise RuntimeConfigError(
                at_line(
                    "create_atomic_dynamic_persistent_tile_scheduler_params needs a counters "
                    "tensor, got counters=None"
                ),
                fix="pass a zero-initialised global Int32 tensor of 2 elements",
            )
        cluster = tuple(getattr(tile_scheduler_params, "cluster_shape_mn", (1, 1)))
        if cluster != (1, 1):
            # Each CTA claims its own tiles: the CTAs of a cluster would get different tiles.
            raise RuntimeConfigError(
                "create_atomic_dynamic_persistent_tile_scheduler_params: the atomic scheduler "
                f"hands tiles to single CTAs, but the parameters have cluster shape {cluster}",
                fix="use cluster shape (1, 1, 1) with the dynamic scheduler, or the static "
                "scheduler for clusters",
            )
        return TileSchedulerConfig(
            TileSchedulerType.AtomicDynamicPersistent, tile_scheduler_params, counters=counters
        )

    @property
    def is_dynamic(self) -> bool:
        """True when tiles are claimed at run time (the queue needs its fetch pipeline)."""
        return self.tile_scheduler_type is not TileSchedulerType.StaticPersistent

    def grid_shape(self, max_active_clusters: Any) -> Any:
        """The launch grid: one CTA (cluster) per tile, at most ``max_active_clusters``.

        With CLC every tile gets its cluster (``max_active_clusters`` is not a limit there):
        the hardware starts as many as fit, and the running ones cancel and take over the
        others' tiles. A smaller grid would leave tiles that no cluster owns.
        """
        if self.tile_scheduler_type is TileSchedulerType.ClcDynamicPersistent:
            from ts_codegen.work_queues import clc_raster

            raster = clc_raster(self.tile_scheduler_params)
            return raster.get_grid_shape(raster.num_tiles)
        return self.tile_scheduler_params.get_grid_shape(max_active_clusters)


@dataclasses.dataclass(kw_only=True)
class WorkQueue(MemoryResource):
    """The persistent work queue, a resource of every task with ``work_tile_loop(wq)``.

    Args:
        tile_scheduler_config: The scheduler (positional, as documented).
        name: Resource name (default ``"WorkQueue"``).
        pipeline_config: For a dynamic scheduler: the AsyncAsync pipeline that hands fetched
            tiles from the fetching warp (producer, 32 threads) to the other tasks (consumers).

    Work methods (dynamic schedulers only):
        ``fetch_next_tile`` (producer, one warp): claims the next tile and publishes it in the
        acquired stage; the fetching task continues with it. ``fetch_work_tile`` is the
        reference's name for it.
        ``read_next_tile`` (consumer): reads the index of the waited stage into ``next_tile``.
        The reference's ``get_and_advance_work_tile`` on a dynamic queue is the same read
        (it reads the answer of the waited stage there too), recorded as
        ``read_next_work_tile``, which returns the tile as a ``WorkTileInfo`` (``work_tile``).

    Static schedulers only (a TS extension): ``is_last_tile`` (consumer, auxiliary) returns
    whether the work tile is the CTA's last (``last_tile``), e.g. to store a tile whose store
    was deferred to the next one.
    """

    is_work_queue = True

    # Positional (kw_only=False) so that ``WorkQueue(cfg, name=...)`` works, also for
    # dataclass subclasses that add fields (e.g. what a skip predicate reads).
    tile_scheduler_config: Any = dataclasses.field(default=None, kw_only=False)
    next_tile: TaskLocalVariable = TaskLocalVariable.uninitialized()
    work_tile: TaskLocalVariable = TaskLocalVariable.uninitialized()
    last_tile: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        if not isinstance(self.tile_scheduler_config, TileSchedulerConfig):
            raise RuntimeConfigError(
                at_line(
                    f"WorkQueue: tile_scheduler_config={self.tile_scheduler_config!r:.60} is not "
                    "a TileSchedulerConfig"
                ),
                resource=self.name,
                fix="build it with TileSchedulerConfig.create_static_persistent_tile_scheduler"
                "_params(params) or create_atomic_dynamic_persistent_tile_scheduler_params",
            )
        if self.tile_scheduler_config.is_dynamic and self.pipeline_config is None:
            raise RuntimeConfigError(
                f"WorkQueue `{self.name}`: the "
                f"{self.tile_scheduler_config.tile_scheduler_type.value} scheduler hands each "
                "fetched tile to the other tasks through the queue's own pipeline, but "
                "pipeline_config is None",
                resource=self.name,
                fix="pass pipeline_config=PipelineConfig.create_async_async_pipeline_cfg(2, "
                "<fetching warp: 32 threads>, <threads of the other tasks>)",
            )
        kind = self.tile_scheduler_config.tile_scheduler_type
        clc = kind is TileSchedulerType.ClcDynamicPersistent
        if clc and _pipeline_kind(self.pipeline_config) != "ClcFetchAsync":
            raise RuntimeConfigError(
                at_line(
                    f"WorkQueue `{self.name}`: the CLC scheduler's answers complete the queue's "
                    f"full barriers with 16 transaction bytes, but its pipeline is "
                    f"{_pipeline_kind(self.pipeline_config)}"
                ),
                resource=self.name,
                fix="pass pipeline_config=PipelineConfig.create_clc_fetch_async_pipeline_cfg("
                "2, 16, <one thread>, <threads of every task in the work-tile loop>)",
            )
        self.next_tile = TaskLocalVariable(dtype="Int32", default=0)
        self.work_tile = TaskLocalVariable(dtype="WorkTileInfo", default=None)
        self.last_tile = TaskLocalVariable(dtype="Boolean", default=False)
        self._source: Any = None

    def ts_tile_source(self) -> Any:
        """The lowering's view of the queue (one per kernel trace)."""
        if self._source is None:
            import ts_codegen

            cfg = self.tile_scheduler_config
            if cfg.tile_scheduler_type is TileSchedulerType.AtomicDynamicPersistent:
                self._source = ts_codegen.AtomicTiles(cfg.tile_scheduler_params, cfg.counters)
            elif cfg.tile_scheduler_type is TileSchedulerType.ClcDynamicPersistent:
                self._source = ts_codegen.ClcTiles(cfg.tile_scheduler_params, cfg.response_ptr)
            else:
                self._source = ts_codegen.StaticTiles(cfg.tile_scheduler_params)
        return self._source

    def ts_work_label(self, attr: str) -> str:
        """A dynamic queue's ``get_and_advance_work_tile`` is its ``read_next_work_tile``.

        The reference spells the per-tile read of every scheduler
        ``get_and_advance_work_tile``; on its CLC queue it reads the answer in the waited
        stage, which is what ``read_next_tile`` does. The step is recorded, verified and
        lowered as ``read_next_work_tile``: that read, returning the tile as a
        ``WorkTileInfo`` (``work_tile``) as the reference's step does. On a static queue it
        stays the static step below.
        """
        if attr == "get_and_advance_work_tile" and self.tile_scheduler_config.is_dynamic:
            return "read_next_work_tile"
        return attr

    @consumer_work(work_attrs=WorkAttr.AUXILIARY, returns=work_tile)
    def get_and_advance_work_tile(self, stage_info: Any) -> Any:
        """The current work tile; the queue moves on to the next tile when the tile's body ends.

        The reference's spelling of the per-tile queue step (``wq.wait();
        wq.get_and_advance_work_tile(); wq.release()``). With the static scheduler the queue has
        no pipeline: the brackets around it are bookkeeping and TS records none of them.
        A schedule on a dynamic queue records ``read_next_work_tile`` for it
        (:meth:`ts_work_label`); returning the current tile there would silently skip the
        pipeline's hand-over, so a direct call is refused.
        """
        if self.tile_scheduler_config.is_dynamic:
            raise RuntimeConfigError(
                f"WorkQueue `{self.name}`.get_and_advance_work_tile: the "
                f"{self.tile_scheduler_config.tile_scheduler_type.value} scheduler hands each "
                "tile over through the queue's pipeline, which this step does not read",
                resource=self.name,
                fix="use fetch_next_tile() in the fetching task and read_next_tile() in the "
                "others (see docs/persistent.rst), or the static scheduler",
            )
        return stage_info.work_tile

    @producer_work
    def fetch_next_tile(self, stage_info: Any) -> None:
        """Claim the next tile (one warp) and publish it in the acquired stage.

        Atomic scheduler: the fetching task's own loop continues with the claimed tile
        (producer work has no task-local outputs; the tile source remembers the index). CLC:
        the request's answer completes the stage's full barrier later, and the fetching task
        reads it like every other task (``read_next_tile``). On a static queue it does
        nothing, as :meth:`fetch_work_tile` does.
        """
        if not self.tile_scheduler_config.is_dynamic:
            return
        self._dynamic("fetch_next_tile").fetch(stage_info.stage_idx, stage_info.barrier)

    @producer_work
    def fetch_work_tile(self, stage_info: Any) -> None:
        """The reference's name of :meth:`fetch_next_tile` (the same request).

        On a static queue it does nothing: every CTA computes its own tiles, so there is no
        request to make, and a program written for either scheduler (the fetching task's
        ``acquire(); fetch_work_tile(); commit()`` kept with the static one) runs unchanged.
        The brackets around it carry no barrier there, as the static queue's others do not.
        """
        if not self.tile_scheduler_config.is_dynamic:
            return
        self._dynamic("fetch_work_tile").fetch(stage_info.stage_idx, stage_info.barrier)

    @consumer_work(work_attrs=WorkAttr.AUXILIARY, returns=last_tile)
    def is_last_tile(self, stage_info: Any) -> Any:
        """Static schedulers: whether the work tile is the CTA's last."""
        peek = stage_info.peek_work_tile
        if peek is None:
            raise RuntimeConfigError(
                f"{self.name}.is_last_tile(): the "
                f"{self.tile_scheduler_config.tile_scheduler_type.value} scheduler fetches the "
                "next tile at run time, so no tile is known to be the last one in advance",
                resource=self.name,
                fix="use the static scheduler (create_static_persistent_tile_scheduler_params), "
                "and call it inside the work-tile loop",
            )
        from ts_codegen import dsl

        return dsl.logical_not(peek().is_valid_tile)

    @consumer_work(returns=next_tile)
    def read_next_tile(self, stage_info: Any) -> Any:
        """The tile index published in the waited stage."""
        return self._dynamic("read_next_tile").read(stage_info.stage_idx)

    @consumer_work(returns=work_tile)
    def read_next_work_tile(self, stage_info: Any) -> Any:
        """The waited stage's tile as a ``WorkTileInfo`` (``tile_idx``, ``is_valid_tile``).

        What a dynamic queue's ``get_and_advance_work_tile`` is recorded as: the same read of
        the waited stage as :meth:`read_next_tile` (the loop moves to that tile), returning
        the tile where ``read_next_tile`` returns its index, as the reference's step does.
        """
        return self._dynamic("get_and_advance_work_tile").read_tile(stage_info.stage_idx)

    def _dynamic(self, what: str) -> Any:
        source = self.ts_tile_source()
        if not hasattr(source, "fetch"):
            raise RuntimeConfigError(
                f"WorkQueue `{self.name}`.{what}: the "
                f"{self.tile_scheduler_config.tile_scheduler_type.value} scheduler hands no "
                "tile over through a pipeline (every CTA computes its own tiles), so there is "
                "no answer to read",
                resource=self.name,
                fix=f"remove the {what}() step (get_and_advance_work_tile() gives the current "
                "tile), or use a dynamic scheduler (atomic or CLC)",
            )
        return source


def _pipeline_kind(config: Any) -> str:
    """The pipeline type of a ``PipelineConfig`` / ``PipelineSpec`` by name ("none" without)."""
    if config is None:
        return "none"
    kind = getattr(config, "pipeline_type", None) or getattr(config, "type", None)
    return str(getattr(kind, "value", kind))
