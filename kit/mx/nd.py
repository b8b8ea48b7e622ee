"""`mx.nd`: array creation and the common MXNet operators, on kit's primitives.

Every function here is built from kit ops, so its gradient comes from kit's engine; none of them
owns gradient code. MXNet's defaults are kept: float32 everywhere, `concat` along dim=1,
`softmax_cross_entropy` summed over the batch, reductions to shape (1,), `flatten` keeping axis 0.
"""

from __future__ import annotations

import math

import numpy as np

import kit
from kit import backend, ops
from kit._tensor import Tensor
from kit.mx._custom import Custom
from kit.mx.base import run
from kit.mx.context import Context, current_context
from kit.mx.ndarray import NDArray, unwrap, wrap
from kit.ops._registry import published
from kit.ops.reductions import normalize_axis

__all__ = [
    "Custom", "NDArray", "arange", "argmax", "array", "clip", "concat", "dot", "empty",
    "expand_dims", "flatten", "full", "log_softmax", "max", "mean", "min", "one_hot", "ones",
    "ones_like", "reshape", "softmax", "softmax_cross_entropy", "square", "sum",
    "transpose", "waitall", "zeros", "zeros_like",
]

_REAL = np.dtype("float32")


def _device(ctx):
    if ctx is None:
        return current_context().kit_device
    if not isinstance(ctx, Context):
        raise TypeError(f"ctx must be an mx.Context such as mx.cpu(), got {ctx!r}")
    return ctx.kit_device


def _nd(data, op):
    if not isinstance(data, NDArray):
        raise TypeError(f"mx.nd.{op}: expected an NDArray, got {type(data).__name__}")
    return data._t


def _named(op, name, doc):
    """Give a generated function its MXNet name and a docstring."""
    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


def _shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


def _out(result, out):
    """MXNet's `out=` argument: write the result into an existing array."""
    if out is None:
        return result
    out[:] = result
    return out


# --- creation -------------------------------------------------------------------------------
def array(source_array, ctx=None, dtype=None):
    """A new NDArray holding a copy of `source_array`; float32 unless `dtype` says otherwise.

    >>> import kit.mx as mx
    >>> mx.nd.array([1, 2, 3])
    <BLANKLINE>
    [1. 2. 3.]
    <NDArray 3 @cpu(0)>
    """
    if isinstance(source_array, NDArray):
        data = source_array._t._data
        dtype = data.dtype if dtype is None else dtype
    elif isinstance(source_array, Tensor):
        data = source_array._data
    elif backend.device_of(source_array) == "gpu":
        data = source_array
    else:
        data = np.asarray(source_array, dtype=_REAL if dtype is None else dtype)
    return NDArray(kit.tensor(data, dtype=np.dtype(dtype or _REAL), device=_device(ctx)))


def _creator(fill):
    def create(shape, ctx=None, dtype=None, **kwargs):
        return NDArray(fill(_shape(shape), dtype=np.dtype(dtype or _REAL), device=_device(ctx)))

    return create


zeros = _creator(kit.zeros)
ones = _creator(kit.ones)
empty = zeros  # NOTE: MXNet leaves empty() uninitialised; kit gives zeros, never garbage


def full(shape, val, ctx=None, dtype=None):
    dtype = np.dtype(dtype or _REAL)
    return NDArray(kit.full(_shape(shape), val, dtype=dtype, device=_device(ctx)))


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None, dtype=None):
    """Evenly spaced values in [start, stop), each repeated `repeat` times; float32."""
    values = np.arange(start, stop, step).astype(np.dtype(dtype or _REAL))
    if repeat != 1:
        values = np.repeat(values, int(repeat))
    return NDArray(kit.tensor(values, device=_device(ctx)))


def zeros_like(data):
    return NDArray(kit.zeros_like(_nd(data, "zeros_like")))


def ones_like(data):
    return NDArray(kit.ones_like(_nd(data, "ones_like")))


def waitall():
    """Wait for all queued work (a sync on the GPU; nothing is asynchronous on the CPU)."""
    backend.synchronize("gpu")


# --- elementwise ----------------------------------------------------------------------------
def _unary(name, fn):
    def op(data, out=None, name=None):
        return _out(wrap(run(fn, _nd(data, op.__name__))), out)

    return _named(op, name, f"Elementwise {name} (mx.nd.{name}).")


square = _unary("square", lambda t: t * t)


