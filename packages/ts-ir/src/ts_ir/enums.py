"""Enumerations shared by every TS layer.

The names and values match the documented public API of the reference framework so that a
kernel written for it keeps working after changing one import line.
"""

from __future__ import annotations

import enum
from typing import Any, NoReturn

from ts_ir.errors import ArgumentError, describe_value

__all__ = [
    "RESERVED_OP_NAMES",
    "SKIP_OP_NAME",
    "PipelineGroupMode",
    "PipelineType",
    "Role",
    "ScheduleStage",
    "SignalingThreads",
    "TileSchedulerType",
    "WorkAttr",
]


def _no_member(cls: type[enum.Enum], value: object) -> NoReturn:
    """``TS-I001`` for ``cls(value)`` when no member has that value."""
    names = ", ".join(repr(m.value) for m in cls)
    raise ArgumentError(
        f"{cls.__name__}(...)",
        f"{value!r:.40} is not a valid {cls.__name__} ({cls.__name__}({value!r:.40}) got "
        f"{describe_value(value)})",
        fix=f"use a member, {cls.__name__}.<name>, or one of the values {names}",
    )


def _flag_missing(cls: type[enum.Flag], value: object) -> Any:
    """Flag lookups: Python's own for ints (combinations), ``TS-I001`` for anything else."""
    if isinstance(value, int):  # True and False too, as Python's own lookups of 1 and 0
        return super(cls, cls)._missing_(value)
    _no_member(cls, value)


class Role(enum.Enum):
    """Which side of a resource a schedule step acts on."""

    PRODUCER = "producer"
    CONSUMER = "consumer"

    @classmethod
    def _missing_(cls, value: object) -> Any:
        _no_member(cls, value)


class ScheduleStage(enum.Enum):
    """The primitive operations a schedule step can perform on a resource.

    The reference's ten, and one of TS's own: ``ConsumerSkip`` (``ring.skip_stage()``) moves a
    consumer task's place in the ring on by one stage without waiting for it or releasing it,
    because another consumer task of the ring waits for and releases that stage (ping-pong math
    warpgroups sharing one operand ring, each reading only its own tiles' stages).
    """

    ConsumerAuxWork = "ConsumerAuxWork"
    ConsumerTryWait = "ConsumerTryWait"
    ConsumerWait = "ConsumerWait"
    ConsumerWork = "ConsumerWork"
    ConsumerRelease = "ConsumerRelease"
    ConsumerSkip = "ConsumerSkip"
    ProducerAuxWork = "ProducerAuxWork"
    ProducerTryAcquire = "ProducerTryAcquire"
    ProducerAcquire = "ProducerAcquire"
    ProducerWork = "ProducerWork"
    ProducerCommit = "ProducerCommit"

    @classmethod
    def _missing_(cls, value: object) -> Any:
        _no_member(cls, value)

    @property
    def role(self) -> Role:
        """The side of the resource this operation belongs to."""
        return Role.PRODUCER if self.value.startswith("Producer") else Role.CONSUMER

    @property
    def is_work(self) -> bool:
        """True for work calls (plain or auxiliary), False for pipeline operations."""
        return self.value.endswith("Work")

    @property
    def is_aux_work(self) -> bool:
        """True for the auxiliary work stages."""
        return self.value.endswith("AuxWork")

    @property
    def is_pipeline_op(self) -> bool:
        """True for acquire/commit/wait/release and their ``try_*`` probes."""
        return not self.is_work

    @property
    def is_try(self) -> bool:
        """True for the non-blocking probes ``try_acquire`` and ``try_wait``."""
        return self in (ScheduleStage.ProducerTryAcquire, ScheduleStage.ConsumerTryWait)

    @property
    def is_skip(self) -> bool:
        """True for ``skip_stage``: the cursor moves on, no barrier is touched."""
        return self is ScheduleStage.ConsumerSkip

    @property
    def op_name(self) -> str:
        """The proxy name of a pipeline operation (``acquire``, ``skip_stage`` ...)."""
        return _OP_NAMES.get(self, "") or (SKIP_OP_NAME if self.is_skip else "")

    @classmethod
    def from_op_name(cls, name: str) -> ScheduleStage:
        """Map a pipeline operation's name (``acquire``, ``wait`` ...) to its stage."""
        for stage, op in _OP_NAMES.items():
            if op == name:
                return stage
        if name == SKIP_OP_NAME:
            return ScheduleStage.ConsumerSkip
        raise KeyError(name)

    def __str__(self) -> str:
        return _SHORT_LABELS[self]


_OP_NAMES: dict[ScheduleStage, str] = {
    ScheduleStage.ProducerTryAcquire: "try_acquire",
    ScheduleStage.ProducerAcquire: "acquire",
    ScheduleStage.ProducerCommit: "commit",
    ScheduleStage.ConsumerTryWait: "try_wait",
    ScheduleStage.ConsumerWait: "wait",
    ScheduleStage.ConsumerRelease: "release",
}

