"""The staged front door: host stages without the DSL, compiled stages against a hand twin."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from ts_ir import CooperativeGroupSpec, PipelineSpec, PipelineType
from ts_runtime import RuntimeConfigError, Task
from ts_runtime.staged import Kernel, KernelContext, Symbol, Tasks
from ts_trace import (
    MemoryResource,
    ResourceProxy,
    TaskLocalVariable,
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
)
from ts_verify import VerificationError


@dataclasses.dataclass(kw_only=True)
class Source(MemoryResource):
    tensor: Any = None
    element: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.element = TaskLocalVariable(dtype="Float16", default=0)

    @consumer_work(returns=element)
    def load(self, stage_info: Any) -> Any:
        return self.tensor[stage_info.loop_offset]


@dataclasses.dataclass(kw_only=True)
class Destination(MemoryResource):
    tensor: Any = None

    @producer_work
    def store(self, stage_info: Any, *, element: Any) -> None:
        self.tensor[stage_info.loop_offset] = element


def copy_tasks(k: KernelContext, src: Any, dst: Any, n: Any) -> Tasks:
    """A grid-stride copy: thread t copies t, t + grid threads, ... below n."""
    s, d = Source(name="src", tensor=src), Destination(name="dst", tensor=dst)
    start = k.block_idx[0] * k.block_dim[0] + k.thread_idx[0]

    @schedule
    def copy(src: ResourceProxy, dst: ResourceProxy) -> None:
        with domain_loop(start, n, k.grid_dim[0] * k.block_dim[0], unroll=4):
            dst.store(element=src.load())

    return Tasks([Task([s], [d], 0, 8, schedule=copy(s, d), name="copy")], {d: [s]})


# -- host stages --------------------------------------------------------------------------------


def test_host_stages_need_no_dsl_values() -> None:
    kern = Kernel(copy_tasks)
    assert kern.name == "copy_tasks" and kern.parameters == ("src", "dst", "n")
    traced = kern.trace()
    assert list(traced.schedules) == ["copy"]
    assert "src.load" in traced.as_text() and "dst.store" in traced.as_text()
    planned = kern.plan()
    assert planned.plan.num_warps == 8 and len(planned.fingerprint) == 16
    assert "copy" in planned.as_text() and "flowchart" in planned.mermaid()
    verified = kern.verify()
    assert verified.ok and "verified" in verified.as_text()
    # Stages are computed once: the same plan object comes back.
    assert kern.plan().plan is planned.plan


def test_symbols_keep_their_names_and_identity() -> None:
    n = Symbol("n")
    assert type(n).__name__ == "n" and repr(n) == "Symbol('n')"
    expr = n * 2 + 1
    assert expr.name == "((n * 2) + 1)"
    assert (3 - n).name == "(3 - n)" and (n // 4 % 2).name == "((n // 4) % 2)"
    assert n[0].name == "n[0]"
    # Two computations of one expression are two runtime values (as DSL values are).
    assert (n - 1) is not (n - 1)
    with pytest.raises(RuntimeConfigError, match="cannot branch"):
        bool(n)


def test_context_on_the_host_answers_symbols() -> None:
    k = KernelContext(False)
    assert [s.name for s in k.block_idx] == ["block_idx.x", "block_idx.y", "block_idx.z"]
    assert k.value("tiles_n", lambda: 1 // 0).name == "tiles_n"  # not computed on the host
    a, b = k.smem_tensor("f16", lambda: 1 // 0), k.smem_tensor("f16", None)
    assert (a.name, b.name) == ("smem0", "smem1")
    assert k.smem_allocator is None
    m, n = k.value(("m", "n"), lambda: 1 // 0)
    assert (m.name, n.name) == ("m", "n")
    with pytest.raises(RuntimeConfigError, match="not a sequence"):
        a, b = k.value("tiles", lambda: (1, 2))


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    @producer_work
    def fill(self, stage_info: Any) -> None:
        """Write a stage."""

    @consumer_work
    def drain(self, stage_info: Any) -> None:
        """Read a stage."""


def test_a_broken_declaration_is_reported_by_verify_and_refused_by_lower() -> None:
    group = CooperativeGroupSpec("thread", 32)

    def tasks(k: KernelContext, n: Any) -> Tasks:
        ring = Ring(
            name="ring", pipeline_config=PipelineSpec(PipelineType.AsyncAsync, 2, 0, group, group)
        )

        @schedule
        def fill(r: ResourceProxy) -> None:
            with domain_loop(n):
                r.acquire()
                r.fill()
                r.commit()

        @schedule
        def drain(r: ResourceProxy) -> None:
            with domain_loop(n):
                r.wait()
                r.drain()  # never released: the producer's third acquire waits forever

        return Tasks(
            [
                Task([], [ring], 0, 1, schedule=fill(ring), name="fill"),
                Task([ring], [], 1, 1, schedule=drain(ring), name="drain"),
            ],
            {ring: []},
        )

    kern = Kernel(tasks)
    verified = kern.verify()
    assert not verified.ok
    assert "drain" in verified.as_text() and "ring" in verified.as_text()
    kern.launcher(lambda *a: None)
    with pytest.raises(VerificationError):
        kern.lower(1)


def test_declaration_errors_are_typed() -> None:
    with pytest.raises(RuntimeConfigError, match="not a function"):
        Kernel(42)  # type: ignore[arg-type]
    with pytest.raises(RuntimeConfigError, match="takes no parameters"):
        Kernel(lambda: Tasks([], {}))
    with pytest.raises(RuntimeConfigError, match="returned dict, not Tasks"):
        Kernel(lambda k: {}).plan()  # type: ignore[arg-type, return-value]
    kern = Kernel(copy_tasks)
    with pytest.raises(RuntimeConfigError, match="has no launcher"):
        kern.lower()
    with pytest.raises(RuntimeConfigError, match=r"2 value\(s\) for the declaration's 3"):
        kern.launch(1, 2, grid=(1, 1, 1))


def test_checks_before_verification_raise_on_the_host() -> None:
    """A group size that contradicts the warps is a typed error, not a passing report."""
    from ts_runtime import GroupSizeError

    def tasks(k: KernelContext, n: Any) -> Tasks:
        ring = Ring(
            name="ring",
            pipeline_config=PipelineSpec(
                PipelineType.AsyncAsync,
                2,
                0,
                CooperativeGroupSpec("thread", 32),
                CooperativeGroupSpec("thread", 64),  # the consumer task has 4 warps: 128
            ),
        )

        @schedule
        def fill(r: ResourceProxy) -> None:
            with domain_loop(n):
                r.acquire()
                r.fill()
                r.commit()

        @schedule
        def drain(r: ResourceProxy) -> None:
            with domain_loop(n):
                r.wait()
                r.drain()
                r.release()

        return Tasks(
            [
                Task([], [ring], 0, 1, schedule=fill(ring), name="fill"),
                Task([ring], [], 4, 4, schedule=drain(ring), name="drain"),
            ],
            {ring: []},
        )

    with pytest.raises(GroupSizeError, match="consumer group has 64"):
        Kernel(tasks).verify()


def test_context_in_the_kernel_carves_smem_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """A function is a layout factory, a DSL layout (callable too) is not; a swizzled composed
    layout is allocated as its outer layout with the swizzle on the pointer."""
    launch = pytest.importorskip("ts_codegen.dsl.launch")
    calls: list[tuple[Any, int, Any]] = []

    def smem_tensor(alloc: Any, dtype: Any, layout: Any, align: int, swizzle: Any) -> int:
        calls.append((layout, align, swizzle))
        return len(calls)

    monkeypatch.setattr(launch, "smem_tensor", smem_tensor)
    k = KernelContext(True)
    k._allocator = "the kernel's allocator"

    class Layout:  # DSL layouts map coordinates to offsets
        def __call__(self, *coord: Any) -> Any:
            raise AssertionError("a layout is not a factory")

    @dataclasses.dataclass
    class Composed:
        outer: Any
        inner: Any

    plain = Layout()
    assert k.smem_tensor("f16", plain) == 1
    assert k.smem_tensor("f16", lambda: plain, 128) == 2
    assert k.smem_tensor("f16", Composed("outer", "swizzle")) == 3
    assert k.smem_tensor("f16", Composed("o", "s"), swizzle="given") == 4
    assert calls == [
        (plain, 1024, None),
        (plain, 128, None),
        ("outer", 1024, "swizzle"),
        (Composed("o", "s"), 1024, "given"),
    ]


def test_keyword_only_parameters_are_the_declarations_own_options() -> None:
    seen: list[int] = []

    def declare(k: KernelContext, src: Any, dst: Any, n: Any, *, stages: int = 2) -> Tasks:
        seen.append(stages)
        return copy_tasks(k, src, dst, n)

    kern = Kernel(declare)
    assert kern.parameters == ("src", "dst", "n")
    assert kern.verify().ok and seen == [2]


class Half:
    """An element type as the DSL's are seen by the host: a class with a bit ``width``."""

    width = 16


