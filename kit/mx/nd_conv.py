"""mx.nd.Convolution and mx.nd.Pooling (2-D, NCHW) as composites of kit ops.

Each window is gathered with one advanced-indexing getitem (im2col: its gradient scatters back
with an add), padding is a cat with constants, and the reduction is a matmul (Convolution) or a
max / mean / sum (Pooling); so neither op owns gradient code.
NOTE: kit/ops is getting im2col primitives (kit/ops/conv.py); once they land these two should call
them for speed. The semantics here (MXNet's defaults, output sizes) stay.
"""

from __future__ import annotations

import math

import numpy as np

import kit
from kit import ops
from kit.mx._ndutil import tensor_of, write_out
from kit.mx.base import error, run
from kit.mx.ndarray import wrap

__all__ = ["Convolution", "Pooling"]


def _pair(value, name, op, default):
    """A 2-tuple of ints from MXNet's tuple parameters (an empty tuple means the default)."""
    value = default if value is None or value == () else value
    value = (value, value) if isinstance(value, int) else tuple(int(v) for v in value)
    if len(value) != 2:
        raise ValueError(
            f"mx.nd.{op}: kit.mx supports 2-D {op} on NCHW data; {name} must have 2 entries, got "
            f"{value}"
        )
    return value


def _out_size(n, k, s, p, d, full=False):
    span = d * (k - 1) + 1
    steps = (n + 2 * p - span) / s
    return (math.ceil(steps) if full else math.floor(steps)) + 1


def _pad(x, pad, value):
    """x with `pad` rows / columns of `value` on each side of its last two axes."""
    for axis, p in ((2, pad[0]), (3, pad[1])):
        if p:
            shape = list(x.shape)
            shape[axis] = p
            edge = kit.full(tuple(shape), value, dtype=x.dtype, device=x.device)
            x = ops.cat([edge, x, edge], axis)
    return x