# Arrows show the direction of data relative to the resource: producers push into it (->),
# consumers pull out of it (<-).
_SHORT_LABELS: dict[ScheduleStage, str] = {
    ScheduleStage.ConsumerAuxWork: "<-ConsAux",
    ScheduleStage.ConsumerTryWait: "<-ConsTryWai",
    ScheduleStage.ConsumerWait: "<-ConsWai",
    ScheduleStage.ConsumerWork: "<-ConsWrk",
    ScheduleStage.ConsumerRelease: "<-ConsRel",
    ScheduleStage.ConsumerSkip: "<-ConsSkip",
    ScheduleStage.ProducerAuxWork: "ProdAux->",
    ScheduleStage.ProducerTryAcquire: "ProdTryAcq->",
    ScheduleStage.ProducerAcquire: "ProdAcq->",
    ScheduleStage.ProducerWork: "ProdWrk->",
    ScheduleStage.ProducerCommit: "ProdCmt->",
}

RESERVED_OP_NAMES: frozenset[str] = frozenset(_OP_NAMES.values())
"""Proxy names that are pipeline operations and therefore cannot name work methods."""

SKIP_OP_NAME = "skip_stage"
"""The proxy name of ``ConsumerSkip``. Not reserved (the reference has no such operation, so a
reference program may name a work method so): a resource's own work method of that name wins."""


class WorkAttr(enum.IntFlag):
    """Verification-visible attributes of a work callback.

    ``AUXILIARY`` marks helper work that moves no payload (descriptor setup, prefetch,
    bookkeeping); the verifier lets it run outside a pipeline bracket.

    The asynchronous-read attributes describe work whose reads of a stage outlive the call
    (Hopper WGMMA reads SMEM operands until ``wgmma.wait_group``; a TMA store reads SMEM until
    ``cp.async.bulk.wait_group.read``). The verifier rejects a ``release`` or ``commit`` of a
    stage that such a read may still use:

    * ``ASYNC_READ`` — the work starts an asynchronous read of the current stage;
    * ``ASYNC_WAIT_ALL`` — the work waits until every asynchronous read has finished
      (``wait_group 0``);
    * ``ASYNC_WAIT_PRIOR`` — the work waits until all but the most recent asynchronous read
      have finished (``wait_group 1``, the software-pipelined GEMM mainloop).

    The grid-dependency attributes describe programmatic dependent launch (PDL) between two
    kernels on one stream, so that ts-verify can check where the waits are:

    * ``GRID_WAIT`` — the work waits until the previous kernel has finished and its memory is
      visible (``griddepcontrol.wait``); a read of that kernel's output must come after it;
    * ``GRID_LAUNCH`` — the work lets the next kernel start launching
      (``griddepcontrol.launch_dependents``).

    The tensor-memory attributes (Blackwell) mark where a task's TMEM lifetime begins and ends,
    so that ts-verify can check every use lies inside it:

    * ``TMEM_ALLOC`` — the work allocates the kernel's TMEM (``tcgen05.alloc`` and the
      relinquish of the allocation permit);
    * ``TMEM_DEALLOC`` — the work frees it (``tcgen05.dealloc``).

    Each attribute is used alone.
    """

    NONE = 0
    AUXILIARY = 1
    ASYNC_READ = 2
    ASYNC_WAIT_ALL = 4
    ASYNC_WAIT_PRIOR = 8
    GRID_WAIT = 16
    GRID_LAUNCH = 32
    TMEM_ALLOC = 64
    TMEM_DEALLOC = 128

    @classmethod
    def _missing_(cls, value: object) -> Any:
        return _flag_missing(cls, value)

    @classmethod
    def is_valid_combination(cls, value: WorkAttr) -> bool:
        """Return True when ``value`` is a flag set the verifier understands."""
        if not isinstance(value, (cls, int)) or isinstance(value, bool):
            return False
        return int(value) in {0, 1, 2, 4, 8, 16, 32, 64, 128}

    @classmethod
    def validate(cls, value: WorkAttr, field_name: str) -> None:
        """Raise if ``value`` is not a supported work-attribute flag set.

        Raises:
            ts_ir.errors.ArgumentError: ``TS-I001`` (a ``ValueError`` and a ``TypeError``),
                naming ``field_name`` and the caller's line.
        """
        fix = (
            "use one of WorkAttr.NONE, AUXILIARY, ASYNC_READ, ASYNC_WAIT_ALL, ASYNC_WAIT_PRIOR, "
            "GRID_WAIT, GRID_LAUNCH, TMEM_ALLOC, TMEM_DEALLOC"
        )
        if not isinstance(value, int) or isinstance(value, bool):
            raise ArgumentError(
                field_name,
                f"{field_name} must be a WorkAttr, got {type(value).__name__} ({value!r:.40})",
                fix=fix,
            )
        if not cls.is_valid_combination(value):
            raise ArgumentError(
                field_name,
                f"{field_name}={int(value)} is not a supported WorkAttr combination",
                fix=fix,
            )

    def is_auxiliary(self) -> bool:
        """Return True when auxiliary-work semantics are requested."""
        return bool(self & WorkAttr.AUXILIARY)


