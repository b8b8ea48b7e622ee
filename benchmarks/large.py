"""Large elementwise work: 5 ops over millions of float32 elements, forward and backward.

y = exp(tanh(x * w + c) * x), then backward with a given upstream gradient `gy` (so neither side
can skip the first multiply). The NumPy baseline writes the derivative out by hand.
"""

from __future__ import annotations

import numpy as np

import kit


def _data(size, seed=0):
    rng = np.random.default_rng(seed)
    x, w, c, gy = (rng.standard_normal(size).astype(np.float32) for _ in range(4))
    return 0.5 * x, w, c, gy


def impls(torch=None, size=4_000_000):
    """{name: fn} each computing y and dL/dx for L = sum(gy * y); fn returns dL/dx."""
    x, w, c, gy = _data(size)

    def numpy_fwd_bwd():
        u = x * w
        v = u + c
        t = np.tanh(v)
        s = t * x
        y = np.exp(s)
        gs = gy * y
        gt = gs * x
        gv = gt * (1 - t * t)
        return gs * t + gv * w

    xk = kit.tensor(x, requires_grad=True)
    wk, ck, gk = kit.tensor(w), kit.tensor(c), kit.tensor(gy)

    def kit_fwd_bwd():
        y = ((xk * wk + ck).tanh() * xk).exp()
        y.backward(gk)
        g = xk.grad.data
        xk.grad = None
        return g

    out = {"kit": kit_fwd_bwd, "numpy": numpy_fwd_bwd}
    if torch is not None:
        xt = torch.tensor(x, requires_grad=True)
        wt, ct, gt_ = (torch.from_numpy(a) for a in (w, c, gy))

        def torch_fwd_bwd():
            y = ((xt * wt + ct).tanh() * xt).exp()
            y.backward(gt_)
            g = xt.grad.numpy()
            xt.grad = None
            return g

        out["torch"] = torch_fwd_bwd
    return out
