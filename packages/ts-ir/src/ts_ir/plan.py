"""The kernel plan: every fact about a kernel that verification and lowering need.

A :class:`KernelPlan` is assembled from user declarations (by ``ts_trace.build_plan`` or by the
runtime's ``TaskManager``) and consumed by ``ts_verify`` and ``ts_codegen``. It is plain frozen
data: resources, their pipelines and SMEM needs, tasks with their traced schedules, and the
resource dependency graph.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from ts_ir.enums import PipelineType, Role, SignalingThreads, TileSchedulerType, WorkAttr
from ts_ir.errors import INT32_MAX, ArgumentError, describe_value, require_int
from ts_ir.groups import PipelineGroupSpec
from ts_ir.schedule import (
    UNKNOWN_LOCATION,
    ConstBound,
    DomainLoop,
    Schedule,
    SourceLocation,
    Step,
    iter_nodes,
)
from ts_ir.tmem import TmemAllocationSpec

__all__ = [
    "MAX_ARRIVALS",
    "WARPGROUP_WARPS",
    "WARP_SIZE",
    "CooperativeGroupSpec",
    "DependencyEdge",
    "KernelPlan",
    "PipelineSpec",
    "ResourceSpec",
    "SmemAllocationSpec",
    "TaskSpec",
    "WorkMethodSpec",
    "interleave_lane",
    "interleave_warp_lanes",
]

WARP_SIZE = 32
"""Threads per warp."""

WARPGROUP_WARPS = 4
"""Warps per warpgroup (the granularity of ``setmaxnreg``)."""

MAX_ARRIVALS = 2**20 - 1
"""The largest arrival count (and transaction byte count) of an mbarrier phase."""


@dataclasses.dataclass(frozen=True)
class CooperativeGroupSpec:
    """How many arrivals one side of a pipeline contributes per phase.

    Attributes:
        agent: ``"thread"`` (one arrival per thread) or ``"warp"`` (one per warp).
        size: Number of arriving agents.
    """

    agent: str
    size: int

    def __post_init__(self) -> None:
        if not isinstance(self.agent, str) or self.agent not in ("thread", "warp"):
            raise ArgumentError(
                "CooperativeGroupSpec.agent",
                f"agent must be 'thread' or 'warp', got {describe_value(self.agent)}",
                fix="pass agent='thread' (one arrival per thread) or 'warp'",
            )
        require_int(
            self.size,
            "CooperativeGroupSpec.size",
            low=1,
            high=MAX_ARRIVALS,
            why="a cooperative group needs at least one member and at most the mbarrier "
            "arrival count",
        )

    def arrivals_for(self, num_warps: int) -> int:
        """Arrivals a task of ``num_warps`` warps makes when every thread signals."""
        return num_warps * (WARP_SIZE if self.agent == "thread" else 1)


@dataclasses.dataclass(frozen=True)
class PipelineSpec:
    """An mbarrier ring between a resource's producers and consumers.

    Attributes:
        type: The barrier protocol.
        stages: Number of ring stages (full + empty barrier per stage).
        bytes_per_stage: Transaction bytes the full barrier expects per stage (TMA producers).
        producer_group: Arrivals that complete a full barrier.
        consumer_group: Arrivals that complete an empty barrier.
        producer_signaling: Which producer threads signal.
        consumer_signaling: Which consumer threads signal.
        cluster_mn: The thread-block cluster ``(CM, CN)`` the ring spans: with a cluster,
            TMA producers multicast into the stages of the CTAs of their cluster row / column
            and each consumer releases the stage in every CTA that filled it. Every CTA runs
            the same schedule on its copy of the ring, so the per-CTA protocol (what
            ts-verify checks) is the one-CTA protocol.
        interleave: The interleave stride ``s``: the ring's stages are dealt out to ``s``
            lanes (lane ``l`` owns stages ``l, l + s, ...``), and each task works on one lane
            (see :func:`interleave_lane`), its cursor moving ``s`` stages at a time. Each lane
            is a ring of ``stages / s`` stages of its own. With ``strides``, the largest.
        strides: Per-role strides ``(acquire, commit, wait, release)`` when the producer side
            and the consumer side move by different strides (the producers' ``p`` and the
            consumers' ``c``, each dividing ``stages``); None when every role moves by
            ``interleave``. A cursor of stride ``p`` on lane ``l`` visits the stages
            ``l, l + p, ...``, so with ``L = lcm(p, c)`` the ring is ``L`` rings of
            ``stages / L`` stages (stage ``i`` in ring ``i % L``) that a cursor of a smaller
            stride visits in turn.
    """

    type: PipelineType
    stages: int
    bytes_per_stage: int
    producer_group: CooperativeGroupSpec
    consumer_group: CooperativeGroupSpec
    producer_signaling: SignalingThreads = SignalingThreads.All
    consumer_signaling: SignalingThreads = SignalingThreads.All
    cluster_mn: tuple[int, int] = (1, 1)
    interleave: int = 1
    strides: tuple[int, int, int, int] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.type, PipelineType):
            raise ArgumentError(
                "PipelineSpec.type",
                f"type must be a PipelineType, got {describe_value(self.type)}",
                fix="pass a member such as PipelineType.TmaAsync",
            )
        require_int(
            self.stages, "PipelineSpec.stages", low=1, why="a pipeline needs at least one stage"
        )
        require_int(self.bytes_per_stage, "PipelineSpec.bytes_per_stage")
        for side in ("producer_group", "consumer_group"):
            group = getattr(self, side)
            if not isinstance(group, CooperativeGroupSpec):
                raise ArgumentError(
                    f"PipelineSpec.{side}",
                    f"{side} must be a CooperativeGroupSpec, got {describe_value(group)}",
                    fix=f"pass {side}=CooperativeGroupSpec('thread', n)",
                )
        require_int(self.interleave, "PipelineSpec.interleave", low=1)
        if self.stages % self.interleave:
            raise ArgumentError(
                "PipelineSpec.interleave",
                f"the interleave stride {self.interleave} must be >= 1 and divide the "
                f"{self.stages} stages",
                fix="use a stride that divides the number of stages",
            )
        if self.strides is not None:
            self._check_strides(self.strides)
        cluster = self.cluster_mn
        if (
            not isinstance(cluster, (tuple, list))
            or len(cluster) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in cluster)
            or not all(1 <= v <= INT32_MAX for v in cluster)
        ):
            raise ArgumentError(
                "PipelineSpec.cluster_mn",
                f"cluster_mn must be two positive ints, got {describe_value(cluster)}",
                fix="pass cluster_mn=(CM, CN), e.g. (1, 1) without a cluster",
            )
        object.__setattr__(self, "cluster_mn", (cluster[0], cluster[1]))
        SignalingThreads.validate(self.producer_signaling, "producer_signaling")
        SignalingThreads.validate(self.consumer_signaling, "consumer_signaling")

    def _check_strides(self, strides: object) -> None:
        ok = (
            isinstance(strides, tuple)
            and len(strides) == 4
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in strides)
        )
        if not ok:
            raise ArgumentError(
                "PipelineSpec.strides",
                f"strides must be None or four ints >= 1, got {describe_value(strides)}",
                fix="pass strides=(acquire, commit, wait, release), e.g. (2, 2, 1, 1)",
            )
        assert isinstance(strides, tuple)
        acquire, commit, wait, release = strides
        if acquire != commit or wait != release or acquire == wait:
            raise ArgumentError(
                "PipelineSpec.strides",
                f"strides {strides} must be (p, p, c, c) with p != c: one stride per side "
                "(equal strides are `interleave`)",
                fix="pass strides=(p, p, c, c), or interleave=s for one stride",
            )
        if self.stages % acquire or self.stages % wait or self.interleave != max(strides):
            raise ArgumentError(
                "PipelineSpec.strides",
                f"strides {strides} must divide the {self.stages} stages, and interleave "
                f"({self.interleave}) must be the largest of them",
                fix="use strides that divide the number of stages and interleave=max(strides)",
            )

    @property
    def role_strides(self) -> tuple[int, int, int, int]:
        """The strides of ``(acquire, commit, wait, release)`` (``interleave`` for each)."""
        if self.strides is not None:
            return self.strides
        return (self.interleave,) * 4

    def side_stride(self, producer: bool) -> int:
        """The stride of the producer side's cursors (or the consumer side's)."""
        return self.role_strides[0 if producer else 2]

    @property
    def barrier_bytes(self) -> int:
        """SMEM bytes of the ring's mbarriers (a full and an empty 8-byte barrier per stage)."""
        return self.stages * 16

    @property
    def is_multicast(self) -> bool:
        """True when the ring spans a cluster of more than one CTA."""
        return self.cluster_mn != (1, 1)


