"""Split-K in the Hopper GEMM (``GemmConfig.split_k``).

Work items are ``(tile, chunk)``; each writes its fp32 partial tile to a workspace and the
tile's last item (a per-tile atomic counter) sums the partials in chunk order and stores the
tile. Checked on the CPU: the option's typed errors, the TS kernel's PTX against the
hand-written twin's in every family, what split-K adds to the PTX, the verified plan's shape
(the store guarded by the reduction's ``last``), the host's workspace sizing and argument
checks, the fallback rule and the tuner's split-K templates.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import pytest

pytest.importorskip("cutlass")
pytest.importorskip("ts_runtime")
pytest.importorskip("ts_verify")

from ts_codegen.dsl import compile_ptx
from ts_ir import ConditionalBlock, OpaqueCondition, Step, WorkTileLoop


@pytest.mark.parametrize("bad", [0, -1, True, 17, "2", 2.0])
def test_bad_split_is_a_typed_error(gemm: Any, bad: Any) -> None:
    from ts_runtime.errors import RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match=r"split_k=.*an int in \[1, 16\]") as err:
        gemm.GemmConfig(tile_mn=(128, 128), split_k=bad)
    assert "split_k=1" in err.value.fix


@pytest.mark.parametrize(
    "options",
    [
        {"tile_mn": (64, 128), "kernel": "pingpong"},
        {"scheduler": "dynamic"},
        {"cluster_mn": (2, 1)},
    ],
)
def test_split_needs_the_static_cooperative_kernel(gemm: Any, options: dict[str, Any]) -> None:
    from ts_runtime.errors import RuntimeConfigError

    with pytest.raises(RuntimeConfigError, match="split-K runs on the cooperative kernel"):
        gemm.GemmConfig(split_k=2, **options)
    assert not gemm.GemmConfig(**options).split


SPLIT: list[dict[str, Any]] = [
    {"tile_mn": (128, 128), "split_k": 2},
    {"tile_mn": (128, 128), "split_k": 4, "alpha": 0.5, "beta": 1.0, "bias": True},
    {"tile_mn": (64, 256), "split_k": 3},
    {"tile_mn": (128, 256), "split_k": 2, "layout": "nt"},
    {"tile_mn": (128, 128), "split_k": 2, "dtype": "e4m3", "scale": "rowwise"},  # + promotion
    {"tile_mn": (256, 128), "split_k": 2},  # two warpgroups of two row blocks: 256 threads
]


@pytest.mark.parametrize("options", SPLIT, ids=lambda o: "-".join(map(str, o.values())))
def test_split_same_code_as_twin(gemm: Any, options: dict[str, Any]) -> None:
    out = gemm.compile_only(gemm.GemmConfig(**options))
    assert out["verified"] is True and out["same_counts"] is True
    assert out["ts"] == out["twin"] and out["ts_total"] == out["twin_total"]


@pytest.mark.parametrize("name", ["ts", "twin"])
def test_split_in_the_ptx(gemm: Any, name: str) -> None:
    """Split-K, 128 x 128 tile (64 fp32 values per consumer thread), 3 chunks: one store per
    value, the first chunk's and two more chunks' loads, one atomic add (and the counter's
    reset), a GPU-scope fence on each side, two more named barriers."""

    def ptx(split: int) -> str:
        cfg = gemm.GemmConfig(tile_mn=(128, 128), split_k=split)
        return str(compile_ptx(dict(gemm.kernels(cfg))[name], *gemm.fake_operands(cfg))[1])

    plain, split = ptx(1), ptx(3)

    def count(text: str, pattern: str) -> int:
        return len(re.findall(pattern, text))

    assert count(split, r"st\.global\.b32") - count(plain, r"st\.global\.b32") == 64
    assert count(split, r"ld\.global[.\w]*\.b32") - count(plain, r"ld\.global[.\w]*\.b32") == 3 * 64
    assert count(split, r"atom\.global\.acq_rel\.add") == 1
    assert count(split, r"atom\.global\.exch") == 1
    assert count(split, r"fence\.acq_rel\.gpu") == 2 and count(plain, r"fence\.acq_rel\.gpu") == 0
    assert count(split, r"bar\.sync\s+1,") == count(plain, r"bar\.sync\s+1,") + 2


def test_split_plan_stores_only_in_the_last_item(gemm: Any) -> None:
    plan = gemm.make_plan(gemm.GemmConfig(tile_mn=(128, 128), split_k=2))
    (task,) = [t for t in plan.tasks if t.name == "mma"]
    (tiles,) = [n for n in task.schedule.body if isinstance(n, WorkTileLoop)]
    labels = [n.describe() for n in tiles.body if isinstance(n, Step)]
    assert labels[-1] == "acc.reduce"
    (guarded,) = [n for n in tiles.body if isinstance(n, ConditionalBlock)]
    assert isinstance(guarded.guard, OpaqueCondition) and guarded.guard.key == "last"
    assert [s.describe() for s in guarded.body if isinstance(s, Step)] == ["c.store"]
    (ring,) = [r for r in plan.resources if r.name == "ab"]
    assert ring.pipeline is not None  # the same ring; the chunk only moves the K coordinate


@pytest.mark.parametrize("split", [1, 2, 3, 4, 5])
def test_chunks_cover_every_k_block_once(split: int) -> None:
    """Chunk ``l`` reads blocks ``l * c .. l * c + c - 1`` with ``c = ceil(k_blocks / split)``
    (``chunk_blocks``); those past the last block arrive zero-filled and add nothing."""
    for k_blocks in range(0, 41):
        c = -(-k_blocks // split)
        read = [ch * c + k for ch in range(split) for k in range(c)]
        assert sorted(b for b in read if b < k_blocks) == list(range(k_blocks))
        assert len(read) - k_blocks < split  # fewer zero blocks than chunks


# -- host: workspace sizing and argument checks ----------------------------------------------
@dataclasses.dataclass
class _Tensor:
    """What ``check_operands`` reads of a torch tensor (no torch on the CPU runners)."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str = "torch.bfloat16"

    def stride(self, dim: int | None = None) -> Any:
        return self.strides if dim is None else self.strides[dim]

    def element_size(self) -> int:
        return 2

    def data_ptr(self) -> int:
        return 256

    def numel(self) -> int:
        return math.prod(self.shape)


