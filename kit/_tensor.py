"""The Tensor: an xp array, plus what autograd needs to know about it (creation: _creation.py)."""

from __future__ import annotations

import warnings
import weakref

import numpy as np

from kit import _views, backend, engine, saved_tensors
from kit._errors import ShapeError
from kit._promotion import default_float
from kit.engine import AccumulateGrad
from kit.grad_mode import STATE

float16 = np.dtype("float16")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
bool_ = np.dtype("bool")
SUPPORTED_DTYPES = (float16, float32, float64, int8, int16, int32, int64, uint8, bool_)


# NOTE: a fresh tensor shares this read-only counter (one allocation fewer per op, which the
# cyclic GC notices on long graphs). It is a tuple so that a forgotten `t._vc[0] += 1` fails
# loudly; in-place changes go through bump_version, sharing through version_counter.
_FRESH = (0,)


def bump_version(t):
    """Record an in-place change of `t` (saved-tensor checks compare against this)."""
    vc = t._vc
    if vc is _FRESH:
        t._vc = [1]
    else:
        vc[0] += 1


def version_counter(t):
    """`t`'s own mutable version counter, to share with a view or to watch from a node."""
    if t._vc is _FRESH:
        t._vc = [0]
    return t._vc


class RemovableHandle:
    """Returned by `register_hook`; `.remove()` takes the hook off again."""

    _next_id = 0

    def __init__(self, hooks: dict):
        RemovableHandle._next_id += 1
        self.id = RemovableHandle._next_id
        self._hooks = hooks

    def remove(self):
        self._hooks.pop(self.id, None)


