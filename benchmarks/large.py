"""Large elementwise work: 5 ops over millions of float32 elements, forward and backward.

y = exp(tanh(x * w + c) * x), then backward with a given upstream gradient `gy` (so neither side
can skip the first multiply). The NumPy baseline writes the derivative out by hand.

Memory traffic per element (float32, 4 bytes a value): the NumPy baseline reads 32 and writes 20
bytes forward (5 ops, each reading its operands and writing its result) and reads 60 and writes
32 backward (8 ops): 144 bytes. Compiled and fused (kit.compile), each pass is one kernel: the
forward reads x, w, c and writes y and tanh's value (20 bytes), the backward reads x, w, tanh's
value, y and gy and writes x's gradient (24 bytes): 44 bytes. `compiled_impls` reports kit's own
count (kit.compiler's `bytes_per_element`).
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
    out = {"kit": lambda: _fwd_bwd(xk, wk, ck, gk).data, "numpy": numpy_fwd_bwd}
    if torch is not None:
        xt = torch.tensor(x, requires_grad=True)
        wt, ct, gt_ = (torch.from_numpy(a) for a in (w, c, gy))
        out["torch"] = lambda: _fwd_bwd(xt, wt, ct, gt_).numpy()
    return out


NUMPY_BYTES_PER_ELEMENT = 144


def compiled_impls(size=4_000_000):
    """({"kit": compiled and fused, "numpy": hand-written}, bytes per element kit's kernels
    move, forward + backward)."""
    x, w, c, gy = _data(size)
    xk = kit.tensor(x, requires_grad=True)
    wk, ck, gk = kit.tensor(w), kit.tensor(c), kit.tensor(gy)
    forward = kit.compile(lambda x, w, c: ((x * w + c).tanh() * x).exp())

    def compiled():
        forward(xk, wk, ck).backward(gk)
        g = xk.grad
        xk.grad = None
        return g.data

    compiled()  # traces once, so that the kernels' traffic is known
    moved = sum(sum(g["bytes_per_element"].values()) for g in forward.explain()["groups"])
    return {"kit": compiled, "numpy": impls(None, size)["numpy"]}, moved


def _fwd_bwd(x, w, c, gy):
    """y = exp(tanh(x * w + c) * x) and its backward, on kit or PyTorch tensors; x.grad, reset."""
    y = ((x * w + c).tanh() * x).exp()
    y.backward(gy)
    g = x.grad
    x.grad = None
    return g
