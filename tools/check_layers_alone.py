"""Check that every TS layer installs and passes its tests alone, from its wheel.

For each layer (a distribution under ``packages/``) this script

1. builds its wheel (``uv build``) and those of the in-repo layers it needs into a temporary
   folder,
2. for each Python 3.10-3.13 creates a fresh virtualenv and installs into it only the layer's
   wheel and the wheels of the in-repo layers it declares as dependencies (transitively); other
   dependencies come from the package index,
3. asserts that the layer is imported from that virtualenv (not from the checkout), that every
   one of its modules imports, that no other in-repo package is importable, and, for the layers
   that must run without a GPU stack, that ``cutlass``, ``cuda`` and ``torch`` are not
   importable,
4. adds the layer's ``test`` extra (an in-repo layer named there is installed from its wheel)
   and runs a copy of the layer's ``tests/`` folder, outside the repository, against the
   installed wheel.

The umbrella distribution (the repository root, ``task_scheduling``) gets steps 1-3; its tests
(the root ``tests/``) need the checkout and run in the hatch ``all`` env instead. It is also
installed a second time without its dependencies, beside only the GPU-free layers it needs for
schedules (ts-ir, ts-trace, ts-verify): there ``task_scheduling`` and its schedule modules must
import with no CuTe DSL, CUDA, torch, ts-codegen or ts-runtime importable, and the doctests of the
first tutorial page (``docs/first_schedule.rst``, "nothing here needs a GPU or the CuTe DSL")
must pass.

It prints one line per (layer, Python) and exits non-zero if any of them failed::

    python tools/check_layers_alone.py                  # every layer under packages/
    python tools/check_layers_alone.py ts-ir ts-trace   # the layers named
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import email.parser
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ROOT / "packages"
UMBRELLA = "ts-task-scheduling"
UMBRELLA_IMPORT = "task_scheduling"
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
# Layers that must import and work with no CuTe DSL, no CUDA and no torch (DESIGN.md section 2).
GPU_FREE_LAYERS = frozenset({"ts-ir", "ts-trace", "ts-verify", "ts-cli"})
GPU_STACK = ("cutlass", "cuda", "torch")

_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA_MARKER = re.compile(r";.*\bextra\s*==\s*['\"]([^'\"]+)['\"]")


def normalize(name: str) -> str:
    """PEP 503 normalized distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def import_name(dist: str) -> str:
    """The import name of an in-repo distribution."""
    return UMBRELLA_IMPORT if normalize(dist) == UMBRELLA else normalize(dist).replace("-", "_")


@dataclasses.dataclass(frozen=True)
class Dist:
    """One in-repo distribution and its built wheel."""

    name: str
    source: Path
    wheel: Path
    requires: frozenset[str]  # normalized names of its unconditional dependencies
    test_requires: frozenset[str]  # ... and of those its `test` extra adds


@dataclasses.dataclass
class Outcome:
    """The result of one (layer, Python) check."""

    layer: str
    python: str
    ok: bool
    seconds: float
    detail: str
    log: str = ""


