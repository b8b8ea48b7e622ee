"""kit.compiler: graph capture and operator fusion behind `kit.compile`.

- trace.py: run a function once and record the primitives it calls (the registry's hook);
- graph.py: the captured graph (slots, steps, breaks) and its plain-data description;
- guards.py: signatures, guards and the words for a graph break;
- fusion.py, expr.py, kernels.py: elementwise runs as one generated kernel, forward and backward;
- replay.py: the graph as flat forward and backward functions, one node in the caller's graph;
- function.py: `kit.compile` itself, its cache and settings (`config`).
"""

from kit.compiler.function import CompiledFunction, compile, config
from kit.compiler.graph import Graph
from kit.compiler.guards import CompileError

__all__ = ["CompileError", "CompiledFunction", "Graph", "compile", "config"]
