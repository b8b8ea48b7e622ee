"""MXNet's neural-network operators: Activation, FullyConnected, Dropout, SoftmaxOutput.

Activation, FullyConnected and Dropout are composites of kit ops. SoftmaxOutput is the one op
here with gradient code, for a stated reason: MXNet's loss layer has a backward that is not the
chain rule (it ignores the gradient from above and returns softmax - onehot), which no
composition of differentiable ops can express.
"""

from __future__ import annotations

import math

import numpy as np

import kit
from kit import ops
from kit.function import Function, refuse_second_derivative
from kit.grad_mode import STATE
from kit.mx import random
from kit.mx._ndutil import tensor_of, write_out
from kit.mx.base import MODE, error, run
from kit.mx.ndarray import NDArray, wrap

__all__ = [
    "Activation", "Dropout", "Embedding", "FullyConnected", "LeakyReLU", "SoftmaxOutput",
    "smooth_l1",
]


def _softrelu(x):
    # NOTE: log(1 + exp(x)) written as max(x, 0) + log(1 + exp(-|x|)): no overflow for large x
    return ops.maximum(x, 0) + ops.log(ops.exp(-ops.abs(x)) + 1)


_ACTIVATIONS = {
    "relu": ops.relu, "sigmoid": ops.sigmoid, "tanh": ops.tanh, "softrelu": _softrelu,
    "softsign": lambda x: x / (ops.abs(x) + 1),
}


def Activation(data, act_type, out=None, name=None):  # noqa: N802 - MXNet's names
    """An elementwise activation: act_type 'relu', 'sigmoid', 'tanh', 'softrelu' or 'softsign'.

    >>> import kit.mx as mx
    >>> mx.nd.Activation(mx.nd.array([-1, 2]), act_type='relu').asnumpy()
    array([0., 2.], dtype=float32)
    """
    fn = _ACTIVATIONS.get(act_type)
    if fn is None:
        raise error(ValueError, (
            f"mx.nd.Activation: act_type must be one of {sorted(_ACTIVATIONS)}, got {act_type!r}"
        ))
    return write_out(wrap(run(fn, tensor_of(data, "Activation"))), out)


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772, 1.0507009873554805


def _negative_part(x, fn):
    """x where x > 0, else fn(x); fn sees min(x, 0) so exp never overflows on the other side."""
    return ops.where(ops.gt(x, 0), x, fn(ops.minimum(x, 0)))


def LeakyReLU(data, gamma=None, act_type="leaky", slope=0.25, out=None, name=None):  # noqa: N802
    """MXNet's parametric ReLUs: 'leaky' (slope * x below 0), 'elu' (slope * (exp(x) - 1)),
    'selu', or 'prelu' with a learned slope `gamma` per channel (axis 1)."""
    x = tensor_of(data, "LeakyReLU")
    where = "mx.nd.LeakyReLU"
    if act_type == "prelu":
        if gamma is None:
            raise error(TypeError, f"{where}: act_type='prelu' needs gamma (one slope per channel)")
        g = tensor_of(gamma, "LeakyReLU")
        channels = x.shape[1] if x.ndim > 1 else 1
        if g.ndim != 1 or g.shape[0] not in (1, channels):
            raise error(ValueError, (
                f"{where}: gamma must have shape ({channels},) (one slope per channel of axis 1) "
                f"or (1,), got {g.shape}"
            ))
        shape = (1, g.shape[0]) + (1,) * (x.ndim - 2) if x.ndim > 1 else g.shape

        def prelu(x, g):
            return _negative_part(x, lambda neg: neg * ops.reshape(g, shape))

        return write_out(wrap(run(prelu, x, g)), out)
    fns = {
        "leaky": lambda neg: neg * slope,
        "elu": lambda neg: (ops.exp(neg) - 1) * slope,
        "selu": lambda neg: (ops.exp(neg) - 1) * _SELU_ALPHA,
    }
    if act_type not in fns:
        raise error(ValueError, (
            f"{where}: act_type must be one of {sorted([*fns, 'prelu'])}, got {act_type!r}"
        ))

    def compute(x):
        y = _negative_part(x, fns[act_type])
        return y * _SELU_SCALE if act_type == "selu" else y

    return write_out(wrap(run(compute, x)), out)


def smooth_l1(data, scalar=1.0, out=None):
    """0.5 * (scalar * x)**2 where |x| < 1 / scalar**2, else |x| - 0.5 / scalar**2."""
    x = tensor_of(data, "smooth_l1")
    sigma2 = float(scalar) ** 2

    def compute(x):
        small = ops.lt(ops.abs(x), 1.0 / sigma2)
        return ops.where(small, x * x * (0.5 * sigma2), ops.abs(x) - 0.5 / sigma2)

    return write_out(wrap(run(compute, x)), out)


