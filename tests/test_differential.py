"""Random programs on kit.torch and PyTorch: the same results, gradients, dtypes, requires_grad
flags and exception classes, also after values are changed in place (the programs, drawn by
hypothesis, and the comparison are in tests/differential.py). The draws are derandomized: CI runs
the same programs every time; a difference fails with the smallest program hypothesis can shrink
it to."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from tests.differential import SETTINGS, outcomes, programs, same

pytest.importorskip("torch", reason="PyTorch is the oracle of the differential programs")

FINITE, SPECIAL, INPLACE = 600, 600, 400  # programs per run (about 25 s of CPU time in all)


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


@settings(max_examples=INPLACE, derandomize=True, **SETTINGS)
@given(programs(inplace=True))
def test_random_programs_changing_results_and_inputs_in_place_match_pytorch(program):
    # after each op, its result or one of its inputs is changed in place: the backward raises
    # exactly where PyTorch's does (what each op saves decides it), else gives its gradients
    _check(program)
