"""The attention example on packed variable-length batches (``AttentionConfig(varlen=True)``).

Host checks: every family's plan verifies with the dynamic (atomic) work queue handing each
tile to both math warpgroups; the per-tile KV trip count agrees with a brute-force count
(bottom-right causal, empty and unequal sequences); the tile table holds every tile of a
non-empty sequence, longest first; bad batches are refused before anything is built; a math
warpgroup that does not take the handed-over tile is refused. Compiles: D = 128 bf16 causal
GQA and D = 256 fp16, each PTX with the WGMMAs, TMA loads, the queue's atomics, plain O
stores (no TMA store: it would write the next sequence's rows) and ``setmaxnreg``; the
non-causal one passes translation validation.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("cutlass")
pytest.importorskip("ts_runtime")
pytest.importorskip("ts_verify")


@pytest.fixture(scope="module")
def attention(load_example: Callable[[str], Any]) -> Any:
    return load_example("attention")


@pytest.fixture(scope="module")
def varlen(load_example: Callable[[str], Any]) -> Any:
    return load_example("_attention_varlen")


@pytest.fixture(scope="module")
def host(load_example: Callable[[str], Any]) -> Any:
    return load_example("_attention_host")


FAMILIES = [
    {"head_dim": d, "dtype": dt, "causal": c, "group": g, "varlen": True}
    for d in (64, 128, 256)
    for dt, c, g in (("bf16", False, 1), ("fp16", True, 1), ("bf16", True, 4))
]


@pytest.mark.parametrize("options", FAMILIES, ids=lambda o: "-".join(map(str, o.values())))
def test_every_varlen_family_verifies(attention: Any, options: dict[str, Any]) -> None:
    plan = attention.make_plan(attention.AttentionConfig(**options))
    assert {t.name for t in plan.tasks} == {"load", "math0", "math1"}
    queue = next(r for r in plan.resources if r.name == "WorkQueue")
    assert queue.pipeline is not None  # the dynamic queue's hand-off ring


def test_varlen_with_math_order_verifies(attention: Any) -> None:
    attention.make_plan(attention.AttentionConfig(varlen=True, causal=True, stagger=True))


LENGTHS = (0, 1, 63, 64, 65, 127, 128, 129, 300)


def _sees(row: int, key: int, sq: int, sk: int, causal: bool) -> bool:
    """Query ``row`` of a sequence sees ``key`` (bottom-right causal, as flash-attn)."""
    return key < sk and (not causal or key <= row + sk - sq)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 256])
def test_varlen_trip_count_matches_brute_force(
    attention: Any, varlen: Any, causal: bool, head_dim: int
) -> None:
    cfg = attention.AttentionConfig(head_dim=head_dim, causal=causal, varlen=True)
    bn, bm = cfg.block_n, attention.BLOCK_M
    for sq in LENGTHS:
        for sk in LENGTHS:
            for m in range(-(-sq // bm)):
                rows = range(m * bm, min((m + 1) * bm, sq))
                needed = [
                    n
                    for n in range(-(-sk // bn))
                    if any(
                        _sees(r, c, sq, sk, causal)
                        for r in rows
                        for c in range(n * bn, (n + 1) * bn)
                    )
                ]
                assert needed == list(range(len(needed))), (sq, sk, m)  # a prefix
                # at least one block: a tile whose rows see nothing loads one, masked whole
                got = varlen.kv_blocks(cfg, sq, sk, m)
                assert got == max(1, len(needed)), (sq, sk, m)


def test_tile_table_is_longest_first(attention: Any, varlen: Any) -> None:
    cfg = attention.AttentionConfig(causal=True, varlen=True)
    lens_q = [0, 300, 5, 129, 0, 1000]
    lens_k = [7, 300, 5, 129, 0, 1000]
    table = varlen.tile_table(cfg, lens_q, lens_k)
    every = {(b, m) for b, n in enumerate(lens_q) for m in range(-(-n // 128))}
    assert set(table) == every and len(table) == len(every)  # empty sequences: no tile
    cost = [varlen.kv_blocks(cfg, lens_q[b], lens_k[b], m) for b, m in table]
    assert cost == sorted(cost, reverse=True)
    assert table[0] == (5, 7)  # the last tile of the longest causal sequence
    assert varlen.tile_table(cfg, [0, 0], [0, 3]) == []


def _batch(**change: Any) -> dict[str, Any]:
    batch: dict[str, Any] = {
        "q_shape": (10, 4, 128),
        "k_shape": (12, 2, 128),
        "v_shape": (12, 2, 128),
        "dtypes": ["bf16"] * 3,
        "cu_q": [0, 0, 3, 10],
        "cu_k": [0, 5, 5, 12],
        "max_seqlen": (7, 7),
    }
    batch.update(change)
    return batch


def test_good_batch(varlen: Any) -> None:
    cfg, lens_q, lens_k = varlen.check_batch(**_batch(), causal=True)
    assert (lens_q, lens_k) == ([0, 3, 7], [5, 0, 7])
    assert (cfg.varlen, cfg.group, cfg.causal, cfg.head_dim) == (True, 2, True, 128)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"cu_q": [0, 5, 3, 10]}, "cu_seqlens_q decreases"),
        ({"cu_k": [0, 5, 5, 11]}, "from 0 to the 12 packed tokens"),
        ({"cu_k": [0, 12]}, "different B"),
        ({"dtypes": ["bf16", "fp16", "bf16"]}, "share fp16 or bf16"),
        ({"dtypes": ["float32"] * 3}, "share fp16 or bf16"),
        ({"k_shape": (12, 3, 128), "v_shape": (12, 3, 128)}, "not a multiple of 3"),
        ({"v_shape": (12, 2, 64)}, "want"),
        ({"max_seqlen": (6, 7)}, "max_seqlen_q 6"),
    ],
)
def test_bad_batch_is_refused(varlen: Any, change: dict[str, Any], message: str) -> None:
    with pytest.raises(varlen.BatchError, match=message):
        varlen.check_batch(**_batch(**change))


def test_unsupported_head_dim_is_refused(varlen: Any) -> None:
    shapes = {"q_shape": (10, 4, 96), "k_shape": (12, 2, 96), "v_shape": (12, 2, 96)}
    with pytest.raises(ValueError, match="head_dim 96"):
        varlen.check_batch(**_batch(**shapes))


def test_warpgroup_that_skips_the_handed_over_tile_is_refused(
    attention: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The producer claims every next tile and hands it to both math warpgroups: one that
    never takes it leaves each hand-off stage one warpgroup short (the producer would wait
    for a release that never comes)."""
    from ts_runtime.errors import GroupSizeError

    schedule = attention.math_schedule

    def only_first(step: Any, wg: Any, dynamic: bool = False) -> Any:
        return schedule(step, wg, dynamic and wg == 0)

    monkeypatch.setattr(attention, "math_schedule", only_first)
    with pytest.raises(GroupSizeError, match=r"TS-R003: resource `WorkQueue`.*never completes"):
        attention.make_plan(attention.AttentionConfig(varlen=True))


