"""kit.compiler: graph capture and operator fusion behind `kit.compile`.

- trace.py: run a function once and record the primitives it calls (the registry's hook);
  rng.py: random numbers drawn in a trace (fresh on every replay);
- graph.py: the captured graph (slots, steps, breaks) and its plain-data description;
- guards.py: signatures, guards and the words for a graph break;
- fusion.py, expr.py, kernels.py, cuda.py: elementwise runs as one generated kernel, forward and
  backward (numba or NumPy on the CPU, CuPy on a GPU);
- functions.py: custom Functions, opaque or elementwise;
- codegen.py, replay.py: the graph as flat forward and backward functions (generated source),
  one node in the caller's graph;
- function.py: `kit.compile` itself, its cache and settings (`config`).
"""

from kit.compiler.function import CompiledFunction, compile, config
from kit.compiler.graph import Graph
from kit.compiler.guards import CompileError

__all__ = ["CompileError", "CompiledFunction", "Graph", "compile", "config"]
