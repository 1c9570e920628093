"""Catalog entries of the Blackwell protocol checks (cluster launch control: ``TS-V22x``).

The CLC examples run a CLC work queue: ``sched`` (one warp) asks for the next tile once per tile
and, like ``worker`` (four warps), reads every answer.
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
)
