"""Interactive views (ipywidgets 8): the function explorer and the step-through backward pass.

Each view computes a frame in a plain method (`render`), which is also its static fallback
(`static()` draws the default frame as plain figures, for saved notebooks and for checks). The
widget only wires sliders and buttons to `render`; it can be driven from Python: set a slider's
`.value` or call a button's `.click()`, then read `.frame`.
"""

from __future__ import annotations

import html
import io
import math
from dataclasses import dataclass, field

import numpy as np

import kit
from kit.engine import AccumulateGrad
from kit.grad_mode import keep_output_refs
from kit.viz._style import Plot, fmt_array, fmt_number, host, new_figure, png, show_png
from kit.viz._trace import check_outputs, trace_backward
from kit.viz._view import View, frame_html
from kit.viz.drawing import GraphDrawing, draw_graph
from kit.viz.graph import SMALL

CURVE_POINTS = 121


# --- explorer --------------------------------------------------------------------------------
@dataclass
class ExplorerFrame:
    """One state of an explorer: the inputs, f, its partial derivatives, the plot and graph."""

    values: dict
    value: float
    grads: dict
    axis: str
    curve: tuple
    tangent: tuple
    graph: GraphDrawing | None
    png: bytes = field(default=b"", repr=False)

    def summary(self):
        args = ", ".join(f"{k}={fmt_number(v)}" for k, v in self.values.items())
        lines = [f"f({args}) = {fmt_number(self.value)}"]
        lines += [f"df/d{k} = {fmt_number(g)}" for k, g in self.grads.items()]
        return "\n".join(lines)

    def _repr_mimebundle_(self, **kwargs):
        return {"text/plain": self.summary(),
                "text/html": frame_html(self.summary(), self.png, self.graph)}


class _TangentPlot:
    """f along one input, the current point and the tangent line.

    With `blit`, the axes and their tick labels are drawn once and kept as a background while the
    limits stay; a slider step then draws only the curve, the point and the tangent (laying out
    text is most of a full redraw). The limits only change when the curve leaves them or uses
    less than half of their height.
    """

    def __init__(self, blit=False):
        self.blit = blit
        self.figure = new_figure(4.6, 3.0, layout=None)
        self.figure.subplots_adjust(left=0.14, right=0.97, bottom=0.15, top=0.92)
        self.ax = self.figure.add_subplot()
        # No legend box over the curve: the title names the two colours.
        (self.curve,) = self.ax.plot([], [], color="#2563eb", linewidth=1.8, animated=blit)
        (self.tangent,) = self.ax.plot([], [], color="#dc2626", linewidth=1.5, animated=blit)
        (self.point,) = self.ax.plot([], [], "o", color="#111827", animated=blit)
        self.ax.grid(alpha=0.3)
        self.background = None

    def _limits_ok(self, xs, ys):
        lo, hi = self.ax.get_ylim()
        if self.background is None and self.blit or tuple(self.ax.get_xlim()) != (xs[0], xs[-1]):
            return False
        return lo <= ys.min() and ys.max() <= hi and ys.max() - ys.min() >= 0.5 * (hi - lo)

    def update(self, frame):
        """Draw `frame`; returns the PNG bytes."""
        xs, ys = frame.curve
        finite = ys[np.isfinite(ys)]
        if not finite.size:
            finite = np.zeros(1)
        if not self._limits_ok(xs, finite) or self.ax.get_xlabel() != frame.axis:
            lo, hi = finite.min(), finite.max()
            pad = 0.08 * (hi - lo) if hi > lo else 1.0
            self.ax.set_xlim(xs[0], xs[-1])
            self.ax.set_ylim(lo - pad, hi + pad)
            self.ax.set_xlabel(frame.axis)
            self.ax.set_title(f"f along {frame.axis} (blue); tangent, slope df/d{frame.axis} "
                              f"(red)", fontsize=10)
            if self.blit:
                self.figure.canvas.draw()
                self.background = self.figure.canvas.copy_from_bbox(self.figure.bbox)
        self.curve.set_data(xs, ys)
        self.tangent.set_data(*frame.tangent)
        self.point.set_data([frame.values[frame.axis]], [frame.value])
        if not self.blit:
            return png(self.figure)
        canvas = self.figure.canvas
        canvas.restore_region(self.background)
        for artist in (self.curve, self.tangent, self.point):
            self.ax.draw_artist(artist)
        return _encode(canvas)


