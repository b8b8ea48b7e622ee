"""Sample inputs for every op in the registry (PyTorch's OpInfo sample inputs).

`SAMPLES[name]` lists `Sample`s for the op declared as `name` (kit/ops/_registry.py). A sample's
float arrays become float64 leaves that require grad, its other arrays constant tensors, anything
else is passed as is; `call(fn, *inputs)` says how to call the op when `fn(*inputs)` will not do.
`torch(torch, *inputs)` is the PyTorch reference when the op's kit.torch name (or its own name)
is not PyTorch's function of the same arguments; `torch=None` means there is none to compare
with. The generic tests in test_op_registry.py run every sample: gradcheck and gradgradcheck,
PyTorch, vmap against a Python loop, and the GPU. A test fails if an op has no sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from helpers import away_from

RNG = np.random.default_rng(11)


def uniform(*shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, size=shape)


def positive(a):
    return np.abs(a) + 0.3


def nonzero(a):
    return away_from(a, [0.0], gap=0.3)


def distinct(*shape):
    """Values far apart from each other: no ties, so max, sort and clamp have one derivative."""
    n = int(np.prod(shape))
    return (RNG.permutation(n) * 0.37 - n * 0.18).reshape(shape)


def F(torch):  # noqa: N802 - PyTorch's spelling, torch.nn.functional as F
    return torch.nn.functional


def _cross_entropy(torch, x, target):
    return F(torch).cross_entropy(x, target)


PYTORCH = object()  # default: the op's kit.torch name, or its own name, in PyTorch


@dataclass
class Sample:
    args: tuple
    call: object = None  # call(fn, *inputs); None: fn(*inputs)
    torch: object = PYTORCH  # torch(torch, *inputs); None: no PyTorch reference
    order: int = 2  # 2: gradgradcheck too
    rtol: float = 1e-3  # gradcheck's tolerance (finite differences in float64)


def _index(f, values):
    """A constant int64 index for a sample's call."""
    import kit

    return kit.tensor(np.array(values, dtype=np.int64))


def s(*args, call=None, torch=PYTORCH, order=2, rtol=1e-3):
    return Sample(args, call, torch, order, rtol)


A, B = uniform(2, 3), uniform(3)
M = uniform(3, 4)
D = distinct(3, 4)
V = uniform(4)
BOOL = A > 0
SPECIAL = np.where(BOOL, A, [[np.nan, np.inf, -np.inf], [1.0, np.nan, -np.inf]])
IDX = np.array([2, 0, 2])
IMAGE, POOLED = uniform(2, 2, 4, 4), distinct(1, 2, 5, 5)  # (N, C, H, W); POOLED has no ties
CONV = ((1, 1), (0, 0), (1, 1), 1)  # conv2d's (stride, padding, dilation, groups) as normalised
STRIDED = ((2, 2), (1, 1), (2, 1), 2)
INTS = np.array([[7, -7, 0], [5, -4, 9]])


def nonzero_ints(*shape):
    return RNG.choice([-3, -2, -1, 1, 2, 3], size=shape)


def _detached(f, *inputs):
    """floor_divide's gradient raises, as PyTorch's: compare its values on detached floats."""
    return f(*(t.detach() if hasattr(t, "detach") else t for t in inputs))


def _torch_detached(name):
    return lambda torch, *inputs: _detached(getattr(torch, name), *inputs)