# The operators and op methods (x + y, x.sum(dim=1), x.add_(y)) are set on Tensor by
# kit/_tensor_methods.py, which generates them from the op registry (kit/ops/_registry.py).
class Tensor:
    """An n-dimensional array that records the operations made on it for backward."""

    __slots__ = (
        "_data", "_rg", "_grad", "_grad_fn", "_nr", "_edge", "_vc", "_acc", "_hooks",
        "_retains_grad", "name", "_base", "_view_src", "__weakref__",
    )
    __array_priority__ = 1000  # so that ndarray <op> Tensor defers to Tensor's reflected op

    def __init__(self, data, requires_grad=False):
        if type(data) is not np.ndarray:
            if type(requires_grad) is int and type(data) is int:  # torch.Tensor(2, 3): a shape
                data, requires_grad = (data, requires_grad), False
            data = _as_storage(data)
        self._data = data
        self._rg = requires_grad
        self._grad = None
        self._grad_fn = None
        self._nr = 0
        self._edge = None
        self._vc = _FRESH  # shared until the first in-place change: see bump_version
        self._acc = None
        self._hooks = None
        self._retains_grad = False
        self.name = None
        self._base = None  # a view: the Tensor that owns the storage (see kit/_views.py)
        self._view_src = None  # a view: the base's edge its history was made from
        if requires_grad:
            _check_grad_dtype(data.dtype, "requires_grad=True")

    @classmethod
    def _from_node(cls, data, node, nr):
        """A non-leaf Tensor: output `nr` of `node`."""
        t = cls(data)
        t._rg = True
        t._grad_fn = node
        t._nr = nr
        t._edge = (node, nr)
        return t

    # --- history (a view's is brought up to date first: see kit/_views.py) ----------------
    @property
    def grad_fn(self):
        """The node that made this tensor (None for a leaf), as PyTorch's `grad_fn`."""
        if self._base is not None:
            _views.refresh(self)
        node = self._grad_fn
        if node is not None and type(node) is engine.Node:
            engine.typed(node)  # its class named as PyTorch names it, when first looked at
        return node

    @grad_fn.setter
    def grad_fn(self, node):
        self._grad_fn = node

    @property
    def output_nr(self) -> int:
        """Which output of its grad_fn this tensor is (0 for a leaf), as PyTorch's."""
        if self._base is not None:
            _views.refresh(self)
        return self._nr

    @property
    def requires_grad(self) -> bool:
        if self._base is not None:
            _views.refresh(self)
        return self._rg

    @requires_grad.setter
    def requires_grad(self, flag):
        if self._grad_fn is not None:  # NOTE: even setting True raises here, as in PyTorch
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        self.requires_grad_(flag)

    def _is_view(self) -> bool:
        """True when this tensor shares the storage of another (its `_base`), as PyTorch's."""
        return self._base is not None

    # --- storage ------------------------------------------------------------------------
    @property
    def data(self):
        """A Tensor sharing this one's storage, cut from the graph, with its own version counter
        (PyTorch's `.data`): changes made through it are invisible to autograd's checks. Prefer
        `detach()`, which shares the version counter; `.numpy()` gives the array."""
        return Tensor(self._data)

    @data.setter
    def data(self, value):
        # NOTE: as in PyTorch, `x.data = y` swaps the storage (shape and dtype may change) and
        # leaves the history alone.
        if not isinstance(value, Tensor):
            raise TypeError(
                f"Tensor.data must be set to a Tensor, got {type(value).__name__}. Fix: "
                f"x.data = kit.tensor(value)"
            )
        self._data = value._data

    # --- metadata -----------------------------------------------------------------------
    @property
    def shape(self):
        return self._data.shape

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def device(self) -> str:
        return backend.device_of(self._data)

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def _version(self) -> int:
        return self._vc[0]

    def size(self, dim=None):
        return self._data.shape if dim is None else self._data.shape[dim]

    def dim(self):
        return self._data.ndim

    def numel(self):
        return int(self._data.size)

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    @property
    def grad(self):
        if STATE.tracing is not None:  # kit.compile: .grad is another tensor on every step
            STATE.tracing.observe(self, "grad")
        if self.grad_fn is not None and not self._retains_grad:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                "Its .grad attribute won't be populated during backward. If you want the "
                "gradient of this non-leaf Tensor, call .retain_grad() on it before backward.",
                UserWarning,
                stacklevel=2,
            )
        return self._grad

    @grad.setter
    def grad(self, value):
        if STATE.tracing is not None:  # kit.compile: a replay would not set it
            STATE.tracing.observe(self, "grad")
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(f"assigned grad must be a Tensor or None, got {type(value).__name__}")
        if value is not None:
            if value.shape != self.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor "
                    f"of size '{list(self.shape)}'. Please ensure that the gradient and the "
                    f"tensor are the same size"
                )
            if value.dtype != self.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{value.dtype}' to a tensor "
                    f"with dtype '{self.dtype}'. Fix: convert it first, e.g. "
                    f"x.grad = g.to(x.dtype)"
                )
            if value.device != self.device:
                raise RuntimeError(
                    f"attempting to assign a gradient on {value.device} to a tensor on "
                    f"{self.device}. Fix: x.grad = g.to(x.device)"
                )
        self._grad = value

    # --- conversion ---------------------------------------------------------------------
    def item(self):
        if STATE.tracing is not None:  # kit.compile: Python reads the value
            STATE.tracing.observe(self, "item")
        if self._data.size != 1:
            raise ShapeError(
                f"a Tensor with {self._data.size} elements cannot be converted to a Python "
                f"scalar; item() needs exactly one element"
            )
        return self._data.item()

    def numpy(self):
        """The data as a NumPy array (shares memory on the CPU, as in PyTorch).

        As in PyTorch it refuses a tensor that requires grad while grad mode is on (the array
        would leave the graph silently); under no_grad, e.g. inside a Function's forward, it works.
        """
        if STATE.tracing is not None:
            STATE.tracing.observe(self, "numpy")
        if self.requires_grad and STATE.enabled:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        if backend.device_of(self._data) != "cpu":
            raise TypeError(
                "can't convert a gpu tensor to numpy: copy it to the CPU first with "
                ".to('cpu').numpy() (or .cpu().numpy())"
            )
        return self._data

    def tolist(self):
        if STATE.tracing is not None:  # kit.compile: Python reads the value
            STATE.tracing.observe(self, "tolist")
        return self._data.tolist()

    def __array__(self, dtype=None, copy=None):
        if STATE.tracing is not None:  # kit.compile: Python reads the value
            STATE.tracing.observe(self, "numpy")
        if self.requires_grad and STATE.enabled:  # np.array(t): as numpy(), no silent copy
            self.numpy()
        data = backend.to_device(self._data, "cpu")
        return data if dtype is None else data.astype(dtype)

    def __float__(self):  # (also complex(t), which Python reaches through it)
        if self.requires_grad and STATE.enabled:
            warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to "
                          "unexpected behavior.\nConsider using tensor.detach() first.",
                          UserWarning, stacklevel=2)
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        if STATE.tracing is not None:  # kit.compile: Python reads the value
            STATE.tracing.observe(self, "bool")
        if self._data.size != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with {self._data.size} values is ambiguous; use "
                f".any() or .all()"
            )
        return bool(self._data)

    def __index__(self):
        if STATE.tracing is not None:  # kit.compile: Python reads the value
            STATE.tracing.observe(self, "index")
        if self._data.dtype.kind not in "biu" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be used as an index")
        return int(self._data.item())

    # NOTE: identity, as PyTorch's (== is elementwise); object's own, so that a dict keyed by
    # tensors (an optimiser's state) hashes without a Python call
    __hash__ = object.__hash__

    def __format__(self, spec):
        """`f"{loss:.4f}"` formats a one-element tensor's number, as in PyTorch."""
        if STATE.tracing is not None:  # kit.compile: Python reads the value
            STATE.tracing.observe(self, "print")
        if self._data.ndim == 0:
            return format(self.item(), spec)
        if spec:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return repr(self)

    # --- copies and pickling (as PyTorch: a copy or an unpickled tensor is a leaf) ------------
    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                "protocol at the moment. Fix: deepcopy x.detach() (then .requires_grad_() if the "
                "copy should be a new leaf), or keep the history and use x.clone()"
            )
        copy = Tensor(self._data.copy(), self._rg)
        if self._grad is not None:
            copy._grad = Tensor(self._grad._data.copy())
        memo[id(self)] = copy
        return copy

    def __reduce_ex__(self, protocol):
        for hook in (self._hooks or {}).values():
            warnings.warn(
                f"backward hook {hook} on tensor will not be serialized. If this is expected, "
                f"remove it before pickling (the handle's .remove())", UserWarning, stacklevel=2)
        data = backend.to_device(self._data, "cpu")
        return _rebuild, (data, self._rg, backend.device_of(self._data))

    # --- NumPy functions on a Tensor -----------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """`np.exp(t)`, `ndarray * t`: a Tensor, as PyTorch gives. A ufunc that is a kit op runs
        as that op (so it is recorded); any other is refused for a tensor that requires grad
        while grad mode is on, where the graph would be dropped silently."""
        op = _ufunc_ops().get(ufunc.__name__) if method == "__call__" and not kwargs else None
        if op is not None:
            return op(*inputs)
        if STATE.tracing is not None:  # kit.compile cannot see inside a NumPy function
            STATE.tracing.observe(self, "numpy_function")
        for v in inputs:
            if isinstance(v, Tensor) and v.requires_grad and STATE.enabled:
                raise RuntimeError(
                    f"Can't call numpy() on Tensor that requires grad (np.{ufunc.__name__} would "
                    f"drop it from the graph). Fix: use the kit op (kit.{ufunc.__name__}(x) or "
                    f"the method x.{ufunc.__name__}()) to keep the gradient, or pass "
                    f"x.detach() to NumPy"
                )
        arrays = [backend.to_device(v._data, "cpu") if isinstance(v, Tensor) else v
                  for v in inputs]
        if "out" in kwargs:
            raise TypeError(f"np.{ufunc.__name__}(..., out=) on a kit Tensor is not supported; "
                            f"use the in-place method instead (x.add_(y), x.mul_(y))")
        result = getattr(ufunc, method)(*arrays, **kwargs)
        if isinstance(result, tuple):
            return tuple(Tensor(np.asarray(r)) for r in result)
        return None if result is None else Tensor(np.asarray(result))

    def __repr__(self):
        if STATE.tracing is not None:  # kit.compile: the value is printed
            STATE.tracing.observe(self, "print")
        return _format(self)

    # --- autograd -----------------------------------------------------------------------
    def _leaf_edge(self):
        """The edge to this leaf's AccumulateGrad, made once (again if shape or dtype changed)."""
        edge = self._acc
        if edge is None or edge[0].output_meta[0] != (self._data.shape, self._data.dtype):
            edge = self._acc = (AccumulateGrad(self), 0)
        return edge

    def detach(self):
        """A new Tensor sharing the data, cut from the graph."""
        t = Tensor(self._data)
        # A view: in-place changes on either are seen by saved-tensor checks.
        t._vc = version_counter(self)
        return t

    def detach_(self):
        if self._base is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead: it returns a new tensor "
                "sharing the storage."
            )
        self._grad_fn = None
        self._edge = None
        self._rg = False
        return self

    def requires_grad_(self, requires_grad=True):
        flag = bool(requires_grad)
        if self._grad_fn is not None:
            if not flag:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to "
                    "use a computed variable in a subgraph that doesn't require differentiation "
                    "use var_no_grad = var.detach()."
                )
            return self
        if flag:
            _check_grad_dtype(self._data.dtype, "requires_grad=True")
        self._rg = flag
        return self

    def retain_grad(self):
        """Keep the gradient of this non-leaf Tensor in `.grad` after backward."""
        if STATE.tracing is not None:
            STATE.tracing.observe(self, "hook")
        if self.grad_fn is None:
            if not self.requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        if not self._retains_grad:
            self._retains_grad = True
            hooks = _node_hooks(self.grad_fn, self._nr)
            hooks["retain"] = weakref.ref(self)

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def register_hook(self, hook):
        """Call `hook(grad)` when the gradient of this tensor is computed; it may return a
        replacement gradient.

        >>> import kit
        >>> x = kit.tensor([1.0, 2.0], requires_grad=True)
        >>> h = x.register_hook(lambda g: g * 2)
        >>> (x * 3).sum().backward()
        >>> x.grad
        tensor([6., 6.])
        """
        if STATE.tracing is not None:
            STATE.tracing.observe(self, "hook")
        if not self.requires_grad:
            raise RuntimeError(
                "cannot register a hook on a tensor that doesn't require gradient"
            )
        if self.grad_fn is None:
            if self._hooks is None:
                self._hooks = {}
            hooks = self._hooks
        else:
            hooks = _node_hooks(self.grad_fn, self._nr)
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor into the leaves' `.grad`.

        A non-scalar tensor needs `gradient` (the vector in the vector-Jacobian product).
        """
        from kit import autograd

        autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    # --- devices and dtypes -------------------------------------------------------------
    def to(self, *args, **kwargs):
        """`to(device)`, `to(dtype)` or both; recorded, so gradients flow back across it."""
        from kit.ops import movement

        device = kwargs.pop("device", None)
        dtype = kwargs.pop("dtype", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for arg in args:
            if _is_dtype(arg):
                dtype = arg
            else:
                device = arg
        out = self
        if dtype is not None:
            out = movement.astype(out, dtype)
        if device is not None:
            out = movement.to_device(out, device)
        return out

    def cpu(self):
        return self.to("cpu")

    def gpu(self):
        return self.to("gpu")

    cuda = gpu  # PyTorch's name

    def float(self):
        return self.to(float32)

    def double(self):
        return self.to(float64)

    def half(self):
        return self.to(float16)

    def long(self):
        return self.to(int64)

    def int(self):
        return self.to(int32)

    def bool(self):
        return self.to(bool_)

    def type(self, dtype=None):
        return str(self.dtype) if dtype is None else self.to(dtype)


_UFUNC_NAMES = {
    "add": "add", "subtract": "sub", "multiply": "mul", "true_divide": "div", "divide": "div",
    "power": "pow", "matmul": "matmul", "negative": "neg", "exp": "exp", "log": "log",
    "sqrt": "sqrt", "tanh": "tanh", "sin": "sin", "cos": "cos", "absolute": "abs",
    "maximum": "maximum", "minimum": "minimum", "equal": "eq", "not_equal": "ne", "less": "lt",
    "less_equal": "le", "greater": "gt", "greater_equal": "ge", "sign": "sign",
}
_UFUNC_OPS = {}


def _ufunc_ops():
    """NumPy ufunc name -> the kit op that computes it (made on first use: kit.ops imports this
    module)."""
    if not _UFUNC_OPS:
        import kit.ops

        _UFUNC_OPS.update({u: getattr(kit.ops, op) for u, op in _UFUNC_NAMES.items()})
    return _UFUNC_OPS


def _rebuild(data, requires_grad, device):
    """Unpickle a Tensor (a leaf, as PyTorch unpickles one)."""
    return Tensor(backend.to_device(data, device), requires_grad)


def _as_storage(data):
    """What Tensor(data) keeps when `data` is not a NumPy array: a CuPy array as it is, a NumPy
    scalar as a 0-d array; anything else is PyTorch's legacy constructor, `torch.Tensor([1, 2])`
    (float32 data) or `torch.Tensor(2, 3)` (a shape; kit fills it with zeros)."""
    if isinstance(data, np.generic):
        return np.asarray(data)  # NumPy turns 0-d results into scalars; keep an array
    if hasattr(data, "shape") and hasattr(data, "dtype") and not isinstance(data, Tensor):
        return data  # a CuPy array (or another backend's)
    if isinstance(data, Tensor):
        return data._data.astype(default_float())
    if isinstance(data, (int, np.integer)) and not isinstance(data, bool):
        return np.zeros((int(data),), default_float())
    if isinstance(data, tuple) and data and all(isinstance(n, int) for n in data):
        return np.zeros(data, default_float())
    try:
        return np.asarray(data, dtype=default_float())
    except (TypeError, ValueError):
        raise TypeError(
            f"kit.Tensor(): cannot make a tensor from {type(data).__name__}. Fix: use "
            f"kit.tensor(data) (or torch.tensor), which infers the dtype"
        ) from None


def _is_dtype_name(value):
    return isinstance(value, str) and value in {str(d) for d in SUPPORTED_DTYPES}


def _is_dtype(value):
    """A dtype, a dtype's name, or an object carrying one (kit.torch.float64 has `.dtype`)."""
    if isinstance(value, (np.dtype, type)) or _is_dtype_name(value):
        return True
    return not isinstance(value, Tensor) and isinstance(getattr(value, "dtype", None), np.dtype)


