"""ts-codegen's adapter to the CuTe DSL: the one package of ts-codegen that imports cutlass.

This module holds the builders the lowering calls (pipelines, loops, branches, warp dispatch,
``setmaxnreg``); its submodules hold the rest of the DSL side: :mod:`ts_codegen.dsl.tiles`
(persistent loops and tile schedulers), ``launch`` (the generated kernel and its launch, SMEM
tensors), ``tma`` and ``wgmma`` (the work of the reusable blocks). import-linter holds every
other module of ts-codegen (and of the layers above) to it (the ``dsl-adapters`` contract).

Everything here runs at *kernel trace time*, inside a ``@cute.kernel`` (or a ``@cute.jit``
function it calls), and emits MLIR through the DSL's public builders. Control flow is built with
``for_generate`` / ``scf.if`` and explicit carried values, not through the AST preprocessor of
``@cute.jit``, so plain Python (the lowering) can thread pipeline states and task-local values
through runtime-bounded loops and branches.

The DSL is only partly typed, so values crossing this boundary are ``Any``.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable, Sequence
from typing import Any

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as cpipe
from cutlass import cutlass_dsl as _cutlass_dsl
from cutlass._mlir import ir as _ir
from cutlass._mlir.dialects import scf as _scf

from ts_trace import MemoryResource, TaskLocalVariable
from ts_trace.resources import register_value_tree

# The DSL is partly typed: its builders are used through Any-typed handles.
_D: Any = _cutlass_dsl
ir: Any = _ir
scf: Any = _scf
Boolean: Any = _D.Boolean
LoopUnroll: Any = _D.LoopUnroll
extract_mlir_values: Any = _D.extract_mlir_values
for_generate: Any = _D.for_generate
new_from_mlir_values: Any = _D.new_from_mlir_values
yield_out: Any = _D.yield_out

__all__ = [
    "as_dsl_value",
    "barrier_storage",
    "block_threads_default",
    "compile_ptx",
    "consumer_release",
    "consumer_try_wait",
    "consumer_wait",
    "dsl_type",
    "for_range",
    "if_then",
    "in_range",
    "keep_ptx_options",
    "logical_not",
    "make_pipeline",
    "make_state",
    "new_smem_allocator",
    "pipelines_ready",
    "producer_acquire",
    "producer_barrier",
    "producer_commit",
    "producer_tail",
    "producer_try_acquire",
    "ptx_text",
    "set_max_registers",
    "state_advance",
    "state_index",
    "state_phase",
    "warp_index",
]

Int32: Any = cutlass.Int32
"""The CuTe DSL 32-bit integer type (re-exported for the lowering)."""
"""The DSL's 32-bit signed integer type."""


def dsl_type(name_or_type: Any) -> Any:
    """A DSL numeric type from its name (``"Float16"``) or the type itself."""
    if isinstance(name_or_type, str):
        t = getattr(cutlass, name_or_type, None)
        if t is None:
            raise TypeError(f"unknown CuTe DSL type name {name_or_type!r}")
        return t
    return name_or_type


def as_dsl_value(dtype: Any, value: Any) -> Any:
    """``value`` as a DSL value of type ``dtype`` (DSL values are converted, not rebuilt)."""
    return dsl_type(dtype)(value)


# ---------------------------------------------------------------------------------------------
# control flow
# ---------------------------------------------------------------------------------------------


def for_range(
    start: Any,
    stop: Any,
    step: Any,
    carried: Sequence[Any],
    body: Callable[[Any, list[Any]], Sequence[Any]],
    *,
    unroll: int | None = None,
) -> list[Any]:
    """Emit ``scf.for`` over ``range(start, stop, step)`` carrying ``carried`` values.

    ``body(iv, carried)`` is called once, at trace time, inside the loop region with the
    induction variable and the loop-carried values; it returns the values for the next
    iteration (same structure). Returns the values after the loop.

    Python ints are emitted as constants (a constant-bound dynamic loop). ``unroll`` is the
    ``#llvm.loop_annotation`` unroll count, as ``cutlass.range(..., unroll=n)`` sets it.
    """
    attr = None if unroll is None else LoopUnroll(count=unroll)
    args = list(carried)
    results: list[Any] = list(args)
    if not args:
        for iv in for_generate(start, stop, step, unroll=attr):
            body(iv, [])
            yield_out([])
        return []
    # for_generate's iter_args must be DSL numerics or ir.Values (a PipelineState or a nested
    # list is rejected): flatten to ir.Values and rebuild the objects on both sides. It hands
    # a single carried value back unwrapped.
    flat, sizes = _flatten(args)
    single = len(flat) == 1
    for iv, inner, outer in for_generate(start, stop, step, iter_args=flat, unroll=attr):
        inner_vals = [inner] if single else list(inner)
        new = body(iv, _unflatten(args, sizes, inner_vals))
        yield_out(_flatten(list(new))[0])
        outer_vals = [outer] if single else list(outer)
        results = _unflatten(args, sizes, outer_vals)
    return results