SAMPLES = {
    # elementwise
    "add": [s(A, B), s(A, 1.5)], "sub": [s(A, B), s(2.0, A)], "mul": [s(A, B), s(A, -3.0)],
    "div": [s(A, nonzero(B)), s(1.0, nonzero(A))], "pow": [s(positive(A), B), s(A, 3.0)],
    "neg": [s(A)], "exp": [s(A)], "log": [s(positive(A))], "sqrt": [s(positive(A))],
    "log1p": [s(positive(A))], "expm1": [s(A)],
    "tanh": [s(A)], "sigmoid": [s(A)], "abs": [s(nonzero(A))], "sin": [s(A)], "cos": [s(A)],
    "maximum": [s(D[:2, :3], A)], "minimum": [s(D[:2, :3], A)],
    "where": [s(BOOL, A, B)],
    "clamp": [s(D, call=lambda f, x: f(x, -1.5, 1.2),
                torch=lambda torch, x: torch.clamp(x, -1.5, 1.2)),
              s(D, np.array([-1.2, -0.5, -0.9, -1.6]), np.array([[1.0], [0.6], [1.3]]))],
    "eq": [s(A, A * BOOL)], "ne": [s(A, A * BOOL)], "lt": [s(A, B)], "le": [s(A, B)],
    "gt": [s(A, B)], "ge": [s(A, B)],
    "sign": [s(A)], "round": [s(A)],
    "isnan": [s(SPECIAL)], "isinf": [s(SPECIAL)], "isfinite": [s(SPECIAL)],
    # reductions
    "sum": [s(A), s(M, 1, True)], "mean": [s(A), s(M, (0, 1), False)],
    "max": [s(D), s(D, 1, False)], "min": [s(D), s(D, 0, True)],
    "logsumexp": [s(M, 1, False)],
    "sum_to_size": [s(M, 1, 4, torch=lambda torch, x, *size: x.sum_to_size(*size)),
                    s(uniform(2, 3, 4), (3, 1), torch=lambda torch, x, size: x.sum_to_size(size))],
    "argmax": [s(D, 1, False)], "argmin": [s(D, 0, True)],
    # linear algebra
    "matmul": [s(A, M), s(V, uniform(4, 2)), s(uniform(2, 3, 4), V)], "mm": [s(A, M)],
    "dot": [s(V, uniform(4))], "outer": [s(B, V)],
    # movement
    "reshape": [s(M, 2, 6, torch=lambda torch, x, *shape: x.reshape(*shape)), s(M, (-1,))],
    "permute": [s(uniform(2, 3, 4), 2, 0, 1, torch=lambda torch, x, *dims: x.permute(*dims))],
    "transpose": [s(uniform(2, 3, 4), 0, 2)],
    "movedim": [s(uniform(2, 3, 4), 0, -1)], "unsqueeze": [s(A, 1)],
    "squeeze": [s(uniform(2, 1, 3), 1)], "flatten": [s(uniform(2, 3, 2))],
    "expand": [s(uniform(3, 1), 3, 4, torch=lambda torch, x, *shape: x.expand(*shape))],
    "broadcast_to": [s(B, (2, 3), torch=lambda torch, x, shape: x.broadcast_to(shape))],
    "getitem": [s(M, call=lambda f, x: f(x, (slice(0, 2), 1)),
                  torch=lambda torch, x: x[0:2, 1]),
                s(M, IDX, torch=lambda torch, x, i: x[i]),
                s(M, M > 0, torch=lambda torch, x, mask: x[mask])],
    "index_put_add": [s(B, call=lambda f, x: f(x, np.array([1, 1, 3]), (5,)), torch=None)],
    "index_put": [s(M, V, call=lambda f, x, v: f(x, 1, v), torch=None)],
    "cat": [s(A, uniform(2, 2), call=lambda f, a, b: f([a, b], 1),
              torch=lambda torch, a, b: torch.cat([a, b], 1))],
    "stack": [s(A, uniform(2, 3), call=lambda f, a, b: f([a, b], 1),
                torch=lambda torch, a, b: torch.stack([a, b], 1))],
    "astype": [s(A, call=lambda f, x: f(x, np.float32), order=1, rtol=0.05, torch=None)],
    "to": [s(A, call=lambda f, x: f(x, "cpu"), torch=lambda torch, x: x.to("cpu"))],
    "clone": [s(M)],
    # views (kit/ops/view_ops.py)
    "view": [s(M, 2, 6, torch=lambda torch, x, *shape: x.view(*shape))],
    "view_as": [s(M, uniform(2, 6), torch=lambda torch, x, y: x.view_as(y))],
    "narrow": [s(M, 1, 1, 2)],
    "unbind": [s(M, 1), s(V)],
    "split": [s(M, [1, 3], 1), s(M, 2)],
    "chunk": [s(M, call=lambda f, x: f(x, 2, 1)[0],
                torch=lambda torch, x: torch.chunk(x, 2, 1)[0])],
    "diagonal": [s(M, 1), s(uniform(2, 3, 3), 0, 1, 2)],
    # kit/ops/extra.py
    "masked_fill": [s(M, M > 0, call=lambda f, x, m: f(x, m, 0.5),
                      torch=lambda torch, x, m: x.masked_fill(m, 0.5))],
    "prod": [s(positive(A)), s(positive(M), 1)],
    "all": [s(BOOL), s(BOOL, 1)], "any": [s(BOOL), s(BOOL, 0)],
    "norm": [s(A), s(M, call=lambda f, x: f(x, 1, 1), torch=lambda torch, x: torch.norm(x, 1, 1)),
             s(D, call=lambda f, x: f(x, float("inf"), 1),
               torch=lambda torch, x: torch.norm(x, float("inf"), 1))],
    "cumsum": [s(M, 1)],
    "var": [s(M, 1)], "std": [s(M, 1)],
    # their primitives, as the public ops call them (axes, keepdims, correction, whole)
    "product": [s(positive(A), call=lambda f, x: f(x, None, False),
                  torch=lambda torch, x: torch.prod(x)),
                s(positive(M), call=lambda f, x: f(x, 1, True),
                  torch=lambda torch, x: torch.prod(x, 1, keepdim=True))],
    "variance": [s(M, call=lambda f, x: f(x, (1,), False, 1, False),
                   torch=lambda torch, x: torch.var(x, 1)),
                 s(M, call=lambda f, x: f(x, (0, 1), True, 0, True),
                   torch=lambda torch, x: torch.var(x, correction=0).reshape(1, 1))],
    "deviation": [s(M, call=lambda f, x: f(x, (0,), False, 1, False),
                    torch=lambda torch, x: torch.std(x, 0))],
    "topk": [s(D, call=lambda f, x: f(x, 2, 1).values,
               torch=lambda torch, x: torch.topk(x, 2, 1).values)],
    "gather": [s(M, call=lambda f, x: f(x, 1, _index(f, [[0, 2], [1, 1], [3, 0]])),
                 torch=lambda torch, x: torch.gather(
                     x, 1, torch.tensor([[0, 2], [1, 1], [3, 0]])))],
    "scatter_add": [s(M, uniform(3, 2),
                      call=lambda f, x, src: f(x, 1, _index(f, [[0, 2], [1, 1], [3, 0]]), src),
                      torch=lambda torch, x, src: x.scatter_add(
                          1, torch.tensor([[0, 2], [1, 1], [3, 0]]), src))],
    "einsum": [s(A, M, call=lambda f, a, b: f("ij,jk->ik", a, b),
                 torch=lambda torch, a, b: torch.einsum("ij,jk->ik", a, b))],
    # kit/ops/norms.py: torch.linalg's norms
    "vector_norm": [s(uniform(2, 3, 4), call=lambda f, x: f(x, 3, (0, 2)),
                      torch=lambda torch, x: torch.linalg.vector_norm(x, 3, (0, 2))),
                    s(positive(M), call=lambda f, x: f(x, 0.5, 1, True),
                      torch=lambda torch, x: torch.linalg.vector_norm(x, 0.5, 1, True)),
                    s(D, call=lambda f, x: f(x, -float("inf")),
                      torch=lambda torch, x: torch.linalg.vector_norm(x, -float("inf")))],
    "matrix_norm": [s(uniform(2, 3, 4), torch=lambda torch, x: torch.linalg.matrix_norm(x)),
                    s(M, call=lambda f, x: f(x, 1),
                      torch=lambda torch, x: torch.linalg.matrix_norm(x, 1)),
                    s(uniform(3, 2, 4), call=lambda f, x: f(x, -float("inf"), (0, 2), True),
                      torch=lambda torch, x: torch.linalg.matrix_norm(
                          x, -float("inf"), (0, 2), True))],
    "linalg_norm": [s(uniform(2, 3, 2), torch=lambda torch, x: torch.linalg.norm(x)),
                    s(M, call=lambda f, x: f(x, float("inf")),
                      torch=lambda torch, x: torch.linalg.norm(x, float("inf"))),
                    s(M, call=lambda f, x: f(x, 3, 0),
                      torch=lambda torch, x: torch.linalg.norm(x, 3, 0))],
    # sorting
    "argsort": [s(D, 1, False), s(D, 0, True)],
    "sort": [s(D, 1, False), s(D, 0, True)],
    "index_add": [s(M, uniform(3, 2), call=lambda f, x, src: f(x, 1, np.array([3, 0]), src),
                    torch=lambda torch, x, src: x.index_add(1, torch.tensor([3, 0]), src))],
    # composites and losses
    "relu": [s(nonzero(A))], "softmax": [s(M, 1)], "log_softmax": [s(M, 0)],
    "cross_entropy": [s(M, np.array([0, 3, 1]), torch=_cross_entropy),
                      s(M, uniform(3, 4) ** 2, torch=_cross_entropy)],
    "mse_loss": [s(A, uniform(2, 3), torch=lambda torch, x, t: F(torch).mse_loss(x, t))],
    # the module layer's primitives (kit/ops/nn.py, kit/ops/conv.py)
    "erf": [s(A)],
    "linear": [s(uniform(2, 4), M, B, torch=lambda torch, x, w, b: F(torch).linear(x, w, b)),
               s(V, M, torch=lambda torch, x, w: F(torch).linear(x, w))],
    "conv2d": [s(IMAGE, uniform(3, 2, 3, 3), B),
               s(uniform(1, 4, 5, 5), uniform(4, 2, 2, 2),
                 call=lambda f, x, w: f(x, w, None, 2, 1, (2, 1), 2),
                 torch=lambda torch, x, w: torch.conv2d(x, w, None, 2, 1, (2, 1), 2))],
    "conv2d_input_grad": [
        s(uniform(2, 3, 2, 2), uniform(3, 2, 3, 3),
          call=lambda f, g, w: f(g, w, IMAGE.shape, CONV),
          torch=lambda torch, g, w: torch.nn.grad.conv2d_input(IMAGE.shape, w, g)),
        s(uniform(1, 4, 3, 3), uniform(4, 2, 2, 2),
          call=lambda f, g, w: f(g, w, (1, 4, 5, 5), STRIDED),
          torch=lambda torch, g, w: torch.nn.grad.conv2d_input((1, 4, 5, 5), w, g, *STRIDED))],
    "conv2d_weight_grad": [
        s(IMAGE, uniform(2, 3, 2, 2), call=lambda f, x, g: f(x, g, (3, 2, 3, 3), CONV),
          torch=lambda torch, x, g: torch.nn.grad.conv2d_weight(x, (3, 2, 3, 3), g)),
        s(uniform(1, 4, 5, 5), uniform(1, 4, 3, 3),
          call=lambda f, x, g: f(x, g, (4, 2, 2, 2), STRIDED),
          torch=lambda torch, x, g: torch.nn.grad.conv2d_weight(x, (4, 2, 2, 2), g, *STRIDED))],
    "max_pool2d": [s(POOLED, call=lambda f, x: f(x, 2),
                     torch=lambda torch, x: F(torch).max_pool2d(x, 2)),
                   s(POOLED, call=lambda f, x: f(x, 3, 2, 1, 1, False, True),
                     torch=lambda torch, x: F(torch).max_pool2d(x, 3, 2, 1, 1, False, True))],
    # issue 11: PyTorch's edges (amax/amin, msort, kit/ops/bitwise.py)
    "amax": [s(D, torch=lambda torch, x: torch.amax(x)), s(D, (0, 1), True)],
    "amin": [s(D, 0, False), s(uniform(2, 3, 2), (0, -1), True)],
    "msort": [s(D)],
    "floor_divide": [s(INTS, nonzero_ints(3)), s(uniform(2, 3), 0.7, call=_detached,
                                                  torch=_torch_detached("floor_divide"))],
    "remainder": [s(A, nonzero(B)), s(INTS, -3)],
    "fmod": [s(A, nonzero(B)), s(INTS, nonzero_ints(3))],
    "bitwise_and": [s(INTS, INTS[:1])], "bitwise_or": [s(INTS, 6)],
    "bitwise_xor": [s(BOOL, B > 0)], "bitwise_not": [s(INTS), s(BOOL)],
    "bitwise_left_shift": [s(INTS, np.array([0, 1, 3]))],
    "bitwise_right_shift": [s(-INTS, 1)],
    "logical_and": [s(BOOL, B > 0)], "logical_or": [s(A, INTS)],
    "logical_xor": [s(BOOL, B)], "logical_not": [s(BOOL), s(A * BOOL)],
}

