"""The ts-trace part of the error catalog: every ``TS-Txxx`` code, explained with an example.

:mod:`ts_trace.errors` registers :data:`TRACE_ENTRIES` in the :mod:`ts_ir.catalog` registry.
The examples of every layer share :data:`EXAMPLES_PRELUDE` (the resources and schedules of the
copy kernel of "Your first schedule"); verifier examples that do not build a ``plan`` of their
own are checked against the plan that :data:`EXAMPLES_PLAN` builds.
"""

from __future__ import annotations

from ts_ir import CatalogEntry
from ts_trace.catalog_declaration_rules import DECLARATION_ENTRIES
from ts_trace.catalog_schedule_rules import SCHEDULE_ENTRIES

__all__ = ["EXAMPLES_PLAN", "EXAMPLES_PRELUDE", "TRACE_ENTRIES"]

EXAMPLES_PRELUDE = '''\
import dataclasses
from typing import Any, ClassVar

from ts_ir import (CooperativeGroupSpec, DependencyEdge, Every, PipelineSpec, PipelineType,
                   SmemAllocationSpec, WorkAttr)
from ts_trace import (MemoryResource, TaskDeclaration, TaskLocalVariable, build_plan,
                      consumer_work, domain_loop, producer_work, schedule, when_false,
                      when_true, work_tile_loop)


@dataclasses.dataclass(kw_only=True)
class Source(MemoryResource):
    """Global input: the coordinate of the next tile, and whether that tile is valid."""

    coord: TaskLocalVariable = TaskLocalVariable.uninitialized()
    valid: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.coord = TaskLocalVariable(dtype="Int32", default=0)
        self.valid = TaskLocalVariable(dtype="Boolean", default=True)

    @consumer_work(returns=coord)
    def tile_coord(self, stage_info: Any) -> Any: ...

    @consumer_work(returns=(coord, valid))
    def checked_coord(self, stage_info: Any) -> Any: ...


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    """A pipelined shared-memory ring (smem_bytes: all of its stages)."""

    smem_bytes: int = 0

    def get_smem_requirements(self) -> list[Any]:
        if not self.smem_bytes:
            return []
        return [SmemAllocationSpec(f"{self.name}.tiles", self.smem_bytes, 1024, "Float16")]

    @producer_work
    def load(self, stage_info: Any, *, coord: Any = None) -> None:
        """TMA-load tile `coord` into the acquired stage."""

    @consumer_work
    def read(self, stage_info: Any) -> None:
        """Read the waited stage into registers."""

    @consumer_work(work_attrs=WorkAttr.ASYNC_READ)
    def mma(self, stage_info: Any) -> None:
        """Issue WGMMA on the waited stage (it reads the stage until retired)."""

    @consumer_work(work_attrs=WorkAttr.ASYNC_WAIT_ALL)
    def mma_wait(self, stage_info: Any) -> None:
        """wgmma.wait_group 0: retire every WGMMA in flight."""


@dataclasses.dataclass(kw_only=True)
class Sink(MemoryResource):
    """Global output, written through an optional shared-memory staging buffer."""

    smem_bytes: int = 0

    def get_smem_requirements(self) -> list[Any]:
        if not self.smem_bytes:
            return []
        return [SmemAllocationSpec(f"{self.name}.tiles", self.smem_bytes, 1024, "Float16")]

    @producer_work
    def store(self, stage_info: Any) -> None:
        """Write the tile out."""


@dataclasses.dataclass(kw_only=True)
class Tiles(MemoryResource):
    """The persistent work queue."""

    is_work_queue: ClassVar[bool] = True
    tile: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.tile = TaskLocalVariable(dtype="WorkTileInfo", default=None)

    def is_past_end(self, work_tile: Any) -> bool:
        return work_tile is None

    @consumer_work(returns=tile)
    def next_tile(self, stage_info: Any) -> Any: ...


class Gemm:
    """The task class: per-tile loop lengths."""

    def k_blocks(self, work_tile_coord: Any) -> Any: ...


group = CooperativeGroupSpec("thread", 128)  # one 4-warp task on each side
src, dst, tiles = Source(name="src"), Sink(name="dst"), Tiles(name="tiles")
ring = Ring(name="ring", pipeline_config=PipelineSpec(PipelineType.AsyncAsync, 2, 0, group, group))


@schedule
def load_task(src, ring):
    with domain_loop(8):
        coord = src.tile_coord()
        ring.acquire()
        ring.load(coord=coord)
        ring.commit()


@schedule
def store_task(ring, dst):
    with domain_loop(8):
        ring.wait()
        ring.read()
        dst.store()
        ring.release()
'''
"""Resources and schedules that every catalog example starts from (the copy kernel)."""

EXAMPLES_PLAN = """\
plan = build_plan(
    [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
     TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
    {ring: [src], dst: [ring]},
    name="copy")
"""
"""How verifier examples that build no ``plan`` of their own are turned into a kernel plan."""


TRACE_ENTRIES: tuple[CatalogEntry, ...] = tuple(
    sorted((*SCHEDULE_ENTRIES, *DECLARATION_ENTRIES), key=lambda e: e.code)
)
"""The entries of every ``TS-Txxx`` code, sorted by code."""
