"""Random programs run on kit.torch and on real PyTorch: the shared machinery of the differential
tests (tests/test_differential.py) and of `python -m tests.differential N`, which tries N programs
and prints every difference.

A program makes a few leaves (dtypes, shapes and edge values drawn at random), applies a sequence
of ops spelt the same way in both libraries, then asks for the gradients of a sum of every
floating result. The outcome compared is, for every value made, its dtype, requires_grad flag and
numbers, then the gradients; or, when a step raises, the step and the exception's class.
"""

from __future__ import annotations

import sys

import numpy as np

DTYPES = ["float32", "float64", "int64", "bool"]
SHAPES = [(), (3,), (2, 3), (1, 3)]
EDGES = [0.0, -1.0, 0.5, 2.0, -0.0]  # inf and nan are added by the nan=True programs

UNARY = ["exp", "log", "sqrt", "abs", "neg", "tanh", "sigmoid", "relu", "sign", "sin", "cos",
         "square", "floor_sum"]
BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "lt", "ge"]
OTHER = ["sum0", "mean", "amax", "logsumexp", "reshape", "t", "unsqueeze", "index0", "softmax",
         "where", "clamp", "expand"]


def _unary(lib, name, x):
    if name == "relu":
        return lib.relu(x)
    if name == "square":
        return x * x
    if name == "floor_sum":
        return x.sum()
    return getattr(lib, name)(x)


def _other(lib, name, x, y):
    if name == "sum0":
        return x.sum(0) if x.dim() else x.sum()
    if name == "mean":
        return x.mean()
    if name == "amax":
        return x.max()
    if name == "logsumexp":
        return lib.logsumexp(x, dim=-1) if x.dim() else lib.logsumexp(x, dim=0)
    if name == "reshape":
        return x.reshape(-1)
    if name == "t":
        return x.t() if x.dim() <= 2 else x
    if name == "unsqueeze":
        return x.unsqueeze(0)
    if name == "index0":
        return x[0]
    if name == "softmax":
        return lib.softmax(x, dim=-1) if x.dim() else lib.softmax(x, dim=0)
    if name == "where":
        return lib.where(x > 0, x, y)
    if name == "clamp":
        return lib.clamp(x, min=-0.5, max=1.5)
    if name == "expand":
        return x.expand(2, *x.shape)
    raise KeyError(name)


def make_program(rng, n_steps=4, nan=False):
    """A program as plain data: leaves (dtype, shape, values, requires_grad) and steps."""
    edges = EDGES + ([float("inf"), float("nan")] if nan else [])
    leaves = []
    for _ in range(int(rng.integers(1, 4))):
        dtype = DTYPES[int(rng.integers(len(DTYPES)))]
        shape = SHAPES[int(rng.integers(len(SHAPES)))]
        size = int(np.prod(shape))
        pool = rng.choice(edges + list(rng.uniform(-2, 2, 4)), size=size).tolist()
        if dtype == "int64":
            pool = [int(np.clip(np.nan_to_num(v), -3, 3)) for v in pool]
        elif dtype == "bool":
            pool = [bool(v) for v in pool]
        leaves.append((dtype, shape, pool, dtype.startswith("float") and bool(rng.integers(2))))
    steps = []
    for _ in range(n_steps):
        kind = int(rng.integers(3))
        names = (UNARY, BINARY, OTHER)[kind]
        steps.append((kind, names[int(rng.integers(len(names)))], int(rng.integers(100)),
                      int(rng.integers(100))))
    return leaves, steps


def run(lib, program, transform=None, order=1):
    """The outcome of `program` on `lib` (kit.torch or torch). `transform` wraps the function
    that applies the steps to the leaves (kit.compile, say); `order=2` adds the gradients of
    the sum of the gradients."""
    leaves, steps = program
    pool = [lib.tensor(np.array(values, dtype=dtype).reshape(shape), requires_grad=rg)
            for dtype, shape, values, rg in leaves]

    def apply(*leaves):
        return _apply(lib, steps, list(leaves))

    outs, raised = (apply if transform is None else transform(apply))(*pool)
    pool += outs
    made = [_describe(out) for out in outs]
    if raised is not None:
        return made + [raised]
    floats = [t for t in pool if t.dtype in (lib.float32, lib.float64) and t.requires_grad]
    wrt = [t for t in pool[:len(leaves)] if t.requires_grad]
    if floats and wrt:
        loss = sum(t.double().sum() for t in floats)
        try:
            grads = lib.autograd.grad(loss, wrt, allow_unused=True, create_graph=order > 1)
            made += [None if g is None else _describe(g) for g in grads]
            if order > 1 and any(g is not None and g.requires_grad for g in grads):
                total = sum(g.double().sum() for g in grads if g is not None and g.requires_grad)
                second = lib.autograd.grad(total, wrt, allow_unused=True)
                made += [None if g is None else _describe(g) for g in second]
        except Exception as exc:  # noqa: BLE001
            return made + [("raised", "grad", _error_class(exc))]
    return made


def _apply(lib, steps, pool):
    """The program's steps on `pool` (its leaves): (the values made, the failure or None)."""
    made = []
    for i, (kind, name, a, b) in enumerate(steps):
        x, y = pool[a % len(pool)], pool[b % len(pool)]
        try:
            if kind == 0:
                out = _unary(lib, name, x)
            elif kind == 1:
                out = getattr(lib, name)(x, y)
            else:
                out = _other(lib, name, x, y)
        except Exception as exc:  # noqa: BLE001 - the class is the outcome
            return made, ("raised", i, _error_class(exc))
        pool.append(out)
        made.append(out)
    return made, None


def _error_class(exc):
    """The built-in class an exception is (kit's own classes derive from PyTorch's)."""
    # NOTE: RuntimeError before TypeError/ValueError: kit's DtypeError and ShapeError are both
    # (PyTorch raises the RuntimeError), NotImplementedError first (a RuntimeError subclass).
    for cls in (IndexError, NotImplementedError, RuntimeError, TypeError, ValueError):
        if isinstance(exc, cls):
            return cls.__name__
    return type(exc).__name__


def _describe(t):
    data = np.asarray(t.detach().numpy(), dtype=np.float64)
    return (str(t.dtype).replace("torch.", ""), bool(t.requires_grad), data.shape,
            data.tolist())


def same(a, b):
    """Outcomes equal: dtypes, flags, shapes and error classes exactly, numbers to rounding."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x is None or y is None or x[0] == "raised" or y[0] == "raised":
            if x != y:
                return False
            continue
        if x[:3] != y[:3]:
            return False
        if not np.allclose(np.asarray(x[3], dtype=float), np.asarray(y[3], dtype=float),
                           rtol=1e-5, atol=1e-6, equal_nan=True):
            return False
    return True


def main(n):
    import torch

    import kit.torch

    differences = 0
    for seed in range(n):
        program = make_program(np.random.default_rng(seed), nan=seed % 2 == 1)
        ours, theirs = run(kit.torch, program), run(torch, program)
        if not same(ours, theirs):
            differences += 1
            print(f"seed {seed}: {program}\n  kit:     {ours}\n  pytorch: {theirs}")
    print(f"{n} programs, {differences} differences")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