def _binary(name, fn):
    def op(lhs, rhs, out=None, name=None):
        return _out(wrap(run(fn, unwrap(lhs), unwrap(rhs))), out)

    return _named(op, name, f"Elementwise {name} with broadcasting (mx.nd.{name}).")



def _same_shape(name, fn):
    def op(lhs, rhs, out=None, name=None):
        if _nd(lhs, op.__name__).shape != _nd(rhs, op.__name__).shape:
            raise ValueError(
                f"mx.nd.{op.__name__}: shapes {lhs.shape} and {rhs.shape} differ; elemwise ops "
                f"do not broadcast. Fix: use mx.nd.broadcast_{op.__name__[9:]} or plain operators"
            )
        return _out(wrap(run(fn, lhs._t, rhs._t)), out)

    return _named(op, name,
                  f"Elementwise {name[9:]} of two arrays of the same shape (mx.nd.{name}).")


def _takes_one_array(fn):
    return fn.__code__.co_argcount - len(fn.__defaults__ or ()) == 1


def _from_registry():
    """kit's ops under the names their declarations publish in mx.nd (kit/ops/_registry.py):
    `elemwise_*` refuse to broadcast, the rest take one array or two."""
    made = {}
    for name, op in published("mx"):
        if name.startswith("elemwise_"):
            made[name] = _same_shape(name, op.fn)
        elif _takes_one_array(op.fn):
            made[name] = _unary(name, op.fn)
        else:
            made[name] = _binary(name, op.fn)
    return made


_FROM_REGISTRY = _from_registry()
globals().update(_FROM_REGISTRY)
__all__ += sorted(_FROM_REGISTRY)


def clip(data, a_min, a_max, out=None):
    return _out(wrap(run(ops.clamp, _nd(data, "clip"), a_min, a_max)), out)


# --- reductions -----------------------------------------------------------------------------
def _axes(data, axis, exclude, op):
    axes = normalize_axis(axis, data.ndim, op)
    if exclude:
        axes = tuple(i for i in range(data.ndim) if i not in axes)
    return axes


def _reduction(name, fn):
    def op(data, axis=None, keepdims=False, exclude=False, out=None, name=None):
        t = _nd(data, op.__name__)
        axes = _axes(t, axis, exclude, op.__name__)
        return _out(wrap(run(fn, t, axes, bool(keepdims))), out)

    return _named(op, name, (
        f"{name} over `axis` (all axes by default; `exclude=True` reduces the other axes). "
        f"A full reduction has shape (1,), as in MXNet."
    ))


def _extreme(fn):
    def reduce(t, axes, keepdims):
        for a in sorted(axes, reverse=True):
            t = fn(t, a, keepdims=True).values
        if not keepdims:
            t = t.reshape(tuple(n for i, n in enumerate(t.shape) if i not in axes))
        return t

    return reduce


sum = _reduction("sum", ops.sum)  # noqa: A001
mean = _reduction("mean", ops.mean)
max = _reduction("max", _extreme(ops.max))  # noqa: A001
min = _reduction("min", _extreme(ops.min))  # noqa: A001


def argmax(data, axis=None, keepdims=False):
    """Index of the largest element along `axis`, as float32 (MXNet's dtype for indices)."""
    t = _nd(data, "argmax")
    idx = t._data.argmax() if axis is None else t._data.argmax(axis=axis)
    if keepdims and axis is not None:
        idx = backend.get_array_module(idx).expand_dims(idx, axis)
    return wrap(Tensor(idx.astype(t._data.dtype if t._data.dtype.kind == "f" else _REAL)))


# --- shape ----------------------------------------------------------------------------------
def reshape(data, shape=None, reverse=False, out=None, **kwargs):
    """A new shape; MXNet's special values 0 (keep this dimension) and -1 (infer) work."""
    t = _nd(data, "reshape")
    shape = kwargs.pop("newshape", shape)
    if kwargs or shape is None or reverse:
        raise TypeError("mx.nd.reshape(data, shape): kit.mx supports `shape` only (no reverse)")
    shape = _shape(shape)
    if any(n < -1 for n in shape):
        raise ValueError(
            f"mx.nd.reshape: special values {sorted(n for n in shape if n < -1)} are not "
            f"supported by kit.mx; use 0 (keep a dimension) and -1 (infer one)"
        )
    shape = tuple(t.shape[i] if n == 0 else n for i, n in enumerate(shape))
    return _out(wrap(run(ops.reshape, t, shape)), out)


