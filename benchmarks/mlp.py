"""MLP training step: batch 64, 784-256-256-10, float32, relu, cross-entropy, SGD.

The NumPy baseline is what one would write by hand: the forward pass, the backward pass derived
on paper (no gradient for the input batch), and the same in-place SGD update.
"""

from __future__ import annotations

import numpy as np

import kit
from kit.optim import SGD

LR = 0.05


def make_data(batch=64, sizes=(784, 256, 256, 10), seed=0):
    """Input batch, class labels and initial (W, b) pairs, all float32 NumPy arrays."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = rng.integers(0, sizes[-1], size=batch)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
        w = rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in)
        params.append((w.astype(np.float32), np.zeros(fan_out, np.float32)))
    return x, y, params


def numpy_step_fn(x, y, params):
    """One hand-written NumPy step; returns a function giving (loss, [W1, b1, ...])."""
    ps = [(w.copy(), b.copy()) for w, b in params]
    n = x.shape[0]
    rows = np.arange(n)

    def step():
        acts, pre = [x], []
        h = x
        for i, (w, b) in enumerate(ps):
            z = h @ w + b
            pre.append(z)
            h = np.maximum(z, 0) if i < len(ps) - 1 else z
            acts.append(h)
        m = h.max(axis=1, keepdims=True)
        e = np.exp(h - m)
        s = e.sum(axis=1, keepdims=True)
        loss = np.mean(np.log(s[:, 0]) + m[:, 0] - h[rows, y])
        dz = e / s
        dz[rows, y] -= 1
        dz /= n
        for i in range(len(ps) - 1, -1, -1):
            w, b = ps[i]
            dw = acts[i].T @ dz
            db = dz.sum(axis=0)
            if i:
                dz = (dz @ w.T) * (pre[i - 1] > 0)
            w -= LR * dw
            b -= LR * db
        return float(loss), [a for p in ps for a in p]

    return step


def kit_step_fn(x, y, params, compiled=False):
    """One kit step: forward, loss.backward(), SGD under no_grad, grads set to None. With
    `compiled`, the whole training step is one function compiled by kit.compile: the forward
    and the loss, loss.backward(), kit.optim.SGD's step and zero_grad() (a replay runs the
    forward and the graph's reverse schedule on arrays, then the optimiser's calls)."""
    xt, yt = kit.tensor(x), kit.tensor(y)
    ps = [(kit.tensor(w, requires_grad=True), kit.tensor(b, requires_grad=True))
          for w, b in params]
    flat = [p for pair in ps for p in pair]
    # NOTE: views of the parameters, made once (every update is in place), as the NumPy step
    # returns its live arrays: returning the numbers must not time extra objects
    views = [p.detach().numpy() for p in flat]

    def forward(h, labels):
        for i, (w, b) in enumerate(ps):
            h = h @ w + b
            if i < len(ps) - 1:
                h = kit.relu(h)
        return kit.cross_entropy(h, labels)

    if compiled:
        opt = SGD(flat, lr=LR)

        @kit.compile
        def train_step(h, labels):
            loss = forward(h, labels)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        def step():
            return train_step(xt, yt).item(), views

        return step

    def step():
        loss = forward(xt, yt)
        loss.backward()
        with kit.no_grad():
            for p in flat:
                p -= LR * p.grad
                p.grad = None
        return loss.item(), views

    return step


def torch_step_fn(torch, x, y, params):
    """The same step in PyTorch (CPU), written the way the kit one is."""
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    flat = [torch.tensor(a, requires_grad=True) for pair in params for a in pair]
    ps = list(zip(flat[::2], flat[1::2], strict=True))
    views = [p.detach().numpy() for p in flat]  # (as the kit step's)
    cross_entropy = torch.nn.functional.cross_entropy

    def step():
        h = xt
        for i, (w, b) in enumerate(ps):
            h = h @ w + b
            if i < len(ps) - 1:
                h = torch.relu(h)
        loss = cross_entropy(h, yt)
        loss.backward()
        with torch.no_grad():
            for p in flat:
                p -= LR * p.grad
                p.grad = None
        return loss.item(), views

    return step


def compiled_impls(batch=64, sizes=(784, 256, 256, 10)):
    """{"kit": the kit step with its forward compiled, "numpy": the hand-written step}."""
    x, y, params = make_data(batch, sizes)
    return {"kit": kit_step_fn(x, y, params, compiled=True),
            "numpy": numpy_step_fn(x, y, params)}


def impls(torch=None, batch=64, sizes=(784, 256, 256, 10)):
    """{name: step function} for kit, numpy and (if given) torch, from the same start."""
    x, y, params = make_data(batch, sizes)
    out = {"kit": kit_step_fn(x, y, params), "numpy": numpy_step_fn(x, y, params)}
    if torch is not None:
        out["torch"] = torch_step_fn(torch, x, y, params)
    return out
