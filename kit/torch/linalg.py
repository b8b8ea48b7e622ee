"""`torch.linalg` on kit's ops: the norms (kit/ops/norms.py) and the functions of square matrices
(kit/ops/square_matrices.py), with their gradients.

>>> import kit.torch as torch
>>> torch.linalg.norm(torch.tensor([[3.0, 0.0], [0.0, 4.0]]))
tensor(5.)
>>> torch.linalg.det(torch.tensor([[2.0, 1.0], [1.0, 3.0]]))
tensor(5.)
"""

import warnings

from kit.ops.norms import linalg_norm as norm
from kit.ops.norms import matrix_norm, vector_norm
from kit.ops.square_matrices import LinAlgError, det, eigh, inv, slogdet
from kit.ops.square_matrices import linalg_cholesky as cholesky
from kit.ops.square_matrices import linalg_solve as solve

__all__ = ["LinAlgError", "cholesky", "det", "eigh", "inv", "matrix_norm", "norm", "qr",
           "slogdet", "solve", "svd", "vector_norm"]

_WHAT_WORKS = ("kit.torch.linalg has det, slogdet, inv, solve, cholesky and eigh, each with "
               "gradients to second order")


def _not_differentiated(name, instead):
    def fn(*args, **kwargs):
        raise NotImplementedError(
            f"kit.torch.linalg.{name} is not implemented: kit computes no {name} whose "
            f"gradient it can give correctly. {_WHAT_WORKS}. Fix: {instead}"
        )

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "Not implemented (raises NotImplementedError naming what kit offers)."
    return fn


qr = _not_differentiated("qr", "solve least squares with solve(A.mT @ A, A.mT @ b), or "
                               "orthonormalise with cholesky: Q = A @ inv(cholesky(A.mT @ A)).mT")
svd = _not_differentiated("svd", "for a symmetric A, eigh(A) gives the same decomposition; "
                                 "singular values of any A are sqrt(eigh(A.mT @ A).eigenvalues)")


def cholesky_deprecated(input, upper=False):  # noqa: A002 - PyTorch's name
    """torch.cholesky (deprecated in PyTorch, with its warning): torch.linalg.cholesky."""
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be "
                  "removed in a future PyTorch release. (kit: use kit.torch.linalg.cholesky(A), "
                  "and .mT for upper=True)", UserWarning, stacklevel=2)
    return cholesky(input, upper=upper)