class PipelineType(enum.Enum):
    """The barrier protocol of a pipeline, named ``<Producer><Consumer>``."""

    AsyncAsync = "AsyncAsync"
    TmaAsync = "TmaAsync"
    TmaWgmma = "TmaWgmma"
    TmaUmma = "TmaUmma"
    UmmaAsync = "UmmaAsync"
    AsyncUmma = "AsyncUmma"
    UmmaUmma = "UmmaUmma"
    ClcFetchAsync = "ClcFetchAsync"

    @classmethod
    def _missing_(cls, value: object) -> Any:
        _no_member(cls, value)

    @property
    def needs_blackwell(self) -> bool:
        """True for protocols that rely on UMMA/TMEM or CLC (sm_100a and later)."""
        return "Umma" in self.value or self is PipelineType.ClcFetchAsync

    @property
    def producer_is_tma(self) -> bool:
        """True when the producer completes the full barrier with TMA transaction bytes."""
        return self.value.startswith("Tma")

    @property
    def producer_is_umma(self) -> bool:
        """True when the producer signals with ``tcgen05.commit`` (Blackwell UMMA).

        A commit arrives on the full barrier once, from one elected thread of each warp that
        executes it, when the MMAs issued before it have completed.
        """
        return self.value.startswith("Umma")

    @property
    def consumer_is_umma(self) -> bool:
        """True when the consumer releases with ``tcgen05.commit`` (one arrival per warp)."""
        return self.value.endswith("Umma")

    @property
    def producer_expects_tx(self) -> bool:
        """True when the producer arms the full barrier with transaction bytes.

        TMA loads and CLC responses (``ClcFetchAsync``: the 16-byte answer of a
        ``clusterlaunchcontrol.try_cancel``) complete the phase with those bytes; the
        producer's own arrival is one elected thread's ``arrive.expect_tx``.
        """
        return self.producer_is_tma or self is PipelineType.ClcFetchAsync

    @property
    def consumer_reads_async(self) -> bool:
        """True when the consumer's work reads a stage asynchronously (Hopper WGMMA).

        A ``TmaWgmma`` stage is read by ``wgmma.mma_async`` after the work call returns: the
        stage may be released only once a ``wgmma.wait_group`` has retired that MMA.
        """
        return self is PipelineType.TmaWgmma


class SignalingThreads(enum.IntFlag):
    """Which threads of a task execute its barrier operations."""

    All = 1
    CtaLeader = 2
    TaskWarpLeader = 4

    @classmethod
    def _missing_(cls, value: object) -> Any:
        return _flag_missing(cls, value)

    @classmethod
    def is_valid_combination(cls, value: SignalingThreads) -> bool:
        """``All`` alone, or any non-empty combination of the leader flags."""
        if not isinstance(value, int) or isinstance(value, bool):
            return False
        v = int(value)
        if v == int(cls.All):
            return True
        leaders = int(cls.CtaLeader) | int(cls.TaskWarpLeader)
        return v != 0 and v & ~leaders == 0

    @classmethod
    def validate(cls, value: SignalingThreads, field_name: str) -> None:
        """Raise if ``value`` is not a legal combination.

        Raises:
            ts_ir.errors.ArgumentError: ``TS-I001`` (a ``ValueError``), naming ``field_name``
                and the caller's line.
        """
        if not cls.is_valid_combination(value):
            raise ArgumentError(
                field_name,
                f"{field_name}={value!r:.60} is not a valid SignalingThreads value: use All, "
                "CtaLeader, TaskWarpLeader or CtaLeader | TaskWarpLeader (All cannot be "
                "combined)",
                fix="pass a SignalingThreads member, e.g. SignalingThreads.All",
            )

    def has_cta_leader(self) -> bool:
        """True when the CTA leader thread signals."""
        return bool(self & SignalingThreads.CtaLeader)

    def has_task_warp_leader(self) -> bool:
        """True when only the first warp of the task signals."""
        return bool(self & SignalingThreads.TaskWarpLeader)

    def __str__(self) -> str:
        names = [m.name for m in SignalingThreads if m.name and self & m]
        return "|".join(names) if names else "0"


class TileSchedulerType(enum.Enum):
    """Persistent work-tile scheduler flavour."""

    StaticPersistent = "StaticPersistent"
    ClcDynamicPersistent = "ClcDynamicPersistent"
    AtomicDynamicPersistent = "AtomicDynamicPersistent"

    @classmethod
    def _missing_(cls, value: object) -> Any:
        _no_member(cls, value)


class PipelineGroupMode(enum.Enum):
    """Topology of a pipeline group: N to 1 merge, 1 to N fork, or fused N to 1."""

    Merge = "Merge"
    Fork = "Fork"
    FusedMerge = "FusedMerge"

    @classmethod
    def _missing_(cls, value: object) -> Any:
        _no_member(cls, value)
