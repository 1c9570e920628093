"""The Hopper attention example: verified on the host, compiled for sm_90a, broken variants refused.

Host checks (fast): every configuration family's plan verifies; the KV trip count per query
tile agrees with a brute-force count of the blocks that hold a visible key; schedules that
give a K or V stage back before its WGMMAs retire are rejected with TS-V113 (naming the
warpgroup that does it); a warpgroup that skips the shared V ring, and rings whose arrival
count covers one warpgroup only, are refused (TS-R003). Three compiles (seconds each on a
CPU): the default (D = 128, bf16), D = 128 fp16 causal GQA, and D = 64 bf16 causal; each PTX
holds the WGMMAs (PV with a register A operand), TMA and ``setmaxnreg``; the default one
passes translation validation against its plan (the causal one does too, in minutes).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("cutlass")
pytest.importorskip("ts_runtime")
pytest.importorskip("ts_verify")

from ts_trace import ResourceProxy

WGMMA = re.compile(
    r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16\.f32\.(\w+)\.\w+ \{[^}]*\}, (\{)?"
)


@pytest.fixture(scope="module")
def attention(load_example: Callable[[str], Any]) -> Any:
    return load_example("attention")


@pytest.fixture(scope="module")
def host(load_example: Callable[[str], Any]) -> Any:
    return load_example("_attention_host")


FAMILIES = [
    {"head_dim": d, "dtype": dt, "causal": c, "group": g}
    for d in (64, 128, 256)
    for dt, c, g in (("bf16", False, 1), ("fp16", True, 1), ("bf16", True, 4))
]


@pytest.mark.parametrize("options", FAMILIES, ids=lambda o: "-".join(map(str, o.values())))
def test_every_family_verifies(attention: Any, options: dict[str, Any]) -> None:
    plan = attention.make_plan(attention.AttentionConfig(**options))
    assert {t.name for t in plan.tasks} == {"load", "math0", "math1"}


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128, 256])
def test_kv_trip_count_matches_brute_force(attention: Any, causal: bool, head_dim: int) -> None:
    cfg = attention.AttentionConfig(head_dim=head_dim, causal=causal)
    bn, bm = cfg.block_n, attention.BLOCK_M
    for seqlen in (0, 1, 63, 64, 65, 127, 128, 129, 1000):
        for m in range(-(-seqlen // bm)):
            rows = range(m * bm, min((m + 1) * bm, seqlen))
            # a block is needed when some row of the tile sees some key of it
            needed = [
                n
                for n in range(-(-seqlen // bn))
                if any(c <= r or not causal for r in rows for c in range(n * bn, (n + 1) * bn))
            ]
            assert attention.kv_blocks(cfg, seqlen, m) == len(needed), (seqlen, m)
            assert needed == list(range(len(needed)))  # a prefix: the loop starts at block 0
            assert needed  # at least one: the math tasks peel block 0


def _early_v(k: ResourceProxy, v: ResourceProxy, mw: ResourceProxy) -> None:
    k.wait()
    k.qk()
    k.mma_wait_all()
    k.release()
    mw.softmax()
    mw.convert()
    v.wait()
    v.pv()
    v.release()  # the PV WGMMAs may still read the V stage
    v.mma_wait_all()


def _early_k(k: ResourceProxy, v: ResourceProxy, mw: ResourceProxy) -> None:
    k.wait()
    k.qk()
    k.release()  # the QK WGMMAs may still read the K stage
    k.mma_wait_all()
    mw.softmax()
    mw.convert()
    v.wait()
    v.pv()
    v.mma_wait_all()
    v.release()


def _pipelined(attention: Any, *, prior_too_soon: bool = False, v_too_soon: bool = False) -> Any:
    """The pipelined KV part with one fault: ``wait_group 1`` before the PV is issued (then
    the group it leaves in flight is ``S_j``, and the K stage goes back while read), or the V
    stage given back after ``wait_group 1`` only (``PV_{j-1}`` is the newest group)."""
    from ts_trace import domain_loop

    def part(k: ResourceProxy, v: ResourceProxy, mw: ResourceProxy) -> None:
        k.wait()
        k.qk()
        k.mma_wait_all()
        k.release()
        mw.softmax()
        mw.convert()
        with domain_loop(1, attention.AttentionTask.kv_blocks, unroll=1):
            k.wait()
            k.qk()
            if prior_too_soon:
                k.mma_wait_prior()
            v.wait()
            v.pv()
            if not prior_too_soon:
                k.mma_wait_prior()
            k.release()
            mw.softmax()
            if v_too_soon:
                v.release()
                v.mma_wait_all()
            else:
                v.mma_wait_all()
                v.release()
            mw.convert()
        v.wait()
        v.pv()
        v.mma_wait_all()
        v.release()

    return part


def test_default_step_is_the_pipelined_one(attention: Any) -> None:
    assert attention.attention_kernel.__defaults__[0] is attention.kv_pipelined
    attention.make_plan(attention.AttentionConfig(), step=attention.serial())


@pytest.mark.parametrize(
    ("fault", "ring"),
    [
        ({"block": _early_v}, "v"),
        ({"block": _early_k}, "k"),
        ({"prior_too_soon": True}, "k"),
        ({"v_too_soon": True}, "v"),
    ],
    ids=["serial-early-v", "serial-early-k", "pipelined-prior-too-soon", "pipelined-early-v"],
)
def test_release_before_wgmma_retires_is_rejected(
    attention: Any, fault: dict[str, Any], ring: str
) -> None:
    from ts_verify import VerificationError

    fault = dict(fault)  # the parameter is shared between runs
    block = fault.pop("block", None)
    step = attention.serial(block) if block else _pipelined(attention, **fault)
    with pytest.raises(VerificationError) as err:
        attention.make_plan(attention.AttentionConfig(), step=step)
    report = err.value.report
    assert set(report.codes()) == {"TS-V113"}
    first = report.diagnostics[0]
    assert (first.task, first.resource) == ("math0", ring)
    assert first.location is not None
    assert first.location.function == (block or step).__name__  # the user's line


def test_second_warpgroup_early_release_is_its_own(attention: Any) -> None:
    """Only the second warpgroup gives K back early: the report names it, not the first."""
    from ts_verify import VerificationError

    with pytest.raises(VerificationError) as err:
        attention.make_plan(attention.AttentionConfig(), second_step=attention.serial(_early_k))
    report = err.value.report
    assert set(report.codes()) == {"TS-V113"}
    assert {(d.task, d.resource) for d in report.diagnostics} == {("math1", "k")}


def _k_only(k: ResourceProxy, v: ResourceProxy, mw: ResourceProxy) -> None:
    k.wait()
    k.qk()
    k.mma_wait_all()
    k.release()
    mw.softmax()
    mw.convert()


def test_warpgroup_that_skips_the_shared_ring_is_refused(attention: Any) -> None:
    """Both warpgroups read every V stage: one that never releases V leaves each V stage's
    phase one warpgroup short, so the producer would wait forever (TS-R003 names V)."""
    from ts_runtime.errors import GroupSizeError

    with pytest.raises(GroupSizeError, match=r"TS-R003: resource `v`.*never completes"):
        attention.make_plan(attention.AttentionConfig(), second_step=attention.serial(_k_only))


def test_ring_counting_one_warpgroup_is_refused(attention: Any) -> None:
    """A shared ring whose stage is free after 128 releases would be refilled while the other
    warpgroup still reads it: refused before anything is verified or compiled (TS-R003)."""
    from ts_runtime.errors import GroupSizeError

    with pytest.raises(GroupSizeError, match="TS-R003"):
        attention.make_plan(attention.AttentionConfig(), consumers=attention.WARPGROUP)


class _Dropped:
    """Stands for the token ring a warpgroup should pass the turn on: it never does."""

    def acquire(self) -> None:
        pass

    def commit(self) -> None:
        pass


def test_q_ring_depth(attention: Any) -> None:
    """Two Q stages by default (the next tile's Q loads during this one); one verifies too and
    leaves D = 64 a sixth K / V stage."""
    two = attention.AttentionConfig(head_dim=64)
    one = attention.AttentionConfig(head_dim=64, q_stages=1)
    assert (two.q_stages, two.stages, one.stages) == (2, 5, 6)
    for cfg in (two, one):
        q = next(r for r in attention.make_plan(cfg).resources if r.name == "q")
        assert q.pipeline is not None and q.pipeline.stages == cfg.q_stages


def test_head_dim_256_fits(attention: Any) -> None:
    """D = 256: 64-key blocks (O alone is 128 registers a thread), one Q stage, two K / V
    stages and O stored in two 64 x 128 chunks: within the SMEM of a CTA. Two Q stages and two
    K / V stages do not fit, and a head dim the kernel has no tiles for is refused at once."""
    cfg = attention.AttentionConfig(head_dim=256)
    assert (cfg.block_n, cfg.q_stages, cfg.stages, cfg.epi_cols) == (64, 1, 2, 128)
    assert cfg.smem_bytes <= attention.steps.SMEM_BYTES - attention.steps.SMEM_RESERVED
    assert cfg == attention.AttentionConfig(head_dim=256, q_stages=1)  # one compile-cache key
    with pytest.raises(ValueError, match="bytes of SMEM"):
        attention.AttentionConfig(head_dim=256, q_stages=2, kv_stages=2)
    with pytest.raises(ValueError, match="head_dim 96"):
        attention.AttentionConfig(head_dim=96)


@pytest.mark.parametrize("head_dim", [64, 128, 256])
def test_staggered_schedule_verifies(attention: Any, head_dim: int) -> None:
    """Per head dim (its stage counts), every family: they plan the same kernel, verified once
    (the staged kernel shares a report between equal plans)."""
    for options in (f for f in FAMILIES if f["head_dim"] == head_dim):
        plan = attention.make_plan(attention.AttentionConfig(**options, stagger=True))
        tokens = {r.name for r in plan.resources if r.name in ("t0", "t1")}
        assert tokens == {"t0", "t1"}


def test_missing_math_order_handoff_is_rejected(attention: Any) -> None:
    """Warpgroup 1 waits for its turn but never passes it back: warpgroup 0 would wait on
    ``t1`` forever after its first issue; the ``t1`` counts differ (TS-V301)."""
    from ts_verify import VerificationError

    def never_passes(k: Any, v: Any, mw: Any, turn: Any) -> None:
        attention.kv_pipelined(k, v, mw, (turn[0], _Dropped()))

    with pytest.raises(VerificationError) as err:
        attention.make_plan(attention.AttentionConfig(stagger=True), second_step=never_passes)
    assert "TS-V301" in err.value.report.codes()
    assert {d.resource for d in err.value.report.diagnostics} == {"t1"}


def ptxas_clean(ptx: str, ptxas_log: Callable[..., str]) -> None:
    """ptxas keeps every register (D = 256: ``O`` alone is 128 a thread) and the WGMMA
    pipeline: no spill, no serialized WGMMA (warnings C7514 / C7515). Skipped without ptxas."""
    if shutil.which("ptxas") is None:
        return
    log = ptxas_log(ptx, "attention")
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in log, log
    assert "C7514" not in log and "C7515" not in log, log


def _compiled(attention: Any, host: Any, **options: Any) -> tuple[Any, str, Any]:
    cfg = attention.AttentionConfig(**options)
    compiled = attention.attention_kernel(cfg).compile(*host.fake_operands(cfg))
    return cfg, compiled.as_text(), compiled


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"dtype": "fp16", "causal": True, "group": 2},
        pytest.param({"head_dim": 64, "causal": True}, marks=pytest.mark.smoke),
        {"stagger": True},
        {"head_dim": 256, "dtype": "fp16", "causal": True},
        {"head_dim": 256},
    ],
    ids=[
        "d128-bf16",
        "d128-fp16-causal-gqa",
        "d64-bf16-causal",
        "d128-bf16-stagger",
        "d256-fp16-causal",
        "d256-bf16",
    ],
)
def test_compiles_for_sm90a_and_validates(
    attention: Any, host: Any, options: Any, ptxas_log: Callable[..., str]
) -> None:
    cfg, ptx, compiled = _compiled(attention, host, **options)
    regs = re.findall(r"setmaxnreg\.(dec|inc)\.sync\.aligned\.u32\s+(\d+);", ptx)
    assert sorted(regs) == [("dec", "40"), ("inc", "232"), ("inc", "232")]  # producer, 2 math
    assert "cp.async.bulk.tensor" in ptx
    mmas = WGMMA.findall(ptx)
    dtype = {"bf16": "bf16", "fp16": "f16"}[cfg.dtype]
    d, bn = cfg.head_dim, cfg.block_n
    # per math warpgroup, twice (block 0 peeled / the loop, the loop / the last block's PV):
    # S = Q K^T from SMEM (D / 16 WGMMAs of N = BN), O += P V with P in registers (BN / 16
    # WGMMAs of N = D)
    qk = [m for m in mmas if m[0] == str(bn) and not m[2]]
    pv = [m for m in mmas if m[0] == str(d) and m[2] == "{"]
    assert len(qk) == 2 * 2 * d // 16 and len(pv) == 2 * 2 * bn // 16
    # the pipelined loop: one wait_group 1 per math warpgroup, the rest wait_group 0
    waits = re.findall(r"wgmma\.wait_group\.sync\.aligned\s+(\d+);", ptx)
    assert sorted(waits) == ["0"] * 6 + ["1"] * 2
    assert len(mmas) == len(qk) + len(pv)
    assert {m[1] for m in mmas} == {dtype}
    # O leaves by TMA stores of 64 x 64 boxes (the 128-byte swizzle's width), D / 64 per
    # warpgroup: for D = 256 two chunks of 64 x 128 through one SMEM buffer
    stores = re.findall(r"cp\.async\.bulk\.tensor\.\dd\.global\.shared", ptx)
    assert len(stores) == 2 * d // 64
    ptxas_clean(ptx, ptxas_log)
    if not cfg.causal:
        # The PTX's barrier protocol is the verified plan's. (It holds for the causal PTX too,
        # but translation validation takes minutes there: its per-tile trip count and masked
        # blocks multiply the paths it walks.)
        compiled.check().raise_for_errors()
