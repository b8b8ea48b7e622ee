"""gluon.nn's basic layers: Sequential, HybridSequential, Dense, Activation, Dropout, BatchNorm,
Embedding, Flatten. Their maths is kit.nn.functional's (composites of kit primitives).

>>> import kit.mx as mx
>>> from kit.mx.gluon import nn
>>> layer = nn.Dense(2, activation="relu")
>>> layer
Dense(None -> 2, Activation(relu))
>>> layer.initialize(); layer(mx.nd.ones((3, 5))).shape, layer.weight.shape
((3, 2), (2, 5))
"""

from __future__ import annotations

import math

import numpy as np

from kit._creation import _Random
from kit.mx.base import MODE, run
from kit.mx.gluon.block import Block, HybridBlock
from kit.mx.ndarray import unwrap, wrap
from kit.nn import functional
from kit.ops import movement

__all__ = [
    "Activation", "BatchNorm", "Dense", "Dropout", "Embedding", "Flatten", "HybridLambda",
    "HybridSequential", "Lambda", "LayerNorm", "Sequential", "apply",
]


def apply(fn, *arrays, **kwargs):
    """`fn` on the kit Tensors behind NDArrays, recorded as MXNet records; an NDArray back."""
    return wrap(run(fn, *[unwrap(a) for a in arrays], **kwargs))


class _SequentialMixin:
    def add(self, *blocks):
        """Append blocks, to be run in order."""
        for block in blocks:
            self.register_child(block)

    def __getitem__(self, key):
        children = list(self._children.values())
        if isinstance(key, slice):
            net = type(self)(prefix=self._prefix)
            with net.name_scope():
                net.add(*children[key])
            return net
        return children[key]

    def __len__(self):
        return len(self._children)

    def forward(self, x, *args):
        for block in self._children.values():
            x = block(x, *args)
            args = ()
        return x


class Sequential(_SequentialMixin, Block):
    """Blocks run one after another: `net.add(block, ...)`, `net[0]`, `len(net)`."""


class HybridSequential(_SequentialMixin, HybridBlock):
    """Sequential for HybridBlocks; hybridize() compiles the whole sequence as one graph."""


_ACTIVATIONS = {
    "relu": functional.relu,
    "sigmoid": functional.sigmoid,
    "tanh": functional.tanh,
    "softrelu": functional.softplus,
    "softsign": lambda x: x / (1 + abs(x)),
}


class Activation(HybridBlock):
    """An elementwise activation: 'relu', 'sigmoid', 'tanh', 'softrelu' or 'softsign'."""

    def __init__(self, activation, **kwargs):
        if activation not in _ACTIVATIONS:
            raise ValueError(
                f"Activation: unknown act_type {activation!r}; MXNet's are "
                f"{', '.join(_ACTIVATIONS)}"
            )
        self._act_type = activation
        super().__init__(**kwargs)

    def _alias(self):
        return self._act_type

    def hybrid_forward(self, F, x):  # noqa: N803
        return apply(_ACTIVATIONS[self._act_type], x)

    def __repr__(self):
        return f"Activation({self._act_type})"


class Dense(HybridBlock):
    """A fully connected layer, `activation(dot(x, weight.T) + bias)`; weight (units,
    in_units); in_units=0 waits for the first input. With `flatten`, inputs are (N, -1)."""

    def __init__(self, units, activation=None, use_bias=True, flatten=True, dtype="float32",
                 weight_initializer=None, bias_initializer="zeros", in_units=0, **kwargs):
        super().__init__(**kwargs)
        self._units = units
        self._in_units = in_units
        self._flatten = flatten
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(units, in_units), dtype=dtype,
                                          init=weight_initializer, allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(units,), dtype=dtype,
                                        init=bias_initializer,
                                        allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") if activation else None

    def infer_shape(self, x, *args):
        in_units = math.prod(x.shape[1:]) if self._flatten else x.shape[-1]
        self.weight.shape = (self._units, in_units)

    def hybrid_forward(self, F, x, weight, bias=None):  # noqa: N803
        # NOTE: the activation runs in the same call (one NDArray round trip per layer); it is
        # still the child block `act`, as in MXNet.
        act = _ACTIVATIONS[self.act._act_type] if self.act is not None else None
        return apply(_dense, x, weight, bias, flatten=self._flatten, act=act)

    def __repr__(self):
        in_units = self.weight.shape[1] or None
        act = repr(self.act) if self.act is not None else "linear"
        return f"Dense({in_units} -> {self._units}, {act})"


