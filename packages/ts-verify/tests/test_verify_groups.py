"""Pipeline groups: Merge (two loads, one store), Fork (one load, two consumers), FusedMerge.

Each broken plan is one edit of a correct kernel; what must go wrong is worked out by hand from
the barrier protocol (a Merge's one release frees every member's stage; a Fork's one commit
publishes every member's), not from the verifier's expansion.
"""

from __future__ import annotations

from typing import Any

import pytest
from verify_testkit import Dst, Src, marker_line, plan_of, ring, task

from ts_ir import KernelPlan, PipelineGroupMode, from_json, to_json
from ts_trace import PipelineGroup, TraceError, domain_loop, schedule
from ts_verify import verify


def _load(trips: int = 8) -> Any:
    @schedule
    def load(s: Any, r: Any) -> None:
        with domain_loop(trips):
            item = s.load()
            r.acquire()
            r.store(item=item)
            r.commit()

    return load


def _merge(
    store_body: Any,
    *,
    trips_b: int = 8,
    stages_b: int = 2,
    mode: PipelineGroupMode = PipelineGroupMode.Merge,
) -> KernelPlan:
    """Loads `la` / `lb` fill `smem_a` / `smem_b`; the store task drains both through the group."""
    a, b = ring("smem_a"), ring("smem_b", stages=stages_b)
    group = PipelineGroup(name="ab", members=[a, b], mode=mode)
    sa, sb, out = Src(name="ga"), Src(name="gb"), Dst(name="out")
    return plan_of(
        task("la", _load()(sa, a), [sa], [a], warp=0),
        task("lb", _load(trips_b)(sb, b), [sb], [b], warp=4),
        task("st", schedule(store_body)(group, out), [a, b], [out], warp=8),
    )


def merge_store(g: Any, out: Any) -> None:
    with domain_loop(8):
        g.smem_a.wait()
        g.smem_b.wait()
        view = g.smem_a.read()
        g.smem_b.read()
        out.write(item=view)
        g.release()  # one release frees both members' stages


def member_release(g: Any, out: Any) -> None:
    with domain_loop(8):
        g.smem_a.wait()
        g.smem_b.wait()
        out.write(item=g.smem_a.read())
        g.smem_a.release()  # V241 member_release
        g.release()


def fused_store(g: Any, out: Any) -> None:
    with domain_loop(8):
        g.wait()  # waits for every member's stage
        out.write(item=g.smem_a.read())
        g.release()


def test_merge_verifies() -> None:
    report = verify(_merge(merge_store))
    assert report.ok and report.diagnostics == (), report.as_text()


def test_fused_merge_verifies() -> None:
    report = verify(_merge(fused_store, mode=PipelineGroupMode.FusedMerge))
    assert report.ok and report.diagnostics == (), report.as_text()


def test_merge_with_mismatched_trip_counts_deadlocks() -> None:
    """`lb` fills 7 stages, the store waits for 8: its 8th wait on smem_b never returns."""
    report = verify(_merge(merge_store, trips_b=7))
    assert not report.ok
    assert set(report.codes()) & {"TS-V301", "TS-V302"}, report.as_text()


def test_member_release_in_a_merge_is_misplaced() -> None:
    report = verify(_merge(member_release))
    (d,) = [d for d in report.diagnostics if d.code == "TS-V241"]
    assert d.task == "st" and d.resource == "smem_a" and "ab.release()" in d.fix
    assert d.location is not None
    assert d.location.line == marker_line(__file__, "V241 member_release")


def test_group_runs_only_its_collapsed_op() -> None:
    def store(g: Any, out: Any) -> None:
        with domain_loop(8):
            g.wait()  # a Merge's consumer waits member by member
            out.write(item=g.smem_a.read())
            g.release()

    (d,) = [d for d in verify(_merge(store)).diagnostics if d.code == "TS-V241"]
    assert d.resource == "ab" and "ab.wait()" in d.message and "ab.release()" in d.message


def test_members_need_equal_stages() -> None:
    report = verify(_merge(merge_store, stages_b=3))
    (d,) = [d for d in report.diagnostics if d.code == "TS-V240"]
    assert "`smem_a` 2, `smem_b` 3" in d.message and d.location is not None


