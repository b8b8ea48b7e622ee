"""Shared look: gradient-magnitude colours on a log scale, thresholds, and value formatting."""

from __future__ import annotations

import io
import math
import struct

import numpy as np

from kit import backend

# Gradient norms outside [VANISHING, EXPLODING] are flagged by the graph colours and the plots.
VANISHING = 1e-5
EXPLODING = 1e3

NO_GRAD = "#e0e0e0"
_VANISH_DEEP = (0.16, 0.27, 0.75)   # saturated blue: below the vanishing threshold
_VANISH_EDGE = (0.55, 0.71, 0.96)   # light blue: at the vanishing threshold
_HEALTHY = (0.62, 0.87, 0.55)       # green: a norm of 1
_EXPLODE_EDGE = (0.98, 0.64, 0.42)  # orange: at the exploding threshold
_EXPLODE_DEEP = (0.75, 0.08, 0.12)  # saturated red: above it


def _hex(rgb):
    return "#" + "".join(f"{round(255 * c):02x}" for c in rgb)


def _mix(a, b, t):
    return tuple(x + (y - x) * t for x, y in zip(a, b, strict=True))


def grad_colour(norm, vanishing=VANISHING, exploding=EXPLODING):
    """The colour of a gradient norm: blue below `vanishing`, green near 1, red above `exploding`.

    >>> grad_colour(1.0), grad_colour(1e-9), grad_colour(None)
    ('#9ede8c', '#2945bf', '#e0e0e0')
    """
    if norm is None or math.isnan(norm):
        return NO_GRAD
    if norm == 0:
        return _hex(_VANISH_DEEP)
    level = math.log10(norm) if math.isfinite(norm) else math.inf
    lo, hi = math.log10(vanishing), math.log10(exploding)
    if level <= lo:
        return _hex(_mix(_VANISH_EDGE, _VANISH_DEEP, min(1.0, (lo - level) / 3)))
    if level >= hi:
        return _hex(_mix(_EXPLODE_EDGE, _EXPLODE_DEEP, min(1.0, (level - hi) / 3)))
    if level < 0:
        return _hex(_mix(_HEALTHY, _VANISH_EDGE, level / lo))
    return _hex(_mix(_HEALTHY, _EXPLODE_EDGE, level / hi))


def legend(vanishing=VANISHING, exploding=EXPLODING):
    """(label, colour) rows explaining the colour scale, from vanishing to exploding."""
    rows = [(f"vanishing < {vanishing:.0e}", grad_colour(vanishing / 1e3, vanishing, exploding))]
    for value in (vanishing, math.sqrt(vanishing), 1.0, math.sqrt(exploding), exploding):
        rows.append((f"{value:.0e}" if value != 1.0 else "1",
                     grad_colour(value, vanishing, exploding)))
    rows.append((f"exploding > {exploding:.0e}",
                 grad_colour(exploding * 1e3, vanishing, exploding)))
    rows.append(("no gradient", NO_GRAD))
    return rows


def host(array):
    """An xp array as a NumPy array: copied from a GPU, returned as is on the CPU."""
    return np.asarray(backend.to_device(array, "cpu"))


def norm(array):
    """The L2 norm of an array as a Python float (None stays None)."""
    if array is None:
        return None
    return float(np.linalg.norm(host(array).astype(np.float64).ravel()))


def fmt_number(value):
    """A short, stable spelling of a number: 4 significant digits."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    return f"{float(value):.4g}"


def fmt_array(array):
    """A small array as nested lists of short numbers: `[[1, 2], [3, 4]]`, `0.5`."""
    values = host(array).tolist()

    def spell(v):
        if isinstance(v, list):
            return "[" + ", ".join(spell(x) for x in v) + "]"
        return fmt_number(v)

    return spell(values)


def fmt_shape(shape):
    return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


# Figures are sized in inches at DISPLAY_DPI (CSS pixels per inch) and drawn with SCALE times as
# many pixels, then shown at their display size: sharp on a 2x (HiDPI) screen, not blurred by CSS.
DISPLAY_DPI = 96
SCALE = 2


def png(figure, fast=False):
    """A matplotlib Figure rendered to PNG bytes; `fast` trades file size for speed (widgets).

    Otherwise the picture is stored with a palette of 256 colours, a third of the bytes of full
    colour for a plot and no visible difference: notebooks keep their figures in their files.
    """
    buffer = io.BytesIO()
    if fast:
        figure.savefig(buffer, format="png", pil_kwargs={"compress_level": 1})
        return buffer.getvalue()
    from PIL import Image

    figure.canvas.draw()
    rgb = Image.frombuffer("RGBA", figure.canvas.get_width_height(),
                           figure.canvas.buffer_rgba()).convert("RGB")
    rgb.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(buffer, format="png")
    return buffer.getvalue()


def png_display_size(data):
    """(width, height) in CSS pixels at which PNG bytes drawn at SCALE x are shown.

    >>> png_display_size(png(new_figure(2.0, 1.0)))
    (192, 96)
    """
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk, right after the signature
    return round(width / SCALE), round(height / SCALE)


def new_figure(width=6.0, height=3.2, layout="constrained"):
    """A matplotlib Figure outside pyplot, so nothing is shown twice or kept alive globally;
    `width` x `height` inches as shown, drawn at SCALE x that many pixels.

    Widgets pass layout=None and fixed margins: a constrained layout doubles the redraw time.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=DISPLAY_DPI * SCALE, layout=layout)
    FigureCanvasAgg(figure)
    return figure


def show_png(image, data):
    """Show PNG bytes in an ipywidgets Image at their display size (the PNG has SCALE x as many
    pixels, so it stays sharp; the height follows the width, keeping the aspect ratio)."""
    image.value = data
    image.width = str(png_display_size(data)[0])


class Plot:
    """A matplotlib figure with the numbers it shows (`.data`), for lesson check cells."""

    def __init__(self, figure, data, title):
        self.figure = figure
        self.data = data
        self.title = title

    def __repr__(self):
        return f"<Plot: {self.title}>"

    def png(self):
        """The figure as PNG bytes, drawn at SCALE x its display size."""
        return png(self.figure)

    def show_in(self, image):
        """Show the plot in an ipywidgets Image, sharp and at its display size (a widget redraws
        often: the PNG is compressed less)."""
        show_png(image, png(self.figure, fast=True))

    def _repr_png_(self):
        data = self.png()
        width, height = png_display_size(data)
        return data, {"width": width, "height": height}
