"""Sample inputs for the ops added so that real programs run (issue 12's missing ops), in the
form of tests/op_samples.py, which merges them into SAMPLES.

`NOT_DIFFERENTIABLE` names ops that PyTorch records but cannot differentiate (backward raises):
the generic gradient checks skip them and tests/test_ops_math.py checks the error.
"""

from __future__ import annotations

import numpy as np
from op_samples import RNG, A, B, D, nonzero, positive, s, uniform

FRACTIONAL = np.floor(uniform(3, 4) * 3) + RNG.uniform(0.2, 0.4, size=(3, 4))  # far from .0/.5
NANS = np.array([[np.nan, 1.5, -0.5], [2.0, np.nan, 3.0]])
SPECIAL = np.array([[np.nan, 1.5, np.inf], [-np.inf, -0.5, 2.0]])
STEPS = np.array([[-1, 0, 2], [0, 3, -5]])

NOT_DIFFERENTIABLE = {"heaviside"}

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
}
