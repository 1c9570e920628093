"""The Hopper GEMM's per-shape configuration table and the heuristic that reads it.

A problem ``M x N x K`` falls in a *shape class*: a bucket of ``M``, of ``N`` and of ``K`` and
how many waves of 128 x 256 tiles it gives the 132 SMs (``shape_class``). The table
(``gemm_table.json`` beside this file, written by ``gemm_tune.py``) holds the fastest verified
configuration per dtype and class; ``pick`` looks the problem's class up and, for a class the
table does not hold, falls back to a rule on the tile count (``rule_config``). Only the
schedule fields (``TUNED_FIELDS``) come from the table: the dtype, layout, epilogue and scales
stay the caller's. See ``docs/gemm.rst`` (the tuner and its table).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from pathlib import Path
from typing import Any

from _gemm_config import SMS, GemmConfig

from task_scheduling.kernel import RuntimeConfigError

SCHEMA = 1
"""Version of the table's JSON format; a table of another version is refused."""
TABLE_KIND = "ts-hopper-gemm-table"
TABLE_PATH = Path(__file__).resolve().with_name("gemm_table.json")
TABLE_ENV = "TS_GEMM_TABLE"  # a table of one's own instead of the shipped one
TUNED_FIELDS = (
    "tile_mn",
    "cluster_mn",
    "kernel",
    "scheduler",
    "stages",
    "swizzle",
    "raster",
    "epi_n",
    "epi_stages",
    "split_k",
    "k_block_bytes",
    "tail_split",
    "stream_k",
    "promote_stagger",
    "defer_store",
)
"""The ``GemmConfig`` fields a table entry sets (the schedule, not the math)."""
OPTIONAL_FIELDS = {
    "split_k": 1,
    "k_block_bytes": 128,
    "tail_split": 1,
    "stream_k": False,
    "promote_stagger": False,
    "defer_store": False,
}
"""Fields an entry may leave out (added after schema 1's first tables): their value then, and
``tuned_fields`` leaves them out at it, so a table without split-K reads as before."""
TUPLE_FIELDS = ("tile_mn", "cluster_mn")
REQUIRED_KEYS = ("schema", "kind", "created", "gpu", "cute_dsl", "command", "timed", "entries")
REGENERATE = "python examples/hopper/gemm_tune.py --shapes sweep --dtype bf16 -o <table.json>"
# Bucket edges (inclusive upper bounds): a dimension is "s" up to the first, "m" up to the
# second, else "l". M and N share edges (a 256-row M is decode-like; past 2048 a dimension
# spans many tiles); K's edges mark a short main loop (one 64-wide K block per 16 rows of a
# 1024 K) and a very long one.
MN_EDGES = (256, 2048)
K_EDGES = (1024, 8192)
WAVE_TILE = (128, 256)  # waves are counted in the default tile, whatever the class picks
WAVE_EDGES = (1.0, 4.0)  # under one wave / a few (the last one's fill matters) / many
# A few waves whose last one fills less than this share of the SMs are a class of their own
# ("W1r"): the last wave idles 1 - fill of the GPU for a whole tile's time, so there a tile that
# leaves no wave ragged wins (128 x 192 on 3000 x 5000: 4.9 waves, 16 % faster than 128 x 256's
# 3.6), where on full-wave shapes (4096^3: 3.9 waves) the two run as fast.
RAGGED_FILL = 0.75
# Split-K: at least this many K blocks per chunk (the ring's stages fill, and the main loop
# outweighs writing and reading the partial tile), and the rule's most chunks per tile.
SPLIT_MIN_CHUNK = 8
RULE_MAX_SPLIT = 4
# Split-K ran on the H200 (2026-12-03, bench/RESULTS.md): every edge shape right in TS and twin
# (tools/split_k_probe.py), and 128 x 8192 x 8192 at 0.85 of cuBLAS split in two against 0.82
# unsplit, so the fallback rule may pick it. The tuner times it too (every candidate is checked
# against fp32 before it is timed, a wrong one is never chosen).
RULE_SPLITS = True
# The rule's 64 x 128 tiles without split-K when they fill this share of a wave: on
# 128 x 8192 x 8192 (128 tiles) a 2 x 1 cluster of them ran 16 % (bf16) and 22 % (e4m3) faster
# than split-K 2 on 128 x 128 (bench/RESULTS.md, 2026-12-03): no partial tiles to write back.
HALF_TILE_FILL = 0.9
# Tiles that trade for each other per problem (``fit_width``): the same rows and clusters,
# widths 8 apart. A table entry of one takes the width whose tiles run the problem in the
# fewest rounds x width (rounds of the launch's persistent clusters: padded columns and the
# last round's idle SMs both count): 3000 x 5000 in 2 x 1 clusters of 256 x 152 is 198 cluster
# tiles, three whole rounds of 66 (cuBLAS's pick there too), against 256 x 160's 192, three
# rounds of 8 columns more.
WIDTH_FAMILIES = (((256, 160), (256, 152)),)
# Ping-pong with 128-row tiles (a warpgroup alone on each 128 x 128 tile, its epilogue under
# the other warpgroup's main loop) ties the cooperative picks on the H200: the
# tuner generates and times it, the rule keeps cooperative 128 x 256 on many-wave shapes.
RULE_PINGPONG128 = False
# The rule's ping-pong 128 x 128 (6 stages in the A/B ring both warpgroups read).
PINGPONG128_FIELDS = {"tile_mn": (128, 128), "cluster_mn": (1, 1)}


