"""Lower one task's traced schedule to CuTe DSL, at kernel trace time.

:func:`lower_task` walks the schedule tree in program order and emits, through
:mod:`ts_codegen.dsl`:

* pipeline steps as ``cutlass.pipeline`` calls on the resource's pipeline, with one
  ``PipelineState`` per ``(resource, role)`` that advances after ``commit`` / ``release``;
  ``skip_stage()`` advances the consumer's states as a ``wait`` + ``release`` would, with no
  barrier operation (a ``domain_loop`` of skips is a loop of advances);
* work steps as calls of the resource's work method
  ``method(stage_info, **routed_inputs, **constants)``, where ``stage_info`` is a
  :class:`ts_trace.StageInfo` and the routed inputs are the task-local values that earlier
  work calls returned;
* domain loops as ``scf.for`` loops (constant or runtime bounds) whose loop-carried values are
  the pipeline states the body touches and the task-local values that cross iterations or
  leave the loop;
* iteration-predicate blocks (``first_iter``, ``last_iter``, ``Every``) as ``scf.if`` on the
  iteration index, carrying the states and values their body updates;
* runtime conditions (``when_true`` / ``when_false`` on a work call's output) as ``scf.if`` on
  the stored task-local value (the work method is not called again);
* the work-tile loop as ``scf.while`` over the tiles of the queue's
  :class:`~ts_codegen.work_queues.TileSource`, carrying the queue cursor, the current work tile
  and the states and values of the body; ``skippable()`` regions as ``scf.if`` on the negated
  ``skip_if(work_queue, work_tile)`` (a region that is one domain loop: that loop, ending at
  its start for a skipped tile); per-tile loop bounds (a task method) evaluated with the
  tile's coordinate.

Blocking waits can be lowered as bounded waits that trap with the task, resource, stage and
phase (``debug=True``), see :mod:`ts_codegen.debug_wait`.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ts_codegen import debug_wait, dsl
from ts_codegen.carried import ValueKey, carried_reads, condition_key, reads, touched
from ts_codegen.catalog_entries import CODEGEN_ENTRIES
from ts_codegen.cursors import (
    StateKey,
    commit_key,
    fresh_state,
    lagged_sides,
    refused_skips,
    release_key,
    side_stride,
    task_lanes,
    warp_lane_rings,
)
from ts_codegen.dsl import tiles as dsl_tiles
from ts_codegen.work_queues import TileSource
from ts_ir import (
    ConditionalBlock,
    ConstBound,
    DomainLoop,
    DynamicBound,
    Every,
    FirstIteration,
    LastIteration,
    Node,
    OpaqueCondition,
    ResourceSpec,
    Role,
    RuntimeBound,
    ScheduleStage,
    Skippable,
    Step,
    TaskSpec,
    WorkTileLoop,
    iter_nodes,
    register,
    see_also,
)
from ts_trace import MemoryResource, StageInfo, skip_predicate

register(CODEGEN_ENTRIES)

__all__ = ["LoweringError", "TaskLowering", "lower_task"]


class LoweringError(ValueError):
    """A schedule construct that this code generator cannot lower (names task and node).

    A ``ValueError``, the family of the reference's errors.

    The message starts with the code ``TS-C001`` and ends with ``see: ts explain TS-C001``.
    """

    code = "TS-C001"

    def __init__(self, message: str) -> None:
        super().__init__(f"{self.code}: {message}\n  see: {see_also(self.code)}")


@dataclasses.dataclass
class _Loop:
    """The innermost domain loop around a step, as DSL values."""

    offset: Any
    start: Any
    end: Any
    step: Any
    iter_idx: Any
    num_iters: Callable[[], Any]


@dataclasses.dataclass
class _Tile:
    """The current work tile of the persistent loop, as DSL values."""

    info: Any
    coord: Any
    skip: Any
    peek: Any = None  # static schedules: a call returning the CTA's next tile


def _peeker(source: Any, cursor: Any) -> Any:
    """A call returning the tile after ``cursor`` of a static tile source.

    None for a source that cannot tell it without moving its cursor.
    """
    peek = getattr(source, "peek", None)
    return None if peek is None else lambda: peek(cursor)


@dataclasses.dataclass
class _Env:
    """Everything that changes while the schedule is walked."""

    states: dict[StateKey, Any]
    values: dict[ValueKey, Any]
    tokens: dict[StateKey, Any]
    loop: _Loop | None = None
    tile: _Tile | None = None
    current: dict[StateKey, Any] = dataclasses.field(default_factory=dict)
    """Lagged consumers: the state of the stage waited last (what work calls see)."""

    def inner(self, loop: _Loop | None) -> _Env:
        """A copy for a nested region (loop body or branch)."""
        return _Env(dict(self.states), dict(self.values), {}, loop, self.tile, dict(self.current))


class TaskLowering:
    """The lowering of one task; see :func:`lower_task`."""

    def __init__(
        self,
        task: TaskSpec,
        resources: Mapping[str, MemoryResource],
        specs: Mapping[str, ResourceSpec],
        pipelines: Mapping[str, Any],
        bounds: Sequence[tuple[Any, Any, Any] | None] = (),
        context: Any = None,
        queues: Mapping[str, TileSource] | None = None,
        debug: bool = False,
        task_cache: Callable[[], Any] | None = None,
    ) -> None:
        self.task = task
        self.task_cache = task_cache
        self._block_tile: Any = None
        self.resources = resources
        self.specs = specs
        self.pipelines = pipelines
        self.bounds = list(bounds)
        self.context = context
        self.queues = dict(queues or {})
        self.debug = debug
        self._loop_ordinal: dict[int, int] = {}
        steps = {s.id: s for s in task.schedule.steps()}
        self._steps = steps
        ordinal = 0
        for node, _ in iter_nodes(task.schedule.body):
            if isinstance(node, DomainLoop):
                self._loop_ordinal[id(node)] = ordinal
                ordinal += 1
        self._warp_lanes = warp_lane_rings(task, specs)
        self._warp_lane: Any = None
        self._leader_only = self._leader_signals()
        self._is_leader: Any = None
        self._lagged = lagged_sides(task.schedule.body, Role.CONSUMER)
        self._lagged_producers = lagged_sides(task.schedule.body, Role.PRODUCER)

    # -- entry -----------------------------------------------------------------------------

    def _leader_signals(self) -> set[StateKey]:
        """The (resource, role) sides whose barrier signals only the task's first warp makes.

        With ``SignalingThreads.TaskWarpLeader`` the group counts one warp per task; a TMA
        producer arms the full barrier once per stage (the plan counts one arrival), so in a
        producer task of several warps only the first warp arms it. Not on a ring where the
        task's warps are lanes of their own: there each warp is the task of its lane.
        """
        if self.task.num_warps == 1:
            return set()
        out: set[StateKey] = set()
        for step in self._steps.values():
            spec = self.specs[step.resource].pipeline
            if spec is None or (step.resource, step.stage.role) in self._warp_lanes:
                continue
            role = step.stage.role
            signaling = (
                spec.producer_signaling if role is Role.PRODUCER else spec.consumer_signaling
            )
            tma = role is Role.PRODUCER and spec.type.producer_is_tma
            if tma or signaling.has_task_warp_leader():
                out.add((step.resource, role))
        return out

    def _leader_only_step(self, key: StateKey, emit: Callable[[], None]) -> None:
        """Emit ``emit()`` for the task's first warp only when ``key`` signals from it."""
        if key not in self._leader_only:
            emit()
            return

        def body(carried: list[Any]) -> list[Any]:
            emit()
            return carried

        dsl.if_then(self._is_leader, [], body)

    def run(self) -> None:
        """Emit the whole schedule (and, for cluster rings, the TMA producer's tail)."""
        refused = refused_skips(self.task, self.specs)
        if refused:  # before any code is emitted
            step, why = refused[0]
            raise LoweringError(f"{self._where(step)}: skip_stage() {why}")
        if self._warp_lanes:
            # Read once at the top, like the leader predicate: the warp's lane seeds states.
            self._warp_lane = dsl.warp_index() - self.task.warp_start
        if self._leader_only:
            # Read once at the top: the predicate must dominate every use in nested regions.
            start = self.task.warp_start
            self._is_leader = dsl.in_range(dsl.warp_index(), start, start + 1)
        if _work_outside_tile_loops(self.task.schedule.body):
            # Read at the top so that it dominates every work call; unused reads fold away.
            self._block_tile = dsl_tiles.block_work_tile()
        env = _Env(states=self._initial_states(), values={}, tokens={})
        self._body(self.task.schedule.body, env, after=())
        for (resource, role), state in sorted(env.states.items(), key=lambda kv: kv[0][0]):
            spec = self.specs[resource].pipeline if resource in self.specs else None
            if (
                role is Role.PRODUCER
                and spec is not None
                and spec.is_multicast
                and not spec.type.producer_is_umma
            ):
                # Peers multicast into this CTA and arrive on its barriers: do not exit before
                # every stage this producer filled has been released. (A UMMA producer's ring
                # over a cluster is the CTA's own accumulator: no peer arrives on it.)
                dsl.producer_tail(self.pipelines[resource], state)

    def _initial_states(self) -> dict[StateKey, Any]:
        states: dict[StateKey, Any] = {}
        for step in self._steps.values():
            spec = self.specs[step.resource].pipeline
            if spec is None:
                continue
            key = (step.resource, step.stage.role)
            lane = self._lane(step.resource, step.stage.role)
            if key not in states:
                states[key] = fresh_state(step.stage.role is Role.PRODUCER, spec.stages, lane)
            if step.resource in self._lagged and step.stage.role is Role.CONSUMER:
                states[release_key(step.resource)] = fresh_state(False, spec.stages, lane)
            if step.resource in self._lagged_producers and step.stage.role is Role.PRODUCER:
                states[commit_key(step.resource)] = fresh_state(True, spec.stages, lane)
        return states

    def _lane(self, resource: str, role: Role) -> Any:
        """This task's first stage of one side of an interleaved ring (its lane), else 0.

        An int, or for warp lanes the warp's index in the task (a warp-uniform DSL value).
        """
        if (resource, role) in self._warp_lanes:
            return self._warp_lane
        lanes = task_lanes(self.task, self.specs[resource], role)
        if lanes is None:
            raise LoweringError(
                f"task `{self.task.name}` has {self.task.num_warps} warps, more than the lanes "
                f"of the interleaved ring `{resource}`, and does not run it in a "
                "domain_loop(lane, end, stride) with a constant lane"
            )
        return lanes[0]

    def _advance(self, step: Step, state: Any) -> Any:
        """The state one step further: the side's stride of stages on an interleaved ring."""
        return dsl.state_advance(state, side_stride(self.specs[step.resource], step.stage.role))

    # -- tree walk -------------------------------------------------------------------------

    def _body(self, body: Sequence[Node], env: _Env, after: Sequence[Node]) -> None:
        for i, node in enumerate(body):
            rest = (*body[i + 1 :], *after)
            if isinstance(node, Step):
                self._step(node, env)
            elif isinstance(node, DomainLoop):
                self._domain_loop(node, env, rest)
            elif isinstance(node, ConditionalBlock):
                self._conditional(node, env, rest)
            elif isinstance(node, WorkTileLoop):
                self._work_tile_loop(node, env, rest)

    def _where(self, step: Step) -> str:
        return f"task `{self.task.name}`, step {step.describe()} at {step.location}"

    def _pipe(self, step: Step) -> Any:
        pipe = self.pipelines.get(step.resource)
        if pipe is None:
            raise LoweringError(f"{self._where(step)}: resource has no pipeline")
        return pipe

    def _step(self, step: Step, env: _Env) -> None:
        key = (step.resource, step.stage.role)
        st = step.stage
        if st is ScheduleStage.ProducerTryAcquire:
            env.tokens[key] = dsl.producer_try_acquire(self._pipe(step), env.states[key])
        elif st is ScheduleStage.ProducerAcquire:
            self._bounded(step, env.states[key], producer=True)
            spec = self.specs[step.resource].pipeline
            arm = (
                self._is_leader
                if key in self._leader_only and spec is not None and spec.type.producer_is_tma
                else None
            )
            dsl.producer_acquire(
                self._pipe(step), env.states[key], env.tokens.pop(key, None), arm_if=arm
            )
            if step.resource in self._lagged_producers:
                # As for lagged consumers: the work after this acquire fills the acquired
                # stage, the next acquire takes the following one, commits follow behind.
                env.current[key] = env.states[key]
                env.states[key] = self._advance(step, env.states[key])
        elif st is ScheduleStage.ProducerCommit:
            side = key
            if step.resource in self._lagged_producers:
                key = commit_key(step.resource)
            pipe, state = self._pipe(step), env.states[key]
            self._leader_only_step(side, lambda: dsl.producer_commit(pipe, state))
            env.states[key] = self._advance(step, env.states[key])
        elif st is ScheduleStage.ConsumerTryWait:
            env.tokens[key] = dsl.consumer_try_wait(self._pipe(step), env.states[key])
        elif st is ScheduleStage.ConsumerWait:
            self._bounded(step, env.states[key], producer=False)
            dsl.consumer_wait(self._pipe(step), env.states[key], env.tokens.pop(key, None))
            if step.resource in self._lagged:
                # Waits and releases run on separate states: the work after this wait sees
                # the waited stage, the next wait the following one.
                env.current[key] = env.states[key]
                env.states[key] = self._advance(step, env.states[key])
        elif st is ScheduleStage.ConsumerRelease:
            side = key
            if step.resource in self._lagged:
                key = release_key(step.resource)
            pipe, state = self._pipe(step), env.states[key]
            self._leader_only_step(side, lambda: dsl.consumer_release(pipe, state))
            env.states[key] = self._advance(step, env.states[key])
        elif st is ScheduleStage.ConsumerSkip:
            self._skip(step, env)
        else:
            self._work(step, env)

    def _skip(self, step: Step, env: _Env) -> None:
        """``skip_stage()``: the consumer state(s) on one stage, as a wait + release; no barrier."""
        key = (step.resource, Role.CONSUMER)
        if key in env.tokens:
            raise LoweringError(
                f"{self._where(step)}: skip_stage() after a try_wait() whose wait has not run"
            )
        keys = [key, release_key(step.resource)] if step.resource in self._lagged else [key]
        for k in keys:
            env.states[k] = self._advance(step, env.states[k])

    def _bounded(self, step: Step, state: Any, *, producer: bool) -> None:
        """In debug mode: a bounded probe that traps with a message before the blocking wait."""
        if self.debug:
            debug_wait.bounded_wait(
                self._pipe(step),
                state,
                producer=producer,
                task=self.task.name,
                resource=step.resource,
                step=f"{'producer_acquire' if producer else 'consumer_wait'} at line "
                f"{step.location.line}",
            )

    def _stage_info(self, step: Step, env: _Env) -> StageInfo:
        key = (step.resource, step.stage.role)
        state = env.current.get(key, env.states.get(key))
        spec = self.specs[step.resource].pipeline
        barrier = None
        if state is not None and spec is not None:
            # The stage's full barrier (what a TMA load completes on), for either side.
            pipe = self.pipelines[step.resource]
            if step.stage.role is Role.PRODUCER:
                barrier = dsl.producer_barrier(pipe, state)
            else:
                barrier = dsl.consumer_barrier(pipe, state)
        loop = env.loop
        return StageInfo(
            loop_offset=0 if loop is None else loop.offset,
            loop_start=0 if loop is None else loop.start,
            loop_end=0 if loop is None else loop.end,
            loop_step=1 if loop is None else loop.step,
            stage_idx=None if state is None else dsl.state_index(state),
            label=step.label,
            barrier=barrier,
            work_tile=self._block_work_tile() if env.tile is None else env.tile.info,
            num_active_stages=0 if spec is None else spec.stages,
            context=self.context,
            # Evaluated for every work call, as the reference does: a task's cache is
            # typically a few values derived from thread and block indices.
            task_cache=None if self.task_cache is None else self.task_cache(),
            iter_idx=0 if loop is None else loop.iter_idx,
            phase=None if state is None else dsl.state_phase(state),
            peek_work_tile=None if env.tile is None else env.tile.peek,
        )

    def _block_work_tile(self) -> Any:
        """The work tile outside a work-tile loop: this CTA's block index, valid (read once)."""
        if self._block_tile is None:
            raise LoweringError(f"task `{self.task.name}`: the block work tile was not read")
        return self._block_tile

    def _work(self, step: Step, env: _Env) -> None:
        resource = self.resources[step.resource]
        kwargs: dict[str, Any] = dict(step.constants)
        for route in step.inputs:
            src = self._steps[route.source_step]
            vkey = (src.resource, route.output)
            if vkey not in env.values:
                raise LoweringError(
                    f"{self._where(step)}: input `{route.argument}` reads "
                    f"{src.resource}.{route.output}, which has no value here"
                )
            kwargs[route.argument] = env.values[vkey]
        method = getattr(resource, step.label)
        missing = _missing_inputs(method, kwargs)
        if missing:
            names = ", ".join(f"`{m}`" for m in missing)
            raise LoweringError(
                f"{self._where(step)}: {step.resource}.{step.label}(...) leaves out {names}, "
                f"which {type(resource).__name__}.{step.label} requires; pass "
                + ", ".join(f"{m}=..." for m in missing)
                + " at the call (a token a consumer work returns, or a constant), or give the "
                "parameter a default"
            )
        result = method(self._stage_info(step, env), **kwargs)
        outs = step.outputs
        if not outs:
            return
        vals = list(result) if len(outs) > 1 else [result]
        if len(vals) != len(outs):
            raise LoweringError(
                f"{self._where(step)}: returned {len(vals)} values for outputs {outs}"
            )
        for name, val in zip(outs, vals, strict=True):
            if val is None:
                # A consumer work on a resource with one task-local variable writes it, but
                # one that returns nothing (an init work) leaves the slot as it was.
                continue
            env.values[(step.resource, name)] = val

    # -- carried values ---------------------------------------------------------------------

    def _initial_value(self, key: ValueKey, env: _Env, where: str) -> Any:
        if key in env.values:
            return env.values[key]
        slots = self.resources[key[0]].task_local_variables()
        var = slots.get(key[1])
        if var is None:
            for v in slots.values():
                if v.slot_name == key[1]:
                    var = v
        if var is None or var.initial_value() is None:
            raise LoweringError(
                f"task `{self.task.name}`: {where} carries {key[0]}.{key[1]} across "
                "iterations, but it has no DSL-typed default to start from"
            )
        return dsl.as_dsl_value(var.dtype, var.initial_value())

    def _carry(
        self, body: Sequence[Node], env: _Env, rest: Sequence[Node], where: str, loop: bool
    ) -> tuple[list[StateKey], list[ValueKey]]:
        states, written = touched(body, self._lagged, self._lagged_producers)
        needed = reads(rest, self._steps) | (carried_reads(body, self._steps) if loop else set())
        if not loop:
            # A branch that does not run keeps the old value: carry what exists already or
            # is read later.
            needed |= set(env.values)
        values = sorted(written & needed)
        for k in values:
            env.values[k] = self._initial_value(k, env, where)
        return sorted(states, key=lambda k: (k[0], k[1].value)), values

    @staticmethod
    def _pack(env: _Env, skeys: list[StateKey], vkeys: list[ValueKey]) -> list[Any]:
        return [env.states[k] for k in skeys] + [env.values[k] for k in vkeys]

    @staticmethod
    def _unpack(env: _Env, skeys: list[StateKey], vkeys: list[ValueKey], vals: list[Any]) -> None:
        for skey, v in zip(skeys, vals[: len(skeys)], strict=True):
            env.states[skey] = v
        for vkey, v in zip(vkeys, vals[len(skeys) :], strict=True):
            env.values[vkey] = v

    # -- domain loops -----------------------------------------------------------------------

    def _bounds(self, node: DomainLoop, env: _Env) -> tuple[Any, Any, Any]:
        ordinal = self._loop_ordinal[id(node)]
        given = self.bounds[ordinal] if ordinal < len(self.bounds) else None
        out: list[Any] = []
        for i, (b, what) in enumerate(
            zip((node.start, node.end, node.step), ("start", "end", "step"), strict=True)
        ):
            value = None if given is None else given[i]
            if isinstance(b, ConstBound):
                out.append(b.value)
            elif isinstance(b, DynamicBound) and callable(value):
                # A per-tile bound: the task method, called with this tile's coordinate (the
                # block index outside a work-tile loop).
                coord = env.tile.coord if env.tile is not None else dsl_tiles.block_index()
                out.append(value(coord))
            elif isinstance(b, RuntimeBound) and value is not None:
                out.append(value)
            else:
                raise LoweringError(
                    f"task `{self.task.name}`: {node.describe()} at {node.location}: the "
                    f"{what} bound {b.describe()} has no value; pass it in bounds[{ordinal}]"
                )
        return out[0], out[1], out[2]

    def _domain_loop(
        self, node: DomainLoop, env: _Env, rest: Sequence[Node], gate: Any = None
    ) -> None:
        """Emit ``node``; with ``gate`` (a runtime condition) it runs only where that holds."""
        start, end, step = self._bounds(node, env)
        trip = node.static_trip_count()
        if trip == 0:
            return
        if gate is not None:
            # end if gate else start: zero iterations. The body sees the real end whenever it
            # runs, so last_iter() and the iteration count stay right.
            first = dsl.as_dsl_value("Int32", start)
            last = dsl.as_dsl_value("Int32", end)
            end = dsl.if_then(gate, [first], lambda carried: [last])[0]
            trip = None
        skeys, vkeys = self._carry(node.body, env, rest, node.describe(), loop=True)
        outer_loop = env.loop

        def num_iters() -> Any:
            if trip is not None:
                return trip
            if not isinstance(step, int):
                # A runtime step is positive (scf.for assumes it); a count <= 0 means the
                # body never runs, so last_iter() is never tested then.
                return (end - start + step - 1) // step
            return (end - start + step - (1 if step > 0 else -1)) // step

        # scf.for needs a positive step: a negative constant step loops over the iteration
        # count instead. A runtime step must be positive (as scf.for assumes).
        reverse = isinstance(step, int) and step < 0

        def body(iv: Any, carried: list[Any]) -> list[Any]:
            inner = env.inner(None)
            self._unpack(inner, skeys, vkeys, carried)
            if reverse:
                offset, iter_idx = start + iv * step, iv
            elif isinstance(start, int) and start == 0 and isinstance(step, int) and step == 1:
                offset, iter_idx = iv, iv
            else:
                offset, iter_idx = iv, (iv - start) // step
            inner.loop = _Loop(offset, start, end, step, iter_idx, num_iters)
            self._body(node.body, inner, ())
            return self._pack(inner, skeys, vkeys)

        lo, hi, by = (0, num_iters(), 1) if reverse else (start, end, step)
        # No hint keeps the loop rolled (unroll 1), as the reference lowers domain loops.
        unroll = 1 if node.unroll is None else node.unroll
        results = dsl.for_range(lo, hi, by, self._pack(env, skeys, vkeys), body, unroll=unroll)
        self._unpack(env, skeys, vkeys, results)
        env.loop = outer_loop

    # -- work-tile loop ----------------------------------------------------------------------

    def _skip_function(self, node: WorkTileLoop) -> Callable[..., Any] | None:
        if node.skip_if is None:
            return None
        fn = skip_predicate(node.skip_if)
        if fn is None:
            # A plan decoded from JSON: the predicate must be a method of the queue's class.
            fn = getattr(
                type(self.resources[node.work_queue]), node.skip_if.rsplit(".", 1)[-1], None
            )
        if fn is None or not callable(fn):
            raise LoweringError(
                f"task `{self.task.name}`: {node.describe()} at {node.location}: skip_if "
                f"`{node.skip_if}` was not traced in this process and is no method of the work "
                "queue"
            )
        return fn

    def _work_tile_loop(self, node: WorkTileLoop, env: _Env, rest: Sequence[Node]) -> None:
        where = f"task `{self.task.name}`: {node.describe()} at {node.location}"
        source = self.queues.get(node.work_queue)
        if source is None:
            raise LoweringError(
                f"{where}: work queue `{node.work_queue}` has no tile source; use a "
                "ts_runtime.WorkQueue (or a resource with ts_tile_source())"
            )
        fetched_key = None
        if source.fetched_output is not None:
            fetched_key = (node.work_queue, source.fetched_output)
            if not any(
                isinstance(n, Step)
                and n.resource == node.work_queue
                and n.stage in (ScheduleStage.ProducerWork, ScheduleStage.ConsumerWork)
                for n in node.body
            ):
                raise LoweringError(
                    f"{where}: the dynamic work queue `{node.work_queue}` hands each next tile "
                    "over through its pipeline, but no work call on it sits directly in the "
                    f"loop body (outside any block); call {node.work_queue}.fetch_next_tile() "
                    "(the fetching warp, between acquire and commit) or "
                    f"{node.work_queue}.read_next_tile() (between wait and release) once per tile"
                )
        skip_fn = self._skip_function(node)
        queue = self.resources[node.work_queue]
        skeys, vkeys = self._carry(node.body, env, rest, node.describe(), loop=True)
        cursor = source.cursor()

        def cond(vals: list[Any]) -> Any:
            return dsl_tiles.tile_valid(vals[1])

        def body(vals: list[Any]) -> list[Any]:
            inner = env.inner(None)
            self._unpack(inner, skeys, vkeys, vals[2:])
            tile = vals[1]
            skip = None if skip_fn is None else skip_fn(queue, tile)
            # A static schedule knows the next tile now; a dynamic one fetches it in the body.
            peek = _peeker(source, vals[0]) if fetched_key is None else None
            inner.tile = _Tile(tile, dsl_tiles.tile_coord(tile), skip, peek)
            self._body(node.body, inner, ())
            fetched = None if fetched_key is None else inner.values.get(fetched_key)
            nxt = source.next_cursor(vals[0], fetched)
            return [nxt, source.tile(nxt), *self._pack(inner, skeys, vkeys)]

        start = [cursor, source.tile(cursor), *self._pack(env, skeys, vkeys)]
        results = dsl_tiles.while_loop(start, cond, body)
        self._unpack(env, skeys, vkeys, results[2:])

    # -- guards -----------------------------------------------------------------------------

    def _guard_condition(self, node: ConditionalBlock, env: _Env) -> Any:
        guard = node.guard
        where = f"task `{self.task.name}`: {node.describe()} at {node.location}"
        if isinstance(guard, Skippable):
            if env.tile is None:
                raise LoweringError(f"{where} is outside a work-tile loop")
            # Without skip_if no tile is skipped: the region always runs.
            return True if env.tile.skip is None else dsl.logical_not(env.tile.skip)
        if isinstance(guard, OpaqueCondition):
            key = condition_key(guard)
            if key is None or key not in env.values:
                raise LoweringError(f"{where} tests {guard.describe()}, which has no value here")
            value = dsl.Boolean(env.values[key])
            return dsl.logical_not(value) if guard.negated else value
        loop = env.loop
        if loop is None or not isinstance(guard, (FirstIteration, LastIteration, Every)):
            raise LoweringError(f"{where} is not lowered (an iteration predicate needs a loop)")
        i = loop.iter_idx
        if isinstance(guard, FirstIteration):
            return i == 0
        if isinstance(guard, LastIteration):
            return i == loop.num_iters() - 1
        cond = i >= guard.start
        if guard.period > 1:
            cond = cond & ((i - guard.start) % guard.period == 0)
        return cond

    def _conditional(self, node: ConditionalBlock, env: _Env, rest: Sequence[Node]) -> None:
        cond = self._guard_condition(node, env)
        only = node.body[0] if len(node.body) == 1 else None
        if (
            isinstance(node.guard, Skippable)
            and isinstance(only, DomainLoop)
            and not isinstance(cond, bool)
            and not (isinstance(only.step, ConstBound) and only.step.value < 0)
        ):
            # A skippable region that is one loop runs the loop zero times instead of
            # branching around it: the loop's own entry test then checks the skip and the
            # trip count at once (as the reference lowers skippable loops). Around a branch,
            # the loop's zero-trip test is invariant in the tile loop, and LLVM unswitches the
            # tile loop into a second copy for it. (Runtime conditions keep their branch: the
            # hand-written twins branch, and their PTX is the same.)
            self._domain_loop(only, env, rest, gate=cond)
            return
        loop = env.loop
        skeys, vkeys = self._carry(node.body, env, rest, node.describe(), loop=False)

        def then(carried: list[Any]) -> list[Any]:
            inner = env.inner(loop)
            self._unpack(inner, skeys, vkeys, carried)
            self._body(node.body, inner, ())
            return self._pack(inner, skeys, vkeys)

        results = dsl.if_then(cond, self._pack(env, skeys, vkeys), then)
        self._unpack(env, skeys, vkeys, results)