def _dense(x, weight, bias, flatten, act):
    if flatten and x.ndim != 2:
        x = x.reshape((x.shape[0], -1))
    if x.ndim == 2:
        out = functional.linear(x, weight, bias)
    else:
        lead = x.shape[:-1]
        out = functional.linear(x.reshape((-1, x.shape[-1])), weight, bias)
        out = out.reshape(lead + (weight.shape[0],))
    return out if act is None else act(out)


class Lambda(Block):
    """A Block around a function of NDArrays, or the name of an mx.nd function:
    `nn.Lambda(lambda x: x * 2)`, `nn.Lambda('tanh')`."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        self._func = _function(function, "Lambda")

    def forward(self, *args):
        return self._func(*args)

    def __repr__(self):
        return f"{type(self).__name__}({getattr(self._func, '__name__', 'function')})"


class HybridLambda(HybridBlock):
    """A HybridBlock around `function(F, x, ...)`, or the name of an mx.nd function."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            named = _function(function, "HybridLambda")
            self._func = lambda F, *args: named(*args)  # noqa: N803
            self._func.__name__ = function
        else:
            self._func = _function(function, "HybridLambda")

    def hybrid_forward(self, F, x, *args):  # noqa: N803
        return self._func(F, x, *args)

    __repr__ = Lambda.__repr__


def _function(function, layer):
    if isinstance(function, str):
        from kit.mx import nd

        if not hasattr(nd, function):
            raise ValueError(f"{layer}: mx.nd has no function {function!r}")
        return getattr(nd, function)
    if not callable(function):
        raise ValueError(
            f"{layer}: expected a function or the name of an mx.nd function, got "
            f"{type(function).__name__}"
        )
    return function


class Flatten(HybridBlock):
    """(N, a, b, ...) -> (N, a*b*...)."""

    def hybrid_forward(self, F, x):  # noqa: N803
        return apply(lambda t: t.reshape((t.shape[0], -1)), x)

    def __repr__(self):
        return "Flatten"


class Dropout(HybridBlock):
    """Zero elements with probability `rate` while training (inside autograd.record()), scaling
    the rest by 1/(1-rate); `axes` share one mask along those axes."""

    def __init__(self, rate, axes=(), **kwargs):
        super().__init__(**kwargs)
        self._rate = rate
        self._axes = tuple(axes)

    def hybrid_forward(self, F, x):  # noqa: N803
        if not MODE.training or self._rate == 0:
            return x
        if not self._axes:
            return apply(functional.dropout, x, p=self._rate, training=True)
        shape = tuple(1 if i in self._axes else n for i, n in enumerate(x.shape))
        keep = _Random.generator.random(shape) >= self._rate
        return x * F.array(keep / (1.0 - self._rate), ctx=x.context, dtype=x.dtype)

    def __repr__(self):
        return f"Dropout(p = {self._rate}, axes={self._axes})"


class BatchNorm(HybridBlock):
    """Batch normalisation over `axis` (channels, 1 by default) with MXNet's defaults: momentum
    0.9 for the running statistics (PyTorch's 0.1), epsilon 1e-5, batch statistics while
    training (inside autograd.record()), the running ones otherwise.

    NOTE: MXNet updates the running statistics with the biased batch variance, in its backward
    pass; kit updates them in the forward pass of a training step, with MXNet's formula.
    """

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones",
                 in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._axis = axis
        self._momentum = momentum
        self._epsilon = epsilon
        self._use_global_stats = use_global_stats
        shape = (in_channels,)
        with self.name_scope():
            get = self.params.get
            self.gamma = get("gamma", grad_req="write" if scale else "null", shape=shape,
                             init=gamma_initializer, allow_deferred_init=True)
            self.beta = get("beta", grad_req="write" if center else "null", shape=shape,
                            init=beta_initializer, allow_deferred_init=True)
            self.running_mean = get("running_mean", grad_req="null", shape=shape,
                                    init=running_mean_initializer, allow_deferred_init=True,
                                    differentiable=False)
            self.running_var = get("running_var", grad_req="null", shape=shape,
                                   init=running_variance_initializer, allow_deferred_init=True,
                                   differentiable=False)

    def infer_shape(self, x, *args):
        channels = x.shape[self._axis]
        for p in (self.gamma, self.beta, self.running_mean, self.running_var):
            p.shape = (channels,)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):  # noqa: N803
        training = MODE.training and not self._use_global_stats
        return apply(_batch_norm, x, gamma, beta, running_mean, running_var, axis=self._axis,
                     training=training, momentum=self._momentum, eps=self._epsilon)

    def __repr__(self):
        channels = self.gamma.shape[0] or None
        return (f"BatchNorm(axis={self._axis}, eps={self._epsilon}, momentum={self._momentum}, "
                f"fix_gamma=False, use_global_stats={self._use_global_stats}, "
                f"in_channels={channels})")


