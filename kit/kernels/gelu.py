"""Fused GELU (tanh approximation): one kernel forward, one kernel backward.

    gelu(x) = 0.5 x (1 + tanh(u)),  u = k (x + c x^3),  k = sqrt(2 / pi),  c = 0.044715
    gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2),  t = tanh(u)

Composed from kit primitives the forward records nine nodes and keeps their outputs alive for
backward; the fused op records one node, saves only x and recomputes tanh(u) in backward, where
recomputing costs less than the memory traffic of storing it. On the GPU each direction is a
single CuPy ElementwiseKernel (one read and one write per element); on the CPU the same maths runs
in NumPy, in place where it can, so the op runs everywhere.
"""

from __future__ import annotations

import math

from kit import backend
from kit._tensor import Tensor
from kit.function import Function, once_differentiable
from kit.kernels import _cuda

K = math.sqrt(2.0 / math.pi)
C = 0.044715

# NOTE: the constants are formatted into the CUDA source from the same Python values the NumPy
# path uses, so the two paths cannot drift apart.
FORWARD_BODY = f"""
    const T u = (T){K!r} * (x + (T){C!r} * x * x * x);
    y = (T)0.5 * x * ((T)1 + tanh(u));
"""
BACKWARD_BODY = f"""
    const T t = tanh((T){K!r} * (x + (T){C!r} * x * x * x));
    const T du = (T){K!r} * ((T)1 + (T){3 * C!r} * x * x);
    gx = gy * ((T)0.5 * ((T)1 + t) + (T)0.5 * x * ((T)1 - t * t) * du);
"""


def _tanh_u(xp, x):
    """tanh(k (x + c x^3)) with one temporary."""
    u = xp.multiply(x, x, out=xp.empty_like(x))  # `out=` keeps a 0-d result an array
    u *= C
    u += 1
    u *= x
    u *= K
    return xp.tanh(u, out=u)


def gelu_forward(x):
    """GELU of an array (NumPy or CuPy); the CuPy path is one fused kernel.

    >>> import numpy as np
    >>> float(gelu_forward(np.array([1.0]))[0].round(4))
    0.8412
    """
    _cuda.check_float("FusedGELU", x)
    if backend.device_of(x) == "gpu":
        return _cuda.elementwise("kit_gelu_fwd", "T x", "T y", FORWARD_BODY)(x)
    y = _tanh_u(backend.get_array_module(x), x)
    y += 1
    y *= x
    y *= 0.5
    return y


def gelu_backward(x, gy):
    """The gradient of GELU at x times gy (arrays; one fused kernel on CuPy)."""
    if backend.device_of(x) == "gpu":
        return _cuda.elementwise("kit_gelu_bwd", "T x, T gy", "T gx", BACKWARD_BODY)(x, gy)
    xp = backend.get_array_module(x)
    t = _tanh_u(xp, x)
    # 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2), built in place in `du`
    du = xp.multiply(x, x, out=xp.empty_like(x))
    du *= 3 * C
    du += 1
    du *= K
    du *= x
    du *= 1 - t * t
    du += 1 + t
    du *= 0.5
    du *= gy
    return du


class FusedGELU(Function):
    """GELU (tanh approximation) as one fused kernel each way; NumPy on the CPU."""

    @staticmethod
    def forward(ctx, x):
        if not isinstance(x, Tensor):
            raise TypeError(f"FusedGELU.apply: expected a Tensor, got {type(x).__name__}")
        ctx.save_for_backward(x)
        return Tensor(gelu_forward(x._data))

    @staticmethod
    @once_differentiable  # the backward is a kernel, not kit ops: no second derivative through it
    def backward(ctx, gy):
        (x,) = ctx.saved_tensors
        return Tensor(gelu_backward(x._data, gy._data))


def fused_gelu(x):
    """GELU through the fused kernels: `FusedGELU.apply(x)`.

    >>> import kit
    >>> fused_gelu(kit.tensor([0.0, 1.0]))
    tensor([0.0000, 0.8412])
    """
    return FusedGELU.apply(x)


def gelu_composed(x):
    """The same GELU composed from kit primitives (the reference the fused op is checked against).

    >>> import kit
    >>> gelu_composed(kit.tensor([0.0, 1.0]))
    tensor([0.0000, 0.8412])
    """
    from kit.ops.elementwise import tanh

    return 0.5 * x * (1 + tanh(K * (x + C * (x * x * x))))
