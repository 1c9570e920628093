"""Bias + activation fused into the TMA copy's store task, on Hopper: TS kernel and twin.

``out[r, c] = act(x[r, c] + bias[c])`` with ``act`` = ReLU or GELU (tanh approximation), fp16
in and out, fp32 math. The schedule is the TMA copy's (``tma_copy.py``, variant ``regs``):
warp 0 (a load task) fills a 6-deep ring of 64 x 256 fp16 SMEM tiles with TMA loads
(``PipelineTmaAsync``); warps 4-11 (a store task of two warpgroups) wait for a stage, read the
bias of their columns (one 16-byte load per thread and tile: a thread always covers the same
8 columns of a tile), read the stage into registers with 16-byte SMEM loads, compute in fp32,
write 16-byte global stores and release the stage. Warpgroup 0 gives registers up
(``setmaxnreg.dec 40``), the store warpgroups take them (``.inc 232``).

In the plan the bias is a third resource: ``bias.load()`` (consumer work) returns the thread's
bias values as a task-local value that ``dst.store(view=..., bias=...)`` takes.

Usage::

    python examples/hopper/bias_act_copy.py --compile-only   # CPU: PTX counts, TS vs twin
    python examples/hopper/bias_act_copy.py                  # GPU: run, check, time
    python examples/hopper/bias_act_copy.py --act relu --m 16384 --n 32768
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe
from cutlass.cute.nvgpu import cpasync
from cutlass.memory import SmemAllocator

from task_scheduling import consumer_work, domain_loop, producer_work, schedule
from task_scheduling.harness import Case, ExampleCLI, fake_tensor, to_cute
from task_scheduling.harness import compile_only as compare
from task_scheduling.harness import run_on_gpu as run_kernels
from task_scheduling.kernel import Kernel, KernelContext, Tasks, TmaRing
from task_scheduling.plan import KernelPlan
from task_scheduling.resources import MemoryResource, TaskLocalVariable
from task_scheduling.schedule_builder import ResourceProxy
from task_scheduling.task import Task

TILE_M, TILE_N, STAGES = 64, 256, 6
TILE_BYTES = TILE_M * TILE_N * 2
CTAS = 132
LOAD_WARP, STORE_WARP, STORE_WARPS = 0, 4, 8
BLOCK_THREADS = (STORE_WARP + STORE_WARPS) * 32
STORE_THREADS = STORE_WARPS * 32
LOAD_REGS, STORE_REGS = 40, 232
DEFAULT_SHAPE = (8192, 8192)
ACTS = ("gelu", "relu")
DEFAULT_ACT = "gelu"
GELU_C0 = 0.7978845608028654  # sqrt(2 / pi)
GELU_C1 = 0.044715 * GELU_C0


def smem_tile_layout() -> Any:
    """One stage: a row-major ``TILE_M x TILE_N`` tile."""
    return cute.make_layout((TILE_M, TILE_N), stride=(TILE_N, 1))


def ring_layout() -> Any:
    """All stages: ``(TILE_M, TILE_N, STAGES)``, one row-major tile after the other."""
    return cute.make_layout((TILE_M, TILE_N, STAGES), stride=(TILE_N, 1, TILE_M * TILE_N))


def store_copy() -> Any:
    """256 threads, 8 halves (16 bytes) each; 32 threads per 256-wide row, 8 rows per pass."""
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16, num_bits_per_copy=128)
    per_row = TILE_N // 8
    threads = cute.make_layout((STORE_THREADS // per_row, per_row), stride=(per_row, 1))
    return cute.make_tiled_copy_tv(atom, threads, cute.make_layout((1, 8)))


def tile_coord(t: Any, tiles_n: int) -> tuple[Any, Any]:
    """Row-major tile order."""
    return t // tiles_n, t % tiles_n


def store_tid() -> Any:
    """The thread's index within the store task."""
    tidx, _, _ = cute.arch.thread_idx()
    return tidx - STORE_WARP * 32


def bias_rows(bias: cute.Tensor, rows: Any) -> Any:
    """``bias`` as a ``(rows, N)`` tensor whose rows all alias the bias (row stride 0)."""
    n = cute.size(bias, mode=[0])
    return cute.make_tensor(bias.iterator, cute.make_layout((rows, n), stride=(0, 1)))