def _node_hooks(node, nr):
    if node.pre_hooks is None:
        node.pre_hooks = {}
    return node.pre_hooks.setdefault(nr, {})


def _check_grad_dtype(dtype, what):
    if dtype.kind not in "fc":
        raise RuntimeError(
            f"only Tensors of floating point dtype can require gradients ({what} on a {dtype} "
            f"tensor). Fix: convert first, e.g. kit.tensor(data, dtype=kit.float32)"
        )


def _float_style(data):
    """PyTorch's choice of number format for a float tensor: whole numbers as `2.`, others
    with 4 decimals, scientific when the magnitudes span too much (`1.0000e-05`)."""
    finite = data[np.isfinite(data)].astype(np.float64)
    magnitudes = np.abs(finite[finite != 0])
    big = magnitudes.size and magnitudes.max() > 1e8
    spread = magnitudes.size and magnitudes.max() / magnitudes.min() > 1000
    if finite.size and np.all(finite == np.round(finite)):
        return "{:.4e}" if big or spread else "{:.0f}."
    if magnitudes.size and (big or spread or magnitudes.min() < 1e-4):
        return "{:.4e}"
    return "{:.4f}"


def _format(t):
    data = backend.to_device(t._data, "cpu")
    formatter = None
    if data.dtype.kind == "f" and data.size:
        flat = data.reshape(-1)
        shown = flat if flat.size <= 1000 else np.concatenate([flat[:3], flat[-3:]])  # summarised
        style = _float_style(shown)
        width = max(len(style.format(v)) if np.isfinite(v) else len(str(v))
                    for v in shown.tolist())

        def formatter(v):
            return (style.format(v) if np.isfinite(v) else str(v)).rjust(width)

    body = np.array2string(
        data, separator=", ", prefix="tensor(", threshold=1000, edgeitems=3,
        formatter={"float_kind": formatter} if formatter else None,
    )
    extras = []
    if backend.device_of(t._data) != "cpu":
        extras.append("device='gpu'")
    if data.size == 0:  # as PyTorch: the shape unless 1-d, the dtype unless the default float
        if data.ndim != 1:
            extras.append(f"size={tuple(data.shape)}")
        if data.dtype != float32:
            extras.append(f"dtype=kit.{data.dtype}")
    elif data.dtype not in (float32, int64, bool_):
        extras.append(f"dtype=kit.{data.dtype}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + ", ".join([body] + extras) + ")"


engine.bind_tensor(Tensor, bump_version)
saved_tensors.bind(Tensor, version_counter, AccumulateGrad, engine.SavedOutput)
_views.bind(Tensor, version_counter)
