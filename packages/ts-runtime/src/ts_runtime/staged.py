"""The staged front door: one kernel object, traced → planned → verified → lowered → compiled.

A kernel is declared once, by a function that builds its resources and tasks from the kernel's
parameters::

    def copy_tasks(k, src, dst, n):                      # k: the KernelContext
        s, d = Source(name="src", tensor=src), Destination(name="dst", tensor=dst)
        start = k.block_idx[0] * k.block_dim[0] + k.thread_idx[0]
        step = k.grid_dim[0] * k.block_dim[0]
        return Tasks([Task([s], [d], 0, 8, schedule=copy(s, d, (start, n, step)))], {d: [s]})

    copy = Kernel(copy_tasks, name="grid_stride_copy", block_warps=8)

    @cute.jit
    def launch(src, dst, n):                             # the host side, as usual
        copy.launch(src, dst, n, grid=(132, 1, 1))

    copy.launcher(launch)

On the host, :meth:`Kernel.trace`, :meth:`~Kernel.plan` and :meth:`~Kernel.verify` call the
declaration with :class:`Symbol` s in place of the parameters (and of ``blockIdx`` & co.): no
GPU and no CuTe DSL needed. :meth:`~Kernel.lower` and :meth:`~Kernel.compile` compile the
launcher; inside it the generated ``@cute.kernel`` calls the same declaration with the real
values, which are planned, verified again (what is lowered is what was proven) and lowered.
Planning, verifying and lowering are the functions of :mod:`ts_runtime.stages`, which the
reference-compatible ``TaskManager`` runs too. Every stage has ``as_text()``. Host stages are
computed once per kernel and target; compiled kernels are cached by :func:`compile_kernel`
(plan fingerprint, target, argument types).
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeGuard

from ts_ir import (
    KernelPlan,
    Schedule,
    SmemAllocationSpec,
    SmemLayoutError,
    SourceLocation,
    plan_smem_layout,
    render_mermaid,
)
from ts_ir.errors import caller_location
from ts_runtime import _dsl
from ts_runtime._arguments import check_task_manager_arguments
from ts_runtime.compile import CompiledKernel, compile_kernel, plan_fingerprint
from ts_runtime.errors import RuntimeConfigError
from ts_runtime.pdl import check_pdl_launch
from ts_runtime.pipeline_groups import translation_plan
from ts_runtime.ptx_check import TranslationReport, check_ptx
from ts_runtime.stages import (
    collect_resources,
    lower_plan,
    plan_tasks,
    setup_context,
    target_of,
    verify_plan,
)
from ts_runtime.task import Task
from ts_trace import MemoryResource
from ts_verify import Report

__all__ = [
    "Compiled",
    "Kernel",
    "KernelContext",
    "Lowered",
    "Planned",
    "Symbol",
    "Tasks",
    "Traced",
    "Verified",
]


# -- symbols: the kernel's runtime values on the host ---------------------------------------------
_SYMBOL_TYPES: dict[str, type[Symbol]] = {}


class Symbol:
    """A runtime value of the kernel, seen on the host: a name and integer arithmetic.

    Each symbol is an instance of a class named after it, so a loop bound shows as ``<n #1>``
    in plans and messages. The verifier keys a runtime value by identity: the same symbol
    object is one value (a parameter passed to two schedules), two objects are independent
    (``n - 1`` computed twice), exactly as DSL values behave in the kernel.
    """

    __slots__ = ("name",)
    name: str

    def __new__(cls, name: str) -> Symbol:  # noqa: D102 (the class docstring says it)
        sub = _SYMBOL_TYPES.get(name)
        if sub is None:
            sub = _SYMBOL_TYPES[name] = type(name, (Symbol,), {"__slots__": ()})
        obj = object.__new__(sub)
        object.__setattr__(obj, "name", name)
        return obj

    def __repr__(self) -> str:
        return f"Symbol({self.name!r})"

    def _op(self, op: str, other: object, flip: bool = False) -> Symbol:
        a, b = (other, self) if flip else (self, other)
        return Symbol(f"({_name(a)} {op} {_name(b)})")

    def __add__(self, other: object) -> Symbol:
        return self._op("+", other)

    def __radd__(self, other: object) -> Symbol:
        return self._op("+", other, True)

    def __sub__(self, other: object) -> Symbol:
        return self._op("-", other)

    def __rsub__(self, other: object) -> Symbol:
        return self._op("-", other, True)

    def __mul__(self, other: object) -> Symbol:
        return self._op("*", other)

    def __rmul__(self, other: object) -> Symbol:
        return self._op("*", other, True)

    def __floordiv__(self, other: object) -> Symbol:
        return self._op("//", other)

    def __rfloordiv__(self, other: object) -> Symbol:
        return self._op("//", other, True)

    def __mod__(self, other: object) -> Symbol:
        return self._op("%", other)

    def __rmod__(self, other: object) -> Symbol:
        return self._op("%", other, True)

    def __getitem__(self, index: object) -> Symbol:
        return Symbol(f"{self.name}[{_name(index)}]")

    def __iter__(self) -> Iterator[Any]:
        # Without this, Python would iterate through __getitem__ forever.
        raise RuntimeConfigError(
            f"`{self.name}` is one runtime value of the kernel, not a sequence",
            fix="name each part: k.value(('tiles_m', 'tiles_n'), lambda: ...)",
        )

    def __bool__(self) -> bool:
        raise RuntimeConfigError(
            f"`{self.name}` is a runtime value of the kernel: the declaration cannot branch on "
            "it with a Python `if`",
            fix="branch inside a schedule (when_true / when_false) or a work method instead",
        )


def _name(value: object) -> str:
    return value.name if isinstance(value, Symbol) else repr(value)


# -- the context a declaration sees ---------------------------------------------------------------
class KernelContext:
    """What a declaration may ask of the kernel it builds: indices, SMEM, derived values.

    On the host every answer is a :class:`Symbol`; in the kernel it is the DSL value.

    Attributes:
        on_device: True inside the generated ``@cute.kernel``.
    """

    def __init__(self, on_device: bool) -> None:
        self.on_device = on_device
        self._allocator: Any = None
        self._smem_ids = itertools.count()
        self._carved: list[SmemAllocationSpec] = []
        self._carved_at: dict[str, SourceLocation] = {}

    def _xyz(self, name: str) -> tuple[Any, Any, Any]:
        if not self.on_device:
            return (Symbol(f"{name}.x"), Symbol(f"{name}.y"), Symbol(f"{name}.z"))
        import ts_codegen.dsl.launch

        return getattr(ts_codegen.dsl.launch, name)()  # type: ignore[no-any-return]

    @property
    def block_idx(self) -> tuple[Any, Any, Any]:
        """``blockIdx`` (x, y, z)."""
        return self._xyz("block_idx")

    @property
    def grid_dim(self) -> tuple[Any, Any, Any]:
        """``gridDim`` (x, y, z)."""
        return self._xyz("grid_dim")

    @property
    def thread_idx(self) -> tuple[Any, Any, Any]:
        """``threadIdx`` (x, y, z)."""
        return self._xyz("thread_idx")

    @property
    def block_dim(self) -> tuple[Any, Any, Any]:
        """``blockDim`` (x, y, z)."""
        return self._xyz("block_dim")

    def value(self, name: str | tuple[str, ...], compute: Callable[[], Any]) -> Any:
        """``compute()`` in the kernel (CuTe DSL code allowed); on the host a :class:`Symbol`.

        ``name`` may be a tuple when ``compute`` returns one: a symbol per part.
        """
        if self.on_device:
            return compute()
        if isinstance(name, tuple):
            return tuple(Symbol(n) for n in name)
        return Symbol(name)

    @property
    def smem_allocator(self) -> Any:
        """The kernel's ``cutlass.memory.SmemAllocator`` (None on the host)."""
        if self.on_device and self._allocator is None:
            from ts_codegen.dsl import new_smem_allocator

            self._allocator = new_smem_allocator()
        return self._allocator

    def smem_tensor(
        self, dtype: Any, layout: Any, alignment: int = 1024, swizzle: Any = None
    ) -> Any:
        """An SMEM tensor, carved from the kernel's SMEM in declaration order.

        ``layout`` may be a function that returns it (DSL layouts exist only in the kernel), or
        a kernel parameter. A swizzled composed layout ``outer o swizzle`` (what
        ``cutlass.utils.hopper_helpers.make_smem_layout_*`` return) with no ``swizzle`` given
        is allocated as ``outer`` with the swizzle on the pointer, the form TMA and WGMMA
        descriptors read.

        Every tensor counts against the kernel's SMEM budget (the plan's ``smem_extra``, named
        ``k.smem_tensor[i]``), which ts-verify checks before anything is compiled: in the
        kernel always, on the host when the size is known there (``layout`` an element count;
        a DSL layout exists only in the kernel).
        """
        index = next(self._smem_ids)
        if not self.on_device:
            if _is_count(layout):
                self._carve(index, dtype, layout, alignment)
            return Symbol(f"smem{index}")
        import ts_codegen.dsl.launch

        # DSL layouts are callable too (coordinate -> offset): only a Python function is a
        # factory.
        shape = layout() if inspect.isfunction(layout) or inspect.ismethod(layout) else layout
        if swizzle is None and hasattr(shape, "outer") and hasattr(shape, "inner"):
            shape, swizzle = shape.outer, shape.inner
        tensor = ts_codegen.dsl.launch.smem_tensor(
            self.smem_allocator, dtype, shape, alignment, swizzle
        )
        if _is_count(getattr(dtype, "width", None)):  # else the DSL has refused it above
            elements = shape if _is_count(shape) else _dsl.cosize(shape)
            self._carve(index, dtype, elements, alignment)
        return tensor

    def _carve(self, index: int, dtype: Any, elements: int, alignment: int) -> None:
        """Record ``elements`` of ``dtype`` for the SMEM budget (whole bytes, rounded up)."""
        width = getattr(dtype, "width", None)
        if not _is_count(width):
            return  # not an element type: nothing to count (the DSL refuses it in the kernel)
        name = f"k.smem_tensor[{index}]"
        self._carved.append(
            SmemAllocationSpec(
                name,
                (elements * width + 7) // 8,
                alignment,
                getattr(dtype, "__name__", str(dtype)),
                elements,
            )
        )
        # The declaration's line, which a budget error names (in the kernel the innermost
        # frame outside TS would be the DSL's).
        self._carved_at[name] = caller_location()

    @property
    def carved_smem(self) -> tuple[SmemAllocationSpec, ...]:
        """The SMEM tensors carved so far, as the plan counts them (see :meth:`smem_tensor`)."""
        return tuple(self._carved)


