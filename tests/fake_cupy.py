"""A stand-in for CuPy, for testing kit's GPU code paths on machines without a GPU.

`installed()` puts a module named `cupy` in sys.modules whose arrays are NumPy arrays of another
type (so kit.backend files them under device "gpu"), and resets kit.backend's probe to find it.
Like CuPy it refuses to mix its arrays with NumPy arrays in one operation, turns full reductions
into 0-d arrays, and times with events. It computes on the CPU, so its times say nothing about a
GPU, and it cannot compile CUDA kernels (ElementwiseKernel and RawKernel raise). With
`installed(elementwise=True)` its ElementwiseKernel runs the operation instead, when it is written
in the small part of C that kit.compile generates (typed declarations and assignments of
arithmetic, comparisons, ?:, casts and math functions), by translating it to NumPy: so the
generated CUDA code of a fused kernel is run, not only generated.
"""

import contextlib
import math
import re
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
        self.ptr = array.view(np.ndarray).ctypes.data  # what NCCL is given (tests/fake_nccl.py)

    def copy_from_device_async(self, src, size, stream=None):
        dst = self.array.view(np.ndarray).reshape(-1).view(np.uint8)
        dst[:size] = src.array.view(np.ndarray).reshape(-1).view(np.uint8)[:size]


class _Event:
    def __init__(self):
        self.when = None
        self.done = True  # the fake computes synchronously

    def record(self, stream=None):
        self.when = time.perf_counter()

    def synchronize(self):
        pass


class _Stream:
    ptr = 0

    def synchronize(self):
        pass


def _no_kernels(*args, **kwargs):
    raise NotImplementedError("the fake CuPy cannot compile CUDA kernels")


_C_TYPES = {"float": "float32", "double": "float64", "bool": "bool_", "long long": "int64",
            "int": "int32"}
_C_CALLS = {"fabs": "absolute", "pow": "power", **{f: f for f in (
    "exp", "log", "log1p", "expm1", "sqrt", "tanh", "sin", "cos", "isnan")}}
_TOKEN = re.compile(
    r"\s*(long long|\d+\.\d*(?:e[-+]?\d+)?|\d+|[A-Za-z_]\w*|\|\||&&|==|!=|<=|>=|\S)")


class _CExpression:
    """C expressions (the subset kit.compile writes) as NumPy source; recursive descent."""

    def __init__(self, text):
        self.tokens = _TOKEN.findall(text)
        self.at = 0

    def peek(self, k=0):
        return self.tokens[self.at + k] if self.at + k < len(self.tokens) else None

    def take(self, expected=None):
        token = self.tokens[self.at]
        if expected is not None and token != expected:
            raise NotImplementedError(f"fake ElementwiseKernel: expected {expected!r}, "
                                      f"got {token!r}")
        self.at += 1
        return token

    def parse(self):
        found = self.ternary()
        if self.peek() is not None:
            raise NotImplementedError(f"fake ElementwiseKernel: cannot read {self.peek()!r}")
        return found

    def ternary(self):
        test = self.binary(0)
        if self.peek() != "?":
            return test
        self.take("?")
        yes = self.ternary()
        self.take(":")
        return f"np.where({test}, {yes}, {self.ternary()})"

    LEVELS = [("||",), ("&&",), ("==", "!="), ("<", "<=", ">", ">="), ("+", "-"), ("*", "/")]
    NAMES = {"||": "np.logical_or", "&&": "np.logical_and"}

    def binary(self, level):
        if level == len(self.LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in self.LEVELS[level]:
            op = self.take()
            right = self.binary(level + 1)
            left = f"{self.NAMES[op]}({left}, {right})" if op in self.NAMES else \
                f"({left} {op} {right})"
        return left

    def unary(self):
        if self.peek() == "-":
            self.take()
            return f"(-{self.unary()})"
        if self.peek() == "!":
            self.take()
            return f"np.logical_not({self.unary()})"
        if self.peek() == "(" and self.peek(1) in _C_TYPES and self.peek(2) == ")":
            self.take("(")
            dtype = _C_TYPES[self.take()]
            self.take(")")
            return f"np.asarray({self.unary()}).astype(np.{dtype})"
        return self.primary()

    def primary(self):
        token = self.take()
        if token == "(":
            inner = self.ternary()
            self.take(")")
            return f"({inner})"
        if token in _C_CALLS and self.peek() == "(":
            self.take("(")
            args = [self.ternary()]
            while self.peek() == ",":
                self.take(",")
                args.append(self.ternary())
            self.take(")")
            return f"np.{_C_CALLS[token]}({', '.join(args)})"
        if re.fullmatch(r"[A-Za-z_]\w*|\d+(\.\d*(e[-+]?\d+)?)?", token):
            return token
        raise NotImplementedError(f"fake ElementwiseKernel: cannot read {token!r}")


def _params(text):
    """[(dtype, name)] of CuPy's "float32 x, float64 y"."""
    return [(np.dtype(p.split()[0]), p.split()[1]) for p in text.split(",") if p.strip()]


def _translate(names, statements, returned):
    """A NumPy function of `names` running C `statements` (declarations, assignments, a
    `return`); it returns `returned` (a tuple expression) unless a `return` does."""
    lines = []
    for statement in filter(None, (s.strip() for s in statements.split(";"))):
        if statement.startswith("return "):
            lines.append(f"    return {_CExpression(statement[7:]).parse()}")
            continue
        head, _, value = statement.partition("=")
        words = head.split()
        expression = _CExpression(value).parse()
        ctype = " ".join(words[:-1])
        if ctype:  # a typed declaration converts the value to its type
            expression = f"np.asarray({expression}).astype(np.{_C_TYPES[ctype]})"
        lines.append(f"    {words[-1]} = {expression}")
    source = f"def kernel({', '.join(names)}):\n" + "\n".join(lines) + \
        f"\n    return {returned}\n"
    namespace = {"np": np}
    exec(source, namespace)
    return namespace["kernel"]


def _inputs(args, params):
    arrays = [np.asarray(_host(a) if isinstance(a, ndarray) else a, dtype)
              for a, (dtype, _) in zip(args, params, strict=True)]
    return arrays, np.broadcast_shapes(*(a.shape for a in arrays))


class _ElementwiseKernel:
    """cupy.ElementwiseKernel over NumPy: `operation` translated once, run on whole arrays."""

    def __init__(self, in_params, out_params, operation, name="kernel"):
        self.inputs, self.outputs = _params(in_params), _params(out_params)
        self.kernel = _translate([n for _, n in self.inputs], operation,
                                 f"({''.join(n + ', ' for _, n in self.outputs)})")
        self.name = name

    def __call__(self, *args):
        arrays, shape = _inputs(args, self.inputs)
        with np.errstate(all="ignore"):
            values = self.kernel(*arrays)
        outs = tuple(_wrap(np.array(np.broadcast_to(v, shape), dtype))
                     for v, (dtype, _) in zip(values, self.outputs, strict=True))
        return outs if len(outs) > 1 else outs[0]


class _ReductionKernel:
    """cupy.ReductionKernel over NumPy, for sums (`a + b`) of a `map_expr` that calls a
    function of the preamble."""

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
                 name="reduce", reduce_type=None, preamble=""):
        if (reduce_expr, post_map_expr, identity) != ("a + b", "o0 = a", "0"):
            raise NotImplementedError("the fake ReductionKernel only sums")
        self.inputs, self.outputs = _params(in_params), _params(out_params)
        header, _, body = preamble.partition("{")
        function = re.search(r"(\w+)\(", header).group(1)
        parameters = [p.split()[-1] for p in header[header.index("(") + 1:header.index(")")]
                      .split(",")]
        namespace = {function: _translate(parameters, body.rsplit("}", 1)[0], "None")}
        self.map = lambda *arrays: eval(map_expr, namespace, dict(  # noqa: S307 - test double
            zip((n for _, n in self.inputs), arrays, strict=True)))

    def __call__(self, *args, axis=None, keepdims=False):
        arrays, shape = _inputs(args, self.inputs)
        with np.errstate(all="ignore"):
            values = np.broadcast_to(self.map(*arrays), shape)
        return _wrap(np.asarray(values.sum(axis=axis, keepdims=keepdims), self.outputs[0][0]))


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
        getDeviceCount=lambda: 1, getDevice=lambda: 0,
        getDeviceProperties=lambda i: {"name": b"Fake GPU (NumPy)", "totalGlobalMem": 2**30},
        runtimeGetVersion=lambda: 12000, driverGetVersion=lambda: 12000)
    cupy.cuda = types.SimpleNamespace(
        runtime=runtime, Event=_Event, get_current_stream=_Stream,
        get_elapsed_time=lambda start, end: (end.when - start.when) * 1e3)
    return cupy


