"""Debug bounded waits: the probe loop, the message and the trap, in the compiled PTX."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("cutlass")

import cutlass
import cutlass.cute as cute

from ts_codegen import dsl
from ts_codegen.debug_wait import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    bounded_wait,
    message_format,
)

# The smoke subset (the oldest Python runs only it): one kernel of each kind.
pytestmark = pytest.mark.smoke

STAGES = 4
THREADS = 64  # warp 0 produces, warp 1 consumes


def _emit(kind: str, n: Any, *, debug: bool, loop: bool, limit: int) -> None:
    """The kernel body: one pipeline, a producer acquire (warp 0) and a consumer wait (warp 1).

    With ``loop`` the two waits sit in a runtime loop whose pipeline states are loop-carried
    (stage index and phase are then runtime values, as in a lowered schedule). Plain Python,
    outside the ``@cute.kernel`` (whose body the DSL's AST preprocessor rewrites).
    """
    pipe = dsl.make_pipeline(
        kind,
        stages=STAGES,
        producer=("thread", 1) if kind == "TmaAsync" else ("thread", 32),
        consumer=("thread", 32),
        tx_bytes=128,
        storage=dsl.barrier_storage(None, STAGES),
    )
    dsl.pipelines_ready()

    def acquire(state: Any) -> None:
        if debug:
            bounded_wait(
                pipe,
                state,
                producer=True,
                task="load",
                resource="smem",
                step="producer_acquire",
                limit=limit,
            )
        dsl.producer_acquire(pipe, state)

    def wait(state: Any) -> None:
        if debug:
            bounded_wait(
                pipe,
                state,
                producer=False,
                task="mma",
                resource="smem",
                step="consumer_wait",
                limit=limit,
            )
        dsl.consumer_wait(pipe, state)

    def producer_step(_iv: Any, carried: list[Any]) -> list[Any]:
        acquire(carried[0])
        dsl.producer_commit(pipe, carried[0])
        return [dsl.state_advance(carried[0])]

    def consumer_step(_iv: Any, carried: list[Any]) -> list[Any]:
        wait(carried[0])
        dsl.consumer_release(pipe, carried[0])
        return [dsl.state_advance(carried[0])]

    def role(producer: bool) -> Callable[[list[Any]], list[Any]]:
        def run(_: list[Any]) -> list[Any]:
            state = dsl.make_state(producer, STAGES)
            step = producer_step if producer else consumer_step
            if loop:
                dsl.for_range(0, n, 1, [state], step)
            elif producer:
                acquire(state)
            else:
                wait(state)
            return []

        return run

    warp = dsl.warp_index()
    dsl.if_then(warp == 0, [], role(True))
    dsl.if_then(warp == 1, [], role(False))


def _kernel(kind: str, *, debug: bool, loop: bool, limit: int) -> Any:
    """A ``@cute.jit`` launching :func:`_emit` as a kernel of ``THREADS`` threads."""

    @cute.kernel
    def kernel(n: cutlass.Int32) -> None:
        _emit(kind, n, debug=debug, loop=loop, limit=limit)

    @cute.jit
    def launch(n: cutlass.Int32) -> None:
        kernel(n).launch(grid=(2, 1, 1), block=(THREADS, 1, 1))

    return launch


_CACHE: dict[tuple[str, bool, bool, int], str] = {}


def ptx_of(kind: str, *, debug: bool, loop: bool = False, limit: int = DEFAULT_LIMIT) -> str:
    key = (kind, debug, loop, limit)
    if key not in _CACHE:
        _, ptx = dsl.compile_ptx(
            _kernel(kind, debug=debug, loop=loop, limit=limit), cutlass.Int32(8)
        )
        assert ".entry" in ptx, "no PTX kept (CUTE_DSL_KEEP / CUTE_DSL_DUMP_DIR)"
        _CACHE[key] = ptx
    return _CACHE[key]


# -- PTX helpers ------------------------------------------------------------------------------

_LABEL = re.compile(r"^(\$L__\w+):")
_BRANCH = re.compile(r"^(?:@!?%\w+\s+)?bra(?:\.uni)?\s+(\$L__\w+);")
_STRING = re.compile(r"\.global \.align 1 \.b8 (\w+)\[\d+\] = \{([\d, ]+)\};")


def _split(ptx: str) -> tuple[list[str], list[str]]:
    """The kernel body's lines, stripped: those outside inline asm, and those inside.

    The blocking waits of ``cutlass.pipeline`` are an inline-asm retry loop of their own
    (``mbarrier.try_wait.parity.shared.b64 ... LAB_WAIT``); outside the inline asm are the
    compiler-emitted instructions only, the probe's among them.
    """
    outside: list[str] = []
    inside: list[str] = []
    in_asm = False
    for raw in ptx[ptx.index(".entry") :].splitlines():
        line = raw.strip()
        if line == "// begin inline asm":
            in_asm = True
        elif line == "// end inline asm":
            in_asm = False
        elif line:
            (inside if in_asm else outside).append(line)
    return outside, inside


def _body_lines(ptx: str) -> list[str]:
    return _split(ptx)[0]


def probes(ptx: str) -> list[str]:
    """The compiler-emitted ``mbarrier.try_wait.parity`` lines that sit inside a loop.

    A line is in a loop when some label before it is the target of a branch after it.
    """
    lines = _body_lines(ptx)
    found: list[str] = []
    for i, line in enumerate(lines):
        if not line.startswith("mbarrier.try_wait.parity"):
            continue
        before = {m.group(1) for m in map(_LABEL.match, lines[:i]) if m}
        after = {m.group(1) for m in map(_BRANCH.match, lines[i + 1 :]) if m}
        if before & after:
            found.append(line)
    return found


def blocking_waits(ptx: str) -> list[str]:
    """The ``mbarrier.try_wait`` lines of the blocking waits (inside inline asm)."""
    return [line for line in _split(ptx)[1] if line.startswith("mbarrier.try_wait")]


def _operands(line: str) -> str:
    """``[%r12+32], 1`` from ``mbarrier.try_wait.parity... %p1, [%r12+32], 1[, hint];``."""
    m = re.search(r"(\[[^\]]+\]),\s*(\w+)", line)
    assert m is not None, line
    return f"{m.group(1)}, {m.group(2)}"


def format_strings(ptx: str) -> list[str]:
    """Every byte-array constant of the module (``printf`` formats among them), decoded."""
    return [bytes(int(b) for b in m.group(2).split(",")).decode() for m in _STRING.finditer(ptx)]


def count(ptx: str, needle: str) -> int:
    return sum(1 for line in _body_lines(ptx) if line.startswith(needle))


# -- tests -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["AsyncAsync", "TmaAsync"])
def test_probe_loop_message_and_trap(kind: str) -> None:
    ptx = ptx_of(kind, debug=True)
    # One bounded probe per blocking wait, each a try_wait inside a loop.
    assert len(probes(ptx)) == 2
    assert count(ptx, "call.uni") >= 2
    assert "vprintf" in ptx
    assert ptx.count("trap;") == 2
    formats = [s for s in format_strings(ptx) if s.startswith("TS debug:")]
    assert len(formats) == 2
    acquire = next(s for s in formats if "producer_acquire" in s)
    wait = next(s for s in formats if "consumer_wait" in s)
    assert "task `load` waits forever on resource `smem` (producer_acquire, stage %d" in acquire
    assert "task `mma` waits forever on resource `smem` (consumer_wait, stage %d" in wait
    for s in formats:
        assert s.endswith("phase %d) block %d thread %d\n")


@pytest.mark.parametrize("kind", ["AsyncAsync", "TmaAsync"])
def test_probe_watches_the_barrier_and_phase_of_the_blocking_wait(kind: str) -> None:
    # Fresh states: the consumer waits on full[0] with phase 0, the producer on empty[0] with
    # phase 1. Each probe must name the very barrier register and parity of a blocking wait
    # (a probe on the other barrier, or with the other phase, would not match).
    ptx = ptx_of(kind, debug=True)
    probed = [_operands(p) for p in probes(ptx)]
    blocking = [_operands(b) for b in blocking_waits(ptx)]
    assert sorted(probed) == sorted(blocking)
    assert sorted(p.split(", ")[1] for p in probed) == ["0", "1"]
    assert len({p.split(", ")[0] for p in probed}) == 2


def test_without_bounded_wait_no_probe_no_message_no_trap() -> None:
    ptx = ptx_of("AsyncAsync", debug=False)
    assert probes(ptx) == []
    assert "trap;" not in ptx
    assert "vprintf" not in ptx
    assert not [s for s in format_strings(ptx) if s.startswith("TS debug:")]
    # The blocking waits themselves are still there.
    assert len(blocking_waits(ptx)) == 2


def test_runtime_state_in_a_loop() -> None:
    # Loop-carried states: the probe reads the runtime stage index and phase.
    ptx = ptx_of("AsyncAsync", debug=True, loop=True)
    assert len(probes(ptx)) == 2
    assert ptx.count("trap;") == 2
    for p in probes(ptx):
        # phase is a register, not an immediate, once it is loop-carried
        assert re.search(r"\],\s*%r\d+;", p), p


def test_limit_is_the_loop_bound() -> None:
    ptx = ptx_of("AsyncAsync", debug=True, limit=12345)
    # tries < 12345 compiles to a compare against 12344 or 12345.
    assert re.search(r"\b1234[45]\b", ptx)
    assert not re.search(rf"\b{DEFAULT_LIMIT - 1}\b|\b{DEFAULT_LIMIT}\b", ptx)


# -- pure Python -------------------------------------------------------------------------------


def test_message_format() -> None:
    fmt = message_format("load", "smem", "consumer_wait")
    assert fmt == (
        "TS debug: task `load` waits forever on resource `smem` "
        "(consumer_wait, stage {}, phase {}) block {} thread {}"
    )
    assert fmt.format(3, 1, 5, 128) == (
        "TS debug: task `load` waits forever on resource `smem` "
        "(consumer_wait, stage 3, phase 1) block 5 thread 128"
    )


def test_message_format_escapes_names() -> None:
    fmt = message_format("a%db", "x{}y", "s\nt")
    assert "a%%db" in fmt
    assert "x{ }y" in fmt
    assert "s?t" in fmt
    assert fmt.count("{}") == 4
    assert "\n" not in fmt


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"task": ""}, ValueError),
        ({"resource": ""}, ValueError),
        ({"step": ""}, ValueError),
        ({"limit": 0}, ValueError),
        ({"limit": MAX_LIMIT + 1}, ValueError),
        ({"limit": True}, TypeError),
        ({"limit": 1.5}, TypeError),
    ],
)
def test_bad_arguments_rejected_before_emitting(kwargs: dict[str, Any], error: type) -> None:
    args: dict[str, Any] = {
        "producer": False,
        "task": "t",
        "resource": "r",
        "step": "consumer_wait",
    }
    args.update(kwargs)
    # pipe and state are never touched: no kernel is being traced here.
    with pytest.raises(error):
        bounded_wait(None, None, **args)


def test_pipe_without_barriers_rejected() -> None:
    with pytest.raises(TypeError, match="sync_object_full"):
        dsl.wait_barrier(object(), None, producer=False)