@dataclasses.dataclass(frozen=True)
class SmemAllocationSpec:
    """A named SMEM region a resource needs.

    Attributes:
        name: Unique name within the kernel (``resource.region`` by convention).
        size_bytes: Size in bytes.
        alignment: Byte alignment, a power of two.
        dtype_name: Element type name ("" for raw bytes).
        count: Element count.
    """

    name: str
    size_bytes: int
    alignment: int = 128
    dtype_name: str = ""
    count: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ArgumentError(
                "SmemAllocationSpec.name",
                f"an SMEM allocation needs a non-empty str name, got {describe_value(self.name)}",
                fix="name it `resource.region`, e.g. 'ring.tiles'",
            )
        require_int(self.size_bytes, f"SMEM allocation {self.name!r}: size_bytes")
        a = self.alignment
        require_int(a, f"SMEM allocation {self.name!r}: alignment", low=1)
        if a & (a - 1):
            raise ArgumentError(
                "SmemAllocationSpec.alignment",
                f"SMEM allocation {self.name!r}: alignment {a} is not a power of 2",
                fix="use a power of two such as 16, 128 or 1024",
            )
        if not isinstance(self.dtype_name, str):
            raise ArgumentError(
                "SmemAllocationSpec.dtype_name",
                f"SMEM allocation {self.name!r}: dtype_name must be a str, got "
                f"{describe_value(self.dtype_name)}",
                fix="pass the element type's name, e.g. 'Float16', or '' for bytes",
            )
        require_int(self.count, f"SMEM allocation {self.name!r}: count")


