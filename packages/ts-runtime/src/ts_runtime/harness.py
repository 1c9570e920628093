"""The host side of an example, a test or a benchmark: one harness instead of a copy per file.

A kernel file holds a TS kernel and, usually, its hand-written twin. What it needs around them
is the same everywhere, and lives here:

* :func:`gpu_missing` / :func:`gpu_ready`: whether a GPU run can start here (torch, a CUDA
  GPU, a Hopper GPU), with a message that says what to do instead;
* :func:`max_active_clusters`: the size of a persistent grid on this machine's GPU;
* :func:`fake_tensor`: tensors with a dtype and a shape but no memory, to compile on the CPU;
* :func:`verified`, :func:`compare_ptx` and :func:`compile_only`: verify the plan, compile the
  kernels for the target (``CUTE_DSL_ARCH``) and count their PTX instructions per kind, TS
  against twin, as one JSON-ready dict (``ts``, ``twin``, ``ts_total``, ``twin_total``,
  ``same_counts``);
* :func:`to_cute`, :class:`Case` and :func:`run_on_gpu`: run every kernel on torch tensors,
  check its output, time it with CUDA events in interleaved rounds (:func:`time_rounds`);
* :class:`ExampleCLI`: ``--compile-only``, ``--iters`` and shape options, the JSON line, the
  exit code.

An example's ``main`` is then a few lines::

    def main(argv=None):
        cli = ExampleCLI(__doc__, __file__, shape={"m": 8192, "n": 8192}, multiple_of=(64, 256))
        args = cli.parse(argv)
        return cli.run(lambda: compile_only(args.shape), lambda: run_on_gpu(args.shape, args.iters))

Importing this module imports neither the CuTe DSL nor torch: each function imports what it
uses when called.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

__all__ = [
    "Case",
    "ExampleCLI",
    "compare_ptx",
    "compile_only",
    "fake_tensor",
    "gpu_missing",
    "gpu_ready",
    "kernel_items",
    "max_active_clusters",
    "ptx_counts",
    "ptx_of",
    "run_on_gpu",
    "time_ms",
    "time_rounds",
    "to_cute",
    "verified",
]

INSTEAD = "or run with --compile-only to compile for sm_90a on the CPU, without a GPU"
"""What a script can do when the GPU run cannot start (the end of :func:`gpu_missing`)."""

Kernels: TypeAlias = Mapping[str, Any] | Iterable[tuple[str, Any]]
"""Kernels by name (``{"ts": ..., "twin": ...}`` or ``(name, kernel)`` pairs): ``@cute.jit``
launchers, or staged kernels (their registered launcher is compiled)."""


# -- can a GPU run start here? --------------------------------------------------------------------
def gpu_missing(capability: tuple[int, int] = (9, 0)) -> str | None:
    """Why a GPU run cannot start here, or None when it can.

    Args:
        capability: The compute capability the kernels are built for (sm_90a: Hopper).

    Returns:
        None, or a sentence naming what is missing (torch, a CUDA GPU, a GPU of that
        capability) and ending with what to do instead (:data:`INSTEAD`).
    """
    try:
        import torch
    except ImportError:
        return f"the GPU run needs PyTorch, which is not installed (`pip install torch`); {INSTEAD}"
    if not torch.cuda.is_available():
        return (
            "no CUDA GPU here (torch.cuda.is_available() is False): run on a Hopper GPU, " + INSTEAD
        )
    major, minor = torch.cuda.get_device_capability()
    if (major, minor) != capability:
        name = torch.cuda.get_device_name()
        return (
            f"the kernels are built for sm_{capability[0]}{capability[1]}a (H100, H200); this GPU "
            f"is {name} (sm_{major}{minor}): run on a Hopper GPU, {INSTEAD}"
        )
    return None


def gpu_ready(script: str) -> bool:
    """True when a GPU run can start here; else print why on stderr (the script exits 2).

    Args:
        script: The script's path (``__file__``): the message starts with its file name.
    """
    problem = gpu_missing()
    if problem is not None:
        print(f"{Path(script).name}: {problem}", file=sys.stderr)
    return problem is None


FALLBACK_SMS = 132
"""The SMs of an H100 / H200 SXM: the persistent grid of :func:`max_active_clusters` on a machine
without a GPU (compiling on the CPU)."""

_ACTIVE_CLUSTERS: dict[int, int] = {}


def max_active_clusters(cluster_size: int = 1) -> int:
    """The size of a persistent grid: clusters of ``cluster_size`` CTAs, one CTA an SM.

    As many as this machine's GPU runs at once, asked of the driver once per size
    (CUDA's ``cuOccupancyMaxActiveClusters`` on a probe kernel) where torch sees a CUDA GPU, so
    that a GPU with fewer SMs than an H200 (an H100 PCIe has 114) gets no CTAs that wait for a
    whole wave of the others to finish; ``FALLBACK_SMS // cluster_size`` where there is none.
    The answer depends on the machine only, not on what ran before, so a kernel compiled and
    its host sizes agree.

    Raises:
        RuntimeConfigError: ``cluster_size`` is not an int from 1 to 16 (the most CTAs a
            cluster may hold), or the driver's query failed.
    """
    ok = isinstance(cluster_size, int) and not isinstance(cluster_size, bool)
    if not (ok and 1 <= cluster_size <= 16):
        from ts_runtime.errors import RuntimeConfigError

        raise RuntimeConfigError(
            f"max_active_clusters(cluster_size=...): a cluster holds 1 to 16 CTAs, got "
            f"{cluster_size!r}",
            fix="pass the number of CTAs in one cluster, e.g. 2 for a 2 x 1 cluster",
        )
    if cluster_size not in _ACTIVE_CLUSTERS:
        try:
            import torch

            gpu = bool(torch.cuda.is_available())
        except ImportError:
            gpu = False
        if not gpu:
            return FALLBACK_SMS // cluster_size
        from ts_runtime._dsl import max_active_clusters as ask_driver

        torch.zeros(1, device="cuda")  # the current context the driver's query needs
        try:
            _ACTIVE_CLUSTERS[cluster_size] = ask_driver(cluster_size)
        except RuntimeError as exc:  # a driver error code (_dsl._checked)
            from ts_runtime.errors import RuntimeConfigError

            raise RuntimeConfigError(
                f"max_active_clusters({cluster_size}): the CUDA driver's occupancy query "
                f"failed: {exc}",
                fix="update the NVIDIA driver (clusters need CUDA 11.8 or later and a Hopper "
                "or later GPU), or pick a smaller cluster",
            ) from exc
    return _ACTIVE_CLUSTERS[cluster_size]


# -- compiling on the CPU -------------------------------------------------------------------------
def fake_tensor(
    dtype: Any, shape: int | Sequence[Any], *, row_major: bool = False, align: int | None = None
) -> Any:
    """A compact fake tensor (a dtype and a shape, no memory) to compile a kernel on the CPU.

    Args:
        dtype: The element type (``cutlass.Float16``, ``cutlass.Int32``, ...).
        shape: The extents (an int for a vector).
        row_major: The last mode is contiguous (the first one is, by default).
        align: The byte alignment the kernel may assume (the DSL's default when None).
    """
    from ts_runtime._dsl import fake_tensor as make_fake

    extents = (shape,) if isinstance(shape, int) else tuple(shape)
    options: dict[str, Any] = {}
    if row_major:
        options["stride_order"] = tuple(reversed(range(len(extents))))
    if align is not None:
        options["assumed_align"] = align
    return make_fake(dtype, extents, **options)


def verified(plan: Any) -> bool:
    """Verify a kernel plan (ts-verify); True, or the verifier's error is raised.

    Args:
        plan: A ``KernelPlan``, or a staged ``Kernel`` (its plan is verified).

    Raises:
        ts_verify.VerificationError: The plan has errors (each with its task, resource, line).
    """
    from ts_verify import verify

    kernel_plan = plan.plan().plan if hasattr(plan, "jit_launcher") else plan
    verify(kernel_plan).raise_for_errors()
    return True


def kernel_items(kernels: Kernels) -> list[tuple[str, Any]]:
    """``(name, @cute.jit launcher)`` pairs: a staged kernel stands for its registered launcher."""
    pairs = kernels.items() if isinstance(kernels, Mapping) else kernels
    return [(name, getattr(k, "jit_launcher", None) or k) for name, k in pairs]


def ptx_counts(ptx: str, *, ops: bool = False) -> dict[str, Any]:
    """PTX instruction counts: ``kinds`` (per kind, ts_codegen's), ``total``, ``ops`` if asked.

    Args:
        ptx: The PTX text.
        ops: Also count per opcode (``ld.global.v4.b32``, ...).
    """
    from ts_codegen import count_instructions, opcode_counts

    per_op = opcode_counts(ptx)
    out: dict[str, Any] = {"kinds": count_instructions(ptx), "total": sum(per_op.values())}
    if ops:
        out["ops"] = dict(sorted(per_op.items()))
    return out


def ptx_of(kernel: Any, *args: Any) -> str:
    """Compile ``kernel`` (a ``@cute.jit`` launcher or a staged kernel) for ``args``; its PTX."""
    from ts_codegen.capture import note_compiled
    from ts_codegen.dsl import keep_ptx_options
    from ts_runtime.compile import CompileCache, compile_kernel

    fn = kernel_items([("kernel", kernel)])[0][1]
    # The one compile path; a cache of its own, so that every call compiles (and lowers) and
    # translation validation pairs this PTX with the plans lowered for it.
    ptx = compile_kernel(fn, *args, options=keep_ptx_options(), cache=CompileCache()).as_text("ptx")
    note_compiled(ptx)
    return ptx


def compare_ptx(kernels: Kernels, *args: Any, ops: bool = False) -> dict[str, Any]:
    """Compile every kernel for ``args`` and count its PTX; ``same_counts`` for TS vs twin.

    Args:
        kernels: The kernels by name (``ts`` and ``twin`` are compared).
        *args: The launchers' arguments (fake tensors, DSL scalars, Python constants).
        ops: Also report the counts per opcode (``<name>_ops``).

    Returns:
        ``{name: counts per kind, f"{name}_total": instructions, ...}`` and, when both ``ts``
        and ``twin`` are there, ``same_counts``: their counts per kind are equal.
    """
    result: dict[str, Any] = {}
    for name, fn in kernel_items(kernels):
        counts = ptx_counts(ptx_of(fn, *args), ops=ops)
        result[name] = counts["kinds"]
        result[f"{name}_total"] = counts["total"]
        if ops:
            result[f"{name}_ops"] = counts["ops"]
    if "ts" in result and "twin" in result:
        result["same_counts"] = result["ts"] == result["twin"]
    return result


def compile_only(
    example: str,
    kernels: Kernels,
    args: Sequence[Any],
    *,
    plan: Any = None,
    ops: bool = False,
    **fields: Any,
) -> dict[str, Any]:
    """What ``--compile-only`` prints: the example, its options, ``verified`` and the counts.

    Args:
        example: The example's name (``"example"`` in the result).
        kernels: The kernels by name (see :func:`compare_ptx`).
        args: The launchers' arguments, e.g. :func:`fake_tensor` s.
        plan: The TS kernel's plan or staged kernel, verified first (``"verified"``).
        ops: Also report the counts per opcode.
        **fields: The options the kernels were built with (``shape``, ``variant``, ...).
    """
    result: dict[str, Any] = {"example": example, **fields}
    if plan is not None:
        result["verified"] = verified(plan)
    result.update(compare_ptx(kernels, *args, ops=ops))
    return result


# -- running on the GPU ---------------------------------------------------------------------------
def to_cute(tensor: Any, align: int | None = 16) -> Any:
    """A CuTe tensor over a torch tensor's memory (DLPack, no copy); None stays None.

    Args:
        tensor: A torch tensor (or None).
        align: The byte alignment the kernel may assume (the DSL's default when None).
    """
    if tensor is None:
        return None
    from ts_runtime._dsl import from_dlpack

    return from_dlpack(tensor, assumed_align=align)


def time_ms(fn: Callable[[], Any], iters: int, warmup: int = 3) -> float:
    """Mean milliseconds per call of ``fn`` over ``iters`` back-to-back calls (CUDA events).

    Args:
        fn: Launches the work (asynchronously, on the current stream).
        iters: Timed calls.
        warmup: Untimed calls first.
    """
    import torch

    for _ in range(warmup):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return float(start.elapsed_time(end)) / max(iters, 1)


def time_rounds(
    calls: Mapping[str, Callable[[], Any]], iters: int, rounds: int = 3, warmup: int = 3
) -> dict[str, float]:
    """Each call's best :func:`time_ms` over ``rounds`` rounds that interleave all calls.

    The order rotates every round: the first contender after a pause runs on cooler, faster
    clocks, which would otherwise always favour the same one; clock or power drift during the
    run biases none of them.

    Returns:
        Milliseconds per call, by name.
    """
    names = list(calls)
    best = dict.fromkeys(names, float("inf"))
    for r in range(max(rounds, 1)):
        shift = r % len(names) if names else 0
        for name in names[shift:] + names[:shift]:
            best[name] = min(best[name], time_ms(calls[name], iters, warmup))
    return best


@dataclasses.dataclass
class Case:
    """One kernel's run: its arguments and how to check what it wrote.

    Attributes:
        args: The launcher's arguments (CuTe tensors from :func:`to_cute`, DSL scalars).
        check: After a launch: True when the output is right, or a dict with ``"ok"`` and
            more fields for the result (e.g. ``max_abs_err``).
        reset: Before each checked launch (e.g. zero the output).
        launches: Checked launches (e.g. 2 when a launch leaves state for the next one).
    """

    args: Sequence[Any]
    check: Callable[[], bool | Mapping[str, Any]]
    reset: Callable[[], Any] | None = None
    launches: int = 1


def run_on_gpu(
    kernels: Kernels,
    case: Callable[[str], Case],
    *,
    iters: int,
    rounds: int = 3,
    bytes_moved: int | None = None,
    baselines: Mapping[str, Callable[[], Any]] | None = None,
) -> dict[str, Any]:
    """Compile, run and check every kernel, then time them all in interleaved rounds.

    Args:
        kernels: The kernels by name (see :func:`compare_ptx`).
        case: ``case(name)``: fresh arguments and the check for kernel ``name``.
        iters: Timed launches per round.
        rounds: Rounds; each kernel's best counts (:func:`time_rounds`).
        bytes_moved: Bytes each launch reads and writes (adds ``GBps``).
        baselines: More calls to time alongside (e.g. ``{"torch": lambda: dst.copy_(src)}``).

    Returns:
        ``{name: {"ok", "ms", ["GBps"], ...}}`` for every kernel and baseline (no ``ok`` for
        a baseline), and ``ts_over_twin`` (twin time / TS time) when both are there.
    """
    import torch

    from ts_runtime.compile import compile_kernel

    result: dict[str, Any] = {}
    calls: dict[str, Callable[[], Any]] = {}
    for name, fn in kernel_items(kernels):
        c = case(name)
        compiled = compile_kernel(fn, *c.args)  # the one compile path and its cache
        entry: dict[str, Any] = {}
        ok = True
        for _ in range(max(c.launches, 1)):
            if c.reset is not None:
                c.reset()
            compiled(*c.args)
            torch.cuda.synchronize()
            verdict = c.check()
            if isinstance(verdict, Mapping):
                entry.update(verdict)
                verdict = verdict["ok"]
            ok = ok and bool(verdict)
        entry["ok"] = ok
        result[name] = entry
        calls[name] = functools.partial(compiled, *c.args)
    calls.update(baselines or {})
    for name, ms in time_rounds(calls, iters, rounds).items():
        entry = result.setdefault(name, {})
        entry["ms"] = ms
        if bytes_moved is not None:
            entry["GBps"] = bytes_moved / (ms * 1e6)
    if "ts" in result and "twin" in result:
        result["ts_over_twin"] = result["twin"]["ms"] / result["ts"]["ms"]
    return result


def _all_ok(out: Mapping[str, Any]) -> bool:
    checked = [v["ok"] for v in out.values() if isinstance(v, Mapping) and "ok" in v]
    return bool(checked) and all(checked)


# -- the command line ------------------------------------------------------------------------------
class ExampleCLI:
    """An example's command line: ``--compile-only``, ``--iters``, shape options, the JSON line.

    Args:
        doc: The script's docstring (its first line is the description).
        script: The script's path (``__file__``), for messages.
        shape: Shape options and their defaults, e.g. ``{"m": 8192, "n": 8192}`` for ``--m``
            and ``--n``; :meth:`parse` gathers them into ``args.shape``.
        multiple_of: What each shape option must be a multiple of (the tile shape).
        iters: The default of ``--iters`` (timed launches); None: no ``--iters`` option.

    Attributes:
        parser: The ``argparse`` parser: add the example's own options to it.
        args: The parsed arguments (after :meth:`parse`).
    """

    def __init__(
        self,
        doc: str | None,
        script: str,
        *,
        shape: Mapping[str, int] | None = None,
        multiple_of: Sequence[int] | None = None,
        iters: int | None = 20,
    ) -> None:
        self.script = script
        self.shape = dict(shape or {})
        self.multiple_of = multiple_of
        lines = (doc or "").strip().splitlines()
        self.parser = argparse.ArgumentParser(description=lines[0] if lines else None)
        self.parser.add_argument(
            "--compile-only", action="store_true", help="CPU: compile, count PTX (no GPU)"
        )
        for i, (name, default) in enumerate(self.shape.items()):
            unit = f" (a multiple of {multiple_of[i]})" if multiple_of else ""
            self.parser.add_argument(f"--{name}", type=int, default=default, help=f"{name}{unit}")
        if iters is not None:
            self.parser.add_argument(
                "--iters", type=int, default=iters, help="timed launches per round (GPU run)"
            )
        self.args = argparse.Namespace()

    def parse(
        self,
        argv: Sequence[str] | None = None,
        multiple_of: Sequence[int] | Callable[[argparse.Namespace], Sequence[int]] | None = None,
    ) -> argparse.Namespace:
        """Parse ``argv``; ``args.shape`` is the shape options' tuple.

        Args:
            argv: The arguments (default: ``sys.argv[1:]``).
            multiple_of: Overrides the constructor's, or computes it from the arguments (e.g.
                the tile shape of the chosen variant).

        Exits with code 2 and a usage message when a shape is not a multiple of its tile.
        """
        args = self.parser.parse_args(argv)
        args.shape = tuple(getattr(args, name) for name in self.shape)
        tiles = multiple_of(args) if callable(multiple_of) else multiple_of or self.multiple_of
        if tiles:
            bad = [
                f"--{name} must be a multiple of {tile}"
                for name, tile, size in zip(self.shape, tiles, args.shape, strict=True)
                if size % tile
            ]
            if bad:
                self.parser.error("; ".join(bad))
        self.args = args
        return args

    def run(
        self,
        compile_only: Callable[[], Mapping[str, Any]],
        on_gpu: Callable[[], Mapping[str, Any]],
        *,
        compile_ok: Callable[[Mapping[str, Any]], bool] | None = None,
        gpu_ok: Callable[[Mapping[str, Any]], bool] | None = None,
    ) -> int:
        """Compile only or run on the GPU (as parsed), print the result as one JSON line.

        Args:
            compile_only: Builds the ``--compile-only`` result.
            on_gpu: Builds the GPU run's result.
            compile_ok: Whether the compile-only result passes (default: ``same_counts``).
            gpu_ok: Whether the GPU result passes (default: every ``"ok"`` in it is true).

        Returns:
            The exit code: 0 when the result passes, 1 when not, 2 when no GPU run can start
            here (:func:`gpu_ready` said why on stderr).
        """
        if getattr(self.args, "compile_only", False):
            out = compile_only()
            passed = (compile_ok or (lambda o: bool(o.get("same_counts"))))(out)
        else:
            if not gpu_ready(self.script):
                return 2
            out = on_gpu()
            passed = (gpu_ok or _all_ok)(out)
        print(json.dumps(out, sort_keys=True), flush=True)
        return 0 if passed else 1