def _is_count(value: object) -> TypeGuard[int]:
    """A Python int >= 0 (not a bool): an element count, a bit width."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@dataclasses.dataclass(frozen=True)
class Tasks:
    """What a declaration returns: the tasks and the resource dependency graph.

    Attributes:
        tasks: The tasks.
        graph: ``{downstream: [upstreams...]}`` over every resource of the tasks.
    """

    tasks: Sequence[Task]
    graph: Mapping[MemoryResource, Sequence[MemoryResource]]


# -- the stages -----------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Traced:
    """Every task's traced schedule, by task name."""

    schedules: Mapping[str, Schedule]

    def as_text(self) -> str:
        """Each task's schedule tree with its steps and source lines."""
        return "\n\n".join(f"task {t}:\n{s.as_text()}" for t, s in self.schedules.items())


@dataclasses.dataclass(frozen=True)
class Planned:
    """The kernel plan and its fingerprint (what verification and compilation key on)."""

    plan: KernelPlan
    fingerprint: str

    def as_text(self) -> str:
        """The plan table and, when the kernel has SMEM, its layout."""
        text = self.plan.as_text()
        try:
            layout = plan_smem_layout(self.plan)
        except SmemLayoutError:
            return text  # the verifier reports malformed SMEM declarations
        return f"{text}\n\n{layout.report()}" if layout.total else text

    def mermaid(self, direction: str = "TD") -> str:
        """The resource / task graph as a Mermaid flowchart."""
        return render_mermaid(self.plan, direction)