def _encode(canvas):
    from PIL import Image

    buffer = io.BytesIO()
    image = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba())
    image.save(buffer, format="png", compress_level=1)
    return buffer.getvalue()


def slider_step(lo, hi, default):
    """A step of about (hi - lo) / 200, from 1, 2, 5 x 10**k, on whose grid (lo + k * step) the
    default and hi lie: a browser snaps a slider to its grid, and a default off it would show
    another frame than the one computed for it.

    >>> slider_step(-3.0, 3.0, 2.0)
    0.02
    """
    target = (hi - lo) / 200
    top = math.floor(math.log10(target))
    for exponent in range(top, top - 6, -1):
        for mantissa in (5, 2, 1):
            step = mantissa * 10.0 ** exponent
            if step <= target and all(
                    math.isclose(q, round(q), abs_tol=1e-9) for q in
                    ((hi - lo) / step, (default - lo) / step)):
                return round(step, 12)
    return target


def explorer(f, *, plot=None, graph=True, **ranges):
    """Sliders for the named scalar inputs of `f`; shows f, its partial derivatives, f along one
    input with the tangent line, and the graph with its gradients.

    Each range is `(lo, hi)` or `(lo, hi, default)`. `plot` names the input to plot along.

    >>> import kit
    >>> ex = explorer(lambda x, y: x * y + x.sin(), x=(-3, 3, 1.0), y=(-2, 2, 0.5))
    >>> ex.sliders["y"].value = 2.0
    >>> round(ex.frame.grads["y"], 6)
    1.0
    """
    return Explorer(f, ranges, plot, graph)


