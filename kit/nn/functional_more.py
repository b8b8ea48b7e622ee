"""More of torch.nn.functional: the ELU family, the hard activations, mish, logsigmoid and the
shrinks, softmin, glu, and the L1, smooth L1, Huber and KL-divergence losses. Composites of kit's
primitives, written so that their values and gradients are PyTorch's at the boundaries too
(hardtanh's and hardsigmoid's gradient is 0 at the bounds, hardswish's is PyTorch's at -3 and
3), and so that a branch that `where` discards never overflows (its gradient would be NaN).
Float-only kernels refuse integers with PyTorch's NotImplementedError; the tests compare each
with PyTorch (tests/test_nn_functional_activations.py).

>>> import kit
>>> from kit.nn import functional as F
>>> F.elu(kit.tensor([-1.0, 2.0]))
tensor([-0.6321,  2.0000])
"""

from __future__ import annotations

import warnings

from kit._promotion import category, result_type
from kit.ops._record import record
from kit.ops.composite import _TORCH_DTYPE_NAMES, _reduce, floating_input
from kit.ops.composite import softmax as _softmax
from kit.ops.elementwise import abs as abs_
from kit.ops.elementwise import clamp, exp, expm1, log, log1p, sigmoid, tanh, where
from kit.ops.movement import broadcast_shapes, getitem

