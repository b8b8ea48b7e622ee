"""torch.nn.functional's thresholds: softshrink, hardshrink, threshold and prelu (a learned slope
below 0), and the in-place spellings relu_, elu_, selu_, celu_, leaky_relu_, hardtanh_ and
threshold_. Composites of kit's primitives; each gradient is PyTorch's at its boundaries too
(0 at the shrink thresholds and at the threshold itself). Compared with PyTorch in
tests/test_nn_more_api.py.

>>> import kit
>>> from kit.nn import functional as F
>>> F.softshrink(kit.tensor([-1.0, 0.25, 2.0]))
tensor([-0.5000,  0.0000,  1.5000])
"""

from __future__ import annotations

import numpy as np

from kit.nn.functional_more import _torch_name, celu, elu, hardtanh, selu
from kit.ops.composite import floating_input
from kit.ops.elementwise import abs as abs_
from kit.ops.elementwise import clamp, where
from kit.ops.extra import _number_of

__all__ = ["celu_", "elu_", "hardshrink", "hardtanh_", "prelu", "relu_", "selu_",
           "softshrink", "threshold", "threshold_"]


def softshrink(input, lambd=0.5):  # noqa: A002 - PyTorch's argument name
    """x - lambd above lambd, x + lambd below -lambd, 0 between (gradient 0 at +-lambd)."""
    floating_input("softshrink_check", "softshrink", input)
    if not 0 <= lambd <= np.finfo(input.dtype).max:
        raise RuntimeError(f"lambda must be in range [0, {np.finfo(input.dtype).max:.6g}] for "
                           f"input dtype {_torch_name(input.dtype)}, but found {lambd:g} "
                           f"(kit.softshrink, as in PyTorch). Fix: a lambd >= 0")
    # NOTE: between, min(|x|, lambd) * 0: +0.0, NaN for a NaN, and no inf * 0 where the branch
    # is discarded. PyTorch's sign of that zero depends on where the element lies: its
    # vectorised loop gives +0.0, its scalar tail (the last few elements) -0.0 for a negative x;
    # kit gives the vectorised loop's everywhere
    between = clamp(abs_(input), max=lambd) * 0
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, between))


def hardshrink(input, lambd=0.5):  # noqa: A002
    """x outside [-lambd, lambd], 0 inside (bounds included)."""
    floating_input("hardshrink_cpu", "hardshrink", input)
    return where((input >= -lambd) & (input <= lambd), 0.0, input)


def threshold(input, threshold, value, inplace=False):  # noqa: A002
    """`value` where x <= threshold, else x; integers keep their dtype, as PyTorch's."""
    if input.dtype.kind == "b":
        floating_input("threshold_cpu", "threshold", input)
    if input.dtype.kind in "iu":  # both numbers in the input's dtype, as PyTorch converts them
        for number in (threshold, value):  # (-2.0 for uint8: its overflow error)
            _number_of(input.dtype, number, "threshold")
    out = where(input <= threshold, value, input)
    if out.dtype != input.dtype:  # (an integer input with a float value: truncated, as PyTorch)
        out = out.to(input.dtype)
    return input.copy_(out) if inplace else out


_threshold = threshold  # (threshold_'s argument of that name hides the function)


def threshold_(input, threshold, value):  # noqa: A002
    """threshold, in place."""
    return _threshold(input, threshold, value, inplace=True)


def prelu(input, weight):  # noqa: A002
    """x where x > 0, else weight * x, one weight per channel (dim 1) or one for all."""
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.ndim} (kit.prelu, as in PyTorch). Fix: "
                           f"weight.flatten()")
    if input.dtype != weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got "
                           f"{_torch_name(input.dtype)} and {_torch_name(weight.dtype)} "
                           f"(kit.prelu, as in PyTorch). Fix: input.to(weight.dtype)")
    count = weight.numel()
    channels = input.shape[1] if input.ndim >= 2 else 1
    if count != 1 and count != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                           f"parameter numbers = {count} and channel size = {channels} "
                           f"(kit.prelu, as in PyTorch). Fix: PReLU(num_parameters=1) or "
                           f"PReLU(num_parameters={channels})")
    if count > 1:
        weight = weight.reshape((1, channels) + (1,) * (input.ndim - 2))
    elif input.ndim < weight.ndim:  # a 0-d input stays 0-d
        weight = weight.reshape(())
    return where(input > 0, input, weight * input)


def relu_(input):  # noqa: A002
    """relu, in place."""
    return input.relu_()


def elu_(input, alpha=1.0):  # noqa: A002
    """elu, in place."""
    return elu(input, alpha, inplace=True)


def selu_(input):  # noqa: A002
    """selu, in place."""
    return selu(input, inplace=True)


def celu_(input, alpha=1.0):  # noqa: A002
    """celu, in place."""
    return celu(input, alpha, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):  # noqa: A002
    """hardtanh, in place."""
    return hardtanh(input, min_val, max_val, inplace=True)

