"""PipelineConfig: fields, validation, factories, and ts_trace.pipeline_spec_of."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ts_ir import CooperativeGroupSpec, PipelineSpec, PipelineType, SignalingThreads
from ts_runtime import (
    PipelineConfig,
    RuntimeConfigError,
    UnsupportedFeatureError,
    UnsupportedOnTarget,
)
from ts_trace import MemoryResource, pipeline_spec_of

G = CooperativeGroupSpec

DOCUMENTED_FIELDS = [
    "num_stages",
    "num_bytes",
    "producer_group",
    "consumer_group",
    "pipeline_type",
    "barrier_ptr",
    "cta_layout_vmnk",
    "producer_signaling_threads",
    "consumer_signaling_threads",
    "consumer_wait_signaling_threads",
    "umma_consumer_producer_op",
    "advance_on_wait",
    "advance_on_acquire",
    "num_bytes_per_warp_per_cta",
    "mcast_mode_mn",
    "interleave_stride",
    "async_producer_op",
]


class Res(MemoryResource):
    pass


def test_fields_in_documented_order_and_frozen() -> None:
    assert [f.name for f in dataclasses.fields(PipelineConfig)] == DOCUMENTED_FIELDS
    cfg = PipelineConfig.create_async_async_pipeline_cfg(2, G("thread", 32), G("thread", 64))
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.num_stages = 3  # type: ignore[misc]
    assert cfg.pipeline_type is PipelineType.AsyncAsync
    assert cfg.producer_signaling_threads is SignalingThreads.All
    assert cfg.mcast_mode_mn == (1, 1)
    assert cfg.interleave_strides == (1, 1, 1, 1)
    assert not cfg.has_interleaved_stride
    assert cfg.barrier_bytes == 32


def test_tma_factory_and_spec_round_trip() -> None:
    cfg = PipelineConfig.create_tma_async_pipeline_cfg(4, 16384, G("thread", 1), G("thread", 256))
    res = Res(name="smem", pipeline_config=cfg)
    spec = pipeline_spec_of(res)
    assert spec == PipelineSpec(PipelineType.TmaAsync, 4, 16384, G("thread", 1), G("thread", 256))
    assert spec == cfg.to_spec()


def test_spec_round_trip_with_cutlass_groups() -> None:
    cpipe = pytest.importorskip("cutlass.pipeline")
    cfg = PipelineConfig.create_async_async_pipeline_cfg(
        3,
        cpipe.CooperativeGroup(cpipe.Agent.Warp, 4),
        cpipe.CooperativeGroup(cpipe.Agent.Thread, 128),
        num_bytes=512,
    )
    assert cfg.umma_consumer_producer_op is cpipe.PipelineOp.AsyncThread
    spec = pipeline_spec_of(Res(name="ring", pipeline_config=cfg))
    assert spec is not None
    assert (spec.type, spec.stages, spec.bytes_per_stage) == (PipelineType.AsyncAsync, 3, 512)
    assert spec.producer_group == G("warp", 4)
    assert spec.consumer_group == G("thread", 128)
    assert spec == cfg.to_spec()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("barrier_ptr", object()),
        ("cta_layout_vmnk", (2, 1, 1, 1)),
        ("consumer_wait_signaling_threads", SignalingThreads.TaskWarpLeader),
        ("umma_consumer_producer_op", "TCGen05Mma"),
        ("num_bytes_per_warp_per_cta", 128),
        ("mcast_mode_mn", (2, 1)),
        ("producer_op", "AsyncLoad"),
    ],
)
def test_unsupported_options_raise_typed_error(option: str, value: Any) -> None:
    with pytest.raises(UnsupportedFeatureError, match=option):
        PipelineConfig.create_async_async_pipeline_cfg(
            2, G("thread", 32), G("thread", 32), **{option: value}
        )


@pytest.mark.parametrize(
    "signaling",
    [SignalingThreads.TaskWarpLeader, SignalingThreads.CtaLeader, SignalingThreads.All],
)
def test_signaling_threads_are_accepted(signaling: SignalingThreads) -> None:
    cfg = PipelineConfig.create_async_async_pipeline_cfg(
        2,
        G("thread", 32),
        G("thread", 32),
        producer_signaling_threads=signaling,
        consumer_signaling_threads=signaling,
        consumer_wait_signaling_threads=SignalingThreads.All,
    )
    spec = cfg.to_spec()
    assert spec.producer_signaling == signaling and spec.consumer_signaling == signaling


@pytest.mark.parametrize(
    ("strides", "words"),
    [
        ((2, 1, 1, 1), "acquire and commit move by different strides (2 and 1)"),
        ((1, 2, 1, 1), "signal stage l + 2 while its second acquire opened stage l + 1"),
        ((2, 2, 1, 2), "wait and release move by different strides (1 and 2)"),
        ((2, 1, 2, 1), "acquire and commit move by different strides (2 and 1)"),
    ],
)
def test_different_strides_within_one_side_are_wrong(
    strides: tuple[int, int, int, int], words: str
) -> None:
    # Not an unsupported feature: the program is wrong (docs/migrating.rst, stricter).
    with pytest.raises(RuntimeConfigError, match=r"interleave_stride") as info:
        PipelineConfig.create_async_async_pipeline_cfg(
            4, G("thread", 32), G("thread", 32), interleave_stride=strides
        )
    assert type(info.value) is RuntimeConfigError
    assert words in str(info.value) and "(p, p, c, c)" in str(info.value)


@pytest.mark.parametrize("strides", [(2, 2, 1, 1), (1, 1, 2, 2), (2, 2, 4, 4)])
def test_one_stride_per_side_is_accepted(strides: tuple[int, int, int, int]) -> None:
    spec = PipelineConfig.create_async_async_pipeline_cfg(
        4, G("thread", 32), G("thread", 32), interleave_stride=strides
    ).to_spec()
    assert spec.strides == strides and spec.interleave == max(strides)
    assert (spec.side_stride(True), spec.side_stride(False)) == (strides[0], strides[2])
    # Four equal strides are one stride.
    same = PipelineConfig.create_async_async_pipeline_cfg(
        4, G("thread", 32), G("thread", 32), interleave_stride=(2, 2, 2, 2)
    ).to_spec()
    assert (same.interleave, same.strides) == (2, None)


def test_a_side_stride_must_divide_the_stages() -> None:
    with pytest.raises(RuntimeConfigError, match="consumer stride 3 must divide"):
        PipelineConfig.create_async_async_pipeline_cfg(
            4, G("thread", 32), G("thread", 32), interleave_stride=(2, 2, 3, 3)
        )


@pytest.mark.parametrize("layout", [(1, 2, 1, 1), (1, 2, 2, 1)])
def test_cta_leader_signaling_over_a_cluster_is_accepted(layout: tuple[int, ...]) -> None:
    # Every CTA of a (1, CM, CN, 1) cluster leads its own CTA group (the V mode is 1), so each
    # signals its own ring: the barrier protocol, and what is verified, is All's.
    leader = PipelineConfig.create_tma_async_pipeline_cfg(
        2,
        1024,
        G("thread", 1),
        G("thread", 128),
        cta_layout_vmnk=layout,
        producer_signaling_threads=SignalingThreads.CtaLeader,
        consumer_signaling_threads=SignalingThreads.CtaLeader | SignalingThreads.TaskWarpLeader,
    ).to_spec()
    assert leader.cluster_mn == layout[1:3]
    assert leader.consumer_signaling.has_cta_leader()
    assert leader.consumer_signaling.has_task_warp_leader()


@pytest.mark.parametrize("option", ["advance_on_wait", "advance_on_acquire"])
def test_advance_options_are_accepted(option: str) -> None:
    options: dict[str, Any] = {option: True}
    cfg = PipelineConfig.create_async_async_pipeline_cfg(
        2, G("thread", 32), G("thread", 32), **options
    )
    assert getattr(cfg, option) is True
    # The barrier protocol is the same: the lowering derives the cursors from the schedule.
    assert (
        cfg.to_spec()
        == PipelineConfig.create_async_async_pipeline_cfg(
            2, G("thread", 32), G("thread", 32)
        ).to_spec()
    )


def test_defaults_given_explicitly_are_accepted() -> None:
    cfg = PipelineConfig.create_async_async_pipeline_cfg(
        2,
        G("thread", 32),
        G("thread", 32),
        barrier_ptr=None,
        mcast_mode_mn=(1, 1),
        interleave_stride=(1, 1, 1, 1),
        advance_on_wait=False,
    )
    assert cfg.max_interleave_stride == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_stages": 0}, "num_stages"),
        ({"num_stages": 2.0}, "num_stages"),
        ({"num_bytes": -1}, "num_bytes"),
        ({"producer_group": object()}, "producer_group"),
        ({"consumer_group": G("thread", 1), "pipeline_type": "Bogus"}, "pipeline_type"),
    ],
)
def test_invalid_values(kwargs: dict[str, Any], message: str) -> None:
    base: dict[str, Any] = {
        "num_stages": 2,
        "num_bytes": 0,
        "producer_group": G("thread", 1),
        "consumer_group": G("thread", 1),
        "pipeline_type": PipelineType.AsyncAsync,
    }
    base.update(kwargs)
    with pytest.raises(RuntimeConfigError, match=message):
        PipelineConfig(**base)


def test_tma_needs_bytes() -> None:
    with pytest.raises(RuntimeConfigError, match="num_bytes > 0"):
        PipelineConfig.create_tma_async_pipeline_cfg(2, 0, G("thread", 1), G("thread", 128))


def test_pipeline_type_string_is_normalised() -> None:
    cfg = PipelineConfig(2, 0, G("thread", 1), G("thread", 1), "AsyncAsync")  # type: ignore[arg-type]
    assert cfg.pipeline_type is PipelineType.AsyncAsync


BLACKWELL_FACTORIES = [
    ("create_tma_umma_pipeline_cfg", "TmaUmma", "TmaAsync"),
    ("create_umma_async_pipeline_cfg", "UmmaAsync", "AsyncAsync"),
    ("create_async_umma_pipeline_cfg", "AsyncUmma", "AsyncAsync"),
    ("create_umma_umma_pipeline_cfg", "UmmaUmma", "AsyncAsync"),
    ("create_clc_fetch_async_pipeline_cfg", "ClcFetchAsync", "WorkQueue"),
]


@pytest.mark.parametrize(("factory", "ptype", "instead"), BLACKWELL_FACTORIES)
def test_blackwell_factories_raise_on_hopper(
    factory: str, ptype: str, instead: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_90a")
    with pytest.raises(UnsupportedOnTarget) as info:
        getattr(PipelineConfig, factory)(
            num_stages=2,
            num_bytes=1024,
            producer_group=G("thread", 1),
            consumer_group=G("thread", 1),
        )
    err = info.value
    assert err.pipeline_type == ptype and err.target == "sm_90a"
    assert ptype in str(err) and factory in str(err) and instead in str(err)
    assert isinstance(err, ValueError)


@pytest.mark.parametrize(("factory", "ptype", "instead"), BLACKWELL_FACTORIES)
def test_blackwell_factories_build_on_sm100(
    factory: str, ptype: str, instead: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_100a")
    cfg = getattr(PipelineConfig, factory)(
        num_stages=2, num_bytes=1024, producer_group=G("thread", 1), consumer_group=G("thread", 1)
    )
    assert cfg.pipeline_type is PipelineType(ptype)


def test_cluster_layout_becomes_the_spec_cluster() -> None:
    cfg = PipelineConfig.create_tma_wgmma_pipeline_cfg(
        4, 49152, G("thread", 1), G("thread", 256), cta_layout_vmnk=(1, 2, 1, 1)
    )
    spec = cfg.to_spec()
    assert spec.type is PipelineType.TmaWgmma
    assert spec.cluster_mn == (2, 1) and spec.is_multicast
    plain = PipelineConfig.create_tma_async_pipeline_cfg(2, 64, G("thread", 1), G("thread", 32))
    assert plain.to_spec().cluster_mn == (1, 1) and not plain.to_spec().is_multicast


@pytest.mark.parametrize("layout", [(1, 2, 1, 2), (1, 0, 1, 1), "2x1", (1, 2, 1)])
def test_other_cluster_layouts_are_refused(layout: object) -> None:
    with pytest.raises(UnsupportedFeatureError, match=r"cta_layout_vmnk.*\(1, CM, CN, 1\)"):
        PipelineConfig.create_tma_async_pipeline_cfg(
            2, 64, G("thread", 1), G("thread", 32), cta_layout_vmnk=layout
        )
