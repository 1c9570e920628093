"""Catalog entries of the pipeline-group checks (``TS-V240``, ``TS-V241``).

The examples merge two rings of the copy kernel's kind (``ring_a``, ``ring_b``, filled by two
loaders) into one storer through a ``PipelineGroup``.
"""

from __future__ import annotations

from functools import partial

from ts_ir import CatalogEntry, entry_from_text

__all__ = ["GROUP_ENTRIES"]

_entry = partial(entry_from_text, "ts-verify")


def _merge(stages_b: int, release: str) -> str:
    return f"""\
from ts_ir import PipelineGroupMode
from ts_trace import PipelineGroup

ring_a = Ring(name="ring_a", pipeline_config=PipelineSpec(
    PipelineType.AsyncAsync, 2, 0, group, group))
ring_b = Ring(name="ring_b", pipeline_config=PipelineSpec(
    PipelineType.AsyncAsync, {stages_b}, 0, group, group))
ab = PipelineGroup(name="ab", members=[ring_a, ring_b], mode=PipelineGroupMode.Merge)


@schedule
def store_both(ab, dst):
    with domain_loop(8):
        ab.ring_a.wait()
        ab.ring_b.wait()
        ab.ring_a.read()
        dst.store()
        {release}


plan = build_plan(
    [TaskDeclaration([src], [ring_a], 0, 4, load_task(src, ring_a), name="load_a"),
     TaskDeclaration([src], [ring_b], 4, 4, load_task(src, ring_b), name="load_b"),
     TaskDeclaration([ring_a, ring_b], [dst], 8, 4, store_both(ab, dst), name="storer")],
    {{ring_a: [src], ring_b: [src], dst: [ring_a, ring_b]}})"""


GROUP_ENTRIES: tuple[CatalogEntry, ...] = (
    _entry(
        "TS-V240",
        "pipeline group declared wrong",
        "group pipelined resources with equal stage counts whose collapsed side is one task "
        "of one arrival kind",
        """
        A `PipelineGroup` makes its members share one side's barrier: a Merge's consumer frees
        every member with one release, a Fork's producer publishes every member with one
        commit. Stage `i` of that barrier is every member's stage `i`, so the members need the
        same number of stages; the collapsed side must be one task, since one arrival count
        covers it, and one kind (all UMMA commits or all thread arrivals). Each member must be
        a pipelined resource of the kernel.
        """,
        _merge(3, "ab.release()"),
        _merge(2, "ab.release()"),
    ),
    _entry(
        "TS-V241",
        "collapsed group operation misplaced",
        "write the collapsed operation once, on the group (`group.release()` in a Merge, "
        "`group.commit()` in a Fork), and every other operation on a member",
        """
        In a Merge the consumer's release is collapsed: one `group.release()` frees the stage
        of every member, and a member's own release would free it a second time. In a Fork the
        producer's commit is collapsed (`group.commit()`), and a FusedMerge also collapses the
        consumer's wait. The group itself runs only those operations; everything else
        (acquire, wait, work) is written on a member, `group.member.op()`.
        """,
        _merge(2, "ab.ring_a.release()\n        ab.ring_b.release()"),
        _merge(2, "ab.release()"),
    ),
)
"""The entries of the pipeline-group codes, sorted by code."""
