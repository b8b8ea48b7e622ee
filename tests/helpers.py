"""Shared test helpers: the three checks every op gets (finite differences, second order, PyTorch).

`check_op(fn, *arrays)` runs kit.gradcheck (central differences in float64) and, with `order=2`,
kit.gradgradcheck. `compare_torch(kit_fn, torch_fn, *arrays)` runs the same expression in kit and in
PyTorch and compares the forward values and the gradients of every input.
"""

from __future__ import annotations

import numpy as np
import pytest

import kit


def leaf(array, device="cpu", dtype=np.float64, requires_grad=True):
    """A leaf Tensor holding `array` in `dtype` on `device`."""
    return kit.tensor(np.asarray(array, dtype=dtype), device=device, requires_grad=requires_grad)


def host(t):
    """The data of a Tensor (or array) as a float64 NumPy array."""
    data = t.data if isinstance(t, kit.Tensor) else t
    if kit.backend.device_of(data) == "gpu":
        data = data.get()
    return np.asarray(data, dtype=np.float64)


def rand(*shape, rng=None, low=-2.0, high=2.0):
    """Uniform float64 data; `rng` defaults to a fresh generator seeded with 0."""
    rng = rng if rng is not None else np.random.default_rng(0)
    return rng.uniform(low, high, size=shape)


def away_from(array, points, gap=0.05):
    """Move elements within `gap` of any of `points` away, so differences never straddle a kink."""
    array = np.array(array, dtype=np.float64)
    for p in points:
        near = np.abs(array - p) < gap
        array[near] = p + np.where(array[near] >= p, gap, -gap) * 2
    return array


def check_op(fn, *arrays, device="cpu", order=1, atol=1e-5, rtol=1e-3):
    """gradcheck (and with order=2 gradgradcheck) of `fn` on float64 leaves built from `arrays`.

    Non-array arguments (None, ints, bool masks) are passed through without requiring grad.
    """
    inputs = tuple(_kit_value(_arrays(a), device) for a in arrays)
    assert kit.gradcheck(fn, inputs, atol=atol, rtol=rtol)
    if order >= 2:
        assert kit.gradgradcheck(fn, inputs, atol=atol, rtol=rtol)


def _arrays(a):
    """NumPy scalars (what 0-d arithmetic returns) as 0-d arrays."""
    return np.asarray(a) if isinstance(a, np.generic) else a


def _torch_value(torch, a):
    if isinstance(a, np.ndarray) and a.dtype.kind == "f":
        return torch.tensor(a, dtype=torch.float64, requires_grad=True)
    if isinstance(a, np.ndarray):
        return torch.from_numpy(a.copy())
    return a


def _kit_value(a, device):
    if isinstance(a, np.ndarray) and a.dtype.kind == "f":
        return leaf(a, device)
    if isinstance(a, np.ndarray):
        return kit.tensor(a, device=device)
    return a


def compare_torch(kit_fn, torch_fn, *arrays, device="cpu", atol=1e-10, rtol=1e-7, seed=1):
    """Forward values and input gradients of kit_fn and torch_fn agree on the same float64 data.

    Float arrays become leaves that require grad; other arrays (indices, masks) become constant
    tensors; anything else is passed as is. The outputs are reduced with the same random weights,
    so every output element's gradient is compared, not only their sum.
    """
    torch = pytest.importorskip("torch")
    arrays = [_arrays(a) for a in arrays]
    k_in = [_kit_value(a, device) for a in arrays]
    t_in = [_torch_value(torch, a) for a in arrays]
    k_out = kit_fn(*k_in)
    t_out = torch_fn(*t_in)
    k_outs = k_out if isinstance(k_out, (tuple, list)) else (k_out,)
    t_outs = t_out if isinstance(t_out, (tuple, list)) else (t_out,)
    assert len(k_outs) == len(t_outs)
    rng = np.random.default_rng(seed)
    k_loss = t_loss = 0.0
    for k, t in zip(k_outs, t_outs, strict=True):
        assert tuple(k.shape) == tuple(t.shape), (k.shape, t.shape)
        np.testing.assert_allclose(host(k), t.detach().numpy(), atol=atol, rtol=rtol)
        if t.requires_grad:
            assert k.requires_grad
            w = rng.standard_normal(tuple(t.shape))
            k_loss = k_loss + (k * leaf(w, device, requires_grad=False)).sum()
            t_loss = t_loss + (t * torch.from_numpy(w)).sum()
    if isinstance(t_loss, float):
        return
    k_loss.backward()
    t_loss.backward()
    for k, t in zip(k_in, t_in, strict=True):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            if t.grad is None:
                assert k.grad is None or not host(k.grad).any()
            else:
                assert k.grad is not None, "kit gave no gradient where PyTorch gave one"
                np.testing.assert_allclose(host(k.grad), t.grad.numpy(force=True), atol=atol,
                                           rtol=rtol)  # force: a ZeroTensor (sgn) too
