"""ts-verify: prove a TS kernel plan free of bracket errors, deadlocks and races (no GPU).

:func:`verify` runs, in order: per-task bracket checks (:mod:`ts_verify.brackets`), cross-task
declaration checks (:mod:`ts_verify.kernel_checks`, and against the target
:mod:`ts_verify.budgets`: pipeline types the architecture runs, SMEM within capacity), symbolic
bracket counts for all valuations (:mod:`ts_verify.counting`) and deadlock/race runs against
mbarrier semantics (:mod:`ts_verify.simulate`, :mod:`ts_verify.whole_kernel`).

The layers above use only the names exported here (import-linter holds them to it): every
check is :func:`verify`'s; one valuation's run is exported for drawing timelines.
"""

from ts_verify.__about__ import __version__ as __version__
from ts_verify.blackwell import umma_arrivals
from ts_verify.budgets import HOPPER_ALTERNATIVE
from ts_verify.diagnostics import (
    VERIFY_CATALOG,
    BarrierState,
    Diagnostic,
    Report,
    Severity,
    Trace,
    TraceEvent,
    VerificationError,
)
from ts_verify.kernel_checks import multicast_peers, per_warp_consumer_group
from ts_verify.lanes import split_lanes
from ts_verify.unroll import Valuation, is_per_tile, loop_key
from ts_verify.verify import verify
from ts_verify.whole_kernel import run_valuation

__all__ = [
    "HOPPER_ALTERNATIVE",
    "VERIFY_CATALOG",
    "BarrierState",
    "Diagnostic",
    "Report",
    "Severity",
    "Trace",
    "TraceEvent",
    "Valuation",
    "VerificationError",
    "is_per_tile",
    "loop_key",
    "multicast_peers",
    "per_warp_consumer_group",
    "run_valuation",
    "split_lanes",
    "umma_arrivals",
    "verify",
]
