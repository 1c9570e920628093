"""``Task`` (re-exported from :mod:`ts_runtime.task`).

Not imported by ``task_scheduling/__init__``, as in the reference: the runtime layer pulls in
the code generator and the CuTe DSL when a kernel is lowered. Import it explicitly::

    from task_scheduling.task import Task
"""

from ts_runtime.task import Task

__all__ = ["Task"]
