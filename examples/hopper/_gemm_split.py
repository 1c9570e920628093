"""The Hopper GEMM's split-K step (``GemmConfig.split_k``), for the hand-written twin.

A work item ``(m, n, chunk)`` holds the partial sum of tile ``(m, n)`` over its chunk of K
blocks. ``split_reduce`` writes it to a global fp32 workspace, counts the item at its tile, and
in the tile's last item sums every chunk's partial in chunk order. The TS kernel's side is
``ts_runtime.blocks.WgmmaAccumulator(split=SplitK(...))``. See ``docs/gemm.rst``.
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
from _gemm_steps import value_chunks
from cutlass.base_dsl.ast_helpers import range_constexpr
from cutlass.cutlass_dsl import Constexpr


@cute.jit
def split_reduce(
    acc: Any,
    workspace: Any,
    counters: Any,
    flag: Any,
    bar: Any,
    tile: Any,
    chunk: Any,
    chunks: Constexpr[int],
    tidx: Any,
    threads: Constexpr[int],
    in_grid: Any,
) -> Any:
    """Consumers: hand this item's partial tile over; True in the tile's last item.

    Each thread stores its accumulator values to ``workspace[tile][chunk][value][thread]``
    (a warp's stores contiguous), fences them for the GPU, and meets the others at ``bar``;
    thread 0 adds the item to ``counters[tile]`` and publishes in ``flag`` (SMEM) whether it
    was the ``chunks``-th (then it also zeroes the counter for the next launch). In that last
    item every thread reads the ``chunks`` partials back in chunk order and sums them into
    ``acc``: the order does not depend on which item comes last. A tile past the problem's tile
    grid (``in_grid`` False: the scheduler's swizzle padding) has no slot: it does nothing.
    """
    n = cute.size(acc)
    per_chunk = n * threads
    last = cutlass.Boolean(False)
    if in_grid:
        base = (tile * chunks + chunk) * per_chunk + tidx
        for lo, hi in value_chunks(n):
            for i in range_constexpr(lo, hi):
                workspace[base + i * threads] = acc[i]
        cute.arch.fence_acq_rel_gpu()  # the partial is visible before the count says so
        bar.arrive_and_wait()
        if tidx == 0:
            ctr = counters.iterator + tile
            seen = cute.arch.atomic_add(ctr, cutlass.Int32(1), sem="acq_rel", scope="gpu")
            done = cutlass.Int32(seen) == chunks - 1
            flag[0] = cutlass.Int32(done)
            if done:
                cute.arch.atomic_exch(ctr, cutlass.Int32(0), sem="relaxed", scope="gpu")
        bar.arrive_and_wait()
        last = flag[0] != 0
    if last:
        cute.arch.fence_acq_rel_gpu()  # see the other items' partials
        first = tile * chunks * per_chunk + tidx
        for lo, hi in value_chunks(n):
            for i in range_constexpr(lo, hi):
                acc[i] = workspace[first + i * threads]
        for c in range_constexpr(1, chunks):
            for lo, hi in value_chunks(n):
                for i in range_constexpr(lo, hi):
                    acc[i] = acc[i] + workspace[first + c * per_chunk + i * threads]
    return last