class Explorer(View):
    """The explorer widget; see `explorer`."""

    def __init__(self, f, ranges, plot=None, graph=True):
        import ipywidgets as w

        if not ranges:
            raise TypeError(
                "kit.viz.explorer: give a slider range for each input of f, e.g. "
                "explorer(f, x=(-3, 3, 1.0), y=(-2, 2))"
            )
        self.f, self.show_graph = f, graph
        self.ranges, self.defaults = {}, {}
        for name, spec in ranges.items():
            if len(spec) not in (2, 3) or not spec[0] < spec[1]:
                raise ValueError(
                    f"kit.viz.explorer: the range of {name!r} must be (lo, hi) or "
                    f"(lo, hi, default) with lo < hi, got {spec!r}"
                )
            lo, hi = float(spec[0]), float(spec[1])
            self.ranges[name] = (lo, hi)
            self.defaults[name] = float(spec[2]) if len(spec) == 3 else (lo + hi) / 2
        names = list(self.ranges)
        if plot is not None and plot not in self.ranges:
            raise ValueError(f"kit.viz.explorer: plot={plot!r} is not one of the inputs {names}")
        self._curves = {}
        self._plot = None
        self.sliders = {
            name: w.FloatSlider(value=self.defaults[name], min=lo, max=hi,
                                step=slider_step(lo, hi, self.defaults[name]),
                                description=name, continuous_update=True, readout_format=".3f")
            for name, (lo, hi) in self.ranges.items()
        }
        self.axis = w.Dropdown(options=names, value=plot or names[0], description="plot along")
        self.readout = w.HTML()
        # Not stretched to the graph's height: a PNG keeps its own size and proportions.
        self.plot_view = w.Image(format="png", layout=w.Layout(align_self="flex-start"))
        self.graph_view = w.HTML()
        for control in (*self.sliders.values(), self.axis):
            control.observe(self._update, names="value")
        controls = list(self.sliders.values()) + ([self.axis] if len(names) > 1 else [])
        self.widget = w.VBox([
            w.HBox([w.VBox(controls), self.readout]),
            w.HBox([self.plot_view, self.graph_view]),
        ])
        self.frame = None
        self._update()

    def render(self, values=None, axis=None, plot=None):
        """The frame at `values` (defaults to the slider defaults); a new figure unless given."""
        values = {**self.defaults, **(values or {})}
        axis = axis or self.axis.value
        inputs = {name: kit.tensor(float(v), dtype=kit.float64, requires_grad=True)
                  for name, v in values.items()}
        for name, t in inputs.items():
            t.name = name
        with keep_output_refs():  # so that the drawing shows every intermediate value
            out = self.f(**inputs)
        if not isinstance(out, kit.Tensor) or out._data.size != 1:
            raise TypeError(
                f"kit.viz.explorer: f must return a one-element kit Tensor, got "
                f"{type(out).__name__}{getattr(out, 'shape', '')}; reduce it, e.g. .sum()"
            )
        if out.requires_grad:
            grads = kit.grad(out, list(inputs.values()), retain_graph=True, allow_unused=True)
        else:
            grads = (None,) * len(inputs)
        partials = {name: 0.0 if g is None else float(g.item())
                    for name, g in zip(inputs, grads, strict=True)}
        value = float(out.item())
        xs, ys = self._curve(axis, values)
        x0, slope = values[axis], partials[axis]
        half = 0.25 * (xs[-1] - xs[0])
        tangent = (np.array([x0 - half, x0 + half]), np.array([value - slope * half,
                                                               value + slope * half]))
        drawing = draw_graph(out) if self.show_graph and out.requires_grad else None
        frame = ExplorerFrame(values, value, partials, axis, (xs, ys), tangent, drawing)
        frame.png = (plot or _TangentPlot()).update(frame)
        return frame

    def static(self):
        """The default frame as plain figures (for a saved notebook)."""
        return self.render()

    def _curve(self, axis, values):
        """f along `axis`, the other inputs fixed: one vectorised call when f allows it."""
        others = tuple((k, v) for k, v in values.items() if k != axis)
        key = (axis, others)
        if key not in self._curves:
            lo, hi = self.ranges[axis]
            xs = np.linspace(lo, hi, CURVE_POINTS)
            with kit.no_grad():
                fixed = {k: kit.tensor(v, dtype=kit.float64) for k, v in others}
                try:
                    ys = host(self.f(**fixed, **{axis: kit.tensor(xs)})._data).astype(float)
                except (ValueError, TypeError, RuntimeError):
                    ys = None
                if ys is None or ys.shape != xs.shape:  # f mixes its inputs: point by point
                    ys = np.array([float(self.f(**fixed, **{axis: kit.tensor(x)}).item())
                                   for x in xs])
            if len(self._curves) > 256:
                self._curves.clear()
            self._curves[key] = (xs, ys)
        return self._curves[key]

    def _update(self, change=None):
        if self._plot is None:
            self._plot = _TangentPlot(blit=True)
        values = {name: s.value for name, s in self.sliders.items()}
        self.frame = self.render(values, self.axis.value, self._plot)
        self.readout.value = f"<pre>{html.escape(self.frame.summary())}</pre>"
        show_png(self.plot_view, self.frame.png)
        self.graph_view.value = self.frame.graph.svg if self.frame.graph is not None else ""


# --- step-through backward -------------------------------------------------------------------
@dataclass
class StepFrame:
    """One step of the reverse pass: which node runs, what it receives and what it passes on."""

    index: int
    count: int
    node_name: str
    received: list
    passed: list   # (target description, gradient as text) per input edge
    graph: GraphDrawing | None

    def summary(self):
        lines = [f"step {self.index + 1} of {self.count}: {self.node_name}",
                 "receives: " + ", ".join(self.received)]
        if self.passed:
            lines.append("passes on:")
            lines += [f"  -> {target}: {g}" for target, g in self.passed]
        return "\n".join(lines)

    def _repr_mimebundle_(self, **kwargs):
        return {"text/plain": self.summary(),
                "text/html": frame_html(self.summary(), graph=self.graph)}


