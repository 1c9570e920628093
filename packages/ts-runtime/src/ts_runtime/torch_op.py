"""A compiled TS kernel as a PyTorch custom operator.

:func:`torch_op` registers a ``@cute.jit`` launcher as a ``torch.library`` operator that takes
and returns torch tensors. It has a fake (meta) implementation, so ``torch.compile`` traces it
with ``fullgraph=True``, and it launches on the current stream, so it can be captured in a CUDA
graph (after one warm-up call has loaded the kernel)::

    copy = torch_op("examples::tma_copy", launch, outputs=lambda src: torch.empty_like(src))
    dst = copy(src)                                  # eager
    dst = torch.compile(lambda x: copy(x) * 2, fullgraph=True)(src)

The launcher takes the inputs, then the outputs, then the stream (a ``cuda.CUstream``; make it
an optional parameter and pass it on with ``kernel.launch(..., stream=stream)``). One
compiled kernel is kept per signature of the tensors: dtype, shape and strides
(static shapes: a new shape compiles once more). The kernel receives each tensor as a raw
pointer viewed with the tensor's layout, so a call costs little more than the launch. An
operator whose outputs are empty returns them without a launch; one with an empty input but
outputs to write (a GEMM with K = 0) calls ``if_empty`` instead of the kernel, or is refused.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from ts_runtime.errors import RuntimeConfigError

__all__ = ["TorchOp", "torch_op"]


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


class TorchOp:
    """The registered operator (call it like a function of the input tensors).

    Attributes:
        qualname: ``namespace::name`` of the operator.
        op: The ``torch.ops`` overload packet.
        compiles: How many kernels were compiled (one per tensor signature).
    """

    def __init__(
        self,
        qualname: str,
        launcher: Any,
        *,
        num_inputs: int,
        num_outputs: int,
        outputs: Callable[..., Any],
        align: int,
        if_empty: Callable[..., None] | None = None,
    ) -> None:
        import torch

        if "::" not in qualname:
            raise RuntimeConfigError(
                f"torch_op: {qualname!r} is not a qualified operator name",
                fix="name it 'namespace::name', e.g. 'my_kernels::tma_copy'",
            )
        self.qualname = qualname
        self._launcher = launcher
        self._outputs = outputs
        self._align = align
        self._if_empty = if_empty
        self._compiled: dict[Hashable, _Entry] = {}
        self._streams: dict[int, Any] = {}
        self._lock = threading.Lock()
        self.compiles = 0
        params = ", ".join(f"Tensor x{i}" for i in range(num_inputs))
        returns = "Tensor" if num_outputs == 1 else "(" + ", ".join(["Tensor"] * num_outputs) + ")"
        ns, name = qualname.split("::", 1)
        self._lib = torch.library.Library(ns, "FRAGMENT")  # kept alive with the op
        self._lib.define(f"{name}({params}) -> {returns}")
        self._lib.impl(name, self._run, "CUDA")
        torch.library.register_fake(qualname, self._fake, lib=self._lib)
        self.op = getattr(getattr(torch.ops, ns), name)

    def __call__(self, *tensors: Any) -> Any:
        """Run the operator (through the dispatcher, as ``torch.compile`` sees it)."""
        return self.op(*tensors)

    def _fake(self, *tensors: Any) -> Any:
        return self._outputs(*tensors)

    def _key(self, tensors: Sequence[Any]) -> Hashable:
        return tuple((t.dtype, t.shape, t.stride()) for t in tensors)

    def _compile(self, tensors: Sequence[Any], stream: Any) -> _Entry:
        """Compile an entry that takes one raw pointer per tensor; the key fixes the layouts.

        A DLPack tensor costs ~6 us to make and a tuple argument ~6 us to pass; a pointer
        passed on its own costs ~1 us, so a call costs little more than the launch.
        """
        from ts_runtime._dsl import gmem_pointer_maker
        from ts_runtime.compile import compile_kernel

        make_ptr, gmem = gmem_pointer_maker()
        dtypes = tuple(_dsl_dtype(t.dtype) for t in tensors)
        layouts = [(tuple(t.shape), tuple(t.stride())) for t in tensors]
        jit = _pointer_entry(self._launcher, layouts)
        ptrs = [
            make_ptr(d, t.data_ptr(), gmem, self._align)
            for d, t in zip(dtypes, tensors, strict=True)
        ]
        self.compiles += 1
        # Through the one compile path; the operator keeps the entry per tensor signature so
        # that a call looks it up without building the cache key.
        compiled = compile_kernel(jit, *ptrs, stream).compiled
        return _Entry(compiled, dtypes, make_ptr, gmem)

    def _stream(self, device: Any) -> Any:
        import torch

        # torch.cuda.current_stream() costs ~4 us a call; the raw handle a fraction of that.
        raw = torch._C._cuda_getCurrentRawStream(device.index)
        stream = self._streams.get(raw)
        if stream is None:
            from ts_runtime._dsl import cu_stream

            stream = self._streams[raw] = cu_stream(raw)
        return stream

    def _run(self, *inputs: Any) -> Any:
        outs = self._outputs(*inputs)
        out_tuple = _as_tuple(outs)
        tensors = (*inputs, *out_tuple)
        align = self._align
        for i, t in enumerate(tensors):
            if t.data_ptr() % align:
                raise RuntimeConfigError(
                    f"{self.qualname}: tensor {i} ({tuple(t.shape)}, {t.dtype}) is not "
                    f"{align}-byte aligned, as the kernel assumes",
                    fix="pass a contiguous tensor (e.g. x.contiguous()) or register the op "
                    "with a smaller align=",
                )
        if any(t.numel() == 0 for t in out_tuple):
            return outs  # nothing to write: no launch (a grid of zero CTAs is an error)
        empty = next((i for i, t in enumerate(inputs) if t.numel() == 0), None)
        if empty is not None:
            # A layout of extent 0 cannot be compiled, and what the kernel would write (zeros
            # for a GEMM with K = 0, ...) is the operator's to say.
            if self._if_empty is None:
                raise RuntimeConfigError(
                    f"{self.qualname}: input {empty} has the shape "
                    f"{tuple(inputs[empty].shape)}, with a zero extent, but the outputs are "
                    "not empty; the kernel cannot take a zero extent",
                    fix="pass if_empty= to torch_op: a function of (*inputs, *outputs) that "
                    "fills the outputs with torch ops (a GEMM with K = 0: c.zero_())",
                )
            self._if_empty(*inputs, *out_tuple)
            return outs
        stream = self._stream(tensors[0].device)
        key = self._key(tensors)
        entry = self._compiled.get(key)
        if entry is None:
            with self._lock:
                entry = self._compiled.get(key)
                if entry is None:
                    entry = self._compiled[key] = self._compile(tensors, stream)
        mk, gmem = entry.make_ptr, entry.gmem
        entry.compiled(
            *[mk(d, t.data_ptr(), gmem, align) for d, t in zip(entry.dtypes, tensors, strict=True)],
            stream,
        )
        return outs


@dataclasses.dataclass(frozen=True)
class _Entry:
    """A compiled kernel for one tensor signature, with what a call needs at hand."""

    compiled: Any
    dtypes: tuple[Any, ...]
    make_ptr: Any
    gmem: Any


def _pointer_entry(launcher: Any, layouts: Sequence[tuple[Any, Any]]) -> Any:
    """A ``@cute.jit`` ``(p0, ..., pN-1, stream)`` viewing each pointer with its layout."""
    from ts_runtime._dsl import MAX_POINTERS, pointer_entry

    entry = pointer_entry(launcher, layouts)
    if entry is None:
        raise RuntimeConfigError(
            f"torch_op: {len(layouts)} tensors; an operator takes at most {MAX_POINTERS} "
            "(inputs and outputs)",
            fix="pack tensors together, or ask for more",
        )
    return entry


def _dsl_dtype(torch_dtype: Any) -> Any:
    """The CuTe DSL element type of a torch dtype."""
    import torch

    from ts_runtime._dsl import dtype

    names = {
        torch.float16: "Float16",
        torch.bfloat16: "BFloat16",
        torch.float32: "Float32",
        torch.float64: "Float64",
        torch.int8: "Int8",
        torch.uint8: "Uint8",
        torch.int16: "Int16",
        torch.int32: "Int32",
        torch.int64: "Int64",
        torch.float8_e4m3fn: "Float8E4M3FN",
        torch.float8_e5m2: "Float8E5M2",
    }
    name = names.get(torch_dtype)
    if name is None:
        raise RuntimeConfigError(
            f"torch_op: no CuTe DSL element type for {torch_dtype}",
            fix=f"use one of {', '.join(str(d) for d in names)}",
        )
    return dtype(name)


def torch_op(
    qualname: str,
    launcher: Any,
    *,
    outputs: Callable[..., Any],
    num_inputs: int = 1,
    num_outputs: int = 1,
    align: int = 16,
    if_empty: Callable[..., None] | None = None,
) -> TorchOp:
    """Register ``launcher`` as the PyTorch operator ``qualname``.

    Args:
        qualname: ``"namespace::name"``.
        launcher: A ``@cute.jit`` function ``(*inputs, *outputs, stream)``, or a
            :class:`~ts_runtime.Kernel` (its registered launcher).
        outputs: ``outputs(*inputs)`` allocates the output tensor(s); it also serves as the
            fake implementation, so it must only use shapes, dtypes and devices.
        num_inputs: How many tensors the operator takes.
        num_outputs: How many tensors ``outputs`` returns.
        align: Byte alignment the kernel assumes of every tensor (checked at each call).
        if_empty: ``if_empty(*inputs, *outputs)`` fills the outputs, instead of a launch,
            when an input is empty and no output is (without it such a call is a
            :class:`~ts_runtime.RuntimeConfigError`).
    """
    jit = getattr(launcher, "jit_launcher", launcher)
    if jit is None:
        raise RuntimeConfigError(
            f"torch_op({qualname!r}): the kernel has no launcher",
            fix="decorate its @cute.jit host function with @kernel.launcher",
        )
    return TorchOp(
        qualname,
        jit,
        num_inputs=num_inputs,
        num_outputs=num_outputs,
        outputs=outputs,
        align=align,
        if_empty=if_empty,
    )
