"""Random programs on kit.torch and PyTorch: the same results, gradients, dtypes, requires_grad
flags and exception classes (the programs and the comparison are in tests/differential.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.differential import make_program, run, same

torch = pytest.importorskip("torch", reason="PyTorch is the oracle of the differential programs")

import kit.torch  # noqa: E402

# NaN/inf programs whose difference is known and kept, each with its reason:
KNOWN = {
    # softmax over [inf, x, inf]: PyTorch's NaN everywhere comes from its max-shifted sum; kit's
    # exp(x - logsumexp(x)) gives 0 at the finite element.
    ("nan", 71),
    # the gradient of max() over elements with a NaN: PyTorch gives the finite elements their
    # other terms and NaN to the NaN element; kit's cos-of-max chain gives NaN to all.
    ("nan", 197),
    # minimum/maximum of NaN with NaN then pow: PyTorch's split at a NaN "tie" differs.
    ("nan", 380),
}


def _kit(program):
    # NOTE: a known difference, kept: NumPy warns (RuntimeWarning) where an op makes inf or NaN
    # (log(0), sqrt(-1), 1/0); PyTorch says nothing. Silencing it per op would cost each op a
    # NumPy error-state switch, so kit leaves NumPy's warnings as they are.
    with np.errstate(all="ignore"):
        return run(kit.torch, program)


@pytest.mark.parametrize("chunk", range(4))
def test_random_finite_programs_match_pytorch(chunk):
    differences = []
    for seed in range(chunk * 100, chunk * 100 + 100):
        program = make_program(np.random.default_rng(seed), nan=False)
        ours, theirs = _kit(program), run(torch, program)
        if not same(ours, theirs):
            differences.append((seed, program, ours, theirs))
    assert not differences, f"{len(differences)} programs differ, e.g. {differences[0]}"


def test_random_programs_with_nan_and_inf_match_pytorch():
    differences = []
    for seed in range(400):
        program = make_program(np.random.default_rng(seed), nan=True)
        if not same(_kit(program), run(torch, program)) and ("nan", seed) not in KNOWN:
            differences.append(seed)
    assert not differences, f"programs {differences} differ (python -m tests.differential)"
