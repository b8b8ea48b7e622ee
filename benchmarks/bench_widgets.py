"""Slider round trip of kit.viz.explorer on a lesson-sized graph (about 50 nodes).

A round trip is what one slider change costs: forward, backward (kit.grad), the reverse pass
replayed for the graph's gradients, graph extraction, Graphviz layout to SVG, and the tangent plot
redrawn to PNG. The target is a median under 50 ms. Two cases: moving the plotted input (the
curve stays, only the point and tangent move) and moving the other input (the curve changes).

    python benchmarks/bench_widgets.py
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import kit
from kit.viz import draw_graph, explorer

TARGET_MS = 50.0
HIDDEN = 6
rng = np.random.default_rng(0)
W = rng.standard_normal((3, HIDDEN)).round(2).tolist()  # constants: x and y weights, biases
V = rng.standard_normal(HIDDEN).round(2).tolist()


def network(x, y):
    """A 2-6-1 tanh network on two scalars, in kit ops: drawn as 2 leaves, 41 ops, 1 output."""
    out = None
    for i in range(HIDDEN):
        h = (x * W[0][i] + y * W[1][i] + W[2][i]).tanh() * V[i]
        out = h if out is None else out + h
    return out


def _median_ms(fn, values):
    times = []
    for v in values:
        start = time.perf_counter()
        fn(float(v))
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main(repeats=60):
    ex = explorer(network, x=(-2, 2, 0.3), y=(-2, 2, -0.4))
    nodes = len(ex.frame.graph.nodes)
    xs = np.linspace(-1.9, 1.9, repeats)

    def move(name):
        def set_value(v):
            ex.sliders[name].value = v
        return set_value

    plotted = _median_ms(move("x"), xs)
    other = _median_ms(move("y"), xs[::-1])

    # where the time goes, at the last slider position
    x = kit.tensor(0.5, dtype=kit.float64, requires_grad=True)
    y = kit.tensor(-0.4, dtype=kit.float64, requires_grad=True)

    def forward_backward(_):
        kit.grad(network(x, y), [x, y])

    out = network(x, y)
    parts = {
        "forward + backward": _median_ms(forward_backward, xs),
        "graph data (replayed pass)": _median_ms(lambda _: draw_graph(out), xs),
        "graph layout to SVG": _median_ms(lambda _: draw_graph(out).svg, xs),
        "static frame (new figure)": _median_ms(lambda v: ex.render({"x": v}), xs),
    }
    print(f"explorer on a {nodes}-node graph, median of {repeats} slider changes "
          f"(target {TARGET_MS:.0f} ms):")
    print(f"  plotted input moves : {plotted:6.1f} ms  = {plotted / TARGET_MS:.2f} x target")
    print(f"  other input moves   : {other:6.1f} ms  = {other / TARGET_MS:.2f} x target")
    print("parts (median ms):")
    for name, ms in parts.items():
        print(f"  {name:28s}: {ms:6.1f}")


if __name__ == "__main__":
    main()
