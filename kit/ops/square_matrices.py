"""Functions of square matrices, as torch.linalg has them: det, slogdet, inv, solve, cholesky,
eigh (primitives over the last two dims, batched over the others, forward and gradient side by
side), and logdet (a composite). Every gradient rule is written with these primitives and matmul,
so second derivatives work (gradgradcheck in float64), as in PyTorch.

NOTE: the gradient of det at a singular matrix is the transposed adjugate, not det * inv(A)^T
(inv does not exist there). A first-order backward gets it from an SVD; with create_graph it is
the matrix of cofactors, each the det of a minor (O(n^5): fine for the small matrices where a
second derivative is wanted), so it differentiates again, also at singular matrices.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from kit import backend
from kit._tensor import Tensor
from kit.engine import OUTPUT, SavedOutput
from kit.ops._outputs import node_type, record_outputs
from kit.ops._record import ShapeError, record
from kit.ops._registry import composite, primitive
from kit.ops.elementwise import where, where_
from kit.ops.movement import getitem, transpose

SlogdetResult = namedtuple("linalg_slogdet", ["sign", "logabsdet"])  # torch.return_types
EighResult = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])


class LinAlgError(RuntimeError):
    """A matrix the computation cannot handle (singular, not positive-definite): a
    RuntimeError, as torch.linalg.LinAlgError."""


def _square(x, op):
    """x's array, after PyTorch's checks: a floating tensor of (batches of) square matrices."""
    if not isinstance(x, Tensor):
        raise TypeError(f"kit.linalg.{op}: expected a Tensor, got {type(x).__name__}")
    d = x._data
    if d.dtype.kind not in "fc":
        raise RuntimeError(f"kit.linalg.{op}: expected a floating point tensor as input, got "
                           f"{d.dtype} (as PyTorch). Fix: A.double() or A.float()")
    if d.ndim < 2:
        raise ShapeError(f"kit.linalg.{op}: the input tensor A must have at least 2 dimensions, "
                         f"got shape {tuple(d.shape)}")
    if d.shape[-1] != d.shape[-2]:
        raise ShapeError(f"kit.linalg.{op}: A must be batches of square matrices, but they are "
                         f"{d.shape[-2]} by {d.shape[-1]} matrices")
    return d


def _mT(v):  # noqa: N802 - PyTorch's name for the batched transpose
    return v.swapaxes(-1, -2)


def _xp(v):
    return backend.get_array_module(v)


def _inv(v, op):
    """inv for a Tensor (recorded) or an array, with kit's error for a singular matrix."""
    if isinstance(v, Tensor):
        return inv(v)
    try:
        return _xp(v).linalg.inv(v)
    except np.linalg.LinAlgError:
        raise _singular(op) from None


def _singular(op):
    return LinAlgError(f"kit.linalg.{op}: the input matrix is singular (as PyTorch: the "
                       f"inversion could not be completed). Fix: check the matrix's rank, add a "
                       f"small multiple of the identity, or use a least-squares method")


# --- inv ------------------------------------------------------------------------------------
def _inv_rule(node, g, y):
    return (-_mT(y) @ g @ _mT(y),)


@primitive("inv", grad=_inv_rule, saves="output", batch="matrix", methods=("inverse",),
           torch="inverse")
def inv(x):
    """The inverse of each square matrix; d(A^-1) = -A^-1 dA A^-1."""
    d = _square(x, "inv")
    return record("inv", _inv_rule, _inv(d, "inv"), (x,), (OUTPUT,))


# --- det and slogdet --------------------------------------------------------------------------
def _cofactors(a):
    """The matrix of cofactors of each matrix of the Tensor a (cof_ij = (-1)^(i+j) times the
    det of a without row i and column j), built from det: differentiable again."""
    n = a.shape[-1]
    keep = np.array([[k for k in range(n) if k != i] for i in range(n)], dtype=np.int64)
    keep = keep.reshape(n, n - 1)
    rows = keep[:, None, :, None]  # (row i removed, -, minor row, -)
    cols = keep[None, :, None, :]  # (-, column j removed, -, minor column)
    device = a.device
    index = (Ellipsis, backend.to_device(np.broadcast_to(rows, (n, n, n - 1, n - 1)), device),
             backend.to_device(np.broadcast_to(cols, (n, n, n - 1, n - 1)), device))
    minors = getitem(a, index)  # (..., n, n, n - 1, n - 1)
    signs = backend.to_device((-1.0) ** np.add.outer(np.arange(n), np.arange(n)), device)
    return det(minors) * Tensor(signs.astype(a.dtype))