__all__ = ["celu", "elu", "glu", "hardsigmoid", "hardswish", "hardtanh", "huber_loss",
           "kl_div", "l1_loss", "logsigmoid", "mish", "relu6", "selu", "smooth_l1_loss",
           "softmin", "softsign", "tanhshrink"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _operand(input, inplace):
    """What an activation computes from: in place, a clone of a tensor that needs a gradient,
    so that the ops which saved it for backward keep the value from before the write (PyTorch's
    in-place kernels save their output instead; without the clone the backward refused)."""
    return input.clone() if inplace and input.requires_grad else input


def _inplace(input, out, inplace):
    return input.copy_(out) if inplace else out


def elu(input, alpha=1.0, inplace=False):  # noqa: A002 - PyTorch's argument name
    """x where x > 0, else alpha * (exp(x) - 1)."""
    floating_input("elu_cpu", "elu", input)
    # (PyTorch's test is x <= 0 for the exponential side: a NaN passes its gradient on)
    x = _operand(input, inplace)
    out = where(x <= 0, alpha * expm1(clamp(x, max=0)), x)
    return _inplace(input, out, inplace)


def selu(input, inplace=False):  # noqa: A002
    """scale * elu(x, alpha) with the self-normalising constants."""
    floating_input("elu_cpu", "selu", input)
    return _inplace(input, _SELU_SCALE * elu(_operand(input, inplace), _SELU_ALPHA), inplace)


def celu(input, alpha=1.0, inplace=False):  # noqa: A002
    """x where x > 0, else alpha * (exp(x / alpha) - 1)."""
    floating_input("elu_cpu", "celu", input)
    x = _operand(input, inplace)
    out = where(x <= 0, alpha * expm1(clamp(x, max=0) / alpha), x)
    return _inplace(input, out, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):  # noqa: A002
    """x clamped to [min_val, max_val]; its gradient is 1 strictly inside, 0 at the bounds and
    outside (PyTorch's hardtanh_backward; clamp's includes the bounds)."""
    if input.dtype.kind == "b":
        raise RuntimeError("Bool inputs not supported for hardtanh (kit.hardtanh, as in "
                           "PyTorch). Fix: convert first, e.g. x.float()")
    if input.dtype.kind in "iu":  # PyTorch keeps the integer dtype (no gradient to shape)
        return _inplace(input, clamp(input, min_val, max_val).to(input.dtype), inplace)
    # (PyTorch's test is "not at or beyond a bound": a NaN passes its gradient on)
    x = _operand(input, inplace)
    inside = ~((x <= min_val) | (x >= max_val))
    out = where(inside, x, clamp(x, min_val, max_val).detach())
    return _inplace(input, out, inplace)


def relu6(input, inplace=False):  # noqa: A002
    """min(max(x, 0), 6): hardtanh(x, 0, 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def softsign(input):  # noqa: A002
    """x / (1 + |x|)."""
    return input / (1 + abs_(input))


def _softplus(x, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, and x where beta x > threshold (F.softplus, mish and
    logsigmoid). where() replaces the values above the threshold first, so the branch it discards
    never overflows to inf (its gradient would be 0 * inf = NaN); a NaN passes through, as its
    gradient does in PyTorch (sigmoid(NaN)). log1p, as PyTorch: log(1 + exp(-20)) rounds to 0 in
    float32, log1p keeps 2e-9."""
    scaled = x if beta == 1 else x * beta
    above = scaled > threshold
    soft = log1p(exp(where(above, 0.0, scaled)))
    return where(above, x, soft if beta == 1 else soft / beta)


def mish(input, inplace=False):  # noqa: A002
    """x * tanh(softplus(x))."""
    floating_input("mish_cpu", "mish", input)
    x = _operand(input, inplace)
    return _inplace(input, x * tanh(_softplus(x)), inplace)


def hardswish(input, inplace=False):  # noqa: A002
    """x * relu6(x + 3) / 6, with PyTorch's gradient: 0 up to -3, x / 3 + 1/2 strictly
    between, 1 from 3 on."""
    floating_input("hardswish_cpu", "hardswish", input)
    x = _operand(input, inplace)
    inner = clamp(x, -3, 3)  # (so the discarded middle never overflows: no NaN at +-inf)
    middle = inner * (inner + 3) / 6
    out = where(x <= -3, x * 0, where(x < 3, middle, x))
    return _inplace(input, out, inplace)


def hardsigmoid(input, inplace=False):  # noqa: A002
    """x / 6 + 1/2 inside (-3, 3), 0 below, 1 above; gradient 1/6 strictly inside, else 0."""
    floating_input("hardsigmoid_cpu", "hardsigmoid", input)
    x = _operand(input, inplace)
    inside = (x > -3) & (x < 3)
    # (outside: 0 or 1, and NaN stays NaN, with no gradient)
    outside = where(x <= -3, 0.0, where(x >= 3, 1.0, x.detach()))
    out = where(inside, x / 6 + 0.5, outside)
    return _inplace(input, out, inplace)


def logsigmoid(input):  # noqa: A002
    """log(sigmoid(x)) = -softplus(-x), without overflow."""
    floating_input("log_sigmoid_cpu", "logsigmoid", input)
    return 0.0 - _softplus(-input)  # (+0.0 at +inf, as PyTorch; -softplus gives -0.0)


def tanhshrink(input):  # noqa: A002
    """x - tanh(x)."""
    return input - tanh(input)


def softmin(input, dim=None, dtype=None):  # noqa: A002
    """softmax(-x) along `dim`."""
    floating_input("softmax_lastdim_kernel_impl", "softmin", input)
    if dim is None:  # PyTorch's deprecated implicit dim, with its warning
        warnings.warn("Implicit dimension choice for softmin has been deprecated. Change the "
                      "call to include dim=X as an argument.", UserWarning, stacklevel=2)
        dim = 0 if input.ndim in (0, 1, 3) else 1
    x = input if dtype is None else input.to(dtype)
    return _softmax(-x, dim)


def glu(input, dim=-1):  # noqa: A002
    """a * sigmoid(b), a and b the two halves of `input` along `dim`."""
    size = input.shape[dim]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension "
                           f"{dim % input.ndim} is size {size} (kit.glu, as in PyTorch)")
    floating_input("glu_cpu", "glu", input)
    lead = (slice(None),) * (dim % input.ndim)
    half = size // 2
    return getitem(input, lead + (slice(0, half),)) * sigmoid(
        getitem(input, lead + (slice(half, size),)))


def _difference(op, kernel, input, target, expand=True):
    """input - target, with PyTorch's warning for a target of another shape (broadcast) and its
    errors for shapes that do not broadcast, then, for the losses with a kernel of their own,
    for integers (NotImplementedError) and bools (computed in the other operand's dtype)."""
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(
            f"Using a target size (torch.Size({list(target.shape)})) that is different to the "
            f"input size (torch.Size({list(input.shape)})). This will likely lead to incorrect "
            f"results due to broadcasting. Please ensure they have the same size. (kit.{op}; "
            f"fix: reshape the target to the input's shape)", UserWarning, stacklevel=3)
        # expanded first, as PyTorch's broadcast_tensors: a 0-d operand then counts in the
        # dtype promotion like any other (float32 input, float64 0-d target: float64)
        # (huber_loss does not: its result has the input's dtype then)
        shape = broadcast_shapes(input.shape, target.shape)
        if expand:
            input, target = input.expand(*shape), target.expand(*shape)
    if kernel is None:  # l1_loss is (input - target).abs(): integers are kept, bools refused
        return input - target  # (by `-`), and only the mean refuses integers
    if input.dtype.kind not in "fc" and target.dtype.kind not in "fc":
        floating_input(kernel, op, input if input.dtype.itemsize >= target.dtype.itemsize
                       else target)  # (the dtype it would compute in)
    if target.dtype.kind == "b":  # the kernels take a bool operand in the other's dtype, as
        target = target.to(input.dtype)  # PyTorch's (a bool in `-` would be refused)
    elif input.dtype.kind == "b":
        input = input.to(target.dtype)
    return input - target


