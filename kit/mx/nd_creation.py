"""mx.nd's array creation: array, zeros, ones, full, arange, *_like, and waitall.

float32 unless a dtype is given, on the current context unless `ctx` says otherwise, as in MXNet.
"""

from __future__ import annotations

import numpy as np

import kit
from kit import backend
from kit._tensor import Tensor
from kit.mx import random
from kit.mx._ndutil import REAL, as_shape, kit_device, tensor_of
from kit.mx.ndarray import NDArray

__all__ = [
    "arange", "array", "empty", "eye", "full", "linspace", "ones", "ones_like", "random_normal",
    "random_uniform",
    "waitall", "zeros", "zeros_like",
]


def array(source_array, ctx=None, dtype=None):
    """A new NDArray holding a copy of `source_array`; float32 unless `dtype` says otherwise.

    >>> import kit.mx as mx
    >>> mx.nd.array([1, 2, 3])
    <BLANKLINE>
    [1. 2. 3.]
    <NDArray 3 @cpu(0)>
    """
    if isinstance(source_array, NDArray):
        data = source_array._t._data
        dtype = data.dtype if dtype is None else dtype
    elif isinstance(source_array, Tensor):
        data = source_array._data
    elif backend.device_of(source_array) == "gpu":
        data = source_array
    else:
        data = np.asarray(source_array, dtype=REAL if dtype is None else dtype)
    return NDArray(kit.tensor(data, dtype=np.dtype(dtype or REAL), device=kit_device(ctx)))


def _creator(fill):
    def create(shape, ctx=None, dtype=None, **kwargs):
        return NDArray(fill(as_shape(shape), dtype=np.dtype(dtype or REAL), device=kit_device(ctx)))

    return create


zeros = _creator(kit.zeros)
ones = _creator(kit.ones)
empty = zeros  # NOTE: MXNet leaves empty() uninitialised; kit gives zeros, never garbage


def full(shape, val, ctx=None, dtype=None):
    dtype = np.dtype(dtype or REAL)
    return NDArray(kit.full(as_shape(shape), val, dtype=dtype, device=kit_device(ctx)))


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None, dtype=None):
    """Evenly spaced values in [start, stop), each repeated `repeat` times; float32."""
    values = np.arange(start, stop, step).astype(np.dtype(dtype or REAL))
    if repeat != 1:
        values = np.repeat(values, int(repeat))
    return NDArray(kit.tensor(values, device=kit_device(ctx)))


def eye(N, M=0, k=0, ctx=None, dtype=None):  # noqa: N803 - MXNet's names
    """An N x M (M=0: N x N) array with ones on the k-th diagonal; float32."""
    values = np.eye(N, M or N, k, dtype=np.dtype(dtype or REAL))
    return NDArray(kit.tensor(values, device=kit_device(ctx)))


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=None):
    """`num` evenly spaced values from start to stop (stop included unless endpoint=False)."""
    values = np.linspace(start, stop, int(num), endpoint=endpoint).astype(np.dtype(dtype or REAL))
    return NDArray(kit.tensor(values, device=kit_device(ctx)))


random_uniform = random.uniform  # MXNet's older spellings
random_normal = random.normal


def zeros_like(data):
    return NDArray(kit.zeros_like(tensor_of(data, "zeros_like")))


def ones_like(data):
    return NDArray(kit.ones_like(tensor_of(data, "ones_like")))


def waitall():
    """Wait for all queued work (a sync on the GPU; nothing is asynchronous on the CPU)."""
    backend.synchronize("gpu")
