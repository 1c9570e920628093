"""Before an example's GPU run: say why it cannot start here instead of ending in a traceback.

Kept for the examples not yet on the harness (the GEMM): the check is
``task_scheduling.harness.gpu_missing`` / ``gpu_ready``.
"""

from __future__ import annotations

from task_scheduling.harness import gpu_missing, gpu_ready

__all__ = ["gpu_missing", "gpu_ready"]