def _batch_norm(x, gamma, beta, running_mean, running_var, axis, training, momentum, eps):
    axis = axis % x.ndim
    if axis != 1:
        x = movement.movedim(x, axis, 1)
    if training:
        out = functional.batch_norm(x, None, None, gamma, beta, True, 0.0, eps)
        from kit.grad_mode import no_grad

        with no_grad():
            xs = x.detach()
            axes = (0,) + tuple(range(2, xs.ndim))
            mu = xs.mean(axes)
            centred = xs - mu.reshape((1, -1) + (1,) * (xs.ndim - 2))
            var = (centred * centred).mean(axes)  # biased, as MXNet's
            running_mean.mul_(momentum).add_(mu * (1 - momentum))
            running_var.mul_(momentum).add_(var * (1 - momentum))
    else:
        out = functional.batch_norm(x, running_mean, running_var, gamma, beta, False, 0.0, eps)
    return movement.movedim(out, 1, axis) if axis != 1 else out


class LayerNorm(HybridBlock):
    """Normalise over `axis` (the last by default) of each sample, then scale by gamma and shift
    by beta (shape (in_channels,), 0 waits for the first input)."""

    def __init__(self, axis=-1, epsilon=1e-5, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._axis = axis
        self._epsilon = epsilon
        with self.name_scope():
            get = self.params.get
            self.gamma = get("gamma", grad_req="write" if scale else "null",
                             shape=(in_channels,), init=gamma_initializer,
                             allow_deferred_init=True)
            self.beta = get("beta", grad_req="write" if center else "null",
                            shape=(in_channels,), init=beta_initializer, allow_deferred_init=True)

    def infer_shape(self, x, *args):
        for p in (self.gamma, self.beta):
            p.shape = (x.shape[self._axis],)

    def hybrid_forward(self, F, x, gamma, beta):  # noqa: N803
        def compute(x, gamma, beta):
            last = self._axis % x.ndim == x.ndim - 1
            t = x if last else movement.movedim(x, self._axis, -1)
            out = functional.layer_norm(t, t.shape[-1], gamma, beta, self._epsilon)
            return out if last else movement.movedim(out, -1, self._axis)

        return apply(compute, x, gamma, beta)

    def __repr__(self):
        channels = self.gamma.shape[0] or None
        return f"LayerNorm(axis={self._axis}, eps={self._epsilon}, in_channels={channels})"


class Embedding(HybridBlock):
    """Rows of a (input_dim, output_dim) weight picked by integer-valued indices."""

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None,
                 sparse_grad=False, **kwargs):
        super().__init__(**kwargs)
        if sparse_grad:
            raise NotImplementedError(
                "Embedding(sparse_grad=True): kit.mx has no row_sparse gradients; leave "
                "sparse_grad=False (the dense gradient has the same values)"
            )
        self._input_dim = input_dim
        self._output_dim = output_dim
        self._dtype = np.dtype(dtype).name
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(input_dim, output_dim), dtype=dtype,
                                          init=weight_initializer)

    def hybrid_forward(self, F, x, weight):  # noqa: N803
        return apply(lambda i, w: functional.embedding(i.long(), w), x, weight)

    def __repr__(self):
        return f"Embedding({self._input_dim} -> {self._output_dim}, {self._dtype})"
