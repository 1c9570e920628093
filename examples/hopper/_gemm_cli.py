"""The Hopper GEMM's command-line options and the configuration they choose.

``add_config_args`` adds the kernel-configuration options (shared by ``gemm.py``,
``bench/gemm.py`` and ``bench/gemm_sweep.py``); ``parse_config`` reads them as a fixed
``GemmConfig`` (``--config default``) and ``config_for`` applies ``--config auto`` for one
problem shape: the per-shape table's pick (``_gemm_table.pick``), then the options given,
then ``--tail-split`` or ``--stream-k`` on what it runs on.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from _gemm_config import (
    CLUSTERS,
    DTYPES,
    KERNELS,
    LAYOUTS,
    RASTERS,
    SCALES,
    SCHEDULERS,
    TILES,
    WGMMA_M,
    GemmConfig,
    fit_swizzle,
)
from _gemm_host import DTYPE_ALIASES

from task_scheduling.kernel import RuntimeConfigError

SCHEDULE_FLAGS = (
    "tile",
    "cluster",
    "scheduler",
    "kernel",
    "stages",
    "swizzle",
    "raster",
    "epi_n",
    "epi_stages",
    "split_k",
    "k_block_bytes",
    "promote_stagger",
    "defer_store",
)
"""The options that set the schedule (``_gemm_table.TUNED_FIELDS``); ``--config auto`` takes
whichever of them the command line does not give from the per-shape table."""


def _explicit(args: argparse.Namespace) -> dict[str, Any]:
    """The schedule fields the command line gives (an option left out is None)."""
    out: dict[str, Any] = {}
    for flag in SCHEDULE_FLAGS:
        value = getattr(args, flag, None)
        if value is None:
            continue
        if flag in ("tile", "cluster"):
            m, n = (int(x) for x in value.split("x"))
            out[f"{flag}_mn"] = (m, n)
        elif flag in ("promote_stagger", "defer_store"):
            out[flag] = value == "on"
        else:
            out[flag] = value
    return out


def parse_config(args: argparse.Namespace) -> GemmConfig:
    """A ``GemmConfig`` from the CLI options (``GemmConfig``'s defaults for those left out).

    This is the fixed configuration (``--config default``); ``config_for`` applies
    ``--config auto`` for one problem shape.
    """
    return dataclasses.replace(_math_config(args), **_explicit(args))


def _math_config(args: argparse.Namespace) -> GemmConfig:
    """The options that set what is computed (dtype, layout, epilogue, scales) and how it is
    launched (``--pdl``), no schedule: a table pick keeps them."""
    return GemmConfig(
        dtype=DTYPE_ALIASES.get(args.dtype, args.dtype),
        layout=args.layout,
        alpha=args.alpha,
        beta=args.beta,
        bias=args.bias,
        scale=args.scale,
        promote_every=getattr(args, "promote_every", None),
        pdl=getattr(args, "pdl", "on") == "on",
    )


TAIL_SCHEDULE = (
    ("split_k", "split_k", 1),
    ("kernel", "kernel", "cooperative"),
    ("scheduler", "scheduler", "static"),
)
"""``(option, GemmConfig field, value)``: what ``--tail-split`` and ``--stream-k on`` set
where the option is not given (their restrictions)."""


def config_for(args: argparse.Namespace, mnk: tuple[int, int, int]) -> tuple[GemmConfig, str]:
    """``_schedule_for``'s configuration, with ``--tail-split S`` (``S > 1``) on it: the
    pick's tiles and cluster, with what a tail split runs on (cooperative, static, no
    split-K) wherever the command line leaves that to the pick (``TAIL_SCHEDULE``), and, on a
    ping-pong pick, the most of its epilogue buffers that divide the cooperative sub-tiles.
    ``source`` then ends ``+tail_split``. ``--stream-k on`` does the same for a stream-K
    tail (``+stream_k``; the pick's tail split, if any, makes way), ``--stream-k off`` turns a
    pick's off.

    Raises:
        ValueError: The options make no valid configuration (``GemmConfig``'s typed errors).
    """
    cfg, source = _schedule_for(args, mnk)
    tail = getattr(args, "tail_split", None)
    stream = getattr(args, "stream_k", None)
    if stream == "off" and cfg.stream_k:
        cfg, source = dataclasses.replace(cfg, stream_k=False), source + "+stream_k=off"
    if tail not in (None, 1) and cfg.stream_k:  # the tail split takes the pick's place
        cfg = dataclasses.replace(cfg, stream_k=False)
    if tail in (None, 1) and stream != "on":
        return cfg, source
    fields: dict[str, Any] = {
        f: v for flag, f, v in TAIL_SCHEDULE if getattr(args, flag, None) is None
    }
    if fields.get("kernel", cfg.kernel) != cfg.kernel and getattr(args, "epi_stages", None) is None:
        # The pick's epilogue buffers divide its own kernel's sub-tiles (a ping-pong warpgroup
        # stores 64-row ones): keep the most buffers that divide the cooperative kernel's.
        subtiles = dataclasses.replace(cfg, epi_stages=2, **fields).epi_subtiles
        fits = [d for d in range(2, cfg.epi_stages + 1) if subtiles % d == 0]
        fields["epi_stages"] = fits[-1] if fits else 2
    cut: int = 1 if tail is None else tail
    if stream == "on":  # with --tail-split too: GemmConfig refuses the pair, naming both
        return dataclasses.replace(
            cfg, stream_k=True, tail_split=cut, **fields
        ), source + "+stream_k"
    return dataclasses.replace(cfg, tail_split=cut, **fields), source + "+tail_split"


def versus_config(problem: GemmConfig, words: list[str], mnk: tuple[int, int, int]) -> GemmConfig:
    """``problem``'s computation (dtype, layout, epilogue, scales) on the schedule options
    ``words`` (``["--tile", "128x192", ...]``) over ``GemmConfig``'s defaults, for ``mnk``:
    a ``bench/gemm_sweep.py --versus`` configuration.

    Raises:
        RuntimeConfigError: ``words`` are not schedule options (an unknown option, a value
            not among an option's choices) or make no valid configuration.
    """
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_config_args(parser)
    flags = ["--config", "default", "--dtype", problem.dtype, "--layout", problem.layout]
    flags += ["--scale", problem.scale, "--alpha", repr(problem.alpha)]
    flags += ["--beta", repr(problem.beta), *(["--bias"] if problem.bias else [])]
    flags += ["--pdl", "on" if problem.pdl else "off"]  # words may say otherwise
    fix = "give schedule options of gemm.py, e.g. --tile 128x192 --epi-stages 3"
    try:
        args, unknown = parser.parse_known_args([*flags, *words])
    except argparse.ArgumentError as e:
        raise RuntimeConfigError(f"versus options {words}: {e}", fix=fix) from e
    if unknown:
        raise RuntimeConfigError(f"versus options {words}: unknown {unknown}", fix=fix)
    return config_for(args, mnk)[0]


def _schedule_for(args: argparse.Namespace, mnk: tuple[int, int, int]) -> tuple[GemmConfig, str]:
    """The configuration for one problem: ``(cfg, source)``, the swizzle fitted to it.

    ``--config auto`` (the default) takes the schedule from the per-shape table
    (``_gemm_table.pick``: the shape's class, or the fallback rule) and then the schedule
    options the command line gives; ``--config default`` takes ``GemmConfig``'s defaults
    instead. ``source`` says which (``table:<class>``, ``rule:<class>``, ``default``), with
    ``+flags`` when options overrode it. Options that do not fit the pick (another kind of
    schedule) fill in from ``GemmConfig``'s defaults instead (``default+flags``).

    Raises:
        ValueError: The options make no valid configuration with the pick nor with the
            defaults.
    """
    from _gemm_table import fit_width, pick

    if getattr(args, "config", "auto") != "auto":
        return fit_swizzle(parse_config(args), mnk[1], mnk[0]), "default"
    picked, source = pick(mnk, _math_config(args))
    explicit = _explicit(args)
    try:
        cfg = dataclasses.replace(picked, **explicit)
        if _new_pingpong128(picked, cfg, explicit):
            raise ValueError("a ping-pong 128-row tile nobody asked for")
    except ValueError:
        # The options ask for another kind of schedule than the pick (e.g. ping-pong where the
        # table has a 2 x 1 cluster): they fill in from GemmConfig's defaults instead.
        try:
            cfg, source = parse_config(args), f"default+flags (not {source})"
        except ValueError as e:
            raise ValueError(
                f"the options {sorted(explicit)} make no valid configuration, neither on "
                f"--config auto's pick ({source}) nor on the defaults: {e}"
            ) from e
        return fit_swizzle(cfg, mnk[1], mnk[0]), source
    if "tile_mn" not in explicit:  # e.g. --cluster 1x2 on a fitted width: fit it again
        cfg = fit_width(cfg, mnk)
    return fit_swizzle(cfg, mnk[1], mnk[0]), source + ("+flags" if explicit else "")


def _new_pingpong128(picked: GemmConfig, cfg: GemmConfig, explicit: dict[str, Any]) -> bool:
    """Whether options that did not name the kernel turned the pick's 64-row ping-pong into a
    128-row one (``--tile 128x128`` on a 64 x 128 ping-pong pick): that kernel is taken only
    when asked for (``--kernel pingpong``) or picked by the table, not by default
    (``_gemm_table.RULE_PINGPONG128``), so such options fill in from the defaults instead."""
    big = cfg.pingpong and cfg.tile_mn[0] > WGMMA_M
    return big and "kernel" not in explicit and picked.tile_mn[0] == WGMMA_M


def add_config_args(parser: argparse.ArgumentParser) -> None:
    """The kernel-configuration options (shared with ``bench/gemm.py``).

    The schedule options default to None (``GemmConfig``'s value, or with ``--config auto``
    the per-shape table's) so that ``config_for`` can tell which ones were given.
    """
    parser.add_argument(
        "--config",
        choices=("auto", "default"),
        default="auto",
        help="auto: the schedule from the per-shape table (examples/hopper/gemm_table.json) "
        "or its fallback rule, then the schedule options given; default: GemmConfig's "
        "defaults and the options given",
    )
    parser.add_argument(
        "--dtype",
        choices=sorted([*DTYPES, *DTYPE_ALIASES]),
        default="bf16",
        help="A and B (C too, but bf16 for e4m3; fp8 = e4m3)",
    )
    parser.add_argument("--tile", choices=[f"{m}x{n}" for m, n in TILES], default=None)
    parser.add_argument("--cluster", choices=[f"{m}x{n}" for m, n in CLUSTERS], default=None)
    parser.add_argument("--scheduler", choices=list(SCHEDULERS), default=None)
    parser.add_argument(
        "--kernel",
        choices=list(KERNELS),
        default=None,
        help="consumer warpgroups share each tile (cooperative) or take tiles in turns "
        "(pingpong: 64-row, 128x128 or 128x192 tiles, static scheduler)",
    )
    parser.add_argument("--stages", type=int, default=None, help="A/B stages (0: as many as fit)")
    parser.add_argument(
        "--swizzle", type=int, default=None, help="max tile-scheduler swizzle (fit per problem)"
    )
    parser.add_argument(
        "--raster", choices=list(RASTERS), default=None, help="tile order: along M or along N"
    )
    parser.add_argument("--epi-n", type=int, default=None, help="epilogue sub-tile columns")
    parser.add_argument("--epi-stages", type=int, default=None, help="epilogue SMEM buffers")
    parser.add_argument(
        "--layout",
        choices=sorted(LAYOUTS),
        default="tn",
        help="operand majors, A then B (B read as K x N): tn = both K-major, nn = A M-major, "
        "tt = B N-major, nt = A M-major and B N-major",
    )
    parser.add_argument("--alpha", type=float, default=1.0, help="C = alpha * A @ B^T + ...")
    parser.add_argument("--beta", type=float, default=0.0, help="... + beta * C (C read first)")
    parser.add_argument("--bias", action="store_true", help="... + bias[n] (an N-vector)")
    parser.add_argument(
        "--scale",
        choices=list(SCALES),
        default="none",
        help="C = scale_a * scale_b * (A @ B^T) ...: fp32 scalars (tensor) or scale_a[m] * "
        "scale_b[n] (rowwise), applied in the epilogue",
    )
    parser.add_argument(
        "--split-k",
        type=int,
        default=None,
        help="split each output tile's K blocks into this many chunks, summed in a fixed "
        "order by the tile's last chunk (1: off; cooperative, static scheduler, 1x1)",
    )
    parser.add_argument(
        "--tail-split",
        type=int,
        default=None,
        help="split only the last, ragged round's tiles into this many K chunks, summed as "
        "split-K's (1: off; cooperative, static scheduler, 1x1, not with --split-k)",
    )
    parser.add_argument(
        "--stream-k",
        choices=("on", "off"),
        default=None,
        help="a stream-K tail: the last, ragged round's K blocks shared out evenly between "
        "the clusters, the pieces summed in a fixed order (cooperative, static scheduler; "
        "not with --split-k or --tail-split)",
    )
    parser.add_argument(
        "--k-block-bytes",
        type=int,
        default=None,
        choices=(128, 256),
        help="bytes of each operand row per K block: 128 (one swizzle atom) or 256 (two TMA "
        "boxes per operand and stage, half the stages)",
    )
    parser.add_argument(
        "--pdl",
        choices=("on", "off"),
        default="on",
        help="programmatic dependent launch: the kernel's launch and prologue overlap the "
        "previous kernel's tail on the stream (on), or plain stream order (off)",
    )
    parser.add_argument(
        "--promote-every",
        type=int,
        default=None,
        help="two-level accumulation: add the WGMMA accumulator into an fp32 total every this "
        "many K blocks (0: off; default: 4 for FP8 on 128x192, 128x128, 64x128 and ping-pong "
        "64x192 and 64x128 tiles, else off)",
    )
    parser.add_argument(
        "--promote-stagger",
        choices=("on", "off"),
        default=None,
        help="two-level accumulation in a cooperative 128-row tile: the second consumer "
        "warpgroup's groups start half a group later, so the two drain their WGMMAs in turns",
    )
    parser.add_argument(
        "--defer-store",
        choices=("on", "off"),
        default=None,
        help="two-level accumulation in the cooperative kernel: store a tile from its fp32 "
        "total under the next tile's first K block of WGMMAs",
    )