@cute.jit
def load_bias(bias2d: cute.Tensor, n: Any) -> Any:
    """The store thread's 8 bias values of tile column block ``n``, as fp32 (one 16-byte load)."""
    g = cute.local_tile(bias2d, (TILE_M, TILE_N), (0, n))
    t_b = store_copy().get_slice(store_tid()).partition_S(g)
    src = t_b[(None, 0, 0)]
    frag = cute.make_fragment_like(src)
    cute.autovec_copy(src, frag)
    return frag.load().to(cutlass.Float32)


@cute.jit
def activation(y: Any, act: str) -> Any:
    """ReLU, or GELU with the tanh approximation, on fp32 values."""
    if cutlass.const_expr(act == "relu"):  # type: ignore[attr-defined]
        return cute.math.max(y, cute.full_like(y, 0.0))  # type: ignore[attr-defined]
    inner = y * (cute.full_like(y, GELU_C0) + y * y * GELU_C1)
    t = cute.math.tanh(inner, fastmath=True)  # type: ignore[attr-defined]  # tanh.approx.f32
    return y * 0.5 * (cute.full_like(y, 1.0) + t)


@cute.jit
def bias_act_tile(s_tile: cute.Tensor, g_tile: cute.Tensor, b: Any, act: str) -> None:
    """SMEM tile -> registers -> ``act(x + bias)`` in fp32 -> 16-byte global stores."""
    tiled = store_copy()
    thr = tiled.get_slice(store_tid())
    t_s = thr.partition_S(s_tile)
    t_g = thr.partition_D(g_tile)
    frag = cute.make_fragment_like(t_s)
    cute.copy(tiled, t_s, frag)
    for i in cutlass.range_constexpr(cute.size(frag, mode=[1])):  # type: ignore[attr-defined]
        row = frag[(None, i, 0)]
        y = activation(row.load().to(cutlass.Float32) + b, act)
        row.store(y.to(cutlass.Float16))
    cute.copy(tiled, frag, t_g)


def _tiles(dst: cute.Tensor) -> tuple[int, int]:
    return cute.size(dst, mode=[0]) // TILE_M, cute.size(dst, mode=[1]) // TILE_N


def _tma_load_atom(src: cute.Tensor) -> tuple[Any, Any]:
    return cpasync.make_tiled_tma_atom(  # type: ignore[no-any-return]
        cpasync.CopyBulkTensorTileG2SOp(), src, smem_tile_layout(), (TILE_M, TILE_N)
    )


# ---------------------------------------------------------------------------------------------
# TS kernel
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(kw_only=True)
class Bias(MemoryResource):
    """The bias vector in global memory (read-only, no pipeline)."""

    rows: Any = None  # (TILE_M, N) view, row stride 0
    tiles_n: Any = 1
    values: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.values = TaskLocalVariable(dtype="Float32x8", default=None)

    @consumer_work(returns=values)
    @cute.jit
    def load(self, stage_info: Any) -> Any:
        """The thread's 8 bias values for tile ``loop_offset``, in fp32."""
        _, n = tile_coord(stage_info.loop_offset, self.tiles_n)
        return load_bias(self.rows, n)


@dataclasses.dataclass(kw_only=True)
class GlobalOut(MemoryResource):
    """The destination tensor, written tile by tile by the store threads."""

    tensor: Any = None
    tiles_n: Any = 1
    act: str = DEFAULT_ACT

    @producer_work
    @cute.jit
    def store(self, stage_info: Any, *, view: Any, bias: Any) -> None:
        m, n = tile_coord(stage_info.loop_offset, self.tiles_n)
        g = cute.local_tile(self.tensor, (TILE_M, TILE_N), (m, n))
        bias_act_tile(view, g, bias, self.act)