def l1_loss(input, target, reduction="mean"):  # noqa: A002
    """|input - target|, reduced."""
    return _reduce(abs_(_difference("l1_loss", None, input, target)), reduction, "l1_loss")


def smooth_l1_loss(input, target, reduction="mean", beta=1.0):  # noqa: A002
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (the L1 loss for beta = 0)."""
    d = abs_(_difference("smooth_l1_loss", "smooth_l1_cpu", input, target))
    if beta == 0:
        return _reduce(d, reduction, "smooth_l1_loss")
    # the discarded square never overflows (no NaN gradient at inf), and a NaN still reaches it
    # (PyTorch's gradient there is NaN)
    near = where(d > beta, beta, d)
    return _reduce(where(d < beta, 0.5 * near * near / beta, d - 0.5 * beta), reduction,
                   "smooth_l1_loss")


def huber_loss(input, target, reduction="mean", delta=1.0):  # noqa: A002
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta); computed in the input's dtype, as
    PyTorch's kernel does (a float64 target with a float32 input gives a float32 loss)."""
    broadcast_shapes(input.shape, target.shape)  # shapes first, as PyTorch
    promoted = result_type(input, target)
    if category(promoted) > category(input.dtype):
        raise RuntimeError(f"result type {_torch_name(promoted)} can't be cast to the desired "
                           f"output type {_torch_name(input.dtype)} (kit.huber_loss, as in "
                           f"PyTorch). Fix: input.float()")
    # (integers are refused in _difference, after the shapes, as PyTorch refuses them)
    d = abs_(_difference("huber_loss", "huber_cpu", input,
                         target if target.dtype == input.dtype else target.to(input.dtype),
                         expand=False))
    near = where(d > delta, delta, d)  # (as in smooth_l1_loss)
    loss = _reduce(where(d < delta, 0.5 * near * near, delta * (d - 0.5 * delta)), reduction,
                   "huber_loss")
    if input.dtype != target.dtype and loss.requires_grad:
        # PyTorch 2.13's huber_loss computes a target of another dtype forward (in the input's
        # dtype), but its backward kernel refuses it
        found, expected = ((target, input) if input.requires_grad else (input, target))
        loss = raising_backward(
            loss, "huber_loss", f"Found dtype {_torch_name(found.dtype)} but expected "
            f"{_torch_name(expected.dtype)} (kit.huber_loss, backward, as PyTorch: its backward "
            f"needs input and target of one dtype). Fix: target.to(input.dtype) before the loss")
    return loss


def raising_backward(out, op, message):
    """`out` through one more node, whose backward raises RuntimeError(message): for what PyTorch
    computes forward but refuses to differentiate, so that code that runs here runs there."""
    return record(op, _raising_rule, out._data.copy(), (out,), params=(message,))


def _raising_rule(node, g):
    raise RuntimeError(node.params[0])


def _torch_name(dtype):
    return {"float32": "Float", "float64": "Double", "float16": "Half",
            **_TORCH_DTYPE_NAMES}.get(str(dtype), str(dtype))


def _xlogx(t):
    """t * log(t), 0 where t is 0 (PyTorch's xlogy(t, t)); log sees 1 there, so its discarded
    branch sends no NaN back."""
    zero = t == 0
    return where(zero, t * 0, t * log(where(zero, 1.0, t)))


def kl_div(input, target, reduction="mean", log_target=False):  # noqa: A002
    """KL divergence, with `input` log-probabilities: target * (log target - input) (0 where the
    target is 0), or exp(target) * (target - input) with `log_target`. 'batchmean' divides by
    the batch size; 'mean', by every element (PyTorch warns that it will change)."""
    if input.dtype.kind not in "fc" or target.dtype.kind not in "fc":
        raise RuntimeError("kl_div: Integral inputs not supported. (kit.kl_div, as in PyTorch). "
                           "Fix: convert first, e.g. x.float()")
    if log_target:
        pointwise = exp(target) * (target - input)
    else:
        pointwise = _xlogx(target) - target * input
    if reduction == "batchmean":
        total = pointwise.sum()
        return total / input.shape[0] if input.ndim else total
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.", UserWarning, stacklevel=2)
    return _reduce(pointwise, reduction, "kl_div")