@dataclasses.dataclass(frozen=True)
class Verified:
    """The verification report of the plan."""

    planned: Planned
    report: Report

    @property
    def ok(self) -> bool:
        """True when the report has no errors."""
        return self.report.ok

    def as_text(self) -> str:
        """The report: what is proven, or each error with its task, resource and line."""
        return self.report.as_text()


@dataclasses.dataclass(frozen=True)
class Lowered:
    """The kernel lowered by the CuTe DSL (the module the GPU code is generated from).

    The DSL lowers and generates code in one call, so lowering compiles too; the result is
    cached, and :meth:`compile` returns it without compiling again.
    """

    kernel: CompiledKernel
    plan: KernelPlan | None = None

    def as_text(self) -> str:
        """The lowered MLIR module."""
        return self.kernel.as_text("mlir")

    def compile(self) -> Compiled:
        """The compiled kernel."""
        return Compiled(self.kernel, self.plan)


@dataclasses.dataclass(frozen=True)
class Compiled:
    """The compiled kernel: call it with the launcher's arguments.

    Attributes:
        kernel: The cache entry.
        plan: The verified plan it was compiled from (what :meth:`check` compares with).
    """

    kernel: CompiledKernel
    plan: KernelPlan | None = None

    def __call__(self, *args: Any) -> Any:
        """Launch (the arguments of the launcher, e.g. CuTe tensors over torch tensors)."""
        return self.kernel(*args)

    def as_text(self) -> str:
        """The PTX."""
        return self.kernel.as_text("ptx")

    def counts(self) -> dict[str, int]:
        """Instructions per opcode in the PTX."""
        from ts_codegen.ptx import opcode_counts

        return opcode_counts(self.as_text())

    def check(self) -> TranslationReport:
        """Translation validation: the barrier protocol of the PTX against the verified plan.

        Returns :func:`ts_runtime.ptx_check.check_ptx`'s report (``ok``, ``errors``,
        ``raise_for_errors()``). A TMA Fork's shared full barrier is not checked yet
        (:func:`ts_runtime.pipeline_groups.translation_plan` raises for it).
        """
        if self.plan is None:
            raise RuntimeConfigError(
                "Compiled.check(): this compiled kernel carries no plan",
                fix="compile it with Kernel.compile(...), which records the verified plan",
            )
        # A group is compiled as written out per member (ts_codegen.groups): compare with that.
        return check_ptx(translation_plan(self.plan), self.as_text())


