"""PyTorch's custom-Function examples run unchanged on `kit.torch` and give PyTorch's results.

The examples live in extending_pytorch_examples.py, written once against a `torch` argument. Each is
compared with the values real PyTorch 2.13 gave (stored in data/extending_pytorch_expected.json, so
this runs without torch) and, when torch is installed, with a fresh run of real PyTorch.
"""

from __future__ import annotations

import json
import pathlib
import warnings

import numpy as np
import pytest
from extending_pytorch_examples import EXAMPLES, KIT_WARNS, plain

import kit.torch

EXPECTED = json.loads(
    (pathlib.Path(__file__).parent / "data" / "extending_pytorch_expected.json").read_text()
)


def run_kit(name):
    """Run an example on kit.torch; an example that should warn must warn (and only so)."""
    if name in KIT_WARNS:
        with pytest.warns(UserWarning, match=KIT_WARNS[name]):
            return plain(EXAMPLES[name](kit.torch))
    return plain(EXAMPLES[name](kit.torch))


def assert_same(got, want, path="result"):
    """Equal structure, dtypes, booleans and strings; numbers equal to float64 rounding."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), f"{path}: keys differ"
        for key in want:
            assert_same(got[key], want[key], f"{path}[{key!r}]")
    elif isinstance(want, list) and not _numeric(want):
        assert isinstance(got, list) and len(got) == len(want), f"{path}: length differs"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same(g, w, f"{path}[{i}]")
    elif isinstance(want, (bool, str)) or want is None:
        assert got == want, f"{path}: {got!r} != {want!r}"
    else:
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-12,
                                   err_msg=path)
        assert np.shape(got) == np.shape(want), path


def _numeric(value):
    """A number or a nested list of numbers (a tensor's values), as opposed to a structure."""
    if isinstance(value, list):
        return all(_numeric(v) for v in value)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def test_every_example_has_stored_values():
    assert sorted(EXPECTED) == sorted(EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_matches_stored_pytorch_values(name):
    assert_same(run_kit(name), EXPECTED[name])


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_matches_pytorch_now(name):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        # PyTorch's own deprecation notices are not what this test checks.
        warnings.simplefilter("ignore", DeprecationWarning)
        want = plain(EXAMPLES[name](torch))
    assert_same(run_kit(name), want)


def test_assert_same_catches_a_difference():
    want = {"a": [{"dtype": "float64", "value": [1.0, 2.0]}, True]}
    assert_same({"a": [{"dtype": "float64", "value": [1.0, 2.0]}, True]}, want)
    for bad in ({"a": [{"dtype": "float32", "value": [1.0, 2.0]}, True]},
                {"a": [{"dtype": "float64", "value": [1.0, 2.5]}, True]},
                {"a": [{"dtype": "float64", "value": [1.0, 2.0]}, False]}):
        with pytest.raises(AssertionError):
            assert_same(bad, want)


def test_stored_values_say_what_the_docs_say():
    """Spot checks of the stored numbers against the maths, so the file itself is trusted."""
    cube = EXPECTED["my_cube"]["MyCube"]
    assert cube[1]["value"] == [0.75, 3.0, 12.0]  # 3 x^2 at 0.5, -1, 2
    assert cube[2]["value"] == [3.0, -6.0, 12.0]  # 6 x
    assert cube[3] == [True, True]
    saved = EXPECTED["ctx_docstrings"]["save_for_backward"]
    assert [v["value"] for v in saved] == [18.0, 10.0, 9.0]  # out, y + yz, x + z + w at 1, 2, 4
    assert EXPECTED["mark_dirty"]["error"] is True
    assert EXPECTED["linear_separate"]["verbatim_gradcheck_fails"] is True
    assert EXPECTED["double_backward_tutorial"]["sinh_bad"] == [False, False]
