"""Sample inputs for the Tensor methods and torch functions added so that PyTorch programs that
call them run (tan, logaddexp, xlogy, nansum, ravel...), in the form of tests/op_samples.py,
which merges them into SAMPLES.
"""

from __future__ import annotations

import numpy as np
from op_samples import A, B, D, M, V, nonzero, positive, s, uniform

NANS = np.array([[np.nan, 1.5, -0.5], [2.0, np.nan, 3.0]])
SPECIAL = np.array([[np.nan, -1.5, np.inf], [-np.inf, -0.0, 2.0]])
UNIT = uniform(2, 3, low=0.05, high=0.95)
CUBE = uniform(2, 3, 4)

SAMPLES_METHODS = {
    # kit/ops/elementwise_more.py
    "tan": [s(uniform(2, 3, low=-1.2, high=1.2))], "exp2": [s(A)], "asinh": [s(A)],
    "acosh": [s(positive(A) + 1)], "atanh": [s(uniform(2, 3, low=-0.9, high=0.9))],
    "erfc": [s(A)], "sinc": [s(nonzero(A))],
    "lgamma": [s(nonzero(A * 2))],
    "digamma": [s(nonzero(A * 2))],
    "logit": [s(UNIT), s(UNIT, call=lambda f, x: f(x, 0.2),
                         torch=lambda torch, x: torch.logit(x, 0.2))],
    "deg2rad": [s(A)], "rad2deg": [s(A)], "positive": [s(A)],
    "signbit": [s(SPECIAL)], "isposinf": [s(SPECIAL)], "isneginf": [s(SPECIAL)],
    "isreal": [s(SPECIAL)],
    "logaddexp": [s(A, B)], "logaddexp2": [s(A, B)],
    "xlogy": [s(A, positive(B)), s(A, 2.5)],
    "copysign": [s(nonzero(A), B), s(nonzero(A), -1.0)],
    "fmax": [s(A, B)], "fmin": [s(A, B)],
    "float_power": [s(positive(A), B), s(positive(A), 3)],
    "nansum": [s(A), s(M, call=lambda f, x: f(x, 1, True),
                       torch=lambda torch, x: torch.nansum(x, 1, True))],
    "nanmean": [s(A), s(M, call=lambda f, x: f(x, 0),
                        torch=lambda torch, x: torch.nanmean(x, 0))],
    # kit/ops/movement.py
    "ravel": [s(A)],
    # kit/ops/shapes_more.py
    "repeat": [s(A, 2, 1, 3, torch=lambda torch, x, *n: x.repeat(*n)),
               s(B, (2, 2), torch=lambda torch, x, n: x.repeat(n))],
    "tile": [s(A, (2,)), s(B, (2, 1, 2))],
    "unflatten": [s(M, 1, (2, -1))],
    "tensor_split": [s(M, 3, 1), s(M, [1, 2], 0)],
    "hsplit": [s(M, 2)], "vsplit": [s(M, [1])], "dsplit": [s(CUBE, 2)],
    "split_with_sizes": [s(M, [1, 3], 1)],
    "select": [s(M, 1, -1)],
    "take": [s(M, np.array([[0, 11], [-1, 5]]))],
    "rot90": [s(M), s(CUBE, 3, (2, 0))],
    "diff": [s(M), s(M, 2, 0, uniform(1, 4), uniform(2, 4))],
    "index_fill": [s(M, 1, np.array([0, 3]), -1.5)],
    "index_copy": [s(M, 1, np.array([2, 0]), uniform(3, 2))],
    "scatter": [s(M, 1, np.array([[0, 1], [2, 3], [1, 0]]), uniform(3, 2)),
                s(M, 0, np.array([[0, 2]]), call=lambda f, x, dim, i: f(x, dim, i, value=2.0),
                  torch=lambda torch, x, dim, i: torch.scatter(x, dim, i, value=2.0))],
    "masked_scatter": [s(M, M > 0, uniform(12))],
    "cummax": [s(D, 1)], "cummin": [s(D, 0)],
    "cross": [s(uniform(4, 3), uniform(4, 3), 1), s(uniform(3, 2), uniform(3, 1), 0)],
    "inner": [s(M, uniform(2, 4)), s(V, V)],
    "mv": [s(M, V)], "addmv": [s(uniform(3), M, V), s(uniform(3), M, V, call=lambda f, *a: f(
        *a, beta=0.5, alpha=2), torch=lambda torch, *a: torch.addmv(*a, beta=0.5, alpha=2))],
    "addr": [s(M, uniform(3), V)], "vdot": [s(V, uniform(4))],
    "dist": [s(M, uniform(4)), s(M, uniform(3, 1), 3), s(M, uniform(4), 1)],
}
# (nansum and nanmean of NaNs: tests/test_tensor_methods_more.py; gradcheck needs finite values)
BROADCAST_DOMAINS_METHODS = {"xlogy": (None, positive), "float_power": (positive, None),
                             "copysign": (nonzero, None)}
# cummax and cummin compute their indices from the values in NumPy (then gather them, which
# carries the gradient): under vmap they refuse, as the ops whose result shape depends on data
NO_VMAP_METHODS = {"cummax", "cummin"}