def ptxas_clean(ptx: str, ptxas_log: Callable[..., str]) -> None:
    """ptxas keeps every register (D = 256: ``O`` alone is 128 a thread) and the WGMMA
    pipeline: no spill, no serialized WGMMA (warnings C7514 / C7515). Skipped without ptxas."""
    if shutil.which("ptxas") is None:
        return
    log = ptxas_log(ptx, "attention")
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in log, log
    assert "C7514" not in log and "C7515" not in log, log


@pytest.mark.parametrize(
    "options",
    [
        {"dtype": "bf16", "causal": True, "group": 2},
        {"head_dim": 256, "dtype": "fp16"},
    ],
    ids=["d128-bf16-causal-gqa", "d256-fp16"],
)
def test_varlen_compiles_for_sm90a(
    attention: Any, host: Any, options: dict[str, Any], ptxas_log: Callable[..., str]
) -> None:
    cfg = attention.AttentionConfig(**options, varlen=True)
    compiled = attention.attention_kernel(cfg).compile(*host.fake_operands(cfg))
    ptx = compiled.as_text()
    regs = re.findall(r"setmaxnreg\.(dec|inc)\.sync\.aligned\.u32\s+(\d+);", ptx)
    assert sorted(regs) == [("dec", "40"), ("inc", "232"), ("inc", "232")]
    d, bn = cfg.head_dim, cfg.block_n
    assert len(re.findall(rf"wgmma\.mma_async\.sync\.aligned\.m64n{bn}k16", ptx)) >= 4 * d // 16
    assert re.search(r"cp\.async\.bulk\.tensor\.\dd\.shared::\w+\.global", ptx)
    # O by plain stores only: a TMA store would write past the sequence
    assert not re.search(r"cp\.async\.bulk\.tensor\.\dd\.global\.shared", ptx)
    assert "st.global" in ptx
    assert re.search(r"atom\.global\.\w*\.?add", ptx)  # the dynamic queue claims tiles
    ptxas_clean(ptx, ptxas_log)
    if not cfg.causal:
        compiled.check().raise_for_errors()
