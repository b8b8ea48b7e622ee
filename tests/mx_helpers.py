"""Test helpers for kit.mx: finite-difference checks of mx.nd functions through their Tensors."""

from __future__ import annotations

from helpers import check_op

import kit
import kit.mx as mx


def check_nd(fn, *arrays, order=1, **tolerances):
    """check_op of an mx.nd function: float64 leaves go in as NDArrays, recorded under
    autograd.record(); non-array arguments pass through unchanged."""

    def through(*values):
        with mx.autograd.record():
            out = fn(*[mx.nd.NDArray(v) if isinstance(v, kit.Tensor) else v for v in values])
        outs = tuple(o.tensor for o in (out if isinstance(out, (list, tuple)) else [out]))
        return outs[0] if len(outs) == 1 else outs

    check_op(through, *arrays, order=order, **tolerances)


def f64(array):
    """A float64 NDArray (kit.mx's default, as MXNet's, is float32)."""
    return mx.nd.array(array, dtype="float64")
