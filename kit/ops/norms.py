"""Norms: `norm` (torch.norm, Tensor.norm) and torch.linalg's `vector_norm`, `matrix_norm` and
`norm`, as composites (no gradient code: they differentiate, batch and run on the GPU through
their primitives).

NOTE: at a zero the p-norm's derivative is undefined (sqrt(s) has an infinite slope at s = 0,
|x|^p too for p < 1), and the plain chain rule gives inf * 0 = NaN; PyTorch's norms give 0
there. So the root (and |x|^p for 0 < p < 1) is taken of a safe value where the argument is 0
and then replaced by 0 with `where`: where's gradient sends nothing to the branch it discarded,
so the gradient at a zero is 0, and the same everywhere else.
"""

from __future__ import annotations

import math

from kit.ops._registry import composite
from kit.ops.elementwise import abs as abs_
from kit.ops.elementwise import isnan, ne, where
from kit.ops.extra import any as any_
from kit.ops.extra import require_floating, safe_root
from kit.ops.movement import astype, reshape
from kit.ops.reductions import all_if_none, amax, amin, normalize_axis
from kit.ops.reductions import sum as sum_


def _abs_pow(x, p):
    """|x| ** p; for 0 < p < 1 with a zero gradient (not NaN) where x is 0."""
    a = abs_(x)
    if not 0 < p < 1:
        return a ** p
    nonzero = ne(a, 0)
    return where(nonzero, where(nonzero, a, 1.0) ** p, 0.0)


def _extreme(x, axes, keepdim, extreme, op):
    """amax or amin of x over `axes` (the gradient shared among ties, as PyTorch's inf norms);
    PyTorch's RuntimeError over an empty dim (a max of nothing has no value)."""
    for a in axes:
        if x.shape[a] == 0:
            raise RuntimeError(f"kit.{op} cannot compute the inf norm on the dimension {a} "
                               f"because this dimension is empty and the operation does not "
                               f"have an identity (as PyTorch). Fix: reduce other dims, or "
                               f"use a finite ord")
    return extreme(x, axes, keepdim)


def _largest(x, p, axes, keepdim, op):
    """The inf (or -inf) norm: amax (amin) of |x|.

    NOTE: a slice holding a NaN is NaN, and its gradient is PyTorch's, sign(x) * mask * g with
    the NaN elements as the mask: 0 (sign(NaN) is 0), or NaN where g is NaN; amax's would be NaN.
    So the extreme is taken with the NaN elements set aside, and a NaN slice is 0 * sum(|x|)
    instead (NaN, with the gradient 0 * g for each element)."""
    a = abs_(x)
    nan = isnan(a)
    out = _extreme(where(nan, 0.0 if p > 0 else math.inf, a), axes, keepdim,
                   amax if p > 0 else amin, op)
    return where(any_(nan, axes, keepdim), sum_(a, axes, keepdim) * 0, out)


def _vector(x, p, axes, keepdim, op):
    if p in (math.inf, -math.inf):
        return _largest(x, p, axes, keepdim, op)
    if p == 0:
        return sum_(astype(ne(x, 0), x.dtype), axes, keepdim)
    if p == 1:
        return sum_(abs_(x), axes, keepdim)
    if p == 2:
        return safe_root(sum_(x * x, axes, keepdim), 2)
    return safe_root(sum_(_abs_pow(x, p), axes, keepdim), p)


def _prepared(x, dtype, op):
    if dtype is not None:
        x = astype(x, dtype)
    require_floating(x, op)
    return x


@composite("vector_norm", public=False)
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002 - PyTorch's
    """torch.linalg.vector_norm: the `ord`-norm of x over `dim` (all elements if None) for any
    number ord (inf, -inf and 0 included)."""
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"kit.linalg.vector_norm: ord must be a number, got {ord!r}. Fix: "
                        f"ord=2 (the 'fro' norm of the flattened tensor)")
    x = _prepared(x, dtype, "linalg.vector_norm")
    axes = normalize_axis(all_if_none(dim), x.ndim, "linalg.vector_norm")
    return _vector(x, ord, axes, keepdim, "linalg.vector_norm")


