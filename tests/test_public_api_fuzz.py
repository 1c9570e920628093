"""Every public constructor, fed wrong types and out-of-range values.

For each argument of each constructor, factory and schedule construct a kernel author calls (the
``task_scheduling`` facade, and the documented ``ts_ir`` / ``ts_trace`` constructors), every
other argument is kept valid and the one argument gets a random value: None, bools, floats
(NaN too), strings (numbers in strings too), ints from very negative to 2**63, lists, tuples,
dicts, bytes, plain objects, a ``@schedule`` function passed uncalled and an undecorated
function. The call must either

* succeed, and then the value was really valid (each case has an oracle), or
* raise a typed TS error: a ``ValueError`` carrying a catalog code (``TS-Xnnn``) whose message
  names the argument and the line of this file that made the call,

never a bare ``TypeError`` / ``AttributeError`` / ``KeyError`` / ``RecursionError`` from inside
TS, and never a hang (a per-call alarm). The examples are derandomized: CI sees the same
values every run.
"""

from __future__ import annotations

import inspect
import re
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from api_fuzz_ir_trace import traced
from api_fuzz_kit import CASES, NASTY, VALUES, Case
from api_fuzz_runtime import async_config, make_manager, make_task, tma_config
from hypothesis import HealthCheck, given, settings

from task_scheduling.resources import (
    PipelineConfig,
)
from task_scheduling.task import Task
from task_scheduling.task_manager import TaskManager

TIMEOUT_S = 10.0

# -- the harness -------------------------------------------------------------------------------


class Hang(Exception):
    """A call that ran past TIMEOUT_S."""


@contextmanager
def alarm(seconds: float) -> Iterator[None]:
    def on_alarm(signum: int, frame: object) -> None:
        raise Hang(f"no answer in {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


_CODE = re.compile(r"TS-[A-Z]\d{3}")


def _lines_of(call: Callable[..., Any]) -> range:
    lines, first = inspect.getsourcelines(call)
    return range(first, first + len(lines))


def _call_lines(c: Case) -> set[tuple[str, int]]:
    """(file, line) where the cases call TS for ``c``: the case's body and its helpers."""
    lines: set[tuple[str, int]] = set()
    for f in (c.call, async_config, tma_config, make_task, make_manager, traced):
        name = Path(inspect.getsourcefile(f) or "?").name
        lines |= {(name, n) for n in _lines_of(f)}
    return lines


def check(c: Case, value: object) -> None:
    """The contract: accepted only when valid; otherwise a typed error at this file's line."""
    try:
        with alarm(TIMEOUT_S):
            c.call(value)
    except Hang:
        pytest.fail(f"{c.name}({value!r}) hangs")
    except Exception as err:
        code = str(getattr(err, "code", ""))
        assert isinstance(err, ValueError) and _CODE.fullmatch(code), (
            f"{c.name}({value!r}) raised an untyped {type(err).__name__}: {err}"
        )
        message = str(err)
        assert message.startswith(code), message
        assert any(w in message for w in c.words), (
            f"{c.name}: the message names none of {c.words}: {message}"
        )
        found = re.search(r'(api_fuzz_\w+\.py)(?:", line |:)(\d+)', message)
        assert found, f"{c.name}({value!r}): no line of the cases in the message:\n{message}"
        where = (found.group(1), int(found.group(2)))
        assert where in _call_lines(c), f"{c.name}: {where} is not the call's\n{message}"
        assert not c.valid(value), f"{c.name}({value!r}) is valid but was refused:\n{message}"
    else:
        assert c.valid(value), f"{c.name}({value!r}) was accepted"


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors],
)
@given(value=VALUES)
def test_random_values(c: Case, value: object) -> None:
    check(c, value)


def _value_id(value: object) -> str:
    # Functions by name: a repr with an address differs between xdist workers.
    return getattr(value, "__qualname__", None) or repr(value)


@pytest.mark.parametrize("value", NASTY, ids=_value_id)
@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
def test_named_values(c: Case, value: object) -> None:
    check(c, value)


def test_valid_baselines_are_accepted() -> None:
    """The valid values each case starts from still build (the cases test what they say)."""
    assert isinstance(make_manager(), TaskManager)
    assert isinstance(make_task(), Task)
    assert isinstance(async_config(), PipelineConfig)
    assert isinstance(tma_config(), PipelineConfig)


# Names of the facade that are not constructors a kernel author calls with arguments (types,
# constants, predicates on guards, IR records that ts-verify reports when malformed), so no
# case fuzzes them.
NOT_FUZZED = {
    "FIRST_ITER",
    "LAST_ITER",
    "SKIPPABLE",
    "BlockGuard",
    "IterationPredicate",
    "ScheduleStage",
    "PipelineGroupMode",
    "guard_fires",
    "is_iteration_predicate",
    "is_loop_guard",
    "is_skippable_guard",
    "StageInfo",
    "ConditionalBlock",
    "DataFlowToken",
    "DomainLoop",
    "DomainLoopProxy",
    "Node",
    "ResourceProxy",
    "Route",
    "Schedule",
    "ScheduleError",
    "Step",
    "WorkTileLoop",
    "WorkTileLoopProxy",
    "KernelPlan",
    "PlanError",
    "ResourceSpec",
    "TaskSpec",
    "from_json",
    "to_json",
    "render_mermaid",
    "render_plan_table",
    "render_schedule",
    "ResourceContext",
    "pipeline",
    "enums",
    "plan",
    "resources",
    "schedule_builder",
}


def test_every_facade_name_is_fuzzed_or_listed() -> None:
    import task_scheduling.memory
    import task_scheduling.task
    import task_scheduling.task_manager

    modules = [
        task_scheduling,
        task_scheduling.enums,
        task_scheduling.resources,
        task_scheduling.schedule_builder,
        task_scheduling.pipeline,
        task_scheduling.plan,
        task_scheduling.memory,
        task_scheduling.task,
        task_scheduling.task_manager,
    ]
    exported = {name for m in modules for name in m.__all__}
    fuzzed = {re.split(r"[.(]", c.name)[0] for c in CASES}
    fuzzed |= {"domain_loop", "when_true", "when_false", "work_tile_loop", "schedule"}
    fuzzed |= {"producer_work", "consumer_work", "TaskLocalVariable", "MemoryResource"}
    missing = sorted(exported - fuzzed - NOT_FUZZED)
    assert not missing, f"public names without a fuzz case: {missing}"
