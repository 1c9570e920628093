"""What the pipeline-group GEMM examples share (``fork_gemm.py``, ``merge_gemm.py``).

The GEMM part's configuration (``128 x 128`` tiles, two WGMMA warpgroups, 4-stage operand
rings: ``gemm.py``'s ``GemmConfig``), the whole-tile shape rule, the host-side TMA / scheduler
values both kernels start from, what both TS kernels declare alike (the accumulator and its
TMA-stored epilogue: ``gemm_part``; a consumer's stage index: ``StageIndex``), the twins'
hand-built TMA pipelines, and the host side of the command line (compile-only PTX counts, the
GPU run's timing).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe
from _gemm_config import GEMM_KINDS, GemmConfig, fit_swizzle
from _gemm_steps import (
    chunk_blocks,
    make_scheduler_params,
    make_smem_layouts,
    make_tiled_mma,
    make_tma_atoms,
)

from task_scheduling import consumer_work
from task_scheduling.harness import Case, ExampleCLI, fake_tensor
from task_scheduling.harness import compile_only as compare
from task_scheduling.harness import run_on_gpu as run_kernels
from task_scheduling.kernel import (
    KernelContext,
    RuntimeConfigError,
    TmaEpilogue,
    WgmmaAccumulator,
    tile_queue,
)
from task_scheduling.resources import MemoryResource, TaskLocalVariable, WorkQueue

TILE_MN, STAGES = (128, 128), 4
DTYPES = ("bf16", "fp16")
DEFAULT_MNK = (8192, 8192, 8192)
# What the compile-only check requires in both kernels' PTX: the tensor-core MMA, the TMA
# copies and the mbarrier handshake.
NEEDED = ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.try_wait")


def gemm_config(dtype: str = "bf16", n: int | None = None) -> GemmConfig:
    """The GEMM part: ``128 x 128`` tiles, two consumer warpgroups, 4-stage operand rings.

    With the problem's ``N``, the tile scheduler's swizzle divides its tile-column count
    (``fit_swizzle``): no padded tiles, which the examples' plain stores would not clip.
    """
    cfg = GemmConfig(tile_mn=TILE_MN, dtype=dtype, stages=STAGES)
    return cfg if n is None else fit_swizzle(cfg, n)


def check_shape(example: str, resource: str, mnk: Sequence[int], cfg: GemmConfig) -> None:
    """Whole tiles only: the examples' loads, stores and tile walk are not clipped.

    Raises:
        RuntimeConfigError: A ragged or empty ``M``, ``N`` or ``K``.
    """
    (bm, bn), bk = cfg.tile_mn, cfg.tile_k
    units = dict(zip("MNK", (bm, bn, bk), strict=True))
    bad = [f"{d}={v}" for d, v in zip("MNK", mnk, strict=True) if v <= 0 or v % units[d]]
    if bad:
        raise RuntimeConfigError(
            f"{example}: {', '.join(bad)}: M, N and K must be positive multiples of {bm}, {bn} "
            f"and {bk}",
            resource=resource,
            fix=f"pad the operands to multiples of ({bm}, {bn}, {bk})",
        )


def host_values(cfg: GemmConfig, a: Any, b: Any, c: Any) -> tuple[list[Any], Any, Any, Any]:
    """In a ``@cute.jit`` launcher: ``(atoms, layouts, params, grid)``.

    ``atoms``: ``[atom_a, tA, atom_b, tB, atom_c, tC]`` (TMA loads of ``A`` / ``B``, TMA store
    of ``c``), ``layouts``: the A / B rings' and the epilogue buffers' SMEM layouts, ``params``:
    the persistent tile scheduler over ``c``'s tiles, ``grid``: one CTA per SM.
    """
    layouts = make_smem_layouts(cfg)
    atoms = list(make_tma_atoms(cfg, a, b, c, layouts))
    params = make_scheduler_params(cfg, cute.size(c, mode=[0]), cute.size(c, mode=[1]))
    return atoms, layouts, params, params.get_grid_shape(cfg.max_active_clusters)


def gemm_part(
    k: KernelContext,
    cfg: GemmConfig,
    params: Any,
    t_a: Any,
    atom_c: Any,
    t_c: Any,
    *layouts: Any,
    warpgroup: int = 1,
) -> tuple[Any, WorkQueue, WgmmaAccumulator, TmaEpilogue]:
    """What both TS kernels declare alike: ``(k_tiles, wq, acc, c)``.

    ``k_tiles``: the K blocks of a tile (a kernel value), ``wq``: the static persistent tile
    queue over ``params``, ``acc``: the fp32 accumulator of the WGMMA task whose first
    warpgroup is ``warpgroup``, over the ``A`` / ``B`` stages (``acc.smem_a``, ``acc.smem_b``),
    ``c``: its TMA-stored epilogue (``gemm.py``'s, named barrier 1). The SMEM of ``A``, ``B``
    and the epilogue buffers (``layouts``, in that order) is declared here.
    """
    k_tiles = k.value("k_tiles", lambda: chunk_blocks(cfg, t_a))
    wq = tile_queue(params)
    s_a, s_b, s_c = map(k.smem_tensor, cfg.smem_elements, layouts)
    acc = WgmmaAccumulator(
        name="acc",
        tiled_mma=k.value("tiled_mma", lambda: make_tiled_mma(cfg)),
        tile_mn=cfg.tile_mn,
        smem_a=s_a,
        smem_b=s_b,
        warpgroup=warpgroup,
    )
    c = TmaEpilogue(
        name="c", acc=acc, atom=atom_c, gmem=t_c, smem=s_c, sub_tile=cfg.epi_tile, barrier_id=1
    )
    return k_tiles, wq, acc, c


@dataclasses.dataclass(kw_only=True)
class StageIndex(MemoryResource):
    """A ring's consumer work ``stage``: the waited stage's index, for another resource's work.

    An ``Int32``, which a persistent loop can carry (an SMEM view cannot be): the fork's
    activation hands it to ``D``'s store, the merge's ``B`` ring to the ``A`` ring's MMAs. Put
    it first among the bases (its ``__post_init__`` runs the others').
    """

    index: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        base = getattr(super(), "__post_init__", None)
        if base is not None:
            base()
        self.index = TaskLocalVariable(dtype="Int32", default=0)

    @consumer_work(returns=index)
    def stage(self, stage_info: Any) -> Any:
        return stage_info.stage_idx


def tma_pipeline(alloc: Any, stages: int, tx_bytes: int, consumer_threads: int) -> Any:
    """A twin's ``PipelineTmaAsync`` (what TS builds for a TMA ring of one CTA): one thread
    arms a stage with ``tx_bytes``, ``consumer_threads`` free it (one arrival per warp)."""
    return cpipe.PipelineTmaAsync.create(
        num_stages=stages,
        producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
        consumer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, consumer_threads),
        tx_count=tx_bytes,
        barrier_storage=alloc.allocate_array(cutlass.Int64, num_elems=2 * stages, byte_alignment=8),
        enable_multicast_signaling=True,
        defer_sync=True,
    )


def compile_counts(
    example: str,
    kernels: dict[str, Any],
    shapes: Sequence[tuple[int, int]],
    cfg: GemmConfig,
    *,
    ops: bool = False,
    **fields: Any,
) -> dict[str, Any]:
    """Verify the TS kernel, compile both for sm_90a on fake row-major tensors, count PTX.

    ``ts`` / ``twin`` hold the harness's kinds and ``GEMM_KINDS``; ``same_counts`` is per
    opcode and in total; ``<name>_ops`` (per opcode) only with ``ops``.
    """
    args = [fake_tensor(cfg.element, s, row_major=True, align=16) for s in shapes]
    out = compare(example, kernels, args, plan=kernels["ts"], ops=True, **fields)
    per_op = {name: out.pop(f"{name}_ops") for name in ("ts", "twin")}
    for name, counts in per_op.items():
        for kind in GEMM_KINDS:  # a kind counts every opcode that starts with it
            out[name][kind] = sum(
                v for op, v in counts.items() if op == kind or op.startswith(kind + ".")
            )
        if ops:
            out[f"{name}_ops"] = counts
    out["same_counts"] = per_op["ts"] == per_op["twin"] and out["ts_total"] == out["twin_total"]
    return out


def compile_ok(out: Mapping[str, Any]) -> bool:
    """The compile-only verdict: the same PTX per opcode, with WGMMA, TMA and mbarriers."""
    return bool(out["same_counts"]) and all(out["twin"].get(k, 0) > 0 for k in NEEDED)


def time_gpu(
    example: str,
    kernels: dict[str, Any],
    case: Callable[[str], Case],
    mnk: Sequence[int],
    dtype: str,
    iters: int,
) -> dict[str, Any]:
    """Run, check and time both kernels (``run_on_gpu``); TFLOP/s of the GEMM part added."""
    m, n, k = mnk
    out = run_kernels(kernels, case, iters=iters)
    for name in ("ts", "twin"):
        out[name]["TFLOPs"] = 2 * m * n * k / (out[name]["ms"] * 1e9)
    return {"example": example, "mnk": [*mnk], "dtype": dtype, **out}


def torch_dtype(dtype: str) -> Any:
    """The torch element type of ``dtype`` (``"bf16"`` or ``"fp16"``)."""
    import torch

    return torch.bfloat16 if dtype == "bf16" else torch.float16


def main(
    doc: str | None,
    script: str,
    compile_only: Callable[[tuple[int, int, int], str], dict[str, Any]],
    on_gpu: Callable[[tuple[int, int, int], str, int], dict[str, Any]],
    argv: list[str] | None = None,
) -> int:
    """The command line: ``--m --n --k`` (whole tiles), ``--dtype``, ``--compile-only``."""
    m, n, k = DEFAULT_MNK
    cli = ExampleCLI(doc, script, shape={"m": m, "n": n, "k": k})
    cli.parser.add_argument("--dtype", choices=DTYPES, default="bf16", help="the element type")
    args = cli.parse(argv, lambda a: (*TILE_MN, gemm_config(a.dtype).tile_k))
    mnk = (args.shape[0], args.shape[1], args.shape[2])
    return cli.run(
        lambda: compile_only(mnk, args.dtype),
        lambda: on_gpu(mnk, args.dtype, args.iters),
        compile_ok=compile_ok,
    )
