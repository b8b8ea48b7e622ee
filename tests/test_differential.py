"""Random programs on kit.torch and PyTorch: the same results, gradients, dtypes, requires_grad
flags and exception classes (the programs, drawn by hypothesis, and the comparison are in
tests/differential.py). The draws are derandomized: CI runs the same programs every time; a
difference fails with the smallest program hypothesis can shrink it to."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from tests.differential import SETTINGS, outcomes, programs, same

pytest.importorskip("torch", reason="PyTorch is the oracle of the differential programs")

FINITE, SPECIAL = 600, 600  # programs per run (about 15 s of CPU time for both)


def _check(program):
    ours, theirs = outcomes(program)
    assert same(ours, theirs), f"\n  kit:     {ours}\n  pytorch: {theirs}"


@settings(max_examples=FINITE, derandomize=True, **SETTINGS)
@given(programs(nan=False))
def test_random_finite_programs_match_pytorch(program):
    _check(program)


@settings(max_examples=SPECIAL, derandomize=True, **SETTINGS)
@given(programs(nan=True))
def test_random_programs_with_nan_inf_and_integer_extremes_match_pytorch(program):
    _check(program)
