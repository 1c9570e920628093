"""The IR's public constructors refuse wrong types and ranges with TS-I001 at the caller's line.

A fuzz test over ``Every``, ``OpaqueCondition``, the pipeline / SMEM specs, the loop bounds and
the enumerations looked up by value: each either accepts a value that is valid or raises
:class:`ts_ir.errors.ArgumentError` naming the argument and the line of this file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ts_ir import (
    ConstBound,
    CooperativeGroupSpec,
    DynamicBound,
    Every,
    OpaqueCondition,
    PipelineSpec,
    PipelineType,
    RuntimeBound,
    ScheduleStage,
    SignalingThreads,
    SmemAllocationSpec,
    WorkAttr,
    entry,
)
from ts_ir.errors import ArgumentError, caller_location

INT32_MAX = 2**31 - 1
G = CooperativeGroupSpec("thread", 32)


def _int(v: object, low: int, high: int = INT32_MAX) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and low <= v <= high


# (argument, call, valid): the call passes the value in that one argument.
CASES: list[tuple[str, Callable[[Any], object], Callable[[Any], bool]]] = [
    ("Every.period", lambda v: Every(v), lambda v: _int(v, 1)),
    ("Every.start", lambda v: Every(3, v), lambda v: _int(v, 0)),
    ("OpaqueCondition.negated", lambda v: OpaqueCondition("k", v), lambda v: isinstance(v, bool)),
    (
        "OpaqueCondition.result_name",
        lambda v: OpaqueCondition("k", result_name=v),
        lambda v: v is None or isinstance(v, str),
    ),
    ("CooperativeGroupSpec.size", lambda v: CooperativeGroupSpec("warp", v), lambda v: _int(v, 1)),
    (
        "PipelineSpec.stages",
        lambda v: PipelineSpec(PipelineType.TmaAsync, v, 64, G, G),
        lambda v: _int(v, 1),
    ),
    (
        "PipelineSpec.bytes_per_stage",
        lambda v: PipelineSpec(PipelineType.TmaAsync, 2, v, G, G),
        lambda v: _int(v, 0),
    ),
    (
        "PipelineSpec.interleave",
        lambda v: PipelineSpec(PipelineType.AsyncAsync, 4, 0, G, G, interleave=v),
        lambda v: v in (1, 2, 4) and not isinstance(v, bool),
    ),
    (
        "PipelineSpec.strides",
        lambda v: PipelineSpec(PipelineType.AsyncAsync, 4, 0, G, G, interleave=2, strides=v),
        lambda v: v is None or v in ((2, 2, 1, 1), (1, 1, 2, 2)),
    ),
    ("SmemAllocationSpec.size_bytes", lambda v: SmemAllocationSpec("a", v), lambda v: _int(v, 0)),
    (
        "SmemAllocationSpec.count",
        lambda v: SmemAllocationSpec("a", 8, count=v),
        lambda v: _int(v, 0),
    ),
    ("ConstBound.value", lambda v: ConstBound(v), lambda v: _int(v, -(2**70), 2**70)),
    ("RuntimeBound.name", lambda v: RuntimeBound(v), lambda v: isinstance(v, str) and v != ""),
    ("DynamicBound.getter", lambda v: DynamicBound(v), lambda v: isinstance(v, str) and v != ""),
    (
        "PipelineType",
        lambda v: PipelineType(v),
        lambda v: isinstance(v, str) and v in [m.value for m in PipelineType],
    ),
    (
        "ScheduleStage",
        lambda v: ScheduleStage(v),
        lambda v: isinstance(v, str) and v in [m.value for m in ScheduleStage],
    ),
    ("WorkAttr", lambda v: WorkAttr(v), lambda v: isinstance(v, int)),
    ("SignalingThreads", lambda v: SignalingThreads(v), lambda v: isinstance(v, int)),
    (
        "work_attrs",
        lambda v: WorkAttr.validate(v, "work_attrs"),
        lambda v: _int(v, 0, 8) and v in (0, 1, 2, 4, 8),
    ),
]

VALUES = st.one_of(
    st.sampled_from([None, True, False, 2.5, math.nan, "8", "", -1, 0, 1, INT32_MAX, 2**31, [4]]),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
    st.builds(object),
    # Per-role strides of a four-stage ring with interleave 2: right, wrong, or wrong shape.
    st.sampled_from([(2, 2, 1, 1), (1, 1, 2, 2), (2, 1, 2, 1), (2, 2, 2, 2), (4, 4, 1, 1)]),
    st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)),
)


@pytest.mark.parametrize(("argument", "call", "valid"), CASES, ids=[c[0] for c in CASES])
@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(value=VALUES)
def test_constructor_accepts_valid_or_raises_ts_i001(
    argument: str, call: Callable[[Any], object], valid: Callable[[Any], bool], value: object
) -> None:
    try:
        call(value)
    except ArgumentError as err:
        assert not valid(value), str(err)
        message = str(err)
        assert message.startswith("TS-I001: ")
        assert argument.rsplit(".", 1)[-1] in message, message
        assert err.location.file == __file__, message
        assert f'File "{__file__}", line {err.location.line}' in message
        assert message.endswith("see: ts explain TS-I001")
        assert isinstance(err, ValueError) and isinstance(err, TypeError)
    else:
        assert valid(value), f"{argument}: {value!r} was accepted"


def test_the_error_points_at_the_callers_line() -> None:
    with pytest.raises(ArgumentError) as err:
        Every(2.5)  # type: ignore[arg-type]  # the caller's line
    assert err.value.location.text.endswith("# the caller's line")
    assert err.value.argument == "Every.period"
    assert "Every.period must be an int, got 2.5 (float)" in str(err.value)


def test_enum_lookup_names_the_members() -> None:
    with pytest.raises(ArgumentError, match=r"'Carrier' is not a valid PipelineType") as err:
        PipelineType("Carrier")
    assert "TmaAsync" in err.value.fix
    assert WorkAttr(3) == WorkAttr.AUXILIARY | WorkAttr.ASYNC_READ  # combinations stay flags


def test_cluster_lists_become_tuples() -> None:
    spec = PipelineSpec(PipelineType.AsyncAsync, 2, 0, G, G, cluster_mn=[1, 2])  # type: ignore[arg-type]
    assert spec.cluster_mn == (1, 2)


def test_catalog_entry() -> None:
    e = entry("TS-I001")
    assert e.layer == "ts-ir" and "Every(2.5)" in e.wrong and "Every(2)" in e.right
    assert re.search(r"[.!?]", e.explanation)


def test_caller_location_skips_ts_frames() -> None:
    here = caller_location(1)
    assert here.file == __file__ and here.function == "test_caller_location_skips_ts_frames"
