"""What the mx.nd modules share: argument checks, MXNet's default dtype, `out=`, naming."""

from __future__ import annotations

import numpy as np

from kit.mx.context import Context, current_context
from kit.mx.ndarray import NDArray

REAL = np.dtype("float32")  # MXNet's default dtype


def kit_device(ctx):
    """The kit device for an mx Context (the current context when None)."""
    if ctx is None:
        return current_context().kit_device
    if not isinstance(ctx, Context):
        raise TypeError(f"ctx must be an mx.Context such as mx.cpu(), got {ctx!r}")
    return ctx.kit_device


def tensor_of(data, op):
    """The kit Tensor behind `data`, which must be an NDArray (op names the caller)."""
    if not isinstance(data, NDArray):
        raise TypeError(f"mx.nd.{op}: expected an NDArray, got {type(data).__name__}")
    return data._t


def named(op, name, doc):
    """Give a generated function its MXNet name and a docstring."""
    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


def as_shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


def write_out(result, out):
    """MXNet's `out=` argument: write the result into an existing array."""
    if out is None:
        return result
    out[:] = result
    return out
