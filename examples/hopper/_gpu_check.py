"""Before an example's GPU run: say why it cannot start here instead of ending in a traceback.

The kernels are built for sm_90a (Hopper: H100, H200) and the GPU runs use PyTorch for the
inputs, the reference and the timing. ``--compile-only`` needs neither.
"""

from __future__ import annotations

import sys
from pathlib import Path

_INSTEAD = "or run with --compile-only to compile for sm_90a on the CPU, without a GPU"


def gpu_missing() -> str | None:
    """Why a GPU run cannot start here (no torch, no CUDA GPU, not a Hopper GPU), or None."""
    try:
        import torch
    except ImportError:
        return (
            f"the GPU run needs PyTorch, which is not installed (`pip install torch`); {_INSTEAD}"
        )
    if not torch.cuda.is_available():
        return (
            "no CUDA GPU here (torch.cuda.is_available() is False): run on a Hopper GPU, "
            + _INSTEAD
        )
    major, minor = torch.cuda.get_device_capability()
    if (major, minor) != (9, 0):
        name = torch.cuda.get_device_name()
        return (
            f"the kernels are built for sm_90a (H100, H200); this GPU is {name} "
            f"(sm_{major}{minor}): run on a Hopper GPU, {_INSTEAD}"
        )
    return None


def gpu_ready(script: str) -> bool:
    """True when the GPU run can start here; else print why on stderr (the script exits 2)."""
    problem = gpu_missing()
    if problem is not None:
        print(f"{Path(script).name}: {problem}", file=sys.stderr)
    return problem is None
