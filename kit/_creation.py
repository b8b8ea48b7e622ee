"""Creating Tensors: from data (`tensor`, `from_numpy`), filled (`zeros`, `full`, `arange`, ...),
like another (`zeros_like`, `randn_like`, ...) and random (`randn`, `rand`, `randint`, seeded by
`manual_seed`), with PyTorch's defaults: the default float dtype (`set_default_dtype`) and device
(`set_default_device`)."""

from __future__ import annotations

import functools
import warnings

import numpy as np

from kit import _promotion, backend
from kit._promotion import default_float
from kit._tensor import SUPPORTED_DTYPES, Tensor, float64, int64
from kit.grad_mode import STATE


def traced(name):
    """A creation function that kit.compile records when a traced function calls it (made again
    on every call of the compiled function; random ones draw fresh numbers)."""

    def decorate(fn):
        @functools.wraps(fn)
        def create(*args, **kwargs):
            tracing = STATE.tracing
            if tracing is not None:
                return tracing.create(name, fn, args, kwargs)
            return fn(*args, **kwargs)

        create.__name__ = create.__qualname__ = name
        return create

    return decorate


class _Defaults:
    """The device factories use when none is given (torch.set_default_device)."""

    device = "cpu"


def set_default_dtype(dtype):
    """The dtype Python floats, float factories (`zeros`, `randn`, ...) and integer-to-float
    results get: float32 at start, float64 or float16 (as torch.set_default_dtype).

    >>> import kit
    >>> kit.set_default_dtype(kit.float64); kit.tensor([1.5]).dtype
    dtype('float64')
    >>> kit.set_default_dtype(kit.float32)
    """
    d = np.dtype(dtype)
    if d.kind != "f":
        raise TypeError(f"only floating-point types are supported as the default type (got "
                        f"{d}). Fix: kit.set_default_dtype(kit.float64) or kit.float32")
    _promotion._DEFAULT_FLOAT = d


def get_default_dtype():
    """The default float dtype (float32 unless set_default_dtype changed it)."""
    return default_float()


def set_default_device(device):
    """The device factories create tensors on when no `device=` is given: "cpu" (also None) or
    "gpu" ("cuda"), as torch.set_default_device. Tensors made from data already on a device,
    `*_like` results and `from_numpy` keep their own device."""
    _Defaults.device = backend.normalize_device(device)


def get_default_device():
    """The device factories use when none is given ("cpu" unless set_default_device changed it)."""
    return _Defaults.device


def _device(device):
    return _Defaults.device if device is None else backend.normalize_device(device)


def _to_array(data, dtype, device):
    """Convert user data to an xp array with PyTorch's dtype defaults."""
    if isinstance(data, Tensor):
        data = data._data
    if device is None and backend.device_of(data) == "gpu":
        device = "gpu"  # GPU data stays on the GPU unless told otherwise
    device = _device(device)
    xp = np if device == "cpu" else backend.require_gpu("device='gpu'")
    if dtype is not None:
        dtype = np.dtype(dtype)
    if isinstance(data, (np.ndarray, np.generic)) or backend.device_of(data) == "gpu":
        arr = data
    else:
        arr = np.asarray(data)
        if dtype is None and arr.dtype == float64 and not _has_float64(data):
            arr = arr.astype(default_float())  # Python floats get the default float dtype
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


@traced("tensor")
def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new leaf Tensor holding a copy of `data`.

    Python floats give float32 (the default dtype, as in PyTorch); NumPy arrays keep their dtype.

    >>> import kit
    >>> kit.tensor([1.0, 2.0]).dtype
    dtype('float32')
    """
    _copy_construct(data, "torch.tensor")
    return Tensor(_to_array(data, dtype, device), requires_grad=requires_grad)


def _copy_construct(data, spelling):
    if isinstance(data, Tensor):  # PyTorch's warning, and its advice
        warnings.warn(f"To copy construct from a tensor, it is recommended to use "
                      f"sourceTensor.detach().clone() or sourceTensor.detach().clone()"
                      f".requires_grad_(True), rather than {spelling}(sourceTensor).",
                      UserWarning, stacklevel=3)


def _new_tensor(data, dtype=None, device=None, requires_grad=False):
    _copy_construct(data, "tensor.new_tensor")
    return Tensor(_to_array(data, dtype, device), requires_grad=requires_grad)


@traced("from_numpy")
def from_numpy(array):
    """A Tensor sharing memory with a NumPy array (as `torch.from_numpy`)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    if array.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"from_numpy: unsupported dtype {array.dtype}")
    return Tensor(array)