def transpose(data, axes=None, out=None):
    """Permute the axes (reverse them by default)."""
    t = _nd(data, "transpose")
    axes = tuple(reversed(range(t.ndim))) if axes is None or axes == () else tuple(axes)
    return _out(wrap(run(ops.permute, t, axes)), out)


def expand_dims(data, axis):
    return wrap(run(ops.unsqueeze, _nd(data, "expand_dims"), axis))


def flatten(data):
    """Collapse all axes but the first: (N, a, b) -> (N, a*b), as MXNet's Flatten."""
    t = _nd(data, "flatten")
    return wrap(run(ops.reshape, t, (t.shape[0], math.prod(t.shape[1:]))))


def concat(*data, dim=1, out=None):
    """Join arrays along `dim` (MXNet's default is dim=1)."""
    tensors = [_nd(d, "concat") for d in data]
    return _out(wrap(run(ops.cat, tensors, dim)), out)


# --- linear algebra and losses --------------------------------------------------------------
def dot(lhs, rhs, transpose_a=False, transpose_b=False, out=None):
    """MXNet's dot: contracts the last axis of `lhs` with the first axis of `rhs`."""
    a, b = _nd(lhs, "dot"), _nd(rhs, "dot")

    def compute(a, b):
        if transpose_a:
            a = ops.permute(a, tuple(reversed(range(a.ndim))))
        if transpose_b:
            b = ops.permute(b, tuple(reversed(range(b.ndim))))
        if a.ndim <= 2 and b.ndim <= 2:
            return ops.matmul(a, b)
        k = a.shape[-1]
        flat = ops.matmul(ops.reshape(a, (-1, k)), ops.reshape(b, (b.shape[0], -1)))
        return ops.reshape(flat, a.shape[:-1] + b.shape[1:])

    return _out(wrap(run(compute, a, b)), out)


def _softmax_family(name, fn):
    def op(data, axis=-1, temperature=None, out=None):
        def compute(x):
            return fn(x if temperature is None else x / temperature, axis)

        return _out(wrap(run(compute, _nd(data, op.__name__))), out)

    return _named(op, name, f"{name} along `axis` of data / temperature (mx.nd.{name}).")


softmax = _softmax_family("softmax", ops.softmax)
log_softmax = _softmax_family("log_softmax", ops.log_softmax)


def softmax_cross_entropy(data, label, out=None):
    """Cross-entropy of softmax(data) against class labels, summed over the batch: shape (1,)."""
    t = _nd(data, "softmax_cross_entropy")
    classes = _nd(label, "softmax_cross_entropy")._data.astype(np.int64)
    return _out(wrap(run(ops.cross_entropy, t, classes, "sum")), out)


def one_hot(indices, depth, on_value=1.0, off_value=0.0, dtype=None):
    """One-hot rows for integer-valued `indices` (not differentiable)."""
    idx = _nd(indices, "one_hot")._data.astype(np.int64)
    xp = backend.get_array_module(idx)
    hot = xp.arange(int(depth)) == idx[..., None]
    values = xp.where(hot, on_value, off_value).astype(np.dtype(dtype or _REAL))
    return NDArray(Tensor(values))


# --- NDArray methods that are these functions ------------------------------------------------
def _transpose_method(self, *axes):
    """x.transpose(), x.transpose(1, 0, 2) or x.transpose((1, 0, 2))."""
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = axes[0]
    return transpose(self, axes or None)


def _reshape_method(self, *shape, **kwargs):
    """x.reshape((2, 3)), x.reshape(2, 3) or x.reshape(shape=(2, 3))."""
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = shape[0]
    return reshape(self, shape or kwargs.pop("shape", None), **kwargs)


def _bind_methods():
    # A one-array mx.nd function spelt as its kit op's Tensor method is an NDArray method too.
    methods = {name: _FROM_REGISTRY[name] for name, op in published("mx")
               if name in op.methods and _takes_one_array(op.fn)}
    methods.update({
        "square": square, "clip": clip, "sum": sum,
        "mean": mean, "max": max, "min": min, "argmax": argmax, "transpose": _transpose_method,
        "reshape": _reshape_method, "expand_dims": expand_dims, "flatten": flatten,
        "softmax": softmax,
        "log_softmax": log_softmax, "zeros_like": zeros_like, "ones_like": ones_like,
        "one_hot": one_hot, "T": property(lambda self: transpose(self)),
    })
    for name, fn in methods.items():
        setattr(NDArray, name, fn)


_bind_methods()
