"""torch.nn.functional's signal ops on kit's primitives: average pooling, the 1-D convolution and
pooling (the 2-D primitives of kit/ops/conv.py on a height of 1), pad (constant, reflect,
replicate, circular) and interpolate (nearest, nearest-exact, linear, bilinear). All composites:
their gradients come from conv2d, max_pool2d, indexing and index_put.
"""

from __future__ import annotations

import math

import numpy as np

from kit import backend
from kit._creation import full, ones
from kit._tensor import Tensor
from kit.ops import conv
from kit.ops._record import ShapeError
from kit.ops._registry import composite
from kit.ops.movement import getitem, index_put, squeeze, unsqueeze


def _one_row(value, name, op, fill):
    """A 1-D argument (an int or a 1-tuple) as the 2-D pair (fill, value)."""
    if isinstance(value, (tuple, list)):
        if len(value) != 1:
            raise ValueError(f"kit.{op}: {name} must be an int or a 1-tuple, got {value!r}")
        value = value[0]
    return (fill, value)


def _batched(x, op, sample_dims):
    """x with a batch dim (an unbatched input, as PyTorch accepts it) and whether one was added."""
    if x.ndim == sample_dims:
        return unsqueeze(x, 0), True
    if x.ndim != sample_dims + 1:
        raise ShapeError(f"kit.{op}: expected a {sample_dims}-D or {sample_dims + 1}-D (batched) "
                         f"input, got shape {tuple(x.shape)}")
    return x, False


def _unbatched(y, added):
    return squeeze(y, 0) if added else y


