"""Persistent tile rasters for work queues and hand-written twins (re-exported from ts_codegen).

``TileRaster`` is what a host launcher builds from the tile grid (``get_grid_shape(ctas)``
gives the persistent grid) and passes to the kernel; ``PersistentTiles`` walks it in the
kernel (``create(params)``, ``tile()``, ``advance()``, ``at(index)``), one ``WorkTile`` at a
time. The work queues of ``task_scheduling.resources`` use the same raster::

    from task_scheduling.tiles import PersistentTiles, TileRaster

Not imported by ``task_scheduling/__init__``: it belongs to the code generator (CuTe DSL).
"""

from ts_codegen import PersistentTiles, TileRaster, WorkTile

__all__ = ["PersistentTiles", "TileRaster", "WorkTile"]