def _xp(device):
    """The array module for a `device=` argument (a clear error when no GPU is usable)."""
    return np if _device(device) == "cpu" else backend.require_gpu("device")


def _shape(op, shape, size):
    """zeros(2, 3), zeros((2, 3)) or zeros(size=(2, 3)), as PyTorch accepts them."""
    if size is not None:
        if shape:
            raise TypeError(f"kit.{op}: give the shape once, as positional sizes or as size=, "
                            f"not both (got {shape} and size={size})")
        shape = (size,)
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape


def _placed(data, device):
    """Host data (kit's generator draws on the CPU) moved to `device`."""
    return backend.to_device(data, "gpu") if _device(device) == "gpu" else data


def _float_dtype(dtype):
    return default_float() if dtype is None else np.dtype(dtype)


def _filled(fill, shape, dtype, device, requires_grad):
    return Tensor(fill(_xp(device), shape, _float_dtype(dtype)), requires_grad)


def _creator(name, fill):
    def create(*shape, size=None, dtype=None, device=None, requires_grad=False):
        return _filled(fill, _shape(name, shape, size), dtype, device, requires_grad)

    create.__name__ = create.__qualname__ = name
    create.__doc__ = f"A tensor of {name} of the given shape, as torch.{name}."
    return traced(name)(create)


_ZEROS = lambda xp, shape, dtype: xp.zeros(shape, dtype)  # noqa: E731 - table entries
_ONES = lambda xp, shape, dtype: xp.ones(shape, dtype)  # noqa: E731
zeros = _creator("zeros", _ZEROS)
ones = _creator("ones", _ONES)
empty = _creator("empty", _ZEROS)  # zeroed, not uninitialised memory


def _fill_dtype(fill_value):
    """torch.full's dtype from the value: bool, int64 for an int, else the default float."""
    if isinstance(fill_value, (bool, np.bool_)):
        return np.dtype(bool)
    return int64 if isinstance(fill_value, (int, np.integer)) else default_float()


@traced("full")
def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    """A tensor of `size` filled with `fill_value`; its dtype follows the value (bool, int64,
    default float) unless given, as torch.full."""
    dtype = _fill_dtype(fill_value) if dtype is None else np.dtype(dtype)
    return Tensor(_xp(device).full(_shape("full", (size,), None), fill_value, dtype),
                  requires_grad)


@traced("arange")
def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Like torch.arange: integers give int64, any float argument the default float dtype."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        floats = any(isinstance(v, float) for v in (start, end, step))
        dtype = default_float() if floats else int64
    return Tensor(_xp(device).arange(start, end, step).astype(dtype), requires_grad)


@traced("linspace")
def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    data = _xp(device).linspace(start, end, steps).astype(_float_dtype(dtype))
    return Tensor(data, requires_grad)


@traced("logspace")
def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    """base ** linspace(start, end, steps), as torch.logspace (computed in float64, then cast:
    an integer dtype gets the powers exactly)."""
    if steps < 0:
        raise RuntimeError(f"kit.logspace: number of steps must be non-negative, got {steps}")
    data = np.power(float(base), np.linspace(start, end, steps))
    data = np.rint(data) if dtype is not None and np.dtype(dtype).kind in "iu" else data
    return Tensor(_placed(data.astype(_float_dtype(dtype)), device), requires_grad)


@traced("eye")
def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    return Tensor(_xp(device).eye(n, m, dtype=_float_dtype(dtype)), requires_grad)


# --- random ---------------------------------------------------------------------------------
class _Random:
    """kit's random generator, seeded by `manual_seed` (NumPy's PCG64, not PyTorch's stream)."""

    generator = np.random.default_rng(0)


def manual_seed(seed: int):
    """Seed kit's random functions (randn, rand, randint) for reproducible lessons."""
    if STATE.tracing is not None:  # inside kit.compile's trace: the function runs eagerly
        STATE.tracing.observe(None, "seed")
    _Random.generator = np.random.default_rng(seed)
    return _Random.generator