def _problem(m: int, n: int, k: int) -> dict[str, Any]:
    a, b, c = _Tensor((m, k), (k, 1)), _Tensor((n, k), (k, 1)), _Tensor((m, n), (n, 1))
    return {"a": a, "b": b, "c": c}


def test_workspace_sizing(gemm: Any, host: Any) -> None:
    cfg = gemm.GemmConfig(tile_mn=(128, 128), split_k=4)
    assert host.output_tiles(cfg, 128, 8192) == 64
    assert host.output_tiles(cfg, 129, 8193) == 2 * 65
    assert host.workspace_elements(cfg, 128, 8192) == 64 * 4 * 128 * 128
    assert host.workspace_elements(gemm.GemmConfig(tile_mn=(128, 128)), 128, 8192) == 0


def test_split_longer_than_k_is_refused(gemm: Any, host: Any) -> None:
    from ts_runtime.errors import RuntimeConfigError

    cfg = gemm.GemmConfig(tile_mn=(128, 128), split_k=4)
    host.check_operands(cfg, **_problem(128, 256, 4 * 64))  # four blocks: one each
    host.check_operands(cfg, **_problem(128, 256, 0))  # K = 0: every partial is zero
    with pytest.raises(RuntimeConfigError, match=r"split_k=4\) splits K = 192 \(3 blocks") as err:
        host.check_operands(cfg, **_problem(128, 256, 3 * 64))
    assert "split_k <= 3" in err.value.fix


def test_workspace_past_32_bit_indices_is_refused(gemm: Any, host: Any) -> None:
    from ts_runtime.errors import RuntimeConfigError

    cfg = gemm.GemmConfig(tile_mn=(128, 128), split_k=16)
    with pytest.raises(RuntimeConfigError, match="past the kernel's 32-bit indices"):
        host.check_operands(cfg, **_problem(16384, 16384, 8192))
    # A tail split's workspace holds its last round's tiles only: 16384^2 is 8192 128 x 256
    # tiles, 8 of them in the tail (13 x 16 MB of every tile's partials would not fit).
    tail = gemm.GemmConfig(tail_split=16)
    assert host.workspace_elements(tail, 16384, 16384) == 8 * 16 * 128 * 256
    host.check_operands(tail, **_problem(16384, 16384, 8192))