def _windows(x, kernel, stride, dilate, out_hw):
    """Every window of x (N, C, H, W): shape (N, C, OH, OW, kh, kw), one gathering getitem."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, stride, dilate, out_hw
    rows = (np.arange(oh) * sh)[:, None, None, None] + (np.arange(kh) * dh)[None, None, :, None]
    cols = (np.arange(ow) * sw)[None, :, None, None] + (np.arange(kw) * dw)[None, None, None, :]
    index = (slice(None), slice(None), kit.tensor(rows, device=x.device),
             kit.tensor(cols, device=x.device))
    return ops.getitem(x, index)


def Convolution(data, weight, bias=None, kernel=None, stride=(), dilate=(), pad=(),  # noqa: N802
                num_filter=None, num_group=1, no_bias=False, layout=None, out=None, name=None,
                **cudnn_options):
    """2-D convolution (cross-correlation) of data (N, C, H, W) with weight
    (num_filter, C / num_group, kh, kw), plus bias (num_filter,) unless no_bias=True."""
    where = "mx.nd.Convolution"
    unknown = sorted(set(cudnn_options) - {"cudnn_tune", "cudnn_off", "workspace"})
    if unknown:
        raise TypeError(f"{where}: unexpected keyword arguments {unknown}")
    if layout not in (None, "NCHW"):
        raise ValueError(f"{where}: kit.mx supports layout='NCHW' only, got {layout!r}")
    x, w = tensor_of(data, "Convolution"), tensor_of(weight, "Convolution")
    if kernel is None or num_filter is None:
        raise error(TypeError, f"{where}: Required parameters kernel and num_filter (both needed)")
    kernel = _pair(kernel, "kernel", "Convolution", None)
    stride = _pair(stride, "stride", "Convolution", 1)
    dilate = _pair(dilate, "dilate", "Convolution", 1)
    pad = _pair(pad, "pad", "Convolution", 0)
    groups, filters = int(num_group), int(num_filter)
    if x.ndim != 4 or x.shape[1] % groups or filters % groups:
        raise error(ValueError, (
            f"{where}: data must be (N, C, H, W) with C divisible by num_group={groups} and "
            f"num_filter={filters} divisible by it, got data of shape {x.shape}"
        ))
    want = (filters, x.shape[1] // groups) + kernel
    if tuple(w.shape) != want:
        raise error(ValueError, (
            f"{where}: weight has shape {w.shape}, expected (num_filter, C / num_group, kh, kw) "
            f"= {want}"
        ))
    inputs = [x, w]
    if not no_bias:
        if bias is None:
            raise error(TypeError, f"{where}: bias is required unless no_bias=True")
        b = tensor_of(bias, "Convolution")
        if tuple(b.shape) != (filters,):
            raise error(ValueError, f"{where}: bias must have shape ({filters},), got {b.shape}")
        inputs.append(b)
    out_hw = tuple(_out_size(n, k, s, p, d) for n, k, s, p, d in
                   zip(x.shape[2:], kernel, stride, pad, dilate, strict=True))
    if min(out_hw) < 1:
        raise error(ValueError, (
            f"{where}: the kernel {kernel} (dilate {dilate}) does not fit the padded input "
            f"{tuple(n + 2 * p for n, p in zip(x.shape[2:], pad, strict=True))}"
        ))

    def compute(x, w, b=None):
        n, c = x.shape[0], x.shape[1] // groups
        patches = _windows(_pad(x, pad, 0.0), kernel, stride, dilate, out_hw)
        per_group = filters // groups
        results = []
        for g in range(groups):
            cols = patches[:, g * c:(g + 1) * c]  # (N, c, OH, OW, kh, kw)
            cols = ops.reshape(ops.permute(cols, (0, 2, 3, 1, 4, 5)), (-1, c * kernel[0]
                                                                        * kernel[1]))
            wg = ops.reshape(w[g * per_group:(g + 1) * per_group], (per_group, -1))
            results.append(ops.matmul(cols, ops.transpose(wg, 0, 1)))
        y = ops.cat(results, 1) if groups > 1 else results[0]
        if b is not None:
            y = y + b
        return ops.permute(ops.reshape(y, (n,) + out_hw + (filters,)), (0, 3, 1, 2))

    return write_out(wrap(run(compute, *inputs)), out)


_POOLS = ("max", "avg", "sum")


def Pooling(data, kernel=(), pool_type="max", global_pool=False, stride=(), pad=(),  # noqa: N802
            pooling_convention="valid", count_include_pad=True, layout=None, out=None,
            name=None, cudnn_off=False):
    """2-D max / avg / sum pooling of data (N, C, H, W); global_pool=True pools each whole
    feature map to (N, C, 1, 1). MXNet's defaults: stride 1, no padding, 'valid' output size."""
    where = "mx.nd.Pooling"
    x = tensor_of(data, "Pooling")
    if pool_type not in _POOLS:
        raise ValueError(f"{where}: pool_type must be one of {_POOLS}, got {pool_type!r}")
    if pooling_convention not in ("valid", "full"):
        raise ValueError(f"{where}: pooling_convention must be 'valid' or 'full', got "
                         f"{pooling_convention!r}")
    if layout not in (None, "NCHW") or x.ndim != 4:
        raise error(ValueError, (
            f"{where}: kit.mx supports 2-D pooling of NCHW data, got shape {x.shape}"
        ))
    if global_pool:
        def pool_all(x):
            if pool_type == "max":
                return ops.max(ops.max(x, 3, keepdims=True).values, 2, keepdims=True).values
            return (ops.mean if pool_type == "avg" else ops.sum)(x, (2, 3), True)

        return write_out(wrap(run(pool_all, x)), out)
    kernel = _pair(kernel, "kernel", "Pooling", None)
    stride = _pair(stride, "stride", "Pooling", 1)
    pad = _pair(pad, "pad", "Pooling", 0)
    full = pooling_convention == "full"
    out_hw = tuple(_out_size(n, k, s, p, 1, full) for n, k, s, p in
                   zip(x.shape[2:], kernel, stride, pad, strict=True))
    if min(out_hw) < 1:
        raise error(ValueError, (
            f"{where}: the kernel {kernel} does not fit the padded input of shape {x.shape}"
        ))
    # 'full' may read past the padded edge: pad the far side enough for the last window
    extra = tuple(max(0, (o - 1) * s + k - (n + 2 * p)) for o, s, k, n, p in
                  zip(out_hw, stride, kernel, x.shape[2:], pad, strict=True))

    def padded(t, value, beyond):
        t = _pad(t, pad, value)
        for axis, e in ((2, extra[0]), (3, extra[1])):
            if e:
                shape = list(t.shape)
                shape[axis] = e
                t = ops.cat([t, kit.full(tuple(shape), beyond, dtype=x.dtype, device=x.device)],
                            axis)
        return t

    def pooled(t, value, beyond, fn):
        windows = _windows(padded(t, value, beyond), kernel, stride, (1, 1), out_hw)
        return fn(ops.reshape(windows, windows.shape[:4] + (-1,)), 4)

    def compute(x):
        if pool_type == "max":
            return pooled(x, -math.inf, -math.inf, ops.max).values
        total = pooled(x, 0.0, 0.0, ops.sum)
        if pool_type == "sum":
            return total
        # NOTE: as MXNet, an average divides by the window's cells inside the padded input
        # (count_include_pad=True) or inside the input itself (False), never past the edge
        ones = kit.ones((1, 1) + tuple(x.shape[2:]), dtype=x.dtype, device=x.device)
        return total / pooled(ones, 1.0 if count_include_pad else 0.0, 0.0, ops.sum)

    return write_out(wrap(run(compute, x)), out)
