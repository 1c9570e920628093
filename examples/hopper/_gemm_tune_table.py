"""How the GEMM tuner makes its table from timings (no GPU here).

``best_per_class`` picks each shape class's entry from per-shape timings, ``make_table`` wraps
the entries, ``combine`` merges tables. The timings come from the tuner's run, or from earlier
GPU runs' output: ``read_rows``, the tuner's own per-shape lines (``gemm_tune.py --from-log``);
``sweep_rows``, a ``bench/gemm_sweep.py --versus`` run's lines (``gemm_tune.py --from-sweep``),
where the table's entry and its alternatives ran side by side in the same rounds on the same
inputs: the evidence a table change should rest on, since one tuner run times each candidate in
its own rounds.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib.metadata
import json
import math
from pathlib import Path
from typing import Any

from _gemm_cli import versus_config
from _gemm_config import GemmConfig, fit_swizzle
from _gemm_host import PROBLEM_FIELDS
from _gemm_table import (
    SCHEMA,
    TABLE_KIND,
    TUPLE_FIELDS,
    fit_width,
    shape_class,
    tuned_fields,
    validate_table,
)

from task_scheduling.kernel import RuntimeConfigError


def _json_lines(paths: list[Path]) -> list[dict[str, Any]]:
    """The JSON objects among the lines of ``paths`` (the logs' other output skipped)."""
    out = []
    for path in paths:
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict):
                out.append(row)
    return out


def _none_found(flag: str, paths: list[Path], what: str, fix: str) -> RuntimeConfigError:
    return RuntimeConfigError(
        f"gemm_tune {flag} {' '.join(map(str, paths))}: no {what}",
        resource="gemm_table",
        fix=fix,
    )


def read_rows(paths: list[Path], dtype: str) -> list[dict[str, Any]]:
    """The timed per-shape rows (JSON lines with ``tflops``) of tuner outputs, for ``dtype``.

    Raises:
        RuntimeConfigError: A log with no timed row of that dtype.
    """
    rows = [r for r in _json_lines(paths) if r.get("tflops") and r.get("dtype") == dtype]
    if not rows:
        fix = "pass the output of a GPU run of gemm_tune.py with the same --dtype"
        raise _none_found("--from-log", paths, f"timed {dtype} rows", fix)
    return rows


def config_of(fields: dict[str, Any]) -> GemmConfig:
    """A sweep line's ``config`` (``dataclasses.asdict`` of a ``GemmConfig``) as one."""
    values: dict[str, Any] = {k: tuple(v) if k in TUPLE_FIELDS else v for k, v in fields.items()}
    return GemmConfig(**values)


def versus_words(name: str) -> list[str]:
    """``bench/gemm_sweep.py``'s name of a ``--versus`` configuration as its options again
    (``"vs:tile=128x192,epi-stages=3"`` -> ``["--tile", "128x192", "--epi-stages", "3"]``): a
    line written before the sweep recorded each variant's configuration names it so only."""
    words = []
    for pair in name.removeprefix("vs:").split(","):
        flag, _, value = pair.partition("=")
        words += [f"--{flag}", value]
    return words


