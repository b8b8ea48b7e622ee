"""2-D convolution and max pooling by im2col: forward and gradient side by side.

`_im2col` copies the patches of the padded input into (N, C, kh, kw, Ho, Wo), one strided slice per
kernel offset; the convolution is then one matmul of the weight with them, batched over the batch
and the groups, and col2im adds them back the same way. Its two gradients are linear maps too, so
each is a primitive of its own (`conv2d_input_grad`, `conv2d_weight_grad`), and each one's gradient
is spelt with the other two: second derivatives work, as in PyTorch. Rules get arrays in a first-
order backward and Tensors with create_graph (see _record.py); `_dispatch` calls the array kernel
for the first and the recording primitive for the second.

Average pooling is a composite (a depthwise convolution with a constant weight) in
kit/nn/functional.py; it owns no gradient code.
"""

from __future__ import annotations

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.ops._record import ShapeError, check_same_device, data_of, record
from kit.ops._registry import primitive
from kit.ops.movement import index_put_add


def pair_arg(value, name, op):
    """An int or a pair of ints as a pair (PyTorch's `_pair`)."""
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) for v in pair):
        raise ValueError(f"kit.{op}: {name} must be an int or a pair of ints, got {value!r}")
    return pair


def resolve_padding(padding, stride, dilation, kernel, op):
    """A convolution's padding: as given, 0 for 'valid', or for 'same' the padding that keeps
    the input's size (stride 1, and an odd dilated kernel, padded evenly on both sides)."""
    if padding == "valid":
        return 0
    if padding == "same":
        if pair_arg(stride, "stride", op) != (1, 1):
            raise ShapeError(f"kit.{op}: padding='same' is not supported for strided "
                             f"convolutions. Fix: explicit padding")
        dilation = pair_arg(dilation, "dilation", op)
        total = [d * (k - 1) for d, k in zip(dilation, kernel, strict=True)]
        if any(t % 2 for t in total):
            raise ValueError(
                f"kit.{op}: padding='same' with an even effective kernel ({list(total)} padding "
                f"in all) would pad one side more, which kit does not do. Fix: use an odd "
                f"kernel size, or explicit padding"
            )
        return tuple(t // 2 for t in total)
    if isinstance(padding, str):
        raise ValueError(f"Invalid padding string {padding!r}, should be one of 'valid', 'same'")
    return padding


def out_size(size, kernel, stride, padding, dilation):
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def _pad(x, padding, fill=0.0):
    (ph, pw) = padding
    if not (ph or pw):
        return x
    return backend.get_array_module(x).pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)),
                                           constant_values=fill)


def _offsets(kernel, stride, dilation, out_hw):
    """For each kernel offset (i, j), the strided slices of the padded input it reads."""
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, stride, dilation, out_hw
    for i in range(kh):
        for j in range(kw):
            yield i, j, (slice(i * dh, i * dh + sh * (ho - 1) + 1, sh),
                         slice(j * dw, j * dw + sw * (wo - 1) + 1, sw))


def _im2col(x, kernel, stride, padding, dilation):
    """The patches of x as (N, C, kh, kw, Ho, Wo): one strided slice copy per kernel offset,
    each over whole rows (fast), rather than one gather of every window element."""
    xp = backend.get_array_module(x)
    n, c, h, w = x.shape
    ho = out_size(h, kernel[0], stride[0], padding[0], dilation[0])
    wo = out_size(w, kernel[1], stride[1], padding[1], dilation[1])
    x = _pad(x, padding)
    cols = xp.empty((n, c) + tuple(kernel) + (ho, wo), dtype=x.dtype)
    for i, j, window in _offsets(kernel, stride, dilation, (ho, wo)):
        cols[:, :, i, j] = x[(slice(None), slice(None)) + window]
    return cols


