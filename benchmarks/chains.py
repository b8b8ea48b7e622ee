"""Per-op overhead: a chain of tiny elementwise ops, and very deep scalar chains.

Tiny chain: a 16-element float32 vector goes through `n` ops cycling mul, add, tanh (constant
vectors for mul and add), then sum; the NumPy baseline keeps what its hand-derived backward needs
and walks the chain back. Deep chain: a 0-d float32 value through `n` ops alternating `* 0.9999`
and `+ 0.001`, then backward; this measures graph depth, not arithmetic (0.9999 keeps the
gradient, 0.9999 ** (n / 2), a normal float32 even at n = 1,000,000).
"""

from __future__ import annotations

import numpy as np

import kit

WIDTH = 16


def _tiny_data(seed=0):
    rng = np.random.default_rng(seed)
    x, a, b = (rng.standard_normal(WIDTH).astype(np.float32) for _ in range(3))
    # NOTE: small values and a ~ 1 keep the gradient near 1 along the whole chain; a decaying one
    # would reach float32 denormals, whose slow arithmetic would distort every timing.
    return 0.01 * x, 1 + 0.001 * a, 0.001 * b


def tiny_impls(torch=None, n=1000):
    """{name: fn} each running the n-op chain forward and backward; fn returns d(sum)/dx."""
    x, a, b = _tiny_data()

    def numpy_chain():
        h = x
        kept = []
        for i in range(n):
            k = i % 3
            if k == 0:
                h = h * a
            elif k == 1:
                h = h + b
            else:
                h = np.tanh(h)
                kept.append(h)
        g = np.ones_like(h)
        for i in range(n - 1, -1, -1):
            k = i % 3
            if k == 0:
                g = g * a
            elif k == 2:
                y = kept.pop()
                g = g * (1 - y * y)
        return g

    xk, ak, bk = kit.tensor(x, requires_grad=True), kit.tensor(a), kit.tensor(b)
    out = {"kit": lambda: _tiny_chain(xk, ak, bk, n).data, "numpy": numpy_chain}
    if torch is not None:
        xt = torch.tensor(x, requires_grad=True)
        at, bt = torch.from_numpy(a), torch.from_numpy(b)
        out["torch"] = lambda: _tiny_chain(xt, at, bt, n).numpy()
    return out


def tiny_compiled_impls(n=1000):
    """{"kit": the chain in a function compiled by kit.compile, "numpy": the hand-written one}."""
    x, a, b = _tiny_data()
    xk, ak, bk = kit.tensor(x, requires_grad=True), kit.tensor(a), kit.tensor(b)
    loss = kit.compile(lambda h: _tiny_forward(h, ak, bk, n).sum())

    def compiled():
        loss(xk).backward()
        g = xk.grad
        xk.grad = None
        return g.data

    return {"kit": compiled, "numpy": tiny_impls(None, n)["numpy"]}


def _tiny_forward(h, a, b, n):
    for i in range(n):
        k = i % 3
        if k == 0:
            h = h * a
        elif k == 1:
            h = h + b
        else:
            h = h.tanh()
    return h


def _tiny_chain(x, a, b, n):
    """The tiny chain on kit or PyTorch tensors (the same operators); returns x.grad, reset."""
    _tiny_forward(x, a, b, n).sum().backward()
    g = x.grad
    x.grad = None
    return g


def deep_impls(torch=None, n=100_000):
    """{name: fn} each running an n-deep scalar chain forward and backward; fn returns dy/dx."""
    x0 = np.float32(0.5)

    def numpy_chain():
        h = np.asarray(x0)
        for i in range(n):
            h = h * np.float32(0.9999) if i % 2 == 0 else h + np.float32(0.001)
        g = np.ones_like(h)
        for i in range(n - 1, -1, -1):
            if i % 2 == 0:
                g = g * np.float32(0.9999)
        return g

    xk = kit.tensor(x0, requires_grad=True)
    out = {"kit": lambda: _deep_chain(xk, n).data, "numpy": numpy_chain}
    if torch is not None:
        xt = torch.tensor(x0, requires_grad=True)
        out["torch"] = lambda: _deep_chain(xt, n).numpy()
    return out


def _deep_chain(x, n):
    """The deep chain on a kit or PyTorch scalar tensor; returns x.grad, reset."""
    h = x
    for i in range(n):
        h = h * 0.9999 if i % 2 == 0 else h + 0.001
    h.backward()
    g = x.grad
    x.grad = None
    return g
