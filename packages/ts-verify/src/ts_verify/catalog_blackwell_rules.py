"""Catalog entries of the Blackwell protocol checks (``TS-V220`` to ``TS-V224``).

The cluster-launch-control examples run a CLC work queue: ``sched`` (one warp) asks for the
next tile once per tile and, like ``worker`` (four warps), reads every answer. The TMEM
lifetime examples put the copy kernel's output ``dst`` in tensor memory: the loader allocates
TMEM before its loop, the storer's ``dst.store`` reads it, and the storer frees it at the end.
"""

from __future__ import annotations

from functools import partial

from ts_ir import CatalogEntry, entry_from_text

__all__ = ["BLACKWELL_ENTRIES"]

_entry = partial(entry_from_text, "ts-verify")


def _clc(sched_body: str, worker_body: str, consumers: int) -> str:
    return f"""\
@dataclasses.dataclass(kw_only=True)
class ClcTiles(Tiles):
    @producer_work
    def fetch(self, stage_info: Any) -> None:
        \"\"\"clusterlaunchcontrol.try_cancel into the acquired stage.\"\"\"


tiles = ClcTiles(name="tiles", pipeline_config=PipelineSpec(
    PipelineType.ClcFetchAsync, 2, 16, CooperativeGroupSpec("thread", 1),
    CooperativeGroupSpec("thread", {consumers})))


@schedule
def sched(tiles):
{sched_body}


@schedule
def worker(tiles, src):
    with work_tile_loop(tiles):
{worker_body}


plan = build_plan(
    [TaskDeclaration([tiles, src], [], 0, 4, worker(tiles, src), name="worker"),
     TaskDeclaration([tiles], [tiles], 4, 1, sched(tiles), name="sched")],
    {{src: [tiles]}})"""


_FETCH = """\
        tiles.acquire()
        tiles.fetch()
        tiles.commit()"""
_READ = """\
        tiles.wait()
        tiles.next_tile()
        tiles.release()"""
_PREFETCH = "\n".join(line[4:] for line in _FETCH.splitlines())
_SCHED = f"    with work_tile_loop(tiles):\n{_FETCH}\n{_READ}"
_WORK = "        src.tile_coord()"


def _tmem(loader_tail: str, storer_tail: str) -> str:
    return f"""\
from ts_ir import TmemAllocationSpec


@dataclasses.dataclass(kw_only=True)
class Tmem(MemoryResource):
    @consumer_work(work_attrs=WorkAttr.TMEM_ALLOC)
    def allocate(self, stage_info: Any) -> None:
        \"\"\"tcgen05.alloc, then relinquish the allocation permit.\"\"\"

    @consumer_work(work_attrs=WorkAttr.TMEM_DEALLOC)
    def free(self, stage_info: Any) -> None:
        \"\"\"tcgen05.dealloc.\"\"\"


tmem = Tmem(name="tmem")


@schedule
def loader(tmem, src, ring):
    tmem.allocate()
    with domain_loop(8):
        coord = src.tile_coord()
        ring.acquire()
        ring.load(coord=coord)
        ring.commit()
{loader_tail}

@schedule
def storer(tmem, ring, dst):
    with domain_loop(8):
        ring.wait()
        ring.read()
        dst.store()
        ring.release()
{storer_tail}

plan = build_plan(
    [TaskDeclaration([src, tmem], [ring], 0, 4, loader(tmem, src, ring), name="loader"),
     TaskDeclaration([ring, tmem], [dst], 4, 4, storer(tmem, ring, dst), name="storer")],
    {{ring: [src], dst: [ring]}})
plan = dataclasses.replace(plan, tmem=(TmemAllocationSpec("acc", 256, 0, "dst"),))"""


_FREE = "    tmem.free()\n"

BLACKWELL_ENTRIES: tuple[CatalogEntry, ...] = (
    _entry(
        "TS-V220",
        "CLC answer not read by a task of the loop",
        "read the CLC queue once per tile in every task of its work_tile_loop (wait, read, "
        "release), the fetching task too",
        """
        With cluster launch control the next tile exists only in the answer of the fetching
        task's request, in the queue's `ClcFetchAsync` ring. A task that iterates the queue
        without reading the answer once per tile cannot know its next tile, and its loop does
        not end with the others' at the answer that says no work is left. The fetching task
        reads it too: unlike a global counter, the request returns nothing to the warp that
        issued it.
        """,
        _clc(_SCHED, _WORK, 32),
        _clc(_SCHED, f"{_WORK}\n{_READ}", 160),
    ),
    _entry(
        "TS-V221",
        "CLC request not once per tile before its answer",
        "issue the CLC request (acquire, fetch, commit) once per tile, directly in the loop "
        "body, before reading that tile's answer",
        """
        A CLC request (`clusterlaunchcontrol.try_cancel`) must be answered before the next one
        is issued. A request ahead of its tile, such as a prefetch before the loop, is still
        in flight when an answer that found no work ends the loop. Issued after that failed
        answer, it is undefined behaviour; if it succeeds, it cancels a cluster whose tile
        then nobody runs.
        """,
        _clc(f"{_PREFETCH}\n    with work_tile_loop(tiles):\n{_READ}\n{_FETCH}", _READ, 160),
        _clc(_SCHED, _READ, 160),
    ),
    _entry(
        "TS-V222",
        "TMEM not freed on every path",
        "free TMEM once after the kernel's last use, outside any condition: in the allocating "
        "block, or at the top level of the last user's schedule",
        """
        TMEM is allocated per CTA with `tcgen05.alloc` (the `WorkAttr.TMEM_ALLOC` work) and
        stays allocated until `tcgen05.dealloc` (`WorkAttr.TMEM_DEALLOC`). A CTA that exits
        without freeing it, because no task frees it or because the free sits under a
        condition, keeps its columns: the next CTA on the SM waits in `tcgen05.alloc` for
        ever.
        """,
        _tmem("", ""),
        _tmem("", _FREE),
    ),
    _entry(
        "TS-V223",
        "TMEM used after its free",
        "move the TMEM_DEALLOC work after the task's last TMEM use (after its loops)",
        """
        After `tcgen05.dealloc` the columns belong to whichever CTA allocates them next. A task
        that reads or writes TMEM after its own free, later in its schedule or in the next
        iteration of a loop that frees without allocating again, works on another CTA's
        accumulators.
        """,
        _tmem("", f"{_FREE}    dst.store()\n"),
        _tmem("", _FREE),
    ),
    _entry(
        "TS-V224",
        "TMEM freed before its last use",
        "free TMEM in the last user's task, or after a barrier that the last user signals when "
        "it is done",
        """
        The free must happen after every other task's last use of TMEM, such as the MMA that
        writes the accumulator or the epilogue's `tcgen05.ld`, and every use after the
        allocation. The verifier runs the whole kernel and orders uses by program order and
        barrier phases only. A free that nothing orders after the epilogue's last read gives
        its columns away while they are read; a use that nothing orders after the allocation
        reads an address not yet written. The kernel's TMEM is one allocation at a time (one
        SMEM word holds its address), so with several allocations and frees each use must lie
        in the lifetime that contains it, and two allocations (two frees) with no free (no
        allocation) ordered between them are reported too: the first allocation would never
        be freed (the same columns freed twice). A CTA allocates once: the alloc relinquishes
        its allocation permit, after which tcgen05.alloc is illegal (PTX ISA).
        """,
        _tmem(_FREE, ""),
        _tmem("", _FREE),
    ),
)
