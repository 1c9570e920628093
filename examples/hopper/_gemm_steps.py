"""The Hopper GEMM's configuration and steps, shared by its TS kernel and its twin.

``GemmConfig`` and the trace-time builders (tiled MMA, SMEM layouts, TMA atoms, scheduler
parameters, pipelines, fragments, epilogue views), then one small helper per step of the
schedule (``load_k_block``, ``mma_begin_tile``, ``mma_k_block``, ``mma_wait``,
``epilogue_store``, ``epilogue_drain``). See ``gemm.py``.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe
import cutlass.utils.hopper_helpers as sm90
from cutlass.base_dsl.ast_helpers import const_expr, range_constexpr
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.cutlass_dsl import Constexpr
from cutlass.tensor_utils import LayoutEnum

from task_scheduling.kernel import RuntimeConfigError, UnsupportedOnTarget
from task_scheduling.tiles import PersistentTiles, TileRaster

SMS = 132
WARPGROUP = 128
WGMMA_M = 64  # rows of one warpgroup's WGMMA: a BM-row tile has BM / 64 consumer warpgroups
LOAD_WARP = 0
STORE_WARP = 4  # first warp of the first consumer warpgroup issues the C stores
PRODUCER_REGS = 40
CONSUMER_REGS = 232  # two consumer warpgroups (384 threads start with 168 registers each)
EPILOGUE_BARRIER_ID = 1  # 0 is __syncthreads
K_BLOCK_BYTES = 128  # one K block: 128 bytes of each operand row (the 128-byte swizzle atom)
# A K block may also span two swizzle atoms (two TMA boxes per operand and stage): longer
# contiguous runs of each row per stage, for the memory-bound shapes (half as many stages).
K_BLOCKS_BYTES = (128, 256)
SMEM_BYTES = 232448  # sm_90 opt-in maximum per block
SMEM_RESERVED = 1024  # mbarriers + alignment slack
# Input (A, B) element types; an 8-bit input gives a bf16 C (and bias).
DTYPES: dict[str, Any] = {
    "bf16": cutlass.BFloat16,
    "fp16": cutlass.Float16,
    "e4m3": cutlass.Float8E4M3FN,
}
FP8_DTYPES = ("e4m3",)
FP8_OUT = "bf16"
# Scales of an FP8 (or any) GEMM, applied to the fp32 accumulator in the epilogue: none,
# "tensor" (two fp32 scalars, scale_a * scale_b) or "rowwise" (scale_a[m] * scale_b[n]).
SCALES = ("none", "tensor", "rowwise")
TILES = ((128, 256), (128, 192), (128, 128), (64, 256), (64, 128))
CLUSTERS = ((1, 1), (2, 1), (1, 2))
# Operand majors, BLAS / CUTLASS style: the first letter is A (``M x K``), the second B, where
# B is read as the ``K x N`` operand of ``A @ B``: "t" for A / "n" for B means K-major (K
# contiguous), "n" for A means M-major, "t" for B means N-major. Values: (A, B) as LayoutEnum
# (ROW_MAJOR = K-major, COL_MAJOR = M- / N-major, as cutlass.utils.hopper_helpers reads them).
LAYOUTS: dict[str, tuple[LayoutEnum, LayoutEnum]] = {
    "tn": (LayoutEnum.ROW_MAJOR, LayoutEnum.ROW_MAJOR),  # A K-major, B K-major (default)
    "nn": (LayoutEnum.COL_MAJOR, LayoutEnum.ROW_MAJOR),  # A M-major, B K-major
    "tt": (LayoutEnum.ROW_MAJOR, LayoutEnum.COL_MAJOR),  # A K-major, B N-major
    "nt": (LayoutEnum.COL_MAJOR, LayoutEnum.COL_MAJOR),  # A M-major, B N-major
}
DEFAULT_MNK = (8192, 8192, 8192)
SCHEDULERS = ("static", "dynamic")
KERNELS = ("cooperative", "pingpong")
# The tile scheduler's raster: "m" walks down M first inside a swizzle group of N columns
# (CUTLASS's default), "n" along N inside a group of M rows.
RASTERS = ("m", "n")
QUEUE_STAGES = 2  # the dynamic scheduler's tile hand-off ring
# FP8 two-level accumulation (GemmConfig.promote_every): WGMMA's FP8 accumulator is not full
# fp32, and its rounding error grows with the number of K steps it sums. Summing groups of
# PROMOTE_EVERY K blocks (4 x 128 = 512 K values) in the WGMMA registers and the groups in an
# fp32 total bounds that error by a group's, whatever K is (about the bf16 rounding of C, see
# docs/gemm.rst), for one WGMMA drain and BN / 2 fp32 adds per thread every 4 blocks.
PROMOTE_EVERY = 4
# The total is a second register tile of as many fp32 values per consumer thread as the
# accumulator (GemmConfig.acc_values: BN / 2 in the cooperative kernel); both fit next to the
# ~64 registers of addresses and indices only up to 64 values each (two 128-value tiles, e.g.
# BN = 256 or a ping-pong 128 x 128 tile, exceed the 232 / 255 registers a consumer thread has).
PROMOTE_MAX_ACC = 64
# A ping-pong warpgroup holds its whole BM x BN tile: 128 x 192 is 192 fp32 registers per
# thread, which still compiles without spills under setmaxnreg 232; 128 x 256 (256) cannot.
PINGPONG_MAX_ACC = 192
MAX_SPLIT = 16  # split-K chunks per tile (more only adds partial tiles to write and read)
# Extra PTX kinds worth comparing for a GEMM (on top of ts_codegen's defaults).
GEMM_KINDS = (
    "wgmma.mma_async",
    "wgmma.fence",
    "wgmma.commit_group",
    "wgmma.wait_group",
    "stmatrix",
    "setmaxnreg",
    "bar.arrive",
)


@dataclasses.dataclass(frozen=True)
class GemmConfig:
    """Compile-time shape of the kernel.

    Attributes:
        tile_mn: CTA tile ``(BM, BN)``; cooperative: ``BM`` is split between the ``BM / 64``
            consumer warpgroups (two for ``BM = 128``, one for ``BM = 64``); ping-pong: one
            warpgroup holds the whole tile (``BM / 64`` WGMMAs per K step).
        cluster_mn: cluster shape ``(CM, CN)``; ``A`` is multicast along ``CN``, ``B``
            along ``CM``.
        dtype: ``"bf16"`` or ``"fp16"`` (A, B and C), or ``"e4m3"`` (FP8 A and B, read by
            WGMMA K-major only, in K blocks of 128; bf16 C and bias).
        stages: A/B ring depth; 0 picks the most that fit next to the epilogue buffers.
        epi_n: columns of one epilogue sub-tile (the sub-tile is ``BM x epi_n``).
        epi_stages: epilogue SMEM buffers (stores in flight); must divide the sub-tile count.
        swizzle: tile-scheduler swizzle: groups of ``swizzle`` cluster columns are walked
            column-major, so one wave of CTAs shares A and B rows in L2 (1 = plain
            column-major raster). It should divide the problem's cluster-column count, else the
            scheduler pads the tile grid with empty tiles; ``fit_swizzle`` makes it so.
        layout: operand majors, a key of ``LAYOUTS`` (``"tn"``: A and B K-major).
        alpha: fused epilogue ``C = alpha * (A @ B^T) + beta * C + bias[n]`` (a compile-time
            constant; 1 emits no multiply).
        beta: scale of the old ``C`` (read before it is overwritten: ``C`` is in and out);
            0 reads nothing.
        bias: add an ``N``-vector (input dtype) to every row; the kernel takes it as an
            extra argument only then.
        scheduler: ``"static"`` (CTA ``c`` runs tiles ``c, c + G, ...``) or ``"dynamic"``
            (after its first tile, the producer warp claims tiles from a global atomic counter
            and hands them to the consumers through a 2-stage SMEM queue; 1 x 1 clusters).
        kernel: ``"cooperative"`` (the consumer warpgroups share every tile) or
            ``"pingpong"`` (two consumer warpgroups take the CTA's tiles in turns, each with
            its own A/B ring and epilogue buffers, so one's epilogue overlaps the other's main
            loop; a warpgroup holds the whole tile: 64-row tiles, 128 x 128 or 128 x 192
            (``PINGPONG_MAX_ACC``); the static scheduler, which walks the tiles of a cluster's
            CTAs in lockstep, so with a cluster both CTAs' warpgroups take the same turns and
            the multicast fills the same ring in every CTA).
        scale: ``"none"``, ``"tensor"`` (``C = scale_a * scale_b * (A @ B^T) ...`` with two
            one-element fp32 tensors) or ``"rowwise"`` (``scale_a[m] * scale_b[n]``, an fp32
            ``M``- and ``N``-vector), applied to the accumulator in the epilogue before
            ``alpha``; the kernel takes ``scale_a`` / ``scale_b`` as arguments only then.
        raster: ``"m"`` (tiles walked along M inside swizzle groups of cluster columns) or
            ``"n"`` (along N inside groups of cluster rows); only the tile order changes.
        promote_every: two-level accumulation: the WGMMAs sum groups of this many K blocks,
            each group added into a second fp32 register tile once its WGMMAs retired (the
            next group's first WGMMA overwrites the WGMMA registers); 0 turns it off. None
            (the default): ``PROMOTE_EVERY`` for FP8 when the tile has room for the second
            tile (``acc_values <= PROMOTE_MAX_ACC``: cooperative ``BN <= 128``, 64-row
            ping-pong), else off (16-bit WGMMAs accumulate in fp32 already;
            ``promotion`` is the value in effect). Works for every dtype.
        split_k: split-K (1: off): the K blocks of every output tile are cut into
            ``split_k`` contiguous chunks of ``ceil(k_blocks / split_k)`` blocks, and each
            ``(tile, chunk)`` is a work item of the persistent schedule (the chunk is the
            raster's L coordinate). Each item writes its fp32 partial tile to a global
            workspace; the item that arrives last at its tile (a per-tile atomic counter) sums
            the partials in chunk order 0 .. split_k - 1 and runs the epilogue (a fixed order:
            the result does not depend on which CTA comes last). Cooperative kernel, static
            scheduler, 1 x 1 clusters; see ``docs/gemm.rst``.
        tail_split: split only the last, ragged round of tiles (1: off): of ``T`` tiles on
            ``P`` persistent CTAs, the first ``T - T mod P`` are work items whole, the last
            ``T mod P`` are each cut into ``tail_split`` K chunks summed as split-K's
            (``TileRaster(tail_split=...)``, ``_gemm_split``). The same restrictions as
            ``split_k``, and not with it.
    """

    tile_mn: tuple[int, int] = (128, 256)
    cluster_mn: tuple[int, int] = (1, 1)
    dtype: str = "bf16"
    stages: int = 0
    epi_n: int = 32
    epi_stages: int = 4
    swizzle: int = 8
    layout: str = "tn"
    alpha: float = 1.0
    beta: float = 0.0
    bias: bool = False
    scheduler: str = "static"
    kernel: str = "cooperative"
    scale: str = "none"
    raster: str = "m"
    promote_every: int | None = None
    split_k: int = 1
    k_block_bytes: int = K_BLOCK_BYTES
    tail_split: int = 1

    def __post_init__(self) -> None:
        self._check_promotion()
        self._check_split()
        if self.tile_mn not in TILES:
            raise ValueError(f"tile {self.tile_mn} not in {TILES}")
        if self.pingpong and self.acc_values > PINGPONG_MAX_ACC:
            raise ValueError(
                f"pingpong: a warpgroup alone on a {self.tile_mn} tile would hold "
                f"{self.acc_values} fp32 accumulator registers per thread (at most "
                f"{PINGPONG_MAX_ACC}: 128x192, 128x128 or a 64-row tile)"
            )
        if self.cluster_mn not in CLUSTERS:
            raise ValueError(f"cluster {self.cluster_mn} not in {CLUSTERS}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype {self.dtype!r} not in {sorted(DTYPES)}")
        if self.epi_stages < 2 or self.epi_subtiles % self.epi_stages:
            raise ValueError("epi_stages must be >= 2 and divide the epilogue sub-tile count")
        if self.k_block_bytes not in K_BLOCKS_BYTES:
            raise ValueError(f"k_block_bytes {self.k_block_bytes} not in {K_BLOCKS_BYTES}")
        if self.ab_stages < 2:
            raise ValueError("the A/B ring needs at least 2 stages")
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout {self.layout!r} not in {sorted(LAYOUTS)}")
        if self.scheduler not in SCHEDULERS:
            raise ValueError(f"scheduler {self.scheduler!r} not in {SCHEDULERS}")
        if self.dynamic and self.cluster_size > 1:
            raise ValueError("the dynamic scheduler hands out single-CTA tiles: use 1x1")
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel {self.kernel!r} not in {KERNELS}")
        if self.pingpong and self.dynamic:
            raise ValueError("pingpong takes the static scheduler")
        if self.scale not in SCALES:
            raise ValueError(f"scale {self.scale!r} not in {SCALES}")
        if self.raster not in RASTERS:
            raise ValueError(f"raster {self.raster!r} not in {RASTERS}")
        if self.fp8 and self.layout != "tn":
            # Hopper's WGMMA reads 8-bit operands from SMEM K-major only (no transpose bit).
            raise UnsupportedOnTarget(
                f"GemmConfig(dtype={self.dtype!r}, layout={self.layout!r}): WGMMA on sm_90a "
                "reads FP8 A and B K-major only",
                target="sm_90a",
                resource="ab",
                fix="give A as M x K and B as N x K, both K-contiguous (e.g. "
                "b.t().contiguous()), and use layout='tn'",
            )

    def _check_promotion(self) -> None:
        every = self.promote_every
        if every is None:
            return
        if isinstance(every, bool) or not isinstance(every, int) or every < 0:
            raise RuntimeConfigError(
                f"GemmConfig(promote_every={every!r}): the promotion interval is a count of "
                "K blocks, an int >= 1 (0 turns two-level accumulation off)",
                resource="acc",
                fix=f"pass promote_every={PROMOTE_EVERY} (or 0, or None for the dtype's default)",
            )
        if every and self.acc_values > PROMOTE_MAX_ACC:
            raise RuntimeConfigError(
                f"GemmConfig(promote_every={every}, tile_mn={self.tile_mn}, kernel="
                f"{self.kernel!r}): two-level accumulation keeps a second fp32 tile of "
                f"{self.acc_values} registers per consumer thread, which does not fit next to "
                f"the WGMMA's with more than {PROMOTE_MAX_ACC}",
                resource="acc",
                fix="use a cooperative tile with BN <= 128 (128x128 or 64x128) or a 64-row "
                "ping-pong tile, or promote_every=0",
            )

    def _check_split(self) -> None:
        for name, split in (("split_k", self.split_k), ("tail_split", self.tail_split)):
            if isinstance(split, bool) or not isinstance(split, int) or not 1 <= split <= MAX_SPLIT:
                raise RuntimeConfigError(
                    f"GemmConfig({name}={split!r}): the number of K chunks per output tile is "
                    f"an int in [1, {MAX_SPLIT}] (1: no split)",
                    resource="c",
                    fix=f"pass {name}=1 (off) or a small chunk count such as 2 or 4",
                )
            if split > 1 and (self.pingpong or self.dynamic or self.cluster_size > 1):
                raise RuntimeConfigError(
                    f"GemmConfig({name}={split}, kernel={self.kernel!r}, scheduler="
                    f"{self.scheduler!r}, cluster_mn={self.cluster_mn}): split-K runs on the "
                    "cooperative kernel with the static scheduler and 1 x 1 clusters",
                    resource="c",
                    fix="use kernel='cooperative', scheduler='static', cluster_mn=(1, 1)",
                )
        if self.split_k > 1 and self.tail_split > 1:
            raise RuntimeConfigError(
                f"GemmConfig(split_k={self.split_k}, tail_split={self.tail_split}): split-K "
                "already cuts every tile; a tail split cuts only the last round's",
                resource="c",
                fix="pass split_k=1 with tail_split, or tail_split=1 with split_k",
            )

    @property
    def split(self) -> bool:
        """Whether some tiles' K blocks are split between work items (split-K or a tail
        split: the kernel then takes the workspace and the counters)."""
        return self.split_k > 1 or self.tail_split > 1

    @property
    def tail(self) -> bool:
        """Whether only the last, ragged round of tiles is split (``tail_split``)."""
        return self.tail_split > 1

    @property
    def promotion(self) -> int:
        """The promotion interval in effect (K blocks; 0: one accumulator)."""
        if self.promote_every is not None:
            return self.promote_every
        if not (self.fp8 and self.acc_values <= PROMOTE_MAX_ACC):
            return 0
        # The same K elements between promotions whatever the block: 4 blocks of 128 bytes.
        return max(1, PROMOTE_EVERY * K_BLOCK_BYTES // self.k_block_bytes)

    @property
    def pingpong(self) -> bool:
        """True when two consumer warpgroups take tiles in turns."""
        return self.kernel == "pingpong"

    @property
    def math_wgs(self) -> int:
        """Consumer warpgroups in the CTA (each one alone on its tile in ping-pong)."""
        return 2 if self.pingpong else self.consumer_wgs

    @property
    def dynamic(self) -> bool:
        """True for the atomic dynamic scheduler."""
        return self.scheduler == "dynamic"

    @property
    def consumer_wgs(self) -> int:
        """Consumer (WGMMA) warpgroups of one tile: one per 64 tile rows (cooperative), or one
        (ping-pong: a warpgroup alone on its tile issues ``BM / 64`` WGMMAs per K step)."""
        return 1 if self.pingpong else self.tile_mn[0] // WGMMA_M

    @property
    def acc_values(self) -> int:
        """fp32 accumulator values (registers) per consumer thread: ``BM x BN`` over the
        tile's consumer threads."""
        return self.tile_mn[0] * self.tile_mn[1] // (self.consumer_wgs * WARPGROUP)

    @property
    def consumer_threads(self) -> int:
        """Threads of the consumer warpgroups (the ring's readers, the epilogue barrier)."""
        return self.consumer_wgs * WARPGROUP

    @property
    def block_threads(self) -> int:
        """Threads per CTA: the producer warpgroup and the consumer warpgroups."""
        return (1 + self.math_wgs) * WARPGROUP

    @property
    def consumer_regs(self) -> int | None:
        """The consumers' ``setmaxnreg.inc`` target, or None (no ``setmaxnreg``).

        A 384-thread CTA starts with at most 168 registers per thread: the two consumer
        warpgroups take 232 from what the producer gives back. In a 256-thread CTA (one
        consumer warpgroup) ptxas may give every thread up to 255 registers from the start,
        so the consumer keeps what ptxas allocated for it (only the producer gives registers
        back); TS too would lower a 232 there as ``setmaxnreg.dec``.
        """
        return CONSUMER_REGS if self.math_wgs > 1 else None

    @property
    def a_layout(self) -> LayoutEnum:
        """A's major as a ``LayoutEnum`` (ROW_MAJOR: K-major, COL_MAJOR: M-major)."""
        return LAYOUTS[self.layout][0]

    @property
    def b_layout(self) -> LayoutEnum:
        """B's major as a ``LayoutEnum`` (ROW_MAJOR: K-major, COL_MAJOR: N-major)."""
        return LAYOUTS[self.layout][1]

    @property
    def fused_epilogue(self) -> bool:
        """Whether the epilogue does more than convert the accumulator."""
        return self.alpha != 1.0 or self.beta != 0.0 or self.bias or self.scaled

    @property
    def scaled(self) -> bool:
        """Whether the kernel takes ``scale_a`` / ``scale_b``."""
        return self.scale != "none"

    @property
    def fp8(self) -> bool:
        """Whether A and B are 8-bit floats."""
        return self.dtype in FP8_DTYPES

    @property
    def out_dtype(self) -> str:
        """The dtype name of C and the bias (bf16 for 8-bit inputs)."""
        return FP8_OUT if self.fp8 else self.dtype

    @property
    def element(self) -> Any:
        """The CuTe DSL element type of A and B."""
        return DTYPES[self.dtype]

    @property
    def out_element(self) -> Any:
        """The CuTe DSL element type of C and the bias."""
        return DTYPES[self.out_dtype]

    @property
    def smem_elements(self) -> tuple[Any, Any, Any]:
        """Element types of the A ring, the B ring and the epilogue buffers."""
        return self.element, self.element, self.out_element

    @property
    def tile_k(self) -> int:
        """K extent of one A / B block: ``k_block_bytes`` of a row (128: 64 16-bit or 128
        8-bit elements)."""
        return self.k_block_bytes * 8 // int(self.element.width)

    @property
    def cluster_size(self) -> int:
        """CTAs per cluster."""
        return self.cluster_mn[0] * self.cluster_mn[1]

    @property
    def epi_tile(self) -> tuple[int, int]:
        """One epilogue sub-tile: ``(BM, epi_n)``, or ``(64, epi_n)`` when one warpgroup holds
        a 128-row tile (ping-pong).

        A sub-tile must be a contiguous run of each thread's accumulator (the epilogue copies
        run ``j`` into the ``stmatrix`` registers of sub-tile ``j``): a thread's values of one
        64-row WGMMA block come before those of the next, so a sub-tile may span the rows of
        several warpgroups (one block each) but not two blocks of one warpgroup.
        """
        return (WGMMA_M * self.consumer_wgs, self.epi_n)

    @property
    def epi_subtiles(self) -> int:
        """Epilogue sub-tiles per CTA tile (row blocks of ``epi_tile`` times columns)."""
        return self.tile_mn[0] // self.epi_tile[0] * (self.tile_mn[1] // self.epi_n)

    @property
    def stage_bytes(self) -> int:
        """Bytes one A/B stage receives (the TMA transaction count)."""
        return (self.tile_mn[0] + self.tile_mn[1]) * self.k_block_bytes

    @property
    def ab_stages(self) -> int:
        """A/B ring depth (``stages`` or as many as fit)."""
        if self.stages:
            return self.stages
        rings = 2 if self.pingpong else 1  # ping-pong: a ring and epilogue buffers per WG
        epi_bytes = self.epi_tile[0] * self.epi_n * int(self.out_element.width) // 8
        epi_bytes *= self.epi_stages * rings
        return (SMEM_BYTES - SMEM_RESERVED - epi_bytes) // self.stage_bytes // rings

    @property
    def max_active_clusters(self) -> int:
        """Persistent clusters: one CTA per SM."""
        return SMS // self.cluster_size


def fit_swizzle(cfg: GemmConfig, n: int, m: int | None = None) -> GemmConfig:
    """Fit the scheduler swizzle to a problem with ``N = n`` (and ``M = m``).

    Returns:
        ``cfg`` with the largest power-of-two swizzle ``<= cfg.swizzle`` that divides the
        problem's cluster-column count (cluster-row count for ``raster="n"``, which groups
        rows: then ``m`` is needed), so the scheduler adds no padded, empty tiles.
    """
    along_n = cfg.raster == "n"
    extent, axis = (m, 0) if along_n else (n, 1)
    if extent is None:
        raise ValueError("fit_swizzle: raster 'n' groups cluster rows, pass m (the problem's M)")
    columns = -(-extent // cfg.tile_mn[axis]) // cfg.cluster_mn[axis]
    swizzle = 1
    while swizzle * 2 <= cfg.swizzle and columns % (swizzle * 2) == 0:
        swizzle *= 2
    return dataclasses.replace(cfg, swizzle=swizzle)


# ---------------------------------------------------------------------------------------------
# trace-time construction helpers (no code emitted by themselves)
# ---------------------------------------------------------------------------------------------


def make_tiled_mma(cfg: GemmConfig) -> Any:
    """WGMMA ``64 x BN x 16`` (16-bit) or ``64 x BN x 32`` (e4m3) atoms, one per consumer
    warpgroup along M.

    A and B are read from SMEM K-major or MN-major (``cfg.layout``; MN-major WGMMA operands
    exist for 16-bit types only).
    """
    return sm90.make_trivial_tiled_mma(
        cfg.element,
        cfg.element,
        cfg.a_layout.sm90_mma_major_mode(),
        cfg.b_layout.sm90_mma_major_mode(),
        cutlass.Float32,
        (cfg.consumer_wgs, 1, 1),
        tiler_mn=(WGMMA_M, cfg.tile_mn[1]),
    )


def make_smem_layouts(cfg: GemmConfig) -> tuple[Any, Any, Any]:
    """Swizzled, staged SMEM layouts of the A ring, the B ring and the epilogue buffers."""
    bm, bn = cfg.tile_mn
    tiler = (bm, bn, cfg.tile_k)
    a = sm90.make_smem_layout_a(cfg.a_layout, tiler, cfg.element, cfg.ab_stages)
    b = sm90.make_smem_layout_b(cfg.b_layout, tiler, cfg.element, cfg.ab_stages)
    row = LayoutEnum.ROW_MAJOR  # N-major C
    c = sm90.make_smem_layout_epi(cfg.out_element, row, cfg.epi_tile, cfg.epi_stages)
    return a, b, c


def make_tma_atoms(
    cfg: GemmConfig, a: Any, b: Any, c: Any, layouts: tuple[Any, Any, Any]
) -> tuple[Any, Any, Any, Any, Any, Any]:
    """Host side: TMA atoms and TMA coordinate tensors ``(atom_a, tA, atom_b, tB, atom_c, tC)``.

    ``A`` is split over the ``CN`` CTAs of a cluster row and multicast to all of them, ``B``
    over the ``CM`` CTAs of a cluster column.
    """
    a_layout, b_layout, c_layout = layouts
    bm, bn = cfg.tile_mn
    cm, cn = cfg.cluster_mn

    def load_op(n_mcast: int) -> Any:
        if n_mcast == 1:
            return cpasync.CopyBulkTensorTileG2SOp()
        return cpasync.CopyBulkTensorTileG2SMulticastOp()

    atom_a, t_a = cpasync.make_tiled_tma_atom(
        load_op(cn), a, cute.slice_(a_layout, (None, None, 0)), (bm, cfg.tile_k), num_multicast=cn
    )
    atom_b, t_b = cpasync.make_tiled_tma_atom(
        load_op(cm), b, cute.slice_(b_layout, (None, None, 0)), (bn, cfg.tile_k), num_multicast=cm
    )
    atom_c, t_c = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileS2GOp(), c, cute.slice_(c_layout, (None, None, 0)), cfg.epi_tile
    )
    return atom_a, t_a, atom_b, t_b, atom_c, t_c


def make_scheduler_params(cfg: GemmConfig, m: Any, n: Any) -> Any:
    """Static persistent scheduler over the ``ceil(M/BM) x ceil(N/BN) x split_k`` work items
    (with a tail split: the tiles, the last round's ``tail_split`` items each)."""
    # Split-K: the K chunk of a work item is its L coordinate (1 without a split).
    tiles = (cute.ceil_div(m, cfg.tile_mn[0]), cute.ceil_div(n, cfg.tile_mn[1]), cfg.split_k)
    along_m = cfg.raster == "m"
    if cfg.tail:  # the round count is that of the launch's grid: max_active_clusters CTAs
        tail = {"tail_split": cfg.tail_split, "workers": cfg.max_active_clusters}
        return TileRaster(tiles, (1, 1, 1), cfg.swizzle, raster_along_m=along_m, **tail)
    return TileRaster(tiles, (*cfg.cluster_mn, 1), cfg.swizzle, raster_along_m=along_m)


def chunk_blocks(cfg: GemmConfig, t_a: Any) -> Any:
    """K blocks of a work item: ``ceil(K / BK)``, or with split-K its chunk's share
    ``ceil(ceil(K / BK) / split_k)`` (blocks past ``K`` arrive zero-filled)."""
    k_blocks = cute.ceil_div(cute.size(t_a, mode=[1]), cfg.tile_k)
    return cute.ceil_div(k_blocks, cfg.split_k) if cfg.split_k > 1 else k_blocks


def next_scheduler(cfg: GemmConfig, sched: Any, claimed: Any) -> Any:
    """The scheduler at the next tile: ``G`` further (static) or at the claimed index."""
    if const_expr(cfg.dynamic):
        return sched.at(claimed)
    return sched.advance()


def make_scheduler(params: Any) -> Any:
    """Each role builds its own scheduler copy (they all visit the same tiles)."""
    return PersistentTiles.create(params)


def cluster_coord(cfg: GemmConfig) -> Any:
    """This CTA's ``(m, n, 0)`` coordinate inside its cluster."""
    rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    return cute.make_layout((*cfg.cluster_mn, 1)).get_flat_coord(rank)


def mcast_masks(cfg: GemmConfig, coord: Any) -> tuple[Any, Any]:
    """Multicast masks ``(A, B)``: A goes to the cluster row, B to the cluster column."""
    cta_layout = cute.make_layout((*cfg.cluster_mn, 1))
    mask_a = cute.make_layout_image_mask(cta_layout, coord, mode=1) if cfg.cluster_mn[1] > 1 else 0
    mask_b = cute.make_layout_image_mask(cta_layout, coord, mode=0) if cfg.cluster_mn[0] > 1 else 0
    return mask_a, mask_b


def make_ab_pipeline(cfg: GemmConfig, barrier_storage: Any) -> Any:
    """The A/B ring: 1 TMA-issuing thread -> the consumer threads (one arrival per warp).

    With ``enable_multicast_signaling`` each consumer warp arrives once on the empty barrier of
    every CTA that multicasts into this stage, so a stage is refilled only when all readers in
    the cluster are done with it.
    """
    return cpipe.PipelineTmaAsync.create(
        num_stages=cfg.ab_stages,
        producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
        consumer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, cfg.consumer_threads),
        tx_count=cfg.stage_bytes,
        barrier_storage=barrier_storage,
        cta_layout_vmnk=cute.make_layout((1, *cfg.cluster_mn, 1)),
        enable_multicast_signaling=True,
        defer_sync=True,
    )


