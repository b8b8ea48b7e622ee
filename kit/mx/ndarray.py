"""NDArray: a kit Tensor wearing MXNet's API.

An NDArray wraps one kit Tensor (composition, so that none of PyTorch's spellings leak into the
MXNet front end). Every op unwraps its inputs, runs the kit op with kit's grad mode set to MXNet's
recording flag, and wraps the result. MXNet 1.x has no 0-d arrays: a result that would be 0-d
has shape (1,), as `x.sum()` does in MXNet.
"""

from __future__ import annotations

import weakref

import numpy as np

import kit.mx
from kit import backend
from kit._modes import STATE
from kit._tensor import Tensor
from kit.mx.base import error, reported, run
from kit.mx.context import context_of

GRAD_REQS = ("write", "add", "null")


class _GradSlot:
    """What attach_grad gives a variable: its grad_req, its gradient buffer, and whether a
    backward wrote the buffer since the last Trainer step (MXNet's `_fresh_grad`)."""

    __slots__ = ("req", "grad", "fresh")

    def __init__(self, req, grad):
        self.req = req
        self.grad = grad
        self.fresh = False


# NOTE: which arrays are variables is a fact about the arrays, shared by all threads (not a
# mode): id(leaf Tensor) -> the NDArray whose attach_grad made it one, held weakly.
_OWNERS = weakref.WeakValueDictionary()


def variable_slot(tensor):
    """The grad slot of the variable whose leaf is `tensor`, or None."""
    # NOTE: the dict behind the WeakValueDictionary, read directly: its get() is a Python
    # function, and this runs for every variable of every backward
    ref = _OWNERS.data.get(id(tensor))
    owner = None if ref is None else ref()
    if owner is None or owner._t is not tensor:  # the id of a leaf since collected
        return None
    return owner._slot


class Guard:
    """Marks an array a CustomOp receives: where it comes from, read-only, written yet."""

    __slots__ = ("where", "readonly", "written", "shape")

    def __init__(self, where, readonly, shape):
        self.where = where
        self.readonly = readonly
        self.written = False
        self.shape = tuple(shape)


def _value_shape(value):
    if isinstance(value, NDArray):
        return value.shape
    shape = getattr(value, "shape", None)
    return tuple(shape) if shape is not None else ()