def _bucket(value: int, edges: tuple[int, int]) -> str:
    return "s" if value <= edges[0] else ("m" if value <= edges[1] else "l")


def waves(mnk: tuple[int, int, int], tile: tuple[int, int] = WAVE_TILE) -> float:
    """Output tiles of ``tile`` over the SM count: how many full waves of CTAs a problem is."""
    m, n, _ = mnk
    return (-(-m // tile[0])) * (-(-n // tile[1])) / SMS


def shape_class(mnk: tuple[int, int, int]) -> str:
    """The class of ``M x N x K``: ``"M<b>-N<b>-K<b>-W<w>"``.

    ``<b>`` is ``s`` / ``m`` / ``l`` (``MN_EDGES`` for M and N, ``K_EDGES`` for K) and ``<w>``
    ``0`` (under one wave of 128 x 256 tiles), ``1`` (one to four), ``1r`` (one to four, the
    last wave filled below ``RAGGED_FILL``) or ``4`` (four or more).
    """
    m, n, k = mnk
    w = waves(mnk)
    wb = "0" if w < WAVE_EDGES[0] else ("1" if w < WAVE_EDGES[1] else "4")
    if wb == "1" and 0 < w % 1 < RAGGED_FILL:
        wb = "1r"
    return f"M{_bucket(m, MN_EDGES)}-N{_bucket(n, MN_EDGES)}-K{_bucket(k, K_EDGES)}-W{wb}"


def fit_width(cfg: GemmConfig, mnk: tuple[int, int, int]) -> GemmConfig:
    """``cfg`` with the tile of its ``WIDTH_FAMILIES`` family that runs ``M x N`` in the
    fewest rounds x width (``cfg``'s own on a tie; unchanged outside the families)."""
    family = next((f for f in WIDTH_FAMILIES if cfg.tile_mn in f), None)
    if family is None:
        return cfg
    m, n, _ = mnk
    cm, cn = cfg.cluster_mn

    def cost(tile: tuple[int, int]) -> int:  # rounds x width
        tiles_m, tiles_n = -(-m // tile[0]), -(-n // tile[1])
        clusters = -(-tiles_m // cm) * -(-tiles_n // cn)
        return -(-clusters // cfg.max_active_clusters) * tile[1]

    best = cfg
    for tile in family:
        if cost(tile) < cost(best.tile_mn):
            try:
                best = dataclasses.replace(cfg, tile_mn=tile)
            except RuntimeConfigError:  # the other width does not build with these fields
                continue
    return best


def tuned_fields(cfg: GemmConfig) -> dict[str, Any]:
    """The schedule fields of ``cfg`` as a table entry stores them (JSON lists for tuples)."""
    out = {name: getattr(cfg, name) for name in TUNED_FIELDS}
    out = {k: v for k, v in out.items() if OPTIONAL_FIELDS.get(k, object()) != v}
    return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}


def apply_fields(base: GemmConfig, fields: dict[str, Any]) -> GemmConfig:
    """``base`` with a table entry's schedule fields (``GemmConfig`` checks the result)."""
    values: dict[str, Any] = {k: tuple(v) if k in TUPLE_FIELDS else v for k, v in fields.items()}
    return dataclasses.replace(base, **{**OPTIONAL_FIELDS, **values})


def rule_config(
    mnk: tuple[int, int, int],
    base: GemmConfig,
    *,
    split: bool = RULE_SPLITS,
    pingpong128: bool = RULE_PINGPONG128,
) -> GemmConfig:
    """The fallback rule for a class the table does not hold.

    The largest tile that still gives every SM a tile: 128 x 256 (a 2 x 1 cluster when there
    are at least two tile rows, so B is multicast) if it fills one wave, else 128 x 128, else
    64 x 128 with one consumer warpgroup (2 x 1 clusters again) if its tiles fill
    ``HALF_TILE_FILL`` of one wave and no more, else 64 x 128 ping-pong (two warpgroups a
    CTA: up to two waves of tiles at once, one's epilogue under the other's main loop).
    A promoted GEMM (FP8 with its default promotion, or any given ``promote_every``) takes
    128 x 128 where 16 bits take 128 x 256: two-level accumulation
    (``GemmConfig.promote_every``) needs at most ``PROMOTE_MAX_ACC`` accumulator values a
    thread.
    With fewer 64 x 128 tiles than that and a long enough K, split-K on 128 x 128 tiles
    (``rule_split``) comes before 64 x 128 ping-pong: a 128 x 4096 x 8192 problem has 32
    tiles, four chunks each fill 128 of the 132 SMs with full-size tiles. ``split``: whether the
    rule may split (``RULE_SPLITS``, on since split-K ran on the GPU). ``pingpong128``:
    whether a GEMM of at least one wave (not a promoted FP8 one) takes ping-pong 128 x 128
    (``PINGPONG128_FIELDS``) instead of the cooperative tile (``RULE_PINGPONG128``, off until
    it has run on the GPU).
    """
    m = mnk[0]
    plain = {"stages": 0, "swizzle": 8, "raster": "m", "epi_n": 32, "epi_stages": 4}
    promoted = promotes(base)
    fields: dict[str, Any]
    if waves(mnk) >= 1.0 and pingpong128 and not promoted:  # no room to promote
        fields = {**PINGPONG128_FIELDS, "kernel": "pingpong", "scheduler": "static"}
    elif waves(mnk) >= 1.0:
        cluster = (2, 1) if -(-m // 128) >= 2 else (1, 1)
        tile = (128, 128) if promoted else (128, 256)
        fields = {"tile_mn": tile, "cluster_mn": cluster}
        fields.update(kernel="cooperative", scheduler="static")
    elif waves(mnk, (128, 128)) >= 1.0:
        fields = {"tile_mn": (128, 128), "cluster_mn": (1, 1)}
        fields.update(kernel="cooperative", scheduler="static")
    elif HALF_TILE_FILL <= waves(mnk, (64, 128)) <= 1.0:
        cluster = (2, 1) if -(-m // 64) >= 2 else (1, 1)
        fields = {"tile_mn": (64, 128), "cluster_mn": cluster}
        fields.update(kernel="cooperative", scheduler="static")
    elif split and rule_split(mnk, base) > 1:
        fields = {"tile_mn": (128, 128), "cluster_mn": (1, 1), "split_k": rule_split(mnk, base)}
        fields.update(kernel="cooperative", scheduler="static")
    else:
        fields = {"tile_mn": (64, 128), "cluster_mn": (1, 1)}
        fields.update(kernel="pingpong", scheduler="static")
    return apply_fields(base, {**plain, **fields})


def promotes(base: GemmConfig) -> bool:
    """Whether every configuration built on ``base`` promotes, so needs a tile with registers
    for it: an explicit ``promote_every >= 1``, or FP8 with the default (``None``)."""
    return bool(base.promote_every) or (base.fp8 and base.promote_every is None)


def rule_split(mnk: tuple[int, int, int], base: GemmConfig) -> int:
    """The rule's split-K for a problem of fewer 128 x 128 tiles than SMs: the most chunks per
    tile that still fit the ``(tile, chunk)`` items in one wave (``SMS // tiles``), at most
    ``RULE_MAX_SPLIT``, each chunk at least ``SPLIT_MIN_CHUNK`` K blocks long; 1: no split."""
    m, n, k = mnk
    tiles = -(-m // 128) * -(-n // 128)
    by_k = -(-k // base.tile_k) // SPLIT_MIN_CHUNK
    return max(1, min(RULE_MAX_SPLIT, SMS // max(tiles, 1), by_k))


def _table_error(path: Path, what: str) -> RuntimeConfigError:
    return RuntimeConfigError(
        f"GEMM table {path}: {what}",
        resource="gemm_table",
        fix=f"regenerate it with `{REGENERATE}` (see docs/gemm.rst), or delete it to use "
        "the fallback rule",
    )


def validate_table(data: Any, path: Path = TABLE_PATH) -> dict[str, Any]:
    """Check a loaded table: schema version, header keys, every entry a valid configuration.

    Raises:
        RuntimeConfigError: What is wrong, and how to regenerate the table.
    """
    if not isinstance(data, dict):
        raise _table_error(path, f"is a {type(data).__name__}, not a JSON object")
    if data.get("schema") != SCHEMA:
        raise _table_error(path, f"schema {data.get('schema')!r}, this GEMM reads {SCHEMA}")
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing or data.get("kind") != TABLE_KIND:
        raise _table_error(path, f"missing keys {missing} or kind not {TABLE_KIND!r}")
    seen: set[tuple[str, str]] = set()
    for i, entry in enumerate(data["entries"]):
        where = f"entry {i} ({entry.get('dtype')!r}, {entry.get('class')!r})"
        keys = set(entry["config"]) if isinstance(entry.get("config"), dict) else None
        required = set(TUNED_FIELDS) - set(OPTIONAL_FIELDS)
        if keys is None or not required <= keys <= set(TUNED_FIELDS):
            raise _table_error(
                path,
                f"{where}: config must set {sorted(required)} (and may set "
                f"{sorted(OPTIONAL_FIELDS)}), nothing else",
            )
        key = (entry.get("dtype"), entry.get("class"))
        if key in seen:
            raise _table_error(path, f"{where}: the class appears twice for this dtype")
        seen.add((str(key[0]), str(key[1])))
        stray = [s for s in entry.get("shapes", ()) if shape_class(tuple(s)) != entry.get("class")]
        if stray:  # a table tuned before the classes changed
            raise _table_error(path, f"{where}: shapes {stray} are not in the entry's class")
        try:
            apply_fields(GemmConfig(dtype=str(entry["dtype"])), entry["config"])
        except (ValueError, TypeError) as e:
            raise _table_error(path, f"{where}: not a valid GemmConfig ({e})") from e
    return data


def dump_table(table: dict[str, Any]) -> str:
    """The table as JSON text: the header one key a line, each entry on one line (diffable)."""
    head = {k: v for k, v in table.items() if k != "entries"}
    lines = [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    entries = [f"  {json.dumps(e, sort_keys=True)}" for e in table["entries"]]
    return "{\n" + "\n".join(lines) + '\n "entries": [\n' + ",\n".join(entries) + "\n ]\n}\n"


@functools.lru_cache(maxsize=4)
def load_table(path: Path = TABLE_PATH) -> dict[str, Any] | None:
    """The table at ``path`` (validated), or None when there is none.

    Raises:
        RuntimeConfigError: A table that is not JSON or does not validate.
    """
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise _table_error(path, f"is not JSON ({e})") from e
    return validate_table(data, path)


def table_path() -> Path:
    """The table ``pick`` reads: ``$TS_GEMM_TABLE`` (a table of your own shapes, written by
    ``gemm_tune.py -o``) or the one shipped beside this file."""
    return Path(os.environ.get(TABLE_ENV) or TABLE_PATH)


def lookup(table: dict[str, Any] | None, dtype: str, klass: str) -> dict[str, Any] | None:
    """The table's entry for ``dtype`` and ``klass``, or None."""
    for entry in table["entries"] if table else ():
        if entry["dtype"] == dtype and entry["class"] == klass:
            return dict(entry)
    return None


def pick(
    mnk: tuple[int, int, int],
    base: GemmConfig | None = None,
    table: dict[str, Any] | bool | None = True,
) -> tuple[GemmConfig, str]:
    """The configuration for ``M x N x K``: ``(cfg, source)``.

    ``base`` gives the non-schedule fields (dtype, layout, epilogue, scales); ``table`` is a
    loaded table, True for ``table_path()``'s (``$TS_GEMM_TABLE`` or the shipped one) or
    False / None for the rule alone. ``source`` is
    ``"table:<class>"`` or ``"rule:<class>"``. A tile of ``WIDTH_FAMILIES`` is fitted to
    the problem (``fit_width``). The swizzle is the maximum: fit it to the problem with
    ``fit_swizzle``.
    """
    base = base or GemmConfig()
    data = load_table(table_path()) if table is True else (table or None)
    klass = shape_class(mnk)
    entry = lookup(data, base.dtype, klass)
    if entry is None:
        return rule_config(mnk, base), f"rule:{klass}"
    return fit_width(apply_fields(base, entry["config"]), mnk), f"table:{klass}"
