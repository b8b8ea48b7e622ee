"""A compiled call that repeats the last one is checked by one generated guard function
(kit.compiler.guards.fast_guard) instead of the cache key: everything the key and the entry's
checks look at must still make it miss. Each case below changes one thing after the fast guard is
in place and compares with the eager result (and the number of graphs traced)."""

from __future__ import annotations

import numpy as np
import pytest

import kit
from kit import nn

rng = np.random.default_rng(0)


def _arr(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def _warm(f, *args):
    """Trace, replay through the cache key, then through the fast guard."""
    for _ in range(3):
        out = f(*args)
    assert f.fast is not None and f.fast[0](args)
    return out


def _same(got, want):
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


def test_a_repeated_call_takes_the_fast_guard_and_replays():
    w = kit.tensor(_arr(3, 2), requires_grad=True)
    f = kit.compile(lambda x: (x @ w).relu().sum())
    x = kit.tensor(_arr(4, 3))
    _same(_warm(f, x), (x @ w).relu().sum())
    assert f.size() == 1
    f(x).backward()
    got = w.grad.numpy().copy()
    w.grad = None
    (x @ w).relu().sum().backward()
    np.testing.assert_array_equal(got, w.grad.numpy())


@pytest.mark.parametrize("change", ["shape", "dtype", "requires_grad", "count", "alias",
                                    "no_grad"])
def test_a_changed_argument_or_mode_misses_the_fast_guard(change):
    def fn(x, y):
        return (x * y + 1) * x  # (exact: fused or not, the same bits)

    f = kit.compile(fn)
    x, y = kit.tensor(_arr(2, 3)), kit.tensor(_arr(2, 3))
    _warm(f, x, y)
    if change == "shape":
        args = (kit.tensor(_arr(3, 3)), kit.tensor(_arr(3, 3)))
    elif change == "dtype":
        args = (kit.tensor(_arr(2, 3, dtype=np.float64)), y)
    elif change == "requires_grad":
        args = (kit.tensor(_arr(2, 3), requires_grad=True), y)
    elif change == "alias":
        args = (x, x)
    else:
        args = (x, y)
    assert not f.fast[0](args) if change not in ("no_grad", "count") else True
    if change == "count":
        with pytest.raises(TypeError):
            f(x)
        return
    if change == "no_grad":
        with kit.no_grad():
            assert not f.fast[0](args)
            got = f(*args)
            assert got.grad_fn is None
        return
    got = f(*args)
    _same(got, fn(*args))
    assert got.requires_grad == (change == "requires_grad")
    assert f.size() == 2  # traced again
    _same(f(*args), fn(*args))  # and replayed (f(x, x): its graph has one input)
    _same(f(*args), fn(*args))


def test_a_changed_captured_tensor_misses_the_fast_guard():
    w = kit.tensor(_arr(3), requires_grad=True)
    f = kit.compile(lambda x: x * w)
    x = kit.tensor(_arr(3))
    _warm(f, x)
    w.requires_grad_(False)
    got = f(x)
    assert not got.requires_grad and f.size() == 2
    w.data = kit.tensor(_arr(2, 3))  # another shape
    _same(f(x), x * w)


def test_a_module_switched_to_eval_misses_the_fast_guard():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    x = kit.tensor(_arr(2, 4))
    for f in (kit.compile(model), kit.compile(lambda x: model(x))):  # a module; a closure
        model.train()
        _warm(f, x)
        model.eval()
        _same(f(x), model(x))  # (dropout off: equal to eager)
        model.train()
        f(x)
        assert f.size() == 2


def test_views_and_value_guards_keep_the_keyed_path():
    f = kit.compile(lambda x: x * 2)
    base = kit.tensor(_arr(4, 3), requires_grad=True)
    view = base[1:3]
    for _ in range(3):
        f(view)
    assert f.fast is None  # (a view's requires_grad is computed: the key checks it)

    @kit.compile
    def g(x):
        return x * 2 if x.sum() > 0 else x * 3  # a value guard

    pos = kit.tensor(np.ones(3, np.float32))
    for _ in range(3):
        g(pos)
    assert g.fast is None
    _same(g(-pos), -pos * 3)