def _draw(name, draw, shape, dtype, device, requires_grad, generator=None):
    dtype = _float_dtype(dtype)
    if dtype.kind != "f":
        raise NotImplementedError(f"kit.{name}: random floats need a floating dtype, got {dtype} "
                                  f"(PyTorch refuses too). Fix: dtype=kit.float32, or "
                                  f"kit.randint for integers")
    rng = _Random.generator if generator is None else generator.rng
    return Tensor(_placed(draw(rng, shape).astype(dtype), device), requires_grad)


def rng_state():
    """The state of kit's random generator (NumPy's bit-generator state, a dict), for
    `set_rng_state`: activation checkpointing replays a forward's random draws with it."""
    return _Random.generator.bit_generator.state


def set_rng_state(state):
    _Random.generator.bit_generator.state = state


def _random(name, draw):
    def create(*shape, size=None, generator=None, dtype=None, device=None, requires_grad=False):
        return _draw(name, draw, _shape(name, shape, size), dtype, device, requires_grad,
                     generator)

    create.__name__ = create.__qualname__ = name
    create.__doc__ = (f"Random numbers of the given shape, as torch.{name} (kit's generator: "
                      f"`manual_seed`, or `generator=kit.torch.Generator()`).")
    return traced(name)(create)


_NORMAL = lambda rng, shape: rng.standard_normal(shape)  # noqa: E731 - a table entry
_UNIFORM = lambda rng, shape: rng.random(shape)  # noqa: E731
randn = _random("randn", _NORMAL)
rand = _random("rand", _UNIFORM)


@traced("randint")
def randint(low, high=None, size=(), generator=None, dtype=None, device=None):
    """Random integers in [low, high) of shape `size` (int64 unless given), as torch.randint."""
    if high is None:
        low, high = 0, low
    rng = _Random.generator if generator is None else generator.rng
    data = rng.integers(low, high, size=size).astype(dtype or int64)
    return Tensor(_placed(data, device))


# --- like another tensor: its shape, dtype and device unless given -----------------------------
def _like(name, make):
    """torch.<name>: make(shape, dtype, device, requires_grad, *args) with `input`'s shape, and
    its dtype and device unless given."""

    def create(input, *args, dtype=None, device=None, requires_grad=False):  # noqa: A002
        if not isinstance(input, Tensor):
            raise TypeError(f"kit.{name}: expected a Tensor, got {type(input).__name__}. Fix: "
                            f"kit.{name.removesuffix('_like')}(shape) makes one from a shape")
        return make(tuple(input.shape), input.dtype if dtype is None else dtype,
                    input.device if device is None else device, requires_grad, *args)

    create.__name__ = create.__qualname__ = name
    create.__doc__ = (f"kit.{name.removesuffix('_like')} with the shape of `input`, and its dtype "
                      f"and device unless given (as torch.{name}).")
    return traced(name)(create)


zeros_like = _like("zeros_like", functools.partial(_filled, _ZEROS))
ones_like = _like("ones_like", functools.partial(_filled, _ONES))
empty_like = _like("empty_like", functools.partial(_filled, _ZEROS))
randn_like = _like("randn_like", functools.partial(_draw, "randn_like", _NORMAL))
rand_like = _like("rand_like", functools.partial(_draw, "rand_like", _UNIFORM))

# NOTE: the value is cast to the dtype: full_like of an int tensor with 2.7 holds 2, as PyTorch.
full_like = _like("full_like", lambda shape, dtype, device, requires_grad, fill_value: full(
    shape, fill_value, dtype, device, requires_grad))


# --- Tensor.new_*: a new tensor with the shape given and this one's dtype and device -------------
def _new(name, make):
    def method(self, *args, dtype=None, device=None, requires_grad=False):
        return make(*args, dtype=self.dtype if dtype is None else dtype,
                    device=self.device if device is None else device,
                    requires_grad=requires_grad)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"`x.{name}(...)`: kit.{name.removeprefix('new_')}(...) with x's dtype and "
                      f"device unless given (as PyTorch's Tensor.{name}).")
    return method


NEW = {name: _new(name, make) for name, make in (
    ("new_zeros", zeros), ("new_ones", ones), ("new_empty", empty), ("new_full", full),
    ("new_tensor", _new_tensor))}
