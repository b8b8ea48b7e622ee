"""gluon.nn's convolution and pooling layers (NCHW): Conv2D, MaxPool2D, AvgPool2D,
GlobalAvgPool2D, on kit.nn.functional's conv2d and pooling (kit/ops/conv.py's primitives).

>>> import kit.mx as mx
>>> from kit.mx.gluon import nn
>>> conv = nn.Conv2D(4, kernel_size=3, padding=1)
>>> conv.initialize(); conv(mx.nd.ones((2, 3, 5, 5))).shape, conv.weight.shape
((2, 4, 5, 5), (4, 3, 3, 3))
"""

from __future__ import annotations

from kit.mx.gluon.block import HybridBlock
from kit.mx.gluon.nn.basic_layers import Activation, apply
from kit.nn import functional

__all__ = ["AvgPool2D", "Conv2D", "GlobalAvgPool2D", "MaxPool2D"]


def _pair(value):
    return (value, value) if isinstance(value, int) else tuple(value)


def _nchw(layout, layer):
    if layout != "NCHW":
        raise ValueError(
            f"{layer}: kit.mx supports layout='NCHW' only, got {layout!r}. Fix: transpose the "
            f"input to (N, C, H, W)"
        )


class Conv2D(HybridBlock):
    """2-D convolution: weight (channels, in_channels // groups, kh, kw); in_channels=0 waits
    for the first input."""

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0), dilation=(1, 1),
                 groups=1, layout="NCHW", activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        _nchw(layout, "Conv2D")
        super().__init__(**kwargs)
        self._channels = channels
        self._kernel = _pair(kernel_size)
        self._strides = _pair(strides)
        self._padding = _pair(padding)
        self._dilation = _pair(dilation)
        self._groups = groups
        with self.name_scope():
            self.weight = self.params.get(
                "weight", shape=(channels, in_channels // groups) + self._kernel,
                init=weight_initializer, allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(channels,), init=bias_initializer,
                                        allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") if activation else None

    def infer_shape(self, x, *args):
        self.weight.shape = (self._channels, x.shape[1] // self._groups) + self._kernel

    def hybrid_forward(self, F, x, weight, bias=None):  # noqa: N803
        out = apply(functional.conv2d, x, weight, bias, stride=self._strides,
                    padding=self._padding, dilation=self._dilation, groups=self._groups)
        return self.act(out) if self.act is not None else out

    def __repr__(self):
        in_channels = self.weight.shape[1] * self._groups or None
        text = (f"Conv2D({in_channels} -> {self._channels}, kernel_size={self._kernel}, "
                f"stride={self._strides}")
        if self._padding != (0, 0):
            text += f", padding={self._padding}"
        if self._dilation != (1, 1):
            text += f", dilation={self._dilation}"
        if self._groups != 1:
            text += f", groups={self._groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.act is not None:
            text += f", {self.act!r}"
        return text + ")"


class _Pool2D(HybridBlock):
    def __init__(self, pool_size, strides, padding, ceil_mode, layout, **kwargs):
        _nchw(layout, type(self).__name__)
        super().__init__(**kwargs)
        self._size = _pair(pool_size)
        self._strides = self._size if strides is None else _pair(strides)
        self._padding = _pair(padding)
        self._ceil_mode = ceil_mode

    def __repr__(self):
        kind = "max" if isinstance(self, MaxPool2D) else "avg"
        return (f"{type(self).__name__}(size={self._size}, stride={self._strides}, "
                f"padding={self._padding}, ceil_mode={self._ceil_mode}, global_pool=False, "
                f"pool_type={kind}, layout=NCHW)")


class MaxPool2D(_Pool2D):
    """The maximum over each window; strides default to pool_size."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout="NCHW",
                 ceil_mode=False, **kwargs):
        super().__init__(pool_size, strides, padding, ceil_mode, layout, **kwargs)

    def hybrid_forward(self, F, x):  # noqa: N803
        return apply(functional.max_pool2d, x, self._size, self._strides, self._padding,
                     ceil_mode=self._ceil_mode)


class AvgPool2D(_Pool2D):
    """The mean over each window (padding counted, as MXNet's default)."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout="NCHW",
                 ceil_mode=False, count_include_pad=True, **kwargs):
        super().__init__(pool_size, strides, padding, ceil_mode, layout, **kwargs)
        self._count_include_pad = count_include_pad

    def hybrid_forward(self, F, x):  # noqa: N803
        return apply(functional.avg_pool2d, x, self._size, self._strides, self._padding,
                     ceil_mode=self._ceil_mode, count_include_pad=self._count_include_pad)


class GlobalAvgPool2D(HybridBlock):
    """The mean over H and W: (N, C, H, W) -> (N, C, 1, 1)."""

    def __init__(self, layout="NCHW", **kwargs):
        _nchw(layout, "GlobalAvgPool2D")
        super().__init__(**kwargs)

    def hybrid_forward(self, F, x):  # noqa: N803
        return apply(lambda t: t.mean((2, 3), keepdims=True), x)

    def __repr__(self):
        return "GlobalAvgPool2D(size=(1, 1), stride=(1, 1), padding=(0, 0), global_pool=True)"