# -- the kernel -----------------------------------------------------------------------------------
class Kernel:
    """A TS kernel from one declaration function, with its stages (module docstring).

    Args:
        declare: ``declare(k, *params) -> Tasks``: builds the resources and tasks from the
            kernel's parameters (what the launcher passes to :meth:`launch`) and ``k``, the
            :class:`KernelContext`. It must not branch on the parameters' values in Python.
            Keyword-only parameters are the declaration's own options and keep their defaults.
        name: Kernel name (default: the function's name).
        block_warps: Warps per CTA (default: the end of the last task's warp range).
        smem_capacity_bytes: SMEM per CTA to plan for (default: the target's).
        debug_bounded_waits: Lower every blocking wait as a bounded wait that traps with a
            message naming the task and resource (see ``TaskManager``).
    """

    def __init__(
        self,
        declare: Callable[..., Tasks],
        *,
        name: str = "",
        block_warps: int | None = None,
        smem_capacity_bytes: int | None = None,
        debug_bounded_waits: bool = False,
    ) -> None:
        if not callable(declare):
            raise RuntimeConfigError(
                f"Kernel: declare={declare!r} is not a function",
                fix="pass def declare(k, *params) -> Tasks(tasks, graph)",
            )
        self._declare = declare
        self.name = name or getattr(declare, "__name__", "kernel")
        self.block_warps = block_warps
        self.smem_capacity_bytes = smem_capacity_bytes
        self.debug_bounded_waits = debug_bounded_waits
        # Keyword-only parameters (with defaults) are the declaration's own options, not the
        # kernel's: only the positional ones are passed by the launcher.
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        params = [
            p.name for p in inspect.signature(declare).parameters.values() if p.kind in positional
        ]
        if not params:
            raise RuntimeConfigError(
                f"Kernel `{self.name}`: the declaration takes no parameters",
                fix="its first parameter is the KernelContext: def declare(k, *params)",
            )
        self.parameters: tuple[str, ...] = tuple(params[1:])
        self._host: dict[str, tuple[KernelPlan, Report]] = {}
        self._device: Any = None
        self._launcher: Any = None

    # -- host stages (no GPU, no CuTe DSL) ----------------------------------------------------
    def _declared(self, ctx: KernelContext, values: Sequence[Any]) -> Tasks:
        decl = self._declare(ctx, *values)
        if not isinstance(decl, Tasks):
            raise RuntimeConfigError(
                f"Kernel `{self.name}`: the declaration returned {type(decl).__name__}, not Tasks",
                fix="end the declaration with `return Tasks(tasks, graph)`",
            )
        check_task_manager_arguments(
            decl.tasks,
            decl.graph,
            smem_allocator=None,
            flags={},
            smem_capacity_bytes=self.smem_capacity_bytes,
            name=self.name,
            block_warps=self.block_warps,
            target=None,
        )
        return decl

    def _planned(self, ctx: KernelContext, decl: Tasks) -> tuple[KernelPlan, Report]:
        """Plan and verify (the stages TaskManager runs too).

        On the host a failed verification is the Verified stage's report; in the kernel it
        raises. The typed errors of the declaration (group sizes, SMEM, target) raise in both.
        """
        target = target_of(None, self.smem_capacity_bytes)
        plan = plan_tasks(
            decl.tasks,
            decl.graph,
            target=target,
            # The declaration's allocator, if it carved SMEM; else the lowering makes one.
            smem_allocator=ctx._allocator,
            name=self.name,
            block_warps=self.block_warps,
            carved=ctx.carved_smem,
        )
        report = verify_plan(plan, target, raise_verification=ctx.on_device, lines=ctx._carved_at)
        return plan, report

    def _host_stages(self) -> tuple[KernelPlan, Report]:
        target = target_of().name
        hit = self._host.get(target)
        if hit is None:
            ctx = KernelContext(False)
            hit = self._planned(ctx, self._declared(ctx, [Symbol(p) for p in self.parameters]))
            self._host[target] = hit
        return hit

    def trace(self) -> Traced:
        """Every task's schedule, traced on the host."""
        return Traced({t.name: t.schedule for t in self._host_stages()[0].tasks})

    def plan(self) -> Planned:
        """The kernel plan."""
        plan = self._host_stages()[0]
        return Planned(plan, plan_fingerprint(plan))

    def verify(self) -> Verified:
        """The verification report (its ``ok`` says whether the kernel compiles)."""
        return Verified(self.plan(), self._host_stages()[1])

    # -- in the kernel ------------------------------------------------------------------------
    def emit(self, *values: Any) -> dict[str, Any]:
        """Declare, plan, verify and lower the tasks here (inside a ``@cute.kernel``)."""
        ctx = KernelContext(True)
        decl = self._declared(ctx, values)
        plan, _ = self._planned(ctx, decl)
        return lower_plan(
            plan,
            decl.tasks,
            collect_resources(decl.tasks, decl.graph),
            smem_allocator=ctx._allocator,
            context=setup_context(ctx._allocator),
            debug_bounded_waits=self.debug_bounded_waits,
        )

    def launch(
        self,
        *values: Any,
        grid: Sequence[Any],
        block: Sequence[int] | None = None,
        cluster: Sequence[int] | None = None,
        stream: Any = None,
        use_pdl: bool = False,
    ) -> None:
        """Launch the kernel from the ``@cute.jit`` launcher, handing it ``values``.

        ``block`` defaults to ``block_warps * 32`` threads (or the tasks' warp ranges);
        ``stream`` (a ``cuda.CUstream``, e.g. the launcher's optional ``stream`` parameter) to
        the default stream. ``use_pdl`` launches with programmatic dependent launch: the kernel
        may start before the previous one on the stream ends, so it must wait for it with a
        ``PdlWaitBarrier`` (see :mod:`ts_runtime.pdl`).
        """
        if use_pdl:
            check_pdl_launch(self.name, self.plan().plan)
        if len(values) != len(self.parameters):
            raise RuntimeConfigError(
                f"Kernel `{self.name}`.launch: {len(values)} value(s) for the declaration's "
                f"{len(self.parameters)} parameter(s) ({', '.join(self.parameters)})",
                fix="pass one value per parameter after the KernelContext, in order",
            )
        import ts_codegen.dsl.launch

        if self._device is None:
            self._device = ts_codegen.dsl.launch.device_kernel(lambda params: self.emit(*params))
        if block is None:
            block = (self.plan().plan.num_warps * 32, 1, 1)
        ts_codegen.dsl.launch.launch(
            self._device,
            values,
            grid=grid,
            block=block,
            cluster=cluster,
            stream=stream,
            use_pdl=use_pdl,
        )

    # -- compiled stages (CuTe DSL) -----------------------------------------------------------
    def launcher(self, fn: Any) -> Any:
        """Register the ``@cute.jit`` host function that calls :meth:`launch` (a decorator)."""
        self._launcher = fn
        return fn

    @property
    def jit_launcher(self) -> Any:
        """The registered ``@cute.jit`` launcher (None before :meth:`launcher`)."""
        return self._launcher

    def lower(self, *args: Any) -> Lowered:
        """Lower (and compile, cached) the launcher for these arguments."""
        if self._launcher is None:
            raise RuntimeConfigError(
                f"Kernel `{self.name}` has no launcher",
                fix="decorate the @cute.jit host function that calls .launch() with "
                "@kernel.launcher",
            )
        self.verify().report.raise_for_errors()
        from ts_codegen.dsl import keep_ptx_options

        options = keep_ptx_options()
        entry = compile_kernel(self._launcher, *args, plan=self.plan().plan, options=options)
        return Lowered(entry, self.plan().plan)

    def compile(self, *args: Any) -> Compiled:
        """The compiled kernel for these arguments (cached)."""
        return self.lower(*args).compile()

    def __call__(self, *args: Any) -> Any:
        """Compile (cached) and run the launcher."""
        return self.compile(*args)(*args)