def sweep_rows(paths: list[Path], base: GemmConfig, eager: bool = False) -> list[dict[str, Any]]:
    """Per shape of ``gemm_sweep.py`` runs on ``base``'s problem (dtype, scales, epilogue):
    ``{"mnk", "class", "dtype", "contenders": [(fields, tflops)], "torch": tflops}``, and
    ``"others"``: each contender's TFLOP/s in the other timing (eager where the contenders are
    ranked by graph timing and back; None where the line lacks it).

    The contenders are the sweep's own configuration (``ts``) and each ``--versus`` one that
    was right, as table fields; their swizzle is ``GemmConfig``'s maximum again where the
    sweep ran it fitted to the shape (as ``fit_swizzle`` will fit the entry). A contender
    run with another ``promote_every`` than ``base``'s is left out (the table's entry would
    not run it) and named in the row's ``left_out``, as is one that is no valid
    configuration of this code (a tile since removed). TFLOP/s are the CUDA-graph ones where
    every contender of the line has them (and not ``eager``), else the eager ones: what a
    caller of ``gemm()`` gets, per-call host work included.

    Raises:
        RuntimeConfigError: No line of that problem with a right, timed contender.
    """
    rows = []
    for line in _json_lines(paths):
        if line.get("bench") != "gemm_sweep" or line.get("summary"):
            continue
        if "median_of_passes" in line:  # --passes: its ratios only; each pass's line counts
            continue
        cfg = config_of(line["config"])
        if any(getattr(cfg, f) != getattr(base, f) for f in PROBLEM_FIELDS):
            continue
        names = ["ts", *(n for n in line if n.startswith("vs:") and isinstance(line[n], dict))]
        runs = {n: line[n] for n in names if line[n].get("ok") and "tflops" in line[n]}
        graph = not eager and all("graph_tflops" in r for r in runs.values())
        unit = "graph_tflops" if graph else "tflops"
        other = "tflops" if graph else "graph_tflops"
        contenders, others, left_out = [], [], []
        mnk = tuple(line["mnk"])
        for name, run in runs.items():
            try:
                if name == "ts":
                    one = cfg
                elif "config" in run:
                    one = config_of(run["config"])
                else:  # an older line: the variant as its name says, on the line's problem
                    one = versus_config(cfg, versus_words(name), mnk)
            except (RuntimeConfigError, ValueError) as e:  # e.g. a tile no longer in TILES
                left_out.append((name, str(e).splitlines()[0]))
                continue
            if one.promote_every != base.promote_every:  # not what the entry would run
                why = f"promote_every={one.promote_every}, the problem's {base.promote_every}"
                left_out.append((name, why))
                continue
            fitted = fit_width(one, mnk).tile_mn
            if fitted != one.tile_mn:  # the table's entry would run another width here
                left_out.append((name, f"the table fits {one.tile_mn} to {fitted} here"))
                continue
            table_one = dataclasses.replace(one, swizzle=GemmConfig.swizzle)
            # A contender run with another swizzle than the fitted one ("--swizzle 1") is a
            # schedule of its own: folding it into the table's would mix two timings.
            if fit_swizzle(table_one, mnk[1], mnk[0]).swizzle == one.swizzle:
                one = table_one
            contenders.append((tuned_fields(one), run[unit]))
            others.append(run.get(other))
        torch = next(
            (line[t][unit] for t in ("torch_accurate", "torch") if unit in line.get(t, {})), None
        )
        row: dict[str, Any] = {"mnk": list(mnk), "class": shape_class(mnk), "dtype": base.dtype}
        row |= {"contenders": contenders, "others": others, "torch": torch, "left_out": left_out}
        rows.append(row)
    if not any(r["contenders"] for r in rows):
        fix = "pass the output of bench/gemm_sweep.py --versus ... with the same problem options"
        raise _none_found("--from-sweep", paths, f"timed {base.dtype} sweep lines", fix)
    return rows


def best_per_class(
    rows: list[dict[str, Any]],
    by_key: dict[str, dict[str, Any]],
    incumbents: dict[str, str] | None = None,
    margin: float = 0.0,
) -> list[dict[str, Any]]:
    """Table entries: per class, the configuration with the best geometric mean over its shapes
    of (its TFLOP/s / that shape's best TFLOP/s); only configurations timed on every shape of
    the class compete. Untimed rows (``--dry-run``) give the rule's choice.

    ``incumbents`` (class -> candidate key: the current table's winners) and ``margin``: a
    class keeps its incumbent unless the best beats it by more than ``margin`` (0.02: 2 %).
    One timing of near-equal candidates differs by a few percent from run to run; a retune
    should not swap a table entry, checked by the sweeps, for a tie it won by noise. Where the
    rows also hold the other timing (``"other_tflops"``: a sweep's per-call timings next to
    its graph ones), the best must lead the incumbent in that one too, else the class keeps
    its entry and names the challenger (``"kept_over"``): one H100 call once had a contender
    1.7 % ahead per call and 4.5 % behind in graph timing."""
    classes: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        classes.setdefault(row["class"], []).append(row)
    entries = []
    for klass, members in sorted(classes.items()):
        timed = [r for r in members if r.get("tflops")]
        entry: dict[str, Any] = {"dtype": members[0]["dtype"], "class": klass}
        entry["shapes"] = [r["mnk"] for r in members]
        if not timed:
            entry["config"] = members[0]["rule"]
            entry["source"] = "rule (not timed)"
            entries.append(entry)
            continue
        common = set.intersection(*({k for k in r["tflops"] if k != "torch"} for r in timed))
        if not common:
            continue

        def score(key: str, timed: list[dict[str, Any]] = timed) -> float:
            ratios = [
                r["tflops"][key] / max(v for kk, v in r["tflops"].items() if kk != "torch")
                for r in timed
            ]
            return math.exp(sum(map(math.log, ratios)) / len(ratios))

        winner = max(sorted(common), key=score)
        held = (incumbents or {}).get(klass, "")
        if held in common and score(winner) <= score(held) * (1.0 + margin):
            winner = held  # a tie within timing noise: the table keeps its entry
        elif held in common and winner != held and _trails_in_other(timed, winner, held):
            entry["kept_over"] = winner  # ahead in one timing, behind in the other: noise
            winner = held
        entry.update(config=by_key[winner], source="tuned", winner=winner, score=score(winner))
        entry["tflops"] = [round(r["tflops"][winner], 1) for r in timed]
        if all("torch" in r["tflops"] for r in timed):
            entry["torch_tflops"] = [round(r["tflops"]["torch"], 1) for r in timed]
        entries.append(entry)
    return entries


