"""The host harness of examples, tests and benchmarks (re-exported from :mod:`ts_runtime.harness`).

Fake tensors for ``--compile-only``, PTX counts of a TS kernel against its twin, the GPU check,
torch tensors as CuTe tensors, timing in interleaved rounds and the command line::

    from task_scheduling.harness import ExampleCLI, compile_only, fake_tensor

Not imported by ``task_scheduling/__init__``: it belongs to the runtime layer (it imports the
CuTe DSL and torch when its functions are called, not when it is imported).
"""

from ts_runtime.harness import (
    INSTEAD,
    Case,
    ExampleCLI,
    compare_ptx,
    compile_only,
    fake_tensor,
    gpu_missing,
    gpu_ready,
    kernel_items,
    max_active_clusters,
    ptx_counts,
    ptx_of,
    run_on_gpu,
    time_ms,
    time_rounds,
    to_cute,
    verified,
)

__all__ = [
    "INSTEAD",
    "Case",
    "ExampleCLI",
    "compare_ptx",
    "compile_only",
    "fake_tensor",
    "gpu_missing",
    "gpu_ready",
    "kernel_items",
    "max_active_clusters",
    "ptx_counts",
    "ptx_of",
    "run_on_gpu",
    "time_ms",
    "time_rounds",
    "to_cute",
    "verified",
]
