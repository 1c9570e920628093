"""``PipelineConfig``: the immutable description of a resource's mbarrier pipeline.

Build one with a factory, one per pipeline type::

    cfg = PipelineConfig.create_tma_async_pipeline_cfg(
        num_stages=4,
        producer_group=CooperativeGroup(Agent.Thread, 1),
        consumer_group=CooperativeGroup(Agent.Thread, 256),
        num_bytes=128 * 64 * 2,
    )

The fields are those of the documented API, in the documented order, and each factory takes the
reference's parameters in the reference's order. Hopper lowering supports ``AsyncAsync``,
``TmaAsync`` and ``TmaWgmma`` with the ``advance_on_*`` options, ``All`` / ``TaskWarpLeader``
/ ``CtaLeader`` signaling (also over clusters) and interleave strides; an option that is not
lowered must keep its default, and setting it raises
:class:`~ts_runtime.errors.UnsupportedFeatureError` at construction (not a silent wrong kernel
later). The Blackwell pipeline types (UMMA, CLC) raise
:class:`~ts_runtime.errors.UnsupportedOnTarget` from their factories when the target is sm_90.

This module does not need the CuTe DSL: ``producer_group`` / ``consumer_group`` are read by
their ``agent`` and ``size`` (a ``cutlass.pipeline.CooperativeGroup`` or a
:class:`ts_ir.CooperativeGroupSpec`), so a kernel can be planned and verified without it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

from ts_ir import CooperativeGroupSpec, PipelineSpec, PipelineType, SignalingThreads
from ts_ir.errors import describe_value, is_int
from ts_ir.plan import MAX_ARRIVALS
from ts_ir.smem import DEFAULT_SMEM_CAPACITY
from ts_runtime._arguments import argument_error, require_bool, require_int
from ts_runtime.errors import RuntimeConfigError, UnsupportedFeatureError, UnsupportedOnTarget
from ts_runtime.target import current_target, is_blackwell_or_later
from ts_verify import HOPPER_ALTERNATIVE

__all__ = ["MAX_STAGES", "InterleaveStride", "PipelineConfig", "default_pipeline_op"]

MAX_STAGES = DEFAULT_SMEM_CAPACITY // 16
"""The most stages a ring can have (its mbarriers, 16 bytes a stage, must fit in SMEM)."""

InterleaveStride = int | tuple[int, int, int, int]
"""One stride for every role, or (acquire, commit, wait, release)."""

_HOPPER_TYPES = (PipelineType.AsyncAsync, PipelineType.TmaAsync, PipelineType.TmaWgmma)

# What to use instead of a Blackwell-only pipeline type on Hopper (ts-verify says it too).
_HOPPER_ALTERNATIVE = HOPPER_ALTERNATIVE


def default_pipeline_op() -> Any:
    """``cutlass.pipeline.PipelineOp.AsyncThread`` (``"AsyncThread"`` without the DSL)."""
    from ts_runtime._dsl import async_thread_op

    return async_thread_op()


def _op_name(op: object) -> str:
    return str(getattr(op, "name", op))


def _group_size(group: object, side: str) -> int:
    size = getattr(group, "size", None)
    if not is_int(size) or not 1 <= size <= MAX_ARRIVALS:
        raise argument_error(
            f"PipelineConfig.{side}_group must be a cooperative group with an int size in "
            f"[1, {MAX_ARRIVALS}] (the mbarrier arrival count), got {describe_value(group)}",
            fix=f"pass cutlass.pipeline.CooperativeGroup(Agent.Thread, n) as {side}_group",
        )
    return size


def _group_spec(group: object, side: str) -> CooperativeGroupSpec:
    if isinstance(group, CooperativeGroupSpec):
        return group
    agent = str(getattr(group, "agent", "thread")).lower()
    return CooperativeGroupSpec("warp" if "warp" in agent else "thread", _group_size(group, side))


def _ints(value: object, n: int, *, low: int, high: int = 2**31 - 1) -> bool:
    """True for a tuple or list of ``n`` ints (not bools) in ``[low, high]``."""
    return (
        isinstance(value, (tuple, list))
        and len(value) == n
        and all(is_int(v) and low <= v <= high for v in value)
    )


def _signaling(value: object, name: str) -> SignalingThreads:
    """``value`` as a SignalingThreads combination, or a typed error naming ``name``."""
    if not SignalingThreads.is_valid_combination(value):  # type: ignore[arg-type]
        raise argument_error(
            f"PipelineConfig.{name}={value!r:.60} is not a valid SignalingThreads value: use "
            "All, CtaLeader, TaskWarpLeader or CtaLeader | TaskWarpLeader (All cannot be "
            "combined)",
            fix=f"pass {name}=SignalingThreads.All (or a leader flag)",
        )
    return SignalingThreads(cast(int, value))


@dataclasses.dataclass(frozen=True)
class PipelineConfig:
    """Immutable pipeline descriptor (fields in the documented order).

    Attributes:
        num_stages: Ring stages (a full and an empty mbarrier each).
        num_bytes: Transaction bytes per stage (the bytes a TMA producer's loads deliver).
        producer_group: Arrivals that complete a full barrier (``CooperativeGroup``).
        consumer_group: Arrivals that complete an empty barrier (``CooperativeGroup``).
        pipeline_type: The ``<Producer><Consumer>`` barrier protocol.
        barrier_ptr: Preset barrier storage (not supported yet: must be None).
        cta_layout_vmnk: Cluster layout ``(1, CM, CN, 1)`` for TMA multicast (None: one CTA).
        producer_signaling_threads: Which producer threads commit: ``All`` threads of the
            task, ``TaskWarpLeader`` (only the task's first warp: size the group for one warp
            per task) or ``CtaLeader`` (the leader CTA of each CTA group signals: the group is
            the ``V`` mode of ``cta_layout_vmnk``, the CTA pair of a Blackwell 2-CTA MMA; a
            Hopper cluster is ``(1, CM, CN, 1)``, so every CTA leads its own group and
            signals its own barriers, with the same counts as ``All``).
        consumer_signaling_threads: Which consumer threads release (the same choices).
        consumer_wait_signaling_threads: Which consumer threads wait (None or ``All``: every
            thread of the task waits).
        umma_consumer_producer_op: Producer op of UMMA-consumer pipelines (``AsyncThread``).
        advance_on_wait: Advance the consumer's stage at ``wait`` rather than at ``release``
            (so several waited stages can be held before releasing the oldest). TS derives this
            from the schedule: a consumer that waits again before releasing gets separate wait
            and release cursors with or without the flag; the flag is accepted for
            compatibility and changes nothing else.
        advance_on_acquire: The same for the producer: advance at ``acquire`` rather than at
            ``commit`` (several acquired stages held before committing the oldest).
        num_bytes_per_warp_per_cta: Per-warp transaction bytes (not supported yet: None).
        mcast_mode_mn: Multicast mode (not supported yet: ``(1, 1)``).
        interleave_stride: Interleaved lanes: with stride ``s`` the ring's stages are dealt
            out to ``s`` lanes (lane ``l`` owns stages ``l, l + s, ...``) and every cursor
            moves ``s`` stages at a time. A task whose loop is ``domain_loop(l, end, s)``
            works on lane ``l``; any other task (of at most ``s`` warps) works one lane per
            warp, warp ``w`` on lane ``w`` (the reference's rule). A 4-tuple
            ``(acquire, commit, wait, release)`` gives each side its own stride: ``(p, p, c,
            c)``, e.g. ``(2, 2, 1, 1)`` for two producer lanes and a consumer that reads every
            stage in order (different strides within one side are wrong, a
            ``RuntimeConfigError``: a commit or release would land on another stage than the
            acquire or wait it closes).
        async_producer_op: Producer op of async producers (``AsyncThread``).
    """

    num_stages: int
    num_bytes: int
    producer_group: Any
    consumer_group: Any
    pipeline_type: PipelineType
    barrier_ptr: Any = None
    cta_layout_vmnk: Any = None
    producer_signaling_threads: SignalingThreads = SignalingThreads.All
    consumer_signaling_threads: SignalingThreads = SignalingThreads.All
    consumer_wait_signaling_threads: SignalingThreads | None = None
    umma_consumer_producer_op: Any = dataclasses.field(default_factory=default_pipeline_op)
    advance_on_wait: bool = False
    advance_on_acquire: bool = False
    num_bytes_per_warp_per_cta: int | None = None
    mcast_mode_mn: tuple[int, int] = (1, 1)
    interleave_stride: InterleaveStride = 1
    async_producer_op: Any = dataclasses.field(default_factory=default_pipeline_op)

    def __post_init__(self) -> None:
        ptype = self.pipeline_type
        if not isinstance(ptype, PipelineType):
            try:
                ptype = PipelineType(str(getattr(ptype, "value", ptype)))
            except ValueError:
                raise argument_error(
                    f"PipelineConfig.pipeline_type={self.pipeline_type!r:.60} is not a "
                    "PipelineType",
                    fix="use a PipelineConfig.create_*_pipeline_cfg factory",
                ) from None
            object.__setattr__(self, "pipeline_type", ptype)
        require_int(
            self.num_stages,
            "PipelineConfig.num_stages",
            low=1,
            high=MAX_STAGES,
            why="16 bytes of mbarriers per stage must fit in shared memory",
        )
        require_int(
            self.num_bytes,
            "PipelineConfig.num_bytes",
            low=0,
            high=MAX_ARRIVALS,
            why="the transaction bytes one stage's full barrier expects (mbarrier tx-count)",
        )
        if ptype.producer_is_tma and self.num_bytes == 0:
            raise argument_error(
                f"a {ptype.value} pipeline needs num_bytes > 0: the full barrier of a stage "
                "completes when the TMA loads have delivered that many bytes",
                fix="pass num_bytes=<bytes one stage's TMA loads write>",
            )
        _group_size(self.producer_group, "producer")
        _group_size(self.consumer_group, "consumer")
        for name in ("producer_signaling_threads", "consumer_signaling_threads"):
            object.__setattr__(self, name, _signaling(getattr(self, name), name))
        wait = self.consumer_wait_signaling_threads
        if wait is not None:
            object.__setattr__(
                self,
                "consumer_wait_signaling_threads",
                _signaling(wait, "consumer_wait_signaling_threads"),
            )
        for name in ("advance_on_wait", "advance_on_acquire"):
            require_bool(getattr(self, name), f"PipelineConfig.{name}")
        self._check_shapes()
        self._check_defaults()

    def _check_shapes(self) -> None:
        """``mcast_mode_mn``, ``interleave_stride`` and ``cta_layout_vmnk`` have their shapes."""
        mcast = self.mcast_mode_mn
        if not _ints(mcast, 2, low=1):
            raise argument_error(
                f"PipelineConfig.mcast_mode_mn must be a pair of ints >= 1, got "
                f"{describe_value(mcast)}",
                fix="leave mcast_mode_mn at (1, 1)",
            )
        stride = self.interleave_stride
        if not (is_int(stride) and 1 <= stride <= MAX_STAGES) and not _ints(
            stride, 4, low=1, high=MAX_STAGES
        ):
            raise argument_error(
                f"PipelineConfig.interleave_stride must be an int >= 1 or a 4-tuple of them "
                f"(acquire, commit, wait, release), got {describe_value(stride)}",
                fix="pass interleave_stride=1 (no interleaving) or a stride dividing num_stages",
            )
        layout = self.cta_layout_vmnk
        if layout is not None and not hasattr(layout, "shape") and not _ints(layout, 4, low=1):
            raise argument_error(
                f"PipelineConfig.cta_layout_vmnk must be None, (1, CM, CN, 1) or a static "
                f"cute.Layout of that shape, got {describe_value(layout)}",
                fix="pass cta_layout_vmnk=(1, CM, CN, 1) with the cluster shape of the launch",
                cls=UnsupportedFeatureError,
            )

    def _check_defaults(self) -> None:
        """Options not lowered yet must keep their default."""
        unsupported: list[tuple[str, object, object]] = []
        if self.barrier_ptr is not None:
            unsupported.append(("barrier_ptr", self.barrier_ptr, None))
        if self.cta_layout_vmnk is not None:
            self.cluster_mn  # noqa: B018  (raises for a layout that is not (1, CM, CN, 1))
        wait = self.consumer_wait_signaling_threads
        if wait is not None and wait != SignalingThreads.All:
            unsupported.append(("consumer_wait_signaling_threads", wait, "None or All"))
        for name in ("umma_consumer_producer_op", "async_producer_op"):
            if _op_name(getattr(self, name)) != "AsyncThread":
                unsupported.append((name, getattr(self, name), "PipelineOp.AsyncThread"))
        if self.num_bytes_per_warp_per_cta is not None:
            unsupported.append(
                ("num_bytes_per_warp_per_cta", self.num_bytes_per_warp_per_cta, None)
            )
        if tuple(self.mcast_mode_mn) != (1, 1):
            unsupported.append(("mcast_mode_mn", self.mcast_mode_mn, (1, 1)))
        acquire, commit, wait_stride, release = self.interleave_strides
        if acquire != commit or wait_stride != release:
            # Both cursors of a side start on the task's lane l, so its j-th acquire is stage
            # l + j * acquire and its j-th commit l + j * commit: from the second bracket on, a
            # commit (release) lands on a stage the task did not fill (read), while the one it
            # did is never signalled by it. Wrong for every run of two brackets or more.
            side, a, b = (
                ("acquire and commit", acquire, commit)
                if acquire != commit
                else ("wait and release", wait_stride, release)
            )
            raise argument_error(
                f"PipelineConfig.interleave_stride={self.interleave_stride!r}: {side} move by "
                f"different strides ({a} and {b}); a task's second {side.split()[-1]} would "
                f"signal stage l + {b} while its second {side.split()[0]} opened stage l + {a}, "
                "so a stage is signalled before (or without) being filled or read (a race), "
                "and the one opened is never signalled (a hang)",
                fix="use one stride per side: interleave_stride=(p, p, c, c), or one stride "
                "for every role",
            )
        for name, stride in (("producer", acquire), ("consumer", wait_stride)):
            if self.num_stages % stride:
                raise argument_error(
                    f"PipelineConfig.interleave_stride={self.interleave_stride!r}: the "
                    f"{name} stride {stride} must divide num_stages={self.num_stages}: each "
                    "lane owns every stride-th stage",
                    fix="use strides that divide the number of stages",
                )
        if unsupported:
            name, value, default = unsupported[0]
            raise argument_error(
                f"PipelineConfig.{name}={value!r} is not supported by this TS version (only "
                f"{default!r}); the Hopper lowering would ignore it and build a different "
                "kernel than described",
                fix=f"leave {name} at its default",
                cls=UnsupportedFeatureError,
            )

    # -- interleave strides (documented properties) -------------------------------------------

    @property
    def interleave_strides(self) -> tuple[int, int, int, int]:
        """(acquire, commit, wait, release) strides after normalisation."""
        s = self.interleave_stride
        if isinstance(s, int):
            return (s, s, s, s)
        t = tuple(s)
        if len(t) != 4 or not all(is_int(x) for x in t):
            raise RuntimeConfigError(
                f"PipelineConfig.interleave_stride={s!r} must be an int or a 4-tuple of ints"
            )
        return (t[0], t[1], t[2], t[3])

    @property
    def producer_acquire_interleave_stride(self) -> int:
        """Stride of producer acquires."""
        return self.interleave_strides[0]

    @property
    def producer_commit_interleave_stride(self) -> int:
        """Stride of producer commits."""
        return self.interleave_strides[1]

    @property
    def consumer_wait_interleave_stride(self) -> int:
        """Stride of consumer waits."""
        return self.interleave_strides[2]

    @property
    def consumer_release_interleave_stride(self) -> int:
        """Stride of consumer releases."""
        return self.interleave_strides[3]

    @property
    def max_interleave_stride(self) -> int:
        """The largest per-role stride."""
        return max(self.interleave_strides)

    @property
    def has_interleaved_stride(self) -> bool:
        """True when any role's stride is above 1."""
        return self.max_interleave_stride > 1

    # -- IR ----------------------------------------------------------------------------------

    @property
    def barrier_bytes(self) -> int:
        """SMEM bytes of the ring's mbarriers (16 per stage)."""
        return self.num_stages * 16

    @property
    def cluster_mn(self) -> tuple[int, int]:
        """The cluster ``(CM, CN)`` of ``cta_layout_vmnk`` (``(1, 1)`` without one).

        ``cta_layout_vmnk`` is ``(1, CM, CN, 1)`` as a tuple of ints or a static
        ``cute.Layout`` of that shape.

        Raises:
            UnsupportedFeatureError: Another shape (a V or L mode other than 1, or a dynamic
                shape).
        """
        layout = self.cta_layout_vmnk
        if layout is None:
            return (1, 1)
        shape = getattr(layout, "shape", layout)
        try:
            v, m, n, ell = (int(x) for x in shape)
        except (TypeError, ValueError):
            v = m = n = ell = -1
        if v != 1 or ell != 1 or m < 1 or n < 1:
            raise argument_error(
                f"PipelineConfig.cta_layout_vmnk={layout!r} is not supported: only a static "
                "(1, CM, CN, 1) cluster layout is lowered",
                fix="pass cta_layout_vmnk=(1, CM, CN, 1) with the cluster shape of the launch",
                cls=UnsupportedFeatureError,
            )
        return (m, n)

    def to_spec(self) -> PipelineSpec:
        """The pipeline as a :class:`ts_ir.PipelineSpec` (what verification and lowering read)."""
        return PipelineSpec(
            type=self.pipeline_type,
            stages=self.num_stages,
            bytes_per_stage=self.num_bytes,
            producer_group=_group_spec(self.producer_group, "producer"),
            consumer_group=_group_spec(self.consumer_group, "consumer"),
            producer_signaling=self.producer_signaling_threads,
            consumer_signaling=self.consumer_signaling_threads,
            cluster_mn=self.cluster_mn,
            interleave=self.max_interleave_stride,
            strides=(None if len(set(self.interleave_strides)) == 1 else self.interleave_strides),
        )

    # -- factories ---------------------------------------------------------------------------

    @staticmethod
    def _make(
        ptype: PipelineType,
        num_stages: int,
        num_bytes: int,
        producer_group: Any,
        consumer_group: Any,
        **fields: Any,
    ) -> PipelineConfig:
        if ptype not in _HOPPER_TYPES:
            target = current_target()
            if not is_blackwell_or_later(target):
                factory = _factory_name(ptype)
                raise UnsupportedOnTarget(
                    f"PipelineConfig.{factory}: the {ptype.value} pipeline needs Blackwell "
                    f"(sm_100a: UMMA/TMEM or CLC), but the target is {target}",
                    pipeline_type=ptype.value,
                    target=target,
                    fix=f"on Hopper use {_HOPPER_ALTERNATIVE[ptype]}; or compile for sm_100a "
                    "(CUTE_DSL_ARCH=sm_100a)",
                )
        known = {f.name for f in dataclasses.fields(PipelineConfig)}
        unknown = sorted(set(fields) - known)
        if unknown:
            raise argument_error(
                f"PipelineConfig.{_factory_name(ptype)}() got an unknown option `{unknown[0]}`",
                fix="pass only PipelineConfig fields: " + ", ".join(sorted(known)),
            )
        return PipelineConfig(
            num_stages, num_bytes, producer_group, consumer_group, ptype, **fields
        )

    # The factories take the reference's parameters, in the reference's order (a program may
    # pass them positionally); keyword-only ``options`` are further PipelineConfig fields.

    @staticmethod
    def create_async_async_pipeline_cfg(
        num_stages: int,
        producer_group: Any,
        consumer_group: Any,
        cta_layout_vmnk: Any = None,
        producer_signaling_threads: SignalingThreads = SignalingThreads.All,
        consumer_signaling_threads: SignalingThreads = SignalingThreads.All,
        barrier_ptr: Any = None,
        producer_op: Any = None,
        advance_on_acquire: bool = False,
        interleave_stride: InterleaveStride = 1,
        **options: Any,
    ) -> PipelineConfig:
        """An ``AsyncAsync`` pipeline: threads arrive on both barriers (``PipelineAsync``)."""
        return PipelineConfig._make(
            PipelineType.AsyncAsync,
            num_stages,
            options.pop("num_bytes", 0),
            producer_group,
            consumer_group,
            cta_layout_vmnk=cta_layout_vmnk,
            producer_signaling_threads=producer_signaling_threads,
            consumer_signaling_threads=consumer_signaling_threads,
            barrier_ptr=barrier_ptr,
            async_producer_op=default_pipeline_op() if producer_op is None else producer_op,
            advance_on_acquire=advance_on_acquire,
            interleave_stride=interleave_stride,
            **options,
        )

    @staticmethod
    def create_tma_async_pipeline_cfg(
        num_stages: int,
        num_bytes: int,
        producer_group: Any,
        consumer_group: Any,
        cta_layout_vmnk: Any = None,
        producer_signaling_threads: SignalingThreads = SignalingThreads.All,
        consumer_signaling_threads: SignalingThreads = SignalingThreads.All,
        barrier_ptr: Any = None,
        advance_on_wait: bool = False,
        interleave_stride: InterleaveStride = 1,
        num_bytes_per_warp_per_cta: int | None = None,
        **options: Any,
    ) -> PipelineConfig:
        """A ``TmaAsync`` pipeline: TMA loads complete the full barrier with ``num_bytes``."""
        return PipelineConfig._make(
            PipelineType.TmaAsync,
            num_stages,
            num_bytes,
            producer_group,
            consumer_group,
            cta_layout_vmnk=cta_layout_vmnk,
            producer_signaling_threads=producer_signaling_threads,
            consumer_signaling_threads=consumer_signaling_threads,
            barrier_ptr=barrier_ptr,
            advance_on_wait=advance_on_wait,
            interleave_stride=interleave_stride,
            num_bytes_per_warp_per_cta=num_bytes_per_warp_per_cta,
            **options,
        )

    @staticmethod
    def create_tma_wgmma_pipeline_cfg(
        num_stages: int,
        num_bytes: int,
        producer_group: Any,
        consumer_group: Any,
        cta_layout_vmnk: Any = None,
        producer_signaling_threads: SignalingThreads = SignalingThreads.All,
        consumer_signaling_threads: SignalingThreads = SignalingThreads.All,
        barrier_ptr: Any = None,
        advance_on_wait: bool = False,
        interleave_stride: InterleaveStride = 1,
        **options: Any,
    ) -> PipelineConfig:
        """A ``TmaWgmma`` pipeline (Hopper; TS's own): TMA loads feed ``wgmma`` warpgroups.

        The parameters are ``create_tma_async_pipeline_cfg``'s. The barrier protocol is
        ``TmaAsync``'s. What differs is the consumer: its work reads the stage asynchronously,
        so ts-verify requires a ``WorkAttr.ASYNC_WAIT_ALL`` / ``ASYNC_WAIT_PRIOR`` work call
        (``wgmma.wait_group``) that retires the MMA before each ``release()`` (TS-V113). A
        software-pipelined main loop releases the previous stage after ``wgmma.wait_group 1``.
        """
        return PipelineConfig._make(
            PipelineType.TmaWgmma,
            num_stages,
            num_bytes,
            producer_group,
            consumer_group,
            cta_layout_vmnk=cta_layout_vmnk,
            producer_signaling_threads=producer_signaling_threads,
            consumer_signaling_threads=consumer_signaling_threads,
            barrier_ptr=barrier_ptr,
            advance_on_wait=advance_on_wait,
            interleave_stride=interleave_stride,
            **options,
        )

    @staticmethod
    def create_tma_umma_pipeline_cfg(
        num_stages: int,
        num_bytes: int,
        producer_group: Any,
        consumer_group: Any,
        cta_layout_vmnk: Any = None,
        producer_signaling_threads: SignalingThreads = SignalingThreads.All,
        consumer_signaling_threads: SignalingThreads = SignalingThreads.All,
        barrier_ptr: Any = None,
        advance_on_wait: bool = False,
        interleave_stride: InterleaveStride = 1,
        mcast_mode_mn: tuple[int, int] = (1, 1),
        num_bytes_per_warp_per_cta: int | None = None,
        **options: Any,
    ) -> PipelineConfig:
        """A ``TmaUmma`` pipeline (Blackwell only)."""
        return PipelineConfig._make(
            PipelineType.TmaUmma,
            num_stages,
            num_bytes,
            producer_group,
            consumer_group,
            cta_layout_vmnk=cta_layout_vmnk,
            producer_signaling_threads=producer_signaling_threads,
            consumer_signaling_threads=consumer_signaling_threads,
            barrier_ptr=barrier_ptr,
            advance_on_wait=advance_on_wait,
            interleave_stride=interleave_stride,
            mcast_mode_mn=mcast_mode_mn,
            num_bytes_per_warp_per_cta=num_bytes_per_warp_per_cta,
            **options,
        )

    @staticmethod
    def create_umma_async_pipeline_cfg(
        num_stages: int,
        producer_group: Any,
        consumer_group: Any,
        cta_layout_vmnk: Any = None,
        producer_signaling_threads: SignalingThreads = SignalingThreads.All,
        consumer_signaling_threads: SignalingThreads = SignalingThreads.All,
        barrier_ptr: Any = None,
        interleave_stride: InterleaveStride = 1,
        **options: Any,
    ) -> PipelineConfig:
        """A ``UmmaAsync`` pipeline (Blackwell only)."""
        return PipelineConfig._make(
            PipelineType.UmmaAsync,
            num_stages,
            options.pop("num_bytes", 0),
            producer_group,
            consumer_group,
            cta_layout_vmnk=cta_layout_vmnk,
            producer_signaling_threads=producer_signaling_threads,
            consumer_signaling_threads=consumer_signaling_threads,
            barrier_ptr=barrier_ptr,
            interleave_stride=interleave_stride,
            **options,
        )

    @staticmethod
    def create_async_umma_pipeline_cfg(
        num_stages: int,
        producer_group: Any,
        consumer_group: Any,
        cta_layout_vmnk: Any = None,
        producer_signaling_threads: SignalingThreads = SignalingThreads.All,
        consumer_signaling_threads: SignalingThreads = SignalingThreads.All,
        consumer_wait_signaling_threads: SignalingThreads | None = None,
        producer_op: Any = None,
        barrier_ptr: Any = None,
        advance_on_wait: bool = False,
        advance_on_acquire: bool = False,
        interleave_stride: InterleaveStride = 1,
        **options: Any,
    ) -> PipelineConfig:
        """An ``AsyncUmma`` pipeline (Blackwell only)."""
        return PipelineConfig._make(
            PipelineType.AsyncUmma,
            num_stages,
            options.pop("num_bytes", 0),
            producer_group,
            consumer_group,
            cta_layout_vmnk=cta_layout_vmnk,
            producer_signaling_threads=producer_signaling_threads,
            consumer_signaling_threads=consumer_signaling_threads,
            consumer_wait_signaling_threads=consumer_wait_signaling_threads,
            umma_consumer_producer_op=(
                default_pipeline_op() if producer_op is None else producer_op
            ),
            barrier_ptr=barrier_ptr,
            advance_on_wait=advance_on_wait,
            advance_on_acquire=advance_on_acquire,
            interleave_stride=interleave_stride,
            **options,
        )

    @staticmethod
    def create_umma_umma_pipeline_cfg(
        num_stages: int,
        producer_group: Any,
        consumer_group: Any,
        cta_layout_vmnk: Any = None,
        producer_signaling_threads: SignalingThreads = SignalingThreads.All,
        consumer_signaling_threads: SignalingThreads = SignalingThreads.All,
        barrier_ptr: Any = None,
        **options: Any,
    ) -> PipelineConfig:
        """A ``UmmaUmma`` pipeline (Blackwell only)."""
        return PipelineConfig._make(
            PipelineType.UmmaUmma,
            num_stages,
            options.pop("num_bytes", 0),
            producer_group,
            consumer_group,
            cta_layout_vmnk=cta_layout_vmnk,
            producer_signaling_threads=producer_signaling_threads,
            consumer_signaling_threads=consumer_signaling_threads,
            barrier_ptr=barrier_ptr,
            **options,
        )

    @staticmethod
    def create_clc_fetch_async_pipeline_cfg(
        num_stages: int,
        num_bytes: int,
        producer_group: Any,
        consumer_group: Any,
        cta_layout_vmnk: Any = None,
        producer_signaling_threads: SignalingThreads = SignalingThreads.CtaLeader,
        consumer_signaling_threads: SignalingThreads = SignalingThreads.All,
        barrier_ptr: Any = None,
        **options: Any,
    ) -> PipelineConfig:
        """A ``ClcFetchAsync`` pipeline (Blackwell only: cluster launch control)."""
        return PipelineConfig._make(
            PipelineType.ClcFetchAsync,
            num_stages,
            num_bytes,
            producer_group,
            consumer_group,
            cta_layout_vmnk=cta_layout_vmnk,
            producer_signaling_threads=producer_signaling_threads,
            consumer_signaling_threads=consumer_signaling_threads,
            barrier_ptr=barrier_ptr,
            **options,
        )


def _factory_name(ptype: PipelineType) -> str:
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in ptype.value).lstrip("_")
    return f"create_{snake}_pipeline_cfg"


def blackwell_alternative(ptype: PipelineType) -> str:
    """What to use on Hopper instead of a Blackwell-only pipeline type."""
    return _HOPPER_ALTERNATIVE.get(ptype, "AsyncAsync or TmaAsync")