@dataclasses.dataclass(frozen=True)
class WorkMethodSpec:
    """A named work method declared on a resource.

    Attributes:
        label: The method name.
        role: Producer or consumer side.
        attrs: Verification-visible attributes.
        outputs: Task-local outputs (consumer work only), in return order.
        inputs: Names of keyword parameters that can receive routed values.
    """

    label: str
    role: Role
    attrs: WorkAttr = WorkAttr.NONE
    outputs: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class ResourceSpec:
    """A resource of the kernel.

    Attributes:
        name: Unique name.
        kind: The resource's class name (for rendering).
        pipeline: Its pipeline, or None for resources without barriers.
        smem: SMEM regions it needs.
        work: Its named work methods.
        is_work_queue: True for the persistent work queue.
        is_barrier: True for pure barrier resources (no payload).
        location: Where the resource class is defined.
        scheduler: A work queue's tile scheduler (None: not a queue, or not known). A dynamic
            scheduler hands each tile over through the queue's pipeline, which decides which
            queue steps are meaningful (``ts_verify`` checks them).
    """

    name: str
    kind: str = "MemoryResource"
    pipeline: PipelineSpec | None = None
    smem: tuple[SmemAllocationSpec, ...] = ()
    work: tuple[WorkMethodSpec, ...] = ()
    is_work_queue: bool = False
    is_barrier: bool = False
    location: SourceLocation = UNKNOWN_LOCATION
    scheduler: TileSchedulerType | None = None

    def work_method(self, label: str) -> WorkMethodSpec | None:
        """The work method with the given label, or None."""
        for w in self.work:
            if w.label == label:
                return w
        return None


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """A task: a contiguous warp range running one schedule.

    Attributes:
        name: Unique task name.
        warp_start: First warp of the range.
        num_warps: Number of warps.
        num_registers: ``setmaxnreg`` target per thread, or None to keep the default.
        sources: Resources the task consumes from.
        destinations: Resources the task produces into.
        schedule: The traced schedule.
        location: Where the task was declared.
        cta_rank: The CTA rank within its cluster that the task runs on, or None for every
            CTA (the reference's ``run_only_on_cta_id``). The plan is verified per CTA, so
            tasks sharing a ring must be gated alike (``ts_verify`` checks it).
    """

    name: str
    warp_start: int
    num_warps: int
    num_registers: int | None
    sources: tuple[str, ...]
    destinations: tuple[str, ...]
    schedule: Schedule
    location: SourceLocation = UNKNOWN_LOCATION
    cta_rank: int | None = None

    @property
    def warp_end(self) -> int:
        """One past the last warp of the task."""
        return self.warp_start + self.num_warps

    @property
    def warps(self) -> range:
        """The task's warps."""
        return range(self.warp_start, self.warp_end)

    @property
    def num_threads(self) -> int:
        """Threads in the task."""
        return self.num_warps * WARP_SIZE


@dataclasses.dataclass(frozen=True)
class DependencyEdge:
    """``downstream`` is produced from data of ``upstream``."""

    upstream: str
    downstream: str


