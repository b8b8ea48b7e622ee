"""Primitives the neural-network layer needs that the core families lack: forward and gradient
side by side (see _record.py for the rule signature).

- `erf`, for the exact GELU (PyTorch's default `approximate='none'`). NumPy has no erf, so the
  CPU forward maps `math.erf` over the elements (exact to the last bit of a float64, slow only
  for large arrays); on the GPU it is CuPy's `cupyx.scipy.special.erf`.
"""

from __future__ import annotations

import math

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.ops._record import data_of, record
from kit.ops._vmap import VMAP
from kit.ops.elementwise import exp_

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_ERF = np.frompyfunc(math.erf, 1, 1)


def _erf_rule(node, g, x):
    # d erf(x) / dx = 2 / sqrt(pi) * exp(-x^2); written with exp_ so create_graph works too.
    return (g * _TWO_OVER_SQRT_PI * exp_(-(x * x)),)


def erf(x):
    """The error function, elementwise: erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt."""
    if VMAP.depth:
        return VMAP.dispatch("erf", erf, x)
    if not isinstance(x, Tensor):
        raise TypeError(f"kit.erf: expected a Tensor, got {type(x).__name__}")
    d = data_of(x)
    if d.dtype.kind != "f":
        raise TypeError(f"kit.erf: expected a floating tensor, got {d.dtype}. Fix: x.float()")
    if backend.device_of(d) == "cpu":
        out = np.asarray(_ERF(d), dtype=d.dtype)
    else:  # pragma: no cover - needs a GPU
        import cupyx.scipy.special

        out = cupyx.scipy.special.erf(d)
    return record("erf", _erf_rule, out, (x,), (x,))
