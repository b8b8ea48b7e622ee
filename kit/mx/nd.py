"""`mx.nd`: array creation and the common MXNet operators, on kit's primitives.

Every function here is built from kit ops, so its gradient comes from kit's engine; none of them
owns gradient code (SoftmaxOutput, in nd_nn.py, is the one stated exception). MXNet's defaults are
kept: float32 everywhere, `concat` along dim=1, `softmax_cross_entropy` summed over the batch,
reductions to shape (1,), `flatten` keeping axis 0. The families live in their own modules
(nd_creation, nd_index, nd_shape, nd_nn, nd_conv, nd_io, nd_linalg as mx.nd.linalg, random as
mx.nd.random, sparse as mx.nd.sparse); this one holds the elementwise ops and reductions.

>>> import kit.mx as mx
>>> mx.nd.sum(mx.nd.ones((2, 3))).asnumpy()
array([6.], dtype=float32)
"""

from __future__ import annotations

import math

import numpy as np

from kit import backend, ops
from kit._tensor import Tensor
from kit.mx import nd_linalg as linalg
from kit.mx import random, sparse
from kit.mx._custom import Custom
from kit.mx._ndutil import REAL, as_shape, named, tensor_of, write_out
from kit.mx.base import error, run
from kit.mx.nd_conv import Convolution, Pooling
from kit.mx.nd_creation import (
    arange,
    array,
    empty,
    full,
    ones,
    ones_like,
    random_normal,
    random_uniform,
    waitall,
    zeros,
    zeros_like,
)
from kit.mx.nd_index import pick, repeat, tile, topk, where
from kit.mx.nd_io import load, save
from kit.mx.nd_nn import (
    Activation,
    Dropout,
    Embedding,
    FullyConnected,
    LeakyReLU,
    SoftmaxOutput,
    smooth_l1,
)
from kit.mx.nd_shape import (
    BlockGrad,
    add_n,
    broadcast_like,
    broadcast_to,
    flip,
    reverse,
    slice,
    slice_axis,
    split,
    squeeze,
    stack,
    stop_gradient,
    swapaxes,
    take,
)
from kit.mx.ndarray import NDArray, mxnet_mod, unwrap, wrap
from kit.ops._registry import published
from kit.ops.reductions import normalize_axis

__all__ = [
    "Activation", "BlockGrad", "Convolution", "Custom", "Dropout", "Embedding", "FullyConnected",
    "LeakyReLU", "NDArray", "Pooling", "SoftmaxOutput", "add", "add_n", "arange", "argmax",
    "array", "batch_dot", "broadcast_like", "broadcast_logical_and", "broadcast_logical_or",
    "broadcast_logical_xor", "broadcast_mod", "broadcast_to", "clip", "concat", "divide", "dot",
    "empty", "expand_dims", "flatten", "flip", "full", "linalg", "load", "log10", "log2",
    "log_softmax", "logical_not", "max", "mean", "min", "multiply", "norm", "one_hot", "ones",
    "ones_like",
    "pick", "random", "random_normal", "random_uniform", "reciprocal", "repeat", "reshape",
    "reverse", "rsqrt", "save", "sign", "slice", "slice_axis", "smooth_l1", "softmax",
    "softmax_cross_entropy", "sparse", "split", "square", "squeeze", "stack", "stop_gradient",
    "subtract", "sum", "swapaxes", "take", "tile", "topk", "transpose", "true_divide", "waitall",
    "where", "zeros", "zeros_like",
]

# --- elementwise ----------------------------------------------------------------------------
def _unary(name, fn):
    def op(data, out=None, name=None):
        return write_out(wrap(run(fn, tensor_of(data, op.__name__))), out)

    return named(op, name, f"Elementwise {name} (mx.nd.{name}).")


square = _unary("square", lambda t: t * t)
sign = _unary("sign", ops.sign)  # NOTE: no gradient flows: it is 0 almost everywhere
reciprocal = _unary("reciprocal", lambda t: 1 / t)
rsqrt = _unary("rsqrt", lambda t: 1 / ops.sqrt(t))
log2 = _unary("log2", lambda t: ops.log(t) / math.log(2))
log10 = _unary("log10", lambda t: ops.log(t) / math.log(10))


def _binary(name, fn):
    def op(lhs, rhs, out=None, name=None):
        return write_out(wrap(run(fn, unwrap(lhs), unwrap(rhs))), out)

    return named(op, name, f"Elementwise {name} with broadcasting (mx.nd.{name}).")


add = _binary("add", ops.add)
subtract = _binary("subtract", ops.sub)
multiply = _binary("multiply", ops.mul)
divide = _binary("divide", ops.div)
true_divide = divide
broadcast_mod = _binary("broadcast_mod", mxnet_mod)


