"""Fused softmax-cross-entropy: one kernel forward, one kernel backward.

    loss_i = logsumexp(x_i) - x_i[t_i]          d loss_i / d x_ij = softmax(x_i)_j - [j == t_i]

Composed from kit primitives (`kit.cross_entropy`) this is logsumexp, a subtraction, an indexing
and a mean, each a node with its own temporaries. The fused forward is one CUDA block per row: a
shared-memory reduction for the row's maximum, a second for the sum of exponentials, then the loss.
It saves only the per-row log-sum-exp, from which the backward kernel rebuilds the softmax
elementwise while it writes the gradient. The CPU path does the same in NumPy.
"""

from __future__ import annotations

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.function import Function, once_differentiable
from kit.kernels import _cuda

THREADS = 256  # threads per row block; a power of two for the tree reduction

FORWARD_SOURCE = r"""
extern "C" __global__
void kit_softmax_ce_fwd(const T* x, const long long* target, T* loss, T* lse, int n, int c) {
    extern __shared__ __align__(sizeof(double)) unsigned char shared_raw[];
    T* buf = reinterpret_cast<T*>(shared_raw);
    const int row = blockIdx.x;
    if (row >= n) return;
    const T* xr = x + (long long)row * c;
    T m = xr[0];
    for (int j = threadIdx.x; j < c; j += blockDim.x) m = fmax(m, xr[j]);
    buf[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] = fmax(buf[threadIdx.x], buf[threadIdx.x + s]);
        __syncthreads();
    }
    m = buf[0];
    if (!isfinite(m)) m = 0;  // a row of -inf: keep exp() finite, as kit.logsumexp does
    __syncthreads();
    T total = 0;
    for (int j = threadIdx.x; j < c; j += blockDim.x) total += exp(xr[j] - m);
    buf[threadIdx.x] = total;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        const T l = log(buf[0]) + m;
        lse[row] = l;
        loss[row] = l - xr[target[row]];
    }
}
"""

BACKWARD_PARAMS = ("raw T x, raw T lse, raw int64 target, raw T g, int32 c", "T gx")
BACKWARD_BODY = """
    const ptrdiff_t row = i / c;
    const T p = exp(x[i] - lse[row]);
    gx = g[row] * (p - ((i % c) == target[row] ? (T)1 : (T)0));
"""

REDUCTIONS = ("mean", "sum", "none")


def _check(logits, target, reduction):
    op = "FusedSoftmaxCrossEntropy"
    if not isinstance(logits, Tensor):
        raise TypeError(f"{op}.apply: logits must be a Tensor, got {type(logits).__name__}")
    x = logits._data
    t = target._data if isinstance(target, Tensor) else target
    _cuda.check_float(op, x)
    if x.ndim != 2 or x.shape[1] == 0:
        raise ValueError(f"{op}: forward expects logits of shape (N, C) with C >= 1, got {x.shape}")
    if getattr(t, "dtype", np.dtype("float64")).kind not in "iu" or t.shape != x.shape[:1]:
        raise ValueError(
            f"{op}: forward expects integer class indices of shape ({x.shape[0]},), got "
            f"{getattr(t, 'dtype', type(t).__name__)} {getattr(t, 'shape', '')}. Fix: "
            f"kit.tensor(labels, dtype=kit.int64); probability targets need kit.cross_entropy"
        )
    if backend.device_of(x) != backend.device_of(t):
        raise RuntimeError(
            f"{op}: forward got logits on {backend.device_of(x)} and target on "
            f"{backend.device_of(t)}. Fix: move one explicitly, e.g. target.to('gpu')"
        )
    check_classes(op, t, x.shape[1], "target class", "logits have")
    if reduction not in REDUCTIONS:
        raise ValueError(f"{op}: reduction must be one of {REDUCTIONS}, got {reduction!r}")
    return x, t


