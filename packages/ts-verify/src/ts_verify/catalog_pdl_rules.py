"""Catalog entries of the programmatic-dependent-launch checks (``TS-V230``, ``TS-V231``).

The examples declare a grid-dependency wait and trigger the way ``PdlWaitBarrier`` /
``PdlLaunchBarrier`` do: barrier resources whose work is marked ``WorkAttr.GRID_WAIT`` /
``WorkAttr.GRID_LAUNCH``.
"""

from __future__ import annotations

from functools import partial

from ts_ir import CatalogEntry, entry_from_text

__all__ = ["PDL_ENTRIES"]

_entry = partial(entry_from_text, "ts-verify")

_BARRIERS = '''
@dataclasses.dataclass(kw_only=True)
class GridWait(MemoryResource):
    @consumer_work(work_attrs=WorkAttr.GRID_WAIT)
    def wait_griddep(self, stage_info: Any) -> None:
        """griddepcontrol.wait"""


@dataclasses.dataclass(kw_only=True)
class GridLaunch(MemoryResource):
    @producer_work(work_attrs=WorkAttr.GRID_LAUNCH)
    def launch_griddep(self, stage_info: Any) -> None:
        """griddepcontrol.launch_dependents"""


pdl_wait = GridWait(name="pdl_wait", is_barrier=True)
pdl_launch = GridLaunch(name="pdl_launch", is_barrier=True)
'''


def _with_barriers(loader_body: str, graph: str) -> str:
    return (
        _BARRIERS
        + f"""

@schedule
def load_task(src, ring, pdl_wait):
{loader_body}


plan = build_plan(
    [TaskDeclaration([src, pdl_wait], [ring], 0, 4, load_task(src, ring, pdl_wait),
                     name="loader"),
     TaskDeclaration([ring], [dst], 4, 4, store_task(ring, dst), name="storer")],
    {graph})
"""
    ).strip("\n")


_LOOP = """\
        coord = src.tile_coord()
        ring.acquire()
        ring.load(coord=coord)
        ring.commit()"""

PDL_ENTRIES: tuple[CatalogEntry, ...] = (
    _entry(
        "TS-V230",
        "read before the grid dependency wait",
        "call the wait (e.g. `pdl_wait.wait_griddep()`) at the top of the task's schedule, "
        "before its first read of the previous kernel's output",
        """
        Launched with programmatic dependent launch (PDL), a kernel may start while the
        previous kernel on the stream still runs, and only `griddepcontrol.wait` (work marked
        `WorkAttr.GRID_WAIT`, such as `PdlWaitBarrier.wait_griddep`) makes that kernel's
        writes visible. A resource that lists the wait resource among its upstreams is made,
        after the wait, from its other upstreams, so in each task that produces it the wait
        must run before every payload work call on it and on those upstreams, on every path
        (not in a loop that may not run, not under a condition). A read before it may see
        data the previous kernel has not written yet.
        """,
        _with_barriers(
            "    with domain_loop(8):\n" + _LOOP + "\n    pdl_wait.wait_griddep()",
            "{ring: [src, pdl_wait], dst: [ring]}",
        ),
        _with_barriers(
            "    pdl_wait.wait_griddep()\n    with domain_loop(8):\n" + _LOOP,
            "{ring: [src, pdl_wait], dst: [ring]}",
        ),
    ),
    _entry(
        "TS-V231",
        "launch trigger not once per CTA",
        "trigger once, at the top level of the schedule, after the work the next kernel need "
        "not wait for",
        """
        `griddepcontrol.launch_dependents` (work marked `WorkAttr.GRID_LAUNCH`, such as
        `PdlLaunchBarrier.launch_griddep`) lets the next kernel start launching once every CTA
        has triggered or exited. It takes effect the first time a CTA runs it, so inside a
        loop it fires after the first iteration, and a second trigger does nothing. It never
        changes results (the next kernel still waits for this one with its grid wait), so
        this is a warning about lost overlap, not an error.
        """,
        """
        @dataclasses.dataclass(kw_only=True)
        class GridLaunch(MemoryResource):
            @producer_work(work_attrs=WorkAttr.GRID_LAUNCH)
            def launch_griddep(self, stage_info: Any) -> None:
                \"\"\"griddepcontrol.launch_dependents\"\"\"


        pdl_launch = GridLaunch(name="pdl_launch", is_barrier=True)


        @schedule
        def store_task(ring, dst, pdl_launch):
            with domain_loop(8):
                ring.wait()
                ring.read()
                dst.store()
                ring.release()
                pdl_launch.launch_griddep()


        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst, pdl_launch], 4, 4,
                             store_task(ring, dst, pdl_launch), name="storer")],
            {ring: [src], dst: [ring], pdl_launch: []})
        """,
        """
        @dataclasses.dataclass(kw_only=True)
        class GridLaunch(MemoryResource):
            @producer_work(work_attrs=WorkAttr.GRID_LAUNCH)
            def launch_griddep(self, stage_info: Any) -> None:
                \"\"\"griddepcontrol.launch_dependents\"\"\"


        pdl_launch = GridLaunch(name="pdl_launch", is_barrier=True)


        @schedule
        def store_task(ring, dst, pdl_launch):
            with domain_loop(8):
                ring.wait()
                ring.read()
                dst.store()
                ring.release()
            pdl_launch.launch_griddep()


        plan = build_plan(
            [TaskDeclaration([src], [ring], 0, 4, load_task(src, ring), name="loader"),
             TaskDeclaration([ring], [dst, pdl_launch], 4, 4,
                             store_task(ring, dst, pdl_launch), name="storer")],
            {ring: [src], dst: [ring], pdl_launch: []})
        """,
    ),
)
"""The entries of the PDL codes, sorted by code."""