def _special():
    """cupyx.scipy.special's erf (kit's exact GELU uses it on the GPU), erfc, gammaln and
    erfinv, on the host."""
    from kit.ops.elementwise_math import erfinv_array

    def erf(x):
        host = _host(x)
        return _wrap(np.vectorize(math.erf, otypes=[host.dtype])(host))

    special = types.ModuleType("cupyx.scipy.special")
    special.erf = erf
    special.erfc = lambda x: _wrap(np.vectorize(math.erfc, otypes=[_host(x).dtype])(_host(x)))
    special.gammaln = lambda x: _wrap(np.vectorize(
        lambda v: math.lgamma(v) if v > 0 or v != math.floor(v) else math.inf,
        otypes=[_host(x).dtype])(_host(x)))
    special.erfinv = lambda x: _wrap(erfinv_array(_host(x)))
    scipy = types.ModuleType("cupyx.scipy")
    scipy.special = special
    cupyx = types.ModuleType("cupyx")
    cupyx.scipy = scipy
    return {"cupyx": cupyx, "cupyx.scipy": scipy, "cupyx.scipy.special": special}


@contextlib.contextmanager
def installed(nccl=False, elementwise=False):
    """Make `import cupy` (and cupyx.scipy.special) find the fake, and kit.backend probe again;
    undo both afterwards. With `nccl`, `cupy.cuda.nccl` is tests/fake_nccl.py (NCCL's calls done
    by MPI); without, it is missing, as in a CuPy without NCCL. `elementwise=True`: its
    ElementwiseKernel runs kit.compile's generated C (see above)."""
    fakes = {"cupy": _module(), **_special()}
    fakes["cupy.cuda.nccl"] = None  # `import cupy.cuda.nccl` raises ImportError
    saved = {name: sys.modules.get(name) for name in fakes}
    state = (backend._probe_done, backend._cupy, backend._reason)
    sys.modules.update(fakes)
    if nccl:
        import fake_nccl

        sys.modules["cupy.cuda.nccl"] = sys.modules["cupy"].cuda.nccl = fake_nccl.module()
    if elementwise:
        sys.modules["cupy"].ElementwiseKernel = _ElementwiseKernel
        sys.modules["cupy"].ReductionKernel = _ReductionKernel
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