def _truth(fn):
    # NOTE: MXNet's logic ops give 1/0 in the array's dtype, not booleans (as its comparisons)
    return lambda *tensors: fn(*tensors).astype(tensors[0].dtype)


broadcast_logical_and = _binary("broadcast_logical_and", _truth(ops.logical_and))
broadcast_logical_or = _binary("broadcast_logical_or", _truth(ops.logical_or))
broadcast_logical_xor = _binary("broadcast_logical_xor", _truth(ops.logical_xor))
logical_not = _unary("logical_not", _truth(ops.logical_not))


def _same_shape(name, fn):
    def op(lhs, rhs, out=None, name=None):
        if tensor_of(lhs, op.__name__).shape != tensor_of(rhs, op.__name__).shape:
            raise error(ValueError, (
                f"mx.nd.{op.__name__}: shapes {lhs.shape} and {rhs.shape} differ; elemwise ops "
                f"do not broadcast. Fix: use mx.nd.broadcast_{op.__name__[9:]} or plain operators"
            ))
        return write_out(wrap(run(fn, lhs._t, rhs._t)), out)

    return named(op, name,
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
    return write_out(wrap(run(ops.clamp, tensor_of(data, "clip"), a_min, a_max)), out)


# --- reductions -----------------------------------------------------------------------------
def _axes(data, axis, exclude, op):
    if isinstance(axis, (list, tuple)) and not axis:  # MXNet's default axis=(): every axis
        return tuple(range(data.ndim))
    axes = normalize_axis(axis, data.ndim, op)
    if exclude:
        axes = tuple(i for i in range(data.ndim) if i not in axes)
    return axes


def _reduction(name, fn):
    def op(data, axis=None, keepdims=False, exclude=False, out=None, name=None):
        t = tensor_of(data, op.__name__)
        axes = _axes(t, axis, exclude, op.__name__)
        return write_out(wrap(run(fn, t, axes, bool(keepdims))), out)

    return named(op, name, (
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


def norm(data, ord=2, axis=None, keepdims=False, out=None):  # noqa: A002 - MXNet's name
    """The L2 norm (ord=2) or L1 norm (ord=1) over `axis` (all axes by default: shape (1,)).

    NOTE: the L2 norm's gradient x / norm is undefined at an all-zero input (nan there).
    """
    t = tensor_of(data, "norm")
    if ord not in (1, 2):
        raise ValueError(f"mx.nd.norm: kit.mx supports ord=1 and ord=2, got ord={ord!r}")
    axes = normalize_axis(axis, t.ndim, "mx.nd.norm")

    def compute(t):
        if ord == 1:
            return ops.sum(ops.abs(t), axes, bool(keepdims))
        return ops.sqrt(ops.sum(t * t, axes, bool(keepdims)))

    return write_out(wrap(run(compute, t)), out)


def argmax(data, axis=None, keepdims=False):
    """Index of the largest element along `axis` (of the flattened array, shape (1,), when None),
    as float32 (MXNet's dtype for indices)."""
    t = tensor_of(data, "argmax")
    idx = t._data.argmax().reshape(1) if axis is None else t._data.argmax(axis=axis)
    if keepdims and axis is not None:
        idx = backend.get_array_module(idx).expand_dims(idx, axis)
    return wrap(Tensor(idx.astype(t._data.dtype if t._data.dtype.kind == "f" else REAL)))


# --- shape ----------------------------------------------------------------------------------
def reshape(data, shape=None, reverse=False, out=None, **kwargs):
    """A new shape; MXNet's special values 0 (keep this dimension) and -1 (infer) work."""
    t = tensor_of(data, "reshape")
    shape = kwargs.pop("newshape", shape)
    if kwargs or shape is None or reverse:
        raise TypeError("mx.nd.reshape(data, shape): kit.mx supports `shape` only (no reverse)")
    shape = as_shape(shape)
    if any(n < -1 for n in shape):
        raise ValueError(
            f"mx.nd.reshape: special values {sorted(n for n in shape if n < -1)} are not "
            f"supported by kit.mx; use 0 (keep a dimension) and -1 (infer one)"
        )
    shape = tuple(t.shape[i] if n == 0 else n for i, n in enumerate(shape))
    return write_out(wrap(run(ops.reshape, t, shape)), out)


def transpose(data, axes=None, out=None):
    """Permute the axes (reverse them by default)."""
    t = tensor_of(data, "transpose")
    axes = tuple(reversed(range(t.ndim))) if axes is None or axes == () else tuple(axes)
    return write_out(wrap(run(ops.permute, t, axes)), out)


def expand_dims(data, axis):
    return wrap(run(ops.unsqueeze, tensor_of(data, "expand_dims"), axis))


def flatten(data):
    """Collapse all axes but the first: (N, a, b) -> (N, a*b), as MXNet's Flatten."""
    t = tensor_of(data, "flatten")
    return wrap(run(ops.reshape, t, (t.shape[0], math.prod(t.shape[1:]))))


def concat(*data, dim=1, out=None):
    """Join arrays along `dim` (MXNet's default is dim=1)."""
    tensors = [tensor_of(d, "concat") for d in data]
    return write_out(wrap(run(ops.cat, tensors, dim)), out)


# --- linear algebra and losses --------------------------------------------------------------
def dot(lhs, rhs, transpose_a=False, transpose_b=False, out=None):
    """MXNet's dot: contracts the last axis of `lhs` with the first axis of `rhs`."""
    a, b = tensor_of(lhs, "dot"), tensor_of(rhs, "dot")

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

    return write_out(wrap(run(compute, a, b)), out)


def batch_dot(lhs, rhs, transpose_a=False, transpose_b=False, out=None):
    """Matrix products of matching batches: (B, n, k) x (B, k, m) -> (B, n, m)."""
    a, b = tensor_of(lhs, "batch_dot"), tensor_of(rhs, "batch_dot")
    if a.ndim < 3 or a.ndim != b.ndim:
        raise error(ValueError, (
            f"mx.nd.batch_dot: both operands must be batches of matrices with the same number of "
            f"dimensions (at least 3), got shapes {a.shape} and {b.shape}"
        ))

    def compute(a, b):
        a = ops.transpose(a, -2, -1) if transpose_a else a
        b = ops.transpose(b, -2, -1) if transpose_b else b
        if a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2]:
            raise error(ValueError, (
                f"mx.nd.batch_dot: shapes {a.shape} and {b.shape} (after transpose_a="
                f"{transpose_a}, transpose_b={transpose_b}) do not multiply: the batch axes must "
                f"agree and the first's columns must equal the second's rows"
            ))
        return ops.matmul(a, b)

    return write_out(wrap(run(compute, a, b)), out)


def _softmax_family(name, fn):
    def op(data, axis=-1, temperature=None, out=None):
        def compute(x):
            return fn(x if temperature is None else x / temperature, axis)

        return write_out(wrap(run(compute, tensor_of(data, op.__name__))), out)

    return named(op, name, f"{name} along `axis` of data / temperature (mx.nd.{name}).")


softmax = _softmax_family("softmax", ops.softmax)
log_softmax = _softmax_family("log_softmax", ops.log_softmax)


def softmax_cross_entropy(data, label, out=None):
    """Cross-entropy of softmax(data) against class labels, summed over the batch: shape (1,)."""
    t = tensor_of(data, "softmax_cross_entropy")
    classes = tensor_of(label, "softmax_cross_entropy")._data.astype(np.int64)
    return write_out(wrap(run(ops.cross_entropy, t, classes, "sum")), out)


def one_hot(indices, depth, on_value=1.0, off_value=0.0, dtype=None):
    """One-hot rows for integer-valued `indices` (not differentiable)."""
    idx = tensor_of(indices, "one_hot")._data.astype(np.int64)
    xp = backend.get_array_module(idx)
    hot = xp.arange(int(depth)) == idx[..., None]
    values = xp.where(hot, on_value, off_value).astype(np.dtype(dtype or REAL))
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
        "reciprocal": reciprocal, "rsqrt": rsqrt,
        "square": square, "clip": clip, "sum": sum,
        "mean": mean, "max": max, "min": min, "argmax": argmax, "transpose": _transpose_method,
        "reshape": _reshape_method, "expand_dims": expand_dims, "flatten": flatten,
        "softmax": softmax,
        "log_softmax": log_softmax, "zeros_like": zeros_like, "ones_like": ones_like,
        "one_hot": one_hot, "T": property(lambda self: transpose(self)), "sign": sign,
        "norm": norm, "tile": tile, "repeat": repeat, "pick": pick, "topk": topk,
        "squeeze": squeeze, "swapaxes": swapaxes, "flip": flip, "split": split,
        "slice_axis": slice_axis, "take": take, "broadcast_to": broadcast_to,
        "broadcast_like": broadcast_like,
    })
    for name, fn in methods.items():
        setattr(NDArray, name, fn)


_bind_methods()

# --- issue 12: orderings, scans, products, eye and linspace ---------------------------------
from kit.mx.nd_creation import eye, linspace  # noqa: E402
from kit.mx.nd_order import argmin, argsort, cumsum, prod, reshape_like, sort  # noqa: E402

__all__ += ["argmin", "argsort", "cumsum", "eye", "linspace", "prod", "reshape_like", "sort"]
for _name in ("argmin", "argsort", "cumsum", "prod", "reshape_like", "sort"):
    setattr(NDArray, _name, globals()[_name])
