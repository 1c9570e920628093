"""The CLC dynamic scheduler's configuration (sm_100a): grid, cluster shape, queue pipeline.

The PTX of a CLC kernel is checked by ``tests/test_blackwell_clc.py`` (a compile for sm_100a
in its own process); these checks need no compile. The target is read from ``CUTE_DSL_ARCH``
when the configuration is built, so each test sets it.
"""

from __future__ import annotations

import types

import pytest

pytest.importorskip("cutlass")

import cutlass.pipeline as cpipe

from ts_codegen import ClcTiles, TileRaster
from ts_ir import TileSchedulerType
from ts_runtime import PipelineConfig, RuntimeConfigError
from ts_runtime.work_queue import TileSchedulerConfig, WorkQueue


@pytest.fixture(autouse=True)
def _blackwell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_100a")


def _threads(n: int) -> object:
    return cpipe.CooperativeGroup(cpipe.Agent.Thread, n)


def _clc_pipeline() -> PipelineConfig:
    return PipelineConfig.create_clc_fetch_async_pipeline_cfg(2, 16, _threads(1), _threads(160))


def test_the_grid_has_one_cta_per_tile_whatever_the_sm_count() -> None:
    # 40 x 3 tiles in 2 batches = 240 tiles: every one gets its CTA (a CTA that finds its
    # cluster cancelled never starts); 132 SMs do not cap the grid as they do a static one.
    raster = TileRaster((40, 3, 2))
    cfg = TileSchedulerConfig.create_clc_dynamic_persistent_tile_scheduler_params(raster)
    assert cfg.tile_scheduler_type is TileSchedulerType.ClcDynamicPersistent
    assert cfg.is_dynamic and cfg.response_ptr is None
    assert tuple(cfg.grid_shape(132)) == (1, 1, 240)
    static = TileSchedulerConfig.create_static_persistent_tile_scheduler_params(raster)
    assert tuple(static.grid_shape(132)) == (1, 1, 132)


def test_cutlass_clc_parameters_are_read() -> None:
    # The fields of CUTLASS's ClcDynamicPersistentTileSchedulerParams (deprecated in 4.8 with a
    # warning, so not built here): a 5 x 4 problem in tiles.
    params = types.SimpleNamespace(
        problem_shape_ntile_mnl=(5, 4, 1),
        cluster_shape_mn=(1, 1),
        swizzle_size=1,
        _raster_along_m=True,
    )
    cfg = TileSchedulerConfig.create_clc_dynamic_persistent_tile_scheduler_params(params, None)
    assert tuple(cfg.grid_shape(1)) == (1, 1, 20)


def test_a_cluster_is_refused_with_the_fix() -> None:
    with pytest.raises(RuntimeConfigError, match=r"single-CTA clusters.*\(2, 1\)") as info:
        TileSchedulerConfig.create_clc_dynamic_persistent_tile_scheduler_params(
            TileRaster((4, 4, 1), (2, 1, 1))
        )
    assert "cluster shape (1, 1, 1)" in info.value.fix
    assert "test_runtime_clc.py" in str(info.value)  # the user's line


def test_the_queue_needs_a_clc_pipeline() -> None:
    cfg = TileSchedulerConfig.create_clc_dynamic_persistent_tile_scheduler_params(
        TileRaster((4, 1, 1))
    )
    thread_ring = PipelineConfig.create_async_async_pipeline_cfg(2, _threads(32), _threads(32))
    with pytest.raises(RuntimeConfigError, match=r"`tiles`.*pipeline is AsyncAsync") as info:
        WorkQueue(cfg, name="tiles", pipeline_config=thread_ring)
    assert info.value.resource == "tiles"
    assert "create_clc_fetch_async_pipeline_cfg" in info.value.fix
    with pytest.raises(RuntimeConfigError, match="pipeline_config is None"):
        WorkQueue(cfg, name="tiles")
    wq = WorkQueue(cfg, name="tiles", pipeline_config=_clc_pipeline())
    source = wq.ts_tile_source()
    assert isinstance(source, ClcTiles)
    assert source.fetched_output == "next_tile" and not source.multicast
