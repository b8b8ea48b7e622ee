"""Primitives the neural-network layer needs that the core families lack: forward and gradient
side by side (see _record.py for the rule signature).

- `linear`, y = x W^T + b, fused for speed (stated reason, as DESIGN.md asks): spelt with
  primitives it records three nodes (transpose, matmul, add) and its weight gradient comes back
  as the transpose of a (in, out) product, a strided array that makes every later update of the
  (out, in) weight walk memory column-wise (the nn.Linear MLP step measured 1.3-1.4x the
  bare-tensor step that way). Fused, it is one node whose weight gradient `g^T x` is computed
  directly in the weight's layout, as PyTorch's addmm backward does. tests/test_nn_functional.py
  checks it against the composite, finite differences (first and second order) and PyTorch.

- `erf`, for the exact GELU (PyTorch's default `approximate='none'`). NumPy has no erf, so the
  CPU forward maps `math.erf` over the elements (exact to the last bit of a float64, slow only
  for large arrays); on the GPU it is CuPy's `cupyx.scipy.special.erf`.
"""

from __future__ import annotations

import math

import numpy as np

from kit import backend
from kit._promotion import default_float
from kit._tensor import Tensor
from kit.ops._record import check_same_device, cross, data_of, record
from kit.ops._registry import primitive
from kit.ops.elementwise import exp_

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_ERF = np.frompyfunc(math.erf, 1, 1)


def _erf_rule(node, g, x):
    # d erf(x) / dx = 2 / sqrt(pi) * exp(-x^2); written with exp_ so create_graph works too.
    return (g * _TWO_OVER_SQRT_PI * exp_(-(x * x)),)


@primitive("erf", grad=_erf_rule, saves="x", batch="elementwise", methods=("erf",),
           inplace=("erf_",), torch="erf", mx="erf")
def erf(x):
    """The error function, elementwise: erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt."""
    if not isinstance(x, Tensor):
        raise TypeError(f"kit.erf: expected a Tensor, got {type(x).__name__}")
    d = data_of(x)
    if d.dtype.kind != "f":  # an integer or bool input gives the default float dtype (PyTorch)
        d = d.astype(default_float())
    if backend.device_of(d) == "cpu":
        out = np.asarray(_ERF(d), dtype=d.dtype)
    else:  # pragma: no cover - needs a GPU
        import cupyx.scipy.special

        out = cupyx.scipy.special.erf(d)
    return record("erf", _erf_rule, out, (x,), (x,))


def _linear_rule(node, g, x=None, w=None):
    # NOTE: x is saved only if the weight needs a gradient, the weight only if x does (`cross`)
    need = node.next_functions
    gx = g @ w if need[0] else None
    gw = gb = None
    if need[1] or need[2]:
        g2 = g.reshape((-1, g.shape[-1]))
        if need[1]:
            gw = g2.T @ x.reshape((-1, x.shape[-1]))
        if need[2]:
            gb = g2.sum(axis=0)
    return gx, gw, gb


def _linear_array(xp, x, weight, bias=None):
    """linear on arrays, as kit.compile replays it (the registry's array form): exactly the
    primitive's computation, so a replay gives the same bits."""
    out = x @ weight.T
    if bias is not None:
        out += bias
    return out, ()


@primitive("linear", grad=_linear_rule, saves="x, weight", batch="linear", array=_linear_array)
def linear(x, weight, bias=None):
    """x @ weight.T + bias as one node, weight of shape (out_features, in_features)."""
    if not (isinstance(x, Tensor) and isinstance(weight, Tensor)
            and (bias is None or isinstance(bias, Tensor))):
        wrong = next(t for t in (x, weight, bias) if t is not None and not isinstance(t, Tensor))
        raise TypeError(f"kit.linear: arguments must be Tensors, got {type(wrong).__name__}")
    d, w = data_of(x), data_of(weight)
    b = None if bias is None else data_of(bias)
    if w.ndim != 2 or d.ndim == 0 or d.shape[-1] != w.shape[1]:
        raise ValueError(
            f"kit.linear: input has {d.shape[-1] if d.ndim else 0} features (shape "
            f"{tuple(d.shape)}) but weight expects {w.shape[-1]} (shape {tuple(w.shape)}). "
            f"Fix: make the layer's in_features match the input's last dimension"
        )
    if b is not None and b.shape != (w.shape[0],):
        raise ValueError(
            f"kit.linear: bias must have shape ({w.shape[0]},), got {tuple(b.shape)}"
        )
    if d.dtype != w.dtype or (b is not None and b.dtype != w.dtype):
        raise TypeError(
            f"kit.linear: input and weight must have the same dtype, but got {d.dtype} and "
            f"{w.dtype}. Fix: convert one, e.g. x.to(weight.dtype) or model.to(x.dtype)"
        )
    if type(d) is not type(w) or (b is not None and type(b) is not type(w)):
        check_same_device("linear", *(a for a in (d, w, b) if a is not None))
    out = d @ w.T
    if b is not None:
        out += b
    return record("linear", _linear_rule, out, (x, weight, bias), (x, weight), None, _linear_keep)


def _linear_keep(saved, edges):
    """`cross`, and nothing at all when only the bias needs a gradient (PyTorch's addmm keeps
    nothing then, so a second backward works)."""
    return cross(saved, edges) if edges[0] or edges[1] else ()

