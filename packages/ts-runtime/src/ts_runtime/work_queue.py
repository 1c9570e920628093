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

CLC (Blackwell's hardware scheduler) is rejected on Hopper targets with
:class:`~ts_runtime.UnsupportedOnTarget`.

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
        tile_scheduler_params: Any, response_ptr: Any
    ) -> TileSchedulerConfig:
        """A CLC (cluster launch control) dynamic schedule: Blackwell only.

        Raises:
            UnsupportedOnTarget: On Hopper (and older) targets.
        """
        target = current_target()
        if not is_blackwell_or_later(target):
            raise UnsupportedOnTarget(
                "TileSchedulerConfig.create_clc_dynamic_persistent_tile_scheduler_params: CLC "
                f"(clusterlaunchcontrol.try_cancel) needs Blackwell (sm_100a), but the target is "
                f"{target}",
                pipeline_type="ClcFetchAsync",
                target=target,
                fix="on Hopper use create_atomic_dynamic_persistent_tile_scheduler_params"
                "(params, counters) (a global atomic tile counter) or the static scheduler",
            )
        raise UnsupportedOnTarget(
            "the CLC dynamic scheduler is not lowered yet",
            pipeline_type="ClcFetchAsync",
            target=target,
            fix="use create_atomic_dynamic_persistent_tile_scheduler_params",
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
        """The launch grid: one CTA (cluster) per tile, at most ``max_active_clusters``."""
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
        acquired stage; the fetching task continues with it.
        ``read_next_tile`` (consumer): reads the index of the waited stage into ``next_tile``.
    """

    is_work_queue = True

    # Positional (kw_only=False) so that ``WorkQueue(cfg, name=...)`` works, also for
    # dataclass subclasses that add fields (e.g. what a skip predicate reads).
    tile_scheduler_config: Any = dataclasses.field(default=None, kw_only=False)
    next_tile: TaskLocalVariable = TaskLocalVariable.uninitialized()
    work_tile: TaskLocalVariable = TaskLocalVariable.uninitialized()

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
        self.next_tile = TaskLocalVariable(dtype="Int32", default=0)
        self.work_tile = TaskLocalVariable(dtype="WorkTileInfo", default=None)
        self._source: Any = None

    def ts_tile_source(self) -> Any:
        """The lowering's view of the queue (one per kernel trace)."""
        if self._source is None:
            import ts_codegen

            cfg = self.tile_scheduler_config
            if cfg.tile_scheduler_type is TileSchedulerType.AtomicDynamicPersistent:
                self._source = ts_codegen.AtomicTiles(cfg.tile_scheduler_params, cfg.counters)
            else:
                self._source = ts_codegen.StaticTiles(cfg.tile_scheduler_params)
        return self._source

    @consumer_work(work_attrs=WorkAttr.AUXILIARY, returns=work_tile)
    def get_and_advance_work_tile(self, stage_info: Any) -> Any:
        """The current work tile; the queue moves on to the next tile when the tile's body ends.

        The reference's spelling of the per-tile queue step (``wq.wait();
        wq.get_and_advance_work_tile(); wq.release()``). With the static scheduler the queue has
        no pipeline: the brackets around it are bookkeeping and TS records none of them.
        A dynamic queue hands tiles over through its pipeline instead, with
        ``fetch_next_tile`` / ``read_next_tile``; returning the current tile there would
        silently skip that hand-over, so it is refused.
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

        The fetching task's own loop continues with the claimed tile (producer work has no
        task-local outputs; the tile source remembers the index).
        """
        self._dynamic("fetch_next_tile").fetch(stage_info.stage_idx)

    @consumer_work(returns=next_tile)
    def read_next_tile(self, stage_info: Any) -> Any:
        """The tile index published in the waited stage."""
        return self._dynamic("read_next_tile").read(stage_info.stage_idx)

    def _dynamic(self, what: str) -> Any:
        source = self.ts_tile_source()
        if not hasattr(source, "fetch"):
            raise RuntimeConfigError(
                f"WorkQueue `{self.name}`.{what}: the "
                f"{self.tile_scheduler_config.tile_scheduler_type.value} scheduler hands tiles "
                "out without fetching",
                resource=self.name,
                fix=f"remove the {what}() step, or use the atomic dynamic scheduler",
            )
        return source
