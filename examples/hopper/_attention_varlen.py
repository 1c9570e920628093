"""Variable-length attention: sequences packed along the token axis, ``cu_seqlens`` style.

``q`` is ``(total_q, H, D)``, ``k`` / ``v`` are ``(total_k, Hkv, D)``; sequence ``b`` owns
query rows ``cu_seqlens_q[b] .. cu_seqlens_q[b + 1]`` and key rows ``cu_seqlens_k[b] ..
cu_seqlens_k[b + 1]`` (flash-attn's ``flash_attn_varlen_func`` convention; a sequence may be
empty). The kernel is ``attention.py``'s with ``AttentionConfig(varlen=True)``; this module
holds what differs:

* the work tiles: one per (128-row query tile of a sequence, head). The host lists the
  ``(sequence, query tile)`` pairs that exist, most KV blocks first (``tile_table``), and the
  kernel walks ``(head, table row)`` with the head fastest, from the dynamic (atomic) work
  queue: the longest tiles start first and the short ones fill the tail. An empty sequence
  has no tile at all.
* per-tile dynamic domains: a tile's KV trip count comes from its sequence's lengths
  (``kv_blocks``), read from ``cu_seqlens`` on the device;
* loads at a row offset: a TMA box starts at the sequence's first row plus the tile's
  offset (``cute.domain_offset`` on the TMA coordinates). Its rows past the sequence's end
  are the next sequence's (or zeros past the tensor): the softmax masks those keys (the
  sequence's ``seqlen_k`` is the limit), ``P`` is then 0 for their V rows, and query rows
  past the end are never stored;
* ``O`` by predicated stores from registers (``store``): a TMA store of a 64-row box would
  write the next sequence's rows, which another CTA owns. Per-sequence descriptors would
  clip, but they must be built (and fenced) on the device per tile; a store per value,
  guarded by the row's bound, is correct for every length and needs nothing shared.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Callable
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import _attention_steps as steps
import cutlass
import cutlass.cute as cute
from _attention_steps import BLOCK_M, WG_M, AttentionConfig, MathState
from cuda.bindings import driver as cuda  # type: ignore[import-untyped]
from cutlass.base_dsl.ast_helpers import range_constexpr
from cutlass.cute.nvgpu import cpasync
from cutlass.cutlass_dsl import Constexpr

from task_scheduling.harness import max_active_clusters
from task_scheduling.tiles import TileRaster

# ---------------------------------------------------------------------------------------------
# work tiles
# ---------------------------------------------------------------------------------------------


def kv_blocks(cfg: AttentionConfig, seqlen_q: Any, seqlen_k: Any, m: Any) -> Any:
    """KV blocks that query tile ``m`` of a sequence sees (Python ints or DSL values).

    Every block up to ``ceil(seqlen_k / BN)``; with ``causal`` only up to the one holding the
    key of the tile's last row's diagonal (bottom right: row ``i`` sees keys ``j <= i +
    seqlen_k - seqlen_q``). At least 1: the math tasks peel block 0, and a tile whose rows
    see no key (``seqlen_k = 0``, or every row above the diagonal) loads one block that the
    softmax masks whole (its rows get ``O = 0``, ``LSE = -inf``).
    """
    bn = cfg.block_n
    blocks = (seqlen_k + bn - 1) // bn
    static = all(isinstance(x, int) for x in (seqlen_q, seqlen_k, m))
    if cfg.causal:
        last_row = m * BLOCK_M + BLOCK_M - 1
        last_row = min(last_row, seqlen_q - 1) if static else cutlass.min(last_row, seqlen_q - 1)  # type: ignore[attr-defined]
        # the key index of the last row's diagonal; below 0 it sees no key (clamped below)
        diagonal = (last_row + seqlen_k - seqlen_q + bn) // bn
        blocks = min(blocks, diagonal) if static else cutlass.min(blocks, diagonal)  # type: ignore[attr-defined]
    return max(blocks, 1) if static else cutlass.max(blocks, 1)  # type: ignore[attr-defined]


def tile_table(
    cfg: AttentionConfig, seqlens_q: list[int], seqlens_k: list[int]
) -> list[tuple[int, int]]:
    """The ``(sequence, query tile)`` pairs that exist, most KV blocks first.

    An empty query sequence has no tile. Ties keep the order of the sequences (a sort is
    stable), so the table is deterministic.
    """
    tiles = [
        (b, m)
        for b, (sq, _) in enumerate(zip(seqlens_q, seqlens_k, strict=True))
        for m in range(-(-sq // BLOCK_M))
    ]
    return sorted(tiles, key=lambda t: -kv_blocks(cfg, seqlens_q[t[0]], seqlens_k[t[0]], t[1]))


class BatchError(ValueError):
    """A packed batch the kernel cannot take (shapes, dtypes or offsets): raised on the
    host, before anything is compiled or launched."""


def check_batch(
    q_shape: tuple[int, ...],
    k_shape: tuple[int, ...],
    v_shape: tuple[int, ...],
    dtypes: list[str],
    cu_q: list[int],
    cu_k: list[int],
    max_seqlen: tuple[int, int],
    causal: bool = False,
    scale: float | None = None,
) -> tuple[AttentionConfig, list[int], list[int]]:
    """``(cfg, seqlens_q, seqlens_k)`` of a packed batch, or a ``BatchError`` saying why not.

    ``q`` ``(total_q, H, D)``, ``k`` / ``v`` ``(total_k, Hkv, D)`` with ``H`` a multiple of
    ``Hkv``; one dtype, fp16 or bf16; ``cu_q`` / ``cu_k`` ``B + 1`` offsets each, from 0 to the
    total, non-decreasing (a sequence may be empty); lengths within ``max_seqlen`` (q, k).
    A head dim the kernel has no tiles for is ``AttentionConfig``'s ``ValueError``.
    """
    if len(set(dtypes)) != 1 or dtypes[0] not in steps.DTYPES:
        raise BatchError(f"attention_varlen: q / k / v must share fp16 or bf16, got {dtypes}")
    if len(q_shape) != 3 or len(k_shape) != 3 or k_shape != v_shape or k_shape[2] != q_shape[2]:
        raise BatchError(
            f"attention_varlen: q {q_shape}, k {k_shape}, v {v_shape}: want (total_q, H, D) "
            "and (total_k, Hkv, D)"
        )
    (t_q, h, d), (t_k, hkv, _) = q_shape, k_shape
    if hkv < 1 or h % hkv:
        raise BatchError(f"attention_varlen: {h} query heads, not a multiple of {hkv} KV heads")
    if len(cu_q) != len(cu_k):
        raise BatchError("attention_varlen: cu_seqlens_q and cu_seqlens_k hold different B")
    lens = []
    for name, cu, total, most in (("q", cu_q, t_q, max_seqlen[0]), ("k", cu_k, t_k, max_seqlen[1])):
        if len(cu) < 2 or cu[0] != 0 or cu[-1] != total:
            raise BatchError(
                f"attention_varlen: cu_seqlens_{name} {cu[:6]}...: want B + 1 >= 2 offsets "
                f"from 0 to the {total} packed tokens"
            )
        n = [y - x for x, y in itertools.pairwise(cu)]
        if min(n) < 0:
            raise BatchError(f"attention_varlen: cu_seqlens_{name} decreases ({cu[:6]}...)")
        if max(n) > most:
            raise BatchError(f"attention_varlen: a sequence of {max(n)} > max_seqlen_{name} {most}")
        lens.append(n)
    cfg = AttentionConfig(d, dtypes[0], causal, h // hkv, scale=scale, varlen=True)
    return cfg, lens[0], lens[1]


@dataclasses.dataclass
class SeqTile:
    """A work tile's sequence on the device.

    Attributes:
        head: the query head; m: the query tile within the sequence; q0 / k0: the
        sequence's first query / key row in the packed tensors; seqlen_q / seqlen_k: its
        lengths.
    """

    head: Any
    m: Any
    q0: Any
    k0: Any
    seqlen_q: Any
    seqlen_k: Any


def seq_tile(table: Any, cu_q: Any, cu_k: Any, coord: Any) -> SeqTile:
    """Work tile ``coord = (head, table row, 0)``: its sequence from the table and
    ``cu_seqlens``."""
    head, row = coord[0], coord[1]
    b, m = table[(row, 0)], table[(row, 1)]
    q0, k0 = cu_q[b], cu_k[b]
    return SeqTile(head, m, q0, k0, cu_q[b + 1] - q0, cu_k[b + 1] - k0)


# ---------------------------------------------------------------------------------------------
# device steps
# ---------------------------------------------------------------------------------------------


def tma_load_at(
    atom: Any,
    gmem: Any,
    smem: Any,
    box: tuple[int, int],
    offset: tuple[Any, Any, Any],
    batch: Any,
    stage: Any,
    bar: Any,
) -> None:
    """TMA-load the ``box`` whose first element is ``offset`` of head ``batch`` into
    ``stage`` (completes on ``bar``): the box starts at any row, not a multiple of it."""
    tiles = cute.flat_divide(cute.domain_offset(offset, gmem), box)
    s, g = cpasync.tma_partition(
        atom, 0, cute.make_layout(1), cute.group_modes(smem, 0, 2), cute.group_modes(tiles, 0, 2)
    )
    cute.copy(atom, g[(None, 0, 0, batch)], s[(None, stage)], tma_bar_ptr=bar)


def load(
    operand: str,
    atom: Any,
    gmem: Any,
    smem: Any,
    box: tuple[int, int],
    tile: SeqTile,
    kv_head: Any,
    n: Any,
    stage: Any,
    bar: Any,
) -> None:
    """The producer's load of ``operand`` for ``tile`` (and KV block ``n``) into ``stage``.

    Q: the tile's two 64-row halves (slots ``2 stage`` and ``2 stage + 1``). K: ``BN`` key
    rows from block ``n``. V: the same rows, as the ``(D, BN)`` box of its D-major view.
    """
    if operand == "q":
        for half in (0, 1):
            row = tile.q0 + tile.m * BLOCK_M + WG_M * half
            tma_load_at(atom, gmem, smem, box, (row, 0, 0), tile.head, 2 * stage + half, bar)
        return
    row = tile.k0 + n * box[0 if operand == "k" else 1]
    offset = (row, 0, 0) if operand == "k" else (0, row, 0)
    tma_load_at(atom, gmem, smem, box, offset, kv_head, stage, bar)


@cute.jit
def store(
    cfg: Constexpr[AttentionConfig],
    st: MathState,
    o_coords: Any,
    o: Any,
    lse: Any,
    tile: SeqTile,
) -> None:
    """Write this warpgroup's 64 rows of ``tile``: ``O / rowsum`` and the LSE, each value
    by a plain store guarded by its row's bound (``seqlen_q``).

    ``o`` is ``(total_q, D, H)`` (``steps.seq_view``), ``lse`` ``(H, total_q)``. A row with no
    visible key gets ``O = 0`` and ``LSE = -inf``, as in the dense kernel.
    """
    lane = st.tidx % 4
    first = tile.m * BLOCK_M + WG_M * st.wg
    for h in range_constexpr(2):
        total = cute.arch.warp_reduction_sum(st.row_sum[h], threads_in_group=4)
        inv = cutlass.Float32(0.0)
        lse_h = -cutlass.Float32.inf
        if total > 0.0:
            inv = cute.arch.rcp_approx(total)
            lse_h = (
                st.row_max[h] * cutlass.Float32(cfg.scale_log2) + steps.dsl_math.log2(total)
            ) * cutlass.Float32(1.0 / steps.LOG2_E)
        row = first + o_coords[2 * h][0]
        if row < tile.seqlen_q:
            token = tile.q0 + row
            if lane == 0:
                lse[(tile.head, token)] = lse_h
            for i in steps.half_values(cute.size(st.acc_o), h):
                o[(token, o_coords[i][1], tile.head)] = (st.acc_o[i] * inv).to(cfg.element)


# ---------------------------------------------------------------------------------------------
# host builders (inside the @cute.jit launcher)
# ---------------------------------------------------------------------------------------------


def token_view(t: Any) -> Any:
    """A packed ``(T, H, D)`` row-major tensor as ``(H, T, D)``: the dense kernel's
    ``(BH, S, D)`` with the heads as the batch (``steps.seq_view`` / ``dim_view`` apply)."""
    shape = (t.shape[1], t.shape[0], t.shape[2])
    return cute.make_tensor(
        t.iterator, cute.make_layout(shape, stride=(t.stride[1], t.stride[0], 1))
    )


def launcher(cfg: AttentionConfig, start: Callable[..., None]) -> Any:
    """The ``@cute.jit`` ``launch(q, k, v, o, lse, cu_q, cu_k, table, counters, stream=None)``.

    ``q`` / ``o``: ``(total_q, H, D)``, ``k`` / ``v``: ``(total_k, Hkv, D)`` (row-major),
    ``lse``: fp32 ``(H, total_q)``, ``cu_q`` / ``cu_k``: Int32 ``(B + 1,)``, ``table``: Int32
    ``(tiles, 2)`` (``tile_table``, at least one row), ``counters``: two zeroed Int32 (the
    dynamic queue's; the last CTA zeroes them again).
    """

    @cute.jit
    def launch(
        q: cute.Tensor,
        k: cute.Tensor,
        v: cute.Tensor,
        o: cute.Tensor,
        lse: cute.Tensor,
        cu_q: cute.Tensor,
        cu_k: cute.Tensor,
        table: cute.Tensor,
        counters: cute.Tensor,
        stream: cuda.CUstream | None = None,
    ) -> None:
        qv, kv, vv, ov = (token_view(t) for t in (q, k, v, o))
        layouts = steps.make_smem_layouts(cfg)
        atoms = steps.make_tma_atoms(cfg, qv, kv, vv, ov, layouts)
        # (head, table row): the raster walks its first mode fastest, so every head of the
        # longest tile goes out before the next tile
        heads = cute.size(qv, mode=[0])
        rows = cute.size(table, mode=[0])
        params = TileRaster((heads, rows, 1), (1, 1, 1), 1)
        start(
            *atoms,
            *layouts,
            params,
            lse,
            steps.seq_view(ov),
            cu_q,
            cu_k,
            table,
            counters,
            grid=params.get_grid_shape(max_active_clusters()),
            block=(cfg.block_threads, 1, 1),
            cluster=(1, 1, 1),
            stream=stream,
        )

    return launch


__all__ = [
    "BatchError",
    "SeqTile",
    "check_batch",
    "kv_blocks",
    "launcher",
    "load",
    "seq_tile",
    "store",
    "tile_table",
    "tma_load_at",
    "token_view",
]