@dataclasses.dataclass(frozen=True)
class KernelPlan:
    """Everything about a kernel that verification and lowering need.

    Attributes:
        name: Kernel name.
        resources: Every resource.
        tasks: Every task.
        dependencies: Edges of the resource dependency graph.
        smem_alias_groups: Groups of SMEM allocation phases that share storage; each group is
            a tuple of phases, each phase a tuple of allocation names.
        smem_capacity: SMEM bytes available per CTA.
        block_warps: Warps launched per CTA (None: the smallest block that holds every task).
        smem_extra: SMEM allocations that no resource declares (the kernel's own scratch, added
            to the SMEM allocator directly): they count against the capacity too.
        tmem: The TMEM column blocks the kernel allocates (Blackwell), laid out.
        tmem_capacity: TMEM columns the kernel may use (None: the target's).
        groups: Pipeline groups (members sharing one side's synchronization; their collapsed
            steps are on the group's name, see :mod:`ts_ir.groups`).
    """

    name: str
    resources: tuple[ResourceSpec, ...]
    tasks: tuple[TaskSpec, ...]
    dependencies: tuple[DependencyEdge, ...] = ()
    smem_alias_groups: tuple[tuple[tuple[str, ...], ...], ...] = ()
    smem_capacity: int = 232448
    block_warps: int | None = None
    smem_extra: tuple[SmemAllocationSpec, ...] = ()
    tmem: tuple[TmemAllocationSpec, ...] = ()
    tmem_capacity: int | None = None
    groups: tuple[PipelineGroupSpec, ...] = ()

    def resource(self, name: str) -> ResourceSpec:
        """The resource with the given name."""
        for r in self.resources:
            if r.name == name:
                return r
        raise KeyError(name)

    def task(self, name: str) -> TaskSpec:
        """The task with the given name."""
        for t in self.tasks:
            if t.name == name:
                return t
        raise KeyError(name)

    def producers_of(self, resource: str) -> tuple[TaskSpec, ...]:
        """Tasks that list ``resource`` as a destination."""
        return tuple(t for t in self.tasks if resource in t.destinations)

    def consumers_of(self, resource: str) -> tuple[TaskSpec, ...]:
        """Tasks that list ``resource`` as a source."""
        return tuple(t for t in self.tasks if resource in t.sources)

    def upstreams_of(self, resource: str) -> tuple[str, ...]:
        """Resources that ``resource`` is produced from."""
        return tuple(e.upstream for e in self.dependencies if e.downstream == resource)

    @property
    def num_warps(self) -> int:
        """Warps per CTA, which is ``block_warps`` or else the end of the last task's range."""
        if self.block_warps is not None:
            return self.block_warps
        return max((t.warp_end for t in self.tasks), default=0)

    def as_text(self) -> str:
        """The planned kernel, readable: one column per task, one row per step."""
        # Imported here: render depends on this module.
        from ts_ir.render import render_plan_table

        return render_plan_table(self)

    def iter_smem(self) -> Iterator[SmemAllocationSpec]:
        """Every SMEM allocation: each resource's, then the kernel's own (``smem_extra``)."""
        for r in self.resources:
            yield from r.smem
        yield from self.smem_extra


def interleave_lane(task: TaskSpec, resource: str, stride: int) -> int | None:
    """The lane of an interleaved ring ``resource`` that ``task`` works on, or None.

    A task works on lane ``start % stride`` when every pipeline operation it runs on the ring
    lies in a ``domain_loop(start, end, stride)`` with a constant start and step ``stride``
    (so its iterations are the lane's: ``start, start + stride, ...``). Otherwise it has no
    lane. Work calls do not count: they touch the stage the cursor is on.
    """
    lanes: set[int] = set()
    for node, parents in iter_nodes(task.schedule.body):
        if not isinstance(node, Step) or node.resource != resource:
            continue
        if not node.stage.is_pipeline_op:
            continue
        loops = [p for p in parents if isinstance(p, DomainLoop)]
        if not loops:
            return None
        loop = loops[-1]
        if not (
            isinstance(loop.start, ConstBound)
            and isinstance(loop.step, ConstBound)
            and loop.step.value == stride
        ):
            return None
        lanes.add(loop.start.value % stride)
    return lanes.pop() if len(lanes) == 1 else None


def interleave_warp_lanes(task: TaskSpec, resource: str, stride: int) -> tuple[int, ...] | None:
    """The lane of an interleaved ring that each warp of ``task`` works on, or None.

    The rule of the reference's API: a task whose warp count differs from the stride and that
    runs the ring in a lane loop (:func:`interleave_lane`) works on that loop's lane with all
    its warps (a *domain lane*). Otherwise each warp is a lane of its own, its index in the
    task (a *warp lane*: warp ``w`` of the task starts at stage ``w``); every warp runs the
    whole schedule on its lane. A task of more warps than the stride has no warp lanes (two
    of its warps would start on the same lane, one stage apart): None.
    """
    if task.num_warps != stride:
        lane = interleave_lane(task, resource, stride)
        if lane is not None:
            return (lane,) * task.num_warps
    if task.num_warps > stride:
        return None
    return tuple(range(task.num_warps))