def ints(a):
    return np.round(a * 3).astype(np.int64)


def nonzero_int(a):
    return np.where(ints(a) == 0, 2, ints(a))


# Binary broadcasting ops: the domain of each operand for the broadcast grid (default: any).
BROADCAST_DOMAINS = {
    "div": (None, nonzero), "pow": (positive, None), "remainder": (None, nonzero),
    "fmod": (None, nonzero), "floor_divide": (ints, nonzero_int),
    "bitwise_left_shift": (ints, lambda a: np.abs(ints(a))), "bitwise_right_shift": (ints, ints),
    **{f"bitwise_{op}": (ints, ints) for op in ("and", "or", "xor")},
}
BROADCAST_SHAPES = [((), ()), ((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 3)),
                    ((4, 1, 3), (2, 1)), ((1,), (2, 2))]

# The ops added so that real programs run (issue 12), with samples in a file of their own.
from op_samples_more import NO_VMAP, NOT_DIFFERENTIABLE, SAMPLES_MORE  # noqa: E402, F401

SAMPLES.update(SAMPLES_MORE)
# The Tensor methods and torch functions added for PyTorch programs, likewise.
from op_samples_methods import (  # noqa: E402
    BROADCAST_DOMAINS_METHODS,
    NO_VMAP_METHODS,
    SAMPLES_METHODS,
)

SAMPLES.update(SAMPLES_METHODS)
NO_VMAP |= NO_VMAP_METHODS
BROADCAST_DOMAINS.update(BROADCAST_DOMAINS_METHODS)
