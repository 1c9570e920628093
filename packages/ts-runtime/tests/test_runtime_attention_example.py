"""The Hopper attention example: verified on the host, compiled for sm_90a, broken variants refused.

Host checks (fast): every configuration family's plan verifies; the KV trip count per query
tile agrees with a brute-force count of the blocks that hold a visible key; schedules that
give a K or V stage back before its WGMMAs retire, or that break the ping-pong turns, are
rejected with the right codes. Three compiles (seconds each on a CPU): the default
(D = 128, bf16), D = 128 fp16 causal GQA, and D = 64 bf16 causal; each PTX
holds the WGMMAs (PV with a register A operand), TMA and ``setmaxnreg``; the default one
passes translation validation against its plan (the causal one does too, in minutes).
"""

from __future__ import annotations

import contextlib
import re
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
    for d in (64, 128)
    for dt, c, g in (("bf16", False, 1), ("fp16", True, 1), ("bf16", True, 4))
]


@pytest.mark.parametrize("options", FAMILIES, ids=lambda o: "-".join(map(str, o.values())))
def test_every_family_verifies(attention: Any, options: dict[str, Any]) -> None:
    plan = attention.make_plan(attention.AttentionConfig(**options))
    assert {t.name for t in plan.tasks} == {"load", "math0", "math1"}


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128])
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


def _early_v(k: ResourceProxy, v: ResourceProxy, mw: ResourceProxy) -> None:
    k.wait()
    k.qk()
    k.mma_wait_all()
    k.release()
    mw.softmax()
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
    v.wait()
    v.pv()
    v.mma_wait_all()
    v.release()


@pytest.mark.parametrize(("step", "ring"), [(_early_v, "v0"), (_early_k, "k0")])
def test_release_before_wgmma_retires_is_rejected(
    attention: Any, step: Callable[..., None], ring: str
) -> None:
    from ts_verify import VerificationError

    with pytest.raises(VerificationError) as err:
        attention.make_plan(attention.AttentionConfig(), step=step)
    report = err.value.report
    assert set(report.codes()) == {"TS-V113"}
    first = report.diagnostics[0]
    assert (first.task, first.resource) == ("math0", ring)
    assert first.location is not None
    assert first.location.function == step.__name__  # the user's line


def _every_tile(odd: Any, key: str) -> Any:
    return contextlib.nullcontext()


@pytest.mark.parametrize("second", ["same_turn", "no_turn"])
def test_broken_ping_pong_handoff_is_rejected(attention: Any, second: str) -> None:
    """The second math warpgroup takes the first one's turns (or every tile): the producer
    fills its rings only on the odd tiles, so it would wait forever."""
    from task_scheduling import when_false
    from ts_verify import VerificationError

    turns = (when_false, when_false if second == "same_turn" else _every_tile)
    with pytest.raises(VerificationError) as err:
        attention.make_plan(attention.AttentionConfig(), turns_of=turns)
    assert "TS-V301" in err.value.report.codes()
    assert {d.resource for d in err.value.report.diagnostics} <= {"q1", "k1", "v1"}


def _compiled(attention: Any, host: Any, **options: Any) -> tuple[Any, str, Any]:
    cfg = attention.AttentionConfig(**options)
    compiled = attention.attention_kernel(cfg).compile(*host.fake_operands(cfg))
    return cfg, compiled.as_text(), compiled


@pytest.mark.parametrize(
    "options",
    [{}, {"dtype": "fp16", "causal": True, "group": 2}, {"head_dim": 64, "causal": True}],
    ids=["d128-bf16", "d128-fp16-causal-gqa", "d64-bf16-causal"],
)
def test_compiles_for_sm90a_and_validates(attention: Any, host: Any, options: Any) -> None:
    cfg, ptx, compiled = _compiled(attention, host, **options)
    regs = re.findall(r"setmaxnreg\.(dec|inc)\.sync\.aligned\.u32\s+(\d+);", ptx)
    assert sorted(regs) == [("dec", "40"), ("inc", "232"), ("inc", "232")]  # producer, 2 math
    assert "cp.async.bulk.tensor" in ptx
    mmas = WGMMA.findall(ptx)
    dtype = {"bf16": "bf16", "fp16": "f16"}[cfg.dtype]
    d, bn = cfg.head_dim, cfg.block_n
    # per math warpgroup: S = Q K^T from SMEM (D / 16 WGMMAs of N = BN), O += P V with P
    # in registers (BN / 16 WGMMAs of N = D)
    qk = [m for m in mmas if m[0] == str(bn) and not m[2]]
    pv = [m for m in mmas if m[0] == str(d) and m[2] == "{"]
    assert len(qk) == 2 * d // 16 and len(pv) == 2 * bn // 16
    assert len(mmas) == len(qk) + len(pv)
    assert {m[1] for m in mmas} == {dtype}
    if not cfg.causal:
        # The PTX's barrier protocol is the verified plan's. (It holds for the causal PTX too,
        # but translation validation takes minutes there: its per-tile trip count and masked
        # blocks multiply the paths it walks.)
        compiled.check().raise_for_errors()
