"""The Hopper GEMM's configuration: ``GemmConfig``, its limits and its checks.

One frozen dataclass holds every choice of a GEMM kernel (tile, cluster, kernel, scheduler,
stages, epilogue, dtype, layout, scales, split-K, tail split); ``__post_init__`` refuses a
combination the kernels cannot build with a typed ``RuntimeConfigError`` (or
``UnsupportedOnTarget``) that names the field and a fix. ``fit_swizzle`` fits its scheduler
swizzle to a problem. The device steps that read it are in ``_gemm_steps.py``.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
from cutlass.tensor_utils import LayoutEnum

from task_scheduling.harness import max_active_clusters
from task_scheduling.kernel import RuntimeConfigError, UnsupportedOnTarget

SMS = 132  # an H200's: the table's wave counts (grids ask the GPU: max_active_clusters)
WARPGROUP = 128
WGMMA_M = 64  # rows of one warpgroup's WGMMA
# Cooperative consumer warpgroups: one per 64 tile rows, at most two (a 256-row tile gives each
# of the two a pair of 64-row WGMMA blocks, as a 128 x 256 tile gives each a 256-wide one: the
# same 128 fp32 registers a thread, and a third warpgroup would leave no registers to share).
MAX_CONSUMER_WGS = 2
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
TILES = (
    (128, 256),
    (256, 128),
    (256, 160),
    # A fitted width (cuBLAS picks it for 3000 x 5000): 12 x 33 = 396 tiles of 3000 x 5000 are
    # exactly three rounds of 132 SMs, 97 % of the work useful against 92.5 % for any width
    # that is a multiple of 16. Its epilogue's last sub-tile overlaps the one before.
    (256, 152),
    (128, 320),
    (128, 192),
    (128, 160),
    # ... and 128 x 152 (FP8 promotes its 76 + 76 values a thread): 3000 x 5000 is 792 of
    # them, six whole rounds; 28672 is 188.6 columns, three rounds of 66 clusters as 128 x 160
    # takes, each 5 % narrower. Compiled and checked on the CPU; no table entry takes it yet.
    (128, 152),
    (128, 128),
    (64, 256),
    (64, 192),
    (64, 128),
)
# One WGMMA is at most 256 wide, and a TMA box at most 256 rows a mode. A wider tile (128 x
# 320, the widest cuBLAS's Hopper kernels use: 91 outputs per loaded row of K against 85 for
# 128 x 256 and 77 for 128 x 192) gives each warpgroup two WGMMAs of BN / 2 per K step and
# needs a cluster whose CTAs split B so that each loads at most 256 rows of it.
WGMMA_MAX_N = 256
TMA_MAX_BOX = 256
CLUSTERS = ((1, 1), (2, 1), (1, 2), (2, 2))
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
KERNELS = ("cooperative", "pingpong", "pingpong-skip")
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
# accumulator (GemmConfig.acc_values: BN / 2 in the cooperative kernel up to 128 rows). Two
# 96-value tiles (128 x 192) still compile without a spill under setmaxnreg 232, fused
# epilogue, split and clusters included (ptxas -v, checked by ts-runtime's promotion tests); two
# 128-value tiles (BN = 256, 256 x 128, a ping-pong 128 x 128) spill 780 bytes.
PROMOTE_MAX_ACC = 96
# A ping-pong warpgroup holds its whole BM x BN tile: 128 x 192 is 192 fp32 registers per
# thread, which still compiles without spills under setmaxnreg 232; 128 x 256 (256) cannot.
PINGPONG_MAX_ACC = 192
# A deferred store (GemmConfig.defer_store) converts the total while the next tile's WGMMAs
# write the other register tile, so both tiles and the epilogue's registers are live at once:
# 64 + 64 (128 x 128, 64 x 128) compile without a spill; 96 + 96 (128 x 192) spill 736 bytes
# (ptxas -v, TS and twin alike).
DEFER_MAX_ACC = 64
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


def consumer_warpgroups(tile_mn: tuple[int, int], pingpong: bool) -> int:
    """Consumer warpgroups on one tile: one per 64 rows up to ``MAX_CONSUMER_WGS``
    (cooperative), or one (ping-pong: a warpgroup alone on its tile)."""
    return 1 if pingpong else min(tile_mn[0] // WGMMA_M, MAX_CONSUMER_WGS)


def _refused(fields: str, why: str, fix: str) -> RuntimeConfigError:
    """The typed error of a configuration the kernels cannot build (a ``ValueError`` too)."""
    return RuntimeConfigError(f"GemmConfig({fields}): {why}", resource="gemm", fix=fix)


@dataclasses.dataclass(frozen=True)
class GemmConfig:
    """Compile-time shape of the kernel.

    Attributes:
        tile_mn: CTA tile ``(BM, BN)``; cooperative: ``BM`` is split between the consumer
            warpgroups (one for ``BM = 64``, two for ``BM = 128`` and ``256``: with 256 rows
            each issues two 64-row WGMMAs per K step, on rows ``64 w`` and ``128 + 64 w``);
            ping-pong: one warpgroup holds the whole tile (``BM / 64`` WGMMAs per K step).
            ``BN = 320`` (cooperative, a 2 x 1 or 2 x 2 cluster): two ``64 x 160`` WGMMAs a
            warpgroup per K step (``mma_n``), and each CTA of a cluster column loads 160 rows
            of B.
        cluster_mn: cluster shape ``(CM, CN)``; ``A`` is multicast along ``CN``, ``B``
            along ``CM``.
        dtype: ``"bf16"`` or ``"fp16"`` (A, B and C), or ``"e4m3"`` (FP8 A and B, read by
            WGMMA K-major only, in K blocks of 128; bf16 C and bias).
        stages: A/B ring depth; 0 picks the most that fit next to the epilogue buffers.
        epi_n: columns of one epilogue sub-tile (the sub-tile is ``BM x epi_n``): a
            multiple of 16 (``stmatrix`` x4 stores 16 columns) up to ``BN``. When it does not
            divide ``BN`` (a fitted width, e.g. 152), the last sub-tile of a row ends at the
            tile's edge and overlaps the one before it (``ceil(BN / epi_n)`` columns).
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
            its own epilogue buffers, so one's epilogue overlaps the other's main loop; both
            wait for and release every stage of the one A/B ring, the one whose turn it is
            also computes on it; a warpgroup holds the whole tile: 64-row tiles, 128 x 128 or
            128 x 192 (``PINGPONG_MAX_ACC``); the static scheduler, which walks the tiles of a
            cluster's CTAs in lockstep, so with a cluster both CTAs' warpgroups take the same
            turns and the multicast fills the same ring in every CTA). ``"pingpong-skip"``:
            the same, but a warpgroup skips the other's stages (``skip_stage()``) instead of
            waiting for and releasing them, so a stage goes back to the producer as soon as
            the warpgroup computing on it is done; the warpgroups pass a math-order token
            (``MathTurn``) after each tile's main loop, which keeps every wait's
            parity exact (CUTLASS's ping-pong order barrier).
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
            tile (``acc_values <= PROMOTE_MAX_ACC``: cooperative 128 x 192, 128 x 128 and
            64 x 128, ping-pong 64 x 192 and 64 x 128), else off (16-bit WGMMAs accumulate
            in fp32 already; ``promotion`` is the value in effect). Works for every dtype.
        promote_stagger: with two-level accumulation (an even interval) in a cooperative
            tile of two consumer warpgroups: the second warpgroup's groups are shifted by half
            a group (``WgmmaAccumulator(promote_stagger=True)``), so the two wait for their
            WGMMAs and add them up in turns instead of at once, when the tensor cores idle.
        defer_store: with two-level accumulation in the cooperative kernel (static scheduler,
            no split): a tile's epilogue runs from its fp32 total once the next tile's first K
            block of WGMMAs is issued, so the tensor cores work on that block while the
            consumer warpgroups convert and store the tile before (the WGMMAs write the other
            register tile); the total is zeroed after the store, and the CTA's last tile is
            stored at once (``TmaEpilogue.store_tile``, ``WorkQueue.is_last_tile``). Tiles of
            at most ``DEFER_MAX_ACC`` accumulator values a thread. Off by default; no table
            entry takes it yet.
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
        stream_k: a stream-K tail (a bool, off by default): the last, ragged round's ``r``
            tiles of ``k`` K blocks are ``r k`` units shared out evenly between the ``P``
            persistent clusters, each taking at most two pieces (the end of one tile, the
            start of the next); the piece that arrives last at its tile sums the tile's pieces
            in worker order (fixed) and stores it (``TileRaster(stream_k=True)``,
            ``_gemm_split``). Where the last round would leave clusters idle, every cluster
            then ends together. The same restrictions as ``tail_split``, and not with it or
            ``split_k``.
        pdl: programmatic dependent launch (on by default; a bool): the
            kernel is launched with ``use_pdl`` and every task waits for the previous kernel on
            the stream (``griddepcontrol.wait``) before its first global read or write, and the
            load task lets the next kernel launch (``griddepcontrol.launch_dependents``) once
            it has waited. Back-to-back kernels then overlap one's launch and prologue (SMEM
            carve-out, barrier init, descriptor prefetch) with the other's last tiles. Off:
            plain stream order, no grid-dependency instructions.
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
    promote_stagger: bool = False
    defer_store: bool = False
    split_k: int = 1
    k_block_bytes: int = K_BLOCK_BYTES
    tail_split: int = 1
    stream_k: bool = False
    pdl: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.pdl, bool):  # "off" would be truthy: PDL on, silently
            raise _refused(f"pdl={self.pdl!r}", "not a bool", "pass pdl=True or pdl=False")
        self._check_promotion()
        self._check_split()
        if self.tile_mn not in TILES:
            raise _refused(f"tile_mn={self.tile_mn}", f"not one of {TILES}", "pick one of them")
        if self.pingpong and self.acc_values > PINGPONG_MAX_ACC:
            raise _refused(
                f"kernel={self.kernel!r}, tile_mn={self.tile_mn}",
                f"a warpgroup alone on the tile would hold {self.acc_values} fp32 accumulator "
                f"registers per thread (at most {PINGPONG_MAX_ACC})",
                "use 128x192, 128x128 or a 64-row tile, or the cooperative kernel",
            )
        if self.cluster_mn not in CLUSTERS:
            raise _refused(f"cluster_mn={self.cluster_mn}", f"not one of {CLUSTERS}", "pick one")
        if self.tile_mn[1] // self.cluster_mn[0] > TMA_MAX_BOX:
            raise _refused(
                f"tile_mn={self.tile_mn}, cluster_mn={self.cluster_mn}",
                f"each CTA would TMA-load {self.tile_mn[1] // self.cluster_mn[0]} rows of B in "
                f"one box, and a TMA box holds at most {TMA_MAX_BOX}",
                "use cluster_mn=(2, 1) or (2, 2): each CTA then loads half of B's rows and "
                "multicasts them",
            )
        if self.layout in LAYOUTS and self.b_layout == LayoutEnum.COL_MAJOR and self.mma_n % 64:
            raise _refused(
                f"tile_mn={self.tile_mn}, layout={self.layout!r}",
                f"an N-major B is read in 64-column swizzle atoms, and a WGMMA {self.mma_n} "
                "wide is not whole atoms",
                "use a K-major B (layout 'tn' or 'nn') or another tile",
            )
        if self.dtype not in DTYPES:
            raise _refused(f"dtype={self.dtype!r}", f"not one of {sorted(DTYPES)}", "pick one")
        if (
            isinstance(self.epi_n, bool)
            or not isinstance(self.epi_n, int)
            or self.epi_n % 16
            or not 16 <= self.epi_n <= self.tile_mn[1]
        ):
            raise _refused(
                f"epi_n={self.epi_n!r}, tile_mn={self.tile_mn}",
                f"an epilogue sub-tile is a multiple of 16 columns (stmatrix x4 stores 16) and "
                f"at most the tile's {self.tile_mn[1]}",
                "pass epi_n=32 (the default) or another multiple of 16 up to BN",
            )
        if self.epi_stages < 2 or self.epi_subtiles % self.epi_stages:
            fits = [d for d in range(2, self.epi_subtiles + 1) if self.epi_subtiles % d == 0]
            raise _refused(
                f"epi_stages={self.epi_stages}",
                f"the epilogue's buffers must be >= 2 and divide its {self.epi_subtiles} sub-tiles",
                f"pass epi_stages= one of {fits} for tile_mn={self.tile_mn}, epi_n={self.epi_n}",
            )
        if self.k_block_bytes not in K_BLOCKS_BYTES:
            raise _refused(
                f"k_block_bytes={self.k_block_bytes}", f"not one of {K_BLOCKS_BYTES}", "pick one"
            )
        if self.ab_stages < 2:
            raise _refused(
                f"stages={self.stages}",
                f"the A/B ring has {self.ab_stages} stages, it needs at least 2",
                "pass stages=0 (as many as fit) or a smaller tile or epilogue",
            )
        for name, value, allowed in (
            ("layout", self.layout, sorted(LAYOUTS)),
            ("scheduler", self.scheduler, SCHEDULERS),
            ("kernel", self.kernel, KERNELS),
            ("scale", self.scale, SCALES),
            ("raster", self.raster, RASTERS),
        ):
            if value not in allowed:
                raise _refused(f"{name}={value!r}", f"not one of {allowed}", "pick one of them")
        if self.dynamic and self.cluster_size > 1:
            raise _refused(
                f"scheduler='dynamic', cluster_mn={self.cluster_mn}",
                "the dynamic scheduler hands out single-CTA tiles",
                "use cluster_mn=(1, 1) or the static scheduler",
            )
        if self.pingpong and self.dynamic:
            raise _refused(
                f"kernel={self.kernel!r}, scheduler='dynamic'",
                "the ping-pong kernel takes the static scheduler (its warpgroups take turns)",
                "use scheduler='static'",
            )
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
        self._check_stagger()
        self._check_defer()

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
                fix="use a cooperative 128x192, 128x128 or 64x128 tile or a 64-row "
                "ping-pong tile, or promote_every=0",
            )

    def _check_stagger(self) -> None:
        if not isinstance(self.promote_stagger, bool):
            raise _refused(
                f"promote_stagger={self.promote_stagger!r}", "not a bool", "pass True or False"
            )
        every = self.promotion
        if self.promote_stagger and (every < 2 or every % 2 or self.math_wgs != 2 or self.pingpong):
            raise RuntimeConfigError(
                f"GemmConfig(promote_stagger=True, promote_every={every}, kernel={self.kernel!r}, "
                f"tile_mn={self.tile_mn}): staggered groups shift the second of two cooperative "
                "consumer warpgroups by half a group, an even count of K blocks",
                resource="acc",
                fix="use an FP8 cooperative 128-row tile (promote_every 4, the default), or "
                "promote_stagger=False",
            )

    def _check_defer(self) -> None:
        if not isinstance(self.defer_store, bool):  # "off" would be truthy: on, silently
            raise _refused(f"defer_store={self.defer_store!r}", "not a bool", "pass True or False")
        if self.defer_store and (
            not self.promotion
            or self.pingpong
            or self.split
            or self.tail
            or self.promote_stagger
            or self.dynamic
            or self.acc_values > DEFER_MAX_ACC
        ):
            raise RuntimeConfigError(
                f"GemmConfig(defer_store=True, promote_every={self.promotion}, kernel="
                f"{self.kernel!r}, split_k={self.split_k}, tail_split={self.tail_split}, "
                f"promote_stagger={self.promote_stagger}, scheduler={self.scheduler!r}, "
                f"tile_mn={self.tile_mn}): a deferred store reads the previous tile's fp32 "
                "total while the next tile's WGMMAs write the other register tile; it needs "
                "two-level accumulation in the cooperative kernel, whole tiles (no split), "
                "groups in step, the static scheduler (which knows the CTA's last tile, stored "
                f"at once) and at most {DEFER_MAX_ACC} accumulator values a thread (both "
                "register tiles and the epilogue's live at once)",
                resource="c",
                fix="use an FP8 cooperative 128x128 or 64x128 tile with the static scheduler, "
                "without split_k, tail_split or promote_stagger, or defer_store=False",
            )

    def _check_split(self) -> None:
        if not isinstance(self.stream_k, bool):  # "off" would be truthy: on, silently
            raise _refused(f"stream_k={self.stream_k!r}", "not a bool", "pass True or False")
        if self.stream_k and (self.pingpong or self.dynamic):
            raise RuntimeConfigError(
                f"GemmConfig(stream_k=True, kernel={self.kernel!r}, scheduler="
                f"{self.scheduler!r}): a stream-K tail runs on the cooperative kernel with the "
                "static scheduler (each cluster's two tail pieces are dealt to it statically)",
                resource="c",
                fix="use kernel='cooperative', scheduler='static'",
            )
        if self.stream_k and (self.split_k > 1 or self.tail_split > 1):
            raise RuntimeConfigError(
                f"GemmConfig(stream_k=True, split_k={self.split_k}, tail_split="
                f"{self.tail_split}): stream-K already shares out the last round's K blocks",
                resource="c",
                fix="pass split_k=1 and tail_split=1 with stream_k=True",
            )
        for name, split in (("split_k", self.split_k), ("tail_split", self.tail_split)):
            if isinstance(split, bool) or not isinstance(split, int) or not 1 <= split <= MAX_SPLIT:
                raise RuntimeConfigError(
                    f"GemmConfig({name}={split!r}): the number of K chunks per output tile is "
                    f"an int in [1, {MAX_SPLIT}] (1: no split)",
                    resource="c",
                    fix=f"pass {name}=1 (off) or a small chunk count such as 2 or 4",
                )
            # A tail split deals cluster tiles (each CTA of a cluster takes the same K chunk of
            # its own tile); split-K's chunk is the L coordinate of each CTA tile: 1 x 1 only.
            clustered = self.cluster_size > 1 and name == "split_k"
            if split > 1 and (self.pingpong or self.dynamic or clustered):
                what = "split-K" if name == "split_k" else "a tail split"
                needs = " and 1 x 1 clusters" if name == "split_k" else ""
                raise RuntimeConfigError(
                    f"GemmConfig({name}={split}, kernel={self.kernel!r}, scheduler="
                    f"{self.scheduler!r}, cluster_mn={self.cluster_mn}): {what} runs on the "
                    f"cooperative kernel with the static scheduler{needs}",
                    resource="c",
                    fix="use kernel='cooperative', scheduler='static'"
                    + (", cluster_mn=(1, 1)" if name == "split_k" else ""),
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
        """Whether some tiles' K blocks are split between work items (split-K, a tail split
        or stream-K: the kernel then takes the workspace and the counters)."""
        return self.split_k > 1 or self.tail_split > 1 or self.stream_k

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
        return self.kernel.startswith("pingpong")

    @property
    def skip_turns(self) -> bool:
        """Ping-pong whose warpgroups skip each other's stages, in math order."""
        return self.kernel == "pingpong-skip"

    @property
    def math_wgs(self) -> int:
        """Consumer warpgroups in the CTA (each one alone on its tile in ping-pong)."""
        return 2 if self.pingpong else self.consumer_wgs

    @property
    def ring_threads(self) -> int:
        """Threads that wait for and release each A/B stage: every consumer warpgroup (in
        ping-pong both read the one ring, the one whose turn it is also computes), or with
        ``pingpong-skip`` the one whose turn it is."""
        return (1 if self.skip_turns else self.math_wgs) * WARPGROUP

    @property
    def dynamic(self) -> bool:
        """True for the atomic dynamic scheduler."""
        return self.scheduler == "dynamic"

    @property
    def consumer_wgs(self) -> int:
        """Consumer (WGMMA) warpgroups of one tile: one per 64 tile rows up to
        ``MAX_CONSUMER_WGS`` (cooperative), or one (ping-pong: a warpgroup alone on its tile
        issues ``BM / 64`` WGMMAs per K step)."""
        return consumer_warpgroups(self.tile_mn, self.pingpong)

    @property
    def mma_n(self) -> int:
        """N of one WGMMA: ``BN``, or ``BN / 2`` for a tile wider than ``WGMMA_MAX_N`` (two
        WGMMAs per warpgroup and K step, side by side)."""
        bn = self.tile_mn[1]
        return bn if bn <= WGMMA_MAX_N else bn // 2

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
    def epi_columns(self) -> int:
        """Epilogue sub-tiles per row block: ``ceil(BN / epi_n)`` (the last one ends at the
        tile's edge, overlapping the one before when ``epi_n`` does not divide ``BN``)."""
        return -(-self.tile_mn[1] // self.epi_n)

    @property
    def epi_subtiles(self) -> int:
        """Epilogue sub-tiles per CTA tile (row blocks of ``epi_tile`` times columns)."""
        return self.tile_mn[0] // self.epi_tile[0] * self.epi_columns

    @property
    def stage_bytes(self) -> int:
        """Bytes one A/B stage receives (the TMA transaction count)."""
        return (self.tile_mn[0] + self.tile_mn[1]) * self.k_block_bytes

    @property
    def ab_stages(self) -> int:
        """A/B ring depth (``stages`` or as many as fit)."""
        if self.stages:
            return self.stages
        epi_bytes = self.epi_tile[0] * self.epi_n * int(self.out_element.width) // 8
        epi_bytes *= self.epi_stages * (2 if self.pingpong else 1)  # ping-pong: buffers per WG
        return (SMEM_BYTES - SMEM_RESERVED - epi_bytes) // self.stage_bytes

    @property
    def max_active_clusters(self) -> int:
        """Persistent clusters, one CTA per SM: as many as this machine's GPU runs at once
        (``SMS // cluster_size`` on an H200, and where there is no GPU)."""
        return max_active_clusters(self.cluster_size)


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
