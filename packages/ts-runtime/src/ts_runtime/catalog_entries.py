"""The ts-runtime part of the error catalog: every ``TS-Rxxx`` code, explained with an example.

:mod:`ts_runtime.errors` registers :data:`RUNTIME_ENTRIES` in the :mod:`ts_ir.catalog`
registry; every runtime error carries one of these codes and ends with ``see: ts explain <CODE>``.
"""

from __future__ import annotations

from functools import partial

from ts_ir import CatalogEntry, entry_from_text

__all__ = ["RUNTIME_ENTRIES"]

_entry = partial(entry_from_text, "ts-runtime")

RUNTIME_ENTRIES: tuple[CatalogEntry, ...] = (
    _entry(
        "TS-R001",
        "option not supported yet",
        "leave the option at its default, or use a feature that is lowered today",
        """
        The runtime accepts every documented option of `PipelineConfig`, `Task` and
        `TaskManager` so that kernels move over unchanged, but some are not lowered yet (for
        example a preset `barrier_ptr`, per-warp transaction bytes, or TMEM options). Setting
        one to a non-default value would be silently ignored by the code generator, so it is
        rejected before anything is compiled.
        """,
        """
        cfg = PipelineConfig.create_async_async_pipeline_cfg(
            4, producers, consumers, barrier_ptr=my_barriers)
        """,
        """
        cfg = PipelineConfig.create_async_async_pipeline_cfg(4, producers, consumers)
        """,
    ),
    _entry(
        "TS-R002",
        "pipeline type the target cannot run",
        "use PipelineType.TmaAsync or AsyncAsync on sm_90a; UMMA and CLC pipelines need sm_100a",
        """
        UMMA pipelines (TmaUmma, UmmaAsync, AsyncUmma, UmmaUmma) signal through tcgen05
        commits and CLC pipelines fetch work from the cluster launch controller: Blackwell
        (sm_100a) hardware that Hopper does not have. Compiling such a pipeline for sm_90a
        cannot work, so the factory refuses it (and the verifier, TS-V216, a plan that has one)
        and names what to use on Hopper instead.
        """,
        """
        cfg = PipelineConfig.create_tma_umma_pipeline_cfg(4, 32768, producers, consumers)
        """,
        """
        cfg = PipelineConfig.create_tma_async_pipeline_cfg(4, 32768, producers, consumers)
        """,
    ),
    _entry(
        "TS-R003",
        "cooperative-group size contradicts the tasks",
        "size the group by the threads (or warps) of the tasks that signal",
        """
        A pipeline's producer and consumer groups say how many arrivals complete a barrier
        phase. They must equal what the tasks that commit or release actually signal: all
        threads of a task, one warp, or one elected thread for a TMA producer. Too few arrivals
        hang the kernel, too many let a stage be reused while it is still being read. The
        verifier finds it (TS-V203) before compiling, and the runtime raises it as this error,
        naming the task, the resource and the signal's line.
        """,
        """
        # the store task has 8 warps (256 threads) but the group says 128
        cfg = PipelineConfig.create_tma_async_pipeline_cfg(
            4, 16384, CooperativeGroup(Agent.Thread, 1), CooperativeGroup(Agent.Thread, 128))
        """,
        """
        cfg = PipelineConfig.create_tma_async_pipeline_cfg(
            4, 16384, CooperativeGroup(Agent.Thread, 1), CooperativeGroup(Agent.Thread, 256))
        """,
    ),
    _entry(
        "TS-R004",
        "shared memory over budget",
        "use fewer stages or smaller tiles, or alias regions that are never live together",
        """
        Every resource's SMEM regions plus the mbarriers of every pipeline (16 bytes per stage)
        must fit the per-CTA shared memory, 227 KB on the H200, and so must allocations made on
        the SMEM allocator directly. A kernel over budget fails to launch; the verifier finds it
        (TS-V209) before compiling, and the runtime raises it as this error with the layout.
        """,
        """
        ring = SmemAllocation("ring", size_bytes=8 * 32768)   # 256 KB
        """,
        """
        ring = SmemAllocation("ring", size_bytes=6 * 32768)   # 192 KB
        """,
    ),
    _entry(
        "TS-R005",
        "impossible task declaration",
        "give the task warp_idx >= 0, num_warps >= 1 and num_registers a multiple of 8 in "
        "[24, 256]",
        """
        A task is a contiguous range of warps running one traced schedule, optionally with a
        `setmaxnreg` register budget. The hardware accepts register counts that are multiples
        of 8 between 24 and 256, and a warp range must be non-empty. Impossible values are
        rejected where the task is declared.
        """,
        """
        Task([src], [ring], 0, 4, schedule=load(src, ring), num_registers=20)
        """,
        """
        Task([src], [ring], 0, 4, schedule=load(src, ring), num_registers=40)
        """,
    ),
)
"""The entries of every ``TS-Rxxx`` code, sorted by code."""
