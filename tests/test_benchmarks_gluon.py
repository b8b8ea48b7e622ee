"""The gluon Dense + Trainer.step MLP benchmark computes what the bare-tensor step computes.
Timings are never asserted."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import mlp_gluon  # noqa: E402


def test_gluon_step_matches_bare_and_numpy_over_steps():
    impls = mlp_gluon.impls(batch=8, sizes=(20, 16, 16, 5))
    for _ in range(3):
        out = {name: fn() for name, fn in impls.items()}
        loss, params = out.pop("kit")
        for name, (other_loss, other_params) in out.items():
            np.testing.assert_allclose(loss, other_loss, rtol=1e-5, err_msg=name)
            for a, b in zip(params, other_params, strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6, err_msg=name)