def Embedding(data, weight, input_dim, output_dim, dtype="float32", sparse_grad=False,  # noqa: N802
              out=None, name=None):
    """Rows of weight (input_dim, output_dim) at the integer-valued indices in data: shape
    data.shape + (output_dim,); out-of-range indices are clipped, as in MXNet."""
    idx, w = tensor_of(data, "Embedding"), tensor_of(weight, "Embedding")
    if tuple(w.shape) != (int(input_dim), int(output_dim)):
        raise error(ValueError, (
            f"mx.nd.Embedding: weight must have shape (input_dim, output_dim) = ({input_dim}, "
            f"{output_dim}), got {w.shape}"
        ))
    rows = np.clip(NDArray(idx.detach()).asnumpy().astype(np.int64), 0, int(input_dim) - 1)
    index = kit.tensor(rows, device=w.device)
    return write_out(wrap(run(ops.getitem, w, index)), out)


def FullyConnected(data, weight, bias=None, num_hidden=None, no_bias=False, flatten=True,  # noqa: N802
                   out=None, name=None):
    """data @ weight.T + bias, weight of shape (num_hidden, input features); with flatten=True
    the data is flattened to (batch, features) first, else the last axis is contracted."""
    x, w = tensor_of(data, "FullyConnected"), tensor_of(weight, "FullyConnected")
    where = "mx.nd.FullyConnected"
    if num_hidden is None:
        raise error(TypeError, f"{where}: Required parameter num_hidden is not presented")
    if w.ndim != 2 or w.shape[0] != int(num_hidden):
        raise error(ValueError, (
            f"{where}: weight must have shape (num_hidden, input features) = ({num_hidden}, ...), "
            f"got {w.shape}"
        ))
    features = math.prod(x.shape[1:]) if flatten else x.shape[-1]
    if w.shape[1] != features:
        raise error(ValueError, (
            f"{where}: the data has {features} input features (shape {x.shape}, flatten="
            f"{flatten}) but weight has shape {w.shape}. Fix: weight of shape ({num_hidden}, "
            f"{features})"
        ))
    inputs = [x, w]
    if not no_bias:
        if bias is None:
            raise error(TypeError, (
                f"{where}: bias is required unless no_bias=True. Fix: pass bias=... of shape "
                f"({num_hidden},) or no_bias=True"
            ))
        b = tensor_of(bias, "FullyConnected")
        if tuple(b.shape) != (int(num_hidden),):
            raise error(ValueError, f"{where}: bias must have shape ({num_hidden},), got {b.shape}")
        inputs.append(b)

    def compute(x, w, b=None):
        if flatten:
            x = ops.reshape(x, (x.shape[0], features))
        y = ops.matmul(x, ops.transpose(w, 0, 1))
        return y if b is None else y + b

    return write_out(wrap(run(compute, *inputs)), out)


def Dropout(data, p=0.5, mode="training", axes=(), cudnn_off=False, out=None, name=None):  # noqa: N802
    """Zero each element with probability p and scale the rest by 1 / (1 - p), in training mode
    only (inside autograd.record(), or always with mode='always'); `axes` share one mask."""
    x = tensor_of(data, "Dropout")
    if mode not in ("training", "always"):
        raise ValueError(f"mx.nd.Dropout: mode must be 'training' or 'always', got {mode!r}")
    if not 0 <= p <= 1:
        raise ValueError(f"mx.nd.Dropout: p must be in [0, 1], got {p}")
    if (mode == "training" and not MODE.training) or p == 0:
        return wrap(run(lambda x: x * 1, x))  # a new array, as MXNet's identity in predict mode
    shared = {a % x.ndim for a in axes}
    mask_shape = tuple(1 if i in shared else n for i, n in enumerate(x.shape))
    keep = random.generator().uniform(size=mask_shape) >= p
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    mask = kit.tensor((keep * scale).astype(x.dtype), device=x.device)
    return write_out(wrap(run(ops.mul, x, mask)), out)


_NORMALIZATIONS = ("null", "batch", "valid")


