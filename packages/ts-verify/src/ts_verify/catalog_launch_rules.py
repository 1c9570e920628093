"""Catalog entries of the checks on where tasks run and which tiles they read (``TS-V25x``).

Both rules concern facts the runtime records in the plan from Python objects the schedules do
not show: a task's CTA gate (``run_only_on_cta_id``, :attr:`ts_ir.TaskSpec.cta_rank`) and a work
queue's scheduler (:attr:`ts_ir.ResourceSpec.scheduler`).
"""

from __future__ import annotations

from functools import partial

from ts_ir import CatalogEntry, entry_from_text

__all__ = ["LAUNCH_ENTRIES"]

_entry = partial(entry_from_text, "ts-verify")


def _gated(storer_gate: str) -> str:
    return f"""\
plan = build_plan(
    [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader",
                     run_only_on_cta_id=0),
     TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer"{storer_gate})],
    {{ring: [src], dst: [ring]}})"""


def _queue(scheduler: str) -> str:
    return f"""\
from ts_ir import TileSchedulerType


@dataclasses.dataclass(kw_only=True)
class Queue(Tiles):
    tile_scheduler_config: Any = TileSchedulerType.{scheduler}

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def get_and_advance_work_tile(self, stage_info): ...


@schedule
def load_task(tiles, src, ring):
    with work_tile_loop(tiles):
        tiles.get_and_advance_work_tile()
        with domain_loop(Gemm.k_blocks):
            coord = src.tile_coord()
            ring.acquire()
            ring.load(coord=coord)
            ring.commit()


@schedule
def store_task(tiles, ring, dst):
    with work_tile_loop(tiles):
        tiles.get_and_advance_work_tile()
        with domain_loop(Gemm.k_blocks):
            ring.wait()
            ring.read()
            dst.store()
            ring.release()


tiles = Queue(name="tiles")
plan = build_plan(
    [TaskDeclaration([tiles, src], [ring], 0, 4, load_task(tiles, src, ring)),
     TaskDeclaration([tiles, ring], [dst], 4, 4, store_task(tiles, ring, dst))],
    {{ring: [src], dst: [ring]}})"""


LAUNCH_ENTRIES: tuple[CatalogEntry, ...] = (
    _entry(
        "TS-V250",
        "ring shared across CTA gates",
        "gate every task of a ring to the same CTA rank (run_only_on_cta_id), or none of them",
        """
        A task with `run_only_on_cta_id` runs on one CTA of each cluster, and the plan is
        verified per CTA. When every task on a ring is gated to the same rank, that CTA runs
        the verified protocol and the others never touch the ring. A ring between a gated task
        and an ungated (or otherwise gated) one has only one side in the other CTAs, which
        waits forever.
        """,
        _gated(""),
        _gated(",\n                     run_only_on_cta_id=0"),
    ),
    _entry(
        "TS-V251",
        "static queue step on a dynamic queue",
        "read a dynamic queue's tiles with fetch_next_tile() and read_next_tile(), or use the "
        "static scheduler",
        """
        `get_and_advance_work_tile()` returns the current tile of a statically scheduled queue,
        where every task computes the same tile sequence by itself. A dynamic scheduler claims
        each tile at run time and hands it to the other tasks through the queue's pipeline;
        the static step reads none of that, so the tasks would disagree on their tiles. The
        fetching task calls `fetch_next_tile()`, the others `read_next_tile()`.
        """,
        _queue("AtomicDynamicPersistent"),
        _queue("StaticPersistent"),
    ),
)
"""The entries of ``TS-V250`` and ``TS-V251``."""
