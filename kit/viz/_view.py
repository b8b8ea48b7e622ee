"""What a kit.viz widget displays: the live widget, and beside it a static frame (text and
figures) for every reader without a kernel: a saved notebook, an untrusted one, GitHub."""

from __future__ import annotations

import base64
import html

from kit.viz._style import png_display_size


class View:
    """Base of kit.viz's widgets: displays as its ipywidgets box, with its current frame's text
    and figure alongside for readers without a kernel (a saved notebook, GitHub)."""

    widget = None
    frame = None

    def current(self):
        """What a reader without a live widget sees: the frame shown now."""
        return self.frame

    def _repr_mimebundle_(self, **kwargs):
        # A running JupyterLab picks the widget view; anything else the static frame (instead of
        # the widget's text repr, "VBox(children=(...").
        data, metadata = static_bundle(self.current())
        return {**self.widget._repr_mimebundle_(**kwargs), **data}, metadata


def static_bundle(obj):
    """`obj`'s display data and metadata without IPython: a string as text, a frame's own
    bundle, a `Plot` as PNG (shown at its display size) with its one-line text."""
    if isinstance(obj, str):
        return {"text/plain": obj}, {}
    if hasattr(obj, "_repr_mimebundle_"):
        return dict(obj._repr_mimebundle_()), {}
    data, metadata = obj._repr_png_()
    return ({"text/plain": repr(obj), "image/png": base64.b64encode(data).decode("ascii")},
            {"image/png": metadata})


class WithFallback(View):
    """Any ipywidget, with a static fallback; see `with_fallback`."""

    def __init__(self, widget, fallback):
        self.widget, self.frame = widget, fallback


def with_fallback(widget, fallback):
    """Show `widget` live in a running notebook, and `fallback` (a figure, a `Plot`, a string)
    where no widget can run: a saved notebook shows the figure, not `VBox(children=(...`.

    >>> import ipywidgets
    >>> shown, _ = with_fallback(ipywidgets.IntSlider(3), "x = 3")._repr_mimebundle_()
    >>> shown["text/plain"], "application/vnd.jupyter.widget-view+json" in shown
    ('x = 3', True)
    """
    return WithFallback(widget, fallback)


def frame_html(summary, plot_png=None, graph=None):
    """One HTML block: a text summary, a PNG plot and an SVG graph (what a static frame shows).

    Both pictures are <img> data URLs: the HTML sanitizer of an untrusted notebook (and GitHub's)
    keeps those but strips inline <svg>, which would leave the graph's labels as loose text.
    """
    parts = [f"<pre>{html.escape(summary)}</pre>"]
    if plot_png:
        data = base64.b64encode(plot_png).decode("ascii")
        width, height = png_display_size(plot_png)
        parts.append(f'<img width="{width}" height="{height}" '
                     f'src="data:image/png;base64,{data}"/>')
    if graph is not None:
        data = base64.b64encode(graph.svg.encode("utf-8")).decode("ascii")
        parts.append(f'<img src="data:image/svg+xml;base64,{data}"/>')
    return "<div>" + "".join(parts) + "</div>"