def _flatten(values: Sequence[Any]) -> tuple[list[Any], list[int]]:
    """Every value's ``ir.Value`` s, and how many each contributed."""
    flat: list[Any] = []
    sizes: list[int] = []
    for v in values:
        part = list(extract_mlir_values(v))
        flat.extend(part)
        sizes.append(len(part))
    return flat, sizes


def _unflatten(like: Sequence[Any], sizes: Sequence[int], flat: Sequence[Any]) -> list[Any]:
    """Rebuild objects shaped like ``like`` from ``ir.Value`` s.

    Calls each object's ``__new_from_mlir_values__`` directly: the generic
    ``new_from_mlir_values`` calls ``PipelineState.__get_mlir_types__``, which fails in 4.8.1
    (``Int32`` has no ``.type``).
    """
    out: list[Any] = []
    pos = 0
    for obj, n in zip(like, sizes, strict=True):
        part = list(flat[pos : pos + n])
        pos += n
        if hasattr(obj, "__new_from_mlir_values__"):
            out.append(obj.__new_from_mlir_values__(part))
        else:
            out.append(new_from_mlir_values(obj, part))
    return out


def if_then(
    cond: Any,
    carried: Sequence[Any],
    then_body: Callable[[list[Any]], Sequence[Any]],
) -> list[Any]:
    """Emit ``scf.if cond`` whose then-region may update ``carried``; else passes them through.

    ``cond`` may be a Python bool (then the region is inlined or dropped at trace time).
    """
    if isinstance(cond, bool):
        return list(then_body(list(carried))) if cond else list(carried)
    args = list(carried)
    ir_vals, sizes = _flatten(args)
    if_op = scf.IfOp(Boolean(cond).ir_value(), [v.type for v in ir_vals], has_else=bool(ir_vals))
    with ir.InsertionPoint(if_op.then_block):
        new = list(then_body(args))
        yield_out(_flatten(new)[0])
    if not ir_vals:
        return []
    with ir.InsertionPoint(if_op.else_block):
        yield_out(ir_vals)
    return _unflatten(args, sizes, list(if_op.results))


def logical_not(value: Any) -> Any:
    """``not value`` as a DSL boolean."""
    return _D.not_(Boolean(value))


def in_range(value: Any, start: int, stop: int) -> Any:
    """``start <= value < stop`` as a DSL boolean (one comparison when ``start`` is 0)."""
    if start == 0:
        return value < stop
    return (value >= start) & (value < stop)


# ---------------------------------------------------------------------------------------------
# threads, registers, shared memory
# ---------------------------------------------------------------------------------------------


def cta_rank_in_cluster() -> Any:
    """This CTA's rank in its cluster (0 without clusters), warp-uniform."""
    return cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())


def warp_index() -> Any:
    """The warp index within the CTA, made warp-uniform."""
    return cute.arch.make_warp_uniform(cute.arch.warp_idx())


def set_max_registers(count: int, *, increase: bool) -> None:
    """``setmaxnreg.inc`` / ``setmaxnreg.dec`` for the calling warpgroup."""
    if increase:
        cute.arch.setmaxregister_increase(count)
    else:
        cute.arch.setmaxregister_decrease(count)


