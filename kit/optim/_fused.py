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
_KERNELS = {}  # (maximize, weight decay, momentum, dampening, nesterov, first) -> kernel


def _numba():
    try:
        import numba
    except ImportError:
        return None
    return numba


def _kernel(maximize, decay, momentum, damped, nesterov, first):
    """The loop for one set of options, written out: numba's call checks the type of every
    argument, so each variant takes only the arrays and numbers it uses."""
    key = (maximize, decay, momentum, damped, nesterov, first)
    kernel = _KERNELS.get(key)
    if kernel is None:
        params = ["p", "g", "lr"] + (["wd"] if decay else [])
        if momentum:
            params += ["buf", "momentum"] + (["keep"] if damped and not first else [])
        body = ["    gi = g[i]"]
        if maximize:
            body.append("    gi = -gi")
        if decay:
            body.append("    gi = gi + p[i] * wd")
        if momentum:
            body.append("    b = gi" if first else
                        f"    b = buf[i] * momentum + {'gi * keep' if damped else 'gi'}")
            body.append("    buf[i] = b")
            body.append("    gi = gi + b * momentum" if nesterov else "    gi = b")
        body.append("    p[i] = p[i] - gi * lr")
        source = f"def kernel({', '.join(params)}):\n  for i in range(p.size):\n" + \
            "\n".join("  " + line for line in body) + "\n"
        namespace = {}
        exec(compile(source, "<kit.optim fused sgd>", "exec"), namespace)
        kernel = _KERNELS[key] = _numba().njit(error_model="numpy")(namespace["kernel"])
    return kernel


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
    return p.flags.c_contiguous and p.flags.writeable and _numba() is not None


def sgd(p, g, buf, lr, momentum, dampening, weight_decay, nesterov, maximize, first):
    """One SGD update of `p` in place (and of the momentum buffer `buf`, None without momentum;
    `first`: the buffer is set to the gradient, as on PyTorch's first step). Check `usable`
    first. Each scalar is cast to the arrays' dtype, as NumPy casts a Python number."""
    scalar = p.dtype.type
    args = [p.reshape(-1), g.reshape(-1), scalar(lr)]
    if weight_decay != 0:
        args.append(scalar(weight_decay))
    if buf is not None:
        args += [buf.reshape(-1), scalar(momentum)]
        if dampening != 0 and not first:
            args.append(scalar(1 - dampening))
    _kernel(bool(maximize), weight_decay != 0, buf is not None, dampening != 0,
            bool(nesterov), bool(first))(*args)
