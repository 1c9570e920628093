"""SMEM declarations and the planned layout (re-exported from :mod:`ts_ir`).

A resource that needs shared memory returns ``SmemAllocationSpec`` s from its
``get_smem_requirements()``; ``plan_smem_layout(plan)`` places them (and the pipelines'
barriers) in the CTA's SMEM, as the code generator will::

    from task_scheduling.smem import SmemAllocationSpec

Needs no GPU and no CuTe DSL (the allocator used in kernels is ``task_scheduling.memory``).
"""

from ts_ir import SmemAllocationSpec, SmemLayout, SmemLayoutError, plan_smem_layout

__all__ = ["SmemAllocationSpec", "SmemLayout", "SmemLayoutError", "plan_smem_layout"]
