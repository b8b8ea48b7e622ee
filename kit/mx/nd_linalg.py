"""`mx.nd.linalg`: MXNet's BLAS/LAPACK-style operators on the last two axes, batched over the rest.

All are composites of kit ops (matmul, indexing, cat, sqrt), so their gradients come from kit's
engine. Cholesky (`potrf`) and the triangular solve (`trsm`) are written as column / row
substitution loops: O(n) recorded steps, meant for the small matrices of lessons and custom ops.
As in MXNet, `potrf` and `trsm` read only the triangle they are told about.
"""

from __future__ import annotations

import numpy as np

import kit
from kit import ops
from kit.mx._ndutil import tensor_of
from kit.mx.base import error, run
from kit.mx.ndarray import NDArray, wrap

__all__ = ["gemm", "gemm2", "potrf", "potri", "sumlogdiag", "syrk", "trmm", "trsm"]


def _matrix(data, op, name="A"):
    t = tensor_of(data, f"linalg.{op}")
    if t.ndim < 2:
        raise error(ValueError, (
            f"mx.nd.linalg.{op}: {name} must have at least 2 dimensions (a matrix, or a batch of "
            f"them on the last two axes), got shape {t.shape}"
        ))
    return t


def _square(data, op, name="A"):
    t = _matrix(data, op, name)
    if t.shape[-1] != t.shape[-2]:
        raise error(ValueError, (
            f"mx.nd.linalg.{op}: {name} must be square on its last two axes, got shape {t.shape}"
        ))
    return t


def _check_axis(axis, op):
    if axis not in (-2, None):
        raise ValueError(
            f"mx.nd.linalg.{op}: kit.mx supports axis=-2 only (matrices on the last two axes); "
            f"move the axes first, e.g. with mx.nd.transpose"
        )


def _t(x):
    return ops.transpose(x, -2, -1)


def _product(a, b, transpose_a, transpose_b, op):
    a = _t(a) if transpose_a else a
    b = _t(b) if transpose_b else b
    if a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2]:
        raise error(ValueError, (
            f"mx.nd.linalg.{op}: cannot multiply op(A) of shape {a.shape} by op(B) of shape "
            f"{b.shape} (transpose_a={transpose_a}, transpose_b={transpose_b}): the batch axes "
            f"must agree and op(A)'s columns must equal op(B)'s rows"
        ))
    return ops.matmul(a, b)


def gemm2(A, B, transpose_a=False, transpose_b=False, alpha=1.0, axis=-2):  # noqa: N803
    """alpha * op(A) @ op(B), batched over the leading axes.

    >>> import kit.mx as mx
    >>> mx.nd.linalg.gemm2(mx.nd.ones((2, 3)), mx.nd.ones((3, 1)), alpha=2).asnumpy()
    array([[6.],
           [6.]], dtype=float32)
    """
    _check_axis(axis, "gemm2")
    a, b = _matrix(A, "gemm2"), _matrix(B, "gemm2", "B")
    return wrap(run(lambda a, b: _product(a, b, transpose_a, transpose_b, "gemm2") * alpha, a, b))


def gemm(A, B, C, transpose_a=False, transpose_b=False, alpha=1.0, beta=1.0, axis=-2):  # noqa: N803
    """alpha * op(A) @ op(B) + beta * C."""
    _check_axis(axis, "gemm")
    a, b, c = _matrix(A, "gemm"), _matrix(B, "gemm", "B"), _matrix(C, "gemm", "C")

    def compute(a, b, c):
        ab = _product(a, b, transpose_a, transpose_b, "gemm")
        if ab.shape != c.shape:
            raise error(ValueError, (
                f"mx.nd.linalg.gemm: op(A) @ op(B) has shape {ab.shape} but C has shape "
                f"{c.shape}; they must be equal"
            ))
        return ab * alpha + c * beta

    return wrap(run(compute, a, b, c))


def _zeros(like, shape):
    return kit.zeros(shape, dtype=like.dtype, device=like.device)


def _cholesky(a):
    n, batch = a.shape[-1], a.shape[:-2]
    columns = []  # column j of L, shape batch + (n,), zero above the diagonal
    for j in range(n):
        pivot = a[..., j, j]
        below = a[..., j + 1:, j]
        if j:
            row = ops.stack([c[..., j] for c in columns], -1)  # L[j, :j]
            pivot = pivot - ops.sum(row * row, -1)
            if j + 1 < n:
                left = ops.stack([c[..., j + 1:] for c in columns], -1)  # L[j+1:, :j]
                below = below - ops.squeeze(ops.matmul(left, ops.unsqueeze(row, -1)), -1)
        bad = NDArray(pivot.detach()).asnumpy() <= 0
        if bad.any():
            raise error(np.linalg.LinAlgError, (
                f"mx.nd.linalg.potrf: the matrix is not symmetric positive definite (pivot {j} is "
                f"{NDArray(pivot.detach()).asnumpy()[bad].reshape(-1)[0]:g} <= 0), so it has no "
                f"Cholesky factor. Fix: pass A @ A.T + eps * I, or check the input"
            ))
        diagonal = ops.sqrt(pivot)
        parts = [_zeros(a, batch + (j,)), ops.unsqueeze(diagonal, -1)]
        if j + 1 < n:
            parts.append(below / ops.unsqueeze(diagonal, -1))
        columns.append(ops.cat(parts, -1))
    return ops.stack(columns, -1)