def test_merge_has_one_consumer_task() -> None:
    a, b = ring("smem_a"), ring("smem_b")
    PipelineGroup(name="ab", members=[a, b])  # the members know their group
    sa, sb, out, out2 = Src(name="ga"), Src(name="gb"), Dst(name="out"), Dst(name="out2")

    @schedule
    def drain(r: Any, o: Any) -> None:
        with domain_loop(8):
            r.wait()
            o.write(item=r.read())
            r.release()

    plan = plan_of(
        task("la", _load()(sa, a), [sa], [a], warp=0),
        task("lb", _load()(sb, b), [sb], [b], warp=4),
        task("sa", drain(a, out), [a], [out], warp=8),
        task("sb", drain(b, out2), [b], [out2], warp=12),
    )
    assert plan.groups and plan.groups[0].name == "ab"
    (d,) = [d for d in verify(plan).diagnostics if d.code == "TS-V240"]
    assert "`smem_a`: sa; `smem_b`: sb" in d.message


# -- Fork: one load, two consumers ----------------------------------------------------------------
def _fork(second_consumer: Any) -> KernelPlan:
    a, b = ring("smem_gemm"), ring("smem_act")
    group = PipelineGroup(name="fork", members=[a, b], mode=PipelineGroupMode.Fork)
    src, out, out2 = Src(name="ga"), Dst(name="d"), Dst(name="relu")

    @schedule
    def load(s: Any, g: Any) -> None:
        with domain_loop(8):
            item = s.load()
            g.smem_gemm.acquire()
            g.smem_act.acquire()
            g.smem_gemm.store(item=item)
            g.commit()  # one commit publishes both members

    @schedule
    def gemm(r: Any, o: Any) -> None:
        with domain_loop(8):
            r.wait()
            o.write(item=r.read())
            r.release()

    return plan_of(
        task("load", load(src, group), [src], [a, b], warp=0),
        task("gemm", gemm(a, out), [a], [out], warp=4),
        task("act", schedule(second_consumer)(b, out2), [b], [out2], warp=8),
    )


def act_releases(r: Any, o: Any) -> None:
    with domain_loop(8):
        r.wait()
        o.write(item=r.read())
        r.release()


def act_never_releases(r: Any, o: Any) -> None:
    with domain_loop(8):
        r.wait()
        o.write(item=r.read())  # V10x act_never_releases


def test_fork_verifies() -> None:
    report = verify(_fork(act_releases))
    assert report.ok and report.diagnostics == (), report.as_text()


def test_fork_consumer_that_never_releases_is_an_error() -> None:
    """The load's third acquire of smem_act waits for a release that never comes."""
    report = verify(_fork(act_never_releases))
    assert not report.ok
    errors = [d for d in report.diagnostics if d.task == "act" and d.resource == "smem_act"]
    assert errors, report.as_text()


def test_member_commit_in_a_fork_is_misplaced() -> None:
    a, b = ring("x"), ring("y")
    group = PipelineGroup(name="fork", members=[a, b], mode=PipelineGroupMode.Fork)
    src, out = Src(name="g"), Dst(name="d")

    @schedule
    def load(s: Any, g: Any) -> None:
        with domain_loop(8):
            item = s.load()
            g.x.acquire()
            g.y.acquire()
            g.x.store(item=item)
            g.x.commit()
            g.y.commit()

    @schedule
    def both(x: Any, y: Any, o: Any) -> None:
        with domain_loop(8):
            x.wait()
            y.wait()
            o.write(item=x.read())
            x.release()
            y.release()

    plan = plan_of(
        task("load", load(src, group), [src], [a, b], warp=0),
        task("use", both(a, b, out), [a, b], [out], warp=4),
    )
    found = [d for d in verify(plan).diagnostics if d.code == "TS-V241"]
    assert {d.resource for d in found} == {"x", "y"} and all(
        "fork.commit()" in d.fix for d in found
    )


# -- declarations and IR --------------------------------------------------------------------------
def test_declaration_errors_are_typed() -> None:
    a = ring("a")
    with pytest.raises(TraceError, match=r"members=.* must be a list of at least two"):
        PipelineGroup(name="g", members=[a])
    with pytest.raises(TraceError, match=r"mode=.* is not a PipelineGroupMode"):
        PipelineGroup(name="g", members=[a, ring("b")], mode="Merge")  # type: ignore[arg-type]
    b, c = ring("b"), ring("c")
    PipelineGroup(name="g1", members=[b, c])
    with pytest.raises(TraceError, match="member of PipelineGroup `g1` and of `g2`"):
        PipelineGroup(name="g2", members=[b, a])


def test_groups_survive_json() -> None:
    plan = _merge(merge_store)
    again = from_json(to_json(plan))
    assert isinstance(again, KernelPlan) and again.groups == plan.groups
    assert verify(again).ok