def _adjugate_t(a):
    """The transposed adjugate of each matrix of the array a, from its SVD (defined at singular
    matrices too): det(U) det(V) U diag(prod of the other singular values) V^T."""
    xp = _xp(a)
    u, s, vt = xp.linalg.svd(a)
    alone = xp.eye(s.shape[-1], dtype=bool)
    others = xp.where(alone, 1, s[..., None, :]).prod(-1)  # for each i, the product of s_j, j != i
    sign = xp.linalg.det(u) * xp.linalg.det(vt)
    return sign[..., None, None] * (u * others[..., None, :]) @ vt


def _det_rule(node, g, a):
    g = g[..., None, None]
    if isinstance(a, Tensor):
        return (g * _cofactors(a),)
    return (g * _adjugate_t(a),)


@primitive("det", grad=_det_rule, saves="x", batch="matrix", methods=("det",),
           torch="det")
def det(x):
    """The determinant of each square matrix (1 for a 0x0 matrix)."""
    d = _square(x, "det")
    return record("det", _det_rule, _xp(d).linalg.det(d), (x,), (x,))


def _slogdet_rule(node, g_sign, g, a):
    # NOTE: the sign is piecewise constant: no gradient (PyTorch records it too, with none)
    if g is None:
        return (None,)
    return (g[..., None, None] * _mT(_inv(a, "slogdet")),)


_SLOGDET = node_type("slogdet")


@primitive("slogdet", grad=_slogdet_rule, saves="x", batch="matrix", methods=("slogdet",),
           torch="slogdet")
def slogdet(x):
    """(sign, log|det|) of each square matrix: the log-determinant without overflow; its
    gradient is inv(A)^T times the incoming gradient of logabsdet."""
    d = _square(x, "slogdet")
    sign, logabsdet = _xp(d).linalg.slogdet(d)
    return SlogdetResult(*record_outputs(_SLOGDET, "slogdet", _slogdet_rule, (sign, logabsdet),
                                         (x,), (x,)))


@composite("logdet", methods=("logdet",), torch="logdet")
def logdet(x):
    """log(det(A)): NaN where det < 0, -inf where it is 0 (as torch.logdet)."""
    sign, logabsdet = slogdet(x)
    return where(sign < 0, float("nan"), logabsdet)


# --- solve ------------------------------------------------------------------------------------
def _solve_rule(node, g, a, x):
    # NOTE: A X = B, so dB gives A^-1 dB, and dA gives -A^-1 dA X: the gradient of B is the
    # solve of A^T with g, that of A minus that times X^T (a vector B was made a column first).
    need = node.next_functions
    vector = node.params
    if vector:
        g = g[..., None]
    gb = _solve(_mT(a), g)
    ga = -gb @ _mT(x[..., None] if vector else x) if need[0] else None
    return ga, (gb[..., 0] if vector else gb) if need[1] else None


def _solve(a, b):
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return solve(a, b)
    try:
        return _xp(a).linalg.solve(a, b)
    except np.linalg.LinAlgError:
        raise _singular("solve") from None


@primitive("solve", grad=_solve_rule, saves="a, output", batch="solve")
def solve(a, b):
    """X with A X = B for square A (batched, broadcasting); B is a vector when it is 1-D, or
    when its shape is A's without the last dim (as torch.linalg.solve)."""
    d = _square(a, "solve")
    if not isinstance(b, Tensor):
        raise TypeError(f"kit.linalg.solve: B must be a Tensor, got {type(b).__name__}")
    y = b._data
    if y.dtype != d.dtype:
        raise RuntimeError(f"kit.linalg.solve: expected A and B to have the same dtype, but "
                           f"found {d.dtype} and {y.dtype}. Fix: B.to(A.dtype)")
    vector = y.ndim == 1 or (y.ndim == d.ndim - 1 and y.shape == d.shape[:-1])
    column = y[..., None] if vector else y
    if column.shape[-2] != d.shape[-1]:
        raise ShapeError(f"kit.linalg.solve: incompatible shapes of A and B for the equation "
                         f"AX = B ({d.shape[-2]}x{d.shape[-1]} and {column.shape[-2]}x"
                         f"{column.shape[-1]})")
    try:
        out = _solve(d, column)
    except ValueError:  # NumPy's broadcasting of the batch dims
        raise ShapeError(f"kit.linalg.solve: the batch dims of A {tuple(d.shape[:-2])} and B "
                         f"{tuple(column.shape[:-2])} do not broadcast") from None
    return record("solve", _solve_rule, out[..., 0] if vector else out, (a, b), (a, OUTPUT),
                  vector)