def step_backward(output, params=None, graph=True):
    """Buttons that walk the reverse pass from `output` one node at a time (the engine's order),
    highlighting the node and showing the gradient it receives and the ones it passes on.

    >>> import kit
    >>> a = kit.tensor(3.0, requires_grad=True)
    >>> sb = step_backward(a * a + a, graph=False)
    >>> sb.next_button.click()
    >>> sb.frame.node_name
    'MulBackward0'
    """
    return StepBackward(output, params, graph)


def _grad_text(g):
    if g is None:
        return "nothing"
    g = host(g)
    return fmt_array(g) if g.size <= SMALL else f"|g| = {fmt_number(np.linalg.norm(g))}"


class StepBackward(View):
    """The step-through widget; see `step_backward`."""

    def __init__(self, output, params=None, graph=True):
        import ipywidgets as w

        check_outputs([output], "step_backward")
        self.output, self.params, self.show_graph = output, params, graph
        self.names = {id(t): name for name, t in (params or {}).items()}
        self.steps = trace_backward([output])
        if not self.steps:
            raise ValueError(
                "kit.viz.step_backward: the output has no graph (it is a leaf or was computed "
                "without grad); compute it from tensors with requires_grad=True"
            )
        self.prev_button = w.Button(description="\u25c0 Prev")
        self.next_button = w.Button(description="Next \u25b6")
        self.position = w.Label()
        self.text = w.HTML()
        self.graph_view = w.HTML()
        self.prev_button.on_click(lambda _: self.go(self.index - 1))
        self.next_button.on_click(lambda _: self.go(self.index + 1))
        self.widget = w.VBox([w.HBox([self.prev_button, self.next_button, self.position]),
                              w.HBox([self.text, self.graph_view])])
        self.index = 0
        self.frame = None
        self._frames = {}
        self.go(0)

    def _describe(self, node):
        if type(node) is AccumulateGrad:
            t = node.variable
            if t is None:  # nothing keeps the leaf any more
                return "a freed leaf"
            name = self.names.get(id(t)) or t.name
            return f"leaf {name}" if name else f"leaf of shape {tuple(t.shape)}"
        return node.name()

    def render(self, index=0):
        """The frame of step `index` (0-based)."""
        if not 0 <= index < len(self.steps):
            raise IndexError(f"step_backward: step {index} is outside 0..{len(self.steps) - 1}")
        step = self.steps[index]
        received = [_grad_text(g) for g in step.received]
        if type(step.node) is AccumulateGrad:
            name = f"AccumulateGrad: adds it into .grad of {self._describe(step.node)}"
        else:
            name = step.node.name()
        passed = [(self._describe(edge[0]), _grad_text(g))
                  for edge, g in zip(step.node.next_functions, step.passed, strict=True)
                  if edge]
        drawing = None
        if self.show_graph:
            flow = {s.node: s.received for s in self.steps[:index + 1]}
            drawing = draw_graph(self.output, params=self.params, highlight=[step.node],
                                 collapse_chains=False, flow=flow)
        return StepFrame(index, len(self.steps), name, received, passed, drawing)

    def static(self, index=0):
        """Step `index` as plain output (text and graph)."""
        return self.render(index)

    def go(self, index):
        """Show step `index` (clamped to the first and last step)."""
        self.index = max(0, min(index, len(self.steps) - 1))
        if self.index not in self._frames:
            self._frames[self.index] = self.render(self.index)
        self.frame = self._frames[self.index]
        self.prev_button.disabled = self.index == 0
        self.next_button.disabled = self.index == len(self.steps) - 1
        self.position.value = f"step {self.index + 1} of {len(self.steps)}"
        self.text.value = f"<pre>{html.escape(self.frame.summary())}</pre>"
        self.graph_view.value = self.frame.graph.svg if self.frame.graph is not None else ""


__all__ = ["Explorer", "ExplorerFrame", "Plot", "StepBackward", "StepFrame", "View",
           "explorer", "step_backward"]
