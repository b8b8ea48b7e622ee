"""Conv1d, Conv2d, the max and average pools (1-D, 2-D) and the adaptive average pools,
initialised and printed as PyTorch's.

>>> import kit
>>> from kit import nn
>>> nn.Conv2d(3, 8, 3, padding=1)
Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
>>> nn.Conv2d(3, 8, 3, padding=1)(kit.ones(2, 3, 5, 5)).shape
(2, 8, 5, 5)
"""

from __future__ import annotations

import math

from kit._creation import empty
from kit.nn import functional as F  # noqa: N812 - the name PyTorch code uses
from kit.nn import init
from kit.nn.module import Module
from kit.nn.parameter import Parameter
from kit.ops.conv import pair_arg


def _ntuple(value, dims, name, op):
    """An int or a `dims`-tuple of ints as a tuple (PyTorch's `_single` and `_pair`)."""
    if dims == 2:
        return pair_arg(value, name, op)
    single = (value,) if isinstance(value, int) else tuple(value)
    if len(single) != 1 or not isinstance(single[0], int):
        raise ValueError(f"kit.{op}: {name} must be an int or a 1-tuple of ints, got {value!r}")
    return single


class _Conv(Module):
    """Conv1d's and Conv2d's parameters, initialisation and repr; `dims` spatial dims."""

    dims = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        op = type(self).__name__
        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise ValueError(
                f"{op}: padding_mode={padding_mode!r} is not supported by kit (only 'zeros')"
            )
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _ntuple(kernel_size, self.dims, "kernel_size", op)
        self.stride = _ntuple(stride, self.dims, "stride", op)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, self.dims,
                                                                        "padding", op)
        self.dilation = _ntuple(dilation, self.dims, "dilation", op)
        self.padding_mode = padding_mode
        options = {"device": device, "dtype": dtype}
        self.weight = Parameter(empty(out_channels, in_channels // groups, *self.kernel_size,
                                      **options))
        if bias:
            self.bias = Parameter(empty(out_channels, **options))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_channels // self.groups * math.prod(self.kernel_size)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0,) * self.dims:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self.dims:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text


class Conv1d(_Conv):
    """1-D convolution over (N, C, L) inputs, weight (out, in / groups, k)."""

    dims = 1

    def forward(self, input):  # noqa: A002 - PyTorch's argument name
        return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class Conv2d(_Conv):
    """2-D convolution over (N, C, H, W) inputs, weight (out, in / groups, kh, kw)."""

    def forward(self, input):  # noqa: A002 - PyTorch's argument name
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class MaxPool2d(Module):
    """The maximum over each window of (N, C, H, W) inputs."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input):  # noqa: A002
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    """The mean over each window of (N, C, H, W) inputs."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):  # noqa: A002
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool1d(MaxPool2d):
    """The maximum over each window of (N, C, L) inputs."""

    def forward(self, input):  # noqa: A002
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class AvgPool1d(Module):
    """The mean over each window of (N, C, L) inputs."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, 1, "kernel_size", "AvgPool1d")
        self.stride = self.kernel_size if stride is None else _ntuple(stride, 1, "stride",
                                                                      "AvgPool1d")
        self.padding = _ntuple(padding, 1, "padding", "AvgPool1d")
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):  # noqa: A002
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool1d(Module):
    """The mean over `output_size` windows spanning the last dim."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):  # noqa: A002
        return F.adaptive_avg_pool1d(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(AdaptiveAvgPool1d):
    """The mean over an (oh, ow) grid of windows spanning the last two dims."""

    def forward(self, input):  # noqa: A002
        return F.adaptive_avg_pool2d(input, self.output_size)