def epilogue_barrier(cfg: GemmConfig, math_wg: int = 0) -> Any:
    """Named barrier over the threads that share a tile's epilogue (never the producer).

    Ping-pong warpgroups each get their own barrier (id ``1 + math_wg``).
    """
    return cpipe.NamedBarrier(
        barrier_id=EPILOGUE_BARRIER_ID + math_wg, num_threads=cfg.consumer_threads
    )


def partition_ab_for_tma(
    cfg: GemmConfig,
    atom_a: Any,
    atom_b: Any,
    t_a: Any,
    t_b: Any,
    s_a: Any,
    s_b: Any,
    coord: Any,
) -> tuple[Any, Any, Any, Any]:
    """TMA views ``(tAgA, tAsA, tBgB, tBsB)``: index ``tAgA[(None, m, k)]``, ``tAsA[(None, s)]``.

    With multicast, this CTA loads only its slice (by its position in the cluster row / column)
    of each tile; the multicast delivers the other slices from its peers.
    """
    bm, bn = cfg.tile_mn
    cm, cn = cfg.cluster_mn
    g_a = cute.local_tile(t_a, (bm, cfg.tile_k), (None, None))  # (BM, BK, tiles_m, tiles_k)
    g_b = cute.local_tile(t_b, (bn, cfg.tile_k), (None, None))  # (BN, BK, tiles_n, tiles_k)
    ta_s, ta_g = cpasync.tma_partition(
        atom_a,
        coord[1],
        cute.make_layout(cn),
        cute.group_modes(s_a, 0, 2),
        cute.group_modes(g_a, 0, 2),
    )
    tb_s, tb_g = cpasync.tma_partition(
        atom_b,
        coord[0],
        cute.make_layout(cm),
        cute.group_modes(s_b, 0, 2),
        cute.group_modes(g_b, 0, 2),
    )
    return ta_g, ta_s, tb_g, tb_s


