"""Compile cache and torch helper.

:func:`compile_kernel` compiles a ``@cute.jit`` function with ``cute.compile`` once per
distinct key and returns the cached compiled kernel afterwards. The key is

* the function (module and qualified name, and the function object itself, kept alive by the
  key so that a launcher built on the fly is never mistaken for a dead one with the same id);
* the target architecture (``CUTE_DSL_ARCH``);
* every argument's signature: for tensors the element type, shape, stride, memory space and
  assumed alignment; for DSL scalars the type only (their value is a runtime argument); for
  Python values (compile-time constants) the value itself;
* the plan fingerprint when a ``KernelPlan`` or ``TaskManager`` is given (``plan=``): the
  hash of every task's schedule and of the resources, pipelines, SMEM and warp ranges;
* ``cache_key_extra``, for anything else the kernel's code depends on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
from collections.abc import Callable, Hashable
from typing import Any

from ts_ir import UNKNOWN_LOCATION, IRFormatError, KernelPlan, plan_to_dict

__all__ = [
    "CompileCache",
    "CompiledKernel",
    "arg_signature",
    "compile_kernel",
    "default_cache",
    "from_torch",
    "plan_fingerprint",
]


def plan_fingerprint(plan: Any) -> str:
    """A stable hash of a kernel plan (source locations excluded).

    Args:
        plan: A :class:`ts_ir.KernelPlan`, or anything with a ``plan`` attribute holding one
            (a ``TaskManager``).
    """
    kp = plan if isinstance(plan, KernelPlan) else getattr(plan, "plan", None)
    if not isinstance(kp, KernelPlan):
        raise TypeError(f"plan_fingerprint needs a KernelPlan or a TaskManager, got {plan!r}")
    try:
        data: Any = plan_to_dict(kp, with_locations=False)
    except IRFormatError:
        # A constant the JSON form cannot encode: hash the schedules' own fingerprints and the
        # plan's declarations instead.
        data = (
            [
                (
                    t.name,
                    t.warp_start,
                    t.num_warps,
                    t.num_registers,
                    t.cta_rank,
                    t.schedule.fingerprint(),
                )
                for t in kp.tasks
            ],
            [dataclasses.replace(r, location=UNKNOWN_LOCATION) for r in kp.resources],
            kp.dependencies,
            kp.smem_alias_groups,
            kp.smem_capacity,
            kp.block_warps,
            kp.smem_extra,
        )
    return hashlib.sha256(repr(data).encode()).hexdigest()[:16]


def _stable(value: Any) -> Hashable:
    if isinstance(value, (tuple, list)):
        return tuple(_stable(v) for v in value)
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value  # type: ignore[no-any-return]


def arg_signature(arg: Any) -> Hashable:
    """What about one argument decides the compiled code (see the module docstring)."""
    if isinstance(arg, (bool, int, float, str, type(None))):
        return ("const", type(arg).__name__, arg)
    if hasattr(arg, "element_type") and hasattr(arg, "shape"):
        return (
            "tensor",
            str(arg.element_type),
            _stable(repr(getattr(arg, "shape", None))),
            _stable(repr(getattr(arg, "stride", None))),
            str(getattr(arg, "memspace", "")),
            repr(getattr(arg, "_assumed_align", getattr(arg, "assumed_align", None))),
        )
    mod = type(arg).__module__
    if mod.startswith("cutlass") and (hasattr(arg, "ir_value") or hasattr(arg, "width")):
        return ("scalar", type(arg).__qualname__)
    if isinstance(arg, (tuple, list)):
        return ("seq", tuple(arg_signature(a) for a in arg))
    return ("object", type(arg).__qualname__, _stable(arg))


class _Same:
    """A function in a cache key by identity, kept alive by the key.

    ``id()`` alone is not enough: once a launcher built on the fly (a closure per option) is
    garbage collected, the next one may get the same id and hit the dead one's entry.
    """

    __slots__ = ("fn",)

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def __hash__(self) -> int:
        return id(self.fn)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.fn is self.fn


@dataclasses.dataclass
class CompiledKernel:
    """A cache entry: the compiled kernel and what it was compiled for.

    Attributes:
        compiled: What ``cute.compile`` returned (call it with the runtime arguments).
        key: The cache key.
        plan_fingerprint: The plan fingerprint in the key ("" when no plan was given).
    """

    compiled: Any
    key: Hashable
    plan_fingerprint: str = ""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the compiled kernel."""
        return self.compiled(*args, **kwargs)

    def as_text(self, stage: str = "ptx") -> str:
        """The kernel at a stage: ``"mlir"`` (the lowered CuTe DSL module) or ``"ptx"``.

        The PTX is there when the DSL was asked to keep it (``CUTE_DSL_KEEP=ptx``).

        Raises:
            ValueError: Unknown stage, or the stage's text was not kept.
        """
        if stage == "mlir":
            module = getattr(self.compiled, "ir_module", None)
            if module is None:
                raise ValueError("the compiled kernel kept no MLIR module")
            return str(module)
        if stage == "ptx":
            from ts_codegen.dsl import ptx_text

            text = ptx_text(self.compiled)
            if not text:
                raise ValueError("no PTX kept: compile with CUTE_DSL_KEEP=ptx")
            return text
        raise ValueError(f"unknown stage {stage!r}; use 'mlir' or 'ptx'")


