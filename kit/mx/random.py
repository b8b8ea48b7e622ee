"""`mx.random` and `mx.nd.random`: seeded sampling (uniform, normal, randint, shuffle).

One NumPy generator serves kit.mx, seeded by `mx.random.seed`, so a seeded program draws the same
numbers on every run (not the numbers MXNet draws: its generator is another algorithm). Samples
are drawn on the CPU and placed on `ctx`; they are constants, not recorded.
"""

from __future__ import annotations

import numpy as np

import kit
from kit.mx._ndutil import REAL, as_shape, kit_device, write_out
from kit.mx.ndarray import NDArray

__all__ = ["normal", "randint", "seed", "shuffle", "uniform"]

_GENERATOR = [np.random.default_rng()]


def generator():
    """The NumPy generator behind kit.mx's sampling (Dropout uses it too)."""
    return _GENERATOR[0]


def seed(seed_state, ctx="all"):
    """Seed kit.mx's generator (MXNet's `ctx` is accepted; one generator serves every device).

    >>> import kit.mx as mx
    >>> mx.random.seed(7); a = mx.nd.random.uniform(shape=(2,)).asnumpy()
    >>> mx.random.seed(7); bool((a == mx.nd.random.uniform(shape=(2,)).asnumpy()).all())
    True
    """
    if not isinstance(seed_state, (int, np.integer)) or isinstance(seed_state, bool):
        raise TypeError(f"mx.random.seed: seed_state must be an int, got {seed_state!r}")
    _GENERATOR[0] = np.random.default_rng(int(seed_state))


def _scalar(value, op, name):
    if isinstance(value, NDArray):
        raise TypeError(
            f"mx.nd.random.{op}: kit.mx takes a number for {name}, not an NDArray. Fix: sample "
            f"standard values and transform them, e.g. low + (high - low) * uniform(shape=...)"
        )
    return float(value)


def _place(values, dtype, ctx, out):
    shape = values.shape or (1,)
    array = NDArray(kit.tensor(values.reshape(shape).astype(np.dtype(dtype or REAL)),
                               device=kit_device(ctx)))
    return write_out(array, out)


def uniform(low=0.0, high=1.0, shape=(), dtype=None, ctx=None, out=None):
    """Samples from U[low, high); float32 by default, shape (1,) when no shape is given."""
    low, high = _scalar(low, "uniform", "low"), _scalar(high, "uniform", "high")
    return _place(generator().uniform(low, high, as_shape(shape)), dtype, ctx, out)


def normal(loc=0.0, scale=1.0, shape=(), dtype=None, ctx=None, out=None):
    """Samples from N(loc, scale**2); float32 by default."""
    loc, scale = _scalar(loc, "normal", "loc"), _scalar(scale, "normal", "scale")
    if scale < 0:
        raise ValueError(f"mx.nd.random.normal: scale must be >= 0, got {scale}")
    return _place(generator().normal(loc, scale, as_shape(shape)), dtype, ctx, out)


def randint(low, high, shape=(), dtype="int32", ctx=None, out=None):
    """Integers from [low, high); int32 by default, as in MXNet."""
    low, high = int(_scalar(low, "randint", "low")), int(_scalar(high, "randint", "high"))
    if high <= low:
        raise ValueError(f"mx.nd.random.randint: need low < high, got low={low}, high={high}")
    return _place(generator().integers(low, high, as_shape(shape)), dtype, ctx, out)


def shuffle(data):
    """A copy of `data` with its rows (axis 0) in a random order."""
    if not isinstance(data, NDArray):
        raise TypeError(f"mx.nd.random.shuffle: expected an NDArray, got {type(data).__name__}")
    order = generator().permutation(data.shape[0])
    return data[NDArray(kit.tensor(order, device=data._t.device))]