def make_mma_fragments(tiled_mma: Any, s_a: Any, s_b: Any, consumer_wg: Any) -> tuple[Any, Any]:
    """WGMMA descriptors over the rings for consumer warpgroup ``consumer_wg`` (0 or 1).

    Returns ``(tCrA, tCrB)`` indexed ``[(None, None, kk, stage)]``.
    """
    thr_mma = tiled_mma.get_slice(consumer_wg * WARPGROUP)
    return (
        tiled_mma.make_fragment_A(thr_mma.partition_A(s_a)),
        tiled_mma.make_fragment_B(thr_mma.partition_B(s_b)),
    )


def make_accumulator(cfg: GemmConfig, tiled_mma: Any, consumer_wg: Any) -> Any:
    """The fp32 register accumulator of one consumer thread (``BM/2 x BN`` per warpgroup)."""
    thr_mma = tiled_mma.get_slice(consumer_wg * WARPGROUP)
    shape = thr_mma.partition_shape_C(cfg.tile_mn)
    return cute.make_rmem_tensor(shape, cutlass.Float32)


@dataclasses.dataclass(frozen=True)
class EpilogueViews:
    """Per-thread views for the epilogue (built once per kernel, reused every tile).

    Attributes:
        r2s: tiled register -> SMEM copy (``stmatrix``).
        acc: the accumulator re-tiled for ``r2s``; sub-tile ``j`` is a contiguous run of it.
        frag: registers of one converted sub-tile (output dtype).
        s_c: ``r2s`` destination view of the epilogue buffers, ``[(None, None, None, buf)]``.
        thr_mma: this thread's slice of the tiled MMA (partitions global C / bias like the
            accumulator); only for a fused epilogue, else None.
        acc_mma: the accumulator in its MMA layout (element ``i`` sits at ``thr_mma``'s
            ``partition_C`` coordinate ``i``); only for a fused epilogue, else None.
    """

    r2s: Any
    acc: Any
    frag: Any
    s_c: Any
    thr_mma: Any = None
    acc_mma: Any = None


