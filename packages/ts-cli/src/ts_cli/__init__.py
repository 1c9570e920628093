"""ts-cli: the ``ts`` command for kernel authors.

``ts show`` (schedule table), ``ts verify`` (the verification report), ``ts graph`` (resource
graph as Mermaid or Graphviz DOT), ``ts timeline`` (an SVG of the verified interleaving or of a
counterexample), ``ts compile`` (sm_90a PTX, once the code generator is installed) and
``ts doctor`` (versions for bug reports). A kernel is given as a Python file or
``module:function``; the function (``kernel`` by default) returns a kernel plan.
"""

from ts_cli.__about__ import __version__ as __version__
from ts_cli.loading import KernelSpecError, load_plan
from ts_cli.main import main

__all__ = ["KernelSpecError", "load_plan", "main"]
