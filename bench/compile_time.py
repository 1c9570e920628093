"""Host-side cost on the CPU: trace + verify + lower + compile, ours against NVIDIA's TS.

For each Hopper example (``examples/hopper/grid_stride_copy.py``, ``tma_copy.py`` and, when it
exists, ``bias_act_copy.py``) this times, best of ``--repeat``:

* ``trace_s``: ``make_plan()``, building the kernel plan from the traced schedules;
* ``verify_s``: ``ts_verify.verify(plan)``;
* ``compile_s``: ``cute.compile`` of the TS kernel for sm_90a with fake tensors (the lowering by
  ts-codegen runs inside it, while CuTe DSL traces the kernel);
* ``twin_compile_s``: the same for the hand-written twin (the floor: what the kernel costs to
  compile with no framework at all);
* ``total_s`` = trace + verify + compile.

The peer (``cutlass.experimental.task_scheduling`` in nvidia-cutlass-dsl) gets the same two
copy kernels written in its API below (our code).  Its schedule capture, ``TaskManager``
construction with all default checks (``verbose=False``) and lowering all happen while CuTe DSL
traces the kernel, so its ``total_s`` is one ``cute.compile``; ``task_manager_s`` is the part
spent constructing its ``TaskManager`` (timed inside the trace)::

    CUTE_DSL_ARCH=sm_90a /tmp/peer/bin/python bench/compile_time.py [--repeat 3]

Caching: ``cute.compile`` always passes ``no_cache`` to the DSL (it never returns a kernel from
the in-memory JIT cache), and this script sets ``CUTE_DSL_DISABLE_FILE_CACHING=1`` before the
DSL is imported, so each repeat is a full recompile in the same process.  One warm-up compile of
an unrelated trivial kernel runs first, so the DSL's one-time start-up (MLIR context, compiler
libraries) is charged to nobody.  No GPU is needed.  Prints a table and one JSON line.

No ``from __future__ import annotations`` here: the DSL finds ``Constexpr`` fields of the peer's
resources through ``typing.get_type_hints``, which fails on the peer's own base class, so
string annotations would make it carry the task-local variables through loops (and fail).
"""

import argparse
import dataclasses
import datetime
import importlib.util
import json
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
os.environ.setdefault("CUTE_DSL_DISABLE_FILE_CACHING", "1")

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe
from cutlass.cute.nvgpu import cpasync
from cutlass.cute.runtime import make_fake_compact_tensor
from cutlass.experimental.task_scheduling import consumer_work as peer_consumer_work
from cutlass.experimental.task_scheduling import domain_loop as peer_domain_loop
from cutlass.experimental.task_scheduling import producer_work as peer_producer_work
from cutlass.experimental.task_scheduling import schedule as peer_schedule
from cutlass.experimental.task_scheduling.resources import MemoryResource as PeerResource
from cutlass.experimental.task_scheduling.resources import PipelineConfig
from cutlass.experimental.task_scheduling.resources import TaskLocalVariable as PeerVariable
from cutlass.experimental.task_scheduling.task import Task as PeerTask
from cutlass.experimental.task_scheduling.task_manager import TaskManager
from cutlass.memory import SmemAllocator

from ts_verify import verify

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ("grid_stride_copy", "tma_copy", "bias_act_copy")

# The kernels' shapes (those of the examples).
GRID_N = 1 << 20
CTAS, THREADS, UNROLL = 132, 256, 4
TMA_SHAPE = (8192, 8192)
TILE_M, TILE_N, STAGES = 128, 64, 4
TILE_BYTES = TILE_M * TILE_N * 2
LOAD_WARP, STORE_WARP, STORE_WARPS = 0, 4, 8
BLOCK_THREADS = (STORE_WARP + STORE_WARPS) * 32
STORE_THREADS = STORE_WARPS * 32
LOAD_REGS, STORE_REGS = 40, 232


