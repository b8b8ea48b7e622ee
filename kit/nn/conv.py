"""Conv2d, MaxPool2d and AvgPool2d, initialised and printed as PyTorch's.

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


class Conv2d(Module):
    """2-D convolution over (N, C, H, W) inputs, weight (out, in / groups, kh, kw)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise ValueError(
                f"Conv2d: padding_mode={padding_mode!r} is not supported by kit (only 'zeros')"
            )
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = pair_arg(kernel_size, "kernel_size", "Conv2d")
        self.stride = pair_arg(stride, "stride", "Conv2d")
        self.padding = padding if isinstance(padding, str) else pair_arg(padding, "padding",
                                                                         "Conv2d")
        self.dilation = pair_arg(dilation, "dilation", "Conv2d")
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

    def forward(self, input):  # noqa: A002 - PyTorch's argument name
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)

    def extra_repr(self):
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0, 0):
            text += f", padding={self.padding}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text


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