# -- the fallback rule and the tuner ------------------------------------------------------------
def test_rule_splits_few_tiles(gemm: Any, table: Any) -> None:
    for dtype in ("bf16", "e4m3"):  # 32 tiles of 128 x 128, 64 of 64 x 128: four chunks
        cfg = table.rule_config((128, 4096, 8192), gemm.GemmConfig(dtype=dtype), split=True)
        assert (cfg.tile_mn, cfg.split_k, cfg.kernel) == ((128, 128), 4, "cooperative")
        assert cfg.promotion == (4 if dtype == "e4m3" else 0)
    tiny = table.rule_config((64, 256, 8192), gemm.GemmConfig(), split=True)  # 2 tiles: 4
    assert tiny.split_k == 4
    short_k = table.rule_config((128, 4096, 512), gemm.GemmConfig(), split=True)  # no split
    assert (short_k.tile_mn, short_k.split_k, short_k.kernel) == ((64, 128), 1, "pingpong")
    many = table.rule_config((8192, 8192, 8192), gemm.GemmConfig(), split=True)
    assert many.split_k == 1
    # On by default since split-K ran on the GPU; off, the rule falls back to ping-pong.
    default = table.rule_config((128, 4096, 8192), gemm.GemmConfig())
    assert (default.tile_mn, default.split_k) == ((128, 128), 4)
    unsplit = table.rule_config((128, 4096, 8192), gemm.GemmConfig(), split=False)
    assert (unsplit.tile_mn, unsplit.split_k, unsplit.kernel) == ((64, 128), 1, "pingpong")


@pytest.mark.parametrize("dtype", ["bf16", "e4m3"])
def test_rule_takes_half_tiles_when_they_fill_a_wave(gemm: Any, table: Any, dtype: str) -> None:
    """128 x 8192: 128 tiles of 64 x 128 (a wave, within 10 %) in 2 x 1 clusters, no split-K
    (the tuned winner on the H200); 64 rows: one tile row, no cluster."""
    base = gemm.GemmConfig(dtype=dtype)
    cfg = table.rule_config((128, 8192, 8192), base)
    assert (cfg.tile_mn, cfg.cluster_mn, cfg.kernel, cfg.split_k) == (
        (64, 128),
        (2, 1),
        "cooperative",
        1,
    )
    assert cfg.promotion == (4 if dtype == "e4m3" else 0)
    one_row = table.rule_config((64, 16384, 8192), base)
    assert (one_row.tile_mn, one_row.cluster_mn, one_row.split_k) == ((64, 128), (1, 1), 1)


def test_tuner_offers_split_for_few_tiles_only(gemm: Any, load_example: Any) -> None:
    tune = load_example("gemm_tune")
    few = tune.candidates((128, 8192, 8192), gemm.GemmConfig())
    assert {c.get("split_k", 1) for c in few} == {1, 2, 3, 4}
    many = tune.candidates((8192, 8192, 8192), gemm.GemmConfig())
    assert {c.get("split_k", 1) for c in many} == {1}
    short = tune.candidates((128, 8192, 256), gemm.GemmConfig())  # 4 K blocks
    assert {c.get("split_k", 1) for c in short} == {1}
    keys = [tune.Candidate(f, None).key for f in few]
    assert len(set(keys)) == len(keys) and any(k.endswith("split_k4") for k in keys)


def test_table_entries_may_set_split(gemm: Any, table: Any) -> None:
    cfg = gemm.GemmConfig(tile_mn=(128, 128), split_k=2)
    fields = table.tuned_fields(cfg)
    assert fields["split_k"] == 2
    assert "split_k" not in table.tuned_fields(gemm.GemmConfig())  # old tables read the same
    assert table.apply_fields(gemm.GemmConfig(), fields) == cfg
    plain = {k: v for k, v in fields.items() if k != "split_k"}
    assert table.apply_fields(cfg, plain).split_k == 1  # an entry without it: no split


def test_split_ptx_passes_translation_validation(gemm: Any) -> None:
    """The compiled TS kernel's barrier protocol is the verified plan's (``Compiled.check``)."""
    cfg = gemm.GemmConfig(tile_mn=(128, 128), split_k=2, dtype="e4m3", scale="tensor")
    report = gemm.gemm_kernel(cfg).compile(*gemm.fake_operands(cfg)).check()
    assert report.ok, report.as_text()
