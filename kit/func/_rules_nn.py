"""Batching rules for the module layer's primitives: linear, conv2d (and its two gradients),
max_pool2d.

When only the data is batched, its batch dimensions fold into the per-sample batch dimension N
(one call on B*N samples). A weight per sample (an ensemble, or per-sample weight gradients
under vmap(grad)) becomes, for the convolutions, one grouped convolution: the samples' channels
are laid side by side, (N, B*C, H, W), and each sample's weight is a group of its own, as
functorch does it; for linear, one batched matmul.
"""

from __future__ import annotations

import math

from kit.func._batched import BatchedTensor, expand_levels
from kit.func._rules import batch_rule, union_levels, union_sizes
from kit.ops import movement
from kit.ops.linalg import matmul


def _batched(*args):
    return any(type(a) is BatchedTensor for a in args)


def _values(levels, sizes, *args):
    """The physical values of args (None stays None), each batched at exactly `levels`."""
    return [None if a is None else expand_levels(a, levels, sizes).value for a in args]


def _fold(value, k):
    """(B1, .., Bk, N, ...) -> (B1*..*Bk*N, ...): the batch folded into the first dim."""
    return movement.reshape(value, (-1,) + tuple(value.shape[k + 1:]))


def _unfold(value, batch):
    """(B*N, ...) -> (*batch, N, ...)."""
    return movement.reshape(value, tuple(batch) + (-1,) + tuple(value.shape[1:]))


def _side_by_side(value, k):
    """(B..., N, C, H, W) -> (N, B*C, H, W): every sample's channels next to each other."""
    batch, (n, c, *hw) = value.shape[:k], value.shape[k:]
    value = movement.reshape(value, (math.prod(batch), n, c, *hw))
    return movement.reshape(movement.transpose(value, 0, 1), (n, -1, *hw))


def _apart(value, batch):
    """(N, B*C, H, W) -> (*batch, N, C, H, W): the inverse of _side_by_side."""
    n, _, *hw = value.shape
    value = movement.reshape(value, (n, math.prod(batch), -1, *hw))
    return movement.reshape(movement.transpose(value, 0, 1), tuple(batch) + (n, -1, *hw))


def _grouped(conf, batch_size):
    stride, padding, dilation, groups = conf
    return stride, padding, dilation, groups * batch_size


# --- linear ---------------------------------------------------------------------------------
@batch_rule("linear")
def _linear(fn, x, weight, bias=None):
    if not _batched(weight, bias):  # the batch dims lead x's own: linear takes any leading dims
        return BatchedTensor(fn(x.value, weight, bias), x.levels)
    levels, sizes = union_levels(x, weight, bias), union_sizes(x, weight, bias)
    xv, w, b = _values(levels, sizes, x, weight, bias)
    k = len(levels)
    batch, sample = xv.shape[:k], xv.shape[k:]
    rows = movement.reshape(xv, (-1, math.prod(sample[:-1]), sample[-1]))  # (B, m, in)
    w = movement.reshape(w, (-1,) + tuple(w.shape[k:]))  # (B, out, in)
    out = matmul(rows, movement.transpose(w, 1, 2))  # (B, m, out)
    if b is not None:
        out = out + movement.reshape(b, (-1, 1, b.shape[-1]))
    return BatchedTensor(movement.reshape(out, tuple(batch) + tuple(sample[:-1]) + (-1,)), levels)


# --- convolution ----------------------------------------------------------------------------
@batch_rule("conv2d")
def _conv2d(fn, x, weight, bias, stride, padding, dilation, groups):
    if not _batched(weight, bias):
        k = len(x.levels)
        out = fn(_fold(x.value, k), weight, bias, stride, padding, dilation, groups)
        return BatchedTensor(_unfold(out, x.value.shape[:k]), x.levels)
    levels, sizes = union_levels(x, weight, bias), union_sizes(x, weight, bias)
    xv, w, b = _values(levels, sizes, x, weight, bias)
    k = len(levels)
    batch = xv.shape[:k]
    out = fn(_side_by_side(xv, k), _fold(w, k), None if b is None else _fold(b, k),
             stride, padding, dilation, groups * math.prod(batch))
    return BatchedTensor(_apart(out, batch), levels)


@batch_rule("conv2d_input_grad")
def _conv2d_input_grad(fn, g, weight, x_shape, conf):
    n, c, *hw = x_shape
    if not _batched(weight):
        k = len(g.levels)
        batch = g.value.shape[:k]
        out = fn(_fold(g.value, k), weight, (math.prod(batch) * n, c, *hw), conf)
        return BatchedTensor(_unfold(out, batch), g.levels)
    levels, sizes = union_levels(g, weight), union_sizes(g, weight)
    gv, w = _values(levels, sizes, g, weight)
    k = len(levels)
    batch, size = gv.shape[:k], math.prod(gv.shape[:k])
    out = fn(_side_by_side(gv, k), _fold(w, k), (n, size * c, *hw), _grouped(conf, size))
    return BatchedTensor(_apart(out, batch), levels)


@batch_rule("conv2d_weight_grad")
def _conv2d_weight_grad(fn, x, g, w_shape, conf):
    # NOTE: a weight gradient per sample whichever input is batched: always the grouped form.
    levels, sizes = union_levels(x, g), union_sizes(x, g)
    xv, gv = _values(levels, sizes, x, g)
    k = len(levels)
    batch, size = xv.shape[:k], math.prod(xv.shape[:k])
    out = fn(_side_by_side(xv, k), _side_by_side(gv, k), (size * w_shape[0], *w_shape[1:]),
             _grouped(conf, size))
    return BatchedTensor(movement.reshape(out, tuple(batch) + tuple(w_shape)), levels)


# --- pooling --------------------------------------------------------------------------------
@batch_rule("max_pool2d")
def _max_pool2d(fn, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    k, batch = len(x.levels), x.value.shape[:len(x.levels)]
    out = fn(_fold(x.value, k), kernel_size, stride, padding, dilation, ceil_mode, return_indices)
    if return_indices:  # the indices are positions in each H x W plane: unchanged by folding
        return tuple(BatchedTensor(_unfold(o, batch), x.levels) for o in out)
    return BatchedTensor(_unfold(out, batch), x.levels)
