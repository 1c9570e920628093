"""Grid-stride global-to-global copy: one task, no pipeline.

Each thread walks the tensor with a stride of the whole grid; a consumer work call reads an
element of the source and a producer work call writes it to the destination, with the value
routed between them as a data-flow token.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from task_scheduling import consumer_work, domain_loop, producer_work, schedule
from task_scheduling.plan import KernelPlan, TaskDeclaration, build_plan
from task_scheduling.resources import MemoryResource, TaskLocalVariable
from task_scheduling.schedule_builder import ResourceProxy


@dataclasses.dataclass(kw_only=True)
class Source(MemoryResource):
    """The input tensor in global memory."""

    tensor: Any = None
    element: TaskLocalVariable = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.element = TaskLocalVariable(dtype="Float16", default=0)

    @consumer_work(returns=element)
    def load(self, stage_info: Any) -> Any:
        return self.tensor[stage_info.loop_offset]


@dataclasses.dataclass(kw_only=True)
class Destination(MemoryResource):
    """The output tensor in global memory."""

    tensor: Any = None

    @producer_work
    def store(self, stage_info: Any, *, element: Any) -> None:
        self.tensor[stage_info.loop_offset] = element


@schedule
def copy_schedule(src: ResourceProxy, dst: ResourceProxy) -> None:
    """Read one element per iteration and write it out."""
    with domain_loop(0, 1 << 20, 132 * 256, unroll=4):
        value = src.load()
        dst.store(element=value)


def kernel() -> KernelPlan:
    """The grid-stride copy as a kernel plan."""
    src, dst = Source(name="src"), Destination(name="dst")
    task = TaskDeclaration([src], [dst], 0, 8, copy_schedule(src, dst), name="copy")
    return build_plan([task], {dst: [src]}, name="grid_stride_copy")