def _trails_in_other(rows: list[dict[str, Any]], key: str, held: str) -> bool:
    """Whether ``key`` trails ``held`` in the rows' other timing (geometric mean of its ratio
    to ``held`` over the rows that time both there; False where none does)."""
    pairs = [
        r["other_tflops"][key] / r["other_tflops"][held]
        for r in rows
        if r.get("other_tflops", {}).get(key) and r["other_tflops"].get(held)
    ]
    return bool(pairs) and sum(map(math.log, pairs)) < 0.0


def make_table(
    entries: list[dict[str, Any]], timed: bool, command: str, gpu: str | None, seconds: float
) -> dict[str, Any]:
    """The table's JSON object (``_gemm_table.SCHEMA``), validated."""
    table = {
        "schema": SCHEMA,
        "kind": TABLE_KIND,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "gpu": gpu,
        "cute_dsl": importlib.metadata.version("nvidia-cutlass-dsl"),
        "command": command,
        "timed": timed,
        "tuning_seconds": round(seconds, 1),
        "entries": entries,
    }
    return validate_table(table)


def in_class(entry: dict[str, Any]) -> dict[str, Any] | None:
    """``entry`` with only the shapes (and their timings) that ``shape_class`` still puts in its
    class, None when none is left: what a table tuned before a class split still knows. Its
    ``score`` went with the shapes it was measured over."""
    shapes = entry.get("shapes", [])
    keep = [i for i, s in enumerate(shapes) if shape_class(tuple(s)) == entry["class"]]
    if len(keep) == len(shapes):
        return entry
    if not keep:
        return None
    out = {k: v for k, v in entry.items() if k != "score"}
    for key in ("shapes", "tflops", "torch_tflops"):
        if key in entry:
            out[key] = [entry[key][i] for i in keep]
    return out


def combine(paths: list[Path]) -> dict[str, Any]:
    """One table from several (e.g. the halves of a sweep): entries in order, the last wins;
    shapes that are no longer in their entry's class are left out (``in_class``)."""
    tables = []
    for p in paths:
        table = json.loads(p.read_text())
        if isinstance(table, dict) and isinstance(table.get("entries"), list):
            table["entries"] = [e for e in map(in_class, table["entries"]) if e is not None]
        tables.append(validate_table(table, p))
    entries: dict[tuple[str, str], dict[str, Any]] = {}
    for t in tables:
        for e in t["entries"]:
            entries[(e["dtype"], e["class"])] = e
    head = dict(tables[-1])
    # Halves of one run name the same command once (a combined table, re-split, included).
    parts = [c for t in tables for c in t["command"].split(" && ")]
    head["command"] = " && ".join(dict.fromkeys(parts))
    head["timed"] = all(t["timed"] for t in tables)
    # A table made from a log (--from-log) names no GPU; the one the timings came from does.
    head["gpu"] = head.get("gpu") or next((t["gpu"] for t in tables if t.get("gpu")), None)
    head["tuning_seconds"] = sum(t.get("tuning_seconds", 0.0) for t in tables)
    head["entries"] = list(entries.values())
    return validate_table(head)
