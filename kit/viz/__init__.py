"""kit.viz: see the graph, the gradients flowing through it, and change inputs with sliders.

- `draw_graph(*outputs, ...)`: the computation graph (Graphviz via pygraphviz) as a Jupyter
  object with its nodes and edges as plain data;
- `grad_norms`, `plot_grad_norms`, `GradHistory`, `plot_grad_history`, `plot_grad_histograms`:
  gradient-flow plots (matplotlib) with vanishing/exploding thresholds marked;
- `explorer`, `step_backward`, `gradcheck_view`: ipywidgets views, each with a static fallback.
"""

from kit.viz._style import EXPLODING, VANISHING, grad_colour
from kit.viz.drawing import GraphDrawing, draw_graph
from kit.viz.graph import graph_data

__all__ = [
    "EXPLODING", "VANISHING", "GraphDrawing", "draw_graph", "grad_colour", "graph_data",
]
