"""ts-codegen: lower TS kernel plans to CuTe DSL inside the user's ``@cute.kernel``.

Call :func:`emit_tasks` from the kernel body: it creates the pipelines, dispatches warps to
tasks, applies ``setmaxnreg`` and lowers each task's traced schedule. :mod:`ts_codegen.ptx`
counts PTX instructions for the "same code as by hand" checks.
"""

from ts_codegen.__about__ import __version__
from ts_codegen.dsl.tiles import PersistentTiles, TileRaster, WorkTile
from ts_codegen.kernel import emit_tasks, resources_by_name
from ts_codegen.lower import LoweringError, TaskLowering, lower_task
from ts_codegen.ptx import count_instructions, diff_counts, opcode_counts
from ts_codegen.work_queues import AtomicTiles, ClcTiles, StaticTiles, TileSource

__all__ = [
    "AtomicTiles",
    "ClcTiles",
    "LoweringError",
    "PersistentTiles",
    "StaticTiles",
    "TaskLowering",
    "TileRaster",
    "TileSource",
    "WorkTile",
    "__version__",
    "count_instructions",
    "diff_counts",
    "emit_tasks",
    "lower_task",
    "opcode_counts",
    "resources_by_name",
]
