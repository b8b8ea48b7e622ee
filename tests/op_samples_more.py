"""Sample inputs for the ops added so that real programs run (issue 12's missing ops), in the
form of tests/op_samples.py, which merges them into SAMPLES.

`NOT_DIFFERENTIABLE` names ops that PyTorch records but cannot differentiate (backward raises):
the generic gradient checks skip them and tests/test_ops_math.py checks the error.
"""

from __future__ import annotations

import numpy as np
from op_samples import RNG, A, B, D, M, V, distinct, nonzero, positive, s, uniform

import kit

FRACTIONAL = np.floor(uniform(3, 4) * 3) + RNG.uniform(0.2, 0.4, size=(3, 4))  # far from .0/.5
NANS = np.array([[np.nan, 1.5, -0.5], [2.0, np.nan, 3.0]])
SPECIAL = np.array([[np.nan, 1.5, np.inf], [-np.inf, -0.5, 2.0]])
STEPS = np.array([[-1, 0, 2], [0, 3, -5]])

NOT_DIFFERENTIABLE = {"heaviside"}
# Ops whose result shape depends on the data: vmap refuses them (tests/test_ops_selection.py).
NO_VMAP = {"nonzero", "argwhere", "unique"}
COUNTS = np.array([[0, 1, 0, 2], [3, 0, 0, 1], [1, 1, 0, 0]])