class NDArray:
    """An n-dimensional array with MXNet's API, recorded for autograd inside autograd.record()."""

    __slots__ = ("_t", "_guard", "_slot", "__weakref__")
    __array_priority__ = 1000.0  # ndarray <op> NDArray defers to NDArray's reflected op

    def __init__(self, tensor, guard=None):
        if not isinstance(tensor, Tensor):
            raise TypeError(
                f"NDArray wraps a kit Tensor, got {type(tensor).__name__}. Fix: create arrays "
                f"with mx.nd.array(data), mx.nd.zeros(shape), ..."
            )
        self._t = tensor
        self._guard = guard
        self._slot = None

    # --- metadata -----------------------------------------------------------------------
    @property
    def tensor(self):
        """The kit Tensor behind this array (kit's addition: for kit.viz, kit.gradcheck, ...)."""
        return self._t

    @property
    def shape(self):
        return tuple(self._t._data.shape)

    @property
    def dtype(self):
        """The NumPy scalar type (numpy.float32), as MXNet reports it."""
        return self._t._data.dtype.type

    @property
    def size(self):
        return int(self._t._data.size)

    @property
    def ndim(self):
        return self._t._data.ndim

    @property
    def context(self):
        return context_of(self._t._data)

    ctx = context

    @property
    def stype(self):
        return "default"

    def __len__(self):
        return self.shape[0]

    def __iter__(self):
        for i in range(self.shape[0]):
            yield self[i]

    def __hash__(self):
        return id(self)

    # --- conversion ---------------------------------------------------------------------
    def asnumpy(self):
        """A NumPy copy of the data (always a copy, as in MXNet).

        >>> import kit.mx as mx
        >>> mx.nd.array([1, 2]).asnumpy()
        array([1., 2.], dtype=float32)
        """
        return np.array(backend.to_device(self._t._data, "cpu"), copy=True)

    def asscalar(self):
        """The only element, as a NumPy scalar."""
        if self.size != 1:
            raise ValueError(
                f"The current array is not a scalar: asscalar() needs exactly one element, this "
                f"NDArray has shape {self.shape}"
            )
        return self.asnumpy().reshape(-1)[0]

    def __array__(self, dtype=None, copy=None):
        data = self.asnumpy()
        return data if dtype is None else data.astype(dtype)

    def __bool__(self):
        if self.size == 0:
            return False
        if self.size != 1:
            raise ValueError(
                "The truth value of an NDArray with multiple elements is ambiguous."
            )
        return bool(self.asscalar())

    def __repr__(self):
        shape = "x".join(str(n) for n in self.shape)
        return f"\n{self.asnumpy()}\n<{type(self).__name__} {shape} @{self.context}>"

    def tostype(self, stype):
        """A copy in storage type `stype`: 'default' (dense), the only one kit.mx has."""
        if stype != "default":
            from kit.mx._out_of_scope import SPARSE

            raise NotImplementedError(
                f"NDArray.tostype({stype!r}): sparse storage is out of scope in kit.mx. Instead: "
                f"{SPARSE}"
            )
        return self.copy()

    def wait_to_read(self):
        """Wait until the data is computed (a no-op on the CPU, a sync on the GPU)."""
        backend.synchronize(backend.device_of(self._t._data))

    # --- autograd -----------------------------------------------------------------------
    def attach_grad(self, grad_req="write", stype=None):
        """Make this array a variable with a zero gradient buffer (`grad_req` 'write', 'add' or
        'null').

        >>> import kit.mx as mx
        >>> x = mx.nd.array([1, 2]); x.attach_grad()
        >>> with mx.autograd.record():
        ...     y = x * x
        >>> y.backward(); x.grad
        <BLANKLINE>
        [2. 4.]
        <NDArray 2 @cpu(0)>
        """
        if grad_req not in GRAD_REQS:
            raise ValueError(
                f"attach_grad: grad_req must be one of {', '.join(map(repr, GRAD_REQS))}, got "
                f"{grad_req!r}"
            )
        if self._t._data.dtype.kind not in "fc":
            raise TypeError(
                f"attach_grad: only floating-point arrays can have gradients, this one is "
                f"{self._t._data.dtype}. Fix: create it with dtype='float32' (the default)"
            )
        leaf = self._t.detach()  # a new variable: any recorded history is cut, as in MXNet
        leaf.requires_grad = grad_req != "null"
        self._t = leaf
        xp = backend.get_array_module(leaf._data)
        self._slot = _GradSlot(grad_req, NDArray(Tensor(xp.zeros_like(leaf._data))))
        _OWNERS[id(leaf)] = self

    @property
    def grad(self):
        """The gradient buffer attached by attach_grad (None before)."""
        return None if self._slot is None else self._slot.grad

    @property
    def grad_req(self):
        return "null" if self._slot is None else self._slot.req

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        """Compute the gradient of this array w.r.t. the variables; non-scalar arrays use an
        implicit all-ones `out_grad`."""
        # NOTE: through the package (bound when this module loads) rather than an import here,
        # which costs a Python-level import step at every call of a training loop
        kit.mx.autograd.backward([self], None if out_grad is None else [out_grad], retain_graph,
                                 train_mode)

    def detach(self):
        """The same data, cut from the recorded graph."""
        return NDArray(self._t.detach())

    # --- writes -------------------------------------------------------------------------
    def _before_write(self, value):
        if STATE.recording and self._t.requires_grad:
            # NOTE: MXNet's own check (Imperative::RecordOp), at the write, as MXNet raises it
            raise error(RuntimeError, (
                "Inplace operations (+=, -=, x[:]=, etc) are not supported when recording with "
                "autograd. Assigning to NDArrays that are already in a computational graph will "
                "cause undefined behavior when evaluating gradients. Please call backward first "
                "to clear the graph or do this out side of a record section. Fix: write "
                "x = x / 2 (a new array) instead of x /= 2 inside autograd.record()"))
        guard = self._guard
        if guard is None:
            return
        if guard.readonly:
            raise reported(ValueError(
                f"{guard.where} is read-only: a CustomOp must not write into its inputs (MXNet "
                f"passes them read-only too: there the write fails inside MXNet's callback and "
                f"surfaces later as an opaque MXNetError). Fix: compute a new array, e.g. "
                f"y = in_data[0] * 2, and write it with self.assign(out_data[0], req[0], y)"
            ))
        have = _value_shape(value)
        if self.shape == guard.shape and len(have) > 0 and have != guard.shape:
            raise reported(ValueError(
                f"{guard.where} has shape {guard.shape} (from infer_shape) but the value written "
                f"into it has shape {have}; MXNet would broadcast it silently. Fix: compute a "
                f"value of shape {guard.shape}, or correct infer_shape"
            ))
        guard.written = True

    def __setitem__(self, key, value):
        self._before_write(value)
        run(Tensor.__setitem__, self._t, _index(key), unwrap(value))

    def __getitem__(self, key):
        out = wrap(run(Tensor.__getitem__, self._t, _index(key)))
        out._guard = self._guard  # a view of a CustomOp buffer keeps its rules
        return out

    def _inplace(self, method, other):
        self._before_write(other)
        run(method, self._t, unwrap(other))
        return self

    def __iadd__(self, other):
        return self._inplace(Tensor.__iadd__, other)

    def __isub__(self, other):
        return self._inplace(Tensor.__isub__, other)

    def __imul__(self, other):
        return self._inplace(Tensor.__imul__, other)

    def __itruediv__(self, other):
        return self._inplace(Tensor.__itruediv__, other)

    def copyto(self, other):
        """Copy into another NDArray (written in place) or onto a Context (a new array)."""
        from kit.mx.context import Context

        if isinstance(other, Context):
            return wrap(run(Tensor.to, self._t, other.kit_device))
        if not isinstance(other, NDArray):
            raise TypeError(f"copyto: expected an NDArray or a Context, got {type(other).__name__}")
        if other.shape != self.shape:
            raise error(ValueError, (
                f"copyto: shape mismatch, source {self.shape} and destination {other.shape}"
            ))
        other[:] = self
        return other

    def as_in_context(self, context):
        """This array on `context` (itself when it is already there)."""
        return self if context == self.context else self.copyto(context)

    def copy(self):
        return wrap(run(Tensor.clone, self._t))

    def astype(self, dtype, copy=True):
        out = wrap(run(Tensor.astype, self._t, np.dtype(dtype)))
        return out.copy() if copy and out._t is self._t else out


