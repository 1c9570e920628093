"""Pipeline descriptions (re-exported from :mod:`ts_ir`).

The CuTe DSL pipeline classes join this module with the code generator.
"""

from ts_ir.enums import PipelineType, SignalingThreads
from ts_ir.plan import CooperativeGroupSpec, PipelineSpec

__all__ = ["CooperativeGroupSpec", "PipelineSpec", "PipelineType", "SignalingThreads"]