def check_classes(op, t, classes, what, holder):
    """Every class index in `t` lies in 0..classes-1 (the kernels do not check bounds)."""
    if t.size and (int(t.min()) < 0 or int(t.max()) >= classes):
        raise IndexError(
            f"{op}: forward got {what} {int(t.max())} (min {int(t.min())}) but {holder} "
            f"{classes} classes (valid: 0..{classes - 1})"
        )


def softmax_ce_forward(x, target):
    """Per-row losses and log-sum-exps of logits `x` (N, C) and class indices `target` (N,)."""
    n, c = x.shape
    xp = backend.get_array_module(x)
    if backend.device_of(x) == "gpu":
        x = xp.ascontiguousarray(x)
        loss = xp.empty(n, dtype=x.dtype)
        lse = xp.empty(n, dtype=x.dtype)
        if n == 0:
            return loss, lse  # a grid of zero blocks is a launch error, not an empty launch
        kernel = _cuda.raw("kit_softmax_ce_fwd", FORWARD_SOURCE, x.dtype)
        args = (x, xp.ascontiguousarray(target, dtype=xp.int64), loss, lse, np.int32(n),
                np.int32(c))
        kernel((n,), (THREADS,), args, shared_mem=THREADS * x.dtype.itemsize)
        return loss, lse
    m = x.max(axis=1, keepdims=True)
    m[~np.isfinite(m)] = 0
    lse = np.log(np.exp(x - m).sum(axis=1, keepdims=True)) + m
    lse = lse[:, 0]
    return lse - x[np.arange(n), target], lse


def softmax_ce_backward(x, target, lse, g):
    """Gradient with respect to the logits, given the per-row output gradient `g` (N,)."""
    n, c = x.shape
    if backend.device_of(x) == "gpu":
        xp = backend.get_array_module(x)
        kernel = _cuda.elementwise("kit_softmax_ce_bwd", *BACKWARD_PARAMS, BACKWARD_BODY)
        gx = xp.empty((n, c), dtype=x.dtype)
        kernel(xp.ascontiguousarray(x), lse, xp.ascontiguousarray(target, dtype=xp.int64),
               xp.ascontiguousarray(g), np.int32(c), gx)
        return gx
    gx = x - lse[:, None]
    np.exp(gx, out=gx)
    gx[np.arange(n), target] -= 1
    gx *= g[:, None]
    return gx


class FusedSoftmaxCrossEntropy(Function):
    """Softmax followed by cross-entropy on class indices, one fused kernel each way."""

    @staticmethod
    def forward(ctx, logits, target, reduction="mean"):
        x, t = _check(logits, target, reduction)
        loss, lse = softmax_ce_forward(x, t)
        # NOTE: saved through ctx (not as attributes) so they are checked and freed like any
        # saved tensor; lse is an intermediate, the only thing backward needs beyond the inputs.
        target = target if isinstance(target, Tensor) else Tensor(t)
        ctx.save_for_backward(logits, target, Tensor(lse))
        ctx.reduction = reduction
        if reduction == "none":
            return Tensor(loss)
        total = loss.sum()
        return Tensor(total / x.shape[0] if reduction == "mean" else total)

    @staticmethod
    @once_differentiable  # the backward is a kernel, not kit ops: no second derivative through it
    def backward(ctx, gy):
        logits, target, lse = ctx.saved_tensors
        x, g = logits._data, gy._data
        n = x.shape[0]
        if ctx.reduction != "none":
            xp = backend.get_array_module(x)
            scale = g / n if ctx.reduction == "mean" else g
            g = xp.empty(n, dtype=x.dtype)
            g[...] = scale  # broadcast on the device, without a host round trip
        return Tensor(softmax_ce_backward(x, target._data, lse._data, g)), None, None


def fused_softmax_cross_entropy(logits, target, reduction="mean"):
    """Cross-entropy of logits (N, C) against class indices (N,) through the fused kernels.

    >>> import kit
    >>> loss = fused_softmax_cross_entropy(kit.tensor([[0.0, 0.0]]), kit.tensor([1]))
    >>> round(loss.item(), 4)
    0.6931
    """
    return FusedSoftmaxCrossEntropy.apply(logits, target, reduction)
