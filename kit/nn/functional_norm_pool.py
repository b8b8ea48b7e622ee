"""torch.nn.functional's group_norm and rms_norm, and the adaptive average pools: composites of
kit's primitives, with PyTorch's errors. Compared with PyTorch in tests/test_nn_more_api.py.

>>> import kit
>>> from kit.nn import functional as F
>>> F.adaptive_avg_pool1d(kit.tensor([[[1.0, 2.0, 3.0, 4.0]]]), 2)
tensor([[[1.5000, 3.5000]]])
"""

from __future__ import annotations

import numpy as np

from kit._creation import tensor
from kit.nn.functional_more import _torch_name
from kit.ops.composite import floating_input
from kit.ops.elementwise import sqrt
from kit.ops.linalg import matmul
from kit.ops.reductions import mean

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "group_norm", "rms_norm"]


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """Normalise each sample over groups of its channels (dim 1), then scale and shift each
    channel."""
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim} (kit.group_norm, as in PyTorch). Fix: an input "
                           f"(N, C, *)")
    n, channels = input.shape[:2]
    if channels % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups} (kit.group_norm, as in PyTorch). Fix: "
                           f"num_groups must divide {channels}")
    if n * channels // num_groups * int(np.prod(input.shape[2:])) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{list(input.shape)} (kit.group_norm, as in PyTorch). Fix: more "
                         f"values per group")
    for name, param in (("weight", weight), ("bias", bias)):
        if param is not None and tuple(param.shape) != (channels,):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape "
                               f"{list(param.shape)} and input of shape {list(input.shape)} "
                               f"(kit.group_norm, as in PyTorch). Fix: one {name} per channel")
    floating_input("GroupNormKernelImpl", "group_norm", input)
    for param in (weight, bias):
        if param is not None and param.dtype != input.dtype:
            raise RuntimeError(f"mixed dtype (CPU): expect parameter to have scalar type of "
                               f"{_torch_name(input.dtype)} (kit.group_norm, as in PyTorch). "
                               f"Fix: module.to(input.dtype)")
    grouped = input.reshape(n, num_groups, -1)
    centred = grouped - mean(grouped, -1, keepdims=True)
    variance = mean(centred * centred, -1, keepdims=True)  # (biased, as PyTorch's)
    out = (centred / sqrt(variance + eps)).reshape(input.shape)
    per_channel = (1, channels) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(per_channel)
    return out if bias is None else out + bias.reshape(per_channel)


def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002
    """x / sqrt(mean(x^2) + eps) over the trailing `normalized_shape` dims, times `weight`;
    eps=None is the machine epsilon of the input's dtype, as PyTorch's."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = [] "
                           "(kit.rms_norm, as in PyTorch). Fix: the trailing dims to normalise "
                           "over, e.g. x.shape[-1:]")
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got "
                           f"weight of shape {list(weight.shape)} and normalized_shape = "
                           f"{list(shape)} (kit.rms_norm, as in PyTorch). Fix: a weight of "
                           f"shape normalized_shape")
    if input.ndim < len(shape) or tuple(input.shape[input.ndim - len(shape):]) != shape:
        # (PyTorch's message has no ", " after the star here, unlike layer_norm's)
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*{', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)} (kit.rms_norm, as in PyTorch). Fix: "
                           f"normalized_shape must be the input's trailing dimensions")
    floating_input("rms_norm", "rms_norm", input)
    if eps is None:
        eps = float(np.finfo(input.dtype).eps)
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    out = input / sqrt(mean(input * input, axes, keepdims=True) + eps)
    if weight is None:
        return out
    out = out * weight
    # in the input's dtype, as PyTorch's (which warns then that it cannot use its fused kernel)
    return out if out.dtype == input.dtype else out.to(input.dtype)


def _bins(size, out):
    """PyTorch's adaptive windows: bin i covers floor(i size / out) to ceil((i + 1) size / out)."""
    starts = np.arange(out) * size // out
    ends = -(-(np.arange(out) + 1) * size // out)
    return starts, ends


def _pool_along(x, axis, out):
    """The adaptive average along `axis` (-1 or -2) to `out` bins: an exact mean for one bin, else
    the windows' sums (a 0/1 matrix product) divided by their lengths, as PyTorch's."""
    size = x.shape[axis]
    if out is None:
        out = size
    if out == 1:
        return mean(x, axis, keepdims=True)
    starts, ends = _bins(size, out)
    columns = np.arange(size)
    member = (columns >= starts[:, None]) & (columns < ends[:, None])  # (out, size)
    options = {"dtype": x.dtype, "device": x.device}
    if axis == -1:
        return matmul(x, tensor(member.T, **options)) / tensor(ends - starts, **options)
    counts = tensor((ends - starts)[:, None], **options)
    return matmul(tensor(member, **options), x) / counts


def _output_sizes(output_size, count, op):
    sizes = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,)
    if len(sizes) == 1:
        sizes *= count
    if len(sizes) != count:
        raise RuntimeError(f"{op}() argument 'output_size' should contain {count} ints (got "
                           f"{len(sizes)}) (kit.{op}, as in PyTorch). Fix: one size per "
                           f"pooled dim")
    if any(s is not None and s < 0 for s in sizes):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 "
                           f"but received {list(sizes)} (kit.{op}, as in PyTorch)")
    return sizes


def _check_input(input, dims, op):  # noqa: A002
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"{op}(): Expected {dims + 1}D or {dims + 2}D tensor, but got "
                           f"{list(input.shape)} (kit.{op}, as in PyTorch). Fix: an input "
                           f"(N, C, ...) or (C, ...)")
    if 0 in input.shape[-dims:]:
        raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                           f"dimensions, but input has sizes {list(input.shape)} (kit.{op}, as in "
                           f"PyTorch)")


def adaptive_avg_pool1d(input, output_size):  # noqa: A002
    """The mean over `output_size` windows spanning the last dim of (N, C, L) or (C, L)."""
    _check_input(input, 1, "adaptive_avg_pool1d")
    (size,) = _output_sizes(output_size, 1, "adaptive_avg_pool1d")
    floating_input("adaptive_avg_pool2d", "adaptive_avg_pool1d", input)
    return _pool_along(input, -1, size)


def adaptive_avg_pool2d(input, output_size):  # noqa: A002
    """The mean over an (oh, ow) grid of windows spanning (N, C, H, W) or (C, H, W); a size of
    None keeps that dim."""
    _check_input(input, 2, "adaptive_avg_pool2d")
    height, width = _output_sizes(output_size, 2, "adaptive_avg_pool2d")
    if (height, width) == (1, 1):  # PyTorch's global average pool is a mean: exactly that
        if input.dtype.kind not in "fc":
            raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be "
                               f"either a floating point or complex dtype. Got: "
                               f"{_torch_name(input.dtype)} (kit.adaptive_avg_pool2d, as in "
                               f"PyTorch). Fix: input.float()")
        return mean(input, (-2, -1), keepdims=True)
    floating_input("adaptive_avg_pool2d", "adaptive_avg_pool2d", input)
    return _pool_along(_pool_along(input, -2, height), -1, width)
