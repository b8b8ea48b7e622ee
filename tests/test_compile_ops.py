"""kit.compile over every op of the registry and over random programs: compiled equals eager.

Generic, as tests/test_op_registry.py is: every sample input of tests/op_samples.py runs through a
compiled function (traced on the first call, replayed on the second) and must give eager's
values and first- and second-order gradients. The random programs of tests/differential.py run
compiled and eagerly; their outcomes (values, dtypes, flags, exception classes, gradients of two
orders) must be the same.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from op_samples import SAMPLES

import kit
import kit.torch
from kit.ops._registry import OPS
from tests.differential import SETTINGS, programs, run, same

CASES = [pytest.param(name, i, id=f"{name}-{i}")
         for name, samples in SAMPLES.items() for i in range(len(samples))]


def _inputs(sample):
    return [kit.tensor(a, requires_grad=True) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
            else kit.tensor(a) if isinstance(a, np.ndarray) else a for a in sample.args]


def _call(name, sample):
    fn = OPS[name].fn
    return fn if sample.call is None else (lambda *inputs: sample.call(fn, *inputs))


def _outcome(fn, inputs, order):
    """Values of every output; gradients of a weighted sum of the float outputs (two orders)."""
    outs = fn(*inputs)
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    found = [o.detach().numpy().copy() for o in outs]
    wrt = [t for t in inputs if isinstance(t, kit.Tensor) and t.requires_grad]
    diff = [(k, o) for k, o in enumerate(outs) if o.requires_grad]
    if not diff or not wrt:
        return found
    loss = sum((o * (k + 1.0)).sum() for k, o in diff)
    grads = kit.grad(loss, wrt, create_graph=order > 1, allow_unused=True)
    found += [None if g is None else g.detach().numpy().copy() for g in grads]
    if order > 1 and any(g is not None and g.requires_grad for g in grads):
        total = sum((g * g).sum() for g in grads if g is not None and g.requires_grad)
        found += [None if g is None else g.numpy().copy()
                  for g in kit.grad(total, wrt, allow_unused=True)]
    return found


@pytest.mark.parametrize(("name", "i"), CASES)
def test_every_sample_compiled_equals_eager(name, i):
    sample = SAMPLES[name][i]
    fn = _call(name, sample)
    inputs = _inputs(sample)
    with np.errstate(all="ignore"):
        expected = _outcome(fn, inputs, sample.order)
        compiled = kit.compile(fn)
        for _ in range(2):
            got = _outcome(compiled, inputs, sample.order)
            assert len(got) == len(expected)
            for g, e in zip(got, expected, strict=True):
                if e is None:
                    assert g is None
                else:
                    np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12, err_msg=name)
    assert not compiled.explain()["eager"], compiled.explain()["breaks"]


@pytest.mark.parametrize("nan", [False, True], ids=["finite", "special"])
def test_random_programs_compiled_equal_eager(nan):
    """60 programs each (fixed seed), drawn by tests/differential.py's hypothesis strategy."""
    differences = []

    @settings(max_examples=60, derandomize=True, **SETTINGS)
    @given(programs(nan))
    def each(program):
        with np.errstate(all="ignore"):
            eager = run(kit.torch, program, order=2)
            traced = run(kit.torch, program, transform=_twice, order=2)
        if not same(traced, eager):
            differences.append((program, traced, eager))

    each()
    assert not differences, f"{len(differences)} programs differ, e.g. {differences[0]}"


def _twice(fn):
    """fn compiled, called once to trace, then its replay's result."""
    compiled = kit.compile(fn)

    def call(*leaves):
        compiled(*leaves)
        return compiled(*leaves)

    return call
