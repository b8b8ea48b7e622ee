"""The functions behind the layers: composites of kit primitives, so they own no gradient code.

>>> import kit
>>> from kit.nn import functional as F
>>> F.linear(kit.ones(1, 2), kit.ones(3, 2), kit.zeros(3))
tensor([[2., 2., 2.]])
"""

from __future__ import annotations

import math
import warnings

from kit._creation import arange, rand
from kit.nn import functional_more as _more
from kit.ops import composite, conv
from kit.ops.composite import _TORCH_DTYPE_NAMES, _reduce, floating_input, mse_loss, relu
from kit.ops.composite import cross_entropy as fused_cross_entropy
from kit.ops.elementwise import clamp, log, sigmoid, sqrt, tanh, where
from kit.ops.movement import getitem
from kit.ops.nn import erf
from kit.ops.nn import linear as fused_linear
from kit.ops.reductions import mean
from kit.ops.reductions import sum as sum_
from kit.ops.signal import avg_pool1d, avg_pool2d, conv1d, interpolate, max_pool1d, pad
from kit.ops.vectors import cosine_similarity, normalize, one_hot, pairwise_distance

__all__ = [
    "avg_pool2d", "batch_norm", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "conv2d", "cross_entropy", "dropout", "embedding", "gelu", "instance_norm", "layer_norm",
    "leaky_relu",
    "linear", "log_softmax", "max_pool2d", "mse_loss", "nll_loss", "relu", "sigmoid", "silu",
    "softmax", "softplus", "tanh",
]
__all__ += ["avg_pool1d", "conv1d", "cosine_similarity", "interpolate", "max_pool1d",
            "normalize", "one_hot", "pad", "pairwise_distance"]  # issue 12
__all__ += _more.__all__  # the ELU family, hard activations, L1/Huber/KL losses
from kit.nn import attention as _attention  # noqa: E402, I001 - the families re-exported below
from kit.nn import functional_losses as _losses  # noqa: E402
from kit.nn import functional_norm_pool as _norm_pool  # noqa: E402
from kit.nn import functional_thresholds as _thresholds  # noqa: E402
from kit.nn.attention import *  # noqa: E402, F403 - scaled_dot_product_attention
from kit.nn.functional_losses import *  # noqa: E402, F403 - margin and likelihood losses
from kit.nn.functional_more import *  # noqa: E402, F403 - re-exported, as listed in __all__
from kit.nn.functional_norm_pool import *  # noqa: E402, F403 - group/rms norm, adaptive pools
from kit.nn.functional_thresholds import *  # noqa: E402, F403 - shrinks, prelu, in place

__all__ += ["leaky_relu_", *_attention.__all__, *_losses.__all__, *_norm_pool.__all__,
            *_thresholds.__all__]


def linear(input, weight, bias=None):  # noqa: A002 - PyTorch's keyword
    """input @ weight.T + bias, with weight of shape (out_features, in_features): one fused node
    (kit/ops/nn.py says why)."""
    return fused_linear(input, weight, bias)


def _implicit_dim(name, ndim):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  f"to include dim=X as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1  # PyTorch's old rule, kept for this case


def softmax(input, dim=None, dtype=None):  # noqa: A002
    """softmax along `dim`; without a dim, PyTorch's deprecated implicit choice (dim 0 for 0-d,
    1-d and 3-d inputs, else 1), with its warning."""
    x = input if dtype is None else input.to(dtype)
    return composite.softmax(x, _implicit_dim("softmax", x.ndim) if dim is None else dim)


def log_softmax(input, dim=None, dtype=None):  # noqa: A002
    """log_softmax along `dim` (without one, as softmax, with PyTorch's warning)."""
    x = input if dtype is None else input.to(dtype)
    return composite.log_softmax(x, _implicit_dim("log_softmax", x.ndim) if dim is None else dim)


