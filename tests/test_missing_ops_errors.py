"""Bad arguments to the ops added for issue 12 get an error that names the op (and, where one
exists, the fix), never a raw NumPy or Python message."""

from __future__ import annotations

import pytest

import kit.torch as t

F = t.nn.functional
X = t.ones(2, 3)

CASES = [
    ("interpolate", lambda: F.interpolate(t.ones(1, 1, 4, 4), size=(3,), mode="nearest")),
    ("interpolate", lambda: F.interpolate(t.ones(1, 1, 4), size=3, mode="bicubic")),
    ("roll", lambda: t.roll(X, 1.5, 0)),
    ("tensordot", lambda: t.tensordot(X, X, dims="a")),
    ("kron", lambda: t.kron(X, [1, 2])),
    ("lerp", lambda: t.lerp(X, X, "a")),
    ("nan_to_num", lambda: t.nan_to_num(X, nan="a")),
    ("bmm", lambda: t.bmm(X, 3)),
    ("kthvalue", lambda: t.kthvalue(X, 1.5)),
    ("randperm", lambda: t.randperm(2.5)),
    ("logspace", lambda: t.logspace(0, 1, -1)),
    ("addmm", lambda: t.addmm(X, 3, X)),
    ("pad", lambda: F.pad(X, "ab")),
    ("index_select", lambda: t.index_select([1, 2], 0, t.tensor([0]))),
    ("hstack", lambda: t.hstack([X, 3])),
    ("cumprod", lambda: t.cumprod([1, 2], 0)),
    ("median", lambda: t.median(X, "a")),
    ("quantile", lambda: t.quantile([1.0, 2.0], 0.5)),
    ("linalg.det", lambda: t.linalg.det([[1.0, 2.0], [3.0, 4.0]])),
    ("linalg.solve", lambda: t.linalg.solve(t.eye(2), [1.0, 2.0])),
    ("linalg.eigh", lambda: t.linalg.eigh(t.eye(2), UPLO="X")),
    ("one_hot", lambda: F.one_hot(t.tensor([0.5]))),
    ("multinomial", lambda: t.multinomial(t.tensor(1.0), 1)),
    ("normal", lambda: t.normal(0.0, 1.0)),
    ("flip", lambda: t.flip(X, 0)),
    ("take_along_dim", lambda: t.take_along_dim(X, t.tensor([[0.0]]), 1)),
    ("heaviside", lambda: t.heaviside(X, 0.5)),
    ("repeat_interleave", lambda: t.repeat_interleave(X, t.tensor([1.5]))),
]


@pytest.mark.parametrize(("op", "call"), CASES, ids=[f"{op}-{i}" for i, (op, _) in
                                                      enumerate(CASES)])
def test_a_bad_argument_names_the_op(op, call):
    with pytest.raises((TypeError, ValueError, RuntimeError, NotImplementedError)) as info:
        call()
    assert f"kit.{op}" in str(info.value), str(info.value)
