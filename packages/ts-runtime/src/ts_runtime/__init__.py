"""ts-runtime: ``Task``, ``TaskManager``, ``PipelineConfig``, SMEM allocation, compile cache.

Construct :class:`Task` s and a :class:`TaskManager` inside the ``@cute.kernel`` (or on the
host, to plan and verify without a GPU); the manager plans, checks and verifies the kernel and
lowers it with ``ts_codegen``. :func:`compile_kernel` compiles with a cache keyed on argument
shapes / dtypes and the plan fingerprint.

Importing this package does not import the CuTe DSL; the in-kernel methods and
:func:`compile_kernel` import it when called.
"""

from ts_runtime.__about__ import __version__
from ts_runtime.compile import (
    CompileCache,
    CompiledKernel,
    compile_kernel,
    default_cache,
    from_torch,
    plan_fingerprint,
)
from ts_runtime.errors import (
    GroupSizeError,
    RuntimeConfigError,
    SmemBudgetError,
    TaskDeclarationError,
    UnsupportedFeatureError,
    UnsupportedOnTarget,
)
from ts_runtime.memory import ResourceContext, SmemAllocation, SmemAllocator
from ts_runtime.pipeline_config import PipelineConfig
from ts_runtime.ptx_check import TranslationError, TranslationReport, check_ptx
from ts_runtime.staged import (
    Compiled,
    Kernel,
    KernelContext,
    Lowered,
    Planned,
    Symbol,
    Tasks,
    Traced,
    Verified,
)
from ts_runtime.target import current_target
from ts_runtime.task import Task
from ts_runtime.task_manager import TaskManager
from ts_runtime.work_queue import TileSchedulerConfig, WorkQueue

__all__ = [
    "CompileCache",
    "Compiled",
    "CompiledKernel",
    "GroupSizeError",
    "Kernel",
    "KernelContext",
    "Lowered",
    "PipelineConfig",
    "Planned",
    "ResourceContext",
    "RuntimeConfigError",
    "SmemAllocation",
    "SmemAllocator",
    "SmemBudgetError",
    "Symbol",
    "Task",
    "TaskDeclarationError",
    "TaskManager",
    "Tasks",
    "TileSchedulerConfig",
    "Traced",
    "TranslationError",
    "TranslationReport",
    "UnsupportedFeatureError",
    "UnsupportedOnTarget",
    "Verified",
    "WorkQueue",
    "__version__",
    "check_ptx",
    "compile_kernel",
    "current_target",
    "default_cache",
    "from_torch",
    "plan_fingerprint",
]