SAMPLES_MORE = {
    # kit/ops/elementwise_math.py
    "floor": [s(FRACTIONAL)], "ceil": [s(FRACTIONAL)], "trunc": [s(FRACTIONAL - 1.5)],
    "round": [s(FRACTIONAL), s(FRACTIONAL * 0.1, call=lambda f, x: f(x, decimals=1),
                                torch=lambda torch, x: torch.round(x, decimals=1))],
    "frac": [s(FRACTIONAL - 1.5)],
    "sinh": [s(A)], "cosh": [s(A)], "atan": [s(A)],
    "asin": [s(uniform(2, 3, low=-0.9, high=0.9))], "acos": [s(uniform(2, 3, low=-0.9, high=0.9))],
    "atan2": [s(A, nonzero(B))], "hypot": [s(nonzero(A), B)],
    "log2": [s(positive(A))], "log10": [s(positive(A))], "rsqrt": [s(positive(A))],
    "reciprocal": [s(nonzero(A))], "square": [s(A)], "sgn": [s(nonzero(A))],
    "erfinv": [s(uniform(2, 3, low=-0.95, high=0.95))],
    # (the default posinf, the largest float64, would overflow compare_torch's weighted sum)
    "nan_to_num": [s(NANS), s(SPECIAL, call=lambda f, x: f(x, 0.5, 3.0, -4.0),
                     torch=lambda torch, x: torch.nan_to_num(x, 0.5, 3.0, -4.0))],
    "heaviside": [s(STEPS, np.array([7, 8, 9])), s(STEPS > 0, STEPS == 0)],
    "lerp": [s(A, uniform(2, 3), 0.3), s(A, uniform(2, 3), 0.8),
             s(A, uniform(3), uniform(2, 3, low=0, high=1))],
    "addcmul": [s(A, uniform(2, 3), B, call=lambda f, x, a, b: f(x, a, b, value=0.5),
                  torch=lambda torch, x, a, b: torch.addcmul(x, a, b, value=0.5))],
    "addcdiv": [s(A, uniform(2, 3), nonzero(B)),
                s(A, B, nonzero(uniform(2, 3)), call=lambda f, x, a, b: f(x, a, b, value=-2),
                  torch=lambda torch, x, a, b: torch.addcdiv(x, a, b, value=-2))],
    "clamp_min": [s(D, 0.3)], "clamp_max": [s(D, 0.3)],
    # kit/ops/selection.py
    "index_select": [s(M, 1, np.array([3, 0, 3])), s(M, 0, np.array([2]))],
    "masked_select": [s(M, M > 0.5), s(M, np.array([True, False, True, True]))],
    "take_along_dim": [s(M, np.array([[0], [3], [1]]), 1), s(M, np.array([[2, 0, 1, 1]]), 0),
                       s(M, np.array([5, 0, 11]))],
    "repeat_interleave": [s(M, 2), s(M, np.array([1, 0, 3]), 0),
                          s(M, call=lambda f, x: f(x, 2, dim=1),
                            torch=lambda torch, x: torch.repeat_interleave(x, 2, dim=1))],
    "nonzero": [s(COUNTS), s(COUNTS, call=lambda f, x: f(x, as_tuple=True)[1],
                             torch=lambda torch, x: torch.nonzero(x, as_tuple=True)[1])],
    "argwhere": [s(COUNTS)],
    "unique": [s(COUNTS), s(COUNTS, call=lambda f, x: f(x, True, True, True),
                            torch=lambda torch, x: torch.unique(x, True, True, True)),
               s(COUNTS, call=lambda f, x: f(x, return_inverse=True, dim=1),
                 torch=lambda torch, x: torch.unique(x, return_inverse=True, dim=1))],
    # kit/ops/rearrange.py
    "flip": [s(M, (0, 1)), s(uniform(2, 3, 2), [-1])],
    "fliplr": [s(M)], "flipud": [s(M)],
    "roll": [s(M, 2), s(M, (1, -1), (0, 1)), s(M, -5, 1)],
    "tril": [s(M), s(uniform(2, 3, 3), -1)], "triu": [s(M, 1), s(uniform(2, 3, 3))],
    "diag": [s(B), s(B, -2), s(M, 1)],
    "diag_embed": [s(A), s(A, 1, 0, 2), s(B, -1, -1, -2)],
    "trace": [s(M)],
    "atleast_1d": [s(uniform())], "atleast_2d": [s(B)], "atleast_3d": [s(M)],
    "hstack": [s(A, M[:2], call=lambda f, a, b: f([a, b]),
                 torch=lambda torch, a, b: torch.hstack([a, b]))],
    "vstack": [s(B, A, call=lambda f, a, b: f([a, b]),
                 torch=lambda torch, a, b: torch.vstack([a, b]))],
    "dstack": [s(A, A + 1, call=lambda f, a, b: f([a, b]),
                 torch=lambda torch, a, b: torch.dstack([a, b]))],
    "column_stack": [s(B, M[:, :2], call=lambda f, a, b: f([a, b]),
                       torch=lambda torch, a, b: torch.column_stack([a, b]))],
    "meshgrid": [s(B, uniform(2), call=lambda f, a, b: f(a, b, indexing="ij"),
                   torch=lambda torch, a, b: torch.meshgrid(a, b, indexing="ij")),
                 s(B, uniform(2), uniform(), call=lambda f, a, b, c: f([a, b, c], indexing="xy"),
                   torch=lambda torch, a, b, c: torch.meshgrid([a, b, c], indexing="xy"))],
    "kron": [s(A, uniform(2, 2)), s(B, M)],
}


def _symmetric(f):
    """f of the symmetric part of its input: eigh and cholesky read one triangle only, so
    finite differences need an input whose perturbations keep it symmetric."""
    return lambda x: f((x + x.mT) * 0.5)