def unwrap(value):
    """The kit Tensor behind an NDArray; other values (numbers, NumPy arrays) pass through."""
    if isinstance(value, NDArray):
        return value._t
    check = getattr(value, "_kit_mx_undeclared", None)
    if check is not None:
        check()
    return value


def wrap(tensor):
    """An NDArray for a kit op's result (0-d results get shape (1,), as in MXNet 1.x)."""
    if tensor._data.ndim == 0:
        tensor = run(Tensor.reshape, tensor, (1,))
    return NDArray(tensor)


def _index(key):
    """An index with NDArrays replaced by integer arrays (MXNet indexes with float arrays)."""
    if isinstance(key, tuple):
        return tuple(_index(k) for k in key)
    if isinstance(key, NDArray):
        data = key._t._data
        return data.astype(np.int64) if data.dtype.kind == "f" else data
    return key


def _binary(fn, reflected=False):
    if reflected:
        return lambda self, other: wrap(run(fn, unwrap(other), self._t))
    return lambda self, other: wrap(run(fn, self._t, unwrap(other)))


def mxnet_mod(a, b):
    """MXNet's `%` (broadcast_mod): the remainder with the divisor's sign, as Python's and
    PyTorch's, except that a zero divisor gives 0 (mshadow_op::mod), not NaN or an error.

    NOTE: there the dividend's gradient is 0 (the result is a constant); MXNet's is 1."""
    from kit import ops

    if not isinstance(b, Tensor):
        return ops.remainder(a, b) if b != 0 else a * 0 + 0  # + 0: never -0.0
    if not isinstance(a, Tensor):  # a constant of b's dtype, so b gets a gradient
        a = Tensor(backend.get_array_module(b._data).asarray(a, dtype=b._data.dtype))
    zero = b == 0
    return ops.where(zero, 0, ops.remainder(a, ops.where(zero, 1, b)))


def _compare(fn):
    def method(self, other):
        # NOTE: MXNet comparisons give 0/1 in the array's dtype, not booleans.
        return wrap(run(fn, self._t, unwrap(other)).astype(self._t._data.dtype))

    return method


def _bind_arithmetic():
    from kit import ops

    table = {
        "__add__": _binary(ops.add), "__radd__": _binary(ops.add, True),
        "__sub__": _binary(ops.sub), "__rsub__": _binary(ops.sub, True),
        "__mul__": _binary(ops.mul), "__rmul__": _binary(ops.mul, True),
        "__truediv__": _binary(ops.div), "__rtruediv__": _binary(ops.div, True),
        "__pow__": _binary(ops.pow), "__rpow__": _binary(ops.pow, True),
        "__mod__": _binary(mxnet_mod), "__rmod__": _binary(mxnet_mod, True),
        "__neg__": lambda self: wrap(run(ops.neg, self._t)),
        "__abs__": lambda self: wrap(run(ops.abs, self._t)),
        "__eq__": _compare(ops.eq), "__ne__": _compare(ops.ne),
        "__lt__": _compare(ops.lt), "__le__": _compare(ops.le),
        "__gt__": _compare(ops.gt), "__ge__": _compare(ops.ge),
    }
    for name, fn in table.items():
        setattr(NDArray, name, fn)


_bind_arithmetic()