class CheckError(Exception):
    """A step of a check failed; the message says which, the log holds the output."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


def find_uv() -> list[str]:
    """The command that runs uv: $UV, uv on PATH, or the uv module of this interpreter."""
    if os.environ.get("UV"):
        return [os.environ["UV"]]
    found = shutil.which("uv")
    if found:
        return [found]
    try:
        import uv  # type: ignore[import-not-found,unused-ignore]

        return [str(uv.find_uv_bin())]
    except ImportError:
        sys.exit("check_layers_alone: uv not found: `pip install uv` or set UV=/path/to/uv")


def find_python(version: str) -> str | None:
    """An interpreter for ``version`` (e.g. "3.12"): pythonX.Y on PATH, else under pyenv."""
    found = shutil.which(f"python{version}")
    if found:
        return found
    pyenv_root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    found_paths = glob.glob(f"{pyenv_root}/versions/{version}.*/bin/python{version}")

    def patch_level(path: str) -> int:
        patch = Path(path).parents[1].name.split(".")[2]
        return int(patch) if patch.isdigit() else -1

    return max(found_paths, key=patch_level) if found_paths else None


def clean_env() -> dict[str, str]:
    """The environment for child processes: no active virtualenv, nothing from the checkout."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX"}
    }
    env["UV_PYTHON_DOWNLOADS"] = "never"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run(cmd: list[str], what: str, cwd: Path) -> str:
    """Run ``cmd``; return its output, raise :class:`CheckError` naming ``what`` if it fails."""
    proc = subprocess.run(
        cmd,
        cwd=cwd,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        log = f"$ {' '.join(cmd)}\n{proc.stdout}"
        raise CheckError(f"{what} failed (exit {proc.returncode})", log)
    return proc.stdout


def read_requires(wheel: Path) -> tuple[frozenset[str], frozenset[str]]:
    """Normalized names of a wheel's ``Requires-Dist``: unconditional, and its ``test`` extra's.

    Other markers (Python version, platform) are ignored: every in-repo dependency is taken.
    """
    with zipfile.ZipFile(wheel) as zf:
        meta_name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(zf.read(meta_name).decode())
    runtime: set[str] = set()
    test: set[str] = set()
    for req in meta.get_all("Requires-Dist") or []:
        match = _REQ_NAME.match(req)
        if not match:
            continue
        extra = _EXTRA_MARKER.search(req)
        if extra is None:
            runtime.add(normalize(match.group(1)))
        elif normalize(extra.group(1)) == "test":
            test.add(normalize(match.group(1)))
    return frozenset(runtime), frozenset(test)


def build_wheels(uv: list[str], targets: list[str], dist_dir: Path) -> dict[str, Dist]:
    """Build the wheels of ``targets`` and of the in-repo distributions they depend on."""
    known = set(discover_layers()) | {UMBRELLA}
    dists: dict[str, Dist] = {}
    todo = list(targets)
    while todo:
        name = todo.pop(0)
        if name in dists:
            continue
        source = ROOT if name == UMBRELLA else PACKAGES / name
        before = set(dist_dir.glob("*.whl"))
        out = ["--out-dir", str(dist_dir)]
        run(
            [*uv, "build", "--quiet", "--wheel", "--no-sources", *out, str(source)],
            f"building the wheel of {name}",
            cwd=ROOT,
        )
        new = sorted(set(dist_dir.glob("*.whl")) - before)
        if len(new) != 1:
            raise CheckError(f"building {name} produced {len(new)} wheels, expected 1")
        runtime, test = read_requires(new[0])
        dists[name] = Dist(name, source, new[0], runtime, test)
        todo.extend(sorted(r for r in runtime | test if r in known))
    return dists


def closure(names: list[str], dists: dict[str, Dist]) -> list[str]:
    """``names`` and the in-repo distributions they depend on at run time, transitively."""
    seen: list[str] = []
    todo = list(reversed(names))
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.append(current)
        todo.extend(sorted(r for r in dists[current].requires if r in dists))
    return seen


def test_closure(name: str, dists: dict[str, Dist]) -> list[str]:
    """What ``name``'s tests need from the repository: its closure plus its ``test`` extra's."""
    return closure([name, *sorted(r for r in dists[name].test_requires if r in dists)], dists)


_PROBE = textwrap.dedent(
    """
    import importlib, importlib.util, pkgutil, sys
    import os.path
    venv, layer = os.path.realpath(sys.argv[1]), sys.argv[2]
    others, forbidden = sys.argv[3].split(","), sys.argv[4].split(",")
    problems = []
    mod = importlib.import_module(layer)
    if not os.path.realpath(str(mod.__file__)).startswith(venv + os.sep):
        problems.append(f"{layer} imported from {mod.__file__}, not from the virtualenv")
    for name in filter(None, others):
        if importlib.util.find_spec(name) is not None:
            problems.append(f"in-repo package {name} is importable but was not installed")
    for name in filter(None, forbidden):
        if importlib.util.find_spec(name) is not None:
            problems.append(f"{name} is importable: {layer} must not pull in the GPU stack")
    for info in pkgutil.walk_packages(mod.__path__, layer + "."):
        importlib.import_module(info.name)
    if problems:
        sys.exit("\\n".join(problems))
    """
)


# The facade's part that needs only the GPU-free layers, and the page that promises it.
FACADE_LITE_LAYERS = ("ts-ir", "ts-trace", "ts-verify")
FACADE_LITE_MODULES = ("enums", "pipeline", "plan", "resources", "schedule_builder")
FACADE_LITE_PAGE = ROOT / "docs" / "first_schedule.rst"

_LITE_PROBE = textwrap.dedent(
    """
    import doctest, importlib, importlib.util, sys
    page, modules, forbidden = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
    problems = [f"{name} is importable" for name in forbidden if importlib.util.find_spec(name)]
    for name in ["task_scheduling", *(f"task_scheduling.{m}" for m in modules)]:
        importlib.import_module(name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testfile(page, module_relative=False, optionflags=flags)
    if result.failed or not result.attempted:
        problems.append(f"{page}: {result.failed} of {result.attempted} doctests failed")
    if problems:
        sys.exit("\\n".join(problems))
    """
)


def check_facade_lite(
    uv: list[str], version: str, python: str, dists: dict[str, Dist], work: Path
) -> str:
    """The umbrella wheel without its dependencies, beside ts-ir, ts-trace and ts-verify only.

    Returns the detail line; raises :class:`CheckError` if the facade or the first tutorial page
    needs more.
    """
    venv = work / "venvs" / f"{UMBRELLA}-lite-py{version}"
    venv_python = venv / "bin" / "python"
    run([*uv, "venv", "--quiet", "--python", python, str(venv)], "creating the lite venv", cwd=work)
    install = [*uv, "pip", "install", "--quiet", "--python", str(venv_python)]
    layers = closure(list(FACADE_LITE_LAYERS), dists)
    run([*install, *(str(dists[d].wheel) for d in layers)], "installing the GPU-free layers", work)
    run([*install, "--no-deps", str(dists[UMBRELLA].wheel)], "installing the facade alone", work)
    # A copy outside the checkout, so that nothing of the repository is on the import path.
    page = work / f"first_schedule-py{version}.rst"
    shutil.copyfile(FACADE_LITE_PAGE, page)
    forbidden = [*GPU_STACK, "ts_codegen", "ts_runtime"]
    probe = [str(page), ",".join(FACADE_LITE_MODULES), ",".join(forbidden)]
    run([str(venv_python), "-c", _LITE_PROBE, *probe], "the facade without the GPU stack", work)
    return f"with only {', '.join(layers)}: imports, {FACADE_LITE_PAGE.name} doctests pass"


def check_one(
    uv: list[str],
    layer: str,
    version: str,
    python: str,
    dists: dict[str, Dist],
    in_repo: list[str],
    work: Path,
    run_tests: bool = True,
) -> Outcome:
    """Install ``layer`` alone into a fresh virtualenv on ``python`` and test it there.

    ``in_repo`` names every distribution of the repository: none but ``layer`` and its in-repo
    dependencies may be importable. Without ``run_tests`` only steps 1-3 run (the layer installs
    alone and every module imports).
    """
    start = time.monotonic()
    tag = f"{layer}-py{version}"
    venv = work / "venvs" / tag
    venv_python = venv / "bin" / "python"
    try:
        run([*uv, "venv", "--quiet", "--python", python, str(venv)], "creating the venv", cwd=work)
        install = [*uv, "pip", "install", "--quiet", "--python", str(venv_python)]
        # 1. The layer with its run-time dependencies only: it must import in full, and nothing
        #    else from the repository (nor, for GPU-free layers, the GPU stack) may be importable.
        wanted = closure([layer], dists)
        run(
            [*install, *(str(dists[d].wheel) for d in wanted)],
            f"installing {', '.join(wanted)}",
            cwd=work,
        )
        others = sorted(import_name(d) for d in in_repo if d not in wanted)
        gpu_free = all(d in GPU_FREE_LAYERS or d == UMBRELLA for d in wanted)
        forbidden = GPU_STACK if gpu_free else ()
        probe = [str(venv), import_name(layer), ",".join(others), ",".join(forbidden)]
        run([str(venv_python), "-c", _PROBE, *probe], "the isolation check", cwd=work)
        if layer == UMBRELLA:
            lite = check_facade_lite(uv, version, python, dists, work)
            detail = f"installs alone, every module imports; {lite}"
        elif not run_tests:
            detail = "installs alone, every module imports (tests run elsewhere)"
        else:
            # 2. Its `test` extra (which may name other in-repo layers), then its tests, copied
            #    out of the checkout so that they exercise the installed wheel.
            extra = [str(dists[d].wheel) for d in test_closure(layer, dists) if d != layer]
            run(
                [*install, f"{dists[layer].wheel}[test]", *extra],
                f"installing the test extra of {layer}",
                cwd=work,
            )
            tests = work / "tests" / tag
            caches = shutil.ignore_patterns("__pycache__", ".*_cache", ".hypothesis")
            shutil.copytree(dists[layer].source / "tests", tests, ignore=caches)
            pytest = [str(venv_python), "-m", "pytest", "-q", "-p", "no:cacheprovider"]
            out = run(
                [*pytest, "--import-mode=importlib", "--rootdir", str(tests), str(tests)],
                "the tests",
                cwd=tests,
            )
            lines = [ln for ln in out.strip().splitlines() if ln.strip()]
            detail = lines[-1].strip("= ") if lines else "tests passed"
        return Outcome(layer, version, True, time.monotonic() - start, detail)
    except CheckError as err:
        return Outcome(layer, version, False, time.monotonic() - start, str(err), err.log)


def discover_layers() -> list[str]:
    """Every distribution under ``packages/``."""
    return sorted(p.parent.name for p in PACKAGES.glob("*/pyproject.toml"))


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("layers", nargs="*", help="layers to check (default: all under packages/)")
    parser.add_argument(
        "--python",
        action="append",
        choices=PYTHONS,
        help="a Python version to check on (repeatable; default: all of 3.10-3.13)",
    )
    parser.add_argument(
        "--no-umbrella", action="store_true", help="skip the ts-task-scheduling wheel check"
    )
    parser.add_argument(
        "--install-only-on",
        action="append",
        default=[],
        choices=PYTHONS,
        metavar="VERSION",
        help="on this Python, install and import each layer but leave its tests out (where the "
        "whole suite runs them); repeatable",
    )
    parser.add_argument("--jobs", type=int, default=2, help="checks run in parallel (default 2)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)

    layers = [normalize(x) for x in (args.layers or discover_layers())]
    unknown = [x for x in layers if not (PACKAGES / x / "pyproject.toml").is_file()]
    if unknown:
        parser.error(f"no such layer under packages/: {', '.join(unknown)}")
    targets = layers + ([] if args.no_umbrella else [UMBRELLA])
    in_repo = [*discover_layers(), UMBRELLA]

    versions = args.python or list(PYTHONS)
    pythons = {v: find_python(v) for v in versions}
    missing = [v for v, exe in pythons.items() if exe is None]
    if missing:
        print(f"check_layers_alone: Python {', '.join(missing)} not found", file=sys.stderr)
        return 1

    uv = find_uv()
    work = Path(tempfile.mkdtemp(prefix="ts-alone-"))
    outcomes: list[Outcome] = []
    try:
        dist_dir = work / "dist"
        dist_dir.mkdir()
        t0 = time.monotonic()
        try:
            dists = build_wheels(uv, targets, dist_dir)
        except CheckError as err:
            print(f"FAIL  building wheels: {err}\n{err.log}", file=sys.stderr)
            return 1
        print(f"built {len(dists)} wheels in {time.monotonic() - t0:.1f}s", flush=True)
        for name in targets:
            deps = [d for d in closure([name], dists) if d != name]
            line = f"  {name}: installs with {', '.join(deps) or 'no other in-repo distribution'}"
            extra = [d for d in test_closure(name, dists) if d != name and d not in deps]
            print(line + (f"; its tests also use {', '.join(extra)}" if extra else ""))

        # The layers with the most tests first, so that the last checks to start are short ones.
        def weight(layer: str) -> int:
            tests = dists[layer].source / "tests"
            sizes = (f.stat().st_size for f in tests.rglob("*.py")) if layer != UMBRELLA else ()
            return -sum(sizes)

        jobs = [(layer, v) for layer in sorted(targets, key=weight) for v in versions]
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = [
                pool.submit(
                    check_one,
                    uv,
                    layer,
                    v,
                    str(pythons[v]),
                    dists,
                    in_repo,
                    work,
                    v not in args.install_only_on,
                )
                for layer, v in jobs
            ]
            for future in concurrent.futures.as_completed(futures):
                res = future.result()
                outcomes.append(res)
                status = "PASS" if res.ok else "FAIL"
                where = f"{res.layer:<20} py{res.python:<5}"
                print(f"{status}  {where} {res.seconds:6.1f}s  {res.detail}", flush=True)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    failed = [o for o in outcomes if not o.ok]
    for res in failed:
        print(f"\n---- {res.layer} on Python {res.python}: {res.detail} ----\n{res.log}")
    print(f"\n{len(targets)} distributions x {len(versions)} Pythons")
    print(f"alone: {len(outcomes) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