def _example(name: str, folder: Path = ROOT / "examples" / "hopper") -> ModuleType | None:
    path = folder / f"{name}.py"
    if not path.exists():
        return None
    # As when the example runs as a script: it imports the helpers beside it.
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(f"bench_compile_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def best_of(repeat: int, fn: Callable[[], Any]) -> float:
    """The smallest wall time of ``repeat`` calls of ``fn``, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _quiet(fn: Callable[[], Any]) -> Callable[[], Any]:
    def call() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()

    return call


# --------------------------------------------------------------------------------------------
# Fake arguments per kernel signature
# --------------------------------------------------------------------------------------------


def grid_args() -> tuple[Any, ...]:
    src = make_fake_compact_tensor(cutlass.Float16, (GRID_N,))
    dst = make_fake_compact_tensor(cutlass.Float16, (GRID_N,))
    return src, dst, cutlass.Int32(GRID_N)


def tile_args(shape: tuple[int, int] = TMA_SHAPE) -> tuple[Any, ...]:
    def fake() -> Any:
        return make_fake_compact_tensor(
            cutlass.Float16, shape, stride_order=(1, 0), assumed_align=16
        )

    return fake(), fake()


def example_args(name: str, module: ModuleType) -> tuple[Any, ...]:
    """Fake arguments for an example's ``ts_copy`` / ``twin_copy``."""
    if name == "grid_stride_copy":
        return grid_args()
    if name == "tma_copy":
        return tile_args()
    # Any other example: 2D fp16 tensors, plus whatever its ``fake_args`` hook adds.
    hook = getattr(module, "fake_args", None)
    if hook is not None:
        return tuple(hook())
    return tile_args(getattr(module, "DEFAULT_SHAPE", TMA_SHAPE))


# --------------------------------------------------------------------------------------------
# Ours
# --------------------------------------------------------------------------------------------


# The variant of tma_copy.py that the peer's TMA kernel below matches (4 stages of 128 x 64,
# register stores), when the example has variants.
PEER_MATCHED_VARIANT = "baseline"


def kernels_of(module: ModuleType, variant: str | None) -> tuple[Callable[[], Any], Any, Any]:
    """``(make_plan, ts_copy, twin_copy)`` of an example, or of one of its variants."""
    if variant is None:
        return module.make_plan, module.ts_copy, module.twin_copy
    return (
        lambda: module.make_plan(variant),
        module.TsCopy(variant),
        module.TwinCopy(variant),
    )


def variants_of(name: str, module: ModuleType) -> list[tuple[str, str | None]]:
    """``(row name, variant)`` pairs to time: the example itself, or each of its variants."""
    variants = getattr(module, "VARIANTS", None)
    if not variants or not hasattr(module, "TsCopy"):
        return [(name, None)]
    return [(f"{name}[{v}]", v) for v in variants]


def time_ours(name: str, module: ModuleType, variant: str | None, repeat: int) -> dict[str, Any]:
    make_plan, ts_copy, twin_copy = kernels_of(module, variant)
    plan = make_plan()
    args = example_args(name, module)
    out: dict[str, Any] = {
        "trace_s": best_of(repeat, make_plan),
        "verify_s": best_of(repeat, lambda: verify(plan)),
        "compile_s": best_of(repeat, _quiet(lambda: cute.compile(ts_copy, *args))),
        "twin_compile_s": best_of(repeat, _quiet(lambda: cute.compile(twin_copy, *args))),
        "verified": verify(plan).ok,
    }
    out["total_s"] = out["trace_s"] + out["verify_s"] + out["compile_s"]
    return out


# --------------------------------------------------------------------------------------------
# The peer: the same two kernels in NVIDIA's API (our code)
# --------------------------------------------------------------------------------------------

_TASK_MANAGER_S: list[float] = []


def _build_and_run(tasks: list[Any], graph: dict[Any, list[Any]], barriers: bool) -> None:
    """Construct the peer's TaskManager (all checks, timed), set it up and emit the tasks.

    With ``barriers`` (a pipelined resource), the user's mbarrier-init fence and CTA sync go
    between setup and run, as the peer's lifecycle asks.
    """
    start = time.perf_counter()
    manager = TaskManager(tasks, graph, verbose=False)
    _TASK_MANAGER_S.append(time.perf_counter() - start)
    manager.setup_resources_and_tasks()
    if barriers:
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
    manager.run()


@dataclasses.dataclass(kw_only=True)
class PeerSource(PeerResource):
    """Grid-stride copy: the input tensor; ``load`` yields one element."""

    tensor: Any = None
    element: cutlass.Constexpr[PeerVariable] = PeerVariable.uninitialized()  # noqa: RUF009 (a field spec)

    def __post_init__(self) -> None:
        self.element = PeerVariable(dtype=cutlass.Float16, default=cutlass.Float16(0))

    @peer_consumer_work(returns=element)
    @cute.jit
    def load(self, stage_info: Any) -> Any:
        return self.tensor[stage_info.loop_offset]


@dataclasses.dataclass(kw_only=True)
class PeerDestination(PeerResource):
    """Grid-stride copy: the output tensor; ``store`` writes one element."""

    tensor: Any = None

    @peer_producer_work
    @cute.jit
    def store(self, stage_info: Any, element: Any) -> None:
        self.tensor[stage_info.loop_offset] = element


def _peer_grid_body(src: Any, dst: Any, n: Any, start: Any, stride: Any) -> None:
    s, d = PeerSource(name="src", tensor=src), PeerDestination(name="dst", tensor=dst)

    @peer_schedule
    def copy(src: Any, dst: Any) -> None:
        with peer_domain_loop(start, n, stride, unroll=UNROLL):
            value = src.load()
            dst.store(element=value)

    task = PeerTask([s], [d], 0, THREADS // 32, schedule=copy(s, d), name="copy")
    _build_and_run([task], {d: [s]}, barriers=False)


@cute.kernel
def peer_grid_kernel(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    gdim, _, _ = cute.arch.grid_dim()
    _peer_grid_body(src, dst, n, bidx * bdim + tidx, gdim * bdim)


@cute.jit
def peer_grid_copy(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32) -> None:
    peer_grid_kernel(src, dst, n).launch(grid=(CTAS, 1, 1), block=(THREADS, 1, 1))


def _smem_tile_layout() -> Any:
    return cute.make_layout((TILE_M, TILE_N), stride=(TILE_N, 1))


def _ring_layout() -> Any:
    return cute.make_layout((TILE_M, TILE_N, STAGES), stride=(TILE_N, 1, TILE_M * TILE_N))


def _store_copy() -> Any:
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16, num_bits_per_copy=128)
    threads = cute.make_layout((STORE_THREADS // 8, 8), stride=(8, 1))
    return cute.make_tiled_copy_tv(atom, threads, cute.make_layout((1, 8)))


@dataclasses.dataclass(kw_only=True)
class PeerStageBuffer(PeerResource):
    """TMA copy: the SMEM ring; ``tma_load`` fills a stage, ``read`` yields its index."""

    tma_atom: Any = None
    g_tiles: Any = None
    s_tiles: Any = None
    tiles_n: cutlass.Constexpr[int] = 1
    stage: cutlass.Constexpr[PeerVariable] = PeerVariable.uninitialized()  # noqa: RUF009 (a field spec)

    def __post_init__(self) -> None:
        self.stage = PeerVariable(dtype=cutlass.Int32, default=cutlass.Int32(0))

    @peer_producer_work
    @cute.jit
    def tma_load(self, stage_info: Any) -> None:
        t = stage_info.loop_offset
        t_s, t_g = cpasync.tma_partition(
            self.tma_atom,
            0,
            cute.make_layout(1),
            cute.group_modes(self.s_tiles, 0, 2),
            self.g_tiles,
        )
        cute.copy(
            self.tma_atom,
            t_g[(None, (t // self.tiles_n, t % self.tiles_n))],
            t_s[(None, stage_info.stage_idx)],
            tma_bar_ptr=cute.make_ptr(
                cutlass.Int64, stage_info.barrier.data_ptr(), mem_space=cutlass.AddressSpace.smem
            ),
        )

    @peer_consumer_work(returns=stage)
    @cute.jit
    def read(self, stage_info: Any) -> Any:
        return cutlass.Int32(stage_info.stage_idx)


@dataclasses.dataclass(kw_only=True)
class PeerGlobalOut(PeerResource):
    """TMA copy: the destination, written tile by tile from the SMEM stage."""

    tensor: Any = None
    s_tiles: Any = None
    tiles_n: cutlass.Constexpr[int] = 1

    @peer_producer_work
    @cute.jit
    def store(self, stage_info: Any, stage: Any) -> None:
        t = stage_info.loop_offset
        g = cute.local_tile(self.tensor, (TILE_M, TILE_N), (t // self.tiles_n, t % self.tiles_n))
        tidx, _, _ = cute.arch.thread_idx()
        thr = _store_copy().get_slice(tidx - STORE_WARP * 32)
        t_s = thr.partition_S(self.s_tiles[(None, None, stage)])
        t_g = thr.partition_D(g)
        frag = cute.make_fragment_like(t_s)
        cute.copy(_store_copy(), t_s, frag)
        cute.copy(_store_copy(), frag, t_g)


def _peer_tma_body(tma_atom: Any, g_src: Any, dst: Any, first: Any, num_tiles: Any) -> None:
    tiles_n = cute.size(dst, mode=[1]) // TILE_N
    gdim, _, _ = cute.arch.grid_dim()
    s_tiles = SmemAllocator().allocate_tensor(cutlass.Float16, _ring_layout(), 1024)
    cfg = PipelineConfig.create_tma_async_pipeline_cfg(
        STAGES,
        TILE_BYTES,
        cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
        cpipe.CooperativeGroup(cpipe.Agent.Thread, STORE_THREADS),
    )
    smem = PeerStageBuffer(
        name="smem",
        pipeline_config=cfg,
        tma_atom=tma_atom,
        g_tiles=cute.zipped_divide(g_src, (TILE_M, TILE_N)),
        s_tiles=s_tiles,
        tiles_n=tiles_n,
    )
    out = PeerGlobalOut(name="dst", tensor=dst, s_tiles=s_tiles, tiles_n=tiles_n)

    @peer_schedule
    def load(smem: Any) -> None:
        with peer_domain_loop(first, num_tiles, gdim):
            smem.acquire()
            smem.tma_load()
            smem.commit()

    @peer_schedule
    def store(smem: Any, dst: Any) -> None:
        with peer_domain_loop(first, num_tiles, gdim):
            smem.wait()
            stage = smem.read()
            dst.store(stage=stage)
            smem.release()

    @peer_schedule
    def pad() -> None:
        with peer_domain_loop(0):
            pass

    tasks = [
        PeerTask(
            [], [smem], LOAD_WARP, 1, schedule=load(smem), num_registers=LOAD_REGS, name="load"
        ),
        PeerTask(
            [smem],
            [out],
            STORE_WARP,
            STORE_WARPS,
            schedule=store(smem, out),
            num_registers=STORE_REGS,
            name="store",
        ),
        # The peer needs every warp of a 4-warp group with num_registers covered by a task.
        PeerTask([], [], 1, 3, schedule=pad(), num_registers=LOAD_REGS, name="pad"),
    ]
    _build_and_run(tasks, {out: [smem]}, barriers=True)


@cute.kernel
def peer_tma_kernel(tma_atom: cute.CopyAtom, g_src: cute.Tensor, dst: cute.Tensor) -> None:
    bidx, _, _ = cute.arch.block_idx()
    tiles = (cute.size(dst, mode=[0]) // TILE_M) * (cute.size(dst, mode=[1]) // TILE_N)
    _peer_tma_body(tma_atom, g_src, dst, bidx, tiles)


@cute.jit
def peer_tma_copy(src: cute.Tensor, dst: cute.Tensor) -> None:
    tma_atom, g_src = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileG2SOp(), src, _smem_tile_layout(), (TILE_M, TILE_N)
    )
    peer_tma_kernel(tma_atom, g_src, dst).launch(grid=(CTAS, 1, 1), block=(BLOCK_THREADS, 1, 1))


PEER_KERNELS: dict[str, tuple[Callable[..., Any], Callable[[], tuple[Any, ...]]]] = {
    "grid_stride_copy": (peer_grid_copy, grid_args),
    "tma_copy": (peer_tma_copy, tile_args),
}


def time_peer(name: str, repeat: int) -> dict[str, Any]:
    fn, make_args = PEER_KERNELS[name]
    args = make_args()
    _TASK_MANAGER_S.clear()
    total = best_of(repeat, _quiet(lambda: cute.compile(fn, *args)))
    return {"total_s": total, "task_manager_s": min(_TASK_MANAGER_S)}


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


@cute.kernel
def _warm_kernel(dst: cute.Tensor) -> None:
    tidx, _, _ = cute.arch.thread_idx()
    dst[tidx] = cutlass.Float16(0)


@cute.jit
def _warm(dst: cute.Tensor) -> None:
    _warm_kernel(dst).launch(grid=(1, 1, 1), block=(32, 1, 1))


def _peer_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nvidia-cutlass-dsl")
    except PackageNotFoundError:
        return "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per phase (best is kept)")
    parser.add_argument(
        "--examples",
        type=Path,
        default=ROOT / "examples" / "hopper",
        help="folder of the examples (default: examples/hopper)",
    )
    args = parser.parse_args()

    cute.compile(_warm, make_fake_compact_tensor(cutlass.Float16, (32,)))
    ours: dict[str, Any] = {}
    peer: dict[str, Any] = {}
    for name in EXAMPLES:
        module = _example(name, args.examples)
        if module is None:
            continue
        rows = variants_of(name, module)
        for row, variant in rows:
            try:
                ours[row] = time_ours(name, module, variant, args.repeat)
            except Exception as exc:  # a new example whose arguments this script does not know
                print(f"{row}: skipped ({type(exc).__name__}: {exc})", file=sys.stderr)
        if name in PEER_KERNELS:
            matched = [r for r, v in rows if v in (None, PEER_MATCHED_VARIANT)]
            peer[matched[0] if matched else name] = time_peer(name, args.repeat)

    print(
        f"{'kernel':<28} {'trace':>8} {'verify':>8} {'compile':>8} {'total':>8} "
        f"{'twin':>8} {'peer':>8} {'peer TM':>8}   (seconds, best of {args.repeat})"
    )
    for name, o in ours.items():
        p = peer.get(name, {})
        p_total = f"{p['total_s']:8.3f}" if p else f"{'-':>8}"
        p_tm = f"{p['task_manager_s']:8.4f}" if p else f"{'-':>8}"
        print(
            f"{name:<28} {o['trace_s']:8.4f} {o['verify_s']:8.4f} {o['compile_s']:8.3f} "
            f"{o['total_s']:8.3f} {o['twin_compile_s']:8.3f} {p_total} {p_tm}"
        )

    def rounded(table: dict[str, dict[str, Any]]) -> dict[str, Any]:
        return {
            k: {m: round(v, 5) if isinstance(v, float) else v for m, v in d.items()}
            for k, d in table.items()
        }

    result = {
        "bench": "compile_time",
        "ours": rounded(ours),
        "peer": rounded(peer),
        "date": datetime.date.today().isoformat(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "peer_version": _peer_version(),
        "arch": os.environ.get("CUTE_DSL_ARCH"),
        "repeat": args.repeat,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