def _matrix_dims(x, dim, op):
    if x.ndim < 2:
        raise RuntimeError(f"kit.{op}: the input tensor A must have at least 2 dimensions, got "
                           f"shape {tuple(x.shape)}")
    if isinstance(dim, int):
        raise TypeError(f"kit.{op}: dim must be a 2-tuple of ints, got the int {dim}. Fix: "
                        f"dim=(0, 1), or linalg.vector_norm for one dim")
    if len(dim) != 2:
        raise RuntimeError(f"kit.{op}: dim must be a 2-tuple, got {dim!r}")
    rows, columns = (d % x.ndim for d in dim)
    if rows == columns:
        raise RuntimeError(f"kit.{op}: dims must be different, got {tuple(dim)}")
    return rows, columns


@composite("matrix_norm", public=False)
def matrix_norm(x, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: A002
    """torch.linalg.matrix_norm over the two dims `dim`: 'fro', 1 / -1 (largest / smallest
    column sum of |x|), inf / -inf (row sums). 'nuc', 2 and -2 need singular values, which kit
    does not compute: NotImplementedError."""
    x = _prepared(x, dtype, "linalg.matrix_norm")
    rows, columns = _matrix_dims(x, dim, "linalg.matrix_norm")
    if ord == "fro":
        return _vector(x, 2, tuple(sorted((rows, columns))), keepdim, "linalg.matrix_norm")
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(f"kit.linalg.matrix_norm: ord={ord!r} needs singular values, "
                                  f"which kit does not compute. Fix: ord='fro', 1, -1, inf or "
                                  f"-inf")
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"kit.linalg.matrix_norm: Order {ord!r} not supported. Fix: "
                           f"ord='fro', 1, -1, inf or -inf")
    summed, over = (rows, columns) if abs(ord) == 1 else (columns, rows)
    sums = sum_(abs_(x), summed, True)
    out = _extreme(sums, (over,), True, amax if ord > 0 else amin, "linalg.matrix_norm")
    if keepdim:
        return out
    return reshape(out, tuple(n for i, n in enumerate(x.shape) if i not in (rows, columns)))


@composite("linalg_norm", public=False)
def linalg_norm(x, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """torch.linalg.norm: a vector norm over one dim, a matrix norm over two; with dim=None the
    2-norm of the flattened tensor (ord=None), else x must be 1-D (vector) or 2-D (matrix)."""
    if isinstance(dim, int) or (dim is not None and len(dim) == 1):
        return vector_norm(x, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    if dim is not None:
        return matrix_norm(x, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(x, 2, None, keepdim, dtype=dtype)
    if x.ndim == 1:
        return vector_norm(x, ord, None, keepdim, dtype=dtype)
    if x.ndim == 2:
        return matrix_norm(x, ord, (0, 1), keepdim, dtype=dtype)
    raise RuntimeError(f"kit.linalg.norm: if dim is not given but ord is, the input must be 1-D "
                       f"or 2-D, got {x.ndim}-D. Fix: give dim (one dim for a vector norm, two "
                       f"for a matrix norm)")


@composite("norm", methods=("norm",), torch="norm")
def norm(x, p="fro", dim=None, keepdim=False, dtype=None):
    """torch.norm: the p-norm over `dim` (all elements if None), p='fro' (2) or any number.

    >>> import kit
    >>> kit.tensor([3., 4.]).norm()
    tensor(5.)
    """
    if p == "fro" or p is None:
        p = 2
    elif isinstance(p, str):
        raise NotImplementedError(f"kit.norm: p={p!r} is not implemented ('nuc' needs singular "
                                  f"values). Fix: p='fro', a number, or float('inf')")
    x = _prepared(x, dtype, "norm")
    return _vector(x, p, normalize_axis(all_if_none(dim), x.ndim, "norm"), keepdim, "norm")
