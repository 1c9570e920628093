"""What the public-API fuzz cases share: the values tried, the resources and schedules the
cases start from, and the ``Case`` registry (``@case``). See ``test_public_api_fuzz.py``."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from task_scheduling import (
    consumer_work,
    domain_loop,
    producer_work,
    schedule,
)
from task_scheduling.pipeline import CooperativeGroupSpec
from task_scheduling.resources import (
    MemoryResource,
    TaskLocalVariable,
)

INT32_MAX = 2**31 - 1
G = CooperativeGroupSpec("thread", 32)


# -- the resources and schedules the cases start from ---------------------------------------


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    flag: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.flag = TaskLocalVariable(dtype="Boolean", default=False)

    @producer_work
    def load(self, stage_info: Any) -> None: ...

    @consumer_work(returns=flag)
    def read(self, stage_info: Any) -> Any: ...


@schedule
def produce(r: Any) -> None:
    with domain_loop(4):
        r.acquire()
        r.load()
        r.commit()


@schedule
def consume(r: Any) -> None:
    with domain_loop(4):
        r.wait()
        r.read()
        r.release()


def undecorated(r: Any) -> None:
    del r


class Opaque:
    """A plain object: no field a TS constructor looks for."""

    def __repr__(self) -> str:
        return "Opaque()"


# -- the values --------------------------------------------------------------------------------

NASTY: list[object] = [
    None,
    True,
    False,
    2.5,
    math.nan,
    math.inf,
    "8",
    "232",
    "",
    -1,
    0,
    1,
    INT32_MAX,
    2**31,
    2**63,
    [4],
    (1, 2),
    {},
    b"x",
    Opaque(),
    produce,
    undecorated,
]
"""Values every argument is tried with (wrong types, edge values, and their neighbours)."""

VALUES = st.one_of(
    st.sampled_from(NASTY),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.integers(-(2**40), 2**40),
    st.integers(-4, 40),
    st.lists(st.integers(-2, 8), max_size=4),
    st.tuples(st.integers(-2, 8), st.integers(-2, 8)),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
    st.builds(Opaque),
)


def is_int(v: object, low: int = -(2**63), high: int = 2**63) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and low <= v <= high


def never(v: object) -> bool:
    del v
    return False


# -- the cases ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Case:
    """One argument of one public constructor.

    Attributes:
        name: ``Callee.argument`` (the test id).
        call: Calls the constructor with the value in that argument, every other one valid.
        valid: True for the values the constructor must accept.
        words: The message names the argument with one of these.
    """

    name: str
    call: Callable[[Any], object]
    valid: Callable[[Any], bool]
    words: tuple[str, ...]


CASES: list[Case] = []


def case(name: str, valid: Callable[[Any], bool], *words: str) -> Callable[[Any], Any]:
    def register(call: Callable[[Any], object]) -> Callable[[Any], object]:
        CASES.append(Case(name, call, valid, words or (name.rsplit(".", 1)[-1],)))
        return call

    return register
