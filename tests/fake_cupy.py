"""A stand-in for CuPy, for testing kit's GPU code paths on machines without a GPU.

`installed()` puts a module named `cupy` in sys.modules whose arrays are NumPy arrays of another
type (so kit.backend files them under device "gpu"), and resets kit.backend's probe to find it.
Like CuPy it refuses to mix its arrays with NumPy arrays in one operation, turns full reductions
into 0-d arrays, and times with events. It computes on the CPU, so its times say nothing about a
GPU, and it cannot compile CUDA kernels (ElementwiseKernel and RawKernel raise).
"""

import contextlib
import math
import sys
import time
import types

import numpy as np

from kit import backend


def _wrap(value):
    """NumPy results as fake device arrays (scalars become 0-d arrays, as CuPy returns them)."""
    if isinstance(value, tuple):
        return tuple(_wrap(v) for v in value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if type(value) is np.ndarray:
        return value.view(ndarray)
    return value


def _host(value):
    """Fake device arrays as plain NumPy views; plain NumPy arrays with dimensions are refused."""
    if isinstance(value, ndarray):
        return value.view(np.ndarray)
    if type(value) is np.ndarray and value.ndim > 0:
        raise TypeError(f"Unsupported type {type(value)}")  # CuPy's message for mixed operands
    if isinstance(value, (tuple, list)):
        return type(value)(_host(v) for v in value)
    return value


def _index(key):
    """An index for a fake array: like CuPy, NumPy arrays and lists in it are accepted."""
    if isinstance(key, tuple):
        return tuple(_index(k) for k in key)
    return key.view(np.ndarray) if isinstance(key, ndarray) else key


class ndarray(np.ndarray):  # noqa: N801 - CuPy's name
    """A fake device array."""

    __module__ = "cupy"  # what kit.backend looks at to tell the devices apart

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            kwargs["out"] = _host(kwargs["out"])
        return _wrap(getattr(ufunc, method)(*_host(inputs), **kwargs))

    def __array_function__(self, func, types_, args, kwargs):
        return _wrap(func(*_host(args), **{k: _host(v) for k, v in kwargs.items()}))

    def __getitem__(self, key):
        return _wrap(self.view(np.ndarray)[_index(key)])

    def __setitem__(self, key, value):
        self.view(np.ndarray)[_index(key)] = _host(value)

    def argmax(self, *args, **kwargs):  # CuPy gives 0-d arrays where NumPy gives scalars
        return _wrap(self.view(np.ndarray).argmax(*args, **kwargs))

    def argmin(self, *args, **kwargs):
        return _wrap(self.view(np.ndarray).argmin(*args, **kwargs))

    def get(self):
        return np.array(self.view(np.ndarray), copy=True)

    @property
    def data(self):
        return _MemoryPointer(self)


class _MemoryPointer:
    def __init__(self, array):
        self.array = array

    def copy_from_device_async(self, src, size, stream=None):
        dst = self.array.view(np.ndarray).reshape(-1).view(np.uint8)
        dst[:size] = src.array.view(np.ndarray).reshape(-1).view(np.uint8)[:size]


class _Event:
    def __init__(self):
        self.when = None

    def record(self, stream=None):
        self.when = time.perf_counter()

    def synchronize(self):
        pass


class _Stream:
    def synchronize(self):
        pass


def _no_kernels(*args, **kwargs):
    raise NotImplementedError("the fake CuPy cannot compile CUDA kernels")


def _module():
    cupy = types.ModuleType("cupy")
    cupy.ndarray = ndarray
    cupy.__version__ = "0.0.0+fake"

    def array(obj, dtype=None, copy=True):  # host data is welcome here: this is a transfer
        obj = obj.view(np.ndarray) if isinstance(obj, ndarray) else obj
        return np.array(obj, dtype=dtype, copy=copy).view(ndarray)

    def asarray(obj, dtype=None):
        if isinstance(obj, ndarray) and (dtype is None or obj.dtype == dtype):
            return obj
        return array(obj, dtype=dtype)

    def numpy_function(name):
        fn = getattr(np, name)
        if not callable(fn) or isinstance(fn, type):
            return fn

        def call(*args, **kwargs):
            return _wrap(fn(*_host(args), **{k: _host(v) for k, v in kwargs.items()}))

        if isinstance(fn, np.ufunc):  # CuPy's ufuncs have .at (scatter), as kit's indexing uses
            call.at = lambda a, index, values=None: fn.at(
                _host(a), _index(index), *(() if values is None else (_host(values),)))
        return call

    cupy.array, cupy.asarray = array, asarray
    # cupy.lib.stride_tricks.as_strided: a view of the device array, still a device array
    cupy.lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(
        as_strided=lambda x, shape=None, strides=None: np.lib.stride_tricks.as_strided(
            x, shape, strides, subok=True)))
    cupy.ElementwiseKernel = cupy.RawKernel = _no_kernels
    cupy.__getattr__ = numpy_function
    runtime = types.SimpleNamespace(
        getDeviceCount=lambda: 1,
        getDeviceProperties=lambda i: {"name": b"Fake GPU (NumPy)", "totalGlobalMem": 2**30},
        runtimeGetVersion=lambda: 12000, driverGetVersion=lambda: 12000)
    cupy.cuda = types.SimpleNamespace(
        runtime=runtime, Event=_Event, get_current_stream=_Stream,
        get_elapsed_time=lambda start, end: (end.when - start.when) * 1e3)
    return cupy


def _special():
    """cupyx.scipy.special's erf (kit's exact GELU uses it on the GPU) and erfinv, on the host."""
    from kit.ops.elementwise_math import erfinv_array

    def erf(x):
        host = _host(x)
        return _wrap(np.vectorize(math.erf, otypes=[host.dtype])(host))

    special = types.ModuleType("cupyx.scipy.special")
    special.erf = erf
    special.erfinv = lambda x: _wrap(erfinv_array(_host(x)))
    scipy = types.ModuleType("cupyx.scipy")
    scipy.special = special
    cupyx = types.ModuleType("cupyx")
    cupyx.scipy = scipy
    return {"cupyx": cupyx, "cupyx.scipy": scipy, "cupyx.scipy.special": special}


@contextlib.contextmanager
def installed():
    """Make `import cupy` (and cupyx.scipy.special) find the fake, and kit.backend probe again;
    undo both afterwards."""
    fakes = {"cupy": _module(), **_special()}
    saved = {name: sys.modules.get(name) for name in fakes}
    state = (backend._probe_done, backend._cupy, backend._reason)
    sys.modules.update(fakes)
    backend._probe_done, backend._cupy, backend._reason = False, None, None
    try:
        yield sys.modules["cupy"]
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
        backend._probe_done, backend._cupy, backend._reason = state
