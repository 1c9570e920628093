"""The value a traced work call returns (:class:`DataFlowToken`) and its checks at a use site.

Kept apart from ``schedule_builder`` (which records steps) and ``blocks`` (loops and conditions)
because both take tokens: a work call's routed argument and a ``when_true`` condition.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, TypeAlias

from ts_ir import SourceLocation
from ts_trace._internal.builder import ScheduleBuilder, active_stack
from ts_trace._internal.source import user_location
from ts_trace.errors import ScheduleError

__all__ = ["INT32_MAX", "Boolean", "DataFlowToken", "check_token", "schedule_name"]

INT32_MAX = 2**31 - 1  # loop counters, periods and unroll counts are int32 on the GPU


def schedule_name() -> str:
    """The name of the schedule being traced ("" outside every trace), for error messages."""
    stack = active_stack()
    return stack[-1].name if stack else ""


Boolean: TypeAlias = Any
"""A runtime boolean (a CuTe DSL ``Boolean`` when lowered, a Python bool in CPU models)."""


@dataclasses.dataclass(frozen=True, eq=False)
class DataFlowToken:
    """The value a work call returns while tracing.

    Pass it to a later work call (by keyword or positionally) to route the value, or to
    :func:`~ts_trace.blocks.when_true` / :func:`~ts_trace.blocks.when_false` to guard a block
    with it.

    Attributes:
        resource: Name of the resource whose work produced it.
        label: The producing work method.
        output: The task-local output it stands for (None when the call declares none).
        step_id: Id of the producing step.
        scope_path: Blocks open when it was produced.
        builder_id: Identity of the schedule trace that produced it.
        producer: Returned by a producer work, which writes its resource and returns nothing
            to route (routing it is TS-T006, as for a consumer work without ``returns=``).
    """

    resource: str
    label: str
    output: str | None
    step_id: int
    scope_path: tuple[int, ...]
    builder_id: int
    producer: bool = False

    def __bool__(self) -> bool:
        raise ScheduleError(
            "TS-T014",
            f"the output of {self.resource}.{self.label} is a runtime value; Python `if` cannot "
            "test it while tracing",
            resource=self.resource,
            location=user_location(),
            fix="guard the block with `with when_true(token):` instead of `if token:`",
        )

    def __iter__(self) -> Iterator[Any]:
        raise ScheduleError(
            "TS-T006",
            f"{self.resource}.{self.label} returns a single output; it cannot be unpacked",
            resource=self.resource,
            location=user_location(),
            fix="declare several outputs with returns=(a, b) to get a tuple of tokens",
        )

    def describe(self) -> str:
        """``resource.label[output]``."""
        return f"{self.resource}.{self.label}[{self.output}]"


def check_token(
    builder: ScheduleBuilder, token: DataFlowToken, use: str, location: SourceLocation
) -> str:
    """Validate a token at a use site and return its output name."""
    common: dict[str, Any] = {
        "schedule": builder.name,
        "resource": token.resource,
        "step": use,
        "location": location,
    }
    if token.builder_id != builder.uid:
        raise ScheduleError(
            "TS-T005",
            f"{use} uses the output of {token.resource}.{token.label} from a different "
            "schedule trace; it is not produced in this schedule",
            **common,
        )
    if token.output is None and token.producer:
        raise ScheduleError(
            "TS-T006",
            f"{use} uses the result of {token.resource}.{token.label}, a producer work: it "
            "writes into its resource and returns nothing",
            **common,
            fix=f"route the value from the consumer work that reads {token.resource}, declared "
            "with @consumer_work(returns=...)",
        )
    if token.output is None:
        raise ScheduleError(
            "TS-T006",
            f"{use} uses the result of {token.resource}.{token.label}, which declares no output",
            **common,
            fix=f"declare it: @consumer_work(returns=...) on {token.label}",
        )
    if builder.latest.get((token.resource, token.output)) != token.step_id:
        raise ScheduleError(
            "TS-T003",
            f"{use} uses `{token.output}` from {token.resource}.{token.label} (step "
            f"#{token.step_id}), but a later call overwrote that output before this use",
            **common,
        )
    path = builder.scope_path()
    if path[: len(token.scope_path)] != token.scope_path:
        raise ScheduleError(
            "TS-T004",
            f"{use} uses `{token.output}` from {token.resource}.{token.label}, which was "
            "produced inside a block that has ended (it may not have run)",
            **common,
        )
    return token.output
