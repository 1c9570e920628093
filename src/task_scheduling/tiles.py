"""Persistent tile rasters for work queues and hand-written twins (re-exported from ts_codegen).

``TileRaster`` is what a host launcher builds from the tile grid (``get_grid_shape(ctas)``
gives the persistent grid) and passes to the kernel; ``PersistentTiles`` walks it in the
kernel (``create(params)``, ``tile()``, ``advance()``, ``at(index)``), one ``WorkTile`` at a
time. The work queues of ``task_scheduling.resources`` use the same raster::

    from task_scheduling.tiles import PersistentTiles, TileRaster

Not imported by ``task_scheduling/__init__``: it belongs to the code generator (CuTe DSL).
The raster's plain arithmetic (Python integers on the host, tests) is here too:
``raster_shape`` and the tail split's ``tail_split_shape`` / ``tail_split_item`` /
``tail_split_parts``, and stream-K's ``stream_k_shape`` / ``stream_k_piece``
(:mod:`ts_codegen.tiles_raster`).
"""

from ts_codegen import PersistentTiles, TileRaster, WorkTile
from ts_codegen.tiles_raster import (
    StreamPiece,
    raster_shape,
    stream_k_piece,
    stream_k_shape,
    tail_split_item,
    tail_split_parts,
    tail_split_shape,
)

__all__ = [
    "PersistentTiles",
    "StreamPiece",
    "TileRaster",
    "WorkTile",
    "raster_shape",
    "stream_k_piece",
    "stream_k_shape",
    "tail_split_item",
    "tail_split_parts",
    "tail_split_shape",
]