def ts_kernel(act: str = DEFAULT_ACT) -> Kernel:
    """The TS kernel for one activation: a load warp filling the ring, a store task draining it."""

    def tasks(k: KernelContext, tma_atom: Any, g_src: Any, bias: Any, dst: Any) -> Tasks:
        tiles_m, tiles_n = k.value(("tiles_m", "tiles_n"), lambda: _tiles(dst))
        smem = TmaRing(
            name="smem",
            pipeline_config=TmaRing.pipeline(STAGES, TILE_BYTES, STORE_THREADS),
            atom=tma_atom,
            gmem=g_src,
            box=(TILE_M, TILE_N),
            smem=k.smem_tensor(cutlass.Float16, ring_layout),
            coord=lambda t: tile_coord(t, tiles_n),
        )
        rows = k.value("bias_rows", lambda: bias_rows(bias, TILE_M))
        b = Bias(name="bias", rows=rows, tiles_n=tiles_n)
        out = GlobalOut(name="dst", tensor=dst, tiles_n=tiles_n, act=act)
        tiles = (k.block_idx[0], tiles_m * tiles_n, k.grid_dim[0])  # this CTA's tiles

        @schedule
        def load(smem: ResourceProxy) -> None:
            with domain_loop(*tiles):
                smem.acquire()
                smem.load()
                smem.commit()

        @schedule
        def store(smem: ResourceProxy, bias: ResourceProxy, dst: ResourceProxy) -> None:
            with domain_loop(*tiles):  # per tile: bias + activation on the way out
                smem.wait()
                values = bias.load()
                dst.store(view=smem.tile(), bias=values)
                smem.release()

        return Tasks(
            [
                Task([], [smem], LOAD_WARP, 1, schedule=load(smem), num_registers=LOAD_REGS),
                Task(
                    [smem, b],
                    [out],
                    STORE_WARP,
                    STORE_WARPS,
                    schedule=store(smem, b, out),
                    num_registers=STORE_REGS,
                ),
            ],
            {out: [smem, b]},
        )

    kernel = Kernel(tasks, name="bias_act_copy", block_warps=BLOCK_THREADS // 32)

    @kernel.launcher
    @cute.jit
    def launch(src: cute.Tensor, bias: cute.Tensor, dst: cute.Tensor) -> None:
        tma_atom, g_src = _tma_load_atom(src)
        kernel.launch(tma_atom, g_src, bias, dst, grid=(CTAS, 1, 1))

    return kernel


# ---------------------------------------------------------------------------------------------
# Hand-written twin: the same schedule in plain CuTe DSL
# ---------------------------------------------------------------------------------------------


class TwinBiasAct:
    """The hand-written twin for one activation."""

    def __init__(self, act: str = DEFAULT_ACT) -> None:
        self.act = act

    @cute.kernel
    def kernel(
        self, tma_atom: cute.CopyAtom, g_src: cute.Tensor, bias: cute.Tensor, dst: cute.Tensor
    ) -> None:
        bidx, _, _ = cute.arch.block_idx()
        gdim, _, _ = cute.arch.grid_dim()
        tiles_m, tiles_n = _tiles(dst)
        num_tiles = tiles_m * tiles_n
        alloc = SmemAllocator()
        s_tiles = alloc.allocate_tensor(cutlass.Float16, ring_layout(), 1024)
        g_tiles = cute.zipped_divide(g_src, (TILE_M, TILE_N))
        b_rows = bias_rows(bias, TILE_M)
        bars = alloc.allocate_array(cutlass.Int64, num_elems=2 * STAGES, byte_alignment=8)
        pipe = cpipe.PipelineTmaAsync.create(
            num_stages=STAGES,
            producer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, 1),
            consumer_group=cpipe.CooperativeGroup(cpipe.Agent.Thread, STORE_THREADS),
            tx_count=TILE_BYTES,
            barrier_storage=bars,
            enable_multicast_signaling=True,  # one empty-barrier arrival per consumer warp
            defer_sync=True,
        )
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp < 4:
            cute.arch.setmaxregister_decrease(LOAD_REGS)
        if warp < 1:
            state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Producer, STAGES)
            for t in cutlass.range(bidx, num_tiles, gdim):  # type: ignore[attr-defined]
                pipe.producer_acquire(state)
                m, n = tile_coord(t, tiles_n)
                t_s, t_g = cpasync.tma_partition(
                    tma_atom, 0, cute.make_layout(1), cute.group_modes(s_tiles, 0, 2), g_tiles
                )
                cute.copy(
                    tma_atom,
                    t_g[(None, (m, n))],
                    t_s[(None, state.index)],
                    tma_bar_ptr=pipe.producer_get_barrier(state),
                )
                pipe.producer_commit(state)
                state.advance()
        if (warp >= STORE_WARP) & (warp < STORE_WARP + STORE_WARPS):
            cute.arch.setmaxregister_increase(STORE_REGS)
            state = cpipe.make_pipeline_state(cpipe.PipelineUserType.Consumer, STAGES)
            for t in cutlass.range(bidx, num_tiles, gdim):  # type: ignore[attr-defined]
                pipe.consumer_wait(state)
                m, n = tile_coord(t, tiles_n)
                b = load_bias(b_rows, n)
                g = cute.local_tile(dst, (TILE_M, TILE_N), (m, n))
                bias_act_tile(s_tiles[(None, None, state.index)], g, b, self.act)
                pipe.consumer_release(state)
                state.advance()

    @cute.jit
    def __call__(self, src: cute.Tensor, bias: cute.Tensor, dst: cute.Tensor) -> None:
        tma_atom, g_src = _tma_load_atom(src)
        self.kernel(tma_atom, g_src, bias, dst).launch(
            grid=(CTAS, 1, 1), block=(BLOCK_THREADS, 1, 1)
        )


