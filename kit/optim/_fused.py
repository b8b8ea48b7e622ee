"""SGD's update as one loop over the elements (numba, the `jit` extra): PyTorch's `fused=True`.

NumPy's `p -= g * lr` reads and writes memory twice and makes a temporary the size of the
parameter; one compiled loop reads `p` and `g` once and writes `p` once (measured 2.4x faster on
a 784x256 float32 weight). Each element goes through the same float operations in the same order
as maths.sgd's NumPy code, each rounded to the array's dtype (the scalars are cast to it first, as
NumPy casts a Python number, and numba contracts no multiply-add without fastmath), so the two
give the same bits; tests/test_optim_fused.py checks every option.

Used for CPU float32/float64 arrays of one dtype, contiguous, from `FUSED_FROM` elements up: below
that, a NumPy call costs about what the loop's call does, and the first use of a dtype costs numba
a compilation (about a second), which small programs (and the test suite) need not pay.
"""

from __future__ import annotations

import numpy as np

FUSED_FROM = 16_384  # elements
_KERNEL = []  # the compiled kernel, made on first use


def _kernel():
    if not _KERNEL:
        try:
            import numba
        except ImportError:
            _KERNEL.append(None)
        else:
            _KERNEL.append(numba.njit(error_model="numpy")(_sgd_loop))
    return _KERNEL[0]


def _sgd_loop(p, g, buf, lr, momentum, keep, wd, nesterov, maximize, has_buf, first):
    # maths.sgd's NumPy code element by element: the same operations in the same order
    for i in range(p.size):
        gi = g[i]
        if maximize:
            gi = -gi
        if wd != 0:
            gi = gi + p[i] * wd
        if has_buf:
            if first:
                b = gi
            else:
                b = buf[i] * momentum
                b = b + (gi if keep == 1 else gi * keep)
            buf[i] = b
            gi = gi + b * momentum if nesterov else b
        p[i] = p[i] - gi * lr


def usable(p, g, buf=None):
    """Can the fused loop update `p` (and `buf`) from `g`: all CPU arrays of one float dtype
    and shape, contiguous, large enough, numba installed?"""
    if type(p) is not np.ndarray or type(g) is not np.ndarray or p.size < FUSED_FROM:
        return False
    dtype = p.dtype
    if dtype != np.float32 and dtype != np.float64:
        return False
    for a in (g,) if buf is None else (g, buf):
        if type(a) is not np.ndarray or a.dtype != dtype or a.shape != p.shape or \
                not a.flags.c_contiguous:
            return False
    return p.flags.c_contiguous and p.flags.writeable and _kernel() is not None


def sgd(p, g, buf, lr, momentum, dampening, weight_decay, nesterov, maximize, first):
    """One SGD update of `p` in place (and of the momentum buffer `buf`, None without momentum;
    `first`: the buffer is set to the gradient, as on PyTorch's first step). Check `usable`
    first."""
    scalar = p.dtype.type
    flat = p.reshape(-1)
    # (without momentum the loop never reads `buf`; numba still wants an array of its type)
    _kernel()(flat, g.reshape(-1), flat[:0] if buf is None else buf.reshape(-1),
              scalar(lr), scalar(momentum), scalar(1 - dampening), scalar(weight_decay),
              bool(nesterov), bool(maximize), buf is not None, bool(first))