class CompileCache:
    """Compiled kernels by key; counts hits and misses.

    Args:
        compiler: The compile function, ``compiler(jit_fn, *args, options=...)``
            (default: ``cutlass.cute.compile``).
    """

    def __init__(self, compiler: Callable[..., Any] | None = None) -> None:
        self._compiler = compiler
        self._entries: dict[Hashable, CompiledKernel] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every entry and reset the counters."""
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def key(
        self,
        jit_fn: Any,
        args: tuple[Any, ...],
        *,
        plan: Any = None,
        cache_key_extra: Hashable = (),
        options: str | None = None,
    ) -> tuple[Hashable, str]:
        """The cache key for compiling ``jit_fn(*args)``, and the plan fingerprint in it."""
        fp = "" if plan is None else plan_fingerprint(plan)
        fn = getattr(jit_fn, "__wrapped__", jit_fn)
        name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
        key = (
            name,
            _Same(jit_fn),
            os.environ.get("CUTE_DSL_ARCH", ""),
            tuple(arg_signature(a) for a in args),
            fp,
            _stable(cache_key_extra),
            options or "",
        )
        return key, fp

    def compile(
        self,
        jit_fn: Any,
        *args: Any,
        plan: Any = None,
        cache_key_extra: Hashable = (),
        options: str | None = None,
    ) -> CompiledKernel:
        """The compiled kernel for these arguments, compiling on a miss."""
        key, fp = self.key(
            jit_fn, args, plan=plan, cache_key_extra=cache_key_extra, options=options
        )
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self.hits += 1
                return entry
            self.misses += 1
        compiler = self._compiler
        if compiler is None:
            from ts_runtime._dsl import compile_jit

            compiler = compile_jit
        compiled = (
            compiler(jit_fn, *args) if options is None else compiler(jit_fn, *args, options=options)
        )
        entry = CompiledKernel(compiled, key, fp)
        with self._lock:
            self._entries.setdefault(key, entry)
        return entry


default_cache = CompileCache()
"""The process-wide cache :func:`compile_kernel` uses unless given another."""


def compile_kernel(
    jit_fn: Any,
    *args: Any,
    cache_key_extra: Hashable = (),
    plan: Any = None,
    options: str | None = None,
    cache: CompileCache | None = None,
) -> CompiledKernel:
    """Compile ``jit_fn`` for ``args`` with ``cute.compile``, once per key (module docstring).

    Args:
        jit_fn: A ``@cute.jit`` function.
        *args: Its arguments (tensors, e.g. from :func:`from_torch`, or fake tensors).
        cache_key_extra: Anything else the generated code depends on.
        plan: The kernel's ``KernelPlan`` or ``TaskManager`` (its fingerprint joins the key).
        options: ``cute.compile`` options string.
        cache: The cache to use (default: :data:`default_cache`).

    Returns:
        The cache entry; call it like the compiled kernel.
    """
    return (default_cache if cache is None else cache).compile(
        jit_fn, *args, plan=plan, cache_key_extra=cache_key_extra, options=options
    )


def from_torch(tensor: Any, assumed_align: int = 16) -> Any:
    """A CuTe tensor over a torch tensor's memory (DLPack, no copy).

    Raises:
        TypeError: ``tensor`` is not a torch tensor.
    """
    mod = type(tensor).__module__
    if not mod.startswith("torch"):
        raise TypeError(f"from_torch expects a torch.Tensor, got {type(tensor).__name__}")
    from ts_runtime._dsl import from_dlpack

    return from_dlpack(tensor, assumed_align=assumed_align)
