"""The nn.Linear + optim.SGD MLP benchmark computes what the bare-tensor step computes (and
PyTorch's module step, where installed). Timings are never asserted."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import harness, mlp_modules  # noqa: E402


def test_module_step_matches_bare_numpy_and_torch_over_steps():
    impls = mlp_modules.impls(harness.import_torch(), batch=8, sizes=(20, 16, 16, 5))
    for _ in range(3):
        out = {name: fn() for name, fn in impls.items()}
        loss, params = out.pop("kit")
        for name, (other_loss, other_params) in out.items():
            np.testing.assert_allclose(loss, other_loss, rtol=1e-5, err_msg=name)
            for a, b in zip(params, other_params, strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6, err_msg=name)


def test_table_shows_the_ratio_to_the_bare_step():
    case = harness.Case("w", {"kit": None, "bare": None}, target="<= 1.05x bare",
                        limit=("bare", 1.05))
    case.samples = {"kit": [1.02, 1.03, 1.01], "bare": [1.0, 1.0, 1.0]}
    case.results = {"kit": 1.02, "bare": 1.0}
    text = harness.table([case])
    assert "(now 1.02x)" in text and "met" in text
