"""Anomaly detection's two jobs in the reverse pass (switched on by kit.detect_anomaly).

1. Every op recorded under it keeps the stack of the line that created it (`capture_stack`);
   when that op's backward raises, the error gets a note naming your forward line
   (`name_forward_line`). PyTorch prints the same as a warning before the error.
2. With check_nan, every gradient a node returns is checked for NaN (`check_nan`).

The note lists your frames only: kit's own, the interpreter's (IPython, asyncio, the standard
library) and installed packages are left out, so in a notebook it shows the cell's line.
"""

from __future__ import annotations

import os
import sysconfig
import traceback

from kit import backend

_KIT = os.path.dirname(os.path.abspath(__file__)) + os.sep
_LIBRARIES = tuple(sorted({os.path.abspath(p) + os.sep for key in
                           ("stdlib", "platstdlib", "purelib", "platlib")
                           if (p := sysconfig.get_paths().get(key))}))
_SHOWN = 4  # frames of your code shown, innermost last


def capture_stack(node, skip):
    """Keep the stack of the forward line that made `node` (without the last `skip` frames:
    kit's own)."""
    node.stack = traceback.extract_stack()[:-1 - skip]


def _yours(frame):
    if frame.filename.startswith("<"):  # code typed in or exec'd is yours; frozen modules not
        return not frame.filename.startswith("<frozen")
    name = os.path.abspath(frame.filename)
    return not name.startswith(_KIT) and not name.startswith(_LIBRARIES)


def forward_trace(stack):
    """The lines of `stack` worth showing: your frames (or, if none, the innermost ones)."""
    frames = [frame for frame in stack if _yours(frame)] or list(stack)
    return "".join(traceback.format_list(frames[-_SHOWN:]))


def name_forward_line(error, node):
    """Add a note to `error` (raised by `node`'s backward) naming the forward line that made
    `node`."""
    note = (f"Error detected in {node.name()}. The forward call that created it:\n"
            f"{forward_trace(node.stack)}").rstrip("\n")
    if hasattr(error, "add_note"):  # Python 3.11+: shown under the message
        error.add_note(note)
    elif error.args and isinstance(error.args[0], str):
        error.args = (f"{error.args[0]}\n{note}",) + error.args[1:]


def check_nan(node, in_grads):
    """Raise if a gradient returned by `node` holds NaN (PyTorch's message)."""
    from kit._tensor import Tensor  # NOTE: here, not at the top: kit._tensor imports the engine

    for index, g in enumerate(in_grads):
        if g is None:
            continue
        data = g._data if isinstance(g, Tensor) else g
        xp = backend.get_array_module(data)
        if data.dtype.kind in "fc" and bool(xp.isnan(data).any()):
            raise RuntimeError(
                f"Function '{node.name()}' returned nan values in its {index}th output "
                f"(the gradient for input {index} of {node.op})."
            )