# NOTE: the products are matmuls batched over (N, groups), with the output channels first, so
# every case (groups=1 is a batch of one group; depthwise convolutions, as avg_pool2d uses)
# makes one BLAS call and the result is already in (N, O, Ho, Wo) order.
def _forward_kernel(x, w, conf):
    stride, padding, dilation, groups = conf
    cols = _im2col(x, w.shape[2:], stride, padding, dilation)
    n, c, kh, kw, ho, wo = cols.shape
    cols = cols.reshape(n, groups, -1, ho * wo)  # (N, G, Cg*kh*kw, Ho*Wo)
    out = w.reshape(groups, w.shape[0] // groups, -1) @ cols  # (N, G, Og, Ho*Wo)
    return out.reshape(n, w.shape[0], ho, wo)


def _weight_grad_kernel(x, g, w_shape, conf):
    stride, padding, dilation, groups = conf
    cols = _im2col(x, w_shape[2:], stride, padding, dilation)
    n, ho, wo = cols.shape[0], cols.shape[4], cols.shape[5]
    cols = cols.reshape(n, groups, -1, ho * wo)
    rows = g.reshape(n, groups, -1, ho * wo)  # (N, G, Og, Ho*Wo)
    return (rows @ cols.swapaxes(-1, -2)).sum(axis=0).reshape(w_shape)


def _input_grad_kernel(g, w, x_shape, conf):
    stride, padding, dilation, groups = conf
    xp = backend.get_array_module(g, w)
    n, c, h, wd = x_shape
    (kh, kw), (ho, wo) = w.shape[2:], g.shape[2:]
    rows = g.reshape(n, groups, -1, ho * wo)
    weight = w.reshape(groups, w.shape[0] // groups, -1).swapaxes(-1, -2)  # (G, K, Og)
    cols = (weight @ rows).reshape(n, c, kh, kw, ho, wo)
    gx = xp.zeros((n, c, h + 2 * padding[0], wd + 2 * padding[1]), dtype=cols.dtype)
    for i, j, window in _offsets((kh, kw), stride, dilation, (ho, wo)):
        gx[(slice(None), slice(None)) + window] += cols[:, :, i, j]  # col2im
    return gx[:, :, padding[0]:padding[0] + h, padding[1]:padding[1] + wd]


def _dispatch(kernel, recording, a, b, *args):
    """The array kernel during a first-order backward; the recording primitive otherwise."""
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return recording(a, b, *args)
    return kernel(a, b, *args)


def _conv(x, w, conf):
    return _dispatch(_forward_kernel, _conv_no_bias, x, w, conf)


def _input_grad(g, w, x_shape, conf):
    return _dispatch(_input_grad_kernel, conv2d_input_grad, g, w, x_shape, conf)


def _weight_grad(x, g, w_shape, conf):
    return _dispatch(_weight_grad_kernel, conv2d_weight_grad, x, g, w_shape, conf)


# --- the three primitives -------------------------------------------------------------------
def _conv2d_rule(node, g, x, w):
    need, conf = node.next_functions, node.params
    gx = _input_grad(g, w, x.shape, conf) if need[0] else None
    gw = _weight_grad(x, g, w.shape, conf) if need[1] else None
    gb = g.sum(axis=(0, 2, 3)) if need[2] else None
    return gx, gw, gb


@primitive("conv2d", grad=_conv2d_rule, saves="x, weight", batch="conv2d")
def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D cross-correlation of x (N, C, H, W) with weight (O, C / groups, kh, kw), plus bias."""
    conf = _check(x, weight, bias, stride, padding, dilation, groups)
    out = _forward_kernel(data_of(x), data_of(weight), conf)
    if bias is not None:
        out += data_of(bias).reshape(1, -1, 1, 1)
    return record("conv2d", _conv2d_rule, out, (x, weight, bias), (x, weight), conf)


def _input_grad_rule(node, u, g, w):
    need, conf = node.next_functions, node.params
    gg = _conv(u, w, conf) if need[0] else None
    gw = _weight_grad(u, g, w.shape, conf) if need[1] else None
    return gg, gw


@primitive("conv2d_input_grad", grad=_input_grad_rule, saves="g, weight",
           batch="conv2d_input_grad", public=False)
def conv2d_input_grad(g, weight, x_shape, conf):
    """The gradient of conv2d with respect to its input, as a (differentiable) primitive."""
    out = _input_grad_kernel(data_of(g), data_of(weight), tuple(x_shape), conf)
    return record("conv2d_input_grad", _input_grad_rule, out, (g, weight), (g, weight), conf)


def _weight_grad_rule(node, u, x, g):
    need, conf = node.next_functions, node.params
    gx = _input_grad(g, u, x.shape, conf) if need[0] else None
    gg = _conv(x, u, conf) if need[1] else None
    return gx, gg


@primitive("conv2d_weight_grad", grad=_weight_grad_rule, saves="x, g",
           batch="conv2d_weight_grad", public=False)
def conv2d_weight_grad(x, g, w_shape, conf):
    """The gradient of conv2d with respect to its weight, as a (differentiable) primitive."""
    out = _weight_grad_kernel(data_of(x), data_of(g), tuple(w_shape), conf)
    return record("conv2d_weight_grad", _weight_grad_rule, out, (x, g), (x, g), conf)


def _conv_no_bias(x, w, conf):
    stride, padding, dilation, groups = conf
    return conv2d(x, w, None, stride, padding, dilation, groups)


def _check(x, weight, bias, stride, padding, dilation, groups):
    for name, t in (("input", x), ("weight", weight), ("bias", bias)):
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"kit.conv2d: {name} must be a Tensor, got {type(t).__name__}")
    if x.ndim != 4 or weight.ndim != 4:
        raise ValueError(
            f"kit.conv2d: expected a 4-D input (N, C, H, W) and a 4-D weight (O, C/groups, kh, "
            f"kw), got shapes {tuple(x.shape)} and {tuple(weight.shape)}. Fix: add a batch "
            f"dimension with x.unsqueeze(0)"
        )
    out_channels, in_per_group = weight.shape[:2]
    if x.shape[1] != in_per_group * groups or out_channels % groups:
        raise ValueError(
            f"kit.conv2d: weight of shape {list(weight.shape)} with groups={groups} expects "
            f"{in_per_group * groups} input channels, got input of shape {list(x.shape)}"
        )
    if bias is not None and tuple(bias.shape) != (out_channels,):
        raise ValueError(f"kit.conv2d: bias must have shape ({out_channels},), got {bias.shape}")
    if x.dtype != weight.dtype:
        raise TypeError(
            f"kit.conv2d: input and weight must have the same dtype, got {x.dtype} and "
            f"{weight.dtype}. Fix: x.to(weight.dtype)"
        )
    check_same_device("conv2d", *(data_of(t) for t in (x, weight, bias) if t is not None))
    conf = (pair_arg(stride, "stride", "conv2d"), pair_arg(padding, "padding", "conv2d"),
            pair_arg(dilation, "dilation", "conv2d"), groups)
    for size, k, s, p, d in zip(x.shape[2:], weight.shape[2:], *conf[:3], strict=True):
        if out_size(size, k, s, p, d) < 1:
            raise ValueError(
                f"kit.conv2d: the input ({list(x.shape[2:])} after padding {conf[1]}) is "
                f"smaller than the dilated kernel ({list(weight.shape[2:])}, dilation "
                f"{conf[2]}). Fix: pad more or use a smaller kernel"
            )
    return conf


# --- max pooling ----------------------------------------------------------------------------
def _max_pool_rule(node, g, x, indices):
    # NOTE: x is kept, unused, as PyTorch's MaxPool2DWithIndicesBackward0 keeps it (with the
    # indices): an in-place change of the input before backward is an error in both.
    n, c, h, w = shape = node.params
    plane = data_of(indices)
    xp = backend.get_array_module(plane)
    flat = (plane + (xp.arange(n * c) * (h * w)).reshape(n, c, 1, 1)).reshape(-1)
    return (index_put_add(g.reshape((-1,)), flat, (n * c * h * w,)).reshape(shape),)


@primitive("max_pool2d", grad=_max_pool_rule, saves="x, indices", batch="max_pool2d")
def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """The maximum of each window; the gradient goes to the (first) maximal element."""
    if not isinstance(x, Tensor) or x.ndim != 4:
        raise ValueError(
            f"kit.max_pool2d: expected a 4-D tensor (N, C, H, W), got "
            f"{getattr(x, 'shape', type(x).__name__)}"
        )
    if ceil_mode:
        raise ValueError(
            "kit.max_pool2d: ceil_mode=True is not supported. Fix: pad the input so the "
            "windows fit (padding=...), which gives the same windows"
        )
    kernel = pair_arg(kernel_size, "kernel_size", "max_pool2d")
    stride = kernel if stride is None or stride == [] else pair_arg(stride, "stride", "max_pool2d")
    padding = pair_arg(padding, "padding", "max_pool2d")
    dilation = pair_arg(dilation, "dilation", "max_pool2d")
    if any(p > k // 2 for p, k in zip(padding, kernel, strict=True)):
        raise ValueError(
            f"kit.max_pool2d: pad should be at most half of effective kernel size, but got "
            f"pad={padding} and kernel_size={kernel}"
        )
    d = data_of(x)
    xp = backend.get_array_module(d)
    n, c, h, w = d.shape
    cols = _im2col(_pad(d, padding, -np.inf), kernel, stride, (0, 0), dilation)
    kh, kw, ho, wo = cols.shape[2:]
    cols = cols.reshape(n, c, kh * kw, ho, wo).transpose(0, 1, 3, 4, 2)
    arg = cols.argmax(axis=-1)
    out = xp.take_along_axis(cols, arg[..., None], axis=-1)[..., 0]
    rows = xp.arange(ho).reshape(-1, 1) * stride[0] + (arg // kw) * dilation[0] - padding[0]
    columns = xp.arange(wo) * stride[1] + (arg % kw) * dilation[1] - padding[1]
    # PyTorch's indices: flat positions in each H x W plane
    indices = Tensor(rows * w + columns)
    y = record("max_pool2d", _max_pool_rule, out, (x,), (x, indices), d.shape)
    return (y, indices) if return_indices else y