def test_smem_tensors_count_against_the_budget_on_the_host() -> None:
    """An SMEM tensor of a known size is in the plan; over budget, verify() refuses with
    TS-R004 naming the tensor and its line, before anything is compiled."""
    from ts_runtime import SmemBudgetError

    def declare(k: KernelContext, src: Any, dst: Any, n: Any, *, elements: int) -> Tasks:
        k.smem_tensor(Half, 1000, 128)  # small tensor
        k.smem_tensor(Half, elements)  # the staged tiles
        return copy_tasks(k, src, dst, n)

    def kernel(elements: int) -> Kernel:
        return Kernel(lambda k, s, d, n: declare(k, s, d, n, elements=elements))

    fits = kernel(100_000)
    extra = {a.name: (a.size_bytes, a.alignment) for a in fits.plan().plan.smem_extra}
    assert extra == {"k.smem_tensor[0]": (2000, 128), "k.smem_tensor[1]": (200_000, 1024)}
    assert fits.verify().ok
    # 232_000 B at 0 (1024-aligned first), 2000 B at 232_064: 234_064 B > 232_448 B.
    with pytest.raises(SmemBudgetError) as info:
        kernel(116_000).verify()
    err = info.value
    assert err.code == "TS-R004" and err.resource == "k.smem_tensor[1]"
    assert "the kernel's own allocation `k.smem_tensor[1]`" in str(err)
    lines = Path(__file__).read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if "# the staged tiles" in t)
    assert f'test_runtime_staged.py", line {line}' in str(err)


def test_smem_tensors_of_unknown_size_are_not_counted_on_the_host() -> None:
    """A DSL layout exists only in the kernel: the host plan cannot size it (the kernel's can)."""

    def declare(k: KernelContext, src: Any, dst: Any, n: Any) -> Tasks:
        k.smem_tensor(Half, lambda: 1 // 0)  # a layout factory: not called on the host
        k.smem_tensor("f16", 10**9)  # not an element type: the DSL refuses it in the kernel
        return copy_tasks(k, src, dst, n)

    kern = Kernel(declare)
    assert kern.plan().plan.smem_extra == () and kern.verify().ok
