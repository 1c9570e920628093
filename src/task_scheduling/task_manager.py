"""``TaskManager`` (re-exported from :mod:`ts_runtime.task_manager`).

Not imported by ``task_scheduling/__init__``, as in the reference: the runtime layer pulls in
the code generator and the CuTe DSL when a kernel is lowered. Import it explicitly::

    from task_scheduling.task_manager import TaskManager
"""

from ts_runtime.task_manager import TaskManager

__all__ = ["TaskManager"]