def _missing_inputs(method: Callable[..., Any], given: dict[str, Any]) -> list[str]:
    """The parameters after ``stage_info`` that ``method`` requires and the call leaves out.

    Found here rather than by the DSL, whose wrapper reports a missing argument as a
    ``TypeError`` of its own frame, far from the schedule line that made the call.
    """
    try:
        params = list(inspect.signature(method).parameters.values())[1:]  # after stage_info
    except (TypeError, ValueError):  # no signature to read: the call will say
        return []
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return []
    wanted = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [
        p.name for p in params if p.kind in wanted and p.default is p.empty and p.name not in given
    ]


def _work_outside_tile_loops(body: Sequence[Node]) -> bool:
    """True when a work call runs outside every work-tile loop (its work tile is the block's)."""
    return any(
        isinstance(node, Step)
        and not node.stage.is_pipeline_op
        and not any(isinstance(p, WorkTileLoop) for p in parents)
        for node, parents in iter_nodes(tuple(body))
    )


def lower_task(
    task: TaskSpec,
    resources: Mapping[str, MemoryResource],
    specs: Mapping[str, ResourceSpec],
    pipelines: Mapping[str, Any],
    *,
    bounds: Sequence[tuple[Any, Any, Any] | None] = (),
    context: Any = None,
    queues: Mapping[str, TileSource] | None = None,
    debug: bool = False,
    task_cache: Callable[[], Any] | None = None,
) -> None:
    """Emit ``task``'s schedule at the current insertion point of the kernel being traced.

    Args:
        task: The task (its warp range is dispatched by the caller).
        resources: The live resources by name (their work methods are called).
        specs: The plan's resource specs by name (pipelines, stage counts).
        pipelines: The ``cutlass.pipeline`` objects by resource name.
        bounds: Values of runtime domain-loop bounds: entry ``k`` is ``(start, end, step)`` of
            the ``k``-th domain loop of the schedule in pre-order; constant bounds may be None.
            A per-tile bound (a task method in the schedule) is given as a callable, called
            with the work tile's coordinate (the block index outside a work-tile loop).
        context: Passed to every work call as ``stage_info.context``.
        queues: The tile source of every work queue, by resource name.
        debug: Lower every blocking wait as a bounded wait that traps with a message.
        task_cache: Called for every work call; its result is ``stage_info.task_cache``.

    Raises:
        LoweringError: A construct that is not lowered yet, or a bound without a value.
    """
    TaskLowering(
        task, resources, specs, pipelines, bounds, context, queues, debug, task_cache
    ).run()
