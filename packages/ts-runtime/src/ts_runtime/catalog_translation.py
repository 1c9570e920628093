"""The translation-validation part of the error catalog: every ``TS-X1xx`` code, with examples.

:mod:`ts_runtime.ptx_check` compares the barrier protocol a compiled kernel's PTX executes with
the verified plan; each difference carries one of these codes (registered in the
:mod:`ts_ir.catalog` registry, printed by ``ts explain``). The "wrong" examples are the plan /
PTX pairs that disagree: what the code generator or the CuTe DSL emitted is not what the
verifier proved, so the fix is in the lowering (or in a declaration that the lowering reads
differently from the verifier).
"""

from __future__ import annotations

from functools import partial

from ts_ir import CatalogEntry, entry_from_text

__all__ = ["TRANSLATION_ENTRIES"]

_entry = partial(entry_from_text, "ts-runtime")

TRANSLATION_ENTRIES: tuple[CatalogEntry, ...] = (
    _entry(
        "TS-X101",
        "the kernel's mbarriers are not the plan's rings",
        "lower every pipelined resource to one array of 2 x stages mbarriers (full, then empty)",
        """
        Every ring of the plan owns one full and one empty mbarrier per stage, initialised
        once before the tasks start. The PTX's `mbarrier.init` instructions must create
        exactly these: one array per ring, in the plan's resource order, with one constant
        arrival count per side. A missing, extra or misplaced barrier means the kernel's
        protocol is not the one the verifier proved.
        """,
        """
        # plan: ring `ab` with 4 stages -> 8 mbarriers; the PTX initialises 6
        mbarrier.init.shared.b64 [%r1+229376], %r41;   # ... only 3 full barriers
        """,
        """
        mbarrier.init.shared.b64 [%r1+229376], %r41;   # 4 full barriers, then 4 empty
        """,
    ),
    _entry(
        "TS-X102",
        "arrivals per phase differ from the plan",
        "make the barrier's count equal to what one signal of the plan's tasks arrives "
        "(e.g. count warps when the pipeline arrives once per warp)",
        """
        The plan says how many signals (commits or releases) complete one phase of a ring's
        barrier. In the PTX, the barrier's `mbarrier.init` count must equal that many times
        the arrivals one signal makes: the threads of the task that run the `mbarrier.arrive`
        (times its count). The first TMA copy on the H200 hung on exactly this: the pipeline
        arrived once per consumer warp while the barrier counted the consumer threads.
        """,
        """
        # empty barrier initialised with 256, the 8-warp task arrives once per warp
        mbarrier.init.shared.b64 [%r1+65552], 256;
        @%p_lane0 mbarrier.arrive.shared.b64 %rd8, [%r7+65552], 1;
        """,
        """
        mbarrier.init.shared.b64 [%r1+65552], 8;
        @%p_lane0 mbarrier.arrive.shared.b64 %rd8, [%r7+65552], 1;
        """,
    ),
    _entry(
        "TS-X103",
        "transaction bytes differ from the plan",
        "arm the full barrier with the ring's bytes_per_stage and let only TMA copies "
        "(and one CLC try_cancel per stage of a CLC ring) complete bytes on full barriers",
        """
        A TMA ring's full barrier completes when the arrivals and the transaction bytes of a
        stage are in. The `mbarrier.arrive.expect_tx` that arms it must announce the plan's
        `bytes_per_stage` (the sum of the boxes the stage's copies load), and every
        `cp.async.bulk` that completes bytes must name a full barrier of a TMA ring. Too few
        bytes let the consumer read a half-written stage; too many hang it. A CLC ring
        (`ClcFetchAsync`) is armed the same way for the 16-byte answer, which one
        `clusterlaunchcontrol.try_cancel` per stage, issued by one thread of the task that
        fills the ring, completes on the stage's full barrier.
        """,
        """
        # bytes_per_stage=32768 in the plan
        mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r5+65536], 16384;
        """,
        """
        mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r5+65536], 32768;
        """,
    ),
    _entry(
        "TS-X104",
        "a wait expects the wrong parity",
        "start producers' waits on parity 1 and consumers' on parity 0, and flip the parity "
        "exactly when the stage index wraps",
        """
        A ring stage's barrier alternates phases; a wait names the parity of the phase it
        waits for. The producer's first wait on an empty barrier expects parity 1 (a fresh
        barrier passes it: the ring starts empty), the consumer's first wait on a full barrier
        parity 0, and both flip when their stage index wraps around the ring. Recovered from
        the registers the PTX waits with: their initial values and the blocks that advance
        them, run on every (stage, parity). A consumer starting on parity 1 reads stages
        before they are filled; a parity that never flips hangs the second round. A consumer
        that skips stages (`skip_stage()`, no barrier operation) first waits where the skips
        before that wait may have moved it.
        """,
        """
        mov.b32 %r54, 1;        # the consumer's parity register starts at 1
        mbarrier.try_wait.parity.shared.b64 P1, [%r34], %r54;
        """,
        """
        mov.b32 %r54, 0;
        mbarrier.try_wait.parity.shared.b64 P1, [%r34], %r54;
        """,
    ),
    _entry(
        "TS-X105",
        "a barrier is used by the wrong task or side",
        "let producers wait on empty barriers and arrive on full ones, consumers the reverse, "
        "each only on rings its schedule names",
        """
        Each barrier operation in the PTX is attributed to the tasks whose warps can reach it
        (the warp-dispatch branches decide) and to a ring and side by its SMEM address. A task
        may wait on a ring's empty barriers only if its schedule acquires the ring, on its full
        barriers only if it waits on the ring, and arrive only where it commits or releases. An
        operation on an address that is no barrier of the plan, or reached by no task, is
        reported too.
        """,
        """
        # the consumer task waits on the ring's *empty* barrier
        mbarrier.try_wait.parity.shared.b64 P1, [%r7+65552], %r54;
        """,
        """
        mbarrier.try_wait.parity.shared.b64 P1, [%r7+65536], %r54;
        """,
    ),
    _entry(
        "TS-X106",
        "setmaxnreg differs from the tasks' register budgets",
        "give every warpgroup one setmaxnreg with its tasks' num_registers (.inc above the "
        "launch budget, .dec below), run by all four warps",
        """
        `setmaxnreg` applies to a whole warpgroup: all four warps must execute it, with the
        register count of the tasks in that warpgroup, increasing above the budget the CTA
        launched with and decreasing below it. A warpgroup whose tasks declare no budget must
        not execute one.
        """,
        """
        # task `mma` (warps 4-11) declares 232 registers
        setmaxnreg.inc.sync.aligned.u32 240;
        """,
        """
        setmaxnreg.inc.sync.aligned.u32 232;
        """,
    ),
    _entry(
        "TS-X107",
        "SMEM overlap the plan did not allow",
        "carve the ring buffers and the mbarriers from one allocator, in one layout that fits "
        "the capacity",
        """
        The mbarriers live in SMEM beside the ring buffers. A TMA copy whose destination
        slots reach into the barrier array would overwrite barrier state, and a layout whose
        barriers end past the plan's SMEM capacity fails to launch. The destination of every
        copy into SMEM is checked against the barrier region (per stage, over every stage of
        the ring) and the region against the capacity.
        """,
        """
        # barriers at 65536..65568; the ring's 2 stages of 32768 bytes start at 32768
        cp.async.bulk.tensor.2d.shared::cta.global... [%r30+32768], ...
        """,
        """
        cp.async.bulk.tensor.2d.shared::cta.global... [%r30], ...   # stages at 0 and 32768
        """,
    ),
)
"""The entries of every ``TS-X1xx`` code, sorted by code."""