def block_threads_default(num_threads: int) -> int:
    """Registers per thread a CTA of ``num_threads`` threads starts with (multiple of 8)."""
    return min(256, (65536 // max(num_threads, 1)) // 8 * 8)


def new_smem_allocator() -> Any:
    """A fresh ``cutlass.utils.SmemAllocator`` (starts at the kernel's dynamic SMEM base)."""
    from cutlass.memory import SmemAllocator

    return SmemAllocator()


def barrier_storage(allocator: Any, stages: int) -> Any:
    """SMEM for a pipeline's ``2 * stages`` mbarriers (full then empty), 8-byte aligned."""
    if allocator is None:
        from cutlass.memory import SmemAllocator

        allocator = SmemAllocator()
    return allocator.allocate_array(cutlass.Int64, num_elems=2 * stages, byte_alignment=8)


# ---------------------------------------------------------------------------------------------
# pipelines
# ---------------------------------------------------------------------------------------------


def _group(agent: str, size: int) -> Any:
    kind = cpipe.Agent.Warp if agent == "warp" else cpipe.Agent.Thread
    return cpipe.CooperativeGroup(kind, size)


def make_pipeline(
    kind: str,
    *,
    stages: int,
    producer: tuple[str, int],
    consumer: tuple[str, int],
    tx_bytes: int,
    storage: Any,
    cluster_mn: tuple[int, int] = (1, 1),
) -> Any:
    """Create a ``cutlass.pipeline`` object, sync deferred.

    ``AsyncAsync``, ``TmaAsync`` and ``TmaWgmma`` here; the Blackwell kinds in
    :mod:`ts_codegen.dsl.blackwell`.

    The caller makes the initialisation visible once, after creating every pipeline
    (:func:`pipelines_ready`). A TMA ring over a cluster (``cluster_mn`` other than 1 x 1)
    gets the cluster layout, so its consumers release the stage in every CTA that multicast
    into it.
    """
    from ts_codegen.dsl import blackwell

    if kind in blackwell.BLACKWELL_PIPELINES:
        return blackwell.make_blackwell_pipeline(
            kind,
            stages=stages,
            producer=producer,
            consumer=consumer,
            tx_bytes=tx_bytes,
            storage=storage,
            cluster_mn=cluster_mn,
        )
    pg, cg = _group(*producer), _group(*consumer)
    if kind == "AsyncAsync":
        return cpipe.PipelineAsync.create(
            num_stages=stages,
            producer_group=pg,
            consumer_group=cg,
            barrier_storage=storage,
            defer_sync=True,
        )
    if kind in ("TmaAsync", "TmaWgmma"):
        # TmaWgmma has TmaAsync's barrier protocol; the difference (releases wait for
        # wgmma.wait_group) is in the schedule, which ts-verify checks.
        return cpipe.PipelineTmaAsync.create(
            num_stages=stages,
            producer_group=pg,
            consumer_group=cg,
            tx_count=tx_bytes,
            barrier_storage=storage,
            cta_layout_vmnk=(
                None if cluster_mn == (1, 1) else cute.make_layout((1, *cluster_mn, 1))
            ),
            # The consumer group counts the threads that release; PipelineTmaAsync arrives
            # once per warp, so the empty barrier's count must be derived from the threads.
            enable_multicast_signaling=True,
            defer_sync=True,
        )
    raise ValueError(f"pipeline type {kind} cannot be lowered yet (AsyncAsync, TmaAsync can)")


def pipelines_ready(cluster_mn: tuple[int, int] = (1, 1)) -> None:
    """Make mbarrier initialisation visible (to the whole cluster for cluster rings).

    One CTA: fence + ``bar.sync``. Rings over a cluster: a cluster barrier, so that no peer
    multicasts into this CTA before its barriers exist.
    """
    if cluster_mn == (1, 1):
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        return
    cpipe.pipeline_init_arrive(cluster_shape_mn=cluster_mn, is_relaxed=True)
    cpipe.pipeline_init_wait(cluster_shape_mn=cluster_mn)


def producer_tail(pipe: Any, state: Any) -> None:
    """Before a cluster ring's TMA producer exits: wait until its stages were released.

    Peers may still arrive on this CTA's barriers until then.
    """
    pipe.producer_tail(state)


def make_state(producer: bool, stages: int, start: int = 0) -> Any:
    """A fresh ``PipelineState`` at stage ``start`` (producers start on phase 1: empty ring)."""
    if start:
        return cpipe.PipelineState(
            stages, cutlass.Int32(0), cutlass.Int32(start), cutlass.Int32(1 if producer else 0)
        )
    user = cpipe.PipelineUserType.Producer if producer else cpipe.PipelineUserType.Consumer
    return cpipe.make_pipeline_state(user, stages)


def state_advance(state: Any, by: int = 1) -> Any:
    """The state ``by`` stages further (a new object; the argument is left unchanged)."""
    new = state.clone()
    new.advance(by)
    return new


def state_index(state: Any) -> Any:
    """The state's stage index."""
    return state.index


def state_phase(state: Any) -> Any:
    """The state's phase bit."""
    return state.phase


def producer_acquire(pipe: Any, state: Any, token: Any = None, arm_if: Any = None) -> None:
    """Wait until the stage is empty (TMA: and arm its full barrier with the tx bytes).

    ``arm_if`` (TMA producers only): every thread waits, but only where ``arm_if`` holds (the
    task's first warp) is the full barrier armed, once for the whole task.
    """
    from ts_codegen.dsl.groups import SharedFull

    if arm_if is None or isinstance(pipe, SharedFull):  # the latter arms nothing
        pipe.producer_acquire(state, token)
        return
    wait_empty(pipe, state, token)

    def arm(carried: list[Any]) -> list[Any]:
        pipe.sync_object_full.arrive(state.index, pipe.producer_mask)
        return carried

    if_then(arm_if, [], arm)


def wait_empty(pipe: Any, state: Any, token: Any = None) -> None:
    """Wait on the stage's empty barrier, unless ``token`` (a try-acquire's result) says so."""
    if token is None:
        pipe.sync_object_empty.wait(state.index, state.phase)
    else:
        _D.if_generate(token == 0, lambda: pipe.sync_object_empty.wait(state.index, state.phase))


def producer_try_acquire(pipe: Any, state: Any) -> Any:
    """Probe the empty barrier; the result feeds the following :func:`producer_acquire`."""
    return pipe.producer_try_acquire(state)


def producer_commit(pipe: Any, state: Any) -> None:
    """Mark the stage full (a no-op for TMA producers: the copy completes the barrier).

    A CLC ring's commit arrives nowhere: its acquire armed the full barrier (one arrival with
    the response's bytes) and the ``try_cancel`` completes those bytes. The base class's
    commit would arrive a second time from every lane of the warp, each on the barrier of
    the cluster CTA whose rank is its lane (past the barrier's count, and on CTAs that do
    not exist in a smaller cluster); translation validation found it (TS-X102).
    """
    if isinstance(pipe, cpipe.PipelineClcFetchAsync):
        return
    pipe.producer_commit(state)


def producer_barrier(pipe: Any, state: Any) -> Any:
    """The stage's full barrier (what a TMA load signals)."""
    return pipe.producer_get_barrier(state)


def consumer_barrier(pipe: Any, state: Any) -> Any:
    """The stage's full barrier, seen from the consumer side."""
    return pipe.consumer_get_barrier(state)


def consumer_wait(pipe: Any, state: Any, token: Any = None) -> None:
    """Wait until the stage is full."""
    pipe.consumer_wait(state, token)


def consumer_try_wait(pipe: Any, state: Any) -> Any:
    """Probe the full barrier; the result feeds the following :func:`consumer_wait`."""
    return pipe.consumer_try_wait(state)


def consumer_release(pipe: Any, state: Any) -> None:
    """Mark the stage empty."""
    pipe.consumer_release(state)


# ---------------------------------------------------------------------------------------------
# compilation
# ---------------------------------------------------------------------------------------------


def compile_ptx(jit_fn: Any, *args: Any) -> tuple[Any, str]:
    """``cute.compile(jit_fn, *args)`` keeping the PTX; returns ``(compiled, ptx_text)``.

    Needs ``CUTE_DSL_KEEP=ptx`` (or the ``--keep-ptx`` option, which this passes) and an
    existing ``CUTE_DSL_DUMP_DIR``; the target comes from ``CUTE_DSL_ARCH``.
    """
    compiled = cute.compile(jit_fn, *args, options=keep_ptx_options())
    text = ptx_text(compiled)
    from ts_codegen.capture import note_compiled

    note_compiled(text)  # translation validation pairs it with the plans just lowered
    return compiled, text


_PTX_DIR: list[str] = []  # this process's own dump folder, made on first use


def keep_ptx_options() -> str:
    """``cute.compile`` options that keep the PTX, written where the user asked or nowhere.

    The DSL writes a kept PTX file into ``CUTE_DSL_DUMP_DIR``, and without one into the current
    folder: a compile-only run would litter the user's checkout. Unless the user named a folder,
    the file goes to a temporary folder of this process, removed when it exits (the text is
    read from the compiled kernel).
    """
    import os

    dump = os.environ.get("CUTE_DSL_DUMP_DIR")
    if dump:
        os.makedirs(dump, exist_ok=True)
        return "--keep-ptx"
    if not _PTX_DIR:
        import atexit
        import shutil
        import tempfile

        _PTX_DIR.append(tempfile.mkdtemp(prefix="ts_ptx_"))
        atexit.register(shutil.rmtree, _PTX_DIR[0], ignore_errors=True)
    return f"--keep-ptx --dump-dir={_PTX_DIR[0]}"


def ptx_text(compiled: Any) -> str:
    """The PTX of a compiled kernel ("" when it was compiled without keeping PTX)."""
    import os

    artifacts = getattr(compiled, "artifacts", None)
    ptx = getattr(artifacts, "PTX", None)
    if ptx is None:
        return ""
    if isinstance(ptx, (bytes, bytearray)):
        ptx = ptx.decode()
    text = str(ptx)
    if ".version" not in text and os.path.exists(text):
        with open(text) as f:
            text = f.read()
    return text if ".version" in text else ""


# ---------------------------------------------------------------------------------------------
# debug bounded waits (the primitives of ts_codegen.debug_wait)
# ---------------------------------------------------------------------------------------------
#
# Kept in their own section, after everything else, so that the rest of this module is left as
# it was. Imports are local to the functions for the same reason.

__all__ += [
    "block_index_linear",
    "device_print",
    "poll_barrier",
    "thread_index_linear",
    "trap",
    "wait_barrier",
]


def wait_barrier(pipe: Any, state: Any, *, producer: bool) -> Any:
    """The mbarrier the blocking wait of ``state`` waits on, as an SMEM pointer.

    ``producer_acquire`` waits on the stage's *empty* barrier and ``consumer_wait`` on its *full*
    barrier, both at ``state.index`` with parity ``state.phase``. The pointer comes from the
    pipeline's ``sync_object_empty`` / ``sync_object_full`` fields (dataclass fields of
    ``cutlass.pipeline.PipelineAsync``, inherited by ``PipelineTmaAsync``) and their
    ``get_barrier(index)``: the very objects and method ``PipelineAsync.producer_acquire`` and
    ``consumer_wait`` go through, so a probe on this pointer watches the barrier the blocking
    call then waits on.

    Args:
        pipe: A ``cutlass.pipeline`` pipeline object (``PipelineAsync`` or a subclass).
        state: The ``PipelineState`` of the waiting side.
        producer: ``True`` for a producer acquire (empty barrier), ``False`` for a consumer
            wait (full barrier).

    Returns:
        A ``cute.Pointer`` to the stage's mbarrier in shared memory.

    Raises:
        TypeError: ``pipe`` has no ``sync_object_empty`` / ``sync_object_full`` with
            ``get_barrier`` (a pipeline kind whose waits this cannot mirror).
    """
    field = "sync_object_empty" if producer else "sync_object_full"
    sync = getattr(pipe, field, None)
    get_barrier = getattr(sync, "get_barrier", None)
    if get_barrier is None:
        raise TypeError(
            f"{type(pipe).__name__} has no {field}.get_barrier: cannot probe its barriers"
        )
    return get_barrier(state.index)


def poll_barrier(barrier: Any, phase: Any, limit: int) -> Any:
    """Emit a loop of at most ``limit`` ``mbarrier.try_wait.parity`` on ``barrier``.

    An ``scf.while`` carrying ``(tries, done)``: it stops as soon as one try succeeds or after
    ``limit`` tries. Each ``try_wait`` may itself suspend the thread for a system-dependent
    time before it reports failure, so ``limit`` bounds the number of tries, not the time.

    Args:
        barrier: The mbarrier pointer (from :func:`wait_barrier`).
        phase: The parity to wait for (a DSL ``Int32`` or a Python int).
        limit: The most tries, ``1 <= limit < 2**31``.

    Returns:
        A DSL ``Boolean``: whether the phase completed within ``limit`` tries.
    """
    loop = _D.while_generate(
        [Int32(0), Boolean(False)],
        lambda tries, done: (~done) & (tries < limit),
    )
    with loop as (tries, _):
        yield_out([tries + 1, cute.arch.mbarrier_try_wait(barrier, phase)])
    return loop.results[1]


def block_index_linear() -> Any:
    """The CTA's linear index in the grid (``x + y * nx + z * nx * ny``), as ``Int32``."""
    bx, by, bz = cute.arch.block_idx()
    nx, ny, _ = cute.arch.grid_dim()
    return bx + (by + bz * ny) * nx


def thread_index_linear() -> Any:
    """The thread's linear index in its CTA (``x + y * nx + z * nx * ny``), as ``Int32``."""
    tx, ty, tz = cute.arch.thread_idx()
    nx, ny, _ = cute.arch.block_dim()
    return tx + (ty + tz * ny) * nx


def device_print(fmt: str, *args: Any) -> None:
    """``cute.printf(fmt, *args)``: one ``vprintf`` call, a newline appended.

    ``{}`` in ``fmt`` takes the next argument (C conversions such as ``%d`` work too); a
    literal ``%`` must be written ``%%``.
    """
    cute.printf(fmt, *args)


def trap() -> None:
    """Emit the PTX ``trap;`` instruction (inline asm with side effects).

    The ``llvm.intr.trap`` intrinsic lowers to ``trap;`` as well; inline asm is used so the
    instruction does not depend on how the backend lowers (or, being ``noreturn``, optimises
    around) the intrinsic. The kernel aborts: the launch fails with an error on the host.
    """
    from cutlass._mlir.dialects import llvm

    llvm.inline_asm(
        None,
        [],
        "trap;",
        "",
        has_side_effects=True,
        is_align_stack=False,
        asm_dialect=llvm.AsmDialect.AD_ATT,
    )


# -- resources as DSL values -----------------------------------------------------------------------

_TS_FIELDS = frozenset(f.name for f in dataclasses.fields(MemoryResource))
_CONSTEXPR: Any = getattr(cutlass, "Constexpr")  # noqa: B009  (not re-exported for typing)


@functools.cache
def _constexpr_fields(cls: type) -> frozenset[str]:
    """Fields of ``cls`` annotated ``cutlass.Constexpr`` (or ``Constexpr[T]``)."""
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # an unresolvable forward reference: read the raw annotations
        hints = {}
    out = set(_TS_FIELDS)
    for f in dataclasses.fields(cls):
        ann = hints.get(f.name, f.type)
        if isinstance(ann, str):
            if ann.split("[", 1)[0].rsplit(".", 1)[-1] == "Constexpr":
                out.add(f.name)
        elif ann is _CONSTEXPR or typing.get_origin(ann) is _CONSTEXPR:
            out.add(f.name)
    return frozenset(out)


class _ResourceValues:
    """Flattens a resource's runtime fields (see ``MemoryResource.__extract_mlir_values__``)."""

    @staticmethod
    def _parts(resource: MemoryResource) -> list[tuple[str, Any, list[Any]]]:
        static = _constexpr_fields(type(resource))
        parts = []
        for f in dataclasses.fields(resource):
            if f.name in static:
                continue
            value = getattr(resource, f.name, None)
            if value is None or isinstance(value, (str, type, TaskLocalVariable)):
                continue
            try:
                vals = list(extract_mlir_values(value))
            except Exception:  # not a DSL value (a set, an opaque object): keep it as it is
                continue
            if vals:
                parts.append((f.name, value, vals))
        return parts

    def extract(self, resource: MemoryResource) -> list[Any]:
        return [v for _, _, vals in self._parts(resource) for v in vals]

    def rebuild(self, resource: MemoryResource, values: list[Any]) -> MemoryResource:
        parts = self._parts(resource)
        sizes = [len(vals) for _, _, vals in parts]
        rebuilt = _unflatten([value for _, value, _ in parts], sizes, values)
        for (name, _, _), value in zip(parts, rebuilt, strict=True):
            object.__setattr__(resource, name, value)
        return resource


register_value_tree(_ResourceValues())