def potrf(A):  # noqa: N803 - MXNet's argument names
    """The lower Cholesky factor L of a symmetric positive definite A (A = L @ L.T); only A's
    lower triangle is read.

    >>> import kit.mx as mx
    >>> mx.nd.linalg.potrf(mx.nd.array([[4, 2], [2, 5]])).asnumpy()
    array([[2., 0.],
           [1., 2.]], dtype=float32)
    """
    return wrap(run(_cholesky, _square(A, "potrf")))


def _solve(m, b, lower):
    """Y with m @ Y = b for triangular m, by substitution (reads only m's triangle)."""
    n = m.shape[-1]
    rows = {}
    for i in range(n) if lower else range(n - 1, -1, -1):
        lo, hi = (0, i) if lower else (i + 1, n)
        r = b[..., i:i + 1, :]
        if hi > lo:
            known = ops.cat([rows[k] for k in range(lo, hi)], -2)
            r = r - ops.matmul(m[..., i:i + 1, lo:hi], known)
        rows[i] = r / m[..., i:i + 1, i:i + 1]
    return ops.cat([rows[i] for i in range(n)], -2)


def _check_sides(a, b, rightside, op):
    n = a.shape[-1]
    k = b.shape[-1] if rightside else b.shape[-2]
    if a.shape[:-2] != b.shape[:-2] or k != n:
        side = "columns" if rightside else "rows"
        raise error(ValueError, (
            f"mx.nd.linalg.{op}: A has shape {a.shape} and B has shape {b.shape}; with "
            f"rightside={rightside} B's {side} must number {n} and the batch axes must agree"
        ))


def trsm(A, B, transpose=False, rightside=False, lower=True, alpha=1.0):  # noqa: N803
    """X solving op(A) @ X = alpha * B (or X @ op(A) = alpha * B with rightside=True), for A
    triangular (its lower triangle, or its upper one with lower=False).

    >>> import kit.mx as mx
    >>> mx.nd.linalg.trsm(mx.nd.array([[2, 0], [1, 1]]), mx.nd.array([[2], [3]])).asnumpy()
    array([[1.],
           [2.]], dtype=float32)
    """
    a, b = _square(A, "trsm"), _matrix(B, "trsm", "B")
    _check_sides(a, b, rightside, "trsm")

    def compute(a, b):
        m = _t(a) if transpose else a
        lower_m = bool(lower) != bool(transpose)
        if rightside:  # X @ m = alpha * B  <=>  m.T @ X.T = alpha * B.T
            return _t(_solve(_t(m), _t(b) * alpha, not lower_m))
        return _solve(m, b * alpha, lower_m)

    return wrap(run(compute, a, b))


def _triangle(a, lower):
    n = a.shape[-1]
    mask = np.tril(np.ones((n, n))) if lower else np.triu(np.ones((n, n)))
    return a * kit.tensor(mask.astype(a.dtype), device=a.device)


def trmm(A, B, transpose=False, rightside=False, lower=True, alpha=1.0):  # noqa: N803
    """alpha * op(A) @ B (or alpha * B @ op(A)) for A triangular (only its triangle is read)."""
    a, b = _square(A, "trmm"), _matrix(B, "trmm", "B")
    _check_sides(a, b, rightside, "trmm")

    def compute(a, b):
        m = _triangle(a, lower)
        m = _t(m) if transpose else m
        return (ops.matmul(b, m) if rightside else ops.matmul(m, b)) * alpha

    return wrap(run(compute, a, b))


def potri(A):  # noqa: N803
    """The inverse of L @ L.T from its Cholesky factor L (potrf's output)."""
    a = _square(A, "potri")

    def compute(a):
        eye = kit.tensor(np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape).copy(),
                         device=a.device)
        inverse = _solve(a, eye, True)  # L^-1
        return ops.matmul(_t(inverse), inverse)

    return wrap(run(compute, a))


def sumlogdiag(A):  # noqa: N803
    """The sum of the logarithms of A's diagonal (log det A for a triangular A), per matrix."""
    a = _square(A, "sumlogdiag")
    n = a.shape[-1]
    return wrap(run(lambda a: ops.sum(ops.log(ops.stack([a[..., i, i] for i in range(n)], -1)),
                                      -1), a))


def syrk(A, transpose=False, alpha=1.0):  # noqa: N803
    """alpha * A @ A.T (or alpha * A.T @ A with transpose=True)."""
    a = _matrix(A, "syrk")
    return wrap(run(lambda a: (ops.matmul(_t(a), a) if transpose else ops.matmul(a, _t(a)))
                    * alpha, a))
