"""Creating Tensors: from data (`tensor`, `from_numpy`), filled (`zeros`, `full`, `arange`, ...)
and random (`randn`, `rand`, `randint`, seeded by `manual_seed`), with PyTorch's dtype defaults."""

from __future__ import annotations

import numpy as np

from kit import backend
from kit._tensor import _DEFAULT_FLOAT, SUPPORTED_DTYPES, Tensor, float64, int64


def _to_array(data, dtype, device):
    """Convert user data to an xp array with PyTorch's dtype defaults."""
    if isinstance(data, Tensor):
        data = data._data
    if device is None:
        device = backend.device_of(data)  # GPU data stays on the GPU unless told otherwise
    xp = np if backend.normalize_device(device) == "cpu" else backend.require_gpu("device='gpu'")
    if dtype is not None:
        dtype = np.dtype(dtype)
    if isinstance(data, (np.ndarray, np.generic)) or backend.device_of(data) == "gpu":
        arr = data
    else:
        arr = np.asarray(data)
        if dtype is None and arr.dtype == float64 and not _has_float64(data):
            arr = arr.astype(_DEFAULT_FLOAT)  # Python floats default to float32
    if dtype is not None:
        arr = arr.astype(dtype, copy=False)
    if arr.dtype not in SUPPORTED_DTYPES:
        raise TypeError(
            f"kit.tensor: unsupported dtype {arr.dtype} (from {type(data).__name__}); kit "
            f"supports {', '.join(str(d) for d in SUPPORTED_DTYPES)}. Fix: convert the data "
            f"first, e.g. np.asarray(data, dtype=np.float32)"
        )
    if xp is np:
        arr = backend.to_device(arr, "cpu")
        return np.array(arr, copy=True)
    return xp.array(arr)


def _has_float64(data):
    """True if a nested Python sequence holds an explicit np.float64 (kept as float64)."""
    if isinstance(data, np.floating):
        return data.dtype == float64
    if isinstance(data, (list, tuple)):
        return any(_has_float64(x) for x in data)
    return False


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new leaf Tensor holding a copy of `data`.

    Python floats give float32 (as in PyTorch); NumPy arrays keep their dtype.

    >>> import kit
    >>> kit.tensor([1.0, 2.0]).dtype
    dtype('float32')
    """
    return Tensor(_to_array(data, dtype, device), requires_grad=requires_grad)


def from_numpy(array):
    """A Tensor sharing memory with a NumPy array (as `torch.from_numpy`)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    if array.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"from_numpy: unsupported dtype {array.dtype}")
    return Tensor(array)


def _xp(device):
    """The array module for a `device=` argument (a clear error when no GPU is usable)."""
    return np if backend.normalize_device(device) == "cpu" else backend.require_gpu("device")


def _shape(shape):
    """zeros(2, 3) or zeros((2, 3))."""
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape


def _placed(data, device):
    """Host data (kit's generator draws on the CPU) moved to `device`."""
    return backend.to_device(data, "gpu") if backend.normalize_device(device) == "gpu" else data


def _creator(fill):
    def create(*shape, dtype=None, device=None, requires_grad=False):
        return Tensor(fill(_xp(device), _shape(shape), np.dtype(dtype or _DEFAULT_FLOAT)),
                      requires_grad)

    return create


zeros = _creator(lambda xp, shape, dtype: xp.zeros(shape, dtype))
ones = _creator(lambda xp, shape, dtype: xp.ones(shape, dtype))
empty = zeros


def full(shape, fill_value, dtype=None, device=None, requires_grad=False):
    dtype = np.dtype(dtype or _DEFAULT_FLOAT)
    return Tensor(_xp(device).full(shape, fill_value, dtype), requires_grad)


def zeros_like(t, dtype=None, requires_grad=False):
    xp = backend.get_array_module(t._data)
    return Tensor(xp.zeros_like(t._data, dtype=dtype), requires_grad)


def ones_like(t, dtype=None, requires_grad=False):
    xp = backend.get_array_module(t._data)
    return Tensor(xp.ones_like(t._data, dtype=dtype), requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Like torch.arange: integers give int64, any float argument gives float32."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        floats = any(isinstance(v, float) for v in (start, end, step))
        dtype = _DEFAULT_FLOAT if floats else int64
    return Tensor(_xp(device).arange(start, end, step).astype(dtype), requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    data = _xp(device).linspace(start, end, steps).astype(dtype or _DEFAULT_FLOAT)
    return Tensor(data, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    return Tensor(_xp(device).eye(n, m, dtype=np.dtype(dtype or _DEFAULT_FLOAT)), requires_grad)


class _Random:
    """kit's random generator, seeded by `manual_seed` (NumPy's PCG64, not PyTorch's stream)."""

    generator = np.random.default_rng(0)


def manual_seed(seed: int):
    """Seed kit's random functions (randn, rand, randint) for reproducible lessons."""
    _Random.generator = np.random.default_rng(seed)
    return _Random.generator


def rng_state():
    """The state of kit's random generator (NumPy's bit-generator state, a dict), for
    `set_rng_state`: activation checkpointing replays a forward's random draws with it."""
    return _Random.generator.bit_generator.state


def set_rng_state(state):
    _Random.generator.bit_generator.state = state


def _random(draw):
    def create(*shape, dtype=None, device=None, requires_grad=False):
        data = draw(_Random.generator, _shape(shape)).astype(dtype or _DEFAULT_FLOAT)
        return Tensor(_placed(data, device), requires_grad)

    return create


randn = _random(lambda rng, shape: rng.standard_normal(shape))
rand = _random(lambda rng, shape: rng.random(shape))


def randint(low, high=None, size=(), dtype=None, device=None):
    if high is None:
        low, high = 0, low
    data = _Random.generator.integers(low, high, size=size).astype(dtype or int64)
    return Tensor(_placed(data, device))