@composite("avg_pool2d", public=False)
def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean over each window: a depthwise convolution with a constant weight."""
    if ceil_mode:
        raise ValueError("kit.avg_pool2d: ceil_mode=True is not supported. Fix: pad the input so "
                         "the windows fit (padding=...)")
    kernel = conv.pair_arg(kernel_size, "kernel_size", "avg_pool2d")
    stride = kernel if stride is None else stride
    channels = x.shape[1]
    options = {"dtype": x.dtype, "device": x.device}
    summed = conv.conv2d(x, ones(channels, 1, *kernel, **options), None, stride, padding, 1,
                         channels)
    if divisor_override is not None:
        return summed / divisor_override
    if count_include_pad:
        return summed / (kernel[0] * kernel[1])
    counts = conv.conv2d(ones(1, 1, *x.shape[2:], **options), ones(1, 1, *kernel, **options),
                         None, stride, padding)
    return summed / counts


@composite("avg_pool1d", torch="avg_pool1d")
def avg_pool1d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """The mean over each window of (N, C, L) or (C, L): avg_pool2d on a height of 1."""
    x, added = _batched(x, "avg_pool1d", 2)
    kernel = _one_row(kernel_size, "kernel_size", "avg_pool1d", 1)
    stride = kernel if stride is None else _one_row(stride, "stride", "avg_pool1d", 1)
    y = avg_pool2d(unsqueeze(x, 2), kernel, stride, _one_row(padding, "padding", "avg_pool1d", 0),
                   ceil_mode, count_include_pad)
    return _unbatched(squeeze(y, 2), added)


@composite("max_pool1d", torch="max_pool1d")
def max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """The maximum over each window of (N, C, L) or (C, L): max_pool2d on a height of 1 (its
    indices are then positions along L, as PyTorch's)."""
    x, added = _batched(x, "max_pool1d", 2)
    kernel = _one_row(kernel_size, "kernel_size", "max_pool1d", 1)
    stride = kernel if stride is None or stride == [] else _one_row(stride, "stride",
                                                                    "max_pool1d", 1)
    out = conv.max_pool2d(unsqueeze(x, 2), kernel, stride,
                          _one_row(padding, "padding", "max_pool1d", 0),
                          _one_row(dilation, "dilation", "max_pool1d", 1), ceil_mode,
                          return_indices)
    if return_indices:
        return tuple(_unbatched(squeeze(t, 2), added) for t in out)
    return _unbatched(squeeze(out, 2), added)


@composite("conv1d", torch="conv1d")
def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D cross-correlation of (N, C, L) or (C, L) with weight (O, C / groups, k): conv2d on a
    height of 1; padding may be 'valid' or 'same'."""
    x, added = _batched(x, "conv1d", 2)
    if weight.ndim != 3:
        raise ShapeError(f"kit.conv1d: expected a 3-D weight (O, C/groups, k), got shape "
                         f"{tuple(weight.shape)}. Fix: conv2d for a 4-D weight")
    dilation = _one_row(dilation, "dilation", "conv1d", 1)
    stride = _one_row(stride, "stride", "conv1d", 1)
    if isinstance(padding, str):  # 'valid' (0) or 'same' (a pair, its height 0)
        padding = conv.resolve_padding(padding, stride, dilation, (1, weight.shape[2]), "conv1d")
    else:
        padding = _one_row(padding, "padding", "conv1d", 0)
    y = conv.conv2d(unsqueeze(x, 2), unsqueeze(weight, 2), bias, stride, padding, dilation,
                    groups)
    return _unbatched(squeeze(y, 2), added)


# --- pad --------------------------------------------------------------------------------------
_MODES = ("constant", "reflect", "replicate", "circular")


def _sources(mode, n, left, right, op):
    """For a dim of size n padded by (left, right): the source position of each output one."""
    if mode == "reflect":
        if left >= n or right >= n:
            raise RuntimeError(f"kit.{op}: padding size should be less than the corresponding "
                               f"input dimension, but got padding ({left}, {right}) for a "
                               f"dimension of size {n} (reflect mode)")
        return np.concatenate([np.arange(left, 0, -1), np.arange(n),
                               np.arange(n - 2, n - 2 - right, -1)])
    if mode == "replicate":
        return np.clip(np.arange(-left, n + right), 0, n - 1)
    if left > n or right > n:
        raise RuntimeError(f"kit.{op}: padding ({left}, {right}) causes wrapping around more "
                           f"than once for a dimension of size {n} (circular mode)")
    return np.arange(-left, n + right) % n  # circular


@composite("pad", public=False)
def pad(x, pad, mode="constant", value=None):  # noqa: A002 - torch.nn.functional.pad's names
    """Pad the last len(pad) // 2 dims: pad = (left, right) for the last dim, then (top, bottom)
    for the one before, ...; constant mode fills with `value` (0) and crops where a pad is
    negative; reflect, replicate and circular pad 1 to 3 dims of a batched input."""
    if not isinstance(pad, (tuple, list)) or not all(isinstance(p, int) for p in pad):
        raise TypeError(f"kit.pad: pad must be a tuple of ints (left, right, top, bottom, ...), "
                        f"got {pad!r}")
    if len(pad) % 2:
        raise RuntimeError("kit.pad: padding length must be divisible by 2")
    dims = len(pad) // 2
    if dims > x.ndim:
        raise RuntimeError(f"kit.pad: padding length too large: {len(pad)} values pad {dims} "
                           f"dims of a {x.ndim}-D tensor")
    if mode not in _MODES:
        raise NotImplementedError(f"kit.pad: unrecognised padding mode {mode!r}. Fix: one of "
                                  f"{', '.join(_MODES)}")
    pairs = [(int(pad[2 * i]), int(pad[2 * i + 1]), x.ndim - 1 - i) for i in range(dims)]
    if mode == "constant":
        return _constant_pad(x, pairs, 0 if value is None else value)
    if x.ndim not in (dims + 1, dims + 2) or not 1 <= dims <= 3:
        raise NotImplementedError(f"kit.pad: padding size {len(pad)} is not supported for a "
                                  f"{x.ndim}-D input in {mode} mode (as PyTorch): pad 1, 2 or 3 "
                                  f"dims of an input with 1 or 2 more (batch, channels)")
    for left, right, d in pairs:
        positions = _sources(mode, x.shape[d], left, right, "pad")
        x = getitem(x, (slice(None),) * d + (backend.to_device(positions, x.device),))
    return x


def _constant_pad(x, pairs, value):
    crop = [slice(None)] * x.ndim
    for left, right, d in pairs:  # negative pads crop first
        crop[d] = slice(max(-left, 0), x.shape[d] - max(-right, 0))
    x = getitem(x, tuple(crop)) if any(s != slice(None) for s in crop) else x
    shape, region = list(x.shape), [slice(None)] * x.ndim
    for left, right, d in pairs:
        shape[d] += max(left, 0) + max(right, 0)
        region[d] = slice(max(left, 0), max(left, 0) + x.shape[d])
    canvas = full(tuple(shape), value, dtype=x.dtype, device=x.device)
    return index_put(canvas, tuple(region), x)


# --- interpolate ------------------------------------------------------------------------------
_LINEAR = {"linear": 1, "bilinear": 2}
_NEAREST = ("nearest", "nearest-exact")


def _sizes(x, size, scale_factor, recompute, op):
    spatial = x.ndim - 2
    if (size is None) == (scale_factor is None):
        raise ValueError(f"kit.{op}: {'only one' if size is not None else 'either'} of size or "
                         f"scale_factor should be defined")
    given = size if size is not None else scale_factor
    values = (given,) * spatial if isinstance(given, (int, float)) else tuple(given)
    if len(values) != spatial:
        raise ValueError(f"kit.{op}: the input has {spatial} spatial dims, so "
                         f"{'size' if size is not None else 'scale_factor'} needs {spatial} "
                         f"values, got {given!r}")
    if size is not None:
        return values, [n / m for n, m in zip(x.shape[2:], values, strict=True)]
    factors = values
    out = tuple(math.floor(n * f) for n, f in zip(x.shape[2:], factors, strict=True))
    if recompute:
        return out, [n / m for n, m in zip(x.shape[2:], out, strict=True)]
    return out, [1 / f for f in factors]


def _along(x, d, positions):
    return getitem(x, (slice(None),) * d + (backend.to_device(positions, x.device),))


@composite("interpolate", public=False)
def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resample the spatial dims of (N, C, ...) to `size` or by `scale_factor`: nearest (the
    source element at floor(i * scale)), nearest-exact (at floor((i + 0.5) * scale)), linear
    (3-D input) or bilinear (4-D), separable, as PyTorch computes them."""
    if mode not in _NEAREST + tuple(_LINEAR):
        raise NotImplementedError(f"kit.interpolate: mode {mode!r} is not implemented. Fix: "
                                  f"one of nearest, nearest-exact, linear, bilinear")
    if antialias:
        raise NotImplementedError("kit.interpolate: antialias=True is not implemented")
    if mode in _NEAREST and align_corners is not None:
        raise ValueError("kit.interpolate: align_corners option can only be set with the "
                         "interpolating modes: linear | bilinear | bicubic | trilinear")
    if mode in _LINEAR and x.ndim != _LINEAR[mode] + 2:
        raise NotImplementedError(f"kit.interpolate: got {x.ndim}-D input, but {mode} mode "
                                  f"needs {_LINEAR[mode] + 2}-D input")
    if x.ndim < 3:
        raise ValueError(f"kit.interpolate: expected an input (N, C, ...) with at least one "
                         f"spatial dim, got shape {tuple(x.shape)}")
    out, scales = _sizes(x, size, scale_factor, recompute_scale_factor, "interpolate")
    for d, (n, m, scale) in enumerate(zip(x.shape[2:], out, scales, strict=True), start=2):
        dst = np.arange(m, dtype=np.float64)
        if mode in _NEAREST:
            shift = 0.5 if mode == "nearest-exact" else 0.0
            x = _along(x, d, np.minimum(np.floor((dst + shift) * scale), n - 1).astype(np.int64))
            continue
        if align_corners:
            src = dst * ((n - 1) / (m - 1) if m > 1 else 0.0)
        else:
            src = np.maximum((dst + 0.5) * scale - 0.5, 0.0)
        low = np.minimum(np.floor(src), n - 1).astype(np.int64)
        high = np.minimum(low + 1, n - 1)
        shape = [1] * x.ndim
        shape[d] = m
        weight = Tensor(backend.to_device((src - low).reshape(shape).astype(x.dtype), x.device))
        x = _along(x, d, low) * (1 - weight) + _along(x, d, high) * weight
    return x