SPD = (lambda m: m @ m.T + 3 * np.eye(3))(uniform(3, 3))
SQUARE = uniform(2, 3, 3) + 2 * np.eye(3)
SINGULAR = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])  # rank 2
SAMPLES_MORE.update({
    # kit/ops/linalg.py's products
    "bmm": [s(uniform(2, 2, 3), uniform(2, 3, 4))],
    "addmm": [s(B, A, M[:3, :3]),
              s(uniform(2, 1), A, M, call=lambda f, x, a, b: f(x, a, b, beta=0.5, alpha=-2),
                torch=lambda torch, x, a, b: torch.addmm(x, a, b, beta=0.5, alpha=-2))],
    "baddbmm": [s(uniform(2, 2, 4), uniform(2, 2, 3), uniform(2, 3, 4),
                  call=lambda f, x, a, b: f(x, a, b, beta=2, alpha=0.5),
                  torch=lambda torch, x, a, b: torch.baddbmm(x, a, b, beta=2, alpha=0.5))],
    "tensordot": [s(uniform(2, 3, 4), uniform(3, 4, 2)),
                  s(uniform(2, 3, 4), uniform(4, 3, 2),
                    call=lambda f, a, b: f(a, b, ([1, 2], [1, 0])),
                    torch=lambda torch, a, b: torch.tensordot(a, b, ([1, 2], [1, 0]))),
                  s(B, V, call=lambda f, a, b: f(a, b, 0),
                    torch=lambda torch, a, b: torch.tensordot(a, b, 0))],
    # kit/ops/square_matrices.py
    "det": [s(SQUARE), s(SINGULAR, torch=lambda torch, x: torch.linalg.det(x)),
            s(uniform(1, 1))],
    "inv": [s(SQUARE, torch=lambda torch, x: torch.linalg.inv(x))],
    "slogdet": [s(SQUARE - 4 * np.eye(3), torch=lambda torch, x: torch.linalg.slogdet(x))],
    "logdet": [s(SPD)],
    "solve": [s(SQUARE, uniform(2, 3, 2), torch=lambda torch, a, b: torch.linalg.solve(a, b)),
              s(SQUARE[0], B, torch=lambda torch, a, b: torch.linalg.solve(a, b)),
              s(SQUARE, uniform(2, 3), torch=lambda torch, a, b: torch.linalg.solve(a, b)),
              s(SQUARE[0], uniform(4, 3, 1), torch=lambda torch, a, b: torch.linalg.solve(a, b))],
    "linalg_solve": [s(SQUARE, uniform(2, 2, 3), call=lambda f, a, b: f(a, b, left=False),
                       torch=lambda torch, a, b: torch.linalg.solve(a, b, left=False))],
    "cholesky": [s(SPD, call=lambda f, x: _symmetric(f)(x),
                   torch=lambda torch, x: _symmetric(torch.linalg.cholesky)(x))],
    "linalg_cholesky": [s(SPD, call=lambda f, x: _symmetric(lambda y: f(y, upper=True))(x),
                          torch=lambda torch, x: _symmetric(
                              lambda y: torch.linalg.cholesky(y, upper=True))(x))],
    # eigenvectors up to sign: compared through V * V and V diag(w) V^T, which do not see it
    "eigh": [s(SPD, call=lambda f, x: _symmetric(f)(x)[0],
               torch=lambda torch, x: _symmetric(torch.linalg.eigh)(x)[0]),
             s(SPD, call=lambda f, x: _eigh_parts(_symmetric(f)(x)),
               torch=lambda torch, x: _eigh_parts(_symmetric(torch.linalg.eigh)(x)))],
})


def _eigh_parts(result):
    w, v = result
    return w, v * v, (v * w[..., None, :]) @ v.mT


def _q(module, x):
    """A 1-D q of x's dtype and device (kit or torch)."""
    return module.tensor([0.25, 0.5, 0.9], dtype=x.dtype, device=x.device)


ZEROS = np.array([[2.0, 0.0, 3.0, 0.0, 4.0], [1.5, -2.0, 0.0, 1.0, 0.5]])
SAMPLES_MORE.update({
    # kit/ops/statistics.py
    "median": [s(D), s(D, 1), s(D, 0, True)],
    "nanmedian": [s(D, 1), s(D)],
    "kthvalue": [s(D, 2, 1), s(D, 1, 0, True)],
    "quantile": [s(D, 0.3), s(D, 0.6, 1, True),
                 s(D, call=lambda f, x: f(x, _q(kit, x), 0),
                   torch=lambda torch, x: torch.quantile(x, _q(torch, x), 0)),
                 s(D, call=lambda f, x: f(x, 0.4, 1, interpolation="midpoint"),
                   torch=lambda torch, x: torch.quantile(x, 0.4, 1, interpolation="midpoint"))],
    "nanquantile": [s(D, 0.7, 0)],
    "count_nonzero": [s(COUNTS), s(COUNTS, 1), s(M > 0, (0, 1))],
    "cumprod": [s(M, 1), s(ZEROS, 1)],
    "logcumsumexp": [s(M, 1), s(A * 30, 0)],
})