def gelu(input, approximate="none"):  # noqa: A002
    """x * Phi(x), Phi the standard normal CDF (exact), or its tanh approximation."""
    floating_input("GeluKernelImpl", "gelu", input)
    if approximate == "none":
        return input * 0.5 * (1 + erf(input * (1 / math.sqrt(2.0))))
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (input + 0.044715 * input * input * input)
        return input * 0.5 * (1 + tanh(inner))
    raise ValueError(f"kit.gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002
    """x where x > 0, else negative_slope * x."""
    floating_input("leaky_relu_cpu", "leaky_relu", input)
    x = _more._operand(input, inplace)
    out = where(x > 0, x, x * negative_slope)
    return input.copy_(out) if inplace else out


def leaky_relu_(input, negative_slope=0.01):  # noqa: A002
    """leaky_relu, in place."""
    return leaky_relu(input, negative_slope, inplace=True)


def silu(input, inplace=False):  # noqa: A002
    """x * sigmoid(x) (also called swish)."""
    floating_input("silu_cpu", "silu", input)
    x = _more._operand(input, inplace)
    out = x * sigmoid(x)
    return input.copy_(out) if inplace else out


def softplus(input, beta=1.0, threshold=20.0):  # noqa: A002
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (as PyTorch)."""
    floating_input("softplus_cpu", "softplus", input)
    return _more._softplus(input, beta, threshold)


def dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero each element with probability p and scale the rest by 1/(1-p) while training."""
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    if p == 1:
        out = input * 0
    else:
        keep = rand(*input.shape, device=input.device) >= p
        out = input * (keep.to(input.dtype) * (1.0 / (1.0 - p)))
    if inplace:
        return input.copy_(out)
    return out


def _normalize(x, axes, eps):
    mu = mean(x, axes, keepdims=True)
    centred = x - mu
    var = mean(centred * centred, axes, keepdims=True)
    return centred / sqrt(var + eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """Normalise over the trailing `normalized_shape` dims, then scale and shift."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape:
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
            "one element, but got normalized_shape = [] (kit.layer_norm, as in PyTorch). Fix: "
            "pass the trailing dims to normalise over, e.g. x.shape[-1:]"
        )
    if input.ndim < len(shape) or tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(map(str, shape))}], but got input of size{list(input.shape)} "
            f"(kit.layer_norm, as in PyTorch). Fix: normalized_shape must be the input's "
            f"trailing dimensions"
        )
    floating_input("LayerNormKernelImpl", "layer_norm", input)
    out = _normalize(input, tuple(range(input.ndim - len(shape), input.ndim)), eps)
    if weight is not None:
        out = out * weight
    return out if bias is None else out + bias


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,  # noqa: A002
               momentum=0.1, eps=1e-5):
    """Normalise each channel (dim 1) with the batch's statistics while training (updating the
    running ones in place), else with the running statistics."""
    axes = (0,) + tuple(range(2, input.ndim))
    shape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    if training:
        count = input.numel() // input.shape[1]
        if count <= 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size "
                f"{list(input.shape)}. Fix: use a larger batch, or call model.eval()"
            )
        out = _normalize(input, axes, eps)
        if running_mean is not None:
            from kit.grad_mode import no_grad

            with no_grad():
                x = input.detach()
                mu = mean(x, axes)
                centred = x - mu.reshape(shape)
                unbiased = sum_(centred * centred, axes) / (count - 1)
                running_mean.mul_(1 - momentum).add_(mu * momentum)
                running_var.mul_(1 - momentum).add_(unbiased * momentum)
    else:
        out = (input - running_mean.reshape(shape)) / sqrt(running_var.reshape(shape) + eps)
    if weight is not None:
        out = out * weight.reshape(shape)
    return out if bias is None else out + bias.reshape(shape)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,  # noqa: A002
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalise each sample's channels over their own spatial dims: batch_norm of the input
    folded to (1, N * C, ...), as PyTorch computes it; the running statistics (each channel's)
    move towards the mean over the batch of its instances' statistics."""
    n, channels = input.shape[:2]
    if use_input_stats and math.prod(input.shape[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"torch.Size({list(input.shape)}) (kit.instance_norm, as in PyTorch). "
                         f"Fix: a longer input, or use_input_stats=False")
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false (kit.instance_norm, as in PyTorch)")

    def per_instance(t):  # (C,) -> (N * C,), a copy
        return None if t is None else t.unsqueeze(0).expand(n, channels).reshape(-1).clone()

    folded_mean, folded_var = per_instance(running_mean), per_instance(running_var)
    out = batch_norm(input.reshape(1, n * channels, *input.shape[2:]), folded_mean, folded_var,
                     per_instance(weight), per_instance(bias), use_input_stats, momentum, eps)
    if use_input_stats and running_mean is not None:
        from kit.grad_mode import no_grad

        with no_grad():
            running_mean.copy_(mean(folded_mean.reshape(n, channels), 0))
            running_var.copy_(mean(folded_var.reshape(n, channels), 0))
    return out.reshape(input.shape)


def embedding(input, weight, padding_idx=None):  # noqa: A002
    """Rows of `weight` picked by the integer tensor `input`; the padding row gets no gradient."""
    if input.dtype.kind not in "iu":
        raise TypeError(
            f"kit.embedding: indices must be an integer tensor, got {input.dtype}. Fix: "
            f"input.long()"
        )
    out = getitem(weight, input)
    if padding_idx is None:
        return out
    pad = (input == padding_idx).unsqueeze(-1)
    return where(pad, getitem(weight.detach(), input), out)


def binary_cross_entropy(input, target, weight=None, reduction="mean"):  # noqa: A002
    """-(y log p + (1 - y) log(1 - p)), each log clamped at -100 as PyTorch does."""
    _same_shape("binary_cross_entropy", input, target)
    loss = -(target * clamp(log(input), min=-100) + (1 - target) * clamp(log(1 - input), min=-100))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy")


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean",  # noqa: A002
                                     pos_weight=None):
    """Binary cross-entropy of sigmoid(input), computed stably from the logits."""
    _same_shape("binary_cross_entropy_with_logits", input, target)
    floating_input("log_sigmoid_cpu", "binary_cross_entropy_with_logits", input)
    if target.dtype.kind == "b":  # PyTorch computes 1 - target first
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported (kit.binary_cross_entropy_with_logits, as in PyTorch). "
                           "Fix: target.float()")
    if target.dtype.kind in "iu":
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_TORCH_DTYPE_NAMES.get(str(target.dtype))} "
                           f"(kit.binary_cross_entropy_with_logits, as in PyTorch). Fix: "
                           f"target.float()")
    # -log(sigmoid(x)) is softplus(-x), computed without overflow; its gradient at x = 0 is
    # -1/2 (the |x| and max(-x, 0) spelling's kinks gave 0 there, where PyTorch's is right)
    log_sig_neg = softplus(-input)
    if pos_weight is None:
        loss = (1 - target) * input + log_sig_neg
    else:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * log_sig_neg
    if weight is not None:
        loss = loss * weight
    if loss.dtype != target.dtype:  # PyTorch's kernel computes in place into (1 - target): a
        loss = loss.to(target.dtype)  # float64 input with a float32 target gives float32
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean",  # noqa: A002
                  label_smoothing=0.0):
    """Cross-entropy of logits (N, C) against class indices (N,) or probabilities (N, C), with
    PyTorch's class weights, ignore_index and label smoothing.

    Without those options it is kit's fused primitive (kit/ops/losses.py); with them, a
    composite of log_softmax and nll_loss, term for term as PyTorch's.
    """
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    by_index = target.dtype.kind in "iu"
    if weight is None and label_smoothing == 0.0 and (ignore_index == -100 or not by_index):
        return fused_cross_entropy(input, target, reduction)
    if input.ndim != 2:
        raise ValueError(
            f"kit.cross_entropy: expected logits of shape (N, C), got {tuple(input.shape)}"
        )
    logp = log_softmax(input, 1)
    classes = input.shape[1]
    if not by_index:  # probabilities: smoothing mixes in the uniform distribution
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / classes
        terms = logp * target if weight is None else logp * target * weight
        return _reduce(-sum_(terms, 1), reduction, "cross_entropy")
    nll = nll_loss(logp, target, weight, ignore_index, reduction)
    if label_smoothing == 0.0:
        return nll
    keep = (target != ignore_index).to(input.dtype)
    smooth = -sum_(logp if weight is None else logp * weight.detach(), 1) * keep
    if reduction == "mean":
        if weight is None:
            smooth = sum_(smooth) / sum_(keep)
        else:
            picked = getitem(weight.detach(), where(target != ignore_index, target, 0))
            smooth = sum_(smooth) / sum_(picked * keep)
    elif reduction == "sum":
        smooth = sum_(smooth)
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / classes)


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):  # noqa: A002
    """Negative log-likelihood of log-probabilities (N, C) at the class indices (N,)."""
    if input.ndim != 2 or target.shape != input.shape[:1]:
        raise ValueError(
            f"kit.nll_loss: expected input (N, C) and target (N,), got {tuple(input.shape)} and "
            f"{tuple(target.shape)}"
        )
    valid = target != ignore_index
    safe = where(valid, target, 0)
    picked = getitem(input, (arange(input.shape[0], device=input.device), safe))
    w = valid.to(input.dtype)
    if weight is not None:
        w = w * getitem(weight.detach(), safe)
    loss = -picked * w
    if reduction == "mean":
        return sum_(loss) / sum_(w)
    return _reduce(loss, reduction, "nll_loss")


def _same_shape(op, input, target):  # noqa: A002
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(
            f"kit.{op}: Using a target size ({list(target.shape)}) that is different to the input "
            f"size ({list(input.shape)}) is deprecated and an error here. Fix: reshape the target"
        )



def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """2-D convolution (cross-correlation, as PyTorch's); padding may be 'valid' or 'same'."""
    padding = conv.resolve_padding(padding, stride, dilation, weight.shape[2:], "conv2d")
    return conv.conv2d(input, weight, bias, stride, padding, dilation, groups)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    """The maximum over each window (kit/ops/conv.py)."""
    return conv.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode,
                           return_indices)
