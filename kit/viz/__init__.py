"""kit.viz: see the graph, the gradients flowing through it, and change inputs with sliders.

- `draw_graph(*outputs, ...)`: the computation graph (Graphviz via pygraphviz) as a Jupyter
  object with its nodes and edges as plain data;
- `grad_norms`, `plot_grad_norms`, `compare_grad_norms`, `GradHistory`, `plot_grad_history`,
  `plot_grad_histograms`: gradient-flow plots (matplotlib), vanishing/exploding thresholds marked;
- `explorer`, `step_backward`, `gradcheck_view`: ipywidgets views, each with a static fallback
  (`.static()`, also stored with the widget's output) and drivable from Python (set a slider's
  `.value`, `.click()` a button); `with_fallback(widget, figure)` does the same for any widget.

Importing kit.viz changes nothing in what kit records. Drawings show the values a graph still
holds; record under `kit.viz.keep_output_refs()` (as `explorer` does) to show every intermediate
value (it costs a weak reference per op, so it is a mode, not the default).
"""

from kit.grad_mode import keep_output_refs
from kit.viz._style import EXPLODING, VANISHING, Plot, grad_colour
from kit.viz._trace import Step, trace_backward
from kit.viz._view import with_fallback
from kit.viz.drawing import GraphDrawing, draw_graph
from kit.viz.flow import (
    GradHistory,
    compare_grad_norms,
    grad_norms,
    plot_grad_histograms,
    plot_grad_history,
    plot_grad_norms,
)
from kit.viz.gradcheck_view import GradcheckView, gradcheck_view
from kit.viz.graph import graph_data
from kit.viz.widgets import Explorer, StepBackward, explorer, step_backward

__all__ = [
    "EXPLODING", "VANISHING", "Explorer", "GradHistory", "GradcheckView", "GraphDrawing", "Plot",
    "Step", "StepBackward", "compare_grad_norms", "draw_graph", "explorer", "grad_colour",
    "grad_norms", "gradcheck_view", "graph_data", "keep_output_refs", "plot_grad_histograms",
    "plot_grad_history", "plot_grad_norms", "step_backward", "trace_backward", "with_fallback",
]