def make_epilogue_views(
    cfg: GemmConfig, tiled_mma: Any, acc: Any, s_c: Any, consumer_tidx: Any
) -> EpilogueViews:
    """Partition the accumulator and the epilogue buffers for ``stmatrix``."""
    row = LayoutEnum.ROW_MAJOR
    out = cfg.out_element
    store_atom = sm90.get_smem_store_op(row, out, cutlass.Float32)
    stmatrix = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), out)
    r2s = cute.make_tiled_copy_S(store_atom, cute.make_tiled_copy_C_atom(stmatrix, tiled_mma))
    thr = r2s.get_slice(consumer_tidx)
    frag_shape = cute.shape(thr.partition_S(s_c))[:3]
    frag = cute.make_rmem_tensor(frag_shape, out)
    if not cfg.fused_epilogue:
        return EpilogueViews(r2s, r2s.retile(acc), frag, thr.partition_D(s_c))
    thr_mma = tiled_mma.get_slice(consumer_tidx)
    return EpilogueViews(r2s, r2s.retile(acc), frag, thr.partition_D(s_c), thr_mma, acc)


# ---------------------------------------------------------------------------------------------
# the steps of the schedule (what the TS work methods call)
# ---------------------------------------------------------------------------------------------


@cute.jit
def load_k_block(
    atom_a: Any,
    atom_b: Any,
    ta_g: Any,
    ta_s: Any,
    tb_g: Any,
    tb_s: Any,
    m: Any,
    n: Any,
    k: Any,
    stage: Any,
    barrier: Any,
    mask_a: Any,
    mask_b: Any,
) -> None:
    """Producer: TMA-load K block ``k`` of A tile row ``m`` and B tile row ``n`` into ``stage``.

    Both loads complete on ``barrier`` (the stage's full barrier, armed with the stage's byte
    count by ``producer_acquire``); out-of-bounds rows / columns arrive zero-filled. A mask of
    0 means "no multicast" (a plain load).
    """
    if const_expr(isinstance(mask_a, int)):
        cute.copy(atom_a, ta_g[(None, m, k)], ta_s[(None, stage)], tma_bar_ptr=barrier)
    else:
        cute.copy(
            atom_a, ta_g[(None, m, k)], ta_s[(None, stage)], tma_bar_ptr=barrier, mcast_mask=mask_a
        )
    if const_expr(isinstance(mask_b, int)):
        cute.copy(atom_b, tb_g[(None, n, k)], tb_s[(None, stage)], tma_bar_ptr=barrier)
    else:
        cute.copy(
            atom_b, tb_g[(None, n, k)], tb_s[(None, stage)], tma_bar_ptr=barrier, mcast_mask=mask_b
        )