# ---------------------------------------------------------------------------------------------
# Host side: the harness of task_scheduling.harness
# ---------------------------------------------------------------------------------------------

KERNELS: dict[str, Kernel] = {act: ts_kernel(act) for act in ACTS}
PLAN: KernelPlan = KERNELS[DEFAULT_ACT].plan().plan
ts_copy = KERNELS[DEFAULT_ACT].jit_launcher
twin_copy = TwinBiasAct()


def make_plan() -> KernelPlan:
    """The fused bias + activation copy as a kernel plan (traced on the host, no GPU)."""
    return ts_kernel().plan().plan


def fake_args(shape: tuple[int, int] = DEFAULT_SHAPE) -> tuple[Any, Any, Any]:
    """Fake ``(src, bias, dst)`` for compiling ``ts_copy`` / ``twin_copy`` on the CPU."""
    matrix = (cutlass.Float16, shape)
    return (
        fake_tensor(*matrix, row_major=True, align=16),
        fake_tensor(cutlass.Float16, shape[1], align=16),
        fake_tensor(*matrix, row_major=True, align=16),
    )


def _kernels(act: str) -> dict[str, Any]:
    return {"ts": KERNELS[act], "twin": twin_copy if act == DEFAULT_ACT else TwinBiasAct(act)}


def compile_only(
    shape: tuple[int, int] = DEFAULT_SHAPE, act: str = DEFAULT_ACT, ops: bool = True
) -> dict[str, Any]:
    """Verify the plan, compile both kernels for sm_90a with fake tensors, count PTX."""
    args = fake_args(shape)
    return compare(
        "bias_act_copy", _kernels(act), args, plan=KERNELS[act], ops=ops, act=act, shape=[*shape]
    )


def reference(x: Any, bias: Any, act: str) -> Any:
    """``act(x + bias)`` in fp32 by torch, rounded to fp16."""
    import torch

    y = x.float() + bias.float()
    y = torch.relu(y) if act == "relu" else torch.nn.functional.gelu(y, approximate="tanh")
    return y.half()


def run_on_gpu(shape: tuple[int, int], iters: int, act: str = DEFAULT_ACT) -> dict[str, Any]:
    """Run both kernels on the GPU, check against torch, time them."""
    import torch

    src = torch.randn(*shape, device="cuda", dtype=torch.float16)
    bias = torch.randn(shape[1], device="cuda", dtype=torch.float16)
    ref = reference(src, bias, act)

    def case(name: str) -> Case:
        dst = torch.zeros_like(src)

        def check() -> dict[str, Any]:
            if act == "relu":
                ok = bool(torch.equal(dst, ref))
            else:  # tanh.approx.f32: about 2^-11 relative error, then fp16 rounding
                ok = bool(torch.allclose(dst.float(), ref.float(), atol=1e-2, rtol=1e-2))
            return {"ok": ok, "max_abs_err": float((dst.float() - ref.float()).abs().max())}

        return Case((to_cute(src), to_cute(bias), to_cute(dst)), check)

    out = run_kernels(_kernels(act), case, iters=iters, bytes_moved=4 * src.numel())
    return {"example": "bias_act_copy", "act": act, "shape": [*shape], **out}


def main(argv: list[str] | None = None) -> int:
    shape = {"m": DEFAULT_SHAPE[0], "n": DEFAULT_SHAPE[1]}
    cli = ExampleCLI(__doc__, __file__, shape=shape, multiple_of=(TILE_M, TILE_N))
    cli.parser.add_argument("--act", choices=ACTS, default=DEFAULT_ACT, help="activation")
    args = cli.parse(argv)
    return cli.run(
        lambda: compile_only(args.shape, args.act, ops=False),
        lambda: run_on_gpu(args.shape, args.iters, args.act),
    )


if __name__ == "__main__":
    sys.exit(main())