def F(torch):  # noqa: N802 - PyTorch's spelling, torch.nn.functional as F
    return torch.nn.functional


SIGNAL, IMAGE = uniform(2, 3, 7), uniform(1, 2, 4, 5)  # (N, C, L) and (N, C, H, W)
PEAKS = distinct(2, 3, 7)  # no ties: max pooling has one derivative
SAMPLES_MORE.update({
    # kit/ops/signal.py
    "avg_pool2d": [s(IMAGE, 2, torch=lambda torch, x, k: F(torch).avg_pool2d(x, k)),
                   s(IMAGE, call=lambda f, x: f(x, 3, 2, 1, False, False),
                     torch=lambda torch, x: F(torch).avg_pool2d(x, 3, 2, 1, False, False))],
    "avg_pool1d": [s(SIGNAL, 3, 2, 1), s(SIGNAL[0], call=lambda f, x: f(x, 2, 1, 1, False, False),
                                         torch=lambda torch, x: F(torch).avg_pool1d(
                                             x, 2, 1, 1, False, False))],
    "max_pool1d": [s(PEAKS, 2), s(PEAKS, 3, 2, 1, 2, torch=lambda torch, x, *a: F(
        torch).max_pool1d(x, *a))],
    "conv1d": [s(SIGNAL, uniform(4, 3, 3), uniform(4)),
               s(SIGNAL, uniform(6, 1, 2), call=lambda f, x, w: f(x, w, None, 2, 1, 2, 3),
                 torch=lambda torch, x, w: torch.conv1d(x, w, None, 2, 1, 2, 3)),
               s(SIGNAL[0], uniform(2, 3, 3), call=lambda f, x, w: f(x, w, padding="same"),
                 torch=lambda torch, x, w: F(torch).conv1d(x, w, padding="same"))],
    "pad": [s(A, (1, 2), torch=lambda torch, x, p: F(torch).pad(x, p)),
            s(IMAGE, call=lambda f, x: f(x, (1, -1, 0, 2), value=0.5),
              torch=lambda torch, x: F(torch).pad(x, (1, -1, 0, 2), value=0.5))]
    + [s(IMAGE, call=lambda f, x, m=mode: f(x, (2, 1, 1, 3), m),
         torch=lambda torch, x, m=mode: F(torch).pad(x, (2, 1, 1, 3), m))
       for mode in ("reflect", "replicate", "circular")]
    + [s(SIGNAL, call=lambda f, x: f(x, (3, 0), "reflect"),
         torch=lambda torch, x: F(torch).pad(x, (3, 0), "reflect"))],
    "interpolate": [s(SIGNAL, call=lambda f, x, m=mode, k=kw: f(x, **k, mode=m),
                      torch=lambda torch, x, m=mode, k=kw: F(torch).interpolate(x, **k, mode=m))
                    for mode, kw in [("nearest", {"scale_factor": 2}),
                                     ("nearest", {"size": 4}),
                                     ("nearest-exact", {"size": 11}),
                                     ("linear", {"scale_factor": 1.5}),
                                     ("linear", {"size": 3, "align_corners": True})]]
    + [s(IMAGE, call=lambda f, x, k=kw: f(x, mode="bilinear", **k),
         torch=lambda torch, x, k=kw: F(torch).interpolate(x, mode="bilinear", **k))
       for kw in [{"scale_factor": 2}, {"size": (3, 7), "align_corners": True},
                  {"size": (5, 3)}, {"scale_factor": (1.5, 0.7)}]],
    # kit/ops/vectors.py
    "normalize": [s(M, torch=lambda torch, x: F(torch).normalize(x)),
                  s(M, call=lambda f, x: f(x, 1, 0), torch=lambda torch, x: F(torch).normalize(
                      x, 1, 0))],
    "cosine_similarity": [s(M, uniform(3, 4)), s(uniform(2, 1, 3), uniform(4, 3), 2)],
    "pairwise_distance": [s(M, uniform(3, 4)), s(M, uniform(4), 1.0, 1e-6, True)],
    "one_hot": [s(np.array([[0, 1], [1, 1]]), 4, torch=lambda torch, x, n: F(torch).one_hot(
        x, n))],
})