@composite("linalg_solve", public=False)
def linalg_solve(a, b, *, left=True):
    """torch.linalg.solve: X with A X = B (left=True) or X A = B (left=False)."""
    if left:
        return solve(a, b)
    return transpose(solve(transpose(a, -2, -1), transpose(b, -2, -1)), -2, -1)


# --- cholesky ---------------------------------------------------------------------------------
def _tril(v, k=0):
    if isinstance(v, Tensor):
        from kit.ops.rearrange import tril

        return tril(v, k)
    return _xp(v).tril(v, k)


def _cholesky_rule(node, g, low):
    # NOTE: PyTorch's rule: with P = tril(L^T gL) made symmetric (diagonal halved), the
    # gradient is L^-T P L^-1, a symmetric matrix (A is read from its lower triangle only).
    p = _tril(_mT(low) @ g)
    p = 0.5 * (p + _mT(_tril(p, -1)))
    return (_mT(_solve(_mT(low), _mT(_solve(_mT(low), p)))),)


@primitive("cholesky", grad=_cholesky_rule, saves="output", batch="matrix")
def cholesky(x):
    """The lower-triangular L with L L^T = A, for symmetric positive-definite A (read from its
    lower triangle, as torch.linalg.cholesky)."""
    d = _square(x, "cholesky")
    try:
        out = _xp(d).linalg.cholesky(d)
    except np.linalg.LinAlgError:
        raise LinAlgError("kit.linalg.cholesky: the factorization could not be completed "
                          "because the input is not positive-definite (as PyTorch). Fix: check "
                          "that A is symmetric positive-definite, e.g. A = B @ B.mT + eps * I")\
            from None
    return record("cholesky", _cholesky_rule, out, (x,), (OUTPUT,))


@composite("linalg_cholesky", public=False)
def linalg_cholesky(x, *, upper=False):
    """torch.linalg.cholesky: L (or, with upper=True, U = L^T, A = U^T U)."""
    low = cholesky(x)
    return transpose(low, -2, -1) if upper else low


# --- eigh -------------------------------------------------------------------------------------
def _eigh_rule(node, g_values, g_vectors, w, v):
    # NOTE: as PyTorch's: V (diag(gw) + skew(V^T gV) / E) V^T with E_ij = w_j - w_i off the
    # diagonal, a symmetric matrix. Equal eigenvalues give inf or NaN there, as in PyTorch.
    n = w.shape[-1]
    inner = 0
    if g_vectors is not None:
        vtg = _mT(v) @ g_vectors
        off = backend.to_device(~np.eye(n, dtype=bool),
                                w.device if isinstance(w, Tensor) else backend.device_of(w))
        gap = w[..., None, :] - w[..., :, None]
        inner = where_(off, 0.5 * (vtg - _mT(vtg)) / where_(off, gap, 1), 0)
    if g_values is not None:
        inner = inner + _diag_embed(g_values)
    return (v @ inner @ _mT(v),)


def _diag_embed(v):
    if isinstance(v, Tensor):
        from kit.ops.rearrange import diag_embed

        return diag_embed(v)
    n = v.shape[-1]
    out = _xp(v).zeros(v.shape + (n,), v.dtype)
    out[..., np.arange(n), np.arange(n)] = v
    return out


_EIGH = node_type("eigh")  # LinalgEighBackward0 in PyTorch; EighBackward0 here


@primitive("eigh", grad=_eigh_rule, saves="output 0, output 1", batch="matrix")
def eigh(x, UPLO="L"):  # noqa: N803 - PyTorch's name
    """(eigenvalues, eigenvectors) of each symmetric matrix, the eigenvalues ascending; A is read
    from its lower triangle (UPLO='L') or upper one ('U'). Each eigenvector's sign is LAPACK's,
    as in PyTorch on the CPU (compare sign-free quantities such as V * V or V diag(w) V^T)."""
    d = _square(x, "eigh")
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"kit.linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    w, v = _xp(d).linalg.eigh(d, UPLO)
    return EighResult(*record_outputs(_EIGH, "eigh", _eigh_rule, (w, v), (x,),
                                      (SavedOutput(0), SavedOutput(1))))