@cute.jit
def mma_begin_tile(tiled_mma: Any, acc: Any, total: Any = None) -> None:
    """Consumer: zero the accumulator and fence it for the first WGMMA of a tile.

    With two-level accumulation the fp32 ``total`` is zeroed instead: block 0 starts a group,
    whose first WGMMA overwrites ``acc``.
    """
    if const_expr(total is None):
        acc.fill(0.0)
    else:
        total.fill(0.0)
    tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
    # Registers written by ordinary instructions must be fenced before a WGMMA reads them.
    warpgroup.fence()


@cute.jit
def mma_k_block(
    tiled_mma: Any,
    acc: Any,
    t_ra: Any,
    t_rb: Any,
    stage: Any,
    k: Any = None,
    every: Constexpr[int] = 0,
    fresh_mma: Any = None,
) -> None:
    """Consumer: issue the WGMMAs of one K block from ``stage`` (4 x k16 or 4 x k32); commit.

    With ``every`` (two-level accumulation; ``k`` the block's index in the tile) the first
    WGMMA of a group's first block (``k % every == 0``) overwrites ``acc``: it is issued with
    ``fresh_mma``, a copy of the tiled MMA whose accumulate flag is off.
    """
    for kk in range_constexpr(cute.size(t_ra, mode=[2])):
        a, b = t_ra[(None, None, kk, stage)], t_rb[(None, None, kk, stage)]
        if const_expr(every == 0 or kk > 0):
            cute.gemm(tiled_mma, acc, a, b, acc)
        elif const_expr(every == 1):
            cute.gemm(fresh_mma, acc, a, b, acc)
        else:
            if k % every == 0:  # a runtime branch, one WGMMA each
                cute.gemm(fresh_mma, acc, a, b, acc)
            else:
                cute.gemm(tiled_mma, acc, a, b, acc)
    warpgroup.commit_group()


@cute.jit
def mma_wait(outstanding: Constexpr[int]) -> None:
    """Consumer: wait until at most ``outstanding`` WGMMA groups of this warpgroup run."""
    warpgroup.wait_group(outstanding)


# The fused epilogue walks the accumulator in static loops of at most VALUE_CHUNK values: the
# same unrolled code as one loop over all of them (``cutlass.range(..., unroll_full=True)``
# costs more address arithmetic), and under the DSL's 64-iteration "slow to compile" warning.
VALUE_CHUNK = 32


def value_chunks(n: int) -> list[tuple[int, int]]:
    """``[0, n)`` as static ``(start, stop)`` loop bounds, at most ``VALUE_CHUNK`` apart."""
    return [(lo, min(lo + VALUE_CHUNK, n)) for lo in range(0, n, VALUE_CHUNK)]