class _SoftmaxOutput(Function):
    """softmax forward; MXNet's loss-layer backward (see the module docstring for why)."""

    frontend = "MXNet-style"

    @staticmethod
    def forward(ctx, x, label, options):
        probs = ops.softmax(x, options["axis"])
        ctx.save_for_backward(probs, label)
        ctx.options = options
        return probs

    @staticmethod
    def backward(ctx, g):
        probs, label = ctx.saved_tensors
        o = ctx.options
        with kit.no_grad():
            if o["probability_label"]:
                grad = (probs - label) * o["grad_scale"]
            else:
                grad = _class_gradient(probs, label, o)
            if o["out_grad"]:
                grad = grad * g
        if STATE.enabled:  # create_graph: the backward is not a chain rule, so refuse
            grad = refuse_second_derivative(grad, [t for t in (probs, g) if t.requires_grad], (
                "mx.nd.SoftmaxOutput backward: its gradient (softmax - onehot) is not a chain "
                "rule of the forward, so it cannot be differentiated again. Fix: use "
                "mx.nd.softmax_cross_entropy or log_softmax for higher-order gradients"
            ))
        return grad, None, None


def _class_gradient(probs, label, o):
    """(softmax - onehot(label)) scaled by grad_scale and MXNet's normalization."""
    axis, n_classes = o["axis"], probs.shape[o["axis"]]
    classes = NDArray(label.detach()).asnumpy().astype(np.int64)
    valid = classes != int(o["ignore_label"]) if o["use_ignore"] else np.ones_like(classes, bool)
    hot = np.expand_dims(np.arange(n_classes), tuple(range(1, classes.ndim + 1)))
    onehot = np.moveaxis(hot == classes[None], 0, axis)
    onehot = kit.tensor(onehot.astype(probs.dtype), device=probs.device)
    mask = kit.tensor(np.expand_dims(valid, axis).astype(probs.dtype), device=probs.device)
    grad = (probs - onehot) * mask
    if o["normalization"] == "valid":
        count = max(int(valid.sum()), 1)
    elif o["normalization"] == "batch":
        count = probs.shape[0]
    else:
        count = 1
    if o["multi_output"] and o["normalization"] != "valid":
        count *= math.prod(probs.shape[2:])  # MXNet also averages over the spatial positions
    return grad * (o["grad_scale"] / count)


def SoftmaxOutput(data, label, grad_scale=1.0, ignore_label=-1.0, multi_output=False,  # noqa: N802
                  use_ignore=False, preserve_shape=False, normalization="null", out_grad=False,
                  out=None, name=None):
    """softmax(data) whose backward is MXNet's loss gradient, (softmax - onehot(label)) *
    grad_scale / normalization, ignoring the gradient from above (unless out_grad=True).

    NOTE: so y.backward() of the output trains a classifier, whatever head gradient is used.
    Softmax runs over axis 1 with multi_output=True, over the last axis with preserve_shape=True,
    else over all axes but the first (the data is flattened to (batch, -1)). A label with the
    data's shape is a probability target (gradient softmax - label, not normalized).
    """
    x, y = tensor_of(data, "SoftmaxOutput"), tensor_of(label, "SoftmaxOutput")
    where = "mx.nd.SoftmaxOutput"
    if normalization not in _NORMALIZATIONS:
        raise ValueError(f"{where}: normalization must be one of {_NORMALIZATIONS}, got "
                         f"{normalization!r}")
    probability = tuple(y.shape) == tuple(x.shape)
    if multi_output and not probability:
        want, axis, flat = (x.shape[0],) + tuple(x.shape[2:]), 1, None
    elif preserve_shape and not probability:
        want, axis, flat = tuple(x.shape[:-1]), -1, None
    else:
        want, axis = (x.shape[0],), 1
        flat = (x.shape[0], math.prod(x.shape[1:]))
        if probability:
            want = tuple(x.shape)
    if tuple(y.shape) != want and not (multi_output and y.size == math.prod(want)):
        raise error(ValueError, (
            f"{where}: label has shape {y.shape}, expected {want} for data of shape {x.shape} "
            f"(multi_output={multi_output}, preserve_shape={preserve_shape}), or the data's shape "
            f"for probability labels"
        ))
    options = {
        "axis": axis, "grad_scale": float(grad_scale), "ignore_label": float(ignore_label),
        "use_ignore": bool(use_ignore), "multi_output": bool(multi_output),
        "normalization": normalization, "out_grad": bool(out_grad),
        "probability_label": probability,
    }

    def compute(x, y):
        shape = x.shape
        if flat is not None:
            x = ops.reshape(x, flat)
            if probability:
                y = ops.reshape(y, flat)
        elif multi_output:
            y = ops.reshape(y, want)
        return ops.reshape(_SoftmaxOutput.apply(x, y, options), shape)

    return write_out(wrap(run(compute, x, y)), out)
