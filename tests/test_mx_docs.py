"""The docstring examples of every kit.mx module run and print what they show."""

import doctest
import importlib

import pytest

MODULES = [
    "kit.mx", "kit.mx._autograd_function", "kit.mx.autograd", "kit.mx.base", "kit.mx.nd",
    "kit.mx.nd_creation", "kit.mx.nd_index", "kit.mx.nd_io", "kit.mx.nd_linalg", "kit.mx.nd_nn",
    "kit.mx.ndarray", "kit.mx.random",
]


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples_run(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
