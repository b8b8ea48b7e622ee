"""SGD's fused update (kit/optim/_fused.py) gives the NumPy loop's bits, for every option."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import kit
from kit.optim import SGD, _fused

pytest.importorskip("numba", reason="numba is not installed (pip install 'kit[jit]')")

OPTIONS = [
    dict(momentum=m, dampening=d, weight_decay=wd, nesterov=n, maximize=mx)
    for m, d, wd, n, mx in itertools.product((0.0, 0.9), (0.0, 0.25), (0.0, 1e-2), (False, True),
                                             (False, True))
    if not (n and (m == 0 or d != 0))  # (Nesterov needs momentum and no dampening)
]


def _train(fused, dtype, options, shape=(160, 128), steps=4):
    rng = np.random.default_rng(0)
    p = kit.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)
    opt = SGD([p], lr=0.05, fused=fused, **options)
    versions = []
    for _ in range(steps):
        p.grad = kit.tensor(rng.standard_normal(shape).astype(dtype))
        before = p._version
        opt.step()
        versions.append(p._version - before)
    buf = opt.state[p].get("momentum_buffer")
    return p.detach().numpy(), None if buf is None else buf.numpy(), versions


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("options", OPTIONS,
                         ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
def test_fused_sgd_gives_the_numpy_loops_bits(options, dtype):
    assert _fused.usable(np.zeros((160, 128), dtype), np.zeros((160, 128), dtype))
    fused = _train(None, dtype, options)
    plain = _train(False, dtype, options)
    np.testing.assert_array_equal(fused[0], plain[0], strict=True)
    if plain[1] is None:
        assert fused[1] is None
    else:
        np.testing.assert_array_equal(fused[1], plain[1], strict=True)
    assert fused[2] == plain[2] == [1, 1, 1, 1]  # a step bumps the version once


def test_fused_sgd_is_only_used_where_it_can_be():
    big = np.zeros((_fused.FUSED_FROM,), np.float32)
    assert _fused.usable(big, big.copy())
    assert not _fused.usable(big[:-1], big[:-1].copy())  # small: NumPy's call costs as much
    assert not _fused.usable(big, big.astype(np.float64))  # mixed dtypes: NumPy's promotion
    assert not _fused.usable(big.astype(np.float16), big.astype(np.float16))
    strided = np.zeros((2 * _fused.FUSED_FROM,), np.float32)[::2]
    assert not _fused.usable(strided, big)  # a view with strides: NumPy's loop
    frozen = big.copy()
    frozen.flags.writeable = False
    assert not _fused.usable(frozen, big)


def test_fused_sgd_matches_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed")
    rng = np.random.default_rng(1)
    w = rng.standard_normal((200, 100)).astype(np.float32)
    grads = [rng.standard_normal((200, 100)).astype(np.float32) for _ in range(3)]
    p, q = kit.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    mine = SGD([p], lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)
    theirs = torch.optim.SGD([q], lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)
    for g in grads:
        p.grad, q.grad = kit.tensor(g), torch.tensor(g)
        mine.step()
        theirs.step()
    np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("wd", [None, [0.0, 0.0]])
def test_mxnet_sgd_of_a_large_weight_gives_numpys_bits(wd):
    """gluon's SGD without momentum (`w -= g * lr * rescale`) takes the same fused loop."""
    from kit.optim.maths import mxnet_sgd

    rng = np.random.default_rng(2)
    w = rng.standard_normal((200, 100)).astype(np.float32)
    g = rng.standard_normal((200, 100)).astype(np.float32)
    weights = [kit.tensor(w.copy()), kit.tensor(w[:3].copy())]  # (large: fused; small: NumPy)
    mxnet_sgd(weights, [kit.tensor(g), kit.tensor(g[:3])], [{}, {}], [0.1, 0.1], wds=wd,
              rescale_grad=1 / 64)
    want = w.copy()
    want -= g * (0.1 * (1 / 64))
    np.testing.assert_array_equal(weights[0].numpy(), want, strict=True)
    np.testing.assert_array_equal(weights[1].numpy(), want[:3], strict=True)
    assert weights[0]._version == 1
