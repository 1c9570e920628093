"""The Hopper GEMM's epilogue views of one configuration, traced on the CPU (sizes only)."""

from __future__ import annotations

from typing import Any

import cutlass.cute as cute
from cutlass.memory import SmemAllocator


def epilogue_view_sizes(cfg: Any, steps: Any) -> dict[str, int]:
    """Trace ``steps.make_epilogue_views`` for ``cfg`` (``steps``: ``_gemm_steps``) and give
    the sizes of its views: the accumulator it reads (``acc``), one sub-tile's registers
    (``frag``, and ``frag_m``, their row mode) and the ``stmatrix`` retile of the
    accumulator (``retiled``)."""
    seen: dict[str, int] = {}

    @cute.jit
    def trace() -> None:
        tiled_mma = steps.make_tiled_mma(cfg)
        c_layout = steps.make_smem_layouts(cfg)[2]
        s_c = SmemAllocator().allocate_tensor(
            cfg.out_element, c_layout.outer, 1024, swizzle=c_layout.inner
        )
        acc = steps.make_accumulator(cfg, tiled_mma, 0)
        views = steps.make_epilogue_views(cfg, tiled_mma, acc, s_c, 0)
        seen["acc"], seen["frag"] = cute.size(views.acc), cute.size(views.frag)
        seen["frag_m"] = cute.size(views.frag, mode=[1])
        seen["retiled"] = cute.size(views.r2s.retile(acc))

    cute.compile(trace)
    return seen
